package rzset

import (
	"slices"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/types/elements"
)

// Sample returns the members at positions chosen by pick among the set's
// [0, count) in score order, in pick's order (ZRANDMEMBER; see
// elements.Pick: with a count at least the set's size, the whole set in
// score order, as Redis replies).
func Sample(v *materialize.View, db uint8, key []byte, pick func(count int64) []int64) ([]Member, error) {
	m, ok, err := meta(v, db, key)
	if err != nil || !ok {
		return nil, err
	}
	return atRanks(v, db, key, m, pick(int64(m.Count)))
}

// SampleRepeat streams count uniform picks that may repeat (ZRANDMEMBER
// with a negative count): start gets the set's size (0: absent, nothing
// follows), then emit each pick, a chunk of picks per read
// (elements.Repeat).
func SampleRepeat(v *materialize.View, db uint8, key []byte, count int64, start func(n int64), emit func(Member)) error {
	m, ok, err := meta(v, db, key)
	if err != nil {
		return err
	}
	return elements.SampleRepeat(int64(m.Count), ok, count, start, func(pos []int64) ([]Member, error) {
		return atRanks(v, db, key, m, pos)
	}, emit)
}

// rankSeekSteps estimates what one seekRank costs in steps on a ranked set
// of n members: the rank blocks summed (a block holds ZBlockMerge to
// ZBlockMax members) and half a block walked.
func rankSeekSteps(n int64) int64 {
	return n/materialize.ZBlockMerge + materialize.ZBlockMax/2
}

// atRanks returns the members at ranks pos (0 <= each < Count), in pos's
// order. A few picks on a ranked set seek each rank; otherwise one walk
// from the floor to the highest rank picked reads them all, whichever
// costs fewer steps.
func atRanks(v *materialize.View, db uint8, key []byte, m codec.Meta, pos []int64) ([]Member, error) {
	if len(pos) == 0 {
		return nil, nil
	}
	yp := codec.KeyPrefix(codec.TagZScore, db, key)
	if m.Ranked && int64(len(pos))*rankSeekSteps(int64(m.Count)) < slices.Max(pos) {
		out := make([]Member, len(pos))
		for i, r := range pos {
			k, err := seekRank(v, db, key, m, r)
			if err != nil {
				return nil, err
			}
			if out[i], err = decodeY(yp, k, nil); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	suffixes, _, err := elements.SampleFrom(v, yp, low(yp, m), pos)
	if err != nil {
		return nil, err
	}
	out := make([]Member, len(suffixes))
	for i, s := range suffixes {
		f, mem, err := codec.DecodeZScoreSuffix(s)
		if err != nil {
			return nil, err
		}
		out[i] = Member{mem, f}
	}
	return out, nil
}

// Scan returns about count members from cursor (0: the start), as
// elements.Scan describes, with their scores. A set of at most
// elements.SmallCount members comes whole in score order (as Redis's
// listpack does); a larger one pages through its members in byte order.
func Scan(v *materialize.View, db uint8, key []byte, cursor uint64, count int, match func([]byte) bool) (cur uint64, members []Member, err error) {
	m, ok, err := meta(v, db, key)
	if err != nil || !ok {
		return 0, nil, err
	}
	if m.Count <= elements.SmallCount {
		yp := codec.KeyPrefix(codec.TagZScore, db, key)
		err := walk(v, db, key, m, Query{By: ByRank, Start: 0, Stop: -1}, func(k, val []byte) (bool, error) {
			s, mem, err := codec.DecodeZScoreSuffix(k[len(yp):])
			if err == nil && (match == nil || match(mem)) {
				members = append(members, Member{append([]byte(nil), mem...), s})
			}
			return err == nil, err
		})
		return 0, members, err
	}
	pg, err := elements.Scan(v, codec.KeyPrefix(codec.TagZMember, db, key), m.Count, cursor, count, match)
	if err != nil {
		return 0, nil, err
	}
	members = make([]Member, len(pg.Elems))
	for i, e := range pg.Elems {
		f, err := codec.DecodeScoreArg(pg.Vals[i])
		if err != nil {
			return 0, nil, err
		}
		members[i] = Member{e, f}
	}
	return pg.Cursor, members, nil
}
