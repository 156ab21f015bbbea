package streams_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/keyspace"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/streams"
)

// TestEachMatchesRange: Each, which the writer's tail cache answers when it
// holds a stream's newest entries, returns exactly what a range read of
// Pebble returns, through random XADDs (delayed ones among them), XDELs,
// trims, DEL, RENAME, COPY, FLUSHDB and SWAPDB, with reads decided in the
// same commit groups as the writes (so they see staged entries). It fails
// if the cache was never used. Half the XADDs use nodes of 3 to 6 entries,
// whose inner IDs come from the same cache and from the commit group's
// staged entries (StreamNode.Inner), and the store check runs after every
// commit group.
func TestEachMatchesRange(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			s, c := open(t)
			r := rand.New(rand.NewPCG(seed, 7))
			keys := [][]byte{[]byte("a"), []byte("b")}
			before := s.IterStats()
			for step := range 400 {
				c.Advance(int64(r.IntN(3)))
				var pend []*materialize.Pending
				for range 1 + r.IntN(4) {
					op, k, k2 := r.IntN(20), keys[r.IntN(2)], keys[r.IntN(2)]
					n, pick, flip := 1+r.IntN(3), r.Uint64(), r.IntN(2)
					size := 1 + r.IntN(40)
					switch r.IntN(50) {
					case 0:
						size = 300 << 10 // larger than a tail may hold
					case 1, 2, 3, 4, 5, 6:
						size = 8 << 10 // a few fill a tail: its oldest entries drop
					}
					pend = append(pend, s.Submit(func(v *materialize.View) ([]codec.Event, error) {
						switch {
						case op < 9: // XADD, some capped, some delayed
							a := streams.AddArgs{ID: streams.IDSpec{Auto: true}}
							if flip == 0 {
								a.Trim = &streams.Trim{Strategy: streams.TrimMaxLen, MaxLen: uint64(4 + n)}
							}
							if op == 8 {
								a.Delay = &streams.Delay{Ms: 10}
							}
							if op%2 == 0 {
								a.Config = streams.Config{NodeMaxEntries: 3 + int64(pick%4), NodeMaxBytes: 1 << 20}
							}
							_, _, evs, err := streams.Add(v, 0, k, [][]byte{[]byte("f"), make([]byte, size)}, a)
							return evs, err
						case op < 11: // XDEL of an existing entry
							es, err := streams.Range(v, 0, k, codec.ID{}, codec.MaxID, 0, false)
							if err != nil || len(es) == 0 {
								return nil, err
							}
							_, evs, err := streams.Del(v, 0, k, []codec.ID{es[pick%uint64(len(es))].ID})
							return evs, err
						case op == 11:
							_, evs, err := streams.TrimStream(v, 0, k, streams.Trim{Strategy: streams.TrimMaxLen, MaxLen: pick % 4})
							return evs, err
						case op == 12:
							_, evs, err := keyspace.Del(v, 0, [][]byte{k})
							return evs, err
						case op == 13:
							_, evs, err := keyspace.Rename(v, 0, k, k2, false)
							return evs, err
						case op == 14:
							_, evs, err := keyspace.Copy(v, 0, k, 0, k2, true)
							return evs, err
						case op == 15 && pick%8 == 0:
							return keyspace.FlushDB(v, 0)
						case op == 15:
							return keyspace.SwapDB(0, 1), nil
						default: // read: Each against Range at several starts
							return nil, compareEach(v, k, pick)
						}
					}))
				}
				for _, p := range pend {
					if _, err := p.Wait(); err != nil && !errorsIsStreamArg(err) {
						t.Fatalf("step %d: %v", step, err)
					}
				}
				mustCheck(t, s, fmt.Sprintf("step %d", step))
			}
			if hits := s.IterStats().Sub(before).TailHits; hits == 0 {
				t.Errorf("the tail cache answered no read")
			}
		})
	}
}

// errorsIsStreamArg reports the refusals a random step may meet (a RENAME
// of a missing key, a RENAME or COPY of a key onto itself): they change
// nothing.
func errorsIsStreamArg(err error) bool {
	return errors.Is(err, keyspace.ErrNoSuchKey) || errors.Is(err, keyspace.ErrSameObject)
}

// compareEach reads k's entries after several IDs with Each and with Range
// in the same view, and reports the first difference.
func compareEach(v *materialize.View, k []byte, pick uint64) error {
	all, err := streams.Range(v, 0, k, codec.ID{}, codec.MaxID, 0, false)
	if err != nil {
		return err
	}
	afters := []codec.ID{{}}
	if len(all) > 0 {
		i := pick % uint64(len(all))
		afters = append(afters, all[i].ID, all[len(all)-1].ID, codec.ID{Ms: all[i].ID.Ms, Seq: 0})
	}
	for _, after := range afters {
		var got []streams.Entry
		if err := streams.Each(v, 0, k, after, func(e streams.Entry) (bool, error) {
			got = append(got, e)
			return true, nil
		}); err != nil {
			return err
		}
		var want []streams.Entry
		if start, ok := after.Next(); ok {
			for _, e := range all {
				if !e.ID.Less(start) {
					want = append(want, e)
				}
			}
		}
		if len(got)+len(want) > 0 && !reflect.DeepEqual(got, want) {
			return fmt.Errorf("Each(%q, after %v) = %d entries %v, Range has %d %v", k, after, len(got), entryIDs(got), len(want), entryIDs(want))
		}
	}
	return nil
}

func entryIDs(es []streams.Entry) []codec.ID {
	out := make([]codec.ID, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

// TestEachAfterTailDrops: a stream that outgrows its tail (64 KiB of
// fields) drops its oldest entries from the cache; reads from before the
// cached ones go to Pebble and still return every entry.
func TestEachAfterTailDrops(t *testing.T) {
	s, _ := open(t)
	k := []byte("big")
	for i := range 30 {
		if _, err := s.Write(func(v *materialize.View) ([]codec.Event, error) {
			_, _, evs, err := streams.Add(v, 0, k, [][]byte{[]byte("f"), bytes.Repeat([]byte{byte(i)}, 8<<10)}, streams.AddArgs{ID: streams.IDSpec{Auto: true}})
			return evs, err
		}); err != nil {
			t.Fatal(err)
		}
	}
	before := s.IterStats()
	if _, err := s.Write(func(v *materialize.View) ([]codec.Event, error) {
		all, err := streams.Range(v, 0, k, codec.ID{}, codec.MaxID, 0, false)
		if err != nil || len(all) != 30 {
			return nil, fmt.Errorf("range: %d entries, %v", len(all), err)
		}
		for i := range all {
			if err := compareEach(v, k, uint64(i)); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	st := s.IterStats().Sub(before)
	if st.TailHits == 0 || st.Iterators <= 30 {
		t.Errorf("tail hits %d, iterators %d: want reads from both the cache and Pebble", st.TailHits, st.Iterators)
	}
}
