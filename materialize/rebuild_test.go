package materialize_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
)

// sameState fails unless a and b hold the same Pebble keys and values.
func sameState(tb testing.TB, a, b *materialize.Store) {
	tb.Helper()
	diffs, n, err := materialize.CompareStores(a, b, 5)
	if err != nil {
		tb.Fatal(err)
	}
	for _, d := range diffs {
		tb.Error(d)
	}
	if n > 0 {
		tb.Fatalf("%d keys differ", n)
	}
}

// churn writes a mix of records: strings with and without TTLs, streams
// with a group, deletions, a SWAPDB and a FLUSHDB.
func churn(tb testing.TB, s *materialize.Store, round int) {
	for i := range 40 {
		k := fmt.Sprintf("s%d", (round*7+i)%25)
		var exp int64
		if i%3 == 0 {
			exp = t0 + int64(1000*(i+1))
		}
		v := s.View()
		m, ok, err := v.Meta(0, []byte(k))
		if err != nil {
			tb.Fatal(err)
		}
		var prev int64
		if ok {
			prev = m.ExpireAtMs
		}
		setString(tb, s, 0, k, fmt.Sprintf("v%d-%d", round, i), exp, prev)
	}
	write(tb, s, streamEvents(1, fmt.Sprintf("x%d", round%4), 0)...)
	if round%3 == 1 {
		write(tb, s, codec.DelKeyEvent(1, []byte(fmt.Sprintf("x%d", (round+1)%4)), codec.TypeStream, 0))
	}
	if round%4 == 2 {
		write(tb, s, codec.SwapDBEvent(1, 2))
	}
	if round%5 == 4 {
		flushDB(tb, s, 3)
	}
	setString(tb, s, 3, fmt.Sprintf("f%d", round), "x", 0, 0)
	// A value kept in the change log (Options.ValueLogMin), overwritten
	// every fifth round: retention moves some into the store.
	setString(tb, s, 0, fmt.Sprintf("big%d", round%5), strings.Repeat(fmt.Sprint(round, "|"), 2500), 0, 0)
}

// TestRebuildFromSnapshotAndLog: a snapshot plus the change log after it,
// applied by Rebuild, gives the live store's state key for key and value
// for value, with the same records (ULIDs and times) in its log; the
// retention keeps the records after the newest snapshot; the records
// before it may go.
func TestRebuildFromSnapshotAndLog(t *testing.T) {
	dir := t.TempDir()
	c := newClock(t0)
	s := openStore(t, materialize.Options{Dir: dir, Now: c.Now, ChangeLogSegmentSize: 4 << 10,
		ChangeLogRetention: 20, SnapshotKeep: 2})
	for round := range 10 {
		churn(t, s, round)
	}
	old, err := s.TakeSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	if old.Seq != s.LastSeq() || filepath.Base(old.Path) != fmt.Sprintf("%020d", old.Seq) {
		t.Fatalf("snapshot %+v at record %d", old, s.LastSeq())
	}
	for round := 10; round < 20; round++ {
		churn(t, s, round)
	}
	snap, err := s.TakeSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	if again, err := s.TakeSnapshot(); err != nil || again != snap {
		t.Fatalf("a snapshot with no new record: %+v, %v; want %+v", again, err, snap)
	}
	for round := 20; round < 40; round++ {
		churn(t, s, round)
	}
	// Retention (20 records) would have dropped most records after the
	// newest snapshot; the hold keeps them.
	if first := s.FirstSeq(); first > snap.Seq+1 {
		t.Fatalf("oldest record %d: the log lost records after the snapshot at %d", first, snap.Seq)
	}
	// The older snapshot's successors may go: it can no longer rebuild.
	snaps, err := materialize.ListSnapshots(dir)
	if err != nil || len(snaps) != 2 || snaps[0] != old || snaps[1] != snap {
		t.Fatalf("ListSnapshots = %+v, %v", snaps, err)
	}

	to := filepath.Join(t.TempDir(), "rebuilt")
	info, err := materialize.Rebuild(snap.Path, dir, to, materialize.Options{Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	if info.Snapshot != snap.Seq || info.First != snap.Seq+1 || info.Last != s.LastSeq() || info.Applied != int(s.LastSeq()-snap.Seq) {
		t.Fatalf("Rebuild = %+v; snapshot %d, live store at %d", info, snap.Seq, s.LastSeq())
	}
	r := openStore(t, materialize.Options{Dir: to, Now: c.Now})
	sameState(t, s, r)
	live, rebuilt := records(t, s, snap.Seq+1), records(t, r, snap.Seq+1)
	if len(live) != len(rebuilt) {
		t.Fatalf("%d records after the snapshot, %d rebuilt", len(live), len(rebuilt))
	}
	for i := range live {
		a, b := live[i], rebuilt[i]
		if a.Seq != b.Seq || a.ULID != b.ULID || a.TimeMs != b.TimeMs || len(a.Events) != len(b.Events) {
			t.Fatalf("record %d: live %+v, rebuilt %+v", a.Seq, a, b)
		}
		for j := range a.Events {
			if !eventsEqual(a.Events[j], b.Events[j]) {
				t.Fatalf("record %d event %d differs", a.Seq, j)
			}
		}
	}
	// The rebuilt store goes on from there: its next record follows.
	if seq := setString(t, r, 0, "after", "v", 0, 0); seq != s.LastSeq()+1 {
		t.Fatalf("first record after the rebuild: %d", seq)
	}
	last := records(t, r, r.LastSeq())[0]
	if bytes.Compare(last.ULID[:], live[len(live)-1].ULID[:]) <= 0 {
		t.Fatal("a record decided after the rebuild has a smaller ULID than the applied ones")
	}
}

// TestRebuildRefusesGap: a snapshot whose successors the retention dropped
// cannot be rebuilt: ErrLogGap names both sequences.
func TestRebuildRefusesGap(t *testing.T) {
	dir := t.TempDir()
	c := newClock(t0)
	s := openStore(t, materialize.Options{Dir: dir, Now: c.Now, ChangeLogSegmentSize: 2 << 10, ChangeLogRetention: 10})
	setString(t, s, 0, "k", "v", 0, 0)
	cp := filepath.Join(t.TempDir(), "cp")
	checkpoint(t, s, cp)
	for range 2000 {
		setString(t, s, 0, "k", "v", 0, 0)
	}
	deadline := time.Now().Add(5 * time.Second)
	for s.FirstSeq() <= 100 { // pruning runs in the background
		if time.Now().After(deadline) {
			t.Fatalf("records not pruned: the oldest is %d", s.FirstSeq())
		}
		setString(t, s, 0, "k", "v", 0, 0)
		time.Sleep(5 * time.Millisecond)
	}
	_, err := materialize.Rebuild(cp, dir, filepath.Join(t.TempDir(), "to"), materialize.Options{Now: c.Now})
	if !errors.Is(err, materialize.ErrLogGap) || !strings.Contains(err.Error(), "the snapshot ends at record 1, the log begins at") {
		t.Fatalf("Rebuild over a gap: %v", err)
	}
	// A destination that holds anything is refused.
	to := t.TempDir()
	setString(t, s, 0, "k", "v", 0, 0)
	if err := os.WriteFile(filepath.Join(to, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := materialize.Rebuild(cp, dir, to, materialize.Options{Now: c.Now}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("Rebuild into a directory holding a file: %v", err)
	}
}

// TestApplyOutOfOrder: Apply takes only the store's next record.
func TestApplyOutOfOrder(t *testing.T) {
	src := openMem(t, newClock(t0))
	dst := openMem(t, newClock(t0))
	setString(t, src, 0, "a", "1", 0, 0)
	setString(t, src, 0, "b", "2", 0, 0)
	recs := records(t, src, 0)
	if _, err := dst.Apply(recs[1]); !errors.Is(err, materialize.ErrRecordOrder) {
		t.Fatalf("Apply of record 2 first: %v", err)
	}
	if dst.LastSeq() != 0 {
		t.Fatalf("a refused record wrote: at %d", dst.LastSeq())
	}
	for _, r := range recs {
		if seq, err := dst.Apply(r); err != nil || seq != r.Seq {
			t.Fatalf("Apply(%d) = %d, %v", r.Seq, seq, err)
		}
	}
	sameState(t, src, dst)
	// A difference is found: a key only one store holds, and a value.
	if err := materialize.RawSet(dst, []byte("Zextra"), nil); err != nil {
		t.Fatal(err)
	}
	setString(t, src, 0, "a", "changed", 0, 0)
	diffs, n, err := materialize.CompareStores(src, dst, 1)
	if err != nil || n != 3 || len(diffs) != 1 { // the A key, a's value, Zextra
		t.Fatalf("CompareStores after two changes: %v, %d, %v", diffs, n, err)
	}
}

// BenchmarkRebuild measures Rebuild from a snapshot plus 20,000 records
// of SETs after it (records/s in the rebuilt store).
func BenchmarkRebuild(b *testing.B) {
	dir := b.TempDir()
	c := newClock(t0)
	s := openStore(b, materialize.Options{Dir: dir, Now: c.Now})
	if _, err := s.TakeSnapshot(); err != nil {
		b.Fatal(err)
	}
	const n = 20000
	pending := make([]*materialize.Pending, 0, n)
	for i := range n {
		k := []byte(fmt.Sprintf("k%d", i%5000))
		pending = append(pending, s.Submit(func(v *materialize.View) ([]codec.Event, error) {
			return []codec.Event{codec.SetMetaEvent(0, k, codec.Meta{Type: codec.TypeString, Value: k}, 0)}, nil
		}))
	}
	for _, p := range pending {
		if _, err := p.Wait(); err != nil {
			b.Fatal(err)
		}
	}
	snaps, err := materialize.ListSnapshots(dir)
	if err != nil || len(snaps) == 0 {
		b.Fatal(err, len(snaps))
	}
	b.ResetTimer()
	for i := range b.N {
		info, err := materialize.Rebuild(snaps[len(snaps)-1].Path, dir, filepath.Join(b.TempDir(), fmt.Sprint(i)), materialize.Options{Now: c.Now})
		if err != nil || info.Applied != n {
			b.Fatal(err, info.Applied)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "records/s")
}
