package streams_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/internal/testclock"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/streams"
)

// ---------------------------------------------------------------- helpers

type testClock = testclock.Clock

const t0 = int64(1700000000000)

func open(t *testing.T) (*materialize.Store, *testClock) {
	t.Helper()
	c := testclock.New(t0)
	s, err := materialize.Open(materialize.Options{InMemory: true, Now: c.Now})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, c
}

func id(ms, seq uint64) codec.ID { return codec.ID{Ms: ms, Seq: seq} }

var fv1 = [][]byte{[]byte("f"), []byte("v")}

// tryAdd runs streams.Add inside a Write and commits its events.
func tryAdd(t *testing.T, s *materialize.Store, key string, fv [][]byte, a streams.AddArgs) (codec.ID, bool, error) {
	t.Helper()
	var (
		got codec.ID
		ok  bool
	)
	_, err := s.Write(func(v *materialize.View) ([]codec.Event, error) {
		var evs []codec.Event
		var err error
		got, ok, evs, err = streams.Add(v, 0, []byte(key), fv, a)
		if err == nil && ok && len(evs) == 0 {
			t.Errorf("Add returned ok without events")
		}
		return evs, err
	})
	return got, ok, err
}

func add(t *testing.T, s *materialize.Store, key string, spec streams.IDSpec) codec.ID {
	t.Helper()
	got, ok, err := tryAdd(t, s, key, fv1, streams.AddArgs{ID: spec})
	if err != nil || !ok {
		t.Fatalf("Add(%q, %+v) = %v, %v, %v", key, spec, got, ok, err)
	}
	return got
}

func explicit(ms, seq uint64) streams.IDSpec { return streams.IDSpec{ID: id(ms, seq)} }

// addN adds entries 1-0 .. n-0 with field "n" = i.
func addN(t *testing.T, s *materialize.Store, key string, n int) {
	t.Helper()
	for i := 1; i <= n; i++ {
		if _, ok, err := tryAdd(t, s, key, [][]byte{[]byte("n"), []byte(fmt.Sprint(i))}, streams.AddArgs{ID: explicit(uint64(i), 0)}); err != nil || !ok {
			t.Fatalf("add %d: %v", i, err)
		}
	}
}

func meta(t *testing.T, s *materialize.Store, key string) codec.StreamMeta {
	t.Helper()
	m, ok, err := streams.Meta(s.View(), 0, []byte(key))
	if err != nil || !ok {
		t.Fatalf("Meta(%q) = %v, %v", key, ok, err)
	}
	return m.Stream
}

func rangeIDs(t *testing.T, s *materialize.Store, key string, start, end codec.ID, count int, reverse bool) []codec.ID {
	t.Helper()
	es, err := streams.Range(s.View(), 0, []byte(key), start, end, count, reverse)
	if err != nil {
		t.Fatalf("Range: %v", err)
	}
	return ids(es)
}

func ids(es []streams.Entry) []codec.ID {
	var out []codec.ID
	for _, e := range es {
		out = append(out, e.ID)
	}
	return out
}

func msIDs(ms ...uint64) []codec.ID {
	var out []codec.ID
	for _, m := range ms {
		out = append(out, id(m, 0))
	}
	return out
}

func seqRange(from, to uint64) []codec.ID {
	var out []codec.ID
	for m := from; m <= to; m++ {
		out = append(out, id(m, 0))
	}
	return out
}

func trim(t *testing.T, s *materialize.Store, key string, tr streams.Trim) uint64 {
	t.Helper()
	var n uint64
	before := s.LastSeq()
	seq, err := s.Write(func(v *materialize.View) ([]codec.Event, error) {
		var evs []codec.Event
		var err error
		n, evs, err = streams.TrimStream(v, 0, []byte(key), tr)
		return evs, err
	})
	if err != nil {
		t.Fatalf("TrimStream(%+v): %v", tr, err)
	}
	if (n == 0) != (seq == 0) {
		t.Errorf("TrimStream removed %d but committed seq %d (before %d)", n, seq, before)
	}
	return n
}

func del(t *testing.T, s *materialize.Store, key string, dels ...codec.ID) int {
	t.Helper()
	var n int
	_, err := s.Write(func(v *materialize.View) ([]codec.Event, error) {
		var evs []codec.Event
		var err error
		n, evs, err = streams.Del(v, 0, []byte(key), dels)
		return evs, err
	})
	if err != nil {
		t.Fatalf("Del: %v", err)
	}
	return n
}

// checkConsistent verifies Length and FirstID against the stored entries.
func checkConsistent(t *testing.T, s *materialize.Store, key string) {
	t.Helper()
	m := meta(t, s, key)
	all := rangeIDs(t, s, key, codec.ID{}, codec.MaxID, 0, false)
	if uint64(len(all)) != m.Length {
		t.Errorf("Length %d, but %d entries stored", m.Length, len(all))
	}
	first := codec.ID{}
	if len(all) > 0 {
		first = all[0]
		if m.LastID.Less(all[len(all)-1]) {
			t.Errorf("LastID %v below the last entry %v", m.LastID, all[len(all)-1])
		}
	}
	if m.FirstID != first {
		t.Errorf("FirstID %v, first stored entry %v", m.FirstID, first)
	}
}

// ---------------------------------------------------------------- ID allocation

func TestAddAutoID(t *testing.T) {
	s, c := open(t)
	auto := streams.IDSpec{Auto: true}
	steps := []struct {
		now  int64
		want codec.ID
	}{
		{t0, id(uint64(t0), 0)},
		{t0, id(uint64(t0), 1)},         // same ms: seq+1
		{t0 + 5, id(uint64(t0+5), 0)},   // clock ahead of last: new ms
		{t0 - 100, id(uint64(t0+5), 1)}, // clock behind last: ms stays, seq+1
		{t0 + 5, id(uint64(t0+5), 2)},
		{t0 + 6, id(uint64(t0+6), 0)},
	}
	for i, st := range steps {
		c.Set(st.now)
		if got := add(t, s, "s", auto); got != st.want {
			t.Fatalf("step %d (now %d): id %v, want %v", i, st.now, got, st.want)
		}
	}
	m := meta(t, s, "s")
	if m.Length != 6 || m.EntriesAdded != 6 || m.FirstID != id(uint64(t0), 0) || m.LastID != id(uint64(t0+6), 0) {
		t.Errorf("meta = %+v", m)
	}
	if !m.MaxDeletedID.IsZero() {
		t.Errorf("MaxDeletedID = %v", m.MaxDeletedID)
	}
	checkConsistent(t, s, "s")
}

func TestAddAutoIDCarriesAtMaxSeq(t *testing.T) {
	s, c := open(t)
	c.Set(3)
	add(t, s, "s", explicit(5, math.MaxUint64))
	if got := add(t, s, "s", streams.IDSpec{Auto: true}); got != id(6, 0) {
		t.Errorf("* after 5-max = %v, want 6-0", got)
	}
	// A clock at 0 on a new stream gives 0-1 (0-0 is not a valid ID).
	c.Set(0)
	if got := add(t, s, "z", streams.IDSpec{Auto: true}); got != id(0, 1) {
		t.Errorf("* at ms 0 = %v, want 0-1", got)
	}
}

func TestAddSeqAuto(t *testing.T) {
	s, _ := open(t)
	seqAuto := func(ms uint64) streams.IDSpec { return streams.IDSpec{SeqAuto: true, ID: id(ms, 0)} }
	for i, st := range []struct {
		ms   uint64
		want codec.ID
	}{
		{5, id(5, 0)},
		{5, id(5, 1)},
		{5, id(5, 2)},
		{7, id(7, 0)},
	} {
		if got := add(t, s, "s", seqAuto(st.ms)); got != st.want {
			t.Fatalf("step %d: %d-* = %v, want %v", i, st.ms, got, st.want)
		}
	}
	if _, _, err := tryAdd(t, s, "s", fv1, streams.AddArgs{ID: seqAuto(6)}); !errors.Is(err, streams.ErrIDTooSmall) {
		t.Errorf("6-* after 7-0: err %v, want ErrIDTooSmall", err)
	}
	// 0-* on a new stream is 0-1.
	if got := add(t, s, "z", seqAuto(0)); got != id(0, 1) {
		t.Errorf("0-* on a new stream = %v, want 0-1", got)
	}
	// ms-* at the maximum seq of ms cannot continue.
	add(t, s, "m", explicit(9, math.MaxUint64))
	// Redis 7.0 replies "Elements are too large to be stored" here.
	if _, _, err := tryAdd(t, s, "m", fv1, streams.AddArgs{ID: seqAuto(9)}); !errors.Is(err, streams.ErrSeqOverflow) {
		t.Errorf("9-* after 9-max: err %v, want ErrSeqOverflow", err)
	}
	if got := add(t, s, "m", seqAuto(10)); got != id(10, 0) {
		t.Errorf("10-* = %v", got)
	}
}

func TestAddExplicitID(t *testing.T) {
	s, _ := open(t)
	add(t, s, "s", explicit(1, 1))
	seq := s.LastSeq()
	for _, bad := range []struct {
		id  codec.ID
		err error
	}{
		{id(1, 1), streams.ErrIDTooSmall},
		{id(1, 0), streams.ErrIDTooSmall},
		{id(0, 5), streams.ErrIDTooSmall},
		{id(0, 0), streams.ErrIDZero},
	} {
		if _, _, err := tryAdd(t, s, "s", fv1, streams.AddArgs{ID: streams.IDSpec{ID: bad.id}}); !errors.Is(err, bad.err) {
			t.Errorf("XADD %v: err %v, want %v", bad.id, err, bad.err)
		}
	}
	if s.LastSeq() != seq {
		t.Errorf("failed XADDs committed records")
	}
	add(t, s, "s", explicit(1, 2))
	add(t, s, "s", explicit(2, 0))
	if got := rangeIDs(t, s, "s", codec.ID{}, codec.MaxID, 0, false); !slices.Equal(got, []codec.ID{id(1, 1), id(1, 2), id(2, 0)}) {
		t.Errorf("entries = %v", got)
	}

	// 0-0 on a missing key does not create it.
	if _, _, err := tryAdd(t, s, "new", fv1, streams.AddArgs{ID: explicit(0, 0)}); !errors.Is(err, streams.ErrIDZero) {
		t.Errorf("XADD new 0-0: err %v", err)
	}
	if _, ok, _ := streams.Meta(s.View(), 0, []byte("new")); ok {
		t.Errorf("failed XADD created the key")
	}
}

func TestAddExhausted(t *testing.T) {
	s, c := open(t)
	add(t, s, "s", streams.IDSpec{ID: codec.MaxID})
	c.Set(t0)
	if _, _, err := tryAdd(t, s, "s", fv1, streams.AddArgs{ID: streams.IDSpec{Auto: true}}); !errors.Is(err, streams.ErrExhausted) {
		t.Errorf("* at MaxID: err %v, want ErrExhausted", err)
	}
	m := meta(t, s, "s")
	if m.Length != 1 || m.LastID != codec.MaxID {
		t.Errorf("meta after failed XADD = %+v", m)
	}
}

// Redis's xaddCommand checks "last_id == max" before resolving the ID, so
// every ID form (explicit and ms-*) replies with the exhausted error.
func TestAddExhaustedExplicit(t *testing.T) {
	s, _ := open(t)
	add(t, s, "s", streams.IDSpec{ID: codec.MaxID})
	for _, spec := range []streams.IDSpec{
		{ID: id(1, 0)},
		{ID: id(math.MaxUint64, 0), SeqAuto: true},
		{ID: id(5, 0), SeqAuto: true},
	} {
		if _, _, err := tryAdd(t, s, "s", fv1, streams.AddArgs{ID: spec}); !errors.Is(err, streams.ErrExhausted) {
			t.Errorf("%+v at MaxID: err %v, want ErrExhausted", spec, err)
		}
	}
}

func TestAddNoMkStream(t *testing.T) {
	s, _ := open(t)
	seq := s.LastSeq()
	got, ok, err := tryAdd(t, s, "s", fv1, streams.AddArgs{ID: explicit(1, 0), NoMkStream: true})
	if err != nil || ok || !got.IsZero() {
		t.Fatalf("NOMKSTREAM on missing key = %v, %v, %v", got, ok, err)
	}
	if s.LastSeq() != seq {
		t.Errorf("NOMKSTREAM on missing key committed")
	}
	if _, ok, _ := streams.Meta(s.View(), 0, []byte("s")); ok {
		t.Errorf("NOMKSTREAM created the key")
	}
	add(t, s, "s", explicit(1, 0))
	got, ok, err = tryAdd(t, s, "s", fv1, streams.AddArgs{ID: explicit(2, 0), NoMkStream: true})
	if err != nil || !ok || got != id(2, 0) {
		t.Errorf("NOMKSTREAM on existing key = %v, %v, %v", got, ok, err)
	}
	if m := meta(t, s, "s"); m.Length != 2 {
		t.Errorf("Length = %d", m.Length)
	}
}

func TestAddWrongType(t *testing.T) {
	s, _ := open(t)
	if _, err := s.Write(func(*materialize.View) ([]codec.Event, error) {
		return []codec.Event{codec.SetMetaEvent(0, []byte("str"), codec.Meta{Type: codec.TypeString, Value: []byte("x")}, 0)}, nil
	}); err != nil {
		t.Fatal(err)
	}
	v := s.View()
	if _, _, err := tryAdd(t, s, "str", fv1, streams.AddArgs{ID: streams.IDSpec{Auto: true}}); !errors.Is(err, materialize.ErrWrongType) {
		t.Errorf("Add on string: %v", err)
	}
	if _, _, err := streams.Meta(v, 0, []byte("str")); !errors.Is(err, materialize.ErrWrongType) {
		t.Errorf("Meta on string: %v", err)
	}
	if _, err := streams.Range(v, 0, []byte("str"), codec.ID{}, codec.MaxID, 0, false); !errors.Is(err, materialize.ErrWrongType) {
		t.Errorf("Range on string: %v", err)
	}
	if _, err := streams.Len(v, 0, []byte("str")); !errors.Is(err, materialize.ErrWrongType) {
		t.Errorf("Len on string: %v", err)
	}
	if _, _, err := streams.Del(v, 0, []byte("str"), msIDs(1)); !errors.Is(err, materialize.ErrWrongType) {
		t.Errorf("Del on string: %v", err)
	}
	if _, _, err := streams.TrimStream(v, 0, []byte("str"), streams.Trim{Strategy: streams.TrimMaxLen}); !errors.Is(err, materialize.ErrWrongType) {
		t.Errorf("TrimStream on string: %v", err)
	}
}

func TestAddKeepsTTLAndReplacesExpiredKey(t *testing.T) {
	s, c := open(t)
	deadline := t0 + 1000
	add(t, s, "s", explicit(100, 0))
	// Give the stream a TTL, as EXPIRE would.
	if _, err := s.Write(func(v *materialize.View) ([]codec.Event, error) {
		m, _, _ := streams.Meta(v, 0, []byte("s"))
		m.ExpireAtMs = deadline
		return []codec.Event{codec.SetMetaEvent(0, []byte("s"), m, 0)}, nil
	}); err != nil {
		t.Fatal(err)
	}
	add(t, s, "s", explicit(101, 0))
	m, ok, err := streams.Meta(s.View(), 0, []byte("s"))
	if !ok || err != nil || m.ExpireAtMs != deadline {
		t.Fatalf("XADD lost the TTL: %+v", m)
	}
	if ok, _ := s.View().Has(codec.TTLKey(0, []byte("s"), deadline)); !ok {
		t.Errorf("TTL index entry lost")
	}

	// Once expired, XADD starts a new stream: a small ID is accepted and
	// the old entries are gone.
	c.Set(deadline + 1)
	if _, ok, _ := streams.Meta(s.View(), 0, []byte("s")); ok {
		t.Fatalf("expired stream visible")
	}
	if n, err := streams.Len(s.View(), 0, []byte("s")); n != 0 || err != nil {
		t.Errorf("Len of expired = %d, %v", n, err)
	}
	add(t, s, "s", explicit(1, 0))
	m2 := meta(t, s, "s")
	if m2.Length != 1 || m2.LastID != id(1, 0) || m2.EntriesAdded != 1 {
		t.Errorf("new stream meta = %+v", m2)
	}
	if got := rangeIDs(t, s, "s", codec.ID{}, codec.MaxID, 0, false); !slices.Equal(got, msIDs(1)) {
		t.Errorf("entries = %v, want [1-0]", got)
	}
	m, _, _ = streams.Meta(s.View(), 0, []byte("s"))
	if m.ExpireAtMs != 0 {
		t.Errorf("new stream inherited TTL %d", m.ExpireAtMs)
	}
	if ok, _ := s.View().Has(codec.TTLKey(0, []byte("s"), deadline)); ok {
		t.Errorf("old TTL entry remains")
	}
}

// ---------------------------------------------------------------- reads

func TestRange(t *testing.T) {
	s, _ := open(t)
	addN(t, s, "s", 10)
	for _, tc := range []struct {
		start, end codec.ID
		count      int
		reverse    bool
		want       []codec.ID
	}{
		{codec.ID{}, codec.MaxID, 0, false, seqRange(1, 10)},
		{id(3, 0), id(6, 0), 0, false, seqRange(3, 6)},
		{id(3, 0), id(6, 0), -1, false, seqRange(3, 6)},
		{id(3, 0), id(6, 0), 2, false, msIDs(3, 4)},
		{id(3, 0), id(6, 0), 0, true, msIDs(6, 5, 4, 3)},
		{id(3, 0), id(6, 0), 2, true, msIDs(6, 5)},
		{id(3, 1), id(6, 0), 0, false, seqRange(4, 6)},
		{id(3, 0), id(5, math.MaxUint64), 0, false, seqRange(3, 5)},
		{id(4, 0), id(4, 0), 0, false, msIDs(4)},
		{id(6, 0), id(3, 0), 0, false, nil},
		{id(11, 0), codec.MaxID, 0, false, nil},
		{codec.ID{}, id(0, math.MaxUint64), 0, false, nil},
		{codec.ID{}, codec.MaxID, 100, true, []codec.ID{id(10, 0), id(9, 0), id(8, 0), id(7, 0), id(6, 0), id(5, 0), id(4, 0), id(3, 0), id(2, 0), id(1, 0)}},
	} {
		got := rangeIDs(t, s, "s", tc.start, tc.end, tc.count, tc.reverse)
		if !slices.Equal(got, tc.want) {
			t.Errorf("Range(%v, %v, %d, rev=%v) = %v, want %v", tc.start, tc.end, tc.count, tc.reverse, got, tc.want)
		}
	}
	es, err := streams.Range(s.View(), 0, []byte("missing"), codec.ID{}, codec.MaxID, 0, false)
	if es != nil || err != nil {
		t.Errorf("Range(missing) = %v, %v", es, err)
	}
	// The same name in another db is another key.
	es, err = streams.Range(s.View(), 1, []byte("s"), codec.ID{}, codec.MaxID, 0, false)
	if es != nil || err != nil {
		t.Errorf("Range(db 1) = %v, %v", es, err)
	}
	// Fields come back.
	es, _ = streams.Range(s.View(), 0, []byte("s"), id(7, 0), id(7, 0), 0, false)
	if len(es) != 1 || len(es[0].Fields) != 2 || string(es[0].Fields[0]) != "n" || string(es[0].Fields[1]) != "7" {
		t.Errorf("entry 7 = %v", es)
	}
	if n, err := streams.Len(s.View(), 0, []byte("s")); n != 10 || err != nil {
		t.Errorf("Len = %d, %v", n, err)
	}
	if n, err := streams.Len(s.View(), 0, []byte("missing")); n != 0 || err != nil {
		t.Errorf("Len(missing) = %d, %v", n, err)
	}
}

func TestAfterAndGet(t *testing.T) {
	s, _ := open(t)
	addN(t, s, "s", 10)
	v := s.View()
	for _, tc := range []struct {
		after codec.ID
		count int
		want  []codec.ID
	}{
		{codec.ID{}, 0, seqRange(1, 10)},
		{id(3, 0), 0, seqRange(4, 10)},
		{id(3, 0), 2, msIDs(4, 5)},
		{id(2, 5), 1, msIDs(3)},
		{id(10, 0), 0, nil},
		{codec.MaxID, 0, nil},
	} {
		es, err := streams.After(v, 0, []byte("s"), tc.after, tc.count)
		if err != nil || !slices.Equal(ids(es), tc.want) {
			t.Errorf("After(%v, %d) = %v, %v; want %v", tc.after, tc.count, ids(es), err, tc.want)
		}
	}
	e, ok, err := streams.Get(v, 0, []byte("s"), id(4, 0))
	if !ok || err != nil || e.ID != id(4, 0) || string(e.Fields[1]) != "4" {
		t.Errorf("Get(4-0) = %+v, %v, %v", e, ok, err)
	}
	if _, ok, err := streams.Get(v, 0, []byte("s"), id(4, 1)); ok || err != nil {
		t.Errorf("Get(4-1) = %v, %v", ok, err)
	}
}

func TestBinaryFields(t *testing.T) {
	s, _ := open(t)
	key := "bin\x00key\xff"
	fv := [][]byte{
		{0}, {},
		[]byte("\xff\xfe\x00\x1f"), bytes.Repeat([]byte{0, 0xff}, 5000),
		[]byte("f"), []byte("a\r\nb"),
		{}, {0, 0, 0},
	}
	got, ok, err := tryAdd(t, s, key, fv, streams.AddArgs{ID: explicit(1, 0)})
	if err != nil || !ok || got != id(1, 0) {
		t.Fatalf("Add = %v, %v, %v", got, ok, err)
	}
	add(t, s, "bin\x00key", explicit(1, 0)) // a prefix of the key: another stream
	es, err := streams.Range(s.View(), 0, []byte(key), codec.ID{}, codec.MaxID, 0, false)
	if err != nil || len(es) != 1 {
		t.Fatalf("Range = %v, %v", es, err)
	}
	if len(es[0].Fields) != len(fv) {
		t.Fatalf("%d fields, want %d", len(es[0].Fields), len(fv))
	}
	for i := range fv {
		if !bytes.Equal(es[0].Fields[i], fv[i]) {
			t.Errorf("field %d = %q, want %q", i, es[0].Fields[i], fv[i])
		}
	}
	e, ok, err := streams.Get(s.View(), 0, []byte(key), id(1, 0))
	if !ok || err != nil || len(e.Fields) != len(fv) || !bytes.Equal(e.Fields[3], fv[3]) {
		t.Errorf("Get = %v, %v", ok, err)
	}
	if m := meta(t, s, key); m.Length != 1 {
		t.Errorf("Length = %d", m.Length)
	}
}

// ---------------------------------------------------------------- XDEL

func TestDel(t *testing.T) {
	s, _ := open(t)
	addN(t, s, "s", 5)

	if n := del(t, s, "s", id(3, 0), id(3, 0), id(99, 0)); n != 1 {
		t.Fatalf("XDEL 3 3 99 = %d, want 1", n)
	}
	m := meta(t, s, "s")
	if m.Length != 4 || m.FirstID != id(1, 0) || m.MaxDeletedID != id(3, 0) || m.LastID != id(5, 0) || m.EntriesAdded != 5 {
		t.Errorf("after XDEL 3: %+v", m)
	}
	checkConsistent(t, s, "s")

	// Deleting the first entries moves FirstID past every deleted one;
	// MaxDeletedID only grows.
	if n := del(t, s, "s", id(2, 0), id(1, 0)); n != 2 {
		t.Fatalf("XDEL 2 1 = %d", n)
	}
	m = meta(t, s, "s")
	if m.Length != 2 || m.FirstID != id(4, 0) || m.MaxDeletedID != id(3, 0) {
		t.Errorf("after XDEL 2 1: %+v", m)
	}
	checkConsistent(t, s, "s")

	seq := s.LastSeq()
	if n := del(t, s, "s", id(1, 0), id(7, 0)); n != 0 || s.LastSeq() != seq {
		t.Errorf("XDEL of absent IDs = %d, committed %v", n, s.LastSeq() != seq)
	}

	if n := del(t, s, "s", id(5, 0)); n != 1 {
		t.Fatal(n)
	}
	if m = meta(t, s, "s"); m.MaxDeletedID != id(5, 0) || m.FirstID != id(4, 0) || m.Length != 1 {
		t.Errorf("after XDEL 5: %+v", m)
	}
	if n := del(t, s, "s", id(4, 0)); n != 1 {
		t.Fatal(n)
	}
	m = meta(t, s, "s")
	if m.Length != 0 || !m.FirstID.IsZero() || m.LastID != id(5, 0) || m.MaxDeletedID != id(5, 0) || m.EntriesAdded != 5 {
		t.Errorf("emptied stream: %+v", m)
	}
	checkConsistent(t, s, "s")
	// The key survives empty, and the top ID still applies.
	if _, _, err := tryAdd(t, s, "s", fv1, streams.AddArgs{ID: explicit(5, 0)}); !errors.Is(err, streams.ErrIDTooSmall) {
		t.Errorf("XADD 5-0 after emptying: %v", err)
	}
	if n := del(t, s, "missing", id(1, 0)); n != 0 {
		t.Errorf("XDEL on missing key = %d", n)
	}
}

func TestDelAllAtOnceAndMiddle(t *testing.T) {
	s, _ := open(t)
	addN(t, s, "s", 6)
	if n := del(t, s, "s", id(1, 0), id(2, 0), id(4, 0)); n != 3 {
		t.Fatal(n)
	}
	m := meta(t, s, "s")
	if m.FirstID != id(3, 0) || m.Length != 3 || m.MaxDeletedID != id(4, 0) {
		t.Errorf("meta = %+v", m)
	}
	if got := rangeIDs(t, s, "s", codec.ID{}, codec.MaxID, 0, false); !slices.Equal(got, msIDs(3, 5, 6)) {
		t.Errorf("entries = %v", got)
	}
	if n := del(t, s, "s", msIDs(6, 5, 3)...); n != 3 {
		t.Fatal(n)
	}
	m = meta(t, s, "s")
	if m.Length != 0 || !m.FirstID.IsZero() || m.MaxDeletedID != id(6, 0) {
		t.Errorf("meta = %+v", m)
	}
}

// ---------------------------------------------------------------- XTRIM

func TestTrimMaxLenExact(t *testing.T) {
	s, _ := open(t)
	addN(t, s, "s", 10)
	if n := trim(t, s, "s", streams.Trim{Strategy: streams.TrimMaxLen, MaxLen: 20}); n != 0 {
		t.Errorf("MAXLEN 20 removed %d", n)
	}
	if n := trim(t, s, "s", streams.Trim{Strategy: streams.TrimMaxLen, MaxLen: 10}); n != 0 {
		t.Errorf("MAXLEN 10 removed %d", n)
	}
	if n := trim(t, s, "s", streams.Trim{Strategy: streams.TrimMaxLen, MaxLen: 7}); n != 3 {
		t.Errorf("MAXLEN 7 removed %d", n)
	}
	m := meta(t, s, "s")
	if m.Length != 7 || m.FirstID != id(4, 0) || m.LastID != id(10, 0) || m.EntriesAdded != 10 {
		t.Errorf("after MAXLEN 7: %+v", m)
	}
	if got := rangeIDs(t, s, "s", codec.ID{}, codec.MaxID, 0, false); !slices.Equal(got, seqRange(4, 10)) {
		t.Errorf("entries = %v", got)
	}
	// Limit is ignored without '~'.
	if n := trim(t, s, "s", streams.Trim{Strategy: streams.TrimMaxLen, MaxLen: 5, Limit: 1}); n != 2 {
		t.Errorf("MAXLEN = 5 LIMIT 1 removed %d, want 2", n)
	}
	if n := trim(t, s, "s", streams.Trim{Strategy: streams.TrimMaxLen, MaxLen: 0}); n != 5 {
		t.Errorf("MAXLEN 0 removed %d", n)
	}
	m = meta(t, s, "s")
	if m.Length != 0 || !m.FirstID.IsZero() || m.LastID != id(10, 0) {
		t.Errorf("after MAXLEN 0: %+v", m)
	}
	checkConsistent(t, s, "s")
	if n := trim(t, s, "missing", streams.Trim{Strategy: streams.TrimMaxLen}); n != 0 {
		t.Errorf("trim of missing key removed %d", n)
	}
}

func TestTrimAfterDeletes(t *testing.T) {
	s, _ := open(t)
	addN(t, s, "s", 10)
	del(t, s, "s", msIDs(2, 3, 5)...)
	defer func() {
		// Trimming leaves MaxDeletedID alone (redis-server 7.0.15 agrees).
		if m := meta(t, s, "s"); m.MaxDeletedID != id(5, 0) {
			t.Errorf("MaxDeletedID = %v, want 5-0", m.MaxDeletedID)
		}
	}()
	// 7 remain: 1 4 6 7 8 9 10. MAXLEN 4 removes 1 4 6.
	if n := trim(t, s, "s", streams.Trim{Strategy: streams.TrimMaxLen, MaxLen: 4}); n != 3 {
		t.Errorf("removed %d, want 3", n)
	}
	if got := rangeIDs(t, s, "s", codec.ID{}, codec.MaxID, 0, false); !slices.Equal(got, seqRange(7, 10)) {
		t.Errorf("entries = %v", got)
	}
	checkConsistent(t, s, "s")
}

func TestTrimMinID(t *testing.T) {
	s, _ := open(t)
	addN(t, s, "s", 10)
	if n := trim(t, s, "s", streams.Trim{Strategy: streams.TrimMinID, MinID: codec.ID{}}); n != 0 {
		t.Errorf("MINID 0 removed %d", n)
	}
	if n := trim(t, s, "s", streams.Trim{Strategy: streams.TrimMinID, MinID: id(1, 0)}); n != 0 {
		t.Errorf("MINID 1-0 removed %d", n)
	}
	if n := trim(t, s, "s", streams.Trim{Strategy: streams.TrimMinID, MinID: id(5, 0)}); n != 4 {
		t.Errorf("MINID 5-0 removed %d", n)
	}
	if m := meta(t, s, "s"); m.FirstID != id(5, 0) || m.Length != 6 {
		t.Errorf("after MINID 5-0: %+v", m)
	}
	if n := trim(t, s, "s", streams.Trim{Strategy: streams.TrimMinID, MinID: id(6, 5)}); n != 2 {
		t.Errorf("MINID 6-5 removed %d", n)
	}
	if got := rangeIDs(t, s, "s", codec.ID{}, codec.MaxID, 0, false); !slices.Equal(got, seqRange(7, 10)) {
		t.Errorf("entries = %v", got)
	}
	if n := trim(t, s, "s", streams.Trim{Strategy: streams.TrimMinID, MinID: id(100, 0)}); n != 4 {
		t.Errorf("MINID 100 removed %d", n)
	}
	m := meta(t, s, "s")
	if m.Length != 0 || !m.FirstID.IsZero() || m.LastID != id(10, 0) {
		t.Errorf("after MINID past the end: %+v", m)
	}
	checkConsistent(t, s, "s")
}

type approxCase struct {
	name string
	n    int // stream length, entries 1-0 .. n-0
	tr   streams.Trim
	want uint64
}

func runApproxCases(t *testing.T, cases []approxCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := open(t)
			addN(t, s, "s", tc.n)
			got := trim(t, s, "s", tc.tr)
			if got != tc.want {
				t.Fatalf("removed %d, want %d", got, tc.want)
			}
			m := meta(t, s, "s")
			if m.Length != uint64(tc.n)-got {
				t.Errorf("Length = %d", m.Length)
			}
			if got > 0 && got < uint64(tc.n) && m.FirstID != id(got+1, 0) {
				t.Errorf("FirstID = %v, want %d-0", m.FirstID, got+1)
			}
			checkConsistent(t, s, "s")
		})
	}
}

func maxLenApprox(n uint64, limit int64) streams.Trim {
	return streams.Trim{Strategy: streams.TrimMaxLen, Approx: true, MaxLen: n, Limit: limit}
}

func minIDApprox(ms uint64, limit int64) streams.Trim {
	return streams.Trim{Strategy: streams.TrimMinID, Approx: true, MinID: id(ms, 0), Limit: limit}
}

// TestTrimApprox: every expectation was checked against redis-server 7.0.15
// (default stream-node-max-entries 100, entries added one by one, so every
// node but the last is full).
func TestTrimApprox(t *testing.T) {
	const dl = streams.DefaultApproxLimit
	runApproxCases(t, []approxCase{
		{"maxlen~120 of 250", 250, maxLenApprox(120, dl), 100},
		{"maxlen~100 of 250", 250, maxLenApprox(100, dl), 100},
		{"maxlen~50 of 250", 250, maxLenApprox(50, dl), 200},
		{"maxlen~200 of 250", 250, maxLenApprox(200, dl), 0},
		{"maxlen~0 limit 150", 350, maxLenApprox(0, 150), 100},
		{"maxlen~0 limit 200", 350, maxLenApprox(0, 200), 200},
		{"maxlen~0 limit 99", 350, maxLenApprox(0, 99), 0},
		{"minid~201 of 250", 250, minIDApprox(201, dl), 200},
		{"minid~150 of 250", 250, minIDApprox(150, dl), 100}, // whole nodes only
		{"minid~99 of 250", 250, minIDApprox(99, dl), 0},
		{"minid~150 of 250 limit 100", 250, minIDApprox(150, 100), 100},
		{"maxlen~0 of 300", 300, maxLenApprox(0, dl), 300},
		{"minid~ past end limit 100", 250, minIDApprox(1000, 100), 100},
	})
}

// Redis removes whole nodes under '~', and the last node of a stream built
// by XADD is partial (50 entries of 250). MAXLEN ~ 0 or MINID ~ past the
// last entry removes every node, the partial one included, emptying the
// stream (within LIMIT). Values from redis-server 7.0.15.
func TestTrimApproxRemovesPartialTailNode(t *testing.T) {
	const dl = streams.DefaultApproxLimit
	runApproxCases(t, []approxCase{
		{"maxlen~0 of 250", 250, maxLenApprox(0, dl), 250},
		{"maxlen~0 of 99", 99, maxLenApprox(0, dl), 99},
		{"minid~ past end of 250", 250, minIDApprox(1000, dl), 250},
	})
	t.Run("xadd maxlen~0", func(t *testing.T) {
		s, _ := open(t)
		addN(t, s, "s", 150)
		if _, _, err := tryAdd(t, s, "s", fv1, streams.AddArgs{ID: explicit(151, 0), Trim: &streams.Trim{Strategy: streams.TrimMaxLen, Approx: true, Limit: dl}}); err != nil {
			t.Fatal(err)
		}
		if m := meta(t, s, "s"); m.Length != 0 {
			t.Errorf("XLEN = %d, want 0", m.Length)
		}
	})
}

// ---------------------------------------------------------------- XADD with trimming

func TestAddWithTrim(t *testing.T) {
	t.Run("maxlen 0 removes the new entry", func(t *testing.T) {
		s, _ := open(t)
		addN(t, s, "s", 3)
		got, ok, err := tryAdd(t, s, "s", fv1, streams.AddArgs{ID: explicit(4, 0), Trim: &streams.Trim{Strategy: streams.TrimMaxLen, MaxLen: 0}})
		if err != nil || !ok || got != id(4, 0) {
			t.Fatalf("Add = %v, %v, %v", got, ok, err)
		}
		// Trimming does not count as deletion: redis-server 7.0.15 reports
		// max-deleted-entry-id 0-0 here.
		m := meta(t, s, "s")
		if m.Length != 0 || !m.FirstID.IsZero() || m.LastID != id(4, 0) || m.EntriesAdded != 4 || !m.MaxDeletedID.IsZero() {
			t.Errorf("meta = %+v", m)
		}
		if es := rangeIDs(t, s, "s", codec.ID{}, codec.MaxID, 0, false); len(es) != 0 {
			t.Errorf("entries remain: %v", es)
		}
	})
	t.Run("maxlen 0 on a new stream", func(t *testing.T) {
		s, _ := open(t)
		got, ok, err := tryAdd(t, s, "s", fv1, streams.AddArgs{ID: explicit(1, 0), Trim: &streams.Trim{Strategy: streams.TrimMaxLen}})
		if err != nil || !ok || got != id(1, 0) {
			t.Fatalf("Add = %v, %v, %v", got, ok, err)
		}
		m := meta(t, s, "s")
		if m.Length != 0 || !m.FirstID.IsZero() || m.LastID != id(1, 0) || m.EntriesAdded != 1 {
			t.Errorf("meta = %+v", m)
		}
		checkConsistent(t, s, "s")
	})
	t.Run("maxlen 3", func(t *testing.T) {
		s, _ := open(t)
		addN(t, s, "s", 5)
		add3 := streams.AddArgs{ID: explicit(6, 0), Trim: &streams.Trim{Strategy: streams.TrimMaxLen, MaxLen: 3}}
		if _, _, err := tryAdd(t, s, "s", fv1, add3); err != nil {
			t.Fatal(err)
		}
		if got := rangeIDs(t, s, "s", codec.ID{}, codec.MaxID, 0, false); !slices.Equal(got, seqRange(4, 6)) {
			t.Errorf("entries = %v", got)
		}
		if m := meta(t, s, "s"); m.Length != 3 || m.FirstID != id(4, 0) || m.LastID != id(6, 0) || m.EntriesAdded != 6 {
			t.Errorf("meta = %+v", m)
		}
	})
	t.Run("maxlen not reached", func(t *testing.T) {
		s, _ := open(t)
		addN(t, s, "s", 2)
		if _, _, err := tryAdd(t, s, "s", fv1, streams.AddArgs{ID: explicit(3, 0), Trim: &streams.Trim{Strategy: streams.TrimMaxLen, MaxLen: 3}}); err != nil {
			t.Fatal(err)
		}
		if m := meta(t, s, "s"); m.Length != 3 || m.FirstID != id(1, 0) {
			t.Errorf("meta = %+v", m)
		}
	})
	t.Run("minid above the new entry", func(t *testing.T) {
		s, _ := open(t)
		addN(t, s, "s", 3)
		if _, _, err := tryAdd(t, s, "s", fv1, streams.AddArgs{ID: explicit(4, 0), Trim: &streams.Trim{Strategy: streams.TrimMinID, MinID: id(10, 0)}}); err != nil {
			t.Fatal(err)
		}
		if m := meta(t, s, "s"); m.Length != 0 || !m.FirstID.IsZero() || m.LastID != id(4, 0) {
			t.Errorf("meta = %+v", m)
		}
		checkConsistent(t, s, "s")
	})
	t.Run("minid equal to the new entry", func(t *testing.T) {
		s, _ := open(t)
		addN(t, s, "s", 3)
		if _, _, err := tryAdd(t, s, "s", fv1, streams.AddArgs{ID: explicit(4, 0), Trim: &streams.Trim{Strategy: streams.TrimMinID, MinID: id(4, 0)}}); err != nil {
			t.Fatal(err)
		}
		if got := rangeIDs(t, s, "s", codec.ID{}, codec.MaxID, 0, false); !slices.Equal(got, msIDs(4)) {
			t.Errorf("entries = %v", got)
		}
		if m := meta(t, s, "s"); m.Length != 1 || m.FirstID != id(4, 0) {
			t.Errorf("meta = %+v", m)
		}
	})
	t.Run("approx", func(t *testing.T) {
		s, _ := open(t)
		addN(t, s, "s", 150)
		// 151 entries, MAXLEN ~ 10: one node of 100 goes (redis-server 7.0.15: XLEN 51).
		if _, _, err := tryAdd(t, s, "s", fv1, streams.AddArgs{ID: explicit(151, 0), Trim: &streams.Trim{Strategy: streams.TrimMaxLen, Approx: true, MaxLen: 10, Limit: streams.DefaultApproxLimit}}); err != nil {
			t.Fatal(err)
		}
		if m := meta(t, s, "s"); m.Length != 51 || m.FirstID != id(101, 0) {
			t.Errorf("meta = %+v", m)
		}
		checkConsistent(t, s, "s")
	})
	t.Run("error does not trim", func(t *testing.T) {
		s, _ := open(t)
		addN(t, s, "s", 5)
		if _, _, err := tryAdd(t, s, "s", fv1, streams.AddArgs{ID: explicit(1, 0), Trim: &streams.Trim{Strategy: streams.TrimMaxLen}}); !errors.Is(err, streams.ErrIDTooSmall) {
			t.Fatal(err)
		}
		if m := meta(t, s, "s"); m.Length != 5 {
			t.Errorf("Length = %d", m.Length)
		}
	})
}

// TestRadixTreeKeys: XINFO STREAM's radix-tree-keys, the node count of
// the metadata; for a stream written before node state was kept, the
// entry-count model's figure, as redis-server 7.0 reported it for the
// same appends and trims; and the estimate of radix-tree-nodes (Redis:
// 1, 2, 8, 6, 24, and 6 for these).
func TestRadixTreeKeys(t *testing.T) {
	for _, c := range []struct {
		name               string
		s                  codec.StreamMeta
		wantKeys, wantNode uint64
	}{
		{"empty", codec.StreamMeta{}, 0, 1},
		{"seven nodes", codec.StreamMeta{Length: 500, EntriesAdded: 500, Nodes: 7}, 7, 16},
		{"legacy, empty", codec.StreamMeta{Legacy: true}, 0, 1},
		{"legacy, one entry", codec.StreamMeta{Legacy: true, Length: 1, EntriesAdded: 1}, 1, 2},
		{"legacy, 250 appended", codec.StreamMeta{Legacy: true, Length: 250, EntriesAdded: 250}, 3, 8},
		{"legacy, 250 trimmed to 100 exactly", codec.StreamMeta{Legacy: true, Length: 100, EntriesAdded: 250}, 2, 6},
		{"legacy, 1000 appended", codec.StreamMeta{Legacy: true, Length: 1000, EntriesAdded: 1000}, 10, 22},
		{"legacy, emptied, then 150 more", codec.StreamMeta{Legacy: true, Length: 150, EntriesAdded: 1150, NodeOrigin: 1000}, 2, 6},
	} {
		if k, n := streams.RadixTreeKeys(c.s, 0), streams.RadixTreeNodes(c.s, 0); k != c.wantKeys || n != c.wantNode {
			t.Errorf("%s: keys, nodes = %d, %d; want %d, %d", c.name, k, n, c.wantKeys, c.wantNode)
		}
	}
}
