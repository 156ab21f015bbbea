package materialize_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/internal/testclock"
	"github.com/sediment-dev/sediment/materialize"
)

// ---------------------------------------------------------------- helpers

type testClock = testclock.Clock

func newClock(ms int64) *testClock { return testclock.New(ms) }

const t0 = int64(1700000000000)

func openMem(tb testing.TB, c *testClock) *materialize.Store {
	tb.Helper()
	s, err := materialize.Open(materialize.Options{InMemory: true, Now: c.Now})
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// write commits events and fails the test on error.
func write(tb testing.TB, s *materialize.Store, events ...codec.Event) uint64 {
	tb.Helper()
	seq, err := s.Write(func(*materialize.View) ([]codec.Event, error) { return events, nil })
	if err != nil {
		tb.Fatalf("Write: %v", err)
	}
	return seq
}

func strMeta(v string, expireAt int64) codec.Meta {
	return codec.Meta{Type: codec.TypeString, Value: []byte(v), ExpireAtMs: expireAt}
}

func setString(tb testing.TB, s *materialize.Store, db uint8, key string, v string, expireAt, prevExpire int64) uint64 {
	tb.Helper()
	return write(tb, s, codec.SetMetaEvent(db, []byte(key), strMeta(v, expireAt), prevExpire))
}

// countRange counts keys in [lower, upper).
func countRange(tb testing.TB, v *materialize.View, lower, upper []byte) int {
	tb.Helper()
	n := 0
	if err := v.Iterate(lower, upper, false, func(k, _ []byte) (bool, error) {
		n++
		return true, nil
	}); err != nil {
		tb.Fatalf("Iterate: %v", err)
	}
	return n
}

func countPrefix(tb testing.TB, v *materialize.View, p []byte) int {
	tb.Helper()
	return countRange(tb, v, p, codec.PrefixEnd(p))
}

// allKeys returns every key in the store, copied.
func allKeys(tb testing.TB, v *materialize.View) [][]byte {
	tb.Helper()
	var out [][]byte
	if err := v.Iterate(nil, nil, false, func(k, _ []byte) (bool, error) {
		out = append(out, bytes.Clone(k))
		return true, nil
	}); err != nil {
		tb.Fatalf("Iterate: %v", err)
	}
	return out
}

func ttlEntries(tb testing.TB, v *materialize.View) int {
	tb.Helper()
	return countRange(tb, v, []byte{byte(codec.TagTTL)}, []byte{byte(codec.TagTTL) + 1})
}

// has reports whether k exists, and checks that HasKey agrees with Has.
func has(tb testing.TB, v *materialize.View, k []byte) bool {
	tb.Helper()
	ok, err := v.Has(k)
	if err != nil {
		tb.Fatalf("Has: %v", err)
	}
	if ok2, err := v.HasKey(k); err != nil || ok2 != ok {
		tb.Fatalf("HasKey(%q) = %v, %v; Has = %v", k, ok2, err, ok)
	}
	return ok
}

// TestHasKey: HasKey finds exactly k (not a key k prefixes, nor k with a
// byte more), sees a write group's own sets and deletions, and finds a key
// whose value lives in a blob file, as Has does.
func TestHasKey(t *testing.T) {
	dir := t.TempDir()
	c := newClock(t0)
	s, err := materialize.Open(materialize.Options{Dir: dir, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("v"), 64<<10)
	field := func(f string) []byte { return codec.ElementKey(codec.TagHash, 0, []byte("h"), []byte(f)) }
	hset := func(fv ...[]byte) codec.Event { return codec.ElementsEvent(codec.OpHSet, 0, []byte("h"), fv) }
	if _, err := s.Write(func(v *materialize.View) ([]codec.Event, error) {
		return []codec.Event{hset([]byte("ab"), big, []byte("abc"), []byte("x"), []byte("b\x00"), []byte("y"))}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil { // flushes: the 64 KiB value goes to a blob file
		t.Fatal(err)
	}
	if s, err = materialize.Open(materialize.Options{Dir: dir, Now: c.Now}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if blobs, _ := filepath.Glob(filepath.Join(dir, "*.blob")); len(blobs) == 0 {
		t.Fatal("no blob file: the large value is not where the test means it to be")
	}
	v := s.View()
	for k, want := range map[string]bool{"ab": true, "abc": true, "a": false, "abcd": false, "b": false, "b\x00": true, "c": false} {
		if got := has(t, v, field(k)); got != want {
			t.Errorf("field %q exists: %v, want %v", k, got, want)
		}
	}
	if _, err := s.Write(func(v *materialize.View) ([]codec.Event, error) {
		return []codec.Event{hset([]byte("new"), []byte("1")), codec.ElementsEvent(codec.OpHDel, 0, []byte("h"), [][]byte{[]byte("ab")})}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(func(v *materialize.View) ([]codec.Event, error) {
		if !has(t, v, field("new")) || has(t, v, field("ab")) {
			t.Error("a write does not see the earlier write's field set and field deleted")
		}
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestIterateNoValues: IterateNoValues visits the keys Iterate visits, in
// both directions, with bounds, stopping when told, over values in
// sstables, in blob files and in the memtable, and in the writer's view
// after a later write set and deleted fields.
func TestIterateNoValues(t *testing.T) {
	dir := t.TempDir()
	c := newClock(t0)
	opts := materialize.Options{Dir: dir, Now: c.Now}
	s := openStore(t, opts)
	big := bytes.Repeat([]byte("v"), 64<<10) // a blob file once flushed
	field := func(f string) []byte { return codec.ElementKey(codec.TagHash, 0, []byte("h"), []byte(f)) }
	hset := func(fv ...[]byte) codec.Event { return codec.ElementsEvent(codec.OpHSet, 0, []byte("h"), fv) }
	write(t, s, hset([]byte("a"), big, []byte("b"), []byte("x"), []byte("c"), big, []byte("d"), []byte("y")))
	if err := s.Close(); err != nil { // flushes: the large values go to blob files
		t.Fatal(err)
	}
	s = openStore(t, opts)
	write(t, s, hset([]byte("e"), []byte("z"))) // in the memtable
	p := codec.KeyPrefix(codec.TagHash, 0, []byte("h"))
	walk := func(v *materialize.View, lower, upper []byte, reverse bool, stopAt int, values bool) []string {
		t.Helper()
		var got []string
		visit := func(k []byte) (bool, error) {
			got = append(got, string(k[len(p):]))
			return len(got) != stopAt, nil
		}
		var err error
		if values {
			err = v.Iterate(lower, upper, reverse, func(k, _ []byte) (bool, error) { return visit(k) })
		} else {
			err = v.IterateNoValues(lower, upper, reverse, visit)
		}
		if err != nil {
			t.Fatalf("walk: %v", err)
		}
		return got
	}
	check := func(v *materialize.View, when string, want string) {
		t.Helper()
		for _, c := range []struct {
			lower, upper []byte
			reverse      bool
			stopAt       int
		}{
			{p, codec.PrefixEnd(p), false, 0},
			{p, codec.PrefixEnd(p), true, 0},
			{field("b"), field("e"), false, 0},
			{field("b"), field("e"), true, 0},
			{p, codec.PrefixEnd(p), false, 2},
			{p, codec.PrefixEnd(p), true, 2},
		} {
			keys := walk(v, c.lower, c.upper, c.reverse, c.stopAt, false)
			if same := walk(v, c.lower, c.upper, c.reverse, c.stopAt, true); fmt.Sprint(keys) != fmt.Sprint(same) {
				t.Errorf("%s: IterateNoValues %q, Iterate %q", when, keys, same)
			}
		}
		if got := fmt.Sprint(walk(v, p, codec.PrefixEnd(p), false, 0, false)); got != want {
			t.Errorf("%s: keys %s, want %s", when, got, want)
		}
	}
	check(s.View(), "committed", "[a b c d e]")
	if _, err := s.Write(func(v *materialize.View) ([]codec.Event, error) {
		return []codec.Event{hset([]byte("f"), big), codec.ElementsEvent(codec.OpHDel, 0, []byte("h"), [][]byte{[]byte("a")})}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(func(v *materialize.View) ([]codec.Event, error) {
		check(v, "the writer's view after a later write", "[b c d e f]")
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
}

// records returns every retained change-log record from seq from, deep-copied.
func records(tb testing.TB, s *materialize.Store, from uint64) []codec.Record {
	tb.Helper()
	var out []codec.Record
	err := s.ChangeLog(from, func(r codec.Record) bool {
		c := codec.Record{Seq: r.Seq, ULID: r.ULID, TimeMs: r.TimeMs}
		for _, e := range r.Events {
			c.Events = append(c.Events, cloneEvent(e))
		}
		out = append(out, c)
		return true
	})
	if err != nil {
		tb.Fatalf("ChangeLog: %v", err)
	}
	return out
}

func cloneEvent(e codec.Event) codec.Event {
	c := codec.Event{Op: e.Op, DB: e.DB, Key: bytes.Clone(e.Key)}
	for _, a := range e.Args {
		c.Args = append(c.Args, bytes.Clone(a))
	}
	return c
}

func eventsEqual(a, b codec.Event) bool {
	if a.Op != b.Op || a.DB != b.DB || !bytes.Equal(a.Key, b.Key) || len(a.Args) != len(b.Args) {
		return false
	}
	for i := range a.Args {
		if !bytes.Equal(a.Args[i], b.Args[i]) {
			return false
		}
	}
	return true
}

// streamEvents builds a stream key with entries, a group, a consumer and a
// pending entry in both PEL indexes.
func streamEvents(db uint8, key string, expireAt int64) []codec.Event {
	k := []byte(key)
	g, c := []byte("g"), []byte("c")
	// Two nodes (stream-node-max-entries 1): 1-0 a node key, 2-0 the tail.
	node := codec.StreamNode{First: codec.ID{Ms: 1}, Last: codec.ID{Ms: 1}, Count: 1, Live: 1, Body: 18}
	m := codec.Meta{Type: codec.TypeStream, ExpireAtMs: expireAt, Stream: codec.StreamMeta{
		Length: 2, LastID: codec.ID{Ms: 2}, FirstID: codec.ID{Ms: 1}, EntriesAdded: 2,
		Nodes: 2, HeadLast: codec.ID{Ms: 1}, HeadLive: 1,
		Tail: codec.StreamNode{First: codec.ID{Ms: 2}, Last: codec.ID{Ms: 2}, Count: 1, Live: 1, Body: 18},
	}}
	return []codec.Event{
		codec.XAddEvent(db, k, codec.ID{Ms: 1}, [][]byte{[]byte("f"), []byte("v1")}),
		codec.XAddEvent(db, k, codec.ID{Ms: 2}, [][]byte{[]byte("f"), []byte("v2")}),
		codec.XNodeSetEvent(db, k, node),
		codec.SetMetaEvent(db, k, m, 0),
		codec.GroupSetEvent(db, k, g, codec.Group{LastDeliveredID: codec.ID{Ms: 1}, EntriesRead: 1}),
		codec.ConsumerSetEvent(db, k, g, c, codec.Consumer{SeenTimeMs: 1, ActiveTimeMs: 1}),
		codec.PELSetEvent(db, k, g, codec.ID{Ms: 1}, codec.PELEntry{DeliveryTimeMs: 1, DeliveryCount: 1, Consumer: c}, nil),
		codec.IDMPSetEvent(db, k, []byte("p"), []byte("i"), codec.ID{Ms: 2}, 10, 1, codec.ID{Ms: 2}),
		codec.IDMPStateEvent(db, k, codec.IDMPState{DurationS: 1, MaxSize: 1, Pids: 1, IIDs: 1, Added: 1}),
	}
}

var allKeyTags = append([]codec.Tag{codec.TagMeta}, codec.StreamTags...)

// keyFootprint counts key's keys under T X G C P Q.
func keyFootprint(tb testing.TB, v *materialize.View, db uint8, key string) map[codec.Tag]int {
	tb.Helper()
	out := map[codec.Tag]int{}
	for _, tag := range allKeyTags {
		out[tag] = countPrefix(tb, v, codec.KeyPrefix(tag, db, []byte(key)))
	}
	return out
}

// keysBySlot returns, for each slot, a key that hashes to it (prefix + number).
func keysBySlot(prefix string) map[uint16]string {
	out := make(map[uint16]string, codec.NumSlots)
	for i := 0; len(out) < codec.NumSlots && i < 2_000_000; i++ {
		k := fmt.Sprintf("%s%d", prefix, i)
		s := codec.Slot([]byte(k))
		if _, ok := out[s]; !ok {
			out[s] = k
		}
	}
	return out
}

// ---------------------------------------------------------------- Write and change log

func TestWriteCommitsEventsAndRecord(t *testing.T) {
	c := newClock(t0)
	s := openMem(t, c)
	if got := s.LastSeq(); got != 0 {
		t.Fatalf("LastSeq of new store = %d", got)
	}

	var want [][]codec.Event
	var times []int64
	for i := range 5 {
		c.Set(t0 + int64(i)*7)
		evs := []codec.Event{
			codec.SetMetaEvent(uint8(i%2), []byte(fmt.Sprintf("k%d", i)), strMeta(fmt.Sprintf("v%d", i), 0), 0),
			codec.XAddEvent(0, []byte("s\x00"), codec.ID{Ms: uint64(i + 1)}, [][]byte{{0}, {0xff, 0}}),
		}
		seq := write(t, s, evs...)
		if seq != uint64(i+1) {
			t.Fatalf("write %d: seq = %d, want %d", i, seq, i+1)
		}
		if got := s.LastSeq(); got != seq {
			t.Fatalf("LastSeq = %d, want %d", got, seq)
		}
		want = append(want, evs)
		times = append(times, t0+int64(i)*7)
	}

	// The events' effects are visible.
	v := s.View()
	for i := range 5 {
		m, ok, err := v.Meta(uint8(i%2), []byte(fmt.Sprintf("k%d", i)))
		if err != nil || !ok || string(m.Value) != fmt.Sprintf("v%d", i) {
			t.Errorf("Meta(k%d) = %+v, %v, %v", i, m, ok, err)
		}
	}
	if n := countPrefix(t, v, codec.KeyPrefix(codec.TagStreamEntry, 0, []byte("s\x00"))); n != 5 {
		t.Errorf("stream entries = %d, want 5", n)
	}

	recs := records(t, s, 0)
	if len(recs) != 5 {
		t.Fatalf("ChangeLog returned %d records, want 5", len(recs))
	}
	for i, r := range recs {
		if r.Seq != uint64(i+1) {
			t.Errorf("record %d: Seq = %d", i, r.Seq)
		}
		if r.TimeMs != times[i] {
			t.Errorf("record %d: TimeMs = %d, want %d", i, r.TimeMs, times[i])
		}
		if got := int64(ulid.ULID(r.ULID).Time()); got != times[i] {
			t.Errorf("record %d: ULID time = %d, want %d", i, got, times[i])
		}
		if len(r.Events) != len(want[i]) {
			t.Fatalf("record %d: %d events, want %d", i, len(r.Events), len(want[i]))
		}
		for j := range r.Events {
			if !eventsEqual(r.Events[j], want[i][j]) {
				t.Errorf("record %d event %d = %+v, want %+v", i, j, r.Events[j], want[i][j])
			}
		}
		if i > 0 && bytes.Compare(recs[i-1].ULID[:], r.ULID[:]) >= 0 {
			t.Errorf("ULID %d not greater than ULID %d", i, i-1)
		}
	}

	// from skips earlier records; fn returning false stops.
	if got := records(t, s, 4); len(got) != 2 || got[0].Seq != 4 || got[1].Seq != 5 {
		t.Errorf("ChangeLog(4) seqs = %v", seqsOf(got))
	}
	if got := records(t, s, 6); len(got) != 0 {
		t.Errorf("ChangeLog(6) = %v, want none", seqsOf(got))
	}
	calls := 0
	if err := s.ChangeLog(1, func(codec.Record) bool { calls++; return false }); err != nil || calls != 1 {
		t.Errorf("ChangeLog stop: calls = %d, err = %v", calls, err)
	}
}

func seqsOf(rs []codec.Record) []uint64 {
	var out []uint64
	for _, r := range rs {
		out = append(out, r.Seq)
	}
	return out
}

func TestULIDsIncreaseAtFixedClock(t *testing.T) {
	c := newClock(t0)
	s := openMem(t, c)
	for range 50 {
		setString(t, s, 0, "k", "v", 0, 0)
	}
	recs := records(t, s, 0)
	for i := 1; i < len(recs); i++ {
		if bytes.Compare(recs[i-1].ULID[:], recs[i].ULID[:]) >= 0 {
			t.Fatalf("ULID %d (%x) not greater than ULID %d (%x)", i, recs[i].ULID, i-1, recs[i-1].ULID)
		}
		if recs[i].TimeMs != t0 {
			t.Fatalf("TimeMs = %d", recs[i].TimeMs)
		}
	}
}

func TestULIDsIncreaseWhenClockStepsBack(t *testing.T) {
	c := newClock(t0 + 1000)
	s := openMem(t, c)
	setString(t, s, 0, "k", "v", 0, 0)
	c.Set(t0)
	setString(t, s, 0, "k", "v", 0, 0)
	recs := records(t, s, 0)
	if bytes.Compare(recs[0].ULID[:], recs[1].ULID[:]) >= 0 {
		t.Fatalf("ULID of seq 2 (%x) not greater than seq 1 (%x)", recs[1].ULID, recs[0].ULID)
	}
}

// TestULIDsIncreaseAcrossReopen: after a restart whose clock reads earlier
// than the last record's (or the same millisecond), new records still take
// greater ULIDs.
func TestULIDsIncreaseAcrossReopen(t *testing.T) {
	dir := t.TempDir()
	c := newClock(t0 + 5000)
	for round, at := range []int64{t0 + 5000, t0, t0} {
		c.Set(at)
		s, err := materialize.Open(materialize.Options{Dir: dir, Now: c.Now})
		if err != nil {
			t.Fatal(err)
		}
		setString(t, s, 0, "k", "v", 0, 0)
		setString(t, s, 0, "k", "v", 0, 0)
		recs := records(t, s, 0)
		for i := 1; i < len(recs); i++ {
			if bytes.Compare(recs[i-1].ULID[:], recs[i].ULID[:]) >= 0 {
				t.Fatalf("round %d: ULID of seq %d (%x) not greater than seq %d's (%x)", round, recs[i].Seq, recs[i].ULID, recs[i-1].Seq, recs[i-1].ULID)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestWriteNothing(t *testing.T) {
	c := newClock(t0)
	s := openMem(t, c)
	setString(t, s, 0, "base", "v", 0, 0)

	errBoom := errors.New("boom")
	calls := 0
	seq, err := s.Write(func(v *materialize.View) ([]codec.Event, error) {
		calls++
		// Events returned together with an error are not written.
		return []codec.Event{codec.SetMetaEvent(0, []byte("x"), strMeta("v", 0), 0)}, errBoom
	})
	if err != errBoom || seq != 0 || calls != 1 {
		t.Fatalf("decide error: seq %d, err %v, calls %d", seq, err, calls)
	}
	for _, evs := range [][]codec.Event{nil, {}} {
		seq, err := s.Write(func(*materialize.View) ([]codec.Event, error) { return evs, nil })
		if err != nil || seq != 0 {
			t.Fatalf("no events: seq %d, err %v", seq, err)
		}
	}
	if got := s.LastSeq(); got != 1 {
		t.Fatalf("LastSeq = %d, want 1", got)
	}
	if _, ok, _ := s.View().Meta(0, []byte("x")); ok {
		t.Errorf("key written despite decide error")
	}
	if recs := records(t, s, 0); len(recs) != 1 {
		t.Errorf("change log has %d records, want 1", len(recs))
	}
	if got := write(t, s, codec.SetMetaEvent(0, []byte("y"), strMeta("v", 0), 0)); got != 2 {
		t.Errorf("next seq = %d, want 2", got)
	}
}

func TestWriteIsAtomicOnBadEvent(t *testing.T) {
	c := newClock(t0)
	s := openMem(t, c)
	setString(t, s, 0, "base", "v", 0, 0)
	bad := []codec.Event{
		codec.SetMetaEvent(0, []byte("x"), strMeta("v", 0), 0),
		{Op: 'z', DB: 0, Key: []byte("x")},
	}
	seq, err := s.Write(func(*materialize.View) ([]codec.Event, error) { return bad, nil })
	if !errors.Is(err, codec.ErrCorrupt) || seq != 0 {
		t.Fatalf("bad event: seq %d, err %v; want ErrCorrupt", seq, err)
	}
	short := []codec.Event{{Op: codec.OpSetMeta, Key: []byte("x"), Args: [][]byte{{1}}}}
	if _, err := s.Write(func(*materialize.View) ([]codec.Event, error) { return short, nil }); !errors.Is(err, codec.ErrCorrupt) {
		t.Fatalf("short event: err %v, want ErrCorrupt", err)
	}
	if _, ok, _ := s.View().Meta(0, []byte("x")); ok {
		t.Errorf("first event of a failed batch was applied")
	}
	if got := s.LastSeq(); got != 1 {
		t.Errorf("LastSeq = %d, want 1", got)
	}
	if got := write(t, s, codec.SetMetaEvent(0, []byte("y"), strMeta("v", 0), 0)); got != 2 {
		t.Errorf("seq after failed write = %d, want 2 (no gap)", got)
	}
	if recs := records(t, s, 0); !slices.Equal(seqsOf(recs), []uint64{1, 2}) {
		t.Errorf("change log seqs = %v", seqsOf(recs))
	}
}

func TestDecideSeesEarlierWritesAndClock(t *testing.T) {
	c := newClock(t0)
	s := openMem(t, c)
	setString(t, s, 3, "k", "one", 0, 0)
	c.Advance(42)
	_, err := s.Write(func(v *materialize.View) ([]codec.Event, error) {
		if v.NowMs() != t0+42 {
			t.Errorf("NowMs = %d, want %d", v.NowMs(), t0+42)
		}
		m, ok, err := v.Meta(3, []byte("k"))
		if err != nil || !ok || string(m.Value) != "one" {
			t.Errorf("decide Meta = %+v, %v, %v", m, ok, err)
		}
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.View().NowMs(); got != t0+42 {
		t.Errorf("View().NowMs = %d", got)
	}
	if got := s.Now().UnixMilli(); got != t0+42 {
		t.Errorf("Now = %d", got)
	}
}

func TestViewGetHasIterate(t *testing.T) {
	c := newClock(t0)
	s := openMem(t, c)
	k := []byte("s")
	var evs []codec.Event
	for i := 1; i <= 5; i++ {
		evs = append(evs, codec.XAddEvent(0, k, codec.ID{Ms: uint64(i)}, [][]byte{[]byte("f"), {byte(i)}}))
	}
	write(t, s, evs...)
	v := s.View()
	val, ok, err := v.Get(codec.StreamEntryKey(0, k, codec.ID{Ms: 3}))
	if err != nil || !ok {
		t.Fatalf("Get = %v, %v", ok, err)
	}
	fv, err := codec.DecodeFields(val)
	if err != nil || len(fv) != 2 || fv[1][0] != 3 {
		t.Errorf("fields = %q, %v", fv, err)
	}
	if _, ok, err := v.Get(codec.StreamEntryKey(0, k, codec.ID{Ms: 9})); ok || err != nil {
		t.Errorf("Get(missing) = %v, %v", ok, err)
	}
	if !has(t, v, codec.StreamEntryKey(0, k, codec.ID{Ms: 1})) || has(t, v, codec.StreamEntryKey(0, k, codec.ID{Ms: 6})) {
		t.Errorf("Has wrong")
	}
	p := codec.KeyPrefix(codec.TagStreamEntry, 0, k)
	collect := func(reverse bool, limit int) []uint64 {
		var out []uint64
		err := v.Iterate(p, codec.PrefixEnd(p), reverse, func(k, _ []byte) (bool, error) {
			id, _ := codec.DecodeID(k[len(p):])
			out = append(out, id.Ms)
			return len(out) < limit, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got := collect(false, 100); !slices.Equal(got, []uint64{1, 2, 3, 4, 5}) {
		t.Errorf("forward = %v", got)
	}
	if got := collect(true, 100); !slices.Equal(got, []uint64{5, 4, 3, 2, 1}) {
		t.Errorf("reverse = %v", got)
	}
	if got := collect(true, 2); !slices.Equal(got, []uint64{5, 4}) {
		t.Errorf("reverse limit = %v", got)
	}
	errStop := errors.New("stop")
	if err := v.Iterate(p, nil, false, func(_, _ []byte) (bool, error) { return true, errStop }); err != errStop {
		t.Errorf("Iterate error = %v, want errStop", err)
	}
}

// TestConcurrentWritesSerialize: concurrent read-modify-write decisions must
// each see every earlier write (no lost update), and sequence order must be
// decision order.
func TestConcurrentWritesSerialize(t *testing.T) {
	c := newClock(t0)
	s := openMem(t, c)
	const n = 200
	ctr := []byte("ctr")
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Write(func(v *materialize.View) ([]codec.Event, error) {
				m, ok, err := v.Meta(0, ctr)
				if err != nil {
					return nil, err
				}
				cur := 0
				if ok {
					fmt.Sscan(string(m.Value), &cur)
				}
				return []codec.Event{codec.SetMetaEvent(0, ctr, strMeta(fmt.Sprint(cur+1), 0), 0)}, nil
			})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("Write: %v", err)
		}
	}
	m, ok, err := s.View().Meta(0, ctr)
	if !ok || err != nil || string(m.Value) != fmt.Sprint(n) {
		t.Fatalf("counter = %q, %v, %v; want %d (lost update)", m.Value, ok, err, n)
	}
	if s.LastSeq() != n {
		t.Errorf("LastSeq = %d, want %d", s.LastSeq(), n)
	}
	for _, r := range records(t, s, 0) {
		got, err := codec.DecodeMeta(r.Events[0].Args[0])
		if err != nil || string(got.Value) != fmt.Sprint(r.Seq) {
			t.Fatalf("record %d wrote %q: sequence order is not decision order", r.Seq, got.Value)
		}
	}
}

// TestConcurrentWritesIndependentOutcomes: a decide error or an empty
// decision affects only its own Write.
func TestConcurrentWritesIndependentOutcomes(t *testing.T) {
	c := newClock(t0)
	s := openMem(t, c)
	const n = 150
	type result struct {
		i   int
		seq uint64
		err error
	}
	results := make(chan result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seq, err := s.Write(func(v *materialize.View) ([]codec.Event, error) {
				switch i % 3 {
				case 0:
					return []codec.Event{codec.SetMetaEvent(0, []byte(fmt.Sprintf("k%d", i)), strMeta("v", 0), 0)}, nil
				case 1:
					return []codec.Event{codec.SetMetaEvent(0, []byte(fmt.Sprintf("k%d", i)), strMeta("v", 0), 0)}, fmt.Errorf("decide %d", i)
				}
				return nil, nil
			})
			results <- result{i, seq, err}
		}()
	}
	wg.Wait()
	close(results)
	seen := map[uint64]bool{}
	for r := range results {
		switch r.i % 3 {
		case 0:
			if r.err != nil || r.seq == 0 || seen[r.seq] {
				t.Errorf("write %d: seq %d, err %v", r.i, r.seq, r.err)
			}
			seen[r.seq] = true
		case 1:
			if r.err == nil || r.err.Error() != fmt.Sprintf("decide %d", r.i) || r.seq != 0 {
				t.Errorf("failing write %d: seq %d, err %v", r.i, r.seq, r.err)
			}
		default:
			if r.err != nil || r.seq != 0 {
				t.Errorf("empty write %d: seq %d, err %v", r.i, r.seq, r.err)
			}
		}
	}
	if s.LastSeq() != n/3 {
		t.Errorf("LastSeq = %d, want %d", s.LastSeq(), n/3)
	}
	for q := uint64(1); q <= n/3; q++ {
		if !seen[q] {
			t.Errorf("seq %d not returned to any writer", q)
		}
	}
	v := s.View()
	for i := range n {
		_, ok, _ := v.Meta(0, []byte(fmt.Sprintf("k%d", i)))
		if ok != (i%3 == 0) {
			t.Errorf("k%d present = %v", i, ok)
		}
	}
}

// ---------------------------------------------------------------- reopen / close

func TestReopenContinuesSeq(t *testing.T) {
	dir := t.TempDir()
	c := newClock(t0)
	s, err := materialize.Open(materialize.Options{Dir: dir, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		setString(t, s, 0, fmt.Sprintf("k%d", i), "v", 0, 0)
	}
	write(t, s, streamEvents(2, "st", t0+1_000_000)...)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := s.Write(func(*materialize.View) ([]codec.Event, error) { return nil, nil }); !errors.Is(err, materialize.ErrClosed) {
		t.Fatalf("Write after Close = %v, want ErrClosed", err)
	}

	s, err = materialize.Open(materialize.Options{Dir: dir, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.LastSeq(); got != 6 {
		t.Fatalf("LastSeq after reopen = %d, want 6", got)
	}
	v := s.View()
	for i := range 5 {
		if _, ok, err := v.Meta(0, []byte(fmt.Sprintf("k%d", i))); !ok || err != nil {
			t.Errorf("k%d lost: %v", i, err)
		}
	}
	m, ok, err := v.Meta(2, []byte("st"))
	if !ok || err != nil || m.Type != codec.TypeStream || m.Stream.Length != 2 || m.ExpireAtMs != t0+1_000_000 {
		t.Errorf("stream meta after reopen = %+v, %v, %v", m, ok, err)
	}
	fp := keyFootprint(t, v, 2, "st")
	for _, tag := range allKeyTags {
		if fp[tag] == 0 {
			t.Errorf("tag %c of the stream lost on reopen", tag)
		}
	}
	if !has(t, v, codec.TTLKey(2, []byte("st"), t0+1_000_000)) {
		t.Errorf("TTL entry lost on reopen")
	}
	if got := setString(t, s, 0, "k9", "v", 0, 0); got != 7 {
		t.Errorf("seq after reopen = %d, want 7", got)
	}
	if got := seqsOf(records(t, s, 0)); !slices.Equal(got, []uint64{1, 2, 3, 4, 5, 6, 7}) {
		t.Errorf("change log after reopen = %v", got)
	}
}

// TestChangeLogRetention: records older than the retention go a whole
// segment file at a time, in the background once Pebble flushed; the
// newest retention records stay, without gaps.
func TestChangeLogRetention(t *testing.T) {
	c := newClock(t0)
	s, err := materialize.Open(materialize.Options{InMemory: true, Now: c.Now, ChangeLogRetention: 10, ChangeLogSegmentSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check := func(last uint64) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			recs := records(t, s, 0)
			if len(recs) == 0 || recs[len(recs)-1].Seq != last {
				t.Fatalf("change log ends at %v, want %d", recs, last)
			}
			for i := 1; i < len(recs); i++ {
				if recs[i].Seq != recs[i-1].Seq+1 {
					t.Fatalf("gap in retained change log at %d", recs[i].Seq)
				}
			}
			// Segments of 1 KiB hold about 20 records of this size.
			if len(recs) >= 10 && len(recs) < 100 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d records kept (seqs %d..%d), want the newest 10 plus at most a few segments", len(recs), recs[0].Seq, last)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	for range 1024 {
		setString(t, s, 0, "k", "v", 0, 0)
	}
	check(1024)
	for range 1024 {
		setString(t, s, 0, "k", "v", 0, 0)
	}
	check(2048)
}

// TestChangeLogRetentionAge: with no count limit, records older than the
// age go, a segment at a time; the younger ones stay, without gaps.
func TestChangeLogRetentionAge(t *testing.T) {
	c := newClock(t0)
	s, err := materialize.Open(materialize.Options{InMemory: true, Now: c.Now, ChangeLogRetention: math.MaxUint64,
		ChangeLogRetentionAge: time.Hour, ChangeLogSegmentSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for range 500 {
		setString(t, s, 0, "old", "v", 0, 0)
	}
	if first := s.FirstSeq(); first != 1 {
		t.Fatalf("records dropped within the hour: the oldest is %d", first)
	}
	c.Advance(2 * time.Hour.Milliseconds())
	for range 200 {
		setString(t, s, 0, "new", "v", 0, 0)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		recs := records(t, s, 0)
		young := 0
		for i, r := range recs {
			if i > 0 && r.Seq != recs[i-1].Seq+1 {
				t.Fatalf("gap in retained change log at %d", r.Seq)
			}
			if r.TimeMs > t0+time.Hour.Milliseconds() {
				young++
			}
		}
		if young != 200 {
			t.Fatalf("%d of the 200 records of the last hour kept", young)
		}
		// Segments of 1 KiB hold about 20 records: at most one of old ones.
		if len(recs)-young < 30 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d records older than an hour still kept", len(recs)-young)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ---------------------------------------------------------------- TTL index, DelKey

func TestSetMetaMaintainsTTLIndex(t *testing.T) {
	c := newClock(t0)
	s := openMem(t, c)
	k := []byte("k")
	d1, d2 := t0+10_000, t0+20_000

	setString(t, s, 0, "k", "v", d1, 0)
	v := s.View()
	if !has(t, v, codec.TTLKey(0, k, d1)) || ttlEntries(t, v) != 1 {
		t.Fatalf("TTL entry for d1 missing (%d entries)", ttlEntries(t, v))
	}

	setString(t, s, 0, "k", "v2", d2, d1)
	v = s.View()
	if has(t, v, codec.TTLKey(0, k, d1)) || !has(t, v, codec.TTLKey(0, k, d2)) || ttlEntries(t, v) != 1 {
		t.Fatalf("overwrite: d1 present %v, d2 present %v, %d entries",
			has(t, v, codec.TTLKey(0, k, d1)), has(t, v, codec.TTLKey(0, k, d2)), ttlEntries(t, v))
	}

	// Same deadline again: the entry stays.
	setString(t, s, 0, "k", "v3", d2, d2)
	if v = s.View(); !has(t, v, codec.TTLKey(0, k, d2)) || ttlEntries(t, v) != 1 {
		t.Fatalf("rewrite with same deadline dropped the TTL entry")
	}

	// Same key in another db keeps its own entry.
	setString(t, s, 1, "k", "v", d1, 0)

	// PERSIST-like overwrite removes it.
	setString(t, s, 0, "k", "v4", 0, d2)
	v = s.View()
	if ttlEntries(t, v) != 1 || !has(t, v, codec.TTLKey(1, k, d1)) {
		t.Fatalf("after persist: %d TTL entries", ttlEntries(t, v))
	}
	m, ok, err := v.Meta(0, k)
	if !ok || err != nil || m.ExpireAtMs != 0 || string(m.Value) != "v4" {
		t.Errorf("Meta = %+v, %v, %v", m, ok, err)
	}
}

func TestDelKeyRemovesEverything(t *testing.T) {
	for _, names := range [][2]string{{"a", "ab"}, {"{t}a", "{t}ab"}, {"ab", "a"}, {"a\x00", "a"}} {
		t.Run(fmt.Sprintf("%q_vs_%q", names[0], names[1]), func(t *testing.T) {
			c := newClock(t0)
			s := openMem(t, c)
			victim, other := names[0], names[1]
			d := t0 + 60_000
			write(t, s, streamEvents(0, victim, d)...)
			write(t, s, streamEvents(0, other, d)...)
			write(t, s, streamEvents(1, victim, d)...) // same name, other db
			before := keyFootprint(t, s.View(), 0, other)
			beforeDB1 := keyFootprint(t, s.View(), 1, victim)
			for _, tag := range allKeyTags {
				if before[tag] == 0 {
					t.Fatalf("setup: tag %c empty", tag)
				}
			}

			write(t, s, codec.DelKeyEvent(0, []byte(victim), codec.TypeStream, d))
			v := s.View()
			for tag, n := range keyFootprint(t, v, 0, victim) {
				if n != 0 {
					t.Errorf("tag %c: %d keys of the deleted key remain", tag, n)
				}
			}
			if has(t, v, codec.TTLKey(0, []byte(victim), d)) {
				t.Errorf("TTL entry of the deleted key remains")
			}
			if _, ok, _ := v.Meta(0, []byte(victim)); ok {
				t.Errorf("Meta still present")
			}
			if after := keyFootprint(t, v, 0, other); !mapsEqual(after, before) {
				t.Errorf("neighbour %q changed: %v -> %v", other, before, after)
			}
			if after := keyFootprint(t, v, 1, victim); !mapsEqual(after, beforeDB1) {
				t.Errorf("same key in db 1 changed: %v -> %v", beforeDB1, after)
			}
			if !has(t, v, codec.TTLKey(0, []byte(other), d)) || !has(t, v, codec.TTLKey(1, []byte(victim), d)) {
				t.Errorf("other keys' TTL entries removed")
			}
		})
	}
}

func mapsEqual(a, b map[codec.Tag]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestDelKeyString(t *testing.T) {
	c := newClock(t0)
	s := openMem(t, c)
	setString(t, s, 0, "k", "v", t0+5000, 0)
	setString(t, s, 0, "k2", "v", 0, 0)
	write(t, s, codec.DelKeyEvent(0, []byte("k"), codec.TypeString, t0+5000))
	v := s.View()
	if _, ok, _ := v.Meta(0, []byte("k")); ok {
		t.Errorf("k survives DEL")
	}
	if ttlEntries(t, v) != 0 {
		t.Errorf("TTL entry survives DEL")
	}
	if _, ok, _ := v.Meta(0, []byte("k2")); !ok {
		t.Errorf("k2 deleted")
	}
}

// ---------------------------------------------------------------- lazy expiry

func TestLazyExpiry(t *testing.T) {
	c := newClock(t0)
	s := openMem(t, c)
	d := t0 + 1000
	write(t, s, streamEvents(0, "s", d)...)
	setString(t, s, 0, "plain", "v", 0, 0)

	if _, ok, _ := s.View().Meta(0, []byte("s")); !ok {
		t.Fatalf("key hidden before its deadline")
	}
	c.Set(d - 1)
	if _, ok, _ := s.View().Meta(0, []byte("s")); !ok {
		t.Fatalf("key hidden 1ms before its deadline")
	}
	c.Set(d) // as in Redis (now > when), a key is still alive at its deadline
	if _, ok, _ := s.View().Meta(0, []byte("s")); !ok {
		t.Fatalf("key hidden at its deadline")
	}
	c.Set(d + 1)
	v := s.View()
	if m, ok, err := v.Meta(0, []byte("s")); ok || err != nil || m.Type != codec.TypeNone {
		t.Fatalf("expired key visible: %+v, %v, %v", m, ok, err)
	}
	// The data is still stored until something deletes it.
	if !has(t, v, codec.MetaKey(0, []byte("s"))) {
		t.Fatalf("lazy expiry deleted on read")
	}
	if _, ok, _ := v.Meta(0, []byte("plain")); !ok {
		t.Errorf("key without TTL hidden")
	}

	var evs []codec.Event
	seq, err := s.Write(func(v *materialize.View) ([]codec.Event, error) {
		m, ok, del, err := v.MetaForWrite(0, []byte("s"))
		if err != nil || ok || m.Type != codec.TypeNone {
			t.Errorf("MetaForWrite(expired) = %+v, %v, %v", m, ok, err)
		}
		if _, ok, none, err := v.MetaForWrite(0, []byte("plain")); !ok || none != nil || err != nil {
			t.Errorf("MetaForWrite(live) = %v, %v, %v", ok, none, err)
		}
		if _, ok, none, err := v.MetaForWrite(0, []byte("missing")); ok || none != nil || err != nil {
			t.Errorf("MetaForWrite(missing) = %v, %v, %v", ok, none, err)
		}
		evs = del
		return del, nil
	})
	if err != nil || seq == 0 {
		t.Fatalf("Write: %d, %v", seq, err)
	}
	want := codec.ExpiredKeyEvent(0, []byte("s"), codec.TypeStream, d)
	if len(evs) != 1 || !eventsEqual(evs[0], want) {
		t.Fatalf("MetaForWrite events = %+v, want %+v", evs, want)
	}
	v = s.View()
	for tag, n := range keyFootprint(t, v, 0, "s") {
		if n != 0 {
			t.Errorf("tag %c: %d keys remain after the expiry delete", tag, n)
		}
	}
	if ttlEntries(t, v) != 0 {
		t.Errorf("TTL entry remains")
	}
}

// ---------------------------------------------------------------- active expiry

func TestExpireCycle(t *testing.T) {
	c := newClock(t0)
	s := openMem(t, c)
	for db := uint8(0); db < 2; db++ {
		for i := range 10 {
			setString(t, s, db, fmt.Sprintf("soon%d", i), "v", t0+100+int64(i), 0)
			setString(t, s, db, fmt.Sprintf("late%d", i), "v", t0+10_000, 0)
			setString(t, s, db, fmt.Sprintf("never%d", i), "v", 0, 0)
		}
	}
	write(t, s, streamEvents(0, "stream", t0+50)...)

	got, err := s.ExpireCycle(1000)
	if err != nil || len(got) != 0 {
		t.Fatalf("ExpireCycle before any deadline = %v, %v", got, err)
	}
	seqBefore := s.LastSeq()
	c.Set(t0 + 200)
	got, err = s.ExpireCycle(1000)
	if err != nil {
		t.Fatal(err)
	}
	if s.LastSeq() != seqBefore+1 {
		t.Errorf("ExpireCycle committed %d records, want 1", s.LastSeq()-seqBefore)
	}
	names := map[string]bool{}
	for _, e := range got {
		names[fmt.Sprintf("%d/%s", e.DB, e.Key)] = true
	}
	want := map[string]bool{"0/stream": true}
	for db := range 2 {
		for i := range 10 {
			want[fmt.Sprintf("%d/soon%d", db, i)] = true
		}
	}
	if len(got) != len(want) || len(names) != len(want) {
		t.Fatalf("ExpireCycle returned %d keys (%v), want %d", len(got), names, len(want))
	}
	for k := range want {
		if !names[k] {
			t.Errorf("ExpireCycle missed %s", k)
		}
	}
	v := s.View()
	for db := uint8(0); db < 2; db++ {
		for i := range 10 {
			if has(t, v, codec.MetaKey(db, []byte(fmt.Sprintf("soon%d", i)))) {
				t.Errorf("db %d soon%d still stored", db, i)
			}
			for _, k := range []string{"late", "never"} {
				if _, ok, _ := v.Meta(db, []byte(fmt.Sprintf("%s%d", k, i))); !ok {
					t.Errorf("db %d %s%d deleted", db, k, i)
				}
			}
		}
	}
	for tag, n := range keyFootprint(t, v, 0, "stream") {
		if n != 0 {
			t.Errorf("expired stream: tag %c has %d keys", tag, n)
		}
	}
	if n := ttlEntries(t, v); n != 20 {
		t.Errorf("TTL entries = %d, want 20 (the late keys)", n)
	}
	// The change log names the deletions.
	recs := records(t, s, s.LastSeq())
	if len(recs) != 1 || len(recs[0].Events) != len(want) {
		t.Fatalf("expiry records: %d, want 1 with %d events", len(recs), len(want))
	}
	for _, e := range recs[0].Events {
		if e.Op != codec.OpDelKey {
			t.Errorf("expiry event op %q", e.Op)
		}
	}
	// Nothing left to do: no record.
	if got, err := s.ExpireCycle(1000); len(got) != 0 || err != nil || s.LastSeq() != seqBefore+1 {
		t.Errorf("idle ExpireCycle = %v, %v, seq %d", got, err, s.LastSeq())
	}
}

func TestExpireCycleLimit(t *testing.T) {
	c := newClock(t0)
	s := openMem(t, c)
	for i := range 10 {
		setString(t, s, 0, fmt.Sprintf("k%d", i), "v", t0+1, 0)
	}
	c.Advance(10)
	total := 0
	for round := 0; ; round++ {
		got, err := s.ExpireCycle(3)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) > 3 {
			t.Fatalf("ExpireCycle(3) deleted %d", len(got))
		}
		if len(got) == 0 {
			break
		}
		total += len(got)
		if round > 10 {
			t.Fatal("ExpireCycle does not converge")
		}
	}
	if total != 10 {
		t.Errorf("deleted %d keys, want 10", total)
	}
	if n := ttlEntries(t, s.View()); n != 0 {
		t.Errorf("%d TTL entries remain", n)
	}
}

func TestExpireCycleStaleEntries(t *testing.T) {
	c := newClock(t0)
	s := openMem(t, c)
	d := t0 + 100
	setString(t, s, 0, "k", "old", d, 0)
	setString(t, s, 0, "k2", "old", d, 0)
	setString(t, s, 1, "k", "db1", d, 0)
	flushDB(t, s, 0)

	v := s.View()
	if _, ok, _ := v.Meta(0, []byte("k")); ok {
		t.Fatalf("FLUSHDB left k")
	}
	if ttlEntries(t, v) != 3 {
		t.Fatalf("FLUSHDB removed TTL entries (documented to leave them): %d remain", ttlEntries(t, v))
	}
	// Recreate k without TTL and k2 with a later one.
	setString(t, s, 0, "k", "new", 0, 0)
	setString(t, s, 0, "k2", "new", t0+10_000, 0)

	c.Set(d + 1)
	got, err := s.ExpireCycle(100)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].DB != 1 || string(got[0].Key) != "k" {
		t.Fatalf("ExpireCycle = %v, want only db 1 k", got)
	}
	v = s.View()
	if m, ok, _ := v.Meta(0, []byte("k")); !ok || string(m.Value) != "new" {
		t.Errorf("recreated k deleted by a stale TTL entry")
	}
	if m, ok, _ := v.Meta(0, []byte("k2")); !ok || string(m.Value) != "new" {
		t.Errorf("recreated k2 deleted by a stale TTL entry")
	}
	if has(t, v, codec.TTLKey(0, []byte("k"), d)) || has(t, v, codec.TTLKey(0, []byte("k2"), d)) {
		t.Errorf("stale TTL entries not removed")
	}
	if !has(t, v, codec.TTLKey(0, []byte("k2"), t0+10_000)) || ttlEntries(t, v) != 1 {
		t.Errorf("live TTL entry lost: %d entries", ttlEntries(t, v))
	}
}

// ---------------------------------------------------------------- FLUSHDB / FLUSHALL

func populatedSlots(tb testing.TB, v *materialize.View, tag codec.Tag, db uint8, from uint16) []uint16 {
	tb.Helper()
	var out []uint16
	if err := v.SeekSlots(tag, db, from, func(slot uint16) (bool, error) {
		out = append(out, slot)
		return true, nil
	}); err != nil {
		tb.Fatalf("SeekSlots: %v", err)
	}
	return out
}

func flushDB(tb testing.TB, s *materialize.Store, db uint8) {
	tb.Helper()
	_, err := s.Write(func(v *materialize.View) ([]codec.Event, error) {
		return []codec.Event{codec.FlushDBEvent(db, populatedSlots(tb, v, codec.TagMeta, db, 0))}, nil
	})
	if err != nil {
		tb.Fatalf("FLUSHDB: %v", err)
	}
}

// keysOfDB counts data keys (T X G C P Q) of db.
func keysOfDB(tb testing.TB, v *materialize.View, db uint8) int {
	tb.Helper()
	n := 0
	for _, tag := range allKeyTags {
		err := v.Iterate([]byte{byte(tag)}, []byte{byte(tag) + 1}, false, func(k, _ []byte) (bool, error) {
			d, err := codec.DecodeKey(k)
			if err != nil {
				return false, err
			}
			if d.DB == db {
				n++
			}
			return true, nil
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
	return n
}

func TestFlushDB(t *testing.T) {
	c := newClock(t0)
	s := openMem(t, c)
	for db := uint8(0); db < 3; db++ {
		var evs []codec.Event
		for i := range 200 {
			evs = append(evs, codec.SetMetaEvent(db, []byte(fmt.Sprintf("key:%d", i)), strMeta("v", 0), 0))
		}
		for i := range 5 {
			evs = append(evs, streamEvents(db, fmt.Sprintf("{s%d}stream", i), 0)...)
		}
		write(t, s, evs...)
	}
	v := s.View()
	before := [3]int{keysOfDB(t, v, 0), keysOfDB(t, v, 1), keysOfDB(t, v, 2)}
	if before[0] == 0 || before[0] != before[1] {
		t.Fatalf("setup: %v", before)
	}
	if n := len(populatedSlots(t, v, codec.TagMeta, 1, 0)); n < 150 {
		t.Fatalf("setup: only %d slots populated", n)
	}

	flushDB(t, s, 1)
	v = s.View()
	if n := keysOfDB(t, v, 1); n != 0 {
		t.Errorf("FLUSHDB 1 left %d keys of db 1", n)
	}
	if n := keysOfDB(t, v, 0); n != before[0] {
		t.Errorf("FLUSHDB 1 changed db 0: %d -> %d keys", before[0], n)
	}
	if n := keysOfDB(t, v, 2); n != before[2] {
		t.Errorf("FLUSHDB 1 changed db 2: %d -> %d keys", before[2], n)
	}
	if got := populatedSlots(t, v, codec.TagMeta, 1, 0); len(got) != 0 {
		t.Errorf("db 1 still has slots %v", got)
	}
	for i := range 200 {
		k := []byte(fmt.Sprintf("key:%d", i))
		if _, ok, _ := v.Meta(0, k); !ok {
			t.Fatalf("db 0 lost %s", k)
		}
		if _, ok, _ := v.Meta(1, k); ok {
			t.Fatalf("db 1 kept %s", k)
		}
	}

	// Flushing an empty db is a no-op.
	flushDB(t, s, 1)
	flushDB(t, s, 0)
	v = s.View()
	if n := keysOfDB(t, v, 0); n != 0 {
		t.Errorf("FLUSHDB 0 left %d keys", n)
	}
	if n := keysOfDB(t, v, 2); n != before[2] {
		t.Errorf("FLUSHDB 0 changed db 2")
	}
}

func TestFlushDBHighDB(t *testing.T) {
	c := newClock(t0)
	s := openMem(t, c)
	bySlot := keysBySlot("k")
	// db 254 and 255 in neighbouring slots, including the last slot, so
	// PrefixEnd carries.
	for _, slot := range []uint16{0, 1, 255, 256, codec.NumSlots - 2, codec.NumSlots - 1} {
		k := bySlot[slot]
		setString(t, s, 254, k, "v", 0, 0)
		setString(t, s, 255, k, "v", 0, 0)
	}
	flushDB(t, s, 255)
	v := s.View()
	if n := keysOfDB(t, v, 255); n != 0 {
		t.Errorf("db 255 kept %d keys", n)
	}
	if n := keysOfDB(t, v, 254); n != 6 {
		t.Errorf("db 254 has %d keys, want 6", n)
	}
}

func TestFlushAll(t *testing.T) {
	c := newClock(t0)
	s := openMem(t, c)
	for db := uint8(0); db < 3; db++ {
		write(t, s, streamEvents(db, "s", t0+100_000)...)
		setString(t, s, db, "str", "v", t0+50_000, 0)
	}
	seq := write(t, s, codec.FlushAllEvent())
	v := s.View()
	for _, k := range allKeys(t, v) {
		if tag := codec.Tag(k[0]); tag != codec.TagApplied && tag != codec.TagFormat {
			t.Fatalf("FLUSHALL left key %q", k)
		}
	}
	recs := records(t, s, 0)
	if len(recs) != int(seq) || recs[len(recs)-1].Events[0].Op != codec.OpFlushAll {
		t.Fatalf("change log after FLUSHALL: %d records, want %d", len(recs), seq)
	}
	if got := setString(t, s, 0, "after", "v", 0, 0); got != seq+1 {
		t.Errorf("seq after FLUSHALL = %d, want %d", got, seq+1)
	}
}

// ---------------------------------------------------------------- SeekSlots

func TestSeekSlots(t *testing.T) {
	c := newClock(t0)
	s := openMem(t, c)
	bySlot := keysBySlot("x")
	if len(bySlot) != codec.NumSlots {
		t.Fatalf("found keys for %d slots", len(bySlot))
	}
	want := map[uint8]map[uint16]bool{0: {}, 1: {}, 2: {}, 255: {}}
	add := func(db uint8, slot uint16) {
		want[db][slot] = true
		setString(t, s, db, bySlot[slot], "v", 0, 0)
	}
	// db 1: a sparse spread including the extremes.
	for slot := uint16(0); slot < codec.NumSlots; slot += 97 {
		add(1, slot)
	}
	add(1, codec.NumSlots-1)
	// db 0: the same slots as db 1 for some, neighbours for others.
	for slot := uint16(0); slot < codec.NumSlots; slot += 97 * 3 {
		add(0, slot)
		if slot+1 < codec.NumSlots {
			add(2, slot+1)
		}
		if slot > 0 {
			add(255, slot-1)
		}
	}
	// Keys whose names collide by prefix and keys added via hash tags.
	for i := range 50 {
		k := fmt.Sprintf("{tag%d}key", i)
		setString(t, s, 0, k, "v", 0, 0)
		want[0][codec.Slot([]byte(k))] = true
	}

	v := s.View()
	for db, set := range want {
		var expect []uint16
		for slot := range set {
			expect = append(expect, slot)
		}
		slices.Sort(expect)
		if got := populatedSlots(t, v, codec.TagMeta, db, 0); !slices.Equal(got, expect) {
			t.Errorf("db %d: SeekSlots visited %d slots, want %d\n got %v\nwant %v", db, len(got), len(expect), got, expect)
		}
		// Starting mid-way.
		from := uint16(5000)
		var tail []uint16
		for _, slot := range expect {
			if slot >= from {
				tail = append(tail, slot)
			}
		}
		if got := populatedSlots(t, v, codec.TagMeta, db, from); !slices.Equal(got, tail) {
			t.Errorf("db %d from %d: got %d slots, want %d", db, from, len(got), len(tail))
		}
	}
	// Brute force over every (db, slot) pair for the populated dbs and a
	// few empty ones.
	for _, db := range []uint8{3, 128, 254} {
		if got := populatedSlots(t, v, codec.TagMeta, db, 0); len(got) != 0 {
			t.Errorf("empty db %d: SeekSlots visited %v", db, got)
		}
	}
	// Another tag: only stream entries.
	if got := populatedSlots(t, v, codec.TagStreamEntry, 0, 0); len(got) != 0 {
		t.Errorf("TagStreamEntry visited %v", got)
	}
	// Stop early and propagate errors.
	n := 0
	if err := v.SeekSlots(codec.TagMeta, 1, 0, func(uint16) (bool, error) { n++; return n < 3, nil }); err != nil || n != 3 {
		t.Errorf("stop: n = %d, err = %v", n, err)
	}
	errStop := errors.New("stop")
	if err := v.SeekSlots(codec.TagMeta, 1, 0, func(uint16) (bool, error) { return true, errStop }); err != errStop {
		t.Errorf("error not propagated: %v", err)
	}
}

// ---------------------------------------------------------------- durability

func TestWaitDurableAlwaysConcurrent(t *testing.T) {
	c := newClock(t0)
	s, err := materialize.Open(materialize.Options{Dir: t.TempDir(), Sync: materialize.SyncAlways, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Policy() != materialize.SyncAlways {
		t.Fatalf("Policy = %v", s.Policy())
	}
	if err := s.WaitDurable(0); err != nil {
		t.Fatalf("WaitDurable(0) = %v", err)
	}
	seq := setString(t, s, 0, "k", "v", 0, 0)
	if err := s.WaitDurable(seq); err != nil {
		t.Fatalf("WaitDurable = %v", err)
	}

	const workers = 20
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	seqs := make(chan uint64, workers)
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seq, err := s.Write(func(*materialize.View) ([]codec.Event, error) {
				return []codec.Event{codec.SetMetaEvent(0, []byte(fmt.Sprintf("w%d", i)), strMeta("v", 0), 0)}, nil
			})
			if err != nil {
				errs <- err
				return
			}
			if err := s.WaitDurable(seq); err != nil {
				errs <- err
				return
			}
			seqs <- seq
		}()
	}
	wg.Wait()
	close(errs)
	close(seqs)
	for err := range errs {
		t.Errorf("worker: %v", err)
	}
	var got []uint64
	for q := range seqs {
		got = append(got, q)
	}
	slices.Sort(got)
	for i, q := range got {
		if q != uint64(i+2) {
			t.Fatalf("seqs = %v, want 2..%d each once", got, workers+1)
		}
	}
	if s.LastSeq() != workers+1 {
		t.Errorf("LastSeq = %d", s.LastSeq())
	}
}

func TestWaitDurableOtherPolicies(t *testing.T) {
	for _, p := range []materialize.SyncPolicy{materialize.SyncEverySec, materialize.SyncNo} {
		c := newClock(t0)
		s, err := materialize.Open(materialize.Options{InMemory: true, Sync: p, Now: c.Now})
		if err != nil {
			t.Fatal(err)
		}
		seq := setString(t, s, 0, "k", "v", 0, 0)
		if err := s.WaitDurable(seq); err != nil {
			t.Errorf("%v: WaitDurable = %v", p, err)
		}
		if s.Policy() != p {
			t.Errorf("Policy = %v, want %v", s.Policy(), p)
		}
		if err := s.Close(); err != nil {
			t.Errorf("%v: Close = %v", p, err)
		}
	}
}

func TestParseSyncPolicy(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want materialize.SyncPolicy
	}{
		{"always", materialize.SyncAlways},
		{"everysec", materialize.SyncEverySec},
		{"", materialize.SyncEverySec},
		{"no", materialize.SyncNo},
	} {
		got, err := materialize.ParseSyncPolicy(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseSyncPolicy(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
		if tc.in != "" && got.String() != tc.in {
			t.Errorf("%v.String() = %q, want %q", got, got.String(), tc.in)
		}
	}
	for _, in := range []string{"sometimes", "yes", "always ", "1"} {
		if _, err := materialize.ParseSyncPolicy(in); err == nil {
			t.Errorf("ParseSyncPolicy(%q) accepted", in)
		}
	}
}

// ---------------------------------------------------------------- benchmarks

func BenchmarkWriteXAdd(b *testing.B) {
	c := newClock(t0)
	s := openMem(b, c)
	key := []byte("bench-stream")
	fv := [][]byte{[]byte("field"), []byte("value-value-value"), []byte("n"), []byte("12345")}
	var m codec.Meta = codec.Meta{Type: codec.TypeStream}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, err := s.Write(func(v *materialize.View) ([]codec.Event, error) {
			cur, ok, evs, err := v.MetaForWrite(0, key)
			if err != nil {
				return nil, err
			}
			if ok {
				m = cur
			}
			id := codec.ID{Ms: uint64(v.NowMs()), Seq: uint64(i)}
			m.Stream.Length++
			m.Stream.LastID = id
			m.Stream.EntriesAdded++
			if m.Stream.FirstID.IsZero() {
				m.Stream.FirstID = id
			}
			evs = append(evs, codec.XAddEvent(0, key, id, fv), codec.SetMetaEvent(0, key, m, m.ExpireAtMs))
			return evs, nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkViewMeta(b *testing.B) {
	c := newClock(t0)
	s := openMem(b, c)
	const n = 1000
	keys := make([][]byte, n)
	var evs []codec.Event
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("key:%d", i))
		evs = append(evs, codec.SetMetaEvent(0, keys[i], strMeta("value", 0), 0))
	}
	write(b, s, evs...)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, ok, err := s.View().Meta(0, keys[i%n]); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}

// TestExpireCycleCostFlat expires the same 100 keys over and over (set
// with a TTL, expired by active expiry) and checks that an expiry cycle's
// storage work after 20,000 expirations is what it was after 2,000: the
// TTL index's deleted entries at the start of each slot are never walked.
func TestExpireCycleCostFlat(t *testing.T) {
	c := newClock(t0)
	s := openMem(t, c)
	round := func() {
		for i := range 100 {
			setString(t, s, 0, fmt.Sprint("k", i), "v", c.Now().UnixMilli()+1, 0)
		}
		c.Advance(2)
		keys, err := s.ExpireCycle(200)
		if err != nil || len(keys) != 100 {
			t.Fatalf("ExpireCycle: %d keys, %v", len(keys), err)
		}
	}
	measure := func() materialize.IterStats {
		before := s.IterStats()
		for range 10 {
			round()
		}
		return s.IterStats().Sub(before)
	}
	for range 20 {
		round()
	}
	early := measure()
	for range 180 {
		round()
	}
	late := measure()
	t.Logf("10 cycles after 2,000 expirations: %+v; after 20,000: %+v", early, late)
	if late.Points > early.Points+early.Points/5+100 || late.InternalSteps > early.InternalSteps+early.InternalSteps/5+100 {
		t.Errorf("expiry cycles grew with history: %+v, then %+v", early, late)
	}
}

// TestExpireCycleWithoutTTLs: once the TTL index is known, a cycle while
// no key has a TTL makes no iterator (a new iterator after a range
// deletion re-fragments the memtable's range tombstones, and cycles run
// ten times a second); a key given a TTL is then expired as before.
func TestExpireCycleWithoutTTLs(t *testing.T) {
	c := newClock(t0)
	s := openMem(t, c)
	for i := range 100 {
		setString(t, s, 0, fmt.Sprint("k", i), "v", 0, 0)
	}
	if _, err := s.ExpireCycle(20); err != nil { // learns the index
		t.Fatal(err)
	}
	before := s.IterStats()
	for range 10 {
		if keys, err := s.ExpireCycle(20); err != nil || len(keys) != 0 {
			t.Fatalf("ExpireCycle: %d keys, %v", len(keys), err)
		}
	}
	if d := s.IterStats().Sub(before); d.Iterators != 0 {
		t.Fatalf("10 cycles without TTLs made %d iterators", d.Iterators)
	}
	setString(t, s, 0, "k1", "v", c.Now().UnixMilli()+1, 0)
	c.Advance(2)
	if keys, err := s.ExpireCycle(20); err != nil || len(keys) != 1 || string(keys[0].Key) != "k1" {
		t.Fatalf("ExpireCycle after a TTL: %v, %v", keys, err)
	}
}

// TestExpireCycleSlotBound checks the bound active expiry keeps per slot:
// a key given an earlier deadline than the slot's bound (after a cycle
// raised it) is still expired, and a slot emptied by a cycle is visited
// again once a key with a TTL lands in it.
func TestExpireCycleSlotBound(t *testing.T) {
	c := newClock(t0)
	s := openMem(t, c)
	expire := func(want ...string) {
		t.Helper()
		keys, err := s.ExpireCycle(200)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, k := range keys {
			got = append(got, string(k.Key))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("expired %q, want %q", got, want)
		}
	}
	setString(t, s, 0, "{a}late", "v", t0+100, 0)
	expire() // nothing due; the slot's bound becomes t0+100
	setString(t, s, 0, "{a}early", "v", t0+10, 0)
	c.Advance(20)
	expire("{a}early")
	c.Advance(100)
	expire("{a}late") // the slot is now empty and forgotten
	setString(t, s, 0, "{a}again", "v", c.Now().UnixMilli()+1, 0)
	c.Advance(2)
	expire("{a}again")
}

// TestLogHold: a hold keeps its records whatever the retention; advancing
// or releasing it lets the retention drop them at the next commits.
func TestLogHold(t *testing.T) {
	c := newClock(t0)
	s, err := materialize.Open(materialize.Options{InMemory: true, Now: c.Now, ChangeLogRetention: 10, ChangeLogSegmentSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a := s.HoldLog(100)
	b := s.HoldLog(300)
	for range 1000 {
		setString(t, s, 0, "k", "v", 0, 0)
	}
	// Pruning runs in the background: wait until it keeps up, then check.
	waitFirst := func(atMost, atLeast uint64) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			first := s.FirstSeq()
			if first > atMost {
				t.Fatalf("oldest record %d, a hold keeps %d", first, atMost)
			}
			if first >= atLeast {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("oldest record %d, want at least %d", first, atLeast)
			}
			setString(t, s, 0, "k", "v", 0, 0)
			time.Sleep(5 * time.Millisecond)
		}
	}
	// Segments of 1 KiB hold about 20 records: the segment of record 100
	// begins at most a segment earlier.
	waitFirst(100, 70)
	if got := a.Floor(); got != 100 {
		t.Fatalf("Floor = %d", got)
	}
	a.Advance(50) // never back
	if got := a.Floor(); got != 100 {
		t.Fatalf("Floor after Advance back = %d", got)
	}
	a.Advance(500)
	waitFirst(300, 270) // b still holds 300
	b.Release()
	b.Release()
	b.Advance(900) // after Release: nothing
	waitFirst(500, 470)
	a.Release()
	waitFirst(s.LastSeq()-9, s.LastSeq()-100)
	if got := a.Floor(); got != 0 {
		t.Fatalf("Floor after Release = %d", got)
	}
}

// TestDelKeyTagsFromRecord: a deletion removes the sub-key ranges its
// record names, not those of the code's tag list for the type; a record
// from before the tags were recorded deletes the type's SubTags.
func TestDelKeyTagsFromRecord(t *testing.T) {
	s, err := materialize.Open(materialize.Options{InMemory: true, Now: newClock(t0).Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	hash := func(key string) {
		m := codec.Meta{Type: codec.TypeHash, Count: 1}
		write(t, s, codec.ElementsEvent(codec.OpHSet, 0, []byte(key), [][]byte{[]byte("f"), []byte("v")}), codec.SetMetaEvent(0, []byte(key), m, 0))
	}
	field := func(key string) bool {
		v := s.View()
		return has(t, v, codec.ElementKey(codec.TagHash, 0, []byte(key), []byte("f")))
	}
	hash("named")
	hash("legacy")
	hash("full")
	// Naming no tag: the field stays (only the metadata goes).
	write(t, s, codec.Event{Op: codec.OpDelKey, Key: []byte("named"), Args: [][]byte{{byte(codec.TypeHash)}, codec.Int64Arg(0), nil, {}}})
	// Two arguments, as written before the tags: the hash's H range goes.
	write(t, s, codec.Event{Op: codec.OpDelKey, Key: []byte("legacy"), Args: [][]byte{{byte(codec.TypeHash)}, codec.Int64Arg(0)}})
	write(t, s, codec.DelKeyEvent(0, []byte("full"), codec.TypeHash, 0))
	if !field("named") {
		t.Error("a deletion naming no tag removed the field")
	}
	if field("legacy") {
		t.Error("a two-argument deletion kept the field")
	}
	if field("full") {
		t.Error("DelKeyEvent kept the field")
	}
}
