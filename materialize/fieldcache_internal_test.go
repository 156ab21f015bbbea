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
		if len(fc.m) == 0 && !fc.marked() {
			t.Fatalf("%s: an empty collection %x is kept", step, coll)
		}
		if fc.marked() {
			total += fieldEntryCost
		}
		if fc.complete {
			// Every element stored is cached, as present: the cache
			// answers "absent" for any other.
			stored, err := RawScan(s, []byte(coll))
			if err != nil {
				t.Fatal(err)
			}
			for _, kv := range stored {
				if e, ok := fc.m[string(kv[0][len(coll):])]; !ok || !e.exists {
					t.Fatalf("%s: %q is stored, and its complete collection does not hold it", step, kv[0])
				}
			}
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
	s := openTemp(t)
	write, must := eventWriters(t, s)
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

// TestFieldCacheCompleteCollections: a collection the writer saw begin
// empty (View.NoElements) answers lookups of elements it does not hold as
// absent, without Pebble and without filling entries; it follows writes
// and removals, stops answering so once one of its entries is evicted, and
// its key's deletion drops it. Every answer is what Pebble holds.
func TestFieldCacheCompleteCollections(t *testing.T) {
	s := openTemp(t)
	_, must := eventWriters(t, s)
	h, st := []byte("h"), []byte("s")
	hk := func(f string) []byte { return codec.ElementKey(codec.TagHash, 0, h, []byte(f)) }
	sk := func(m string) []byte { return codec.ElementKey(codec.TagSet, 0, st, []byte(m)) }
	create := func(tag codec.Tag, key []byte, e codec.Event) {
		t.Helper()
		if _, err := s.Write(func(v *View) ([]codec.Event, error) {
			v.NoElements(tag, 0, key)
			return []codec.Event{e}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	create(codec.TagHash, h, codec.ElementsEvent(codec.OpHSet, 0, h, [][]byte{[]byte("f1"), []byte("v1")}))
	create(codec.TagSet, st, codec.ElementsEvent(codec.OpSAdd, 0, st, [][]byte{[]byte("m1")}))
	if !s.fields.colls[string(codec.KeyPrefix(codec.TagHash, 0, h))].complete {
		t.Fatal("a hash created after NoElements is not complete")
	}
	entries := fieldCacheMatches(t, s, "created")
	lookups := [][]byte{hk("f1"), hk("f2"), hk("f3"), sk("m1"), sk("m2"), sk("m3")}
	want := []string{"true:v1", "false:", "false:", "true:", "false:", "false:"}
	hits := s.IterStats().FieldHits
	if got := fieldLookups(t, s, lookups...); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("lookups: got %q, want %q", got, want)
	}
	if n := s.IterStats().FieldHits - hits; n != uint64(len(lookups)) {
		t.Fatalf("%d of %d lookups answered by the cache", n, len(lookups))
	}
	if n := fieldCacheMatches(t, s, "lookups"); n != entries {
		t.Fatalf("absent lookups added entries: %d, then %d", entries, n)
	}

	// Writes and removals keep it complete and right.
	must(codec.ElementsEvent(codec.OpHSet, 0, h, [][]byte{[]byte("f2"), []byte("v2")}),
		codec.ElementsEvent(codec.OpHDel, 0, h, [][]byte{[]byte("f1")}),
		codec.ElementsEvent(codec.OpSRem, 0, st, [][]byte{[]byte("m1")}),
		codec.ElementsEvent(codec.OpSAdd, 0, st, [][]byte{[]byte("m3")}))
	fieldCacheMatches(t, s, "writes")
	want = []string{"false:", "true:", "false:", "false:", "false:", "true:"}
	hits = s.IterStats().FieldHits
	if got := fieldLookups(t, s, lookups...); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("lookups after writes: got %q, want %q", got, want)
	}
	if n := s.IterStats().FieldHits - hits; n != uint64(len(lookups)) {
		t.Fatalf("after writes, %d of %d lookups answered by the cache", n, len(lookups))
	}

	// An eviction from the hash ends its completeness: a field evicted is
	// read from Pebble again.
	s.fields.max = s.fields.bytes + 20*(fieldEntryCost+8)
	var fv [][]byte
	for i := range 40 {
		fv = append(fv, fmt.Appendf(nil, "g%02d", i), []byte("x"))
	}
	must(codec.ElementsEvent(codec.OpHSet, 0, h, fv))
	hc := s.fields.colls[string(codec.KeyPrefix(codec.TagHash, 0, h))]
	if hc == nil || hc.complete {
		t.Fatalf("the hash is still complete after an eviction from it (%v)", hc)
	}
	fieldCacheMatches(t, s, "eviction")
	var all [][]byte
	for i := range 40 {
		all = append(all, hk(fmt.Sprintf("g%02d", i)))
	}
	for i, got := range fieldLookups(t, s, all...) {
		if !strings.HasPrefix(got, "true:") {
			t.Fatalf("field g%02d after the eviction: %q", i, got)
		}
	}
	s.fields.max = fieldCacheMaxBytes

	// The key's deletion drops it; a later NoElements starts it anew.
	must(codec.DelKeyEvent(0, st, codec.TypeSet, 0))
	if s.fields.colls[string(codec.KeyPrefix(codec.TagSet, 0, st))] != nil {
		t.Fatal("a deleted set's collection is kept")
	}
	create(codec.TagSet, st, codec.ElementsEvent(codec.OpSAdd, 0, st, [][]byte{[]byte("m9")}))
	want = []string{"false:", "true:", "false:"}
	if got := fieldLookups(t, s, sk("m3"), sk("m9"), sk("m1")); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("lookups of the set made anew: got %q, want %q", got, want)
	}
	fieldCacheMatches(t, s, "set made anew")
}

// TestFieldCacheBound: the cache stays within its byte bound, evicting
// entries at random, and what it keeps agrees with Pebble.
func TestFieldCacheBound(t *testing.T) {
	s := openTemp(t)
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

// TestFieldCacheListRuns: a head or tail read of a list (View.GetRun)
// reads its next elements ahead into the field cache, and the cache
// follows the list through pops, an overwrite of a cached element (LSET),
// a push, a deletion too large to follow, and a list whose elements are
// too large to cache; every read returns what Pebble holds.
func TestFieldCacheListRuns(t *testing.T) {
	s := openTemp(t)
	l := []byte("l")
	lk := func(p int64) []byte { return codec.ListKey(0, l, p) }
	elems := func(prefix string, n int) [][]byte {
		var es [][]byte
		for i := range n {
			es = append(es, fmt.Appendf(nil, "%s%03d", prefix, i))
		}
		return es
	}
	write := func(decide func(v *View) ([]codec.Event, error)) {
		t.Helper()
		if _, err := s.Write(decide); err != nil {
			t.Fatal(err)
		}
	}
	write(func(*View) ([]codec.Event, error) {
		return []codec.Event{codec.ListSetEvent(0, l, 0, elems("e", 200))}, nil
	})
	// pop reads the element at p as LPOP (or RPOP: reverse) does, checks
	// it, and deletes it.
	pop := func(p int64, reverse bool, want string) {
		t.Helper()
		write(func(v *View) ([]codec.Event, error) {
			var val []byte
			var ok bool
			var err error
			if reverse {
				val, ok, err = v.GetRun(lk(p), lk(0), nil, true)
			} else {
				val, ok, err = v.GetRun(lk(p), nil, lk(1000), false)
			}
			if err != nil {
				return nil, err
			}
			if !ok || string(val) != want {
				t.Fatalf("read of position %d: %q, %v; want %q", p, val, ok, want)
			}
			return []codec.Event{codec.ListDelEvent(0, l, p, p)}, nil
		})
		fieldCacheMatches(t, s, fmt.Sprint("pop ", p))
	}
	hits := s.IterStats().FieldHits
	for p := range int64(40) {
		pop(p, false, fmt.Sprintf("e%03d", p))
	}
	for p := int64(199); p > 160; p-- {
		pop(p, true, fmt.Sprintf("e%03d", p))
	}
	// Two read-aheads each way, the other reads from the cache.
	if n := s.IterStats().FieldHits - hits; n != 40+39-4 {
		t.Fatalf("%d of 79 pops answered by the cache, want 75", n)
	}
	// LSET of a cached element, a push at the head, then pops over them.
	write(func(*View) ([]codec.Event, error) {
		return []codec.Event{codec.ListSetEvent(0, l, 40, [][]byte{[]byte("x040")}), codec.ListSetEvent(0, l, 39, [][]byte{[]byte("p039")})}, nil
	})
	fieldCacheMatches(t, s, "LSET and push")
	pop(39, false, "p039")
	pop(40, false, "x040")
	// A deletion of more than listPointDeleteMax elements drops the list.
	write(func(*View) ([]codec.Event, error) {
		return []codec.Event{codec.ListDelEvent(0, l, 41, 41+listPointDeleteMax)}, nil
	})
	if fc := s.fields.colls[string(codec.KeyPrefix(codec.TagList, 0, l))]; fc != nil {
		t.Fatalf("a range deletion left %d cached elements", len(fc.m))
	}
	fieldCacheMatches(t, s, "range deletion")
	pop(42+listPointDeleteMax, false, fmt.Sprintf("e%03d", 42+listPointDeleteMax))

	// Elements over listValueMax: the list is marked and read one element
	// at a time.
	big := []byte("b")
	large := strings.Repeat("x", listValueMax+1)
	write(func(*View) ([]codec.Event, error) {
		return []codec.Event{codec.ListSetEvent(0, big, 0, [][]byte{[]byte(large), []byte("small"), []byte(large)})}, nil
	})
	for p, want := range []string{large, "small"} {
		write(func(v *View) ([]codec.Event, error) {
			val, ok, err := v.GetRun(codec.ListKey(0, big, int64(p)), nil, codec.ListKey(0, big, 3), false)
			if err != nil || !ok || string(val) != want {
				t.Fatalf("read of position %d: %d bytes, %v, %v; want %d bytes", p, len(val), ok, err, len(want))
			}
			return []codec.Event{codec.ListDelEvent(0, big, int64(p), int64(p))}, nil
		})
	}
	if fc := s.fields.colls[string(codec.KeyPrefix(codec.TagList, 0, big))]; fc == nil || !fc.noRun || len(fc.m) != 0 {
		t.Fatalf("a list of large elements: %+v, want marked, with nothing cached", fc)
	}
	fieldCacheMatches(t, s, "large elements")
}
