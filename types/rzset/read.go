package rzset

import (
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
	yp := codec.KeyPrefix(codec.TagZScore, db, key)
	suffixes, _, err := elements.SampleFrom(v, yp, low(yp, m), pick(int64(m.Count)))
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
