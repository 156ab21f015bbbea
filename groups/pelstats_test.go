package groups_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/groups"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/streams"
)

// TestPELStatsMatchRecount runs random sequences of every operation that
// changes a PEL (reads, history reads, acks, claims, autoclaims, deleting
// consumers, XDEL, SETID back, several reads in one session) with fixed seeds, sometimes several in one
// commit group, and after each step compares the PEL stats kept in the group
// and consumer values with a full recount of the P and Q ranges.
func TestPELStatsMatchRecount(t *testing.T) {
	var runs struct{ pel, time int } // run elements seen: the runs were in use
	for seed := uint64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			s, c := open(t)
			r := rand.New(rand.NewPCG(seed, 0))
			names := [][]byte{alice, bob, []byte("c"), []byte("")}
			addN(t, s, key, 1, 20)
			next := uint64(21)
			mustCreate(t, s, key, grp, groups.CreateArgs{})
			for step := 0; step < 300; step++ {
				c.Advance(int64(r.IntN(50)))
				n := 1 + r.IntN(3) // decisions submitted back to back share a commit group
				var pend []*materialize.Pending
				for range n {
					op := r.IntN(11)
					who := names[r.IntN(len(names))]
					// Every random choice is made here, not in the decision,
					// which runs on the writer goroutine.
					some := make([]codec.ID, 1+r.IntN(4))
					for i := range some {
						some[i] = id(uint64(1 + r.IntN(int(next))))
					}
					added := id(next)
					if op == 0 {
						next++
					}
					at, count, flip := id(uint64(r.IntN(int(next)))), 1+r.IntN(5), r.IntN(3)
					if testing.Verbose() {
						t.Logf("step %d op %d who %q ids %v at %v count %d flip %d", step, op, who, some, at, count, flip)
					}
					pend = append(pend, s.Submit(func(v *materialize.View) ([]codec.Event, error) {
						switch op {
						case 0:
							_, _, evs, err := streams.Add(v, 0, key, [][]byte{[]byte("f"), []byte("v")}, streams.AddArgs{ID: streams.IDSpec{ID: added}})
							return evs, err
						case 1, 2:
							_, evs, err := groups.ReadNew(v, 0, key, groups.ReadArgs{Group: grp, Consumer: who, Count: count})
							return evs, err
						case 3:
							_, evs, err := groups.ReadHistory(v, 0, key, groups.ReadArgs{Group: grp, Consumer: who, Count: 3}, codec.ID{})
							return evs, err
						case 4, 5:
							_, evs, err := groups.Ack(v, 0, key, grp, some)
							return evs, err
						case 6:
							_, evs, err := groups.Claim(v, 0, key, groups.ClaimArgs{Group: grp, Consumer: who, IDs: some,
								DeliveryTimeMs: -1, RetryCount: -1, Force: flip == 0})
							return evs, err
						case 7:
							_, _, _, evs, err := groups.AutoClaim(v, 0, key, groups.AutoClaimArgs{Group: grp, Consumer: who,
								Start: at, Count: count})
							return evs, err
						case 8:
							if flip == 0 {
								_, evs, err := groups.DelConsumer(v, 0, key, grp, who)
								return evs, err
							}
							_, evs, err := streams.Del(v, 0, key, some)
							return evs, err
						case 10:
							// One XREADGROUP naming the stream three times.
							sess := groups.NewSession(v, 0)
							ra := groups.ReadArgs{Group: grp, Consumer: who, Count: count}
							for i := range 3 {
								var err error
								if (i+flip)%2 == 0 {
									_, err = sess.ReadNew(key, ra)
								} else {
									_, err = sess.ReadHistory(key, ra, at)
								}
								if err != nil {
									return nil, err
								}
							}
							return sess.Finish()
						default:
							return groups.SetID(v, 0, key, grp, at, false, groups.InvalidEntriesRead)
						}
					}))
				}
				for _, p := range pend {
					if _, err := p.Wait(); err != nil {
						t.Fatalf("step %d: %v", step, err)
					}
				}
				checkPELStats(t, s, step)
				// The runs (Group.PELNext, TimeNext) and TimeFirst against
				// the keys, with every other invariant of the store.
				if rep, err := s.Check(0); err != nil || rep.NumViolations > 0 {
					t.Fatalf("step %d: check: %v, %+v", step, err, rep.Violations)
				}
				g := lookup(t, s, key, grp)
				runs.pel += len(g.PELNext)
				runs.time += len(g.TimeNext)
			}
		})
	}
	if runs.pel == 0 || runs.time == 0 {
		t.Errorf("the groups' runs were never used: %+v", runs)
	}
}

// checkPELStats compares the stored PEL stats of grp and of each consumer
// with a recount of the P and Q ranges.
func checkPELStats(t *testing.T, s *materialize.Store, step int) {
	t.Helper()
	v := s.View()
	recount := func(p []byte) codec.PELStats {
		var st codec.PELStats
		if err := v.Iterate(p, codec.PrefixEnd(p), false, func(k, _ []byte) (bool, error) {
			id, err := codec.DecodeID(k[len(p):])
			if st.Count == 0 {
				st.First = id
			}
			st.Count++
			return true, err
		}); err != nil {
			t.Fatal(err)
		}
		return st
	}
	g := lookup(t, s, key, grp)
	if want := recount(codec.GroupPrefix(codec.TagPEL, 0, key, grp)); g.PEL != want {
		t.Fatalf("step %d: group PEL stats %+v, recount %+v", step, g.PEL, want)
	}
	cp := codec.GroupPrefix(codec.TagConsumer, 0, key, grp)
	var total uint64
	if err := v.Iterate(cp, codec.PrefixEnd(cp), false, func(k, val []byte) (bool, error) {
		name, _, err := codec.SplitName(k[len(cp):])
		if err != nil {
			return false, err
		}
		c, err := codec.DecodeConsumer(val)
		if err != nil {
			return false, err
		}
		if want := recount(codec.ConsumerPELPrefix(0, key, grp, name)); c.PEL != want {
			t.Fatalf("step %d: consumer %q PEL stats %+v, recount %+v", step, name, c.PEL, want)
		}
		total += c.PEL.Count
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	if total != g.PEL.Count {
		t.Fatalf("step %d: consumers hold %d pending, group %d", step, total, g.PEL.Count)
	}
	sum, err := groups.PendingSummary(v, 0, key, grp)
	if err != nil || uint64(sum.Count) != g.PEL.Count {
		t.Fatalf("step %d: summary %+v, %v", step, sum, err)
	}
}

// TestPELStatsLegacyValues reads group and consumer values in the layouts
// written before PEL stats were kept (24 and 16 bytes): readers recount the
// PEL, and the next write stores the new layout with exact stats.
func TestPELStatsLegacyValues(t *testing.T) {
	s, _ := open(t)
	addN(t, s, key, 1, 5)
	mustCreate(t, s, key, grp, groups.CreateArgs{})
	readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: alice, Count: 3})
	readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: bob, Count: 1})
	// Rewrite both values in their legacy layouts.
	if err := commit(t, s, func(v *materialize.View) ([]codec.Event, error) {
		g := lookup(t, s, key, grp)
		a, _ := consumer(t, s, grp, alice)
		return []codec.Event{
			{Op: codec.OpGroupSet, Key: key, Args: [][]byte{grp, codec.AppendGroup(nil, g)[:24]}},
			{Op: codec.OpConsumerSet, Key: key, Args: [][]byte{grp, alice, codec.AppendConsumer(nil, a)[:16]}},
		}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if b, _, _ := s.View().Get(codec.GroupKey(0, key, grp)); len(b) != 24 {
		t.Fatalf("group value is %d bytes, want the legacy 24", len(b))
	}
	sum, err := groups.PendingSummary(s.View(), 0, key, grp)
	if err != nil || sum.Count != 4 || sum.Min != id(1) || sum.Max != id(4) || len(sum.Consumers) != 2 {
		t.Fatalf("summary over legacy values = %+v, %v", sum, err)
	}
	infos, err := groups.ConsumerInfos(s.View(), 0, key, grp)
	if err != nil || len(infos) != 2 {
		t.Fatalf("consumers = %+v, %v", infos, err)
	}
	for _, ci := range infos {
		if want := map[string]int64{string(alice): 3, string(bob): 1}[string(ci.Name)]; ci.Pending != want {
			t.Errorf("consumer %q pending %d, want %d", ci.Name, ci.Pending, want)
		}
	}
	// The next write of each stores the new layout with exact stats.
	ack(t, s, key, grp, id(1))
	// (with its runs: pending 2, 3 and 4; 2 is the first)
	if g := lookup(t, s, key, grp); g.PELUnknown || !slices.Equal(g.PELNext, ids(3, 4)) {
		t.Fatalf("group after a write = %+v, want exact stats and the run 3, 4", g)
	}
	checkPELStats(t, s, -1)
	if c, _ := consumer(t, s, grp, alice); c.PELUnknown || c.PEL.Count != 2 || c.PEL.First != id(2) {
		t.Errorf("alice after ack = %+v", c)
	}
}

// TestPELStatsLegacyStaleQKey: versions before the PEL stats could leave a
// Q key behind for a consumer named "" when its entry moved to another
// consumer. Recounting that consumer's legacy value, and deleting it, count
// only the entries it owns.
func TestPELStatsLegacyStaleQKey(t *testing.T) {
	s, _ := open(t)
	empty := []byte{}
	addN(t, s, key, 1, 5)
	mustCreate(t, s, key, grp, groups.CreateArgs{})
	readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: empty, Count: 3})
	if err := commit(t, s, func(v *materialize.View) ([]codec.Event, error) {
		c, _ := consumer(t, s, grp, empty)
		b, _ := consumer(t, s, grp, bob)
		// The old claim of 3 by bob: no previous owner, so Q|""|3 stays.
		return []codec.Event{
			codec.PELSetEvent(0, key, grp, id(3), codec.PELEntry{DeliveryCount: 2, Consumer: bob}, nil),
			{Op: codec.OpConsumerSet, Key: key, Args: [][]byte{grp, empty, codec.AppendConsumer(nil, c)[:16]}},
			{Op: codec.OpConsumerSet, Key: key, Args: [][]byte{grp, bob, codec.AppendConsumer(nil, b)[:16]}},
		}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if has, _ := s.View().Has(codec.ConsumerPELKey(0, key, grp, empty, id(3))); !has {
		t.Fatal("setup: no stale Q key")
	}
	infos, err := groups.ConsumerInfos(s.View(), 0, key, grp)
	if err != nil || len(infos) != 2 {
		t.Fatalf("consumers = %+v, %v", infos, err)
	}
	for _, ci := range infos {
		if want := map[string]int64{"": 2, string(bob): 1}[string(ci.Name)]; ci.Pending != want {
			t.Errorf("consumer %q pending %d, want %d", ci.Name, ci.Pending, want)
		}
	}
	var n int
	if err := commit(t, s, func(v *materialize.View) ([]codec.Event, error) {
		var evs []codec.Event
		var err error
		n, evs, err = groups.DelConsumer(v, 0, key, grp, empty)
		return evs, err
	}); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("DELCONSUMER \"\" = %d, want 2", n)
	}
	if g := lookup(t, s, key, grp); g.PEL != (codec.PELStats{Count: 1, First: id(3)}) {
		t.Errorf("group PEL stats after DELCONSUMER = %+v, want 1 from 3", g.PEL)
	}
	if _, ok, _ := s.View().Get(codec.PELKey(0, key, grp, id(3))); !ok {
		t.Error("bob's entry 3 left the PEL with the stale key")
	}
	ack(t, s, key, grp, id(3))
	checkPELStats(t, s, -1)
}
