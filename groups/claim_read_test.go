package groups_test

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/groups"
	"github.com/sediment-dev/sediment/materialize"
)

// readClaim runs one XREADGROUP CLAIM read of key in its own decision.
func readClaim(t *testing.T, s *materialize.Store, a groups.ReadArgs) []groups.Delivered {
	t.Helper()
	var out []groups.Delivered
	err := commit(t, s, func(v *materialize.View) ([]codec.Event, error) {
		sess := groups.NewSession(v, 0)
		var err error
		if out, err = sess.ReadClaim(key, a); err != nil {
			return nil, err
		}
		return sess.Finish()
	})
	if err != nil {
		t.Fatalf("ReadClaim: %v", err)
	}
	return out
}

func deliveredIDs(ds []groups.Delivered) []codec.ID {
	var out []codec.ID
	for _, d := range ds {
		out = append(out, d.ID)
	}
	return out
}

// TestReadClaimOrder: idle entries come in delivery-time order (ties in ID
// order), whoever owns them, and the W index follows every PEL change; a
// group without the index (created before it was kept) is scanned and
// gives the same answers.
func TestReadClaimOrder(t *testing.T) {
	for _, indexed := range []bool{true, false} {
		s, c := open(t)
		addN(t, s, key, 1, 6)
		if indexed {
			mustCreate(t, s, key, grp, groups.CreateArgs{EntriesRead: groups.InvalidEntriesRead})
		} else {
			// The value an earlier version wrote: no TimeIndexed flag.
			err := commit(t, s, func(v *materialize.View) ([]codec.Event, error) {
				return []codec.Event{codec.GroupSetEvent(0, key, grp, codec.Group{EntriesRead: groups.InvalidEntriesRead})}, nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: alice, Count: 2}) // 1, 2 at t0
		c.Advance(10)
		readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: bob, Count: 2}) // 3, 4 at t0+10
		c.Advance(10)
		readHistory(t, s, key, groups.ReadArgs{Group: grp, Consumer: alice, Count: 1}, codec.ID{}) // 1 again at t0+20
		c.Advance(10)
		ack(t, s, key, grp, id(2))
		// Idle >= 15 ms: 3 and 4 (t0+10; 2 was acknowledged), not 1 (t0+20).
		got := readClaim(t, s, groups.ReadArgs{Group: grp, Consumer: []byte("carol"), MinIdleMs: 15, Count: 10})
		if !slices.Equal(deliveredIDs(got), ids(3, 4, 5, 6)) || got[0].IdleMs != 20 || got[0].Deliveries != 1 || got[2].Deliveries != 0 || got[2].IdleMs != 0 {
			t.Fatalf("indexed %v: claim = %+v", indexed, got)
		}
		if pe, ok := pelEntry(t, s, grp, id(3)); !ok || string(pe.Consumer) != "carol" || pe.DeliveryCount != 2 || pe.DeliveryTimeMs != c.Ms() {
			t.Errorf("indexed %v: 3-0 after the claim: %+v, %v", indexed, pe, ok)
		}
		// Everything idle: 1 (t0+20) before 3..6 (now); COUNT 2.
		c.Advance(5)
		got = readClaim(t, s, groups.ReadArgs{Group: grp, Consumer: bob, MinIdleMs: 0, Count: 2})
		if !slices.Equal(deliveredIDs(got), ids(1, 3)) || got[0].Deliveries != 2 {
			t.Fatalf("indexed %v: second claim = %+v", indexed, got)
		}
		// The index holds exactly the pending entries.
		if n := countPrefix(t, s, codec.GroupPrefix(codec.TagPELTime, 0, key, grp)); indexed && n != 5 {
			t.Errorf("W keys: %d, want 5 (1, 3, 4, 5, 6 pending)", n)
		}
	}
}

// TestTimeFirstModel: after every PEL change of a random mix (deliveries,
// history reads, claims, XNACK, acknowledgements), the group's TimeFirst
// is its first W key and the W index has one key per pending entry.
func TestTimeFirstModel(t *testing.T) {
	s, c := open(t)
	addN(t, s, key, 1, 200)
	mustCreate(t, s, key, grp, groups.CreateArgs{EntriesRead: groups.InvalidEntriesRead})
	rng := rand.New(rand.NewPCG(7, 7))
	p := codec.GroupPrefix(codec.TagPELTime, 0, key, grp)
	for step := 0; step < 600; step++ {
		c.Advance(int64(rng.IntN(3)))
		who := [][]byte{alice, bob}[rng.IntN(2)]
		switch rng.IntN(5) {
		case 0:
			readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: who, Count: 1 + rng.IntN(4)})
		case 1:
			readHistory(t, s, key, groups.ReadArgs{Group: grp, Consumer: who, Count: 2}, codec.ID{})
		case 2:
			readClaim(t, s, groups.ReadArgs{Group: grp, Consumer: who, Count: 1 + rng.IntN(3), MinIdleMs: int64(rng.IntN(3))})
		case 3:
			ack(t, s, key, grp, id(uint64(1+rng.IntN(200))), id(uint64(1+rng.IntN(200))))
		case 4:
			err := commit(t, s, func(v *materialize.View) ([]codec.Event, error) {
				_, evs, err := groups.Nack(v, 0, key, grp, groups.NackArgs{Mode: groups.NackFail, RetryCount: -1, IDs: []codec.ID{id(uint64(1 + rng.IntN(200)))}})
				return evs, err
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		g := lookup(t, s, key, grp)
		var first []byte
		n := 0
		err := s.View().Iterate(p, codec.PrefixEnd(p), false, func(k, _ []byte) (bool, error) {
			if first == nil {
				first = append([]byte(nil), k...)
			}
			n++
			return true, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if uint64(n) != g.PEL.Count {
			t.Fatalf("step %d: %d W keys, %d pending", step, n, g.PEL.Count)
		}
		if n > 0 && !bytes.Equal(first, codec.PELTimeKey(0, key, grp, g.TimeFirst.Time, g.TimeFirst.ID)) {
			t.Fatalf("step %d: TimeFirst %+v is not the first W key %x", step, g.TimeFirst, first)
		}
	}
}

// TestLegacyGroupIndexedOnceDrained: a group created before the W index
// (no TimeIndexed flag) stays unindexed while entries are pending, since
// some may lack their W key, and becomes indexed when its PEL empties.
func TestLegacyGroupIndexedOnceDrained(t *testing.T) {
	s, c := open(t)
	addN(t, s, key, 1, 4)
	err := commit(t, s, func(v *materialize.View) ([]codec.Event, error) {
		return []codec.Event{codec.GroupSetEvent(0, key, grp, codec.Group{EntriesRead: groups.InvalidEntriesRead})}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: alice, Count: 2})
	ack(t, s, key, grp, id(1))
	if g := lookup(t, s, key, grp); g.TimeIndexed || g.PEL.Count != 1 {
		t.Fatalf("one entry pending: %+v, want an unindexed group", g)
	}
	ack(t, s, key, grp, id(2))
	if g := lookup(t, s, key, grp); !g.TimeIndexed || g.PEL.Count != 0 {
		t.Fatalf("drained: %+v, want an indexed group", g)
	}
	// Indexed from now on: a claim finds idle entries through the W keys.
	readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: alice, Count: 2})
	c.Advance(10)
	got := readClaim(t, s, groups.ReadArgs{Group: grp, Consumer: bob, MinIdleMs: 5, Count: 10})
	if !slices.Equal(deliveredIDs(got), ids(3, 4)) || got[0].IdleMs != 10 {
		t.Fatalf("claim after indexing = %+v", got)
	}
	if n := countPrefix(t, s, codec.GroupPrefix(codec.TagPELTime, 0, key, grp)); n != 2 {
		t.Errorf("W keys: %d, want 2", n)
	}
}
