package materialize_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
)

// TestGroupCacheMatchesPebble runs random consumer-group and node-key
// changes, range deletions (DEL, COPY onto a stream, XGROUP DESTROY,
// FLUSHALL, node keys removed by range) and failed commit groups through
// the writer, several writes per commit group, and checks in every
// decision that each group, consumer, PEL and node key reads the same
// through the writer's group cache as from Pebble (the group's batch over
// the committed state).
func TestGroupCacheMatchesPebble(t *testing.T) {
	s, err := materialize.Open(materialize.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	type stream struct {
		db  uint8
		key []byte
	}
	streams := []stream{{0, []byte("a")}, {0, []byte("b\x00")}, {1, []byte("a")}}
	const nodeKeys = 6
	names := [][]byte{[]byte("g1"), []byte("g2")}
	consumers := [][]byte{[]byte("c1"), []byte(""), []byte("c\x00")}
	var keys [][]byte
	for _, st := range streams {
		for _, g := range names {
			keys = append(keys, codec.GroupKey(st.db, st.key, g))
			for _, c := range consumers {
				keys = append(keys, codec.ConsumerKey(st.db, st.key, g, c))
			}
			for ms := uint64(1); ms <= 4; ms++ {
				keys = append(keys, codec.PELKey(st.db, st.key, g, codec.ID{Ms: ms}))
			}
		}
		for ms := uint64(1); ms <= nodeKeys; ms++ {
			keys = append(keys, codec.StreamNodeKey(st.db, st.key, codec.ID{Ms: ms}))
		}
	}

	var mu sync.Mutex
	var mismatches []string
	check := func(v *materialize.View) {
		for _, k := range keys {
			got, gok, gerr := v.Get(k)
			want, wok, werr := materialize.GetUncached(v, k)
			if gerr != nil || werr != nil || gok != wok || !bytes.Equal(got, want) {
				mu.Lock()
				mismatches = append(mismatches, fmt.Sprintf("%q: cache %q %v %v, pebble %q %v %v", k, got, gok, gerr, want, wok, werr))
				mu.Unlock()
			}
		}
	}

	r := rand.New(rand.NewPCG(1, 2))
	streamMeta := func(v *materialize.View, st stream) []codec.Event {
		if _, ok, _ := v.Meta(st.db, st.key); ok {
			return nil
		}
		return []codec.Event{codec.SetMetaEvent(st.db, st.key, codec.Meta{Type: codec.TypeStream}, 0)}
	}
	decide := func(op, si, gi, ci int, ms uint64, seed uint64) func(v *materialize.View) ([]codec.Event, error) {
		st, g, c := streams[si], names[gi], consumers[ci]
		return func(v *materialize.View) ([]codec.Event, error) {
			check(v)
			events := streamMeta(v, st)
			switch op {
			case 0, 1, 2: // a group value
				events = append(events, codec.GroupSetEvent(st.db, st.key, g, codec.Group{LastDeliveredID: codec.ID{Ms: seed}, EntriesRead: int64(seed)}))
			case 3, 4: // a consumer value
				events = append(events, codec.ConsumerSetEvent(st.db, st.key, g, c, codec.Consumer{SeenTimeMs: int64(seed), ActiveTimeMs: -1}))
			case 5:
				events = append(events, codec.ConsumerDelEvent(st.db, st.key, g, c))
			case 6, 7, 8: // a delivery
				events = append(events, codec.PELSetEvent(st.db, st.key, g, codec.ID{Ms: ms}, codec.PELEntry{DeliveryTimeMs: int64(seed), DeliveryCount: seed % 5, Consumer: c}, nil))
			case 9, 10: // an acknowledgement
				events = append(events, codec.PELDelEvent(st.db, st.key, g, codec.ID{Ms: ms}, codec.PELEntry{Consumer: c}))
			case 11:
				events = append(events, codec.GroupDelEvent(st.db, st.key, g))
			case 12: // DEL
				if len(events) == 0 {
					events = append(events, codec.DelKeyEvent(st.db, st.key, codec.TypeStream, 0))
				}
			case 13: // COPY of another stream onto st (REPLACE)
				src := streams[(si+1)%len(streams)]
				if _, ok, _ := v.Meta(src.db, src.key); !ok || len(events) > 0 {
					break
				}
				events = append(events, codec.DelKeyEvent(st.db, st.key, codec.TypeStream, 0),
					codec.CopyKeyEvent(st.db, st.key, codec.TypeStream, src.db, src.key),
					codec.SetMetaEvent(st.db, st.key, codec.Meta{Type: codec.TypeStream}, 0))
			case 14:
				if seed%8 == 0 {
					events = append(events, codec.FlushAllEvent())
				}
			case 15, 16: // a node key written (opened, or its counts changed)
				first := codec.ID{Ms: 1 + seed%nodeKeys}
				events = append(events, codec.XNodeSetEvent(st.db, st.key, codec.StreamNode{First: first, Last: first, Count: 1, Live: 1 + seed%7, Next: codec.ID{Ms: first.Ms + 1}}))
			case 17, 18: // node keys removed: one, or a range (a trim)
				from := 1 + seed%nodeKeys
				to := from + uint64(op-17)*(seed/nodeKeys%3)
				events = append(events, codec.XNodeDelEvent(st.db, st.key, codec.ID{Ms: from}, codec.ID{Ms: to}))
			}
			return events, nil
		}
	}

	for round := 0; round < 400; round++ {
		n := 1 + r.IntN(8)
		pending := make([]*materialize.Pending, 0, n)
		for i := 0; i < n; i++ {
			d := decide(r.IntN(19), r.IntN(len(streams)), r.IntN(len(names)), r.IntN(len(consumers)), 1+r.Uint64N(4), r.Uint64N(1000))
			pending = append(pending, s.Submit(d))
		}
		for _, p := range pending {
			if _, err := p.Wait(); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
	// A decision that fails after its Txn emitted fails the whole commit
	// group: nothing of it may stay in the cache.
	st := streams[0]
	bad := []byte("never")
	_, err = s.WriteTxn(func(tx *materialize.Txn) error {
		if err := tx.Emit(streamMeta(tx.View(), st)...); err != nil {
			return err
		}
		if err := tx.Emit(codec.GroupSetEvent(st.db, st.key, names[0], codec.Group{DeadLetterKey: string(bad)})); err != nil {
			return err
		}
		if err := tx.Emit(codec.XNodeSetEvent(st.db, st.key, codec.StreamNode{First: codec.ID{Ms: 2}, Last: codec.ID{Ms: 2}, Count: 1, Live: 99}),
			codec.XNodeDelEvent(st.db, st.key, codec.ID{Ms: 3}, codec.ID{Ms: nodeKeys})); err != nil {
			return err
		}
		return fmt.Errorf("refused")
	})
	if err == nil {
		t.Fatal("a Txn that failed after emitting committed")
	}
	if _, err := s.Write(func(v *materialize.View) ([]codec.Event, error) {
		check(v)
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(mismatches) > 0 {
		t.Fatalf("%d reads differ, first: %s", len(mismatches), mismatches[0])
	}
	if hits := s.IterStats().GroupHits; hits == 0 {
		t.Fatal("the group cache answered no read")
	}
}
