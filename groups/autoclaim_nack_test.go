package groups_test

import (
	"slices"
	"testing"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/groups"
	"github.com/sediment-dev/sediment/materialize"
)

// XAUTOCLAIM and the NACK zone (Redis 8.8). What the pages say:
//
//   - https://redis.io/docs/latest/commands/xautoclaim/: the scan starts at
//     start and walks the PEL (by ID, at most COUNT×10 entries); entries
//     released by XNACK "are immediately claimable since their delivery
//     time is set to 0, satisfying any minimum idle time requirement".
//   - https://redis.io/docs/latest/commands/xnack/: NACKed entries sit at
//     the head of the PEL's time-ordered list and are "prioritized ...
//     during claim operations"; XREADGROUP CLAIM is the claim that reads
//     that list (TestXNack, TestReadClaimOrder). Neither page gives
//     XAUTOCLAIM an order of its own, so it keeps walking by ID: these
//     tests pin that.

// autoClaim runs AutoClaim in a Write and returns its results.
func autoClaim(t *testing.T, s *materialize.Store, a groups.AutoClaimArgs) (next codec.ID, claimed, deleted []codec.ID) {
	t.Helper()
	err := commit(t, s, func(v *materialize.View) ([]codec.Event, error) {
		n, es, del, evs, err := groups.AutoClaim(v, 0, key, a)
		next, claimed, deleted = n, entryIDs(es), del
		return evs, err
	})
	if err != nil {
		t.Fatalf("AutoClaim: %v", err)
	}
	return next, claimed, deleted
}

// TestAutoClaimNackedByID: NACKed entries are claimable at once, whatever
// min-idle-time, and XAUTOCLAIM takes them in ID order from start, like
// any idle entry: not in release order, not below start, not past the
// COUNT×10 scan bound.
// https://redis.io/docs/latest/commands/xautoclaim/
// https://redis.io/docs/latest/commands/xnack/
func TestAutoClaimNackedByID(t *testing.T) {
	s, c := open(t)
	addN(t, s, key, 1, 30)
	mustCreate(t, s, key, grp, groups.CreateArgs{EntriesRead: groups.InvalidEntriesRead})
	readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: alice}) // 1..30 at t0
	c.Advance(10)
	release := func(ms ...uint64) {
		t.Helper()
		if n := nack(t, s, groups.NackArgs{Mode: groups.NackFail, RetryCount: -1, IDs: ids(ms...)}); n != len(ms) {
			t.Fatalf("Nack(%v) = %d", ms, n)
		}
	}
	release(5, 2) // released 5 first

	// Nothing else is idle an hour; the NACKed entries are, and come in ID
	// order.
	next, got, del := autoClaim(t, s, groups.AutoClaimArgs{Group: grp, Consumer: bob, MinIdleMs: 3_600_000, Count: 10})
	if !slices.Equal(got, ids(2, 5)) || len(del) != 0 || !next.IsZero() {
		t.Fatalf("next %v, claimed %v, deleted %v; want 0-0, [2 5], []", next, got, del)
	}
	// Idle since delivery time 0: ten years is satisfied too.
	release(2, 5)
	if got := autoClaimIDs(t, s, groups.AutoClaimArgs{Group: grp, Consumer: bob, MinIdleMs: 10 * 365 * 86_400_000, Count: 10}); !slices.Equal(got, ids(2, 5)) {
		t.Fatalf("min-idle ten years: claimed %v, want [2 5]", got)
	}
	for _, at := range ids(2, 5) {
		if pe, ok := pelEntry(t, s, grp, at); !ok || pe.Nacked() || string(pe.Consumer) != string(bob) || pe.DeliveryCount != 3 {
			t.Fatalf("%v after the claims: %+v, %v; want bob's, count 3", at, pe, ok)
		}
	}
	checkUnowned(t, s)

	// Below start: not taken, even though the zone holds it first.
	release(1, 4)
	next, got, _ = autoClaim(t, s, groups.AutoClaimArgs{Group: grp, Consumer: bob, MinIdleMs: 3_600_000, Start: id(3), Count: 10})
	if !slices.Equal(got, ids(4)) || !next.IsZero() {
		t.Fatalf("from 3-0: next %v, claimed %v; want 0-0, [4]", next, got)
	}
	if pe, _ := pelEntry(t, s, grp, id(1)); !pe.Nacked() {
		t.Fatalf("1-0 (below start) claimed: %+v", pe)
	}

	// COUNT 1 scans at most 10 entries: a NACKed entry past them waits
	// for the next call, from the cursor.
	release(25)
	next, got, _ = autoClaim(t, s, groups.AutoClaimArgs{Group: grp, Consumer: bob, MinIdleMs: 3_600_000, Start: id(10), Count: 1})
	if len(got) != 0 || next != id(20) {
		t.Fatalf("COUNT 1 from 10-0: next %v, claimed %v; want 20-0, []", next, got)
	}
	next, got, _ = autoClaim(t, s, groups.AutoClaimArgs{Group: grp, Consumer: bob, MinIdleMs: 3_600_000, Start: next, Count: 1})
	if !slices.Equal(got, ids(25)) || next != id(26) {
		t.Fatalf("COUNT 1 from 20-0: next %v, claimed %v; want 26-0, [25]", next, got)
	}
	checkUnowned(t, s)
}

// TestAutoClaimNackedDeadLettersAndDelay: the dead-letter and delayed
// delivery rules apply to NACKed entries under XAUTOCLAIM as to any: an
// entry released FATAL (count the largest int64) is dead-lettered, not
// claimed, and takes no COUNT; a parked entry not yet due is skipped while
// a NACKed one after it is claimed.
// https://redis.io/docs/latest/commands/xnack/
func TestAutoClaimNackedDeadLettersAndDelay(t *testing.T) {
	s, c := open(t)
	addN(t, s, key, 1, 3)
	addAt(t, s, 4, 1000) // due at t0+1000
	addN(t, s, key, 5, 6)
	mustCreate(t, s, key, grp, groups.CreateArgs{EntriesRead: groups.InvalidEntriesRead})
	readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: alice}) // 1..3, 5, 6; 4 parked
	err := commit(t, s, func(v *materialize.View) ([]codec.Event, error) {
		return groups.SetDeadLetter(v, 0, key, grp, []byte("dlq"), 5)
	})
	if err != nil {
		t.Fatal(err)
	}
	c.Advance(10)
	nack(t, s, groups.NackArgs{Mode: groups.NackFatal, RetryCount: -1, IDs: ids(2)})
	nack(t, s, groups.NackArgs{Mode: groups.NackFail, RetryCount: -1, IDs: ids(5)})
	next, got, del := autoClaim(t, s, groups.AutoClaimArgs{Group: grp, Consumer: bob, MinIdleMs: 3_600_000, Count: 1})
	if !slices.Equal(got, ids(5)) || len(del) != 0 || next != id(6) {
		t.Fatalf("claim: next %v, claimed %v, deleted %v; want 6-0, [5], []", next, got, del)
	}
	if _, ok := pelEntry(t, s, grp, id(2)); ok {
		t.Fatal("2-0 (released FATAL) still pending; want it dead-lettered")
	}
	if g := lookup(t, s, key, grp); g.DeadLettered != 1 {
		t.Fatalf("dead-lettered %d, want 1", g.DeadLettered)
	}
	if pe, ok := pelEntry(t, s, grp, id(4)); !ok || !pe.Parked {
		t.Fatalf("4-0 (not yet due): %+v, %v; want still parked", pe, ok)
	}
	checkUnowned(t, s)
}
