package rzset_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/types/rzset"
)

func open(tb testing.TB) *materialize.Store {
	tb.Helper()
	s, err := materialize.Open(materialize.Options{Dir: tb.TempDir()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// model is the reference: member → score, and the members in set order.
type model map[string]float64

func (m model) sorted() []rzset.Member {
	out := make([]rzset.Member, 0, len(m))
	for k, s := range m {
		out = append(out, rzset.Member{Member: []byte(k), Score: s})
	}
	rzset.Sort(out)
	return out
}

func write(tb testing.TB, s *materialize.Store, decide func(v *materialize.View) ([]codec.Event, error)) {
	tb.Helper()
	if _, err := s.Write(decide); err != nil {
		tb.Fatal(err)
	}
}

// TestRankBlocksModel drives a sorted set through random adds, score
// changes, removals, pops and rank-range removals across the rank-block
// thresholds (built at RankOn members, split, merged, dropped below
// RankOff) and checks, after every step, ranks, ranges by rank from both
// ends, score counts and the blocks' own invariants against a model.
func TestRankBlocksModel(t *testing.T) {
	if raceEnabled {
		t.Skip("160 s under -race; make test runs it without")
	}
	s := open(t)
	key := []byte("z\x00k")
	ref := model{}
	rng := rand.New(rand.NewPCG(1, 2))
	member := func() []byte { return fmt.Appendf(nil, "m%05d", rng.IntN(30000)) }
	score := func() float64 { return float64(rng.IntN(400)) / 4 } // many ties
	var maxBlocks int
	var wasRanked, dropped bool
	// Phases: grow past several splits, churn, shrink below RankOff, churn.
	// adds is the chance of an add out of 10 (else a removal, pop or
	// range removal).
	phase := func(step int) (adds, batch int) {
		switch {
		case step < 40:
			return 8, 800
		case step < 80:
			return 5, 200
		case step < 130:
			return 0, 800
		}
		return 5, 60
	}
	for step := 0; step < 170; step++ {
		adds, batch := phase(step)
		op := rng.IntN(10)
		switch {
		case op < adds:
			var ms []rzset.Member
			for range 1 + rng.IntN(batch) {
				ms = append(ms, rzset.Member{Member: member(), Score: score()})
			}
			write(t, s, func(v *materialize.View) ([]codec.Event, error) {
				_, ev, err := rzset.Add(v, 0, key, ms, rzset.Flags{})
				return ev, err
			})
			for _, m := range ms {
				ref[string(m.Member)] = m.Score
			}
		case op < max(adds, 2)+3:
			var ms [][]byte
			for range 1 + rng.IntN(batch) {
				ms = append(ms, member())
			}
			write(t, s, func(v *materialize.View) ([]codec.Event, error) {
				_, ev, err := rzset.Rem(v, 0, key, ms)
				return ev, err
			})
			for _, m := range ms {
				delete(ref, string(m))
			}
		case op < max(adds, 2)+5:
			maxSide := rng.IntN(2) == 0
			count := int64(1 + rng.IntN(batch))
			var got []rzset.Member
			write(t, s, func(v *materialize.View) ([]codec.Event, error) {
				var ev []codec.Event
				var err error
				got, _, ev, err = rzset.Pop(v, 0, key, maxSide, count)
				return ev, err
			})
			want := ref.sorted()
			if maxSide {
				slices.Reverse(want)
			}
			want = want[:min(int(count), len(want))]
			equal(t, fmt.Sprintf("step %d pop", step), got, want)
			for _, m := range got {
				delete(ref, string(m.Member))
			}
		default:
			start := int64(rng.IntN(len(ref) + 1))
			stop := start + int64(rng.IntN(batch))
			write(t, s, func(v *materialize.View) ([]codec.Event, error) {
				_, ev, err := rzset.RemRange(v, 0, key, rzset.Query{By: rzset.ByRank, Start: start, Stop: stop, Count: -1})
				return ev, err
			})
			all := ref.sorted()
			for _, m := range all[min(int(start), len(all)):min(int(stop)+1, len(all))] {
				delete(ref, string(m.Member))
			}
		}
		blocks, ranked := check(t, s, key, ref, rng, step)
		if step%10 == 0 {
			t.Logf("step %d: %d members, %d blocks", step, len(ref), blocks)
		}
		maxBlocks = max(maxBlocks, blocks)
		if wasRanked && !ranked && len(ref) > 0 {
			dropped = true
		}
		wasRanked = ranked
	}
	// The walk must have reached what it tests: several blocks (splits),
	// and a set that dropped its blocks while not empty.
	if maxBlocks < 4 || !dropped {
		t.Fatalf("the walk reached at most %d blocks, dropped %v", maxBlocks, dropped)
	}
}

func equal(t *testing.T, what string, got, want []rzset.Member) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d members, want %d", what, len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i].Member, want[i].Member) || got[i].Score != want[i].Score {
			t.Fatalf("%s: [%d] = %s %v, want %s %v", what, i, got[i].Member, got[i].Score, want[i].Member, want[i].Score)
		}
	}
}

// check compares the set with ref and returns its number of rank blocks
// and whether it keeps them.
func check(t *testing.T, s *materialize.Store, key []byte, ref model, rng *rand.Rand, step int) (int, bool) {
	t.Helper()
	v := s.View()
	all := ref.sorted()
	n := int64(len(all))
	if c, err := rzset.Card(v, 0, key); err != nil || c != n {
		t.Fatalf("step %d: ZCARD %d (%v), want %d", step, c, err, n)
	}
	if n == 0 {
		return 0, false
	}
	for range 5 {
		i := rng.Int64N(n)
		for _, rev := range []bool{false, true} {
			r, ok, err := rzset.Rank(v, 0, key, all[i].Member, rev)
			want := i
			if rev {
				want = n - 1 - i
			}
			if err != nil || !ok || r != want {
				t.Fatalf("step %d: rank of %s (rev %v) = %d %v %v, want %d", step, all[i].Member, rev, r, ok, err, want)
			}
		}
		start, stop := rng.Int64N(n), rng.Int64N(n)+int64(rng.IntN(20))
		for _, rev := range []bool{false, true} {
			got, err := rzset.Range(v, 0, key, rzset.Query{By: rzset.ByRank, Start: start, Stop: stop, Rev: rev, Count: -1})
			if err != nil {
				t.Fatal(err)
			}
			src := slices.Clone(all)
			if rev {
				slices.Reverse(src)
			}
			var want []rzset.Member
			if start <= stop {
				want = src[min(start, n):min(stop+1, n)]
			}
			equal(t, fmt.Sprintf("step %d ZRANGE %d %d rev %v", step, start, stop, rev), got, want)
		}
		lo, hi := all[rng.Int64N(n)].Score, all[rng.Int64N(n)].Score
		q := rzset.Query{By: rzset.ByScore, Min: rzset.ScoreBound{Value: lo, Excl: rng.IntN(2) == 0}, Max: rzset.ScoreBound{Value: hi}, Count: -1}
		var want int64
		for _, m := range all {
			if (m.Score > lo || !q.Min.Excl && m.Score == lo) && m.Score <= hi {
				want++
			}
		}
		if c, err := rzset.Count(v, 0, key, q); err != nil || c != want {
			t.Fatalf("step %d: ZCOUNT %v %v = %d (%v), want %d", step, q.Min, q.Max, c, err, want)
		}
	}
	checkFloor(t, v, key, step)
	return checkBlocks(t, v, key, n, step)
}

// checkFloor verifies that the set's floor is its lowest score-index
// suffix, truncated to codec.ZFloorMax.
func checkFloor(t *testing.T, v *materialize.View, key []byte, step int) {
	t.Helper()
	m, _, err := v.Meta(0, key)
	if err != nil {
		t.Fatal(err)
	}
	yp := codec.KeyPrefix(codec.TagZScore, 0, key)
	var first []byte
	if err := v.Iterate(yp, codec.PrefixEnd(yp), false, func(k, _ []byte) (bool, error) {
		first = bytes.Clone(k[len(yp):])
		return false, nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := first[:min(len(first), codec.ZFloorMax)]; !bytes.Equal(m.Floor, want) {
		t.Fatalf("step %d: floor %q, lowest suffix %q", step, m.Floor, first)
	}
}

// checkBlocks verifies the rank blocks: present exactly when the metadata
// says Ranked, each block's count the number of score-index keys from its
// fence to the next, none empty, none above ZBlockMax, no two neighbours
// at or below ZBlockMerge together.
func checkBlocks(t *testing.T, v *materialize.View, key []byte, n int64, step int) (int, bool) {
	t.Helper()
	m, _, err := v.Meta(0, key)
	if err != nil {
		t.Fatal(err)
	}
	bp := codec.KeyPrefix(codec.TagZBlock, 0, key)
	yp := codec.KeyPrefix(codec.TagZScore, 0, key)
	var his, los [][]byte
	var counts []int64
	if err := v.Iterate(bp, codec.PrefixEnd(bp), false, func(k, val []byte) (bool, error) {
		n, lo, err := codec.DecodeZBlock(val)
		his = append(his, bytes.Clone(k[len(bp):]))
		los = append(los, bytes.Clone(lo))
		counts = append(counts, int64(n))
		return true, err
	}); err != nil {
		t.Fatal(err)
	}
	if !m.Ranked {
		if len(his) != 0 {
			t.Fatalf("step %d: %d rank blocks in a set without Ranked (%d members)", step, len(his), n)
		}
		return 0, false
	}
	var total int64
	for i := range his {
		want := []byte{}
		if i > 0 {
			want = his[i-1]
		}
		if !bytes.Equal(los[i], want) {
			t.Fatalf("step %d: block %d starts at %q, the block before ends at %q", step, i, los[i], want)
		}
		var got int64
		if err := v.Iterate(append(bytes.Clone(yp), los[i]...), append(bytes.Clone(yp), his[i]...), false, func(_, _ []byte) (bool, error) { got++; return true, nil }); err != nil {
			t.Fatal(err)
		}
		if got != counts[i] || got == 0 || got > materialize.ZBlockMax {
			t.Fatalf("step %d: block %d of %d counts %d, holds %d", step, i, len(his), counts[i], got)
		}
		if i > 0 && counts[i-1]+counts[i] <= materialize.ZBlockMerge {
			t.Fatalf("step %d: blocks %d and %d hold %d+%d", step, i-1, i, counts[i-1], counts[i])
		}
		total += got
	}
	if total != n || (len(his) > 0 && !bytes.Equal(his[len(his)-1], codec.ZBlockEnd)) {
		t.Fatalf("step %d: blocks count %d members, want %d; last ends at %q", step, total, n, his[len(his)-1])
	}
	fences := his
	return len(fences), true
}

// TestUnrankAfterLeadingBlocksGo: a removal that takes a ranked set below
// RankOff and removes its lowest members past the first blocks' upper
// fences drops every block, those below the new floor included.
func TestUnrankAfterLeadingBlocksGo(t *testing.T) {
	for _, pop := range []bool{false, true} {
		s := open(t)
		key := []byte("z")
		ref := model{}
		var ms []rzset.Member
		for i := range 3 * materialize.ZBlockMerge {
			m := rzset.Member{Member: fmt.Appendf(nil, "m%05d", i), Score: float64(i)}
			ms = append(ms, m)
			ref[string(m.Member)] = m.Score
		}
		write(t, s, func(v *materialize.View) ([]codec.Event, error) {
			_, ev, err := rzset.Add(v, 0, key, ms, rzset.Flags{})
			return ev, err
		})
		if _, ranked := checkBlocks(t, s.View(), key, int64(len(ref)), 0); !ranked {
			t.Fatal("a set of 3 blocks' members is not ranked")
		}
		n := int64(len(ms) - rzset.RankOff + 1) // leaves RankOff-1 members, the highest
		write(t, s, func(v *materialize.View) ([]codec.Event, error) {
			if pop {
				_, _, ev, err := rzset.Pop(v, 0, key, false, n)
				return ev, err
			}
			_, ev, err := rzset.RemRange(v, 0, key, rzset.Query{By: rzset.ByRank, Start: 0, Stop: n - 1, Count: -1})
			return ev, err
		})
		for _, m := range ms[:n] {
			delete(ref, string(m.Member))
		}
		if _, ranked := check(t, s, key, ref, rand.New(rand.NewPCG(1, 2)), 1); ranked {
			t.Fatalf("pop %v: %d members still ranked", pop, len(ref))
		}
	}
}
