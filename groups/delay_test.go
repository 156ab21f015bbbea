package groups_test

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/groups"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/streams"
)

// addAt adds entry ms-0 to key, delayed by delayMs (0: an ordinary entry).
func addAt(t *testing.T, s *materialize.Store, ms uint64, delayMs int64) {
	t.Helper()
	var d *streams.Delay
	if delayMs > 0 {
		d = &streams.Delay{Ms: delayMs}
	}
	err := commit(t, s, func(v *materialize.View) ([]codec.Event, error) {
		_, _, evs, err := streams.Add(v, 0, key, [][]byte{[]byte("n"), []byte(fmt.Sprint(ms))}, streams.AddArgs{ID: streams.IDSpec{ID: id(ms)}, Delay: d})
		return evs, err
	})
	if err != nil {
		t.Fatalf("add %d: %v", ms, err)
	}
}

func claimIDs(t *testing.T, s *materialize.Store, a groups.ClaimArgs) []codec.ID {
	t.Helper()
	var out []streams.Entry
	err := commit(t, s, func(v *materialize.View) ([]codec.Event, error) {
		es, evs, err := groups.Claim(v, 0, key, a)
		out = es
		return evs, err
	})
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	return entryIDs(out)
}

func autoClaimIDs(t *testing.T, s *materialize.Store, a groups.AutoClaimArgs) []codec.ID {
	t.Helper()
	var out []streams.Entry
	err := commit(t, s, func(v *materialize.View) ([]codec.Event, error) {
		_, es, _, evs, err := groups.AutoClaim(v, 0, key, a)
		out = es
		return evs, err
	})
	if err != nil {
		t.Fatalf("AutoClaim: %v", err)
	}
	return entryIDs(out)
}

func nack(t *testing.T, s *materialize.Store, a groups.NackArgs) int {
	t.Helper()
	var n int
	err := commit(t, s, func(v *materialize.View) ([]codec.Event, error) {
		var evs []codec.Event
		var err error
		n, evs, err = groups.Nack(v, 0, key, grp, a)
		return evs, err
	})
	if err != nil {
		t.Fatalf("Nack: %v", err)
	}
	return n
}

// checkUnowned checks the group's unowned entries (parked or NACKed)
// against its value: Nacked counts them, NackNext is above every NACK
// sequence, each has its W key and no consumer's Q key, and TimeFirst is
// the first W key.
func checkUnowned(t *testing.T, s *materialize.Store) {
	t.Helper()
	g := lookup(t, s, key, grp)
	v := s.View()
	var (
		unowned, maxNack uint64
		first            codec.PELTimePos
		n                int
	)
	p := codec.GroupPrefix(codec.TagPEL, 0, key, grp)
	err := v.Iterate(p, codec.PrefixEnd(p), false, func(k, val []byte) (bool, error) {
		at, _ := codec.DecodeID(k[len(p):])
		pe, err := codec.DecodePELEntry(val)
		if err != nil {
			return false, err
		}
		pos := codec.PELTimePos{Time: pe.IndexTime(), ID: at}
		if n == 0 || pos.Less(first) {
			first = pos
		}
		n++
		if has, _ := v.Has(codec.PELTimeKey(0, key, grp, pe.IndexTime(), at)); !has {
			t.Errorf("%v: no W key at %d", at, pe.IndexTime())
		}
		if pe.Nacked() {
			unowned++
			maxNack = max(maxNack, pe.NackSeq)
			if len(pe.Consumer) != 0 {
				t.Errorf("%v: unowned entry with consumer %q", at, pe.Consumer)
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if g.Nacked != unowned || (unowned > 0 && g.NackNext <= maxNack) {
		t.Fatalf("group Nacked %d NackNext %d; %d unowned entries, largest NACK sequence %d", g.Nacked, g.NackNext, unowned, maxNack)
	}
	if n > 0 && g.TimeFirst != first {
		t.Fatalf("group TimeFirst %+v, first W key %+v", g.TimeFirst, first)
	}
	if q := countPrefix(t, s, codec.GroupPrefix(codec.TagConsumerPEL, 0, key, grp)); q != n-int(unowned) {
		t.Fatalf("%d Q keys, %d owned entries", q, n-int(unowned))
	}
}

// TestDelayedParked: a '>' read delivers the entries after a delayed one
// at once and parks the delayed one in the PEL, unowned at its due time,
// moving last-delivered-id and entries-read past it; nothing delivers it
// before its due time (CLAIM, XCLAIM, XAUTOCLAIM, XNACK); XPENDING shows it
// with no consumer and idle -1, then idle since its due time; CLAIM takes
// it once it has been due for min-idle-time, with idle counted from the
// due time and delivery count 0 before.
func TestDelayedParked(t *testing.T) {
	s, c := open(t)
	addAt(t, s, 1, 0)
	addAt(t, s, 2, 100) // due at t0+100
	addAt(t, s, 3, 0)
	mustCreate(t, s, key, grp, groups.CreateArgs{EntriesRead: groups.InvalidEntriesRead})

	got := readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: alice, Count: 10})
	if !slices.Equal(entryIDs(got), ids(1, 3)) {
		t.Fatalf("'>' read %v, want 1 and 3", entryIDs(got))
	}
	g := lookup(t, s, key, grp)
	if g.LastDeliveredID != id(3) || g.EntriesRead != 3 || g.PEL.Count != 3 || g.Nacked != 1 {
		t.Fatalf("group %+v", g)
	}
	pe, ok := pelEntry(t, s, grp, id(2))
	if !ok || !pe.Parked || len(pe.Consumer) != 0 || pe.DeliveryTimeMs != t0+100 || pe.DeliveryCount != 0 {
		t.Fatalf("parked entry %+v, %v", pe, ok)
	}
	if q := consumerPEL(t, s, grp, alice); !slices.Equal(q, ids(1, 3)) {
		t.Fatalf("alice's PEL %v", q)
	}
	checkUnowned(t, s)
	ps := pendingRange(t, s, allPending(groups.RangeArgs{}))
	if len(ps) != 3 || len(ps[1].Consumer) != 0 || ps[1].IdleMs != -1 || ps[1].DeliveryCount != 0 {
		t.Fatalf("XPENDING %+v", ps)
	}
	if ps := pendingRange(t, s, allPending(groups.RangeArgs{MinIdleMs: 1})); slices.Contains(pendingIDs(ps), id(2)) {
		t.Fatalf("XPENDING IDLE 1 lists the parked entry before its due time: %v", pendingIDs(ps))
	}
	if at, ok, err := groups.NextClaimable(s.View(), 0, key, grp, 30); err != nil || !ok || at != t0+30 {
		// alice's entries, delivered at t0, come first.
		t.Fatalf("NextClaimable(30) = %d, %v, %v", at, ok, err)
	}

	// Nothing delivers it before its due time.
	c.Advance(50)
	if got := readClaim(t, s, groups.ReadArgs{Group: grp, Consumer: bob, Count: 10, MinIdleMs: 0}); slices.Contains(deliveredIDs(got), id(2)) {
		t.Fatalf("CLAIM 0 before due took %v", deliveredIDs(got))
	}
	if got := claimIDs(t, s, groups.ClaimArgs{Group: grp, Consumer: bob, IDs: ids(2), DeliveryTimeMs: -1, RetryCount: -1}); len(got) != 0 {
		t.Fatalf("XCLAIM 0 before due took %v", got)
	}
	if got := claimIDs(t, s, groups.ClaimArgs{Group: grp, Consumer: bob, IDs: ids(2), DeliveryTimeMs: -1, RetryCount: -1, Force: true}); len(got) != 0 {
		t.Fatalf("XCLAIM FORCE before due took %v", got)
	}
	if got := autoClaimIDs(t, s, groups.AutoClaimArgs{Group: grp, Consumer: bob, Count: 10}); slices.Contains(got, id(2)) {
		t.Fatalf("XAUTOCLAIM 0 before due took %v", got)
	}
	if n := nack(t, s, groups.NackArgs{Mode: groups.NackFail, IDs: ids(2), RetryCount: -1, Force: true}); n != 0 {
		t.Fatalf("XNACK of a parked entry not due released %d", n)
	}
	if pe, _ := pelEntry(t, s, grp, id(2)); !pe.Parked {
		t.Fatalf("entry 2 no longer parked: %+v", pe)
	}
	checkUnowned(t, s)

	// Due at t0+100: idle since then.
	c.Set(t0 + 130)
	ps = pendingRange(t, s, allPending(groups.RangeArgs{MinIdleMs: 30}))
	if i := slices.Index(pendingIDs(ps), id(2)); i < 0 || ps[i].IdleMs != 30 {
		t.Fatalf("XPENDING IDLE 30 at due+30: %+v", ps)
	}
	if got := readClaim(t, s, groups.ReadArgs{Group: grp, Consumer: bob, Count: 10, MinIdleMs: 31}); slices.Contains(deliveredIDs(got), id(2)) {
		t.Fatalf("CLAIM 31 at due+30 took %v", deliveredIDs(got))
	}
	got2 := readClaim(t, s, groups.ReadArgs{Group: grp, Consumer: bob, Count: 10, MinIdleMs: 30})
	i := slices.IndexFunc(got2, func(d groups.Delivered) bool { return d.ID == id(2) })
	if i < 0 || got2[i].IdleMs != 30 || got2[i].Deliveries != 0 || string(got2[i].Fields[1]) != "2" {
		t.Fatalf("CLAIM 30 at due+30 = %+v", got2)
	}
	pe, _ = pelEntry(t, s, grp, id(2))
	if pe.Parked || !bytes.Equal(pe.Consumer, bob) || pe.DeliveryCount != 1 || pe.DeliveryTimeMs != t0+130 {
		t.Fatalf("claimed entry %+v", pe)
	}
	if g := lookup(t, s, key, grp); g.Nacked != 0 {
		t.Fatalf("Nacked %d after the claim", g.Nacked)
	}
	checkUnowned(t, s)
}

// TestDelayedCountAndBound: parked entries take no COUNT, a read parks at
// most groups.ParkMax of them (last-delivered-id at the last), and NOACK
// reads park too. An entry already due is delivered by '>' at once.
func TestDelayedCountAndBound(t *testing.T) {
	defer func(n int) { groups.ParkMax = n }(groups.ParkMax)
	groups.ParkMax = 3
	s, c := open(t)
	for ms := uint64(1); ms <= 5; ms++ {
		addAt(t, s, ms, 1000)
	}
	addAt(t, s, 6, 0)
	addAt(t, s, 7, 10) // due at t0+10
	mustCreate(t, s, key, grp, groups.CreateArgs{EntriesRead: groups.InvalidEntriesRead})

	if got := readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: alice, Count: 1}); len(got) != 0 {
		t.Fatalf("first read %v, want nothing (3 parked)", entryIDs(got))
	}
	if g := lookup(t, s, key, grp); g.LastDeliveredID != id(3) || g.PEL.Count != 3 || g.EntriesRead != 3 {
		t.Fatalf("after the first read: %+v", g)
	}
	got := readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: alice, Count: 1, NoAck: true})
	if !slices.Equal(entryIDs(got), ids(6)) {
		t.Fatalf("second read %v, want 6", entryIDs(got))
	}
	if g := lookup(t, s, key, grp); g.LastDeliveredID != id(6) || g.PEL.Count != 5 || g.Nacked != 5 {
		t.Fatalf("after the second read: %+v", g)
	}
	checkUnowned(t, s)
	c.Advance(10)
	if got := readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: alice}); !slices.Equal(entryIDs(got), ids(7)) {
		t.Fatalf("read at 7's due time %v, want 7", entryIDs(got))
	}
	if pe, _ := pelEntry(t, s, grp, id(7)); pe.Parked || !bytes.Equal(pe.Consumer, alice) {
		t.Fatalf("entry 7 %+v", pe)
	}
}

// TestDelayedRewind: after XGROUP SETID moves the group back, a '>' read
// leaves a parked entry not yet due as it is, and once it is due delivers
// it like any pending entry read again.
func TestDelayedRewind(t *testing.T) {
	s, c := open(t)
	addAt(t, s, 1, 100)
	addAt(t, s, 2, 0)
	mustCreate(t, s, key, grp, groups.CreateArgs{EntriesRead: groups.InvalidEntriesRead})
	readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: alice})
	setID := func() {
		if err := commit(t, s, func(v *materialize.View) ([]codec.Event, error) {
			return groups.SetID(v, 0, key, grp, codec.ID{}, false, groups.InvalidEntriesRead)
		}); err != nil {
			t.Fatal(err)
		}
	}
	setID()
	if got := readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: bob}); !slices.Equal(entryIDs(got), ids(2)) {
		t.Fatalf("read after SETID %v, want 2", entryIDs(got))
	}
	if pe, _ := pelEntry(t, s, grp, id(1)); !pe.Parked {
		t.Fatalf("entry 1 %+v", pe)
	}
	checkUnowned(t, s)
	c.Advance(100)
	setID()
	if got := readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: bob}); !slices.Equal(entryIDs(got), ids(1, 2)) {
		t.Fatalf("read at due after SETID %v, want 1 2", entryIDs(got))
	}
	if pe, _ := pelEntry(t, s, grp, id(1)); pe.Parked || !bytes.Equal(pe.Consumer, bob) {
		t.Fatalf("entry 1 %+v", pe)
	}
	checkUnowned(t, s)
}

// TestDelayedDeadLetters: parking is not a delivery. A parked entry has
// delivery count 0, so with MAXDELIVERIES 1 the first claim delivers it
// and only the next one dead-letters it.
func TestDelayedDeadLetters(t *testing.T) {
	s, c := open(t)
	addAt(t, s, 1, 100)
	mustCreate(t, s, key, grp, groups.CreateArgs{EntriesRead: groups.InvalidEntriesRead})
	if err := commit(t, s, func(v *materialize.View) ([]codec.Event, error) {
		return groups.SetDeadLetter(v, 0, key, grp, []byte("dlq"), 1)
	}); err != nil {
		t.Fatal(err)
	}
	readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: alice})
	c.Advance(100)
	if got := readClaim(t, s, groups.ReadArgs{Group: grp, Consumer: bob, MinIdleMs: 0}); !slices.Equal(deliveredIDs(got), ids(1)) {
		t.Fatalf("first claim %v, want 1", deliveredIDs(got))
	}
	c.Advance(10)
	if got := readClaim(t, s, groups.ReadArgs{Group: grp, Consumer: bob, MinIdleMs: 0}); len(got) != 0 {
		t.Fatalf("second claim %v, want nothing (dead-lettered)", deliveredIDs(got))
	}
	if n, _ := streams.Len(s.View(), 0, []byte("dlq")); n != 1 {
		t.Fatalf("dead-letter stream holds %d", n)
	}
}
