package materialize_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
)

// metaValue reads key's string value through v.
func metaValue(t *testing.T, v *materialize.View, key string) (string, error) {
	t.Helper()
	m, ok, err := v.Meta(0, []byte(key))
	if err != nil || !ok {
		return "", err
	}
	return string(m.Value), nil
}

func TestReadViewPinsItsFirstState(t *testing.T) {
	s := openMem(t, newClock(t0))
	setString(t, s, 0, "k", "v1", 0, 0)
	setString(t, s, 0, "j", "x", 0, 0)

	// Pinned at once: later commits are not seen, from the cache or Pebble.
	pv := s.PinnedReadView()
	if got, _ := metaValue(t, pv, "k"); got != "v1" {
		t.Fatalf("k = %q, want v1", got)
	}
	keys := countPrefix(t, pv, []byte{byte(codec.TagMeta)})
	setString(t, s, 0, "k", "v2", 0, 0)
	setString(t, s, 0, "new", "n", 0, 0)
	if got, err := metaValue(t, pv, "k"); got != "v1" || err != nil {
		t.Fatalf("k after a commit = %q, %v; want the pinned v1", got, err)
	}
	if got, err := metaValue(t, pv, "new"); got != "" || err != nil {
		t.Fatalf("a key created after the pin = %q, %v; want absent", got, err)
	}
	if n := countPrefix(t, pv, []byte{byte(codec.TagMeta)}); n != keys {
		t.Fatalf("T keys after a commit = %d, want the pinned %d", n, keys)
	}
	pv.Close()
	if got, _ := metaValue(t, pv, "k"); got != "v2" {
		t.Fatalf("k read again after Close = %q, want the new state's v2", got)
	}
	pv.Close()

	// Soft: a cached read, then a commit, then a Pebble read: the state moved.
	rv := s.ReadView()
	if got, _ := metaValue(t, rv, "k"); got != "v2" {
		t.Fatalf("k = %q, want v2", got)
	}
	setString(t, s, 0, "k", "v3", 0, 0)
	if _, err := metaValue(t, rv, "k"); !errors.Is(err, materialize.ErrStateMoved) {
		t.Fatalf("read of a key changed since a soft view's first read: %v, want ErrStateMoved", err)
	}
	rv.Close()

	// Soft with no commit in between: the Pebble read joins the same state.
	rv = s.ReadView()
	if got, _ := metaValue(t, rv, "j"); got != "x" {
		t.Fatalf("j = %q, want x", got)
	}
	if n := countPrefix(t, rv, []byte{byte(codec.TagMeta)}); n != keys+1 {
		t.Fatalf("T keys = %d, want %d", n, keys+1)
	}
	setString(t, s, 0, "k", "v4", 0, 0)
	if got, err := metaValue(t, rv, "k"); got != "v3" || err != nil {
		t.Fatalf("k after a commit = %q, %v; want the pinned v3", got, err)
	}
	rv.Close()

	// A first read from Pebble pins at once.
	rv = s.ReadView()
	if n := countPrefix(t, rv, []byte{byte(codec.TagMeta)}); n != keys+1 {
		t.Fatalf("T keys = %d, want %d", n, keys+1)
	}
	setString(t, s, 0, "k", "v5", 0, 0)
	if got, err := metaValue(t, rv, "k"); got != "v4" || err != nil {
		t.Fatalf("k after a commit = %q, %v; want the pinned v4", got, err)
	}
	rv.Close()
}

// TestMetaWith: the metadata as Meta reads it, a large string's value
// included (read from Pebble without a copy), for every case of the cache:
// keys the writer cached, and keys no one has cached since a reopen.
func TestMetaWith(t *testing.T) {
	clock := newClock(t0)
	opts := materialize.Options{Dir: t.TempDir(), Now: clock.Now}
	s := openStore(t, opts)
	big := strings.Repeat("x", 5000) // kept in the change log (Options.ValueLogMin)
	setString(t, s, 0, "big", big, 0, 0)
	setString(t, s, 0, "small", "v", 0, 0)
	setString(t, s, 0, "empty", "", 0, 0)
	setString(t, s, 0, "gone", "v", t0-1, 0) // already expired
	// kept are the values fn was told it may keep (shared): none may change
	// afterwards, whatever the store reads or writes next.
	type keptValue struct {
		got        []byte
		want, when string
	}
	var kept []keptValue
	check := func(s *materialize.Store, when string) {
		t.Helper()
		for _, c := range []struct {
			key, want string
			ok        bool
		}{{"big", big, true}, {"small", "v", true}, {"empty", "", true}, {"gone", "", false}, {"none", "", false}} {
			for _, v := range []*materialize.View{s.ReadView(), s.PinnedReadView(), s.View()} {
				var got string
				called := false
				ok, err := v.MetaWith(0, []byte(c.key), func(m codec.Meta, shared bool) error {
					got, called = string(m.Value), true
					if !m.Ref.IsZero() {
						// A value in the change log: the caller reads it.
						b := make([]byte, m.Ref.Len)
						if err := v.ReadValue(m.Ref, b); err != nil {
							return err
						}
						got = string(b)
					}
					if shared {
						kept = append(kept, keptValue{m.Value, got, when + " " + c.key})
					}
					return nil
				})
				v.Close()
				if err != nil || ok != c.ok || called != c.ok || got != c.want {
					t.Fatalf("%s: MetaWith(%q) = %v, %v, called %v, value of %d bytes; want %v, %d bytes", when, c.key, ok, err, called, len(got), c.ok, len(c.want))
				}
			}
		}
	}
	check(s, "written")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, opts)
	check(s, "reopened")
	// Writes replace the values the reads above returned, and other reads
	// follow a reopen.
	setString(t, s, 0, "big", strings.Repeat("y", 5000), 0, 0)
	setString(t, s, 0, "small", "w", 0, 0)
	setString(t, s, 0, "big2", strings.Repeat("z", 5000), 0, 0)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, opts)
	for _, v := range []*materialize.View{s.ReadView(), s.PinnedReadView(), s.View()} {
		if _, err := v.MetaWith(0, []byte("big2"), func(codec.Meta, bool) error { return nil }); err != nil {
			t.Fatal(err)
		}
		v.Close()
	}
	if len(kept) == 0 {
		t.Fatal("no value was shared: the cached ones should be")
	}
	for _, k := range kept {
		if string(k.got) != k.want {
			t.Fatalf("%s: a value MetaWith shared changed from %d bytes of %q to %q", k.when, len(k.want), k.want[:1], k.got[:min(len(k.got), 1)])
		}
	}
}

// TestReadViewLookupsDuringIteration: a pinned view's first iteration uses
// its root iterator (View.borrowRoot); point lookups and a second
// iteration made from inside it read through clones and leave it where
// it was, and the view's later reads see its pinned state.
func TestReadViewLookupsDuringIteration(t *testing.T) {
	s := openMem(t, newClock(t0))
	var pairs [][]byte
	for i := range 20 {
		pairs = append(pairs, []byte{'f', byte('a' + i)}, []byte{'v', byte('a' + i)})
	}
	h, g := []byte("h"), []byte("g")
	if _, err := s.Write(func(*materialize.View) ([]codec.Event, error) {
		return []codec.Event{codec.ElementsEvent(codec.OpHSet, 0, h, pairs), codec.ElementsEvent(codec.OpHSet, 0, g, pairs[:8])}, nil
	}); err != nil {
		t.Fatal(err)
	}
	v := s.PinnedReadView()
	defer v.Close()
	hp, gp := codec.KeyPrefix(codec.TagHash, 0, h), codec.KeyPrefix(codec.TagHash, 0, g)
	var seen []string
	if err := v.Iterate(hp, codec.PrefixEnd(hp), false, func(k, val []byte) (bool, error) {
		seen = append(seen, string(k[len(hp):])+"="+string(val))
		// A lookup of another hash's field, and of one of this hash's.
		if got, ok, err := v.Get(codec.ElementKey(codec.TagHash, 0, g, []byte("fb"))); err != nil || !ok || string(got) != "vb" {
			return false, errors.Join(err, errors.New("g.fb read "+string(got)))
		}
		if ok, err := v.Has(codec.ElementKey(codec.TagHash, 0, h, []byte("fz"))); err != nil || ok {
			return false, errors.Join(err, errors.New("h.fz reads present"))
		}
		n := 0
		if err := v.Iterate(gp, codec.PrefixEnd(gp), true, func([]byte, []byte) (bool, error) { n++; return true, nil }); err != nil || n != 4 {
			return false, errors.Join(err, errors.New("the inner iteration saw a wrong count"))
		}
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 20 || seen[0] != "fa=va" || seen[19] != "ft=vt" {
		t.Fatalf("the outer iteration saw %d fields: %q", len(seen), seen)
	}
	// The root is unbounded again: a lookup outside the iteration's range.
	if got, ok, err := v.Get(codec.ElementKey(codec.TagHash, 0, g, []byte("fd"))); err != nil || !ok || string(got) != "vd" {
		t.Fatalf("g.fd after the iteration: %q %v %v", got, ok, err)
	}
}
