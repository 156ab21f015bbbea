package groups_test

import (
	"math/rand/v2"
	"testing"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/groups"
	"github.com/sediment-dev/sediment/internal/testclock"
	"github.com/sediment-dev/sediment/materialize"
)

// TestPELIndexChurnThroughFlushes drives random deliveries, re-deliveries
// (history reads, XCLAIM with and without TIME, FORCE, CLAIM reads),
// NACKs, acknowledgements, consumer and group deletions through a store
// whose small memtable flushes every few hundred steps, so that Pebble's
// flushes and compactions meet the SingleDeletes of P, Q and W keys
// (materialize/apply.go) with their Sets. Pebble must report no
// SingleDelete that met two Sets, the W index must hold exactly the
// pending entries after every step, and sediment check must pass.
func TestPELIndexChurnThroughFlushes(t *testing.T) {
	c := testclock.New(t0)
	s, err := materialize.Open(materialize.Options{InMemory: true, Now: c.Now, MemTableSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const entries = 300
	addN(t, s, key, 1, entries)
	mustCreate(t, s, key, grp, groups.CreateArgs{EntriesRead: groups.InvalidEntriesRead})
	rng := rand.New(rand.NewPCG(11, 3))
	consumers := [][]byte{alice, bob, {}}
	randID := func() codec.ID { return id(uint64(1 + rng.IntN(entries))) }
	p := codec.GroupPrefix(codec.TagPELTime, 0, key, grp)
	steps := 20000
	if raceEnabled || testing.Short() {
		steps = 5000
	}
	for step := range steps {
		c.Advance(int64(rng.IntN(2)))
		who := consumers[rng.IntN(len(consumers))]
		var decide func(v *materialize.View) ([]codec.Event, error)
		switch op := rng.IntN(100); {
		case op < 25:
			readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: who, Count: 1 + rng.IntN(4)})
		case op < 35:
			readHistory(t, s, key, groups.ReadArgs{Group: grp, Consumer: who, Count: 3}, codec.ID{})
		case op < 45:
			readClaim(t, s, groups.ReadArgs{Group: grp, Consumer: who, Count: 1 + rng.IntN(3), MinIdleMs: int64(rng.IntN(2))})
		case op < 60:
			ack(t, s, key, grp, randID(), randID(), randID())
		case op < 70:
			a := groups.ClaimArgs{Group: grp, Consumer: who, IDs: []codec.ID{randID(), randID()},
				DeliveryTimeMs: -1, RetryCount: -1, Force: rng.IntN(2) == 0, JustID: rng.IntN(3) == 0}
			if rng.IntN(2) == 0 { // TIME: often the same as the entry's delivery time
				a.DeliveryTimeMs = c.Now().UnixMilli() - int64(rng.IntN(2))
			}
			decide = func(v *materialize.View) ([]codec.Event, error) {
				_, evs, err := groups.Claim(v, 0, key, a)
				return evs, err
			}
		case op < 80:
			ids := []codec.ID{randID(), randID()}
			decide = func(v *materialize.View) ([]codec.Event, error) {
				_, evs, err := groups.Nack(v, 0, key, grp, groups.NackArgs{Mode: groups.NackFail, RetryCount: -1, IDs: ids})
				return evs, err
			}
		case op < 99:
			// Rewind so that new reads deliver entries again.
			decide = func(v *materialize.View) ([]codec.Event, error) {
				return groups.SetID(v, 0, key, grp, id(uint64(rng.IntN(entries))), false, groups.InvalidEntriesRead)
			}
		case rng.IntN(3) == 0:
			if _, err := destroy(t, s, key, grp); err != nil {
				t.Fatal(err)
			}
			mustCreate(t, s, key, grp, groups.CreateArgs{EntriesRead: groups.InvalidEntriesRead})
		default:
			decide = func(v *materialize.View) ([]codec.Event, error) {
				_, evs, err := groups.DelConsumer(v, 0, key, grp, who)
				return evs, err
			}
		}
		if decide != nil {
			if err := commit(t, s, decide); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
		}
		g := lookup(t, s, key, grp)
		n := 0
		if err := s.View().IterateNoValues(p, codec.PrefixEnd(p), false, func([]byte) (bool, error) {
			n++
			return true, nil
		}); err != nil {
			t.Fatal(err)
		}
		if uint64(n) != g.PEL.Count {
			t.Fatalf("step %d: %d W keys, %d pending", step, n, g.PEL.Count)
		}
	}
	st := s.StorageStats()
	if st.Flushes < 3 {
		t.Fatalf("%d flushes: the memtable did not turn over", st.Flushes)
	}
	if st.SingleDeleteMisuses != 0 {
		t.Fatalf("Pebble met %d SingleDeletes over two Sets", st.SingleDeleteMisuses)
	}
	rep, err := s.Check(10)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range rep.Violations {
		t.Error(v)
	}
	if rep.NumViolations > 0 {
		t.Fatalf("%d violations", rep.NumViolations)
	}
	t.Logf("%d flushes, %d compactions, %d pending at the end", st.Flushes, st.Compactions, rep.Pending)
}
