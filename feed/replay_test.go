package feed_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/feed"
	"github.com/sediment-dev/sediment/materialize"
)

// TestReplayRetention: a request from before the oldest retained record
// gets ErrNotRetained naming it; from the oldest on, every retained record
// is there. A store reopened replays its SWAPDBs from the records written
// before the reopen (SwapRecords' scan).
func TestReplayRetention(t *testing.T) {
	dir := t.TempDir()
	opts := materialize.Options{Dir: dir, ChangeLogSegmentSize: 4 << 10, ChangeLogRetention: 50}
	s, err := materialize.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	write := func(s *materialize.Store, evs ...codec.Event) {
		t.Helper()
		if _, err := s.Write(func(*materialize.View) ([]codec.Event, error) { return evs, nil }); err != nil {
			t.Fatal(err)
		}
	}
	write(s, codec.SetMetaEvent(1, []byte("in1"), strMeta("v"), 0))
	write(s, codec.SwapDBEvent(0, 1)) // record 2: logical 0 is storage 1 from now on
	for i := range 400 {
		write(s, codec.SetMetaEvent(1, []byte(fmt.Sprintf("k%d", i)), strMeta("v"), 0))
	}
	if err := s.Close(); err != nil { // Close flushes: the old segments can go
		t.Fatal(err)
	}
	s, err = materialize.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	write(s, codec.SetMetaEvent(1, []byte("more"), strMeta("v"), 0)) // pruning runs after a commit
	// Pruning goes on in the background: wait until the oldest record
	// stays put.
	oldest := s.FirstSeq()
	for deadline := time.Now().Add(5 * time.Second); ; {
		time.Sleep(100 * time.Millisecond)
		if now := s.FirstSeq(); now != oldest && time.Now().Before(deadline) {
			oldest = now
			continue
		}
		break
	}
	if oldest <= 1 {
		t.Fatalf("oldest retained record %d: the retention dropped nothing", oldest)
	}
	var nr *feed.ErrNotRetained
	if _, _, err := feed.Replay(s, "p", feed.Cursor{Seq: 1}, 10, feed.ReplayFilter{}, 0); !errors.As(err, &nr) || nr.Oldest != oldest || nr.From != 1 {
		t.Fatalf("Replay from 1: %v, want ErrNotRetained naming %d", err, oldest)
	}
	next, evs, err := feed.Replay(s, "p", feed.Cursor{}, feed.ReplayMax, feed.ReplayFilter{}, 0)
	if err != nil || next.Seq != s.LastSeq()+1 || uint64(len(evs)) != s.LastSeq()-oldest+1 {
		t.Fatalf("Replay from 0: next %d, %d events, %v; want %d records from %d", next, len(evs), err, s.LastSeq(), oldest)
	}
	// Every retained SET went to storage db 1, which is logical db 0
	// since the SWAPDB of record 2 (before the reopen and before the
	// retained records).
	for _, e := range evs {
		m, err := feed.Decode(e)
		if err != nil || m.DB == nil || *m.DB != 0 {
			t.Fatalf("replayed event %s: logical db %v, want 0 (%v)", e, m.DB, err)
		}
	}
	// A reply bounded in bytes leaves the rest for next, which may be
	// inside a record; paging that way gives every event once.
	all, cur := 0, feed.Cursor{Seq: oldest}
	for cur.Seq <= s.LastSeq() {
		next, evs, err := feed.Replay(s, "p", cur, 100, feed.ReplayFilter{}, 1000)
		if err != nil || len(evs) == 0 || next == cur {
			t.Fatalf("Replay from %+v within 1000 bytes: next %+v, %d events, %v", cur, next, len(evs), err)
		}
		size := 0
		for _, e := range evs {
			size += len(e) + 1
		}
		if size > 1000 {
			t.Fatalf("Replay within 1000 bytes gave %d bytes", size)
		}
		all, cur = all+len(evs), next
	}
	if uint64(all) != s.LastSeq()-oldest+1 {
		t.Fatalf("paged by bytes: %d events, want %d", all, s.LastSeq()-oldest+1)
	}
}

// TestReplaySwapBeforeReopen: the db map of records written before a
// reopen comes from the scan of the retained log: a SET in storage db 1
// before SWAPDB 0 1 is logical db 1, after it logical db 0.
func TestReplaySwapBeforeReopen(t *testing.T) {
	opts := materialize.Options{Dir: t.TempDir()}
	s, err := materialize.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, evs := range [][]codec.Event{
		{codec.SetMetaEvent(1, []byte("before"), strMeta("v"), 0)},
		{codec.SwapDBEvent(0, 1)},
		{codec.SetMetaEvent(1, []byte("after"), strMeta("v"), 0)},
	} {
		if _, err := s.Write(func(*materialize.View) ([]codec.Event, error) { return evs, nil }); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	if s, err = materialize.Open(opts); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, evs, err := feed.Replay(s, "p", feed.Cursor{Seq: 1}, 10, feed.ReplayFilter{Type: "string"}, 0)
	if err != nil || len(evs) != 2 {
		t.Fatalf("Replay: %d events, %v", len(evs), err)
	}
	for i, want := range []int{1, 0} {
		if m, err := feed.Decode(evs[i]); err != nil || *m.DB != want {
			t.Fatalf("event %d (%s): db %v, want %d (%v)", i, evs[i], *m.DB, want, err)
		}
	}
}

// TestReplayInsideARecord: a record of many events (an EXEC) larger than
// the byte bound is paged event by event (next.I), every event once, in
// order.
func TestReplayInsideARecord(t *testing.T) {
	s, err := materialize.Open(materialize.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var evs []codec.Event
	for i := range 300 {
		evs = append(evs, codec.SetMetaEvent(0, []byte(fmt.Sprintf("key:%03d", i)), strMeta("v"), 0))
	}
	if _, err := s.Write(func(*materialize.View) ([]codec.Event, error) { return evs, nil }); err != nil {
		t.Fatal(err)
	}
	var got []string
	cur := feed.Cursor{}
	for pages := 0; cur.Seq <= s.LastSeq(); pages++ {
		if pages > 1000 {
			t.Fatal("no end")
		}
		next, out, err := feed.Replay(s, "p", cur, 10, feed.ReplayFilter{}, 2000)
		if err != nil || next == cur {
			t.Fatalf("from %+v: next %+v, %v", cur, next, err)
		}
		for _, p := range out {
			m, _ := feed.Decode(p)
			got = append(got, *m.Key)
		}
		cur = next
	}
	if len(got) != 300 {
		t.Fatalf("%d events, want 300", len(got))
	}
	for i, k := range got {
		if k != fmt.Sprintf("key:%03d", i) {
			t.Fatalf("event %d is %s", i, k)
		}
	}
}
