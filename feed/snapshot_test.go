package feed_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/feed"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/streams"
)

// readAll reads a snapshot page by page with the given bounds, checking
// that each page's place can be read again to the same events.
func readAll(t *testing.T, s *feed.Snapshot, count, maxBytes int) (events [][]byte, pages int) {
	t.Helper()
	var pos feed.SnapshotPos
	for !pos.Done() {
		next, ps, err := s.Page(pos, count, maxBytes, true)
		if err != nil {
			t.Fatal(err)
		}
		again, ps2, err := s.Page(pos, count, maxBytes, true)
		if err != nil || next.Index() != again.Index() || len(ps) != len(ps2) {
			t.Fatalf("page at %d read twice: %d then %d events (%v)", pos.Index(), len(ps), len(ps2), err)
		}
		for i := range ps {
			if !bytes.Equal(ps[i], ps2[i]) {
				t.Fatalf("page at %d read twice: event %d differs", pos.Index(), i)
			}
		}
		if next.Index() != pos.Index()+uint64(len(ps)) {
			t.Fatalf("page at %d: %d events, next at %d", pos.Index(), len(ps), next.Index())
		}
		events, pos = append(events, ps...), next
		pages++
		if pages > 100000 {
			t.Fatal("no end")
		}
	}
	return events, pages
}

// TestSnapshotPages: a large hash comes in events of at most 128 fields;
// pages of any size, ending inside a key, give the same events as one
// page; a page bounded in bytes ends before the event that would not fit
// (the first alone comes truncated); a MATCH that selects few keys makes
// pages that look at 10 keys per COUNT, some empty, before the end.
func TestSnapshotPages(t *testing.T) {
	s, err := materialize.Open(materialize.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	write := func(evs ...codec.Event) {
		t.Helper()
		if _, err := s.Write(func(*materialize.View) ([]codec.Event, error) { return evs, nil }); err != nil {
			t.Fatal(err)
		}
	}
	var fv [][]byte
	for i := range 300 {
		fv = append(fv, []byte(fmt.Sprintf("f%03d", i)), []byte("v"))
	}
	write(codec.ElementsEvent(codec.OpHSet, 0, []byte("h"), fv), codec.SetMetaEvent(0, []byte("h"), codec.Meta{Type: codec.TypeHash, Count: 300}, 0))
	for i := range 200 {
		write(codec.SetMetaEvent(0, []byte(fmt.Sprintf("s%d", i)), codec.Meta{Type: codec.TypeString, Value: []byte("x")}, 0))
	}
	write(codec.SetMetaEvent(0, []byte("big"), codec.Meta{Type: codec.TypeString, Value: bytes.Repeat([]byte("b"), 5000)}, 0))
	st, err := s.PinState()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	snap := feed.NewSnapshot(st, "", feed.SnapshotFilter{DB: -1})
	whole, pages := readAll(t, snap, feed.SnapshotMax, 0)
	if pages != 1 || len(whole) != 3+1+200+1 {
		t.Fatalf("%d events in %d pages", len(whole), pages)
	}
	fields := 0
	for _, p := range whole {
		m, _ := feed.Decode(p)
		if m.Op == "hset" {
			if n := len(m.Args) / 2; n > 128 {
				t.Fatalf("an hset of %d fields", n)
			} else {
				fields += n
			}
		}
	}
	if fields != 300 {
		t.Fatalf("%d fields in the snapshot", fields)
	}
	// The 5 KB string's value lives in the change log (a reference in the
	// store): its event carries the value.
	bigSeen := false
	for _, p := range whole {
		if m, _ := feed.Decode(p); m.Key != nil && *m.Key == "big" {
			bigSeen = m.Meta != nil && m.Meta.Value64 == base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("b"), 5000))
		}
	}
	if !bigSeen {
		t.Fatal("the snapshot's event of the 5 KB string lacks its value")
	}
	for _, count := range []int{1, 2, 3, 7} {
		got, _ := readAll(t, snap, count, 0)
		if len(got) != len(whole) {
			t.Fatalf("COUNT %d: %d events", count, len(got))
		}
		for i := range got {
			if !bytes.Equal(got[i], whole[i]) {
				t.Fatalf("COUNT %d: event %d differs", count, i)
			}
		}
	}
	// Bytes: 8 KB a page; the 5 KB string's event comes alone, truncated.
	got, _ := readAll(t, snap, 100, 8000)
	truncated := 0
	for i, p := range got {
		if strings.Contains(string(p), `"truncated":true`) {
			truncated++
			continue
		}
		if !bytes.Equal(p, whole[i]) {
			t.Fatalf("bytes-bounded: event %d differs", i)
		}
	}
	if len(got) != len(whole) || truncated != 1 {
		t.Fatalf("bytes-bounded: %d events, %d truncated", len(got), truncated)
	}
	// A filter that matches one key of 202: pages of 1 look at 10 keys.
	one := feed.NewSnapshot(st, "", feed.SnapshotFilter{Match: []byte("s199"), DB: -1})
	got, pages = readAll(t, one, 1, 0)
	if len(got) != 1 || pages < 20 {
		t.Fatalf("MATCH s199: %d events in %d pages", len(got), pages)
	}
}

// TestSnapshotStreamNodesAfterXSetID: after an XSETID below a deleted
// last entry, a node made later starts inside the head's range; the
// snapshot still starts the stream's node keys at the head (StreamMeta's
// head first ID), with metadata written before that was kept too (the
// reverse seek then walks down to the node ending at the head's last ID).
func TestSnapshotStreamNodesAfterXSetID(t *testing.T) {
	s, err := materialize.Open(materialize.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	do := func(f func(v *materialize.View) ([]codec.Event, error)) {
		t.Helper()
		if _, err := s.Write(f); err != nil {
			t.Fatal(err)
		}
	}
	three := streams.Config{NodeMaxEntries: 3, NodeMaxBytes: 4096}
	xadd := func(ms, seq uint64) {
		do(func(v *materialize.View) ([]codec.Event, error) {
			_, _, evs, err := streams.Add(v, 0, []byte("g"), [][]byte{[]byte("f"), []byte("v")},
				streams.AddArgs{ID: streams.IDSpec{ID: codec.ID{Ms: ms, Seq: seq}}, Config: three})
			return evs, err
		})
	}
	for ms := uint64(1); ms <= 3; ms++ {
		xadd(ms, 0)
	}
	do(func(v *materialize.View) ([]codec.Event, error) {
		_, evs, err := streams.Del(v, 0, []byte("g"), []codec.ID{{Ms: 3}})
		return evs, err
	})
	do(func(v *materialize.View) ([]codec.Event, error) {
		_, evs, err := streams.SetID(v, 0, []byte("g"), codec.ID{Ms: 2, Seq: 5}, streams.SetIDArgs{EntriesAdded: -1})
		return evs, err
	})
	for _, seq := range []uint64{6, 7, 8} {
		xadd(2, seq)
	}
	xadd(4, 0)
	nodes := func() []string {
		t.Helper()
		st, err := s.PinState()
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		evs, _ := readAll(t, feed.NewSnapshot(st, "", feed.SnapshotFilter{DB: -1}), feed.SnapshotMax, 0)
		var firsts []string
		for _, p := range evs {
			if m, _ := feed.Decode(p); m.Op == "xnode-set" {
				firsts = append(firsts, fmt.Sprint(m.Args))
			}
		}
		return firsts
	}
	if got := nodes(); len(got) != 2 {
		t.Fatalf("the snapshot's node keys: %v, want 2 (1-0 and 2-6)", got)
	}
	// The same metadata without the head's first ID, as written before.
	do(func(v *materialize.View) ([]codec.Event, error) {
		m, _, err := v.Meta(0, []byte("g"))
		if err != nil {
			return nil, err
		}
		m.Stream.HeadFirst = codec.ID{}
		return []codec.Event{codec.SetMetaEvent(0, []byte("g"), m, 0)}, nil
	})
	if got := nodes(); len(got) != 2 {
		t.Fatalf("without the head's first ID, the snapshot's node keys: %v, want 2 (1-0 and 2-6)", got)
	}
}
