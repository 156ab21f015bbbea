package rhash_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/keyspace"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/types/rhash"
)

func open(tb testing.TB) *materialize.Store {
	tb.Helper()
	s, err := materialize.Open(materialize.Options{Dir: tb.TempDir()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// fill writes n fields into key, 10,000 per write.
func fill(tb testing.TB, s *materialize.Store, key []byte, n int) {
	tb.Helper()
	for done := 0; done < n; {
		k := min(10000, n-done)
		pairs := make([][]byte, 0, 2*k)
		for i := range k {
			pairs = append(pairs, fmt.Appendf(nil, "field:%09d", done+i), []byte("value"))
		}
		if _, err := s.Write(func(v *materialize.View) ([]codec.Event, error) {
			_, evs, err := rhash.Set(v, 0, key, pairs, false)
			return evs, err
		}); err != nil {
			tb.Fatal(err)
		}
		done += k
	}
}

// BenchmarkDelHash: DEL of a hash is one range deletion, whatever its size
// (run with -benchtime=5x: each iteration deletes a hash built before the
// timer runs).
func BenchmarkDelHash(b *testing.B) {
	for _, n := range []int{10, 10_000, 1_000_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			s := open(b)
			keys := make([][]byte, b.N)
			for i := range keys {
				keys[i] = fmt.Appendf(nil, "h%d", i)
				fill(b, s, keys[i], n)
			}
			b.ResetTimer()
			for i := range b.N {
				if _, err := s.Write(func(v *materialize.View) ([]codec.Event, error) {
					m, ok, err := v.Meta(0, keys[i])
					if err != nil || !ok {
						return nil, fmt.Errorf("missing %s: %v", keys[i], err)
					}
					return []codec.Event{codec.DelKeyEvent(0, keys[i], m.Type, m.ExpireAtMs)}, nil
				}); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if n, err := rhash.Len(s.View(), 0, keys[0]); err != nil || n != 0 {
				b.Fatalf("HLEN after DEL = %d, %v", n, err)
			}
		})
	}
}

// TestScanProgress: a scan of a large hash returns every field at least
// once and ends, also when many fields share the cursor's 7-byte prefix.
func TestScanProgress(t *testing.T) {
	s := open(t)
	key := []byte("h")
	var pairs [][]byte
	for i := range 500 {
		pairs = append(pairs, fmt.Appendf(nil, "f%03d", i), []byte("v"))
	}
	for i := range 300 { // one 7-byte prefix, more fields than COUNT
		pairs = append(pairs, fmt.Appendf(nil, "samepfx\x00%03d", i), []byte("v"))
	}
	pairs = append(pairs, []byte("a"), []byte("v"), []byte("a\x00"), []byte("v"), []byte(""), []byte("v"))
	if _, err := s.Write(func(v *materialize.View) ([]codec.Event, error) {
		_, evs, err := rhash.Set(v, 0, key, pairs, false)
		return evs, err
	}); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	cur, calls := uint64(0), 0
	for {
		pg, err := rhash.Scan(s.View(), 0, key, cur, 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		calls++
		for _, f := range pg.Elems {
			seen[string(f)]++
		}
		if cur = pg.Cursor; cur == 0 {
			break
		}
		if calls > 1000 {
			t.Fatal("the scan does not end")
		}
	}
	if len(seen) != len(pairs)/2 {
		t.Errorf("scan saw %d distinct fields, want %d", len(seen), len(pairs)/2)
	}
	if calls < 50 {
		t.Errorf("%d calls for %d fields at COUNT 10", calls, len(pairs)/2)
	}
}

// TestSetCountsNewFields: HSET counts the fields it adds, through the
// writer's field cache holding a hash it saw created whole (an absent
// field is not looked up), an expired hash written again (it starts
// empty: every field is new, even one the expired hash had), and the hash
// created then.
func TestSetCountsNewFields(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	s, err := materialize.Open(materialize.Options{Dir: t.TempDir(), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	h := []byte("h")
	set := func(pairs ...string) int64 {
		t.Helper()
		var b [][]byte
		for _, p := range pairs {
			b = append(b, []byte(p))
		}
		var n int64
		if _, err := s.Write(func(v *materialize.View) ([]codec.Event, error) {
			var evs []codec.Event
			var err error
			n, evs, err = rhash.Set(v, 0, h, b, false)
			return evs, err
		}); err != nil {
			t.Fatal(err)
		}
		return n
	}
	length := func() int64 {
		t.Helper()
		n, err := rhash.Len(s.View(), 0, h)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := set("f1", "v", "f2", "v"); n != 2 {
		t.Fatalf("HSET creating the hash added %d, want 2", n)
	}
	// From here the hash's metadata is cached (the creating HSET's own
	// lookup of the absent key may read Pebble until the key filter is
	// ready) and its fields are held whole.
	gets := s.IterStats().Gets
	for i, c := range []struct {
		pairs []string
		added int64
	}{
		{[]string{"f1", "x", "f3", "v"}, 1},
		{[]string{"f2", "x", "f4", "v", "f4", "w"}, 1},
	} {
		if n := set(c.pairs...); n != c.added {
			t.Fatalf("HSET %d %q added %d, want %d", i, c.pairs, n, c.added)
		}
	}
	if n := s.IterStats().Gets - gets; n != 0 {
		t.Fatalf("HSETs of a hash created whole made %d Pebble lookups", n)
	}
	if n := length(); n != 4 {
		t.Fatalf("HLEN %d, want 4", n)
	}
	if _, err := s.Write(func(v *materialize.View) ([]codec.Event, error) {
		_, evs, err := keyspace.Expire(v, 0, h, 10, false, 0)
		return evs, err
	}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(20 * time.Millisecond)
	if n := set("f1", "v", "f5", "v"); n != 2 {
		t.Fatalf("HSET on the expired hash added %d, want 2", n)
	}
	if n := set("f1", "v", "f2", "v"); n != 1 {
		t.Fatalf("HSET of a field the expired hash had added %d, want 1", n)
	}
	if n := length(); n != 3 {
		t.Fatalf("HLEN of the hash made anew %d, want 3", n)
	}
}
