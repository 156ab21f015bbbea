package materialize_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
)

// crashStore writes n one-key records on a crashable in-memory file
// system with small memtables (so that Pebble flushes while it writes),
// waiting for each to be durable when sync is SyncAlways, then returns a
// copy of the file system as a crash would leave it (keeping each unsynced
// write with probability unsynced%) and the store, still open.
func crashStore(t *testing.T, sync materialize.SyncPolicy, n, unsynced int, seed int64, segSize int64) (*vfs.MemFS, *materialize.Store) {
	t.Helper()
	fs := vfs.NewCrashableMem()
	c := newClock(t0)
	s, err := materialize.Open(materialize.Options{FS: fs, Dir: "db", Sync: sync, Now: c.Now, MemTableSize: 256 << 10, ChangeLogSegmentSize: segSize})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for i := 1; i <= n; i++ {
		seq, err := s.Write(func(*materialize.View) ([]codec.Event, error) {
			return []codec.Event{codec.SetMetaEvent(0, fmt.Appendf(nil, "k%d", i), codec.Meta{Type: codec.TypeString, Value: crashValue(i)}, 0)}, nil
		})
		if err != nil || seq != uint64(i) {
			t.Fatalf("write %d: seq %d, %v", i, seq, err)
		}
		if err := s.WaitDurable(seq); err != nil {
			t.Fatal(err)
		}
	}
	cfg := vfs.CrashCloneCfg{UnsyncedDataPercent: unsynced}
	if unsynced > 0 {
		cfg.RNG = rand.New(rand.NewPCG(uint64(seed), 0))
	}
	return fs.CrashClone(cfg), s
}

// crashValue is the value crashStore writes to key k<i>: 200 bytes, or
// every seventh 8 KiB (kept in the change log: Options.ValueLogMin).
func crashValue(i int) []byte {
	n := 200
	if i%7 == 0 {
		n = 8 << 10
	}
	return bytes.Repeat(fmt.Appendf(nil, "%07d|", i), n/8)
}

// reopenAfterCrash opens the store on fs and checks it is a prefix of the
// writes: keys k1..kN for the N records the change log holds, counted,
// and a next write numbered N+1. It returns N.
func reopenAfterCrash(t *testing.T, fs vfs.FS, max int) int {
	t.Helper()
	c := newClock(t0)
	s, err := materialize.Open(materialize.Options{FS: fs, Dir: "db", Now: c.Now, MemTableSize: 256 << 10, ChangeLogSegmentSize: 64 << 10})
	if err != nil {
		t.Fatalf("reopen after crash: %v", err)
	}
	defer s.Close()
	recs := records(t, s, 0)
	n := len(recs)
	for i, r := range recs {
		if r.Seq != uint64(i+1) {
			t.Fatalf("change log after crash: record %d has seq %d", i, r.Seq)
		}
	}
	v := s.View()
	for i := 1; i <= max; i++ {
		m, ok, err := v.Meta(0, fmt.Appendf(nil, "k%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if ok != (i <= n) {
			t.Fatalf("k%d present %v with %d records in the log", i, ok, n)
		}
		if ok && !bytes.Equal(m.Value, crashValue(i)) {
			t.Fatalf("k%d: %d bytes, not its value", i, len(m.Value))
		}
	}
	if rep, err := s.Check(0); err != nil || rep.NumViolations != 0 {
		t.Fatalf("check after the crash: %v, %+v", err, rep.Violations)
	}
	if keys, _ := v.KeyCount(0); keys != int64(n) {
		t.Errorf("key count %d, want %d", keys, n)
	}
	if got := setString(t, s, 0, "after", "v", 0, 0); got != uint64(n+1) {
		t.Errorf("seq after the crash = %d, want %d", got, n+1)
	}
	return n
}

// TestChangeLogCrashAlways: under SyncAlways every write acknowledged
// durable survives a crash that keeps nothing unsynced, whatever Pebble
// had flushed.
func TestChangeLogCrashAlways(t *testing.T) {
	const n = 3000
	fs, _ := crashStore(t, materialize.SyncAlways, n, 0, 0, 64<<10)
	if got := reopenAfterCrash(t, fs, n); got != n {
		t.Fatalf("%d of %d acknowledged records survived", got, n)
	}
}

// TestChangeLogCrashPrefix: without fsyncs, a crash keeps some prefix of
// the writes, never a state with effects the log lost (Pebble's flushes
// sync the log first), even when parts of unsynced files survive. One
// large segment: only the flushes sync the log.
func TestChangeLogCrashPrefix(t *testing.T) {
	const n = 3000
	for seed := int64(1); seed <= 4; seed++ {
		fs, _ := crashStore(t, materialize.SyncNo, n, 50, seed, 1<<30)
		got := reopenAfterCrash(t, fs, n)
		t.Logf("seed %d: %d of %d records survived", seed, got, n)
	}
}

// TestChangeLogReopenReplays: a store closed without flushing (a process
// kill: the file system keeps every write) replays the log's tail.
func TestChangeLogReopenReplays(t *testing.T) {
	const n = 3000
	fs, _ := crashStore(t, materialize.SyncNo, n, 100, 1, 64<<10)
	if got := reopenAfterCrash(t, fs, n); got != n {
		t.Fatalf("%d of %d records after a kill", got, n)
	}
}

// TestChangeLogLegacyStore: a store from before the change-log files
// (records under L keys in Pebble, Pebble's own WAL) has its records moved
// to the files at Open, once; the sequence goes on after them.
func TestChangeLogLegacyStore(t *testing.T) {
	dir := t.TempDir()
	c := newClock(t0)
	s, err := materialize.Open(materialize.Options{Dir: dir, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		setString(t, s, 0, fmt.Sprint("k", i), "v", 0, 0)
	}
	want := records(t, s, 0)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Make it a legacy store: the records under L keys, written through
	// Pebble's WAL and left unflushed; no A key, no change-log files.
	db, err := pebble.Open(dir, &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := db.NewBatch()
	for _, r := range want {
		b.Set(codec.ChangeLogKey(r.Seq), codec.AppendRecord(nil, r), nil)
	}
	b.Delete(codec.AppliedKey(), nil)
	if err := db.Apply(b, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "changelog")); err != nil {
		t.Fatal(err)
	}
	for round := range 2 { // the second Open finds nothing left to move
		s, err = materialize.Open(materialize.Options{Dir: dir, Now: c.Now})
		if err != nil {
			t.Fatal(err)
		}
		got := records(t, s, 0)
		if len(got) != len(want)+round {
			t.Fatalf("round %d: %d records after the move, want %d", round, len(got), len(want)+round)
		}
		for i, r := range want {
			if got[i].Seq != r.Seq || got[i].ULID != r.ULID || len(got[i].Events) != len(r.Events) {
				t.Fatalf("round %d: record %d = %+v, want %+v", round, i, got[i], r)
			}
		}
		if n := countPrefix(t, s.View(), []byte{byte(codec.TagChangeLog)}); n != 0 {
			t.Errorf("round %d: %d L keys left", round, n)
		}
		if seq := setString(t, s, 0, "next", "v", 0, 0); seq != uint64(len(want)+round+1) {
			t.Errorf("round %d: next seq %d", round, seq)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLargeValuesSeparated: values of 4 KiB or more kept in Pebble (not
// in the change log: ValueLogMin) go to its blob files (value
// separation); they read back whole after overwrites, flushes and a
// reopen.
func TestLargeValuesSeparated(t *testing.T) {
	dir := t.TempDir()
	c := newClock(t0)
	opts := materialize.Options{Dir: dir, Now: c.Now, MemTableSize: 256 << 10, ValueLogMin: -1}
	s, err := materialize.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	val := func(i, round int) string {
		return strings.Repeat(fmt.Sprintf("%d.%d|", i, round), 20<<10/8)
	}
	for round := range 2 {
		for i := range 300 {
			setString(t, s, 0, fmt.Sprint("big", i), val(i, round), 0, 0)
		}
	}
	check := func(s *materialize.Store) {
		t.Helper()
		v := s.View()
		for i := range 300 {
			m, ok, err := v.Meta(0, []byte(fmt.Sprint("big", i)))
			if err != nil || !ok || string(m.Value) != val(i, 1) {
				t.Fatalf("big%d: %v %v, %d bytes", i, ok, err, len(m.Value))
			}
		}
	}
	check(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	blobs, _ := filepath.Glob(filepath.Join(dir, "*.blob"))
	if len(blobs) == 0 {
		t.Error("no blob files: the large values were not separated")
	}
	if s, err = materialize.Open(opts); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check(s)
}
