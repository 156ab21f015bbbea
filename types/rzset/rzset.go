// Package rzset is the semantics of Redis sorted sets: decisions over a
// materialize.View that return results and change events. A sorted set is
// its key's metadata (codec.Meta of TypeZSet: the member count, so ZCARD is
// O(1), and whether it keeps rank blocks) plus two keys per member: Z
// (member → score: ZSCORE, ZMSCORE, ZADD's lookups) and Y (the score index,
// ordered by score then member: ranges, ranks, pops). A set of RankOn
// members or more also keeps rank blocks (codec/zset.go), so a rank or a
// range by rank walks at most the blocks before it plus one block, not every
// member before it. A sorted set never exists empty.
//
// Errors: materialize.ErrWrongType for a key of another type; ErrNaN for
// an increment whose result is not a number. Semantics follow Redis 7.0's
// t_zset.c. Design: docs/rfcs/20261123_sorted_sets.md.
package rzset

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
)

// RankOn is the member count from which a set keeps rank blocks; RankOff
// the count below which it drops them (the gap keeps a set that hovers
// around one threshold from building and dropping them on every write).
// Below RankOn a rank walks at most RankOn members.
const (
	RankOn  = materialize.ZBlockMax
	RankOff = materialize.ZBlockMerge / 2
)

// ErrNaN is an increment whose result is not a number (ZADD INCR,
// ZINCRBY of inf and -inf): Redis's "resulting score is not a number".
var ErrNaN = errors.New("rzset: resulting score is not a number")

// Member is one member with its score.
type Member struct {
	Member []byte
	Score  float64
}

func meta(v *materialize.View, db uint8, key []byte) (codec.Meta, bool, error) {
	m, ok, err := v.Meta(db, key)
	if err == nil && ok && m.Type != codec.TypeZSet {
		err = materialize.ErrWrongType
	}
	return m, ok && err == nil, err
}

func metaForWrite(v *materialize.View, db uint8, key []byte) (codec.Meta, bool, []codec.Event, error) {
	m, ok, events, err := v.MetaForWrite(db, key)
	if err == nil && ok && m.Type != codec.TypeZSet {
		err = materialize.ErrWrongType
	}
	return m, ok && err == nil, events, err
}

// Card returns the number of members (ZCARD), 0 when missing.
func Card(v *materialize.View, db uint8, key []byte) (int64, error) {
	m, _, err := meta(v, db, key)
	return int64(m.Count), err
}

// Exists reports whether key holds a sorted set; another type is
// ErrWrongType.
func Exists(v *materialize.View, db uint8, key []byte) (bool, error) {
	_, ok, err := meta(v, db, key)
	return ok, err
}

// FirstNonEmpty returns the first of keys that holds a sorted set
// (ZMPOP, BZPOPMIN); a key of another type met first is ErrWrongType.
func FirstNonEmpty(v *materialize.View, db uint8, keys [][]byte) ([]byte, bool, error) {
	for _, k := range keys {
		if ok, err := Exists(v, db, k); err != nil || ok {
			return k, ok, err
		}
	}
	return nil, false, nil
}

// score reads member's score from its Z key.
func score(v *materialize.View, db uint8, key, member []byte) (float64, bool, error) {
	b, ok, err := v.Get(codec.ZMemberKey(db, key, member))
	if err != nil || !ok {
		return 0, false, err
	}
	f, err := codec.DecodeScoreArg(b)
	return f, err == nil, err
}

// Scores returns each member's score (ZSCORE, ZMSCORE); found[i] is false
// for a member not in the set or a missing key.
func Scores(v *materialize.View, db uint8, key []byte, members [][]byte) (scores []float64, found []bool, err error) {
	scores, found = make([]float64, len(members)), make([]bool, len(members))
	if _, ok, err := meta(v, db, key); err != nil || !ok {
		return scores, found, err
	}
	for i, mem := range members {
		if scores[i], found[i], err = score(v, db, key, mem); err != nil {
			return nil, nil, err
		}
	}
	return scores, found, nil
}

// Rank returns member's rank, 0-based, in ascending order or, with rev,
// descending (ZRANK, ZREVRANK); false when the member or key is missing.
// O(1) point reads plus one rank count (rankBefore).
func Rank(v *materialize.View, db uint8, key, member []byte, rev bool) (int64, bool, error) {
	m, ok, err := meta(v, db, key)
	if err != nil || !ok {
		return 0, false, err
	}
	s, ok, err := score(v, db, key, member)
	if err != nil || !ok {
		return 0, false, err
	}
	r, err := rankBefore(v, db, key, m, codec.ZScoreKey(db, key, s, member))
	if rev {
		r = int64(m.Count) - 1 - r
	}
	return r, err == nil, err
}

// tailWalk is how far from the end of a set with rank blocks a rank is
// found by walking back from its last member, before the blocks are summed
// from its start: leaderboards read their top (ZREVRANK of the leaders,
// ZRANGE -10 -1), where a walk of a few keys beats a seek per block.
const tailWalk = 256

// rankBefore returns the number of score-index keys of the set below yk.
// Without rank blocks it counts them (fewer than RankOn members); with
// them it first walks back from the last member up to tailWalk keys, then
// sums the counts of the blocks wholly below yk (each ends at or below it)
// and counts within the block that holds yk: O(N/ZBlockMerge + ZBlockMax).
func rankBefore(v *materialize.View, db uint8, key []byte, m codec.Meta, yk []byte) (int64, error) {
	yp := codec.KeyPrefix(codec.TagZScore, db, key)
	from := low(yp, m)
	var before int64
	if m.Ranked {
		var above int64 // keys at or above yk seen from the end
		found := false
		err := v.IterateNoValues(from, codec.PrefixEnd(yp), true, func(k []byte) (bool, error) {
			if bytes.Compare(k, yk) < 0 {
				found = true
				return false, nil
			}
			above++
			return above < tailWalk, nil
		})
		if err != nil {
			return 0, err
		}
		if found || above < tailWalk { // reached a key below yk, or the start
			return int64(m.Count) - above, nil
		}
		bp := codec.KeyPrefix(codec.TagZBlock, db, key)
		upper := append(append(bp[:len(bp):len(bp)], yk[len(yp):]...), 0)
		var lo []byte // the upper fence of the last block below yk
		err = v.IterateCheapSteps(blocksFrom(bp, m), upper, func(k, val []byte) (bool, error) {
			n, _, err := codec.DecodeZBlock(val)
			before += int64(n)
			lo = append(lo[:0], k[len(bp):]...)
			return true, err
		})
		if err != nil {
			return 0, err
		}
		from = maxKey(append(yp[:len(yp):len(yp)], lo...), from)
	}
	if bytes.Compare(from, yk) >= 0 {
		return before, nil
	}
	err := v.IterateNoValues(from, yk, false, func(_ []byte) (bool, error) {
		before++
		return true, nil
	})
	return before, err
}

// seekRank returns the score-index key at rank r (0 <= r < Count) in
// ascending order. Without rank blocks it walks from the nearer end; with
// them it sums block counts forward from the block holding the floor
// (View.IterateCheapSteps: a block key is rewritten on every change, and
// its versions still in the memtable must not be walked), then walks
// within one block.
func seekRank(v *materialize.View, db uint8, key []byte, m codec.Meta, r int64) ([]byte, error) {
	yp := codec.KeyPrefix(codec.TagZScore, db, key)
	n := int64(m.Count)
	from, skip := low(yp, m), r // walk forward from `from`, skipping `skip` keys
	if m.Ranked && r >= n-tailWalk {
		return walkBack(v, yp, from, key, n-1-r)
	}
	if m.Ranked {
		bp := codec.KeyPrefix(codec.TagZBlock, db, key)
		var lo []byte
		var seen int64
		found := false
		err := v.IterateCheapSteps(blocksFrom(bp, m), codec.PrefixEnd(bp), func(k, val []byte) (bool, error) {
			c, l, err := codec.DecodeZBlock(val)
			if err != nil {
				return false, err
			}
			if seen+int64(c) > r {
				found, lo, skip = true, append([]byte(nil), l...), r-seen
				return false, nil
			}
			seen += int64(c)
			return true, nil
		})
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, fmt.Errorf("rzset: rank blocks of %q end before rank %d: %w", key, r, codec.ErrCorrupt)
		}
		from = maxKey(append(yp[:len(yp):len(yp)], lo...), from)
	} else if r >= n/2 {
		return walkBack(v, yp, from, key, n-1-r)
	}
	var out []byte
	err := v.IterateNoValues(from, codec.PrefixEnd(yp), false, func(k []byte) (bool, error) {
		if skip == 0 {
			out = append([]byte(nil), k...)
			return false, nil
		}
		skip--
		return true, nil
	})
	if err == nil && out == nil {
		err = fmt.Errorf("rzset: score index of %q ends before rank %d: %w", key, r, codec.ErrCorrupt)
	}
	return out, err
}

// walkBack returns the score-index key skip keys before the last one,
// walking back from the end of the index yp (down to from).
func walkBack(v *materialize.View, yp, from, key []byte, skip int64) ([]byte, error) {
	var out []byte
	err := v.IterateNoValues(from, codec.PrefixEnd(yp), true, func(k []byte) (bool, error) {
		if skip == 0 {
			out = append([]byte(nil), k...)
			return false, nil
		}
		skip--
		return true, nil
	})
	if err == nil && out == nil {
		err = fmt.Errorf("rzset: score index of %q ends before the rank asked: %w", key, codec.ErrCorrupt)
	}
	return out, err
}

// blocksFrom returns where a walk over the rank blocks (prefix bp) of the
// set m starts: at the first block that may hold a member, the first whose
// upper fence is at or above the floor. The blocks below held only members
// now gone, and were deleted as they emptied; their keys' tombstones, and
// the versions of every count they held, stay in the memtable until a
// flush, and a walk from bp would step over them all.
func blocksFrom(bp []byte, m codec.Meta) []byte {
	return append(bp[:len(bp):len(bp)], m.Floor...)
}

// decodeY decodes a Y key (full key) and value under prefix yp into a
// Member (copied).
func decodeY(yp, k, val []byte) (Member, error) {
	s, mem, err := codec.DecodeZScoreSuffix(k[len(yp):])
	return Member{Member: bytes.Clone(mem), Score: s}, err
}
