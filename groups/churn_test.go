package groups_test

import (
	"math"
	"strconv"
	"testing"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/groups"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/streams"
	"github.com/sediment-dev/sediment/types/rlist"
	"github.com/sediment-dev/sediment/types/rzset"
)

// churnWorkload is one cycle of a workload that deletes what it adds
// (capped streams, acknowledged PELs, delete-after-processing queues).
// cycle returns the decisions of cycle i; each runs as its own write, in
// order. probe, when set, runs read-only operations whose cost must not
// grow with the workload's history either.
type churnWorkload struct {
	name  string
	setup func(v *materialize.View) ([]codec.Event, error)
	cycle func(i int) []func(v *materialize.View) ([]codec.Event, error)
	probe func(v *materialize.View) error
}

var churnField = [][]byte{[]byte("f"), []byte("v")}

func churnAdd(trim *streams.Trim) func(v *materialize.View) ([]codec.Event, error) {
	return func(v *materialize.View) ([]codec.Event, error) {
		_, _, evs, err := streams.Add(v, 0, key, churnField, streams.AddArgs{ID: streams.IDSpec{Auto: true}, Trim: trim})
		return evs, err
	}
}

func churnWorkloads() []churnWorkload {
	head := func(v *materialize.View) (codec.ID, error) {
		es, err := streams.Range(v, 0, key, codec.ID{}, codec.MaxID, 1, false)
		if err != nil || len(es) == 0 {
			return codec.ID{}, err
		}
		return es[0].ID, nil
	}
	return []churnWorkload{
		{name: "capped-exact", cycle: func(int) []func(v *materialize.View) ([]codec.Event, error) {
			return []func(v *materialize.View) ([]codec.Event, error){churnAdd(&streams.Trim{Strategy: streams.TrimMaxLen, MaxLen: 1000})}
		}, probe: func(v *materialize.View) error { _, err := head(v); return err }},
		{name: "capped-approx", cycle: func(int) []func(v *materialize.View) ([]codec.Event, error) {
			return []func(v *materialize.View) ([]codec.Event, error){churnAdd(&streams.Trim{Strategy: streams.TrimMaxLen, MaxLen: 1000, Approx: true})}
		}, probe: func(v *materialize.View) error { _, err := head(v); return err }},
		{name: "group-ack",
			setup: func(v *materialize.View) ([]codec.Event, error) {
				return groups.Create(v, 0, key, grp, groups.CreateArgs{Dollar: true, MkStream: true, EntriesRead: groups.InvalidEntriesRead})
			},
			cycle: func(int) []func(v *materialize.View) ([]codec.Event, error) {
				var got []codec.ID
				return []func(v *materialize.View) ([]codec.Event, error){
					churnAdd(nil),
					func(v *materialize.View) ([]codec.Event, error) {
						es, evs, err := groups.ReadNew(v, 0, key, groups.ReadArgs{Group: grp, Consumer: alice, Count: 1})
						got = entryIDs(es)
						return evs, err
					},
					func(v *materialize.View) ([]codec.Event, error) {
						_, evs, err := groups.Ack(v, 0, key, grp, got)
						return evs, err
					},
				}
			},
			probe: func(v *materialize.View) error {
				if _, err := groups.PendingSummary(v, 0, key, grp); err != nil {
					return err
				}
				if _, err := groups.PendingRange(v, 0, key, grp, groups.RangeArgs{Start: codec.ID{}, End: codec.MaxID, Count: 10}); err != nil {
					return err
				}
				if _, err := groups.PendingRange(v, 0, key, grp, groups.RangeArgs{Start: codec.ID{}, End: codec.MaxID, Count: 10, Consumer: alice}); err != nil {
					return err
				}
				if _, err := groups.ConsumerInfos(v, 0, key, grp); err != nil {
					return err
				}
				// XAUTOCLAIM and XREADGROUP history decide writes; a
				// decision that is not committed still does its reads.
				if _, _, _, _, err := groups.AutoClaim(v, 0, key, groups.AutoClaimArgs{Group: grp, Consumer: bob, Count: 10}); err != nil {
					return err
				}
				_, _, err := groups.ReadHistory(v, 0, key, groups.ReadArgs{Group: grp, Consumer: alice, Count: 10}, codec.ID{})
				return err
			}},
		// Delayed delivery: each cycle adds a delayed entry (due 2 ms
		// later) and an ordinary one to a capped stream, and a CLAIM 0
		// read parks the delayed one, takes the ordinary one, and claims
		// the delayed entries that have come due since; all are acked.
		// Parked, claimed and acked entries leave deletions in the W, P
		// and Q ranges that no later read may walk.
		{name: "delayed-park-claim-ack",
			setup: func(v *materialize.View) ([]codec.Event, error) {
				return groups.Create(v, 0, key, grp, groups.CreateArgs{Dollar: true, MkStream: true, EntriesRead: groups.InvalidEntriesRead})
			},
			cycle: func(int) []func(v *materialize.View) ([]codec.Event, error) {
				var got []codec.ID
				capped := &streams.Trim{Strategy: streams.TrimMaxLen, MaxLen: 1000, Approx: true}
				return []func(v *materialize.View) ([]codec.Event, error){
					func(v *materialize.View) ([]codec.Event, error) {
						_, _, evs, err := streams.Add(v, 0, key, churnField, streams.AddArgs{ID: streams.IDSpec{Auto: true}, Trim: capped, Delay: &streams.Delay{Ms: 2}})
						return evs, err
					},
					churnAdd(capped),
					func(v *materialize.View) ([]codec.Event, error) {
						s := groups.NewSession(v, 0)
						ds, err := s.ReadClaim(key, groups.ReadArgs{Group: grp, Consumer: alice, Count: 10})
						if err != nil {
							return nil, err
						}
						got = got[:0]
						for _, d := range ds {
							got = append(got, d.ID)
						}
						return s.Finish()
					},
					func(v *materialize.View) ([]codec.Event, error) {
						_, evs, err := groups.Ack(v, 0, key, grp, got)
						return evs, err
					},
				}
			},
			probe: func(v *materialize.View) error {
				if _, _, err := streams.ReadDue(v, 0, key, codec.ID{}, 10, v.NowMs()); err != nil {
					return err
				}
				if _, _, err := groups.NextClaimable(v, 0, key, grp, 0); err != nil {
					return err
				}
				if _, err := groups.PendingSummary(v, 0, key, grp); err != nil {
					return err
				}
				_, err := groups.PendingRange(v, 0, key, grp, groups.RangeArgs{Start: codec.ID{}, End: codec.MaxID, Count: 10})
				return err
			}},
		{name: "xdel-queue", cycle: func(int) []func(v *materialize.View) ([]codec.Event, error) {
			return []func(v *materialize.View) ([]codec.Event, error){
				churnAdd(nil),
				func(v *materialize.View) ([]codec.Event, error) {
					id, err := head(v)
					if err != nil {
						return nil, err
					}
					_, evs, err := streams.Del(v, 0, key, []codec.ID{id})
					return evs, err
				},
			}
		}, probe: func(v *materialize.View) error { _, err := head(v); return err }},
		// Lists used as queues and capped logs: pops and trims must not
		// leave work behind for the next pushes and reads.
		{name: "list-queue", setup: listPush(rlist.Right, 100), cycle: func(int) []func(v *materialize.View) ([]codec.Event, error) {
			return []func(v *materialize.View) ([]codec.Event, error){listPush(rlist.Right, 1), listPop(rlist.Left)}
		}, probe: listProbe},
		{name: "list-empties", cycle: func(int) []func(v *materialize.View) ([]codec.Event, error) {
			return []func(v *materialize.View) ([]codec.Event, error){listPush(rlist.Right, 1), listPop(rlist.Left)}
		}, probe: listProbe},
		{name: "list-capped", cycle: func(int) []func(v *materialize.View) ([]codec.Event, error) {
			return []func(v *materialize.View) ([]codec.Event, error){listPush(rlist.Left, 1), func(v *materialize.View) ([]codec.Event, error) {
				return rlist.Trim(v, 0, key, 0, 999)
			}}
		}, probe: listProbe},
		// Sorted sets as delayed-job queues (ZADD at a later score, pop
		// the lowest) and as ranked sets whose scores keep changing: pops
		// and score updates must not leave work for later reads.
		{name: "zset-delay-queue", setup: zsetAdd(0, 100), cycle: func(i int) []func(v *materialize.View) ([]codec.Event, error) {
			return []func(v *materialize.View) ([]codec.Event, error){zsetAdd(100+i, 1), zsetPop}
		}, probe: zsetProbe},
		{name: "zset-empties", cycle: func(i int) []func(v *materialize.View) ([]codec.Event, error) {
			return []func(v *materialize.View) ([]codec.Event, error){zsetAdd(i, 1), zsetPop}
		}, probe: zsetProbe},
		{name: "zset-ranked-updates", setup: zsetAdd(0, 3000), cycle: func(i int) []func(v *materialize.View) ([]codec.Event, error) {
			// Re-score one member of the 3,000 (rank blocks kept) and
			// trim the lowest score range that a delayed job would.
			return []func(v *materialize.View) ([]codec.Event, error){func(v *materialize.View) ([]codec.Event, error) {
				_, evs, err := rzset.Add(v, 0, key, []rzset.Member{{Member: zsetMember(i % 3000), Score: float64(3000 + i)}}, rzset.Flags{})
				return evs, err
			}}
		}, probe: zsetProbe},
	}
}

func zsetMember(i int) []byte { return []byte("member:" + strconv.Itoa(i)) }

// zsetAdd adds n members scored from..from+n-1 to key.
func zsetAdd(from, n int) func(v *materialize.View) ([]codec.Event, error) {
	return func(v *materialize.View) ([]codec.Event, error) {
		ms := make([]rzset.Member, n)
		for i := range ms {
			ms[i] = rzset.Member{Member: zsetMember(from + i), Score: float64(from + i)}
		}
		_, evs, err := rzset.Add(v, 0, key, ms, rzset.Flags{})
		return evs, err
	}
}

// zsetPop pops key's lowest member (ZPOPMIN).
func zsetPop(v *materialize.View) ([]codec.Event, error) {
	_, _, evs, err := rzset.Pop(v, 0, key, false, 1)
	return evs, err
}

// zsetProbe reads what a worker and a leaderboard read: the due jobs
// (ZRANGEBYSCORE -inf now LIMIT 0 10), the top ten, a rank and a count.
func zsetProbe(v *materialize.View) error {
	inf := math.Inf(1)
	if _, err := rzset.Range(v, 0, key, rzset.Query{By: rzset.ByScore, Min: rzset.ScoreBound{Value: -inf}, Max: rzset.ScoreBound{Value: 50}, Count: 10}); err != nil {
		return err
	}
	if _, err := rzset.Range(v, 0, key, rzset.Query{By: rzset.ByRank, Start: 0, Stop: 9, Rev: true}); err != nil {
		return err
	}
	if _, _, err := rzset.Rank(v, 0, key, zsetMember(5), false); err != nil {
		return err
	}
	_, err := rzset.Count(v, 0, key, rzset.Query{By: rzset.ByScore, Min: rzset.ScoreBound{Value: -inf}, Max: rzset.ScoreBound{Value: inf}, Count: -1})
	return err
}

// listPush pushes n elements onto key at side.
func listPush(side rlist.Side, n int) func(v *materialize.View) ([]codec.Event, error) {
	elems := make([][]byte, n)
	for i := range elems {
		elems[i] = []byte("element")
	}
	return func(v *materialize.View) ([]codec.Event, error) {
		_, evs, err := rlist.Push(v, 0, key, side, false, elems)
		return evs, err
	}
}

// listPop pops one element from key at side.
func listPop(side rlist.Side) func(v *materialize.View) ([]codec.Event, error) {
	return func(v *materialize.View) ([]codec.Event, error) {
		_, _, evs, err := rlist.Pop(v, 0, key, side, 1)
		return evs, err
	}
}

// listProbe reads both ends of key (LRANGE 0 9, LINDEX -1, LPOS from the
// tail).
func listProbe(v *materialize.View) error {
	if _, err := rlist.Range(v, 0, key, 0, 9); err != nil {
		return err
	}
	if _, _, err := rlist.Index(v, 0, key, -1); err != nil {
		return err
	}
	_, err := rlist.Pos(v, 0, key, []byte("absent"), -1, 1, 10)
	return err
}

// TestChurnCostFlat runs each churn workload for 10,000 and then 100,000
// cycles and checks that the storage work of the next cycles (Pebble's
// iterator stats: seeks, steps, internal steps, points visited and points
// under range tombstones) is the same within a small constant: deleted
// history below the live range is never visited. Under -race or -short it
// runs 2,000 and 20,000 cycles; make test also runs it without the race
// detector at full length.
func TestChurnCostFlat(t *testing.T) {
	marks := []int{10_000, 100_000}
	if testing.Short() || raceEnabled {
		marks = []int{2_000, 20_000}
	}
	const window = 200 // cycles measured at each mark: a multiple of the ~ trim block
	for _, w := range churnWorkloads() {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			s, c := open(t)
			if w.setup != nil {
				if _, err := s.Write(w.setup); err != nil {
					t.Fatal(err)
				}
			}
			done := 0
			run := func(n int) {
				var pend []*materialize.Pending
				for i := range n {
					c.Advance(1)
					for _, d := range w.cycle(done + i) {
						pend = append(pend, s.Submit(d))
					}
					if len(pend) >= 512 || i == n-1 {
						for _, p := range pend {
							if _, err := p.Wait(); err != nil {
								t.Fatalf("cycle %d: %v", done+i, err)
							}
						}
						pend = pend[:0]
					}
				}
				done += n
			}
			var per []materialize.IterStats
			for _, mark := range marks {
				run(mark - done)
				before := s.IterStats()
				for range window {
					run(1)
					if err := w.probe(s.View()); err != nil {
						t.Fatal(err)
					}
				}
				per = append(per, s.IterStats().Sub(before))
			}
			first, last := per[0], per[len(per)-1]
			t.Logf("%s: per %d cycles after %d: %+v; after %d: %+v", w.name, window, marks[0], first, marks[len(marks)-1], last)
			check := func(field string, a, b uint64) {
				// Within 20% plus one unit per cycle: flushes and
				// compactions move points between the memtable and levels.
				if b > a+a/5+window {
					t.Errorf("%s: %s per %d cycles grew from %d (after %d) to %d (after %d)",
						w.name, field, window, a, marks[0], b, marks[len(marks)-1])
				}
			}
			check("point lookups", first.Gets, last.Gets)
			check("iterators", first.Iterators, last.Iterators)
			check("seeks", first.Seeks, last.Seeks)
			check("steps", first.Steps, last.Steps)
			check("internal steps", first.InternalSteps, last.InternalSteps)
			check("points", first.Points, last.Points)
			check("points under range tombstones", first.PointsCovered, last.PointsCovered)
		})
	}
}
