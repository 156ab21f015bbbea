package rzset

import (
	"bytes"
	"cmp"
	"math"
	"slices"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
)

// SetOp is a sorted-set algebra operation.
type SetOp int

// The operations.
const (
	Union SetOp = iota
	Inter
	Diff
)

// Aggregate is how ZUNION and ZINTER combine a member's scores.
type Aggregate int

// The aggregates.
const (
	Sum Aggregate = iota
	Min
	Max
)

// source is one input of an algebra operation: a sorted set, a set (every
// member scored 1, as Redis reads sets) or a missing key (empty).
type source struct {
	key    []byte
	t      codec.Type // TypeZSet, TypeSet, or TypeNone when missing
	count  uint64
	floor  []byte // a sorted set's (codec.Meta.Floor)
	weight float64
}

// Compute returns the members of op over keys (weights: one per key, nil
// for all 1; ignored by Diff) combined by agg, in score order (ZUNION,
// ZINTER, ZDIFF and their STORE forms), as Redis 7.0's
// zunionInterDiffGenericCommand computes them, NaN conventions included: a
// weighted score that is NaN (0 × inf) is 0 where Redis makes it 0, and a
// sum of inf and -inf is 0. Counting stops at limit members of an Inter
// (0: no limit; ZINTERCARD). Every key's type is checked first: a key
// that is neither a sorted set nor a set is materialize.ErrWrongType.
func Compute(v *materialize.View, db uint8, op SetOp, keys [][]byte, weights []float64, agg Aggregate, limit int) ([]Member, error) {
	srcs := make([]source, len(keys))
	for i, k := range keys {
		m, ok, err := v.Meta(db, k)
		if err != nil {
			return nil, err
		}
		if ok && m.Type != codec.TypeZSet && m.Type != codec.TypeSet {
			return nil, materialize.ErrWrongType
		}
		srcs[i] = source{key: k, weight: 1}
		if ok {
			srcs[i].t, srcs[i].count, srcs[i].floor = m.Type, m.Count, m.Floor
		}
		if weights != nil {
			srcs[i].weight = weights[i]
		}
	}
	switch op {
	case Union:
		return union(v, db, srcs, agg)
	case Inter:
		return inter(v, db, srcs, agg, limit)
	}
	return diff(v, db, srcs)
}

// CheckSources returns materialize.ErrWrongType when one of keys is
// neither a sorted set nor a set (the algebra commands check this before
// their options).
func CheckSources(v *materialize.View, db uint8, keys [][]byte) error {
	for _, k := range keys {
		m, ok, err := v.Meta(db, k)
		if err != nil {
			return err
		}
		if ok && m.Type != codec.TypeZSet && m.Type != codec.TypeSet {
			return materialize.ErrWrongType
		}
	}
	return nil
}

// each calls fn with every member of src and its score.
func each(v *materialize.View, db uint8, src source, fn func(member []byte, score float64) (bool, error)) error {
	switch src.t {
	case codec.TypeZSet:
		yp := codec.KeyPrefix(codec.TagZScore, db, src.key)
		return v.Iterate(append(yp[:len(yp):len(yp)], src.floor...), codec.PrefixEnd(yp), false, func(k, val []byte) (bool, error) {
			s, mem, err := codec.DecodeZScoreSuffix(k[len(yp):])
			if err != nil {
				return false, err
			}
			return fn(mem, s)
		})
	case codec.TypeSet:
		sp := codec.KeyPrefix(codec.TagSet, db, src.key)
		return v.IterateNoValues(sp, codec.PrefixEnd(sp), false, func(k []byte) (bool, error) {
			return fn(k[len(sp):], 1)
		})
	}
	return nil
}

// find returns member's score in src.
func find(v *materialize.View, db uint8, src source, member []byte) (float64, bool, error) {
	switch src.t {
	case codec.TypeZSet:
		return score(v, db, src.key, member)
	case codec.TypeSet:
		ok, err := v.Has(codec.ElementKey(codec.TagSet, db, src.key, member))
		return 1, ok, err
	}
	return 0, false, nil
}

func aggregate(target *float64, val float64, agg Aggregate) {
	switch agg {
	case Sum:
		if *target += val; math.IsNaN(*target) {
			*target = 0
		}
	case Min:
		if val < *target {
			*target = val
		}
	case Max:
		if val > *target {
			*target = val
		}
	}
}

func weighted(w, s float64) float64 {
	if x := w * s; !math.IsNaN(x) {
		return x
	}
	return 0
}

func bySize(srcs []source) {
	slices.SortStableFunc(srcs, func(a, b source) int { return cmp.Compare(a.count, b.count) })
}

func union(v *materialize.View, db uint8, srcs []source, agg Aggregate) ([]Member, error) {
	bySize(srcs)
	acc := map[string]float64{}
	for _, src := range srcs {
		err := each(v, db, src, func(mem []byte, s float64) (bool, error) {
			s = weighted(src.weight, s)
			if cur, ok := acc[string(mem)]; ok {
				aggregate(&cur, s, agg)
				acc[string(mem)] = cur
			} else {
				acc[string(mem)] = s
			}
			return true, nil
		})
		if err != nil {
			return nil, err
		}
	}
	out := make([]Member, 0, len(acc))
	for mem, s := range acc {
		out = append(out, Member{[]byte(mem), s})
	}
	Sort(out)
	return out, nil
}

func inter(v *materialize.View, db uint8, srcs []source, agg Aggregate, limit int) ([]Member, error) {
	bySize(srcs)
	if len(srcs) == 0 || srcs[0].count == 0 {
		return nil, nil
	}
	var out []Member
	err := each(v, db, srcs[0], func(mem []byte, s0 float64) (bool, error) {
		total := weighted(srcs[0].weight, s0)
		for _, src := range srcs[1:] {
			s, ok := s0, true
			if !bytes.Equal(src.key, srcs[0].key) {
				var err error
				if s, ok, err = find(v, db, src, mem); err != nil {
					return false, err
				}
			}
			if !ok {
				return true, nil
			}
			aggregate(&total, s*src.weight, agg)
		}
		out = append(out, Member{bytes.Clone(mem), total})
		return limit <= 0 || len(out) < limit, nil
	})
	if err != nil {
		return nil, err
	}
	Sort(out)
	return out, nil
}

func diff(v *materialize.View, db uint8, srcs []source) ([]Member, error) {
	if len(srcs) == 0 || srcs[0].count == 0 {
		return nil, nil
	}
	var out []Member
	err := each(v, db, srcs[0], func(mem []byte, s float64) (bool, error) {
		for _, src := range srcs[1:] {
			if bytes.Equal(src.key, srcs[0].key) {
				return true, nil
			}
			if _, ok, err := find(v, db, src, mem); err != nil || ok {
				return err == nil, err
			}
		}
		out = append(out, Member{bytes.Clone(mem), s})
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	Sort(out)
	return out, nil
}

// Sort orders members as a sorted set does: by score (-0 equal to 0),
// then by member bytes.
func Sort(ms []Member) {
	slices.SortFunc(ms, func(a, b Member) int {
		switch {
		case a.Score < b.Score:
			return -1
		case a.Score > b.Score:
			return 1
		}
		return bytes.Compare(a.Member, b.Member)
	})
}
