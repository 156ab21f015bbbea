package materialize

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/sediment-dev/sediment/codec"
)

// fieldCacheMatches fails unless every entry of the writer's field cache
// agrees with Pebble (present with the same value when known, or absent),
// and the cache's byte count is the sum over its entries. It returns the
// number of entries.
func fieldCacheMatches(t *testing.T, s *Store, step string) int {
	t.Helper()
	n, total := 0, 0
	for coll, fc := range s.fields.colls {
		if len(fc.m) == 0 {
			t.Fatalf("%s: an empty collection %x is kept", step, coll)
		}
		for f, e := range fc.m {
			n++
			total += len(f) + len(e.val) + fieldEntryCost
			k := []byte(coll + f)
			val, ok, err := RawGet(s, k)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case ok != e.exists:
				t.Fatalf("%s: %q: stored %v, cached %v", step, k, ok, e.exists)
			case ok && e.known && !bytes.Equal(val, e.val):
				t.Fatalf("%s: %q: stored %q, cached %q", step, k, val, e.val)
			}
		}
	}
	if total != s.fields.bytes {
		t.Fatalf("%s: the cache counts %d bytes and holds %d", step, s.fields.bytes, total)
	}
	return n
}

// fieldLookups has a decision look up keys through the writer's view (Get,
// Has and HasKey by turns), so that the cache fills from Pebble, and
// returns what each found.
func fieldLookups(t *testing.T, s *Store, keys ...[]byte) []string {
	t.Helper()
	var out []string
	if _, err := s.Write(func(v *View) ([]codec.Event, error) {
		for i, k := range keys {
			var (
				val []byte
				ok  bool
				err error
			)
			switch i % 3 {
			case 0:
				val, ok, err = v.Get(k)
			case 1:
				ok, err = v.Has(k)
			default:
				ok, err = v.HasKey(k)
			}
			if err != nil {
				return nil, err
			}
			out = append(out, fmt.Sprintf("%v:%s", ok, val))
		}
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestFieldCacheFollowsPebble: the writer's field cache agrees with the H,
// S and Z keys in Pebble through writes, removals, lookups that fill it,
// a DEL and a COPY onto a cached key, a value too large to copy, FLUSHDB,
// and a commit group that fails after changing fields; and a decision
// reads through it what Pebble holds.
func TestFieldCacheFollowsPebble(t *testing.T) {
	s, err := Open(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	write := func(events ...codec.Event) error {
		_, err := s.Write(func(*View) ([]codec.Event, error) { return events, nil })
		return err
	}
	must := func(events ...codec.Event) {
		t.Helper()
		if err := write(events...); err != nil {
			t.Fatal(err)
		}
	}
	h, st, z := []byte("h"), []byte("s"), []byte("z")
	hk := func(key []byte, f string) []byte { return codec.ElementKey(codec.TagHash, 0, key, []byte(f)) }
	sk := func(m string) []byte { return codec.ElementKey(codec.TagSet, 0, st, []byte(m)) }
	zk := func(m string) []byte { return codec.ZMemberKey(0, z, []byte(m)) }
	large := strings.Repeat("v", fieldValueMax+1)

	must(codec.ElementsEvent(codec.OpHSet, 0, h, [][]byte{[]byte("f1"), []byte("v1"), []byte("f2"), []byte(large)}),
		codec.ElementsEvent(codec.OpSAdd, 0, st, [][]byte{[]byte("m1"), []byte("m2")}),
		codec.ZAddEvent(0, z, false, zMembers("m", 0, 3)))
	if n := fieldCacheMatches(t, s, "writes"); n != 7 {
		t.Fatalf("after writes of 7 elements the cache holds %d", n)
	}
	lookups := [][]byte{hk(h, "f1"), hk(h, "f2"), hk(h, "f3"), sk("m1"), sk("m3"), zk("m00001"), hk(h, "f2")}
	want := []string{"true:v1", "true:", "false:", "true:", "false:", "true:", "true:" + large}
	if got := fieldLookups(t, s, lookups...); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("lookups: got %q, want %q", got, want)
	}
	fieldCacheMatches(t, s, "lookups")
	// The lookups filled the cache, and a group that wrote nothing keeps
	// what it filled: the same lookups are answered from it, all but the
	// Get of the value too large to copy.
	hits := s.IterStats().FieldHits
	if got := fieldLookups(t, s, lookups...); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("lookups again: got %q, want %q", got, want)
	}
	if n := s.IterStats().FieldHits - hits; n != uint64(len(lookups)-1) {
		t.Fatalf("%d of %d lookups answered by the cache, want %d", n, len(lookups), len(lookups)-1)
	}

	// Removals, then the same lookups.
	must(codec.ElementsEvent(codec.OpHDel, 0, h, [][]byte{[]byte("f1")}),
		codec.ElementsEvent(codec.OpSRem, 0, st, [][]byte{[]byte("m1")}),
		codec.ZRemEvent(0, z, false, [][]byte{[]byte("m00001"), codec.ScoreArg(1)}))
	fieldCacheMatches(t, s, "removals")
	want = []string{"false:", "true:", "false:", "false:", "false:", "false:", "true:" + large}
	if got := fieldLookups(t, s, lookups...); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("lookups after removals: got %q, want %q", got, want)
	}

	// h replaced by a copy of h2 (COPY REPLACE: DEL, then COPY, in one
	// group): h's old fields are not answered from the cache.
	h2 := []byte("h2")
	must(codec.ElementsEvent(codec.OpHSet, 0, h2, [][]byte{[]byte("f3"), []byte("x3")}))
	must(codec.DelKeyEvent(0, h, codec.TypeHash, 0), codec.CopyKeyEvent(0, h, codec.TypeHash, 0, h2))
	fieldCacheMatches(t, s, "copy onto a cached hash")
	want = []string{"false:", "false:", "true:", "true:x3"}
	if got := fieldLookups(t, s, hk(h, "f1"), hk(h, "f2"), hk(h, "f3"), hk(h2, "f3")); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("lookups after COPY: got %q, want %q", got, want)
	}
	fieldCacheMatches(t, s, "lookups after COPY")

	// FLUSHDB empties it.
	must(codec.FlushDBEvent(0, []uint16{codec.Slot(h), codec.Slot(h2), codec.Slot(st), codec.Slot(z)}))
	if len(s.fields.colls) != 0 || s.fields.bytes != 0 {
		t.Fatalf("after FLUSHDB the cache holds %d collections, %d bytes", len(s.fields.colls), s.fields.bytes)
	}

	// A group that fails after writing a field and looking one up: nothing
	// of it reaches Pebble, and the cache it changed is not used again.
	if err := write(codec.ElementsEvent(codec.OpHSet, 0, h, [][]byte{[]byte("f9"), []byte("v9")}), codec.Event{Op: 0x7f, Key: h}); err == nil {
		t.Fatal("a group with a corrupt event committed")
	}
	fieldLookups(t, s, hk(h, "f0"))
	fieldCacheMatches(t, s, "after a failed group")
	if got := fieldLookups(t, s, hk(h, "f9")); got[0] != "false:" {
		t.Fatalf("a field written by a failed group reads %q", got[0])
	}
}

// TestFieldCacheBound: the cache stays within its byte bound, evicting
// entries at random, and what it keeps agrees with Pebble.
func TestFieldCacheBound(t *testing.T) {
	s, err := Open(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.fields.max = 40 * (fieldEntryCost + 8)
	for round := range 4 {
		var events []codec.Event
		for c := range 3 {
			var fv [][]byte
			for i := range 30 {
				fv = append(fv, fmt.Appendf(nil, "f%02d:%d", i, round), []byte("v"))
			}
			events = append(events, codec.ElementsEvent(codec.OpHSet, 0, fmt.Appendf(nil, "h%d", c), fv))
		}
		if _, err := s.Write(func(*View) ([]codec.Event, error) { return events, nil }); err != nil {
			t.Fatal(err)
		}
		if s.fields.bytes > s.fields.max {
			t.Fatalf("round %d: %d bytes cached, bound %d", round, s.fields.bytes, s.fields.max)
		}
		if n := fieldCacheMatches(t, s, fmt.Sprint("round ", round)); n == 0 {
			t.Fatalf("round %d: nothing cached", round)
		}
	}
}
