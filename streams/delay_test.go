package streams_test

import (
	"math"
	"testing"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/streams"
)

// addDelayed adds an auto-ID entry with field "n" = n to key, delayed by d.
func addDelayed(t *testing.T, s *materialize.Store, key, n string, d *streams.Delay) codec.ID {
	t.Helper()
	got, ok, err := tryAdd(t, s, key, [][]byte{[]byte("n"), []byte(n)}, streams.AddArgs{ID: streams.IDSpec{Auto: true}, Delay: d})
	if err != nil || !ok {
		t.Fatalf("Add(%q, delay %+v) = %v, %v", key, d, ok, err)
	}
	return got
}

func fieldN(es []streams.Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, string(e.Fields[1]))
	}
	return out
}

// TestDelayDue: DELAY counts from the decision time, DELIVERAT is absolute,
// and a due time not after the decision time is no delay at all.
func TestDelayDue(t *testing.T) {
	for _, tc := range []struct {
		d    *streams.Delay
		want int64
	}{
		{nil, 0},
		{&streams.Delay{Ms: 0}, 0},
		{&streams.Delay{Ms: 250}, t0 + 250},
		{&streams.Delay{Ms: t0 + 5, At: true}, t0 + 5},
		{&streams.Delay{Ms: t0, At: true}, 0},
		{&streams.Delay{Ms: 7, At: true}, 0},
		{&streams.Delay{Ms: math.MaxInt64}, math.MaxInt64},
	} {
		if got := tc.d.DueMs(t0); got != tc.want {
			t.Errorf("%+v.DueMs(t0) = %d, want %d", tc.d, got, tc.want)
		}
	}
}

// TestDelayedEntry: a delayed entry has its ID and place at once (XRANGE,
// XLEN see it, with its due time), its value carries the due time, and
// ReadDue, XREAD's read, stops before it until it is due (head-of-line:
// nor the entries after it), then returns everything.
func TestDelayedEntry(t *testing.T) {
	s, c := open(t)
	addDelayed(t, s, "s", "1", nil)
	d := addDelayed(t, s, "s", "2", &streams.Delay{Ms: 100})
	c.Advance(1)
	addDelayed(t, s, "s", "3", nil)
	addDelayed(t, s, "s", "4", &streams.Delay{Ms: 0}) // due at once: an ordinary entry

	es, err := streams.Range(s.View(), 0, []byte("s"), codec.ID{}, codec.MaxID, 0, false)
	if err != nil || len(es) != 4 || es[1].ID != d || es[1].DueMs != t0+100 || es[0].DueMs != 0 || es[3].DueMs != 0 {
		t.Fatalf("Range = %+v, %v", es, err)
	}
	if n, _ := streams.Len(s.View(), 0, []byte("s")); n != 4 {
		t.Fatalf("Len = %d", n)
	}
	if e, ok, err := streams.Get(s.View(), 0, []byte("s"), d); !ok || err != nil || e.DueMs != t0+100 || string(e.Fields[1]) != "2" {
		t.Fatalf("Get = %+v, %v, %v", e, ok, err)
	}
	v := s.View()
	got, hold, err := streams.ReadDue(v, 0, []byte("s"), codec.ID{}, 0, v.NowMs())
	if err != nil || hold != t0+100 || len(got) != 1 || string(got[0].Fields[1]) != "1" {
		t.Fatalf("ReadDue before due = %v, %d, %v", fieldN(got), hold, err)
	}
	// Reading from past the delayed entry is not held by it.
	got, hold, _ = streams.ReadDue(v, 0, []byte("s"), d, 0, v.NowMs())
	if hold != 0 || len(got) != 2 {
		t.Fatalf("ReadDue after the delayed entry = %v, %d", fieldN(got), hold)
	}
	// COUNT reached before the held entry: no hold.
	if got, hold, _ = streams.ReadDue(v, 0, []byte("s"), codec.ID{}, 1, v.NowMs()); hold != 0 || len(got) != 1 {
		t.Fatalf("ReadDue COUNT 1 = %v, %d", fieldN(got), hold)
	}
	c.Advance(99) // t0+100: due
	v = s.View()
	got, hold, err = streams.ReadDue(v, 0, []byte("s"), codec.ID{}, 0, v.NowMs())
	if err != nil || hold != 0 || len(got) != 4 {
		t.Fatalf("ReadDue at due = %v, %d, %v", fieldN(got), hold, err)
	}
	// An absent key reads nothing.
	if got, hold, err = streams.ReadDue(v, 0, []byte("none"), codec.ID{}, 0, v.NowMs()); got != nil || hold != 0 || err != nil {
		t.Fatalf("ReadDue(absent) = %v, %d, %v", got, hold, err)
	}
}

// TestDelayedTrimmedAtOnce: an XADD whose own trim removes its delayed
// entry applies (the delay tail is written before the trim removes it).
func TestDelayedTrimmedAtOnce(t *testing.T) {
	s, _ := open(t)
	addDelayed(t, s, "s", "1", nil)
	_, ok, err := tryAdd(t, s, "s", fv1, streams.AddArgs{ID: streams.IDSpec{Auto: true}, Delay: &streams.Delay{Ms: 50},
		Trim: &streams.Trim{Strategy: streams.TrimMaxLen, MaxLen: 0}})
	if err != nil || !ok {
		t.Fatalf("Add = %v, %v", ok, err)
	}
	if n, _ := streams.Len(s.View(), 0, []byte("s")); n != 0 {
		t.Fatalf("Len = %d", n)
	}
}
