package streams_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/keyspace"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/streams"
)

// fakeRefs is a consumer-group stand-in for ACKED and DELREF trims: the
// IDs in ref are referenced.
type fakeRefs struct{ ref map[codec.ID]bool }

func (f fakeRefs) Referenced(id codec.ID) (bool, error) { return f.ref[id], nil }
func (f fakeRefs) ReleaseRange(first, last codec.ID) error {
	for id := range f.ref {
		if !id.Less(first) && !last.Less(id) {
			delete(f.ref, id)
		}
	}
	return nil
}

// mustCheck fails t unless the store passes sediment check: for streams,
// node keys in ID order, every entry in one node, live counts, the node
// count and the head summary (materialize/check_streams.go).
func mustCheck(t *testing.T, s *materialize.Store, what string) {
	t.Helper()
	rep, err := s.Check(0)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range rep.Violations {
		t.Errorf("after %s: %v", what, v)
	}
	if rep.NumViolations > 0 {
		t.FailNow()
	}
}

// writeLegacyStream writes a stream of n entries 1-0..n-0 whose metadata
// is in the 82-byte form of before node state (codec.StreamMeta.Legacy).
func writeLegacyStream(t *testing.T, s *materialize.Store, key string, n int) {
	t.Helper()
	_, err := s.Write(func(*materialize.View) ([]codec.Event, error) {
		var evs []codec.Event
		for i := 1; i <= n; i++ {
			evs = append(evs, codec.XAddEvent(0, []byte(key), id(uint64(i), 0), [][]byte{[]byte("f"), []byte(fmt.Sprint(i))}))
		}
		m := codec.Meta{Type: codec.TypeStream, Stream: codec.StreamMeta{Legacy: true,
			Length: uint64(n), FirstID: id(1, 0), LastID: id(uint64(n), 0), EntriesAdded: uint64(n)}}
		return append(evs, codec.SetMetaEvent(0, []byte(key), m, 0)), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if b, ok, err := s.View().Get(codec.MetaKey(0, []byte(key))); err != nil || !ok || len(b) != 82 {
		t.Fatalf("legacy meta of %d bytes, %v", len(b), err)
	}
}

// TestNodesRandomCheck runs random XADDs (with MAXLEN and MINID trims,
// '~' and exact, LIMIT, KEEPREF, DELREF and ACKED), XTRIMs, XDELs and
// multi-entry adds under changing stream-node-max-bytes and -entries, on
// new streams and on streams written before node state (migrated on
// their first write), and checks the store after every command: node
// keys, node count and head summary agree with the entries.
func TestNodesRandomCheck(t *testing.T) {
	configs := []streams.Config{
		{NodeMaxEntries: 100, NodeMaxBytes: 4096, IDMPDurationS: 1},
		{NodeMaxEntries: 5, NodeMaxBytes: 4096, IDMPDurationS: 1},
		{NodeMaxEntries: 3, NodeMaxBytes: 100, IDMPDurationS: 1},
		{NodeMaxEntries: 0, NodeMaxBytes: 300, IDMPDurationS: 1},
		{NodeMaxEntries: 1, NodeMaxBytes: 4096, IDMPDurationS: 1},
	}
	rounds := 24
	if testing.Short() {
		rounds = 6
	}
	for round := range rounds {
		r := rand.New(rand.NewPCG(uint64(round), 7))
		s, c := open(t)
		key := "s"
		var added []codec.ID
		if round%3 == 2 {
			n := 50 + r.IntN(300)
			writeLegacyStream(t, s, key, n)
			for i := 1; i <= n; i++ {
				added = append(added, id(uint64(i), 0))
			}
			c.Advance(int64(n) + 10)
		}
		cfg := configs[r.IntN(len(configs))]
		refs := fakeRefs{ref: map[codec.ID]bool{}}
		fields := func() [][]byte {
			fv := [][]byte{[]byte("f"), []byte(strings.Repeat("v", r.IntN(80)))}
			if r.IntN(4) == 0 {
				fv = append(fv, []byte("g"), []byte(fmt.Sprint(r.IntN(1000))))
			}
			return fv
		}
		randTrim := func() streams.Trim {
			tr := streams.Trim{Strategy: streams.TrimMaxLen, MaxLen: uint64(r.IntN(60)), Approx: r.IntN(2) == 0, NodeSize: uint64(cfg.NodeMaxEntries)}
			if r.IntN(3) == 0 && len(added) > 0 {
				tr.Strategy, tr.MinID = streams.TrimMinID, added[r.IntN(len(added))]
			}
			if tr.Approx && r.IntN(3) == 0 {
				tr.Limit = int64(1 + r.IntN(30))
			}
			switch r.IntN(6) {
			case 0:
				tr.Policy, tr.Refs = streams.DelRef, refs
			case 1:
				tr.Policy, tr.Refs = streams.Acked, refs
			}
			return tr
		}
		for step := range 250 {
			c.Advance(int64(r.IntN(3)))
			var what string
			_, err := s.Write(func(v *materialize.View) ([]codec.Event, error) {
				switch op := r.IntN(20); {
				case op == 0:
					cfg = configs[r.IntN(len(configs))]
					what = fmt.Sprintf("config %+v", cfg)
					return nil, nil
				case op < 3 && len(added) > 0:
					var ids []codec.ID
					for range 1 + r.IntN(6) {
						ids = append(ids, added[r.IntN(len(added))])
					}
					what = fmt.Sprintf("XDEL %v", ids)
					_, evs, err := streams.Del(v, 0, []byte(key), ids)
					return evs, err
				case op < 5:
					tr := randTrim()
					what = fmt.Sprintf("XTRIM %+v", tr)
					_, evs, err := streams.TrimStream(v, 0, []byte(key), tr)
					return evs, err
				case op == 5:
					fvs := [][][]byte{fields(), fields(), fields()}
					ids, evs, err := streams.AddAll(v, 0, []byte(key), fvs)
					added = append(added, ids...)
					what = fmt.Sprintf("AddAll %v", ids)
					return evs, err
				default:
					a := streams.AddArgs{ID: streams.IDSpec{Auto: true}, Config: cfg}
					if op < 14 {
						tr := randTrim()
						a.Trim = &tr
					}
					got, _, evs, err := streams.Add(v, 0, []byte(key), fields(), a)
					if err == nil {
						added = append(added, got)
						if r.IntN(3) == 0 {
							refs.ref[got] = true
						}
					}
					what = fmt.Sprintf("XADD %v trim %+v", got, a.Trim)
					return evs, err
				}
			})
			if err != nil {
				t.Fatalf("round %d step %d %s: %v", round, step, what, err)
			}
			mustCheck(t, s, fmt.Sprintf("round %d step %d: %s", round, step, what))
		}
		m, _, _ := streams.Meta(s.View(), 0, []byte(key))
		if m.Stream.Legacy {
			t.Errorf("round %d: still legacy", round)
		}
	}
}

// TestNodesMigration: a stream written before node state reports the
// entry-count model's radix-tree-keys until its first write, which makes
// its entries one record of that many nodes; the next XADD opens a node,
// and '~' trims take the record in pieces of ⌈live/count⌉ entries.
func TestNodesMigration(t *testing.T) {
	s, c := open(t)
	writeLegacyStream(t, s, "old", 250)
	if m := meta(t, s, "old"); !m.Legacy || streams.RadixTreeKeys(m, 0) != 3 {
		t.Fatalf("legacy meta %+v: %d keys", m, streams.RadixTreeKeys(m, 0))
	}
	mustCheck(t, s, "legacy stream")
	c.Advance(1000)
	tr := streams.Trim{Strategy: streams.TrimMaxLen, MaxLen: 100, Approx: true}
	if _, ok, err := tryAdd(t, s, "old", fv1, streams.AddArgs{ID: streams.IDSpec{Auto: true}, Trim: &tr}); err != nil || !ok {
		t.Fatal(err)
	}
	// 251 entries: the record (3 nodes, 250 live) and the new tail. A
	// piece of 84 goes (167 left >= 100); the next, 83, would leave 84.
	m := meta(t, s, "old")
	if m.Legacy || m.Length != 167 || m.Nodes != 3 || m.Tail.Live != 1 || !m.HeadMigrated || m.HeadLive != 166 {
		t.Fatalf("after the first XADD: %+v", m)
	}
	if m.FirstID != id(85, 0) {
		t.Errorf("first ID %v, want 85-0", m.FirstID)
	}
	mustCheck(t, s, "the first XADD")
	// An exact MINID trim: the record's next piece (85..167) goes whole,
	// and in the last one (168..250, a node of its own now) the entries
	// below 200 are marked deleted. XDEL of the rest of it drops it.
	trim(t, s, "old", streams.Trim{Strategy: streams.TrimMinID, MinID: id(200, 0)})
	m = meta(t, s, "old")
	if m.Length != 52 || m.HeadLive != 51 || m.Nodes != 2 || m.HeadMigrated || m.HeadLast != id(250, 0) {
		t.Fatalf("after MINID 200: %+v", m)
	}
	mustCheck(t, s, "MINID 200")
	if n := del(t, s, "old", seqRange(200, 250)...); n != 51 {
		t.Fatalf("deleted %d", n)
	}
	m = meta(t, s, "old")
	if m.Length != 1 || m.Nodes != 1 || !m.HeadLast.IsZero() || m.HeadLive != 0 {
		t.Fatalf("after XDEL of the record's entries: %+v", m)
	}
	mustCheck(t, s, "XDEL")

	// A '~' XTRIM before any XADD takes pieces of the record in the tail.
	writeLegacyStream(t, s, "old2", 250)
	if n := trim(t, s, "old2", streams.Trim{Strategy: streams.TrimMaxLen, MaxLen: 100, Approx: true}); n != 84 {
		t.Fatalf("trimmed %d, want 84", n)
	}
	if m := meta(t, s, "old2"); m.Nodes != 2 || m.Tail.Count != 2 || m.Tail.First != id(85, 0) || m.Tail.Live != 166 || !m.HeadLast.IsZero() {
		t.Fatalf("after XTRIM ~: %+v", m)
	}
	mustCheck(t, s, "XTRIM ~ of a migrated tail")
	// The tail after a migrated record goes: the record does not become
	// the tail (its size is unknown), and the next XADD opens one.
	writeLegacyStream(t, s, "old3", 250)
	last, ok, err := tryAdd(t, s, "old3", fv1, streams.AddArgs{ID: streams.IDSpec{Auto: true}})
	if err != nil || !ok {
		t.Fatal(err)
	}
	del(t, s, "old3", last)
	if m := meta(t, s, "old3"); m.Nodes != 3 || m.Tail.Count != 0 || m.HeadLive != 250 || !m.HeadMigrated {
		t.Fatalf("after XDEL of the tail: %+v", m)
	}
	mustCheck(t, s, "XDEL of the tail after a migrated record")
	c.Advance(1)
	add(t, s, "old3", streams.IDSpec{Auto: true})
	if m := meta(t, s, "old3"); m.Nodes != 4 || m.Tail.Live != 1 {
		t.Fatalf("after XADD: %+v", m)
	}
	mustCheck(t, s, "XADD without a tail")
}

// TestXAddNodeCost: a capped XADD (MAXLEN ~) that removes nothing reads
// nothing but the (cached) metadata, whatever the stream's node keys; one
// that opens a node writes one node key; the metadata stays under 80 bytes
// (the varint form, codec.StreamMeta). A trim after the first finds the
// head node key by its hint and the node after it by the head's next ID,
// both node keys the writer wrote, which its group cache holds: it makes
// no Pebble point lookup and no iterator. A node of up to PointTrimMax
// entries (60-byte values: about 58 a node) goes as point deletions of
// IDs the node lists (StreamNode.Inner); one of 100 (one-byte values) as
// one range deletion.
func TestXAddNodeCost(t *testing.T) {
	for _, tc := range []struct {
		value  int
		listed bool // a trim lists the IDs it removes (point deletions)
	}{{60, true}, {1, false}} {
		t.Run(fmt.Sprintf("value=%d", tc.value), func(t *testing.T) {
			s, c := open(t)
			fv := [][]byte{[]byte("data"), []byte(strings.Repeat("v", tc.value))}
			tr := &streams.Trim{Strategy: streams.TrimMaxLen, MaxLen: 1000, Approx: true}
			var quiet, opened, trims int
			for i := range 5000 {
				c.Advance(1)
				before := s.IterStats()
				var evs []codec.Event
				_, err := s.Write(func(v *materialize.View) ([]codec.Event, error) {
					var err error
					_, _, evs, err = streams.Add(v, 0, []byte("s"), fv, streams.AddArgs{ID: streams.IDSpec{Auto: true}, Trim: tr})
					return evs, err
				})
				if err != nil {
					t.Fatal(err)
				}
				d := s.IterStats().Sub(before)
				trimmed, sets := false, 0
				for _, e := range evs {
					switch e.Op {
					case codec.OpXTrim:
						if listed := len(e.Args) > 2; listed != tc.listed {
							t.Fatalf("XADD %d: trim of %d args, want IDs listed %v", i, len(e.Args), tc.listed)
						}
						trimmed = true
					case codec.OpXNodeDel:
						trimmed = true
					case codec.OpXNodeSet:
						sets++
					case codec.OpSetMeta:
						if len(e.Args[0]) > 80 {
							t.Fatalf("XADD %d: metadata of %d bytes", i, len(e.Args[0]))
						}
					}
				}
				if sets > 1 {
					t.Fatalf("XADD %d wrote %d node keys", i, sets)
				}
				opened += sets
				if !trimmed && i > 10 {
					quiet++
					if d.Gets != 0 || d.Iterators != 0 || d.MetaLookups != 0 {
						t.Fatalf("XADD %d (no trim) read: %+v", i, d)
					}
				}
				if trimmed {
					if trims++; trims > 1 && (d.Gets != 0 || d.Iterators != 0 || d.MetaLookups != 0) {
						t.Fatalf("XADD %d (trim %d) read: %+v", i, trims, d)
					}
				}
			}
			m := meta(t, s, "s")
			if m.Nodes < 10 || opened < 45 || quiet < 4000 || trims < 35 {
				t.Fatalf("%d nodes, %d opened, %d quiet XADDs, %d trims", m.Nodes, opened, quiet, trims)
			}
			mustCheck(t, s, "5000 capped XADDs")
		})
	}
}

// TestStaleHeadHint: the writer's hint of a stream's head node key
// (View.StreamHeadHint) is only used once checked. A trim decided and
// then abandoned notes its new head without committing, so the hint names
// a node key that exists but is not the head; the next trims must find
// the real head, and a stream deleted and made again must not inherit
// the old one's hint.
func TestStaleHeadHint(t *testing.T) {
	s, c := open(t)
	key := []byte("s")
	cfg := streams.Config{NodeMaxEntries: 2, NodeMaxBytes: 4096}
	add := func(tr *streams.Trim) codec.ID {
		t.Helper()
		c.Advance(1)
		got, ok, err := tryAdd(t, s, string(key), fv1, streams.AddArgs{ID: streams.IDSpec{Auto: true}, Config: cfg, Trim: tr})
		if err != nil || !ok {
			t.Fatalf("XADD: %v, %v", ok, err)
		}
		return got
	}
	var ids []codec.ID
	for range 9 { // nodes of 2 entries: 4 node keys and the tail
		ids = append(ids, add(nil))
	}
	abandoned := errors.New("abandoned")
	if _, err := s.Write(func(v *materialize.View) ([]codec.Event, error) {
		// Drops the first two node keys: the third is noted as the head.
		if _, _, err := streams.TrimStream(v, 0, key, streams.Trim{Strategy: streams.TrimMaxLen, MaxLen: 5}); err != nil {
			return nil, err
		}
		return nil, abandoned
	}); !errors.Is(err, abandoned) {
		t.Fatalf("abandoned trim: %v", err)
	}
	mustCheck(t, s, "after the abandoned trim")
	exact := streams.Trim{Strategy: streams.TrimMaxLen, MaxLen: 8}
	for i := range 6 {
		ids = append(ids, add(&exact))
		mustCheck(t, s, fmt.Sprintf("capped XADD %d", i))
		if m := meta(t, s, string(key)); m.Length != 8 || m.FirstID != ids[len(ids)-8] {
			t.Fatalf("capped XADD %d: length %d, first ID %s; want 8, %s", i, m.Length, m.FirstID, ids[len(ids)-8])
		}
	}

	// Deleted and made again with explicit IDs below the old ones: the
	// hint names a first ID the new stream's nodes may reuse.
	if _, err := s.Write(func(v *materialize.View) ([]codec.Event, error) {
		return []codec.Event{codec.DelKeyEvent(0, key, codec.TypeStream, 0)}, nil
	}); err != nil {
		t.Fatal(err)
	}
	var again []codec.ID
	for i := range 9 {
		id := id(uint64(i+1), 0)
		if _, ok, err := tryAdd(t, s, string(key), fv1, streams.AddArgs{ID: streams.IDSpec{ID: id}, Config: cfg}); err != nil || !ok {
			t.Fatalf("XADD %s: %v, %v", id, ok, err)
		}
		again = append(again, id)
	}
	for i := range 3 {
		again = append(again, add(&exact))
		mustCheck(t, s, fmt.Sprintf("capped XADD %d of the new stream", i))
		if m := meta(t, s, string(key)); m.Length != 8 || m.FirstID != again[len(again)-8] {
			t.Fatalf("new stream, capped XADD %d: length %d, first ID %s; want 8, %s", i, m.Length, m.FirstID, again[len(again)-8])
		}
	}
}

// TestNodesAfterXSetID: XSETID may lower a stream's last ID below deleted
// entries (Redis 7.0 checks it against the top live entry only), so a
// node can close below its own last entry, and nodes can be made below
// the ID a node key named as its next node (StreamNode.Next) when the
// tail it named went. Neither may write a next ID that does not hold: the
// XADDs succeed, and the store check (which compares every next ID with
// the node after it) passes after each command, but for what it takes
// for corruption in such a stream: a last ID below a node's last entry or
// the max-deleted ID; in the first case, where the new entries fall in
// the old node's ID range, the check's count of the nodes' entries does
// not hold either (a limit of the node model, older than next IDs), and
// only the node values and their next IDs are checked.
func TestNodesAfterXSetID(t *testing.T) {
	s, _ := open(t)
	loose := false
	do := func(what string, f func(v *materialize.View) ([]codec.Event, error)) {
		t.Helper()
		if _, err := s.Write(f); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		rep, err := s.Check(0)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range rep.Violations {
			if !loose || v.Check == "stream node next ID" || v.Check == "stream node" {
				t.Fatalf("after %s: %v", what, v)
			}
		}
	}
	xadd := func(key string, ms, seq uint64, cfg streams.Config) {
		t.Helper()
		do(fmt.Sprintf("XADD %s %d-%d", key, ms, seq), func(v *materialize.View) ([]codec.Event, error) {
			_, _, evs, err := streams.Add(v, 0, []byte(key), fv1, streams.AddArgs{ID: explicit(ms, seq), Config: cfg})
			return evs, err
		})
	}
	xdel := func(key string, ids ...codec.ID) {
		t.Helper()
		do(fmt.Sprintf("XDEL %s %v", key, ids), func(v *materialize.View) ([]codec.Event, error) {
			_, evs, err := streams.Del(v, 0, []byte(key), ids)
			return evs, err
		})
	}
	xsetid := func(key string, ms, seq uint64) {
		t.Helper()
		do(fmt.Sprintf("XSETID %s %d-%d", key, ms, seq), func(v *materialize.View) ([]codec.Event, error) {
			_, evs, err := streams.SetID(v, 0, []byte(key), id(ms, seq), streams.SetIDArgs{EntriesAdded: -1})
			return evs, err
		})
	}
	trim := func(key string, maxLen uint64) {
		t.Helper()
		do(fmt.Sprintf("XTRIM %s MAXLEN %d", key, maxLen), func(v *materialize.View) ([]codec.Event, error) {
			_, evs, err := streams.TrimStream(v, 0, []byte(key), streams.Trim{Strategy: streams.TrimMaxLen, MaxLen: maxLen})
			return evs, err
		})
	}

	// A tail of two entries, the second deleted, closes when an XADD
	// comes below its last entry: the node has no next ID.
	two := streams.Config{NodeMaxEntries: 2, NodeMaxBytes: 4096}
	loose = false
	xadd("a", 1, 0, two)
	xadd("a", 2, 0, two)
	xdel("a", id(2, 0))
	xsetid("a", 1, 5)
	xadd("a", 1, 6, two)
	xadd("a", 1, 7, two)
	xadd("a", 3, 0, two)
	trim("a", 1)

	// A migrated record stays a node key when the tail after it goes, and
	// must stop naming it: the nodes made after an XSETID start below it.
	loose = false
	s, _ = open(t) // the check covers every key: a store without stream a
	writeLegacyStream(t, s, "b", 250)
	hundred := streams.Config{NodeMaxEntries: 100, NodeMaxBytes: 1 << 20}
	xadd("b", 251, 0, hundred)
	xdel("b", id(251, 0))
	xsetid("b", 250, 5)
	for seq := uint64(6); seq <= 105; seq++ {
		xadd("b", 250, seq, hundred)
	}
	xadd("b", 251, 0, hundred)
	xadd("b", 252, 0, hundred)
	for _, n := range []uint64{150, 100, 50, 1} {
		trim("b", n)
	}
	if m := meta(t, s, "b"); m.Length != 1 || m.FirstID != id(252, 0) {
		t.Fatalf("after the trims: %+v", m)
	}

	// A migrated record's last ID is the stream's last when it was
	// migrated (here raised by XSETID, of no entry): trimmed down to two
	// live entries, the record does not name them by its first and last.
	s, _ = open(t)
	writeLegacyStream(t, s, "c", 250)
	xsetid("c", 999, 0)
	var dels []codec.ID
	for i := uint64(1); i <= 244; i++ {
		dels = append(dels, id(i, 0))
	}
	xdel("c", dels...)
	for _, n := range []uint64{4, 2, 0} {
		do(fmt.Sprintf("XTRIM c MAXLEN (approximate: %v) %d", n > 0, n), func(v *materialize.View) ([]codec.Event, error) {
			_, evs, err := streams.TrimStream(v, 0, []byte("c"), streams.Trim{Strategy: streams.TrimMaxLen, MaxLen: n, Approx: n > 0})
			return evs, err
		})
	}
	if m := meta(t, s, "c"); m.Length != 0 {
		t.Fatalf("after XTRIM MAXLEN 0: %+v", m)
	}

	// A full tail whose last entry is deleted, then an XSETID below that
	// entry: the tail's range ends at the new last ID, so the node it
	// closes into does not reach into the IDs of the nodes made after it,
	// and one XDEL of entries in both charges each to its own node.
	s, _ = open(t)
	three := streams.Config{NodeMaxEntries: 3, NodeMaxBytes: 4096}
	for ms := uint64(1); ms <= 3; ms++ {
		xadd("d", ms, 0, three)
	}
	xdel("d", id(3, 0))
	xsetid("d", 2, 5)
	for seq := uint64(6); seq <= 8; seq++ {
		xadd("d", 2, seq, three)
	}
	xadd("d", 4, 0, three)
	xdel("d", id(1, 0), id(2, 7))
	if m := meta(t, s, "d"); m.Length != 4 || m.FirstID != id(2, 0) {
		t.Fatalf("after XDEL d 1-0 2-7: %+v", m)
	}
	// Under a new name the writer has no hint of the head node key, whose
	// reverse seek from the head's last ID meets the node after it first.
	// The trims then follow redis-server 7.0 on the same commands: the
	// head's last entry, deleted, is not below 2-7, so '~' removes nothing
	// and an exact trim marks 2-0 deleted, leaving the head node without
	// live entries (XINFO STREAM: length 3, radix-tree-keys 3).
	do("RENAME d e", func(v *materialize.View) ([]codec.Event, error) {
		_, evs, err := keyspace.Rename(v, 0, []byte("d"), []byte("e"), false)
		return evs, err
	})
	for _, approx := range []bool{true, false} {
		var n uint64
		do(fmt.Sprintf("XTRIM e MINID (approximate: %v) 2-7", approx), func(v *materialize.View) ([]codec.Event, error) {
			got, evs, err := streams.TrimStream(v, 0, []byte("e"), streams.Trim{Strategy: streams.TrimMinID, MinID: id(2, 7), Approx: approx})
			n = got
			return evs, err
		})
		if want := map[bool]uint64{true: 0, false: 1}[approx]; n != want {
			t.Fatalf("XTRIM e MINID (approximate: %v) 2-7 = %d, redis-server 7.0: %d", approx, n, want)
		}
	}
	if m := meta(t, s, "e"); m.Length != 3 || m.Nodes != 3 || m.FirstID != id(2, 6) {
		t.Fatalf("after the trims: %+v, redis-server 7.0: length 3, 3 nodes, first 2-6", m)
	}

	// After an XSETID below a deleted last entry, a later node may end at
	// that same ID (3-0 added again): the head is named by its first ID,
	// so an XDEL in the later node does not take it for the head, and a
	// trim without the writer's hint (a new name) finds the right node.
	s, _ = open(t)
	for ms := uint64(1); ms <= 3; ms++ {
		xadd("g", ms, 0, three)
	}
	xdel("g", id(3, 0))
	xsetid("g", 2, 5)
	for _, e := range []codec.ID{id(2, 6), id(2, 7), id(3, 0), id(4, 0)} {
		xadd("g", e.Ms, e.Seq, three)
	}
	xdel("g", id(2, 6))
	do("RENAME g h", func(v *materialize.View) ([]codec.Event, error) {
		_, evs, err := keyspace.Rename(v, 0, []byte("g"), []byte("h"), false)
		return evs, err
	})
	for _, c := range []struct {
		maxLen, n uint64
		ids       []codec.ID
	}{{3, 2, []codec.ID{id(2, 7), id(3, 0), id(4, 0)}}, {1, 2, []codec.ID{id(4, 0)}}} {
		var n uint64
		do(fmt.Sprintf("XTRIM h MAXLEN ~ %d", c.maxLen), func(v *materialize.View) ([]codec.Event, error) {
			got, evs, err := streams.TrimStream(v, 0, []byte("h"), streams.Trim{Strategy: streams.TrimMaxLen, MaxLen: c.maxLen, Approx: true})
			n = got
			return evs, err
		})
		if got := rangeIDs(t, s, "h", codec.ID{}, codec.MaxID, 10, false); n != c.n || !slices.Equal(got, c.ids) {
			t.Fatalf("XTRIM h MAXLEN ~ %d = %d, leaving %v; redis-server 7.0: %d, leaving %v", c.maxLen, n, got, c.n, c.ids)
		}
	}

	// An exact MINID trim leaves the stream empty with a node of deleted
	// entries; XSETID may then go below that node's first ID (Redis 7.0
	// checks nothing on an empty stream), and the entries added after it
	// must not land below it: the node goes (dropNodesBelow).
	s, _ = open(t)
	xadd("f", 5, 0, streams.Config{})
	xadd("f", 6, 0, streams.Config{})
	xdel("f", id(6, 0))
	do("XTRIM f MINID 5-5", func(v *materialize.View) ([]codec.Event, error) {
		_, evs, err := streams.TrimStream(v, 0, []byte("f"), streams.Trim{Strategy: streams.TrimMinID, MinID: id(5, 5)})
		return evs, err
	})
	if m := meta(t, s, "f"); m.Length != 0 || m.Nodes != 1 {
		t.Fatalf("after XTRIM f MINID 5-5: %+v, redis-server 7.0: length 0, 1 node", m)
	}
	xsetid("f", 1, 0)
	xadd("f", 2, 0, streams.Config{})
	xadd("f", 3, 0, streams.Config{})
	if got := rangeIDs(t, s, "f", codec.ID{}, codec.MaxID, 10, false); !slices.Equal(got, []codec.ID{id(2, 0), id(3, 0)}) {
		t.Fatalf("XRANGE f - + = %v, redis-server 7.0: [2-0 3-0]", got)
	}
	xdel("f", id(2, 0))
	trim("f", 0)
	if m := meta(t, s, "f"); m.Length != 0 || m.Nodes != 0 || m.LastID != id(3, 0) {
		t.Fatalf("after XDEL f 2-0 and XTRIM f MAXLEN 0: %+v, redis-server 7.0: length 0, no node, last ID 3-0", m)
	}
}

// TestMigratedRecordMarkedEmpty: an exact MINID trim that removes a piece
// of a migrated record and marks the rest deleted leaves the record
// without live entries; its key stays at its first ID (the stream's new
// first entry is in the tail after it), so the record and the head
// summary keep a first ID at or below their last.
func TestMigratedRecordMarkedEmpty(t *testing.T) {
	s, _ := open(t)
	writeLegacyStream(t, s, "m", 150)
	// As if 151-0 had been added and deleted before the upgrade: the last
	// ID, which the record ends at, names no entry.
	if _, err := s.Write(func(*materialize.View) ([]codec.Event, error) {
		m := codec.Meta{Type: codec.TypeStream, Stream: codec.StreamMeta{Legacy: true,
			Length: 150, FirstID: id(1, 0), LastID: id(151, 0), MaxDeletedID: id(151, 0), EntriesAdded: 151}}
		return []codec.Event{codec.SetMetaEvent(0, []byte("m"), m, 0)}, nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		what string
		f    func(v *materialize.View) ([]codec.Event, error)
	}{
		{"XADD m 300-0", func(v *materialize.View) ([]codec.Event, error) {
			_, _, evs, err := streams.Add(v, 0, []byte("m"), fv1, streams.AddArgs{ID: explicit(300, 0)})
			return evs, err
		}},
		{"XTRIM m MINID 151-0", func(v *materialize.View) ([]codec.Event, error) {
			_, evs, err := streams.TrimStream(v, 0, []byte("m"), streams.Trim{Strategy: streams.TrimMinID, MinID: id(151, 0)})
			return evs, err
		}},
		{"XADD m 301-0", func(v *materialize.View) ([]codec.Event, error) {
			_, _, evs, err := streams.Add(v, 0, []byte("m"), fv1, streams.AddArgs{ID: explicit(301, 0)})
			return evs, err
		}},
	} {
		if _, err := s.Write(step.f); err != nil {
			t.Fatalf("%s: %v", step.what, err)
		}
		mustCheck(t, s, "after "+step.what)
	}
	if m := meta(t, s, "m"); m.Length != 2 || m.FirstID != id(300, 0) || m.HeadFirst != id(1, 0) || m.HeadLive != 0 {
		t.Fatalf("after the trim: %+v", m)
	}
}
