package materialize

import (
	"fmt"
	"testing"
	"time"

	"github.com/sediment-dev/sediment/codec"
)

// TestKeyFilterRates: no false negatives, and about 1% false positives at
// capacity.
func TestKeyFilterRates(t *testing.T) {
	const n = 200_000
	f := newKeyFilter(n)
	for i := 0; i < n; i++ {
		f.add(uint8(i%3), fmt.Appendf(nil, "key:%d", i))
	}
	for i := 0; i < n; i++ {
		if !f.mayContain(uint8(i%3), fmt.Appendf(nil, "key:%d", i)) {
			t.Fatalf("key:%d added but not found", i)
		}
	}
	fp := 0
	for i := 0; i < n; i++ {
		if f.mayContain(uint8(i%3), fmt.Appendf(nil, "other:%d", i)) {
			fp++
		}
		if f.mayContain(uint8(i%3+1), fmt.Appendf(nil, "key:%d", i)) { // same key, other db
			fp++
		}
	}
	if rate := float64(fp) / (2 * n); rate > 0.025 {
		t.Errorf("false-positive rate %.4f at capacity, want about 0.01", rate)
	}
}

// waitFilterReady waits for the current filter to be ready.
func waitFilterReady(t *testing.T, s *Store) *keyFilter {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if f := s.filters.cur.Load(); f != nil && f.ready.Load() && !s.filters.rebuilding.Load() {
			return f
		}
		if time.Now().After(deadline) {
			t.Fatal("key filter not ready after 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func setKeys(t *testing.T, s *Store, db uint8, prefix string, from, to int) {
	t.Helper()
	for i := from; i < to; i += 100 {
		_, err := s.Write(func(v *View) ([]codec.Event, error) {
			var evs []codec.Event
			for j := i; j < min(i+100, to); j++ {
				evs = append(evs, codec.SetMetaEvent(db, fmt.Appendf(nil, "%s%d", prefix, j), codec.Meta{Type: codec.TypeString, Value: []byte("v")}, 0))
			}
			return evs, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestKeyFilterReopenAndRebuild: after a reopen, the scan adds the stored
// keys while new ones are written; once keys created pass the capacity,
// a rebuild replaces the filter while writes go on. Through all of it,
// every written key reads as present and absent keys are answered by the
// filter.
func TestKeyFilterReopenAndRebuild(t *testing.T) {
	defer func(n int64) { filterMinKeys = n }(filterMinKeys)
	filterMinKeys = 1000
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	setKeys(t, s, 0, "old:", 0, 3000) // passes the first filter's capacity: a rebuild
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The reopened filter holds 6000 (twice the stored keys): 10000 new
	// keys, written while its scan runs, make it rebuild while writes go on.
	setKeys(t, s, 1, "new:", 0, 10000)
	f := waitFilterReady(t, s)
	if f.capacity <= 6000 {
		t.Errorf("capacity %d: the filter was not rebuilt", f.capacity)
	}
	v := s.View()
	check := func(db uint8, prefix string, n int) {
		for i := 0; i < n; i++ {
			k := fmt.Appendf(nil, "%s%d", prefix, i)
			if !f.mayContain(db, k) {
				t.Fatalf("db %d %s not in the filter", db, k)
			}
			if _, ok, err := v.Meta(db, k); !ok || err != nil {
				t.Fatalf("db %d %s reads absent (%v)", db, k, err)
			}
		}
	}
	check(0, "old:", 3000)
	check(1, "new:", 10000)
	answered := 0
	for i := 0; i < 1000; i++ {
		k := fmt.Appendf(nil, "absent:%d", i)
		if s.filters.absent(0, k, ^uint64(0)) {
			answered++
		}
		if _, ok, _ := v.Meta(0, k); ok {
			t.Fatalf("%s reads present", k)
		}
	}
	if answered < 950 {
		t.Errorf("the filter answered %d of 1000 absent keys", answered)
	}
}

// TestMetaLookupCounts: IterStats tells where metadata lookups were
// answered: a new key by the filter, a written one by the cache, a key
// not cached (after a reopen) by Pebble.
func TestMetaLookupCounts(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	waitFilterReady(t, s)
	before := s.IterStats()
	if _, ok, _ := s.View().Meta(0, []byte("nokey")); ok {
		t.Fatal("nokey present")
	}
	setKeys(t, s, 0, "k", 0, 1)
	if _, ok, _ := s.View().Meta(0, []byte("k0")); !ok {
		t.Fatal("k0 absent")
	}
	d := s.IterStats().Sub(before)
	if d.MetaAbsent < 2 || d.MetaHits < 1 || d.MetaLookups != 0 {
		t.Errorf("absent %d (want >= 2: nokey, the new k0), hits %d (want >= 1), Pebble %d (want 0)", d.MetaAbsent, d.MetaHits, d.MetaLookups)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(Options{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	before = s.IterStats()
	if _, ok, _ := s.View().Meta(0, []byte("k0")); !ok {
		t.Fatal("k0 absent after reopen")
	}
	if d := s.IterStats().Sub(before); d.MetaLookups != 1 {
		t.Errorf("Pebble lookups %d for an uncached key, want 1", d.MetaLookups)
	}
}
