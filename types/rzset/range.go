package rzset

import (
	"bytes"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
)

// By is what a range selects on.
type By int

// The range kinds: ZRANGE's default, BYSCORE and BYLEX.
const (
	ByRank By = iota
	ByScore
	ByLex
)

// ScoreBound is one end of a score range: "(" makes it exclusive;
// "-inf"/"+inf" are infinite values.
type ScoreBound struct {
	Value float64
	Excl  bool
}

// LexBound is one end of a lexicographic range: Inf -1 for "-", +1 for
// "+", else Value, exclusive for "(" and inclusive for "[".
type LexBound struct {
	Value []byte
	Excl  bool
	Inf   int
}

// Query selects members: by rank (Start, Stop; negative counts from the
// end), by score (Min, Max) or by member (LexMin, LexMax); Rev reads in
// descending order (ranks then count from the highest member). Offset and
// Count are LIMIT's (Count < 0: no limit; a negative Offset selects
// nothing, as in Redis), for ByScore and ByLex only.
type Query struct {
	By             By
	Start, Stop    int64
	Min, Max       ScoreBound
	LexMin, LexMax LexBound
	Rev            bool
	Offset, Count  int64
}

// Range returns the members q selects, in q's order (ZRANGE and its older
// forms, ZRANGESTORE's source). A missing key selects nothing.
func Range(v *materialize.View, db uint8, key []byte, q Query) ([]Member, error) {
	var out []Member
	err := Each(v, db, key, q, func(member []byte, score float64) error {
		out = append(out, Member{Member: bytes.Clone(member), Score: score})
		return nil
	})
	return out, err
}

// Each calls fn with each member q selects and its score, in q's order,
// as Range returns them but without copies: member is valid only during
// the call. It stops at fn's first error, which it returns. A missing key
// selects nothing. ZRANGE renders each member as it comes (docs/perf.md,
// "ZRANGE and HGETALL without a copy per element").
func Each(v *materialize.View, db uint8, key []byte, q Query, fn func(member []byte, score float64) error) error {
	m, ok, err := meta(v, db, key)
	if err != nil || !ok {
		return err
	}
	yp := codec.KeyPrefix(codec.TagZScore, db, key)
	return walk(v, db, key, m, q, func(k, _ []byte) (bool, error) {
		s, mem, err := codec.DecodeZScoreSuffix(k[len(yp):])
		if err == nil {
			err = fn(mem, s)
		}
		return err == nil, err
	})
}

// Count returns how many members q selects (ZCOUNT, ZLEXCOUNT; q.Count
// must be -1 and q.Offset 0). A score range of a set with rank blocks is
// two rank counts (rankBefore), not a walk over the members between.
func Count(v *materialize.View, db uint8, key []byte, q Query) (int64, error) {
	m, ok, err := meta(v, db, key)
	if err != nil || !ok {
		return 0, err
	}
	if q.By == ByScore && m.Ranked {
		yp := codec.KeyPrefix(codec.TagZScore, db, key)
		lo, hi := scoreKeys(yp, q.Min, q.Max)
		if bytes.Compare(lo, hi) >= 0 {
			return 0, nil
		}
		a, err := rankBefore(v, db, key, m, lo)
		if err != nil {
			return 0, err
		}
		b, err := rankBefore(v, db, key, m, hi)
		return b - a, err
	}
	var n int64
	err = walk(v, db, key, m, q, func(_, _ []byte) (bool, error) { n++; return true, nil })
	return n, err
}

// scoreKeys returns the score-index span [lo, hi) of a score range.
func scoreKeys(yp []byte, min, max ScoreBound) (lo, hi []byte) {
	lo = codec.AppendScore(yp[:len(yp):len(yp)], min.Value)
	if min.Excl {
		lo = codec.PrefixEnd(lo)
	}
	hi = codec.AppendScore(yp[:len(yp):len(yp)], max.Value)
	if !max.Excl {
		hi = codec.PrefixEnd(hi)
	}
	return lo, hi
}

// walk calls fn with the score-index key and value of each member q
// selects, in q's order, until fn returns false.
func walk(v *materialize.View, db uint8, key []byte, m codec.Meta, q Query, fn func(k, val []byte) (bool, error)) error {
	yp := codec.KeyPrefix(codec.TagZScore, db, key)
	end := codec.PrefixEnd(yp)
	switch q.By {
	case ByRank:
		n := int64(m.Count)
		start, stop := q.Start, q.Stop
		if start < 0 {
			start += n
		}
		if stop < 0 {
			stop += n
		}
		start = max(start, 0)
		if start > stop || start >= n {
			return nil
		}
		stop = min(stop, n-1)
		left := stop - start + 1
		// From the lowest (with Rev the highest) member, as ZPOPMIN and a
		// top-ten ZREVRANGE read, the walk needs no rank: it starts at an
		// end of the index.
		lo, hi := low(yp, m), end
		if start > 0 {
			if q.Rev {
				start = n - 1 - start // the first member returned, in ascending rank
			}
			k0, err := seekRank(v, db, key, m, start)
			if err != nil {
				return err
			}
			if q.Rev {
				hi = append(k0, 0)
			} else {
				lo = k0
			}
		}
		return v.Iterate(lo, hi, q.Rev, func(k, val []byte) (bool, error) {
			more, err := fn(k, val)
			left--
			return more && left > 0, err
		})
	case ByScore:
		lo, hi := scoreKeys(yp, q.Min, q.Max)
		lo = maxKey(lo, low(yp, m))
		if bytes.Compare(lo, hi) >= 0 || q.Offset < 0 || q.Count == 0 {
			return nil
		}
		skip, left := q.Offset, q.Count
		return v.Iterate(lo, hi, q.Rev, func(k, val []byte) (bool, error) {
			if skip > 0 {
				skip--
				return true, nil
			}
			more, err := fn(k, val)
			left--
			return more && left != 0, err
		})
	}
	return walkLex(v, yp, low(yp, m), q, fn)
}

// walkLex walks a lexicographic range as Redis 7.0 does over a listpack:
// from the start (the end with Rev), skip members before the range, then
// take members while they are in it. Redis defines BYLEX only for members
// of one score; when the set's first and last members share their score,
// the walk starts with a seek to the range rather than at the start.
func walkLex(v *materialize.View, yp, from []byte, q Query, fn func(k, val []byte) (bool, error)) error {
	if q.Offset < 0 || q.Count == 0 {
		return nil
	}
	if c := lexCompare(q.LexMin, q.LexMax); c > 0 || c == 0 && (q.LexMin.Excl || q.LexMax.Excl) {
		return nil // a range that is always empty (zslIsInLexRange)
	}
	end := codec.PrefixEnd(yp)
	lo, hi := from, end
	first, last, err := ends(v, yp, from)
	if err != nil || first == nil {
		return err
	}
	// Redis first checks the set's last member against min and its first
	// against max (zzlIsInLexRange); with mixed scores that can differ from
	// the walk.
	if !lexAfter(last[codec.ScoreLen:], q.LexMin, true) || !lexAfter(first[codec.ScoreLen:], q.LexMax, false) {
		return nil
	}
	if bytes.Equal(first[:codec.ScoreLen], last[:codec.ScoreLen]) {
		sp := append(yp[:len(yp):len(yp)], first[:codec.ScoreLen]...)
		switch {
		case q.Rev && q.LexMax.Inf == 0 && q.LexMax.Excl:
			hi = append(sp, q.LexMax.Value...)
		case q.Rev && q.LexMax.Inf == 0:
			hi = append(append(sp, q.LexMax.Value...), 0)
		case !q.Rev && q.LexMin.Inf == 0 && q.LexMin.Excl:
			lo = maxKey(append(append(sp, q.LexMin.Value...), 0), from)
		case !q.Rev && q.LexMin.Inf == 0:
			lo = maxKey(append(sp, q.LexMin.Value...), from)
		}
	}
	gteMin := func(mem []byte) bool { return lexAfter(mem, q.LexMin, true) }
	lteMax := func(mem []byte) bool { return lexAfter(mem, q.LexMax, false) }
	in, until := gteMin, lteMax
	if q.Rev {
		in, until = lteMax, gteMin
	}
	skip, left := q.Offset, q.Count
	taking := false
	return v.Iterate(lo, hi, q.Rev, func(k, val []byte) (bool, error) {
		mem := k[len(yp)+codec.ScoreLen:]
		if !taking {
			if !in(mem) {
				return true, nil
			}
			taking = true
		}
		if !until(mem) {
			return false, nil
		}
		if skip > 0 {
			skip--
			return true, nil
		}
		more, err := fn(k, val)
		left--
		return more && left != 0, err
	})
}

// lexAfter reports, for the range's min (isMin), whether mem is at or
// past it (Redis's zslLexValueGteMin), or for its max whether mem is at or
// before it (zslLexValueLteMax).
func lexAfter(mem []byte, b LexBound, isMin bool) bool {
	if b.Inf != 0 {
		return (b.Inf < 0) == isMin
	}
	c := bytes.Compare(mem, b.Value)
	if !isMin {
		c = -c
	}
	if b.Excl {
		return c > 0
	}
	return c >= 0
}

// lexCompare compares a range's min and max as Redis's sdscmplex does
// ("-" below everything, "+" above).
func lexCompare(a, b LexBound) int {
	switch {
	case a.Inf != 0 || b.Inf != 0:
		if a.Inf == b.Inf && a.Inf != 0 {
			return 0
		}
		if a.Inf < 0 || b.Inf > 0 {
			return -1
		}
		return 1
	}
	return bytes.Compare(a.Value, b.Value)
}

// ends returns the score-index suffixes of the set's first and last
// members (nil for an empty set); from is where the index's live keys
// start (low).
func ends(v *materialize.View, yp, from []byte) (first, last []byte, err error) {
	end := codec.PrefixEnd(yp)
	grab := func(dst *[]byte) func(k, _ []byte) (bool, error) {
		return func(k, _ []byte) (bool, error) {
			*dst = append([]byte(nil), k[len(yp):]...)
			return false, nil
		}
	}
	if err := v.Iterate(from, end, false, grab(&first)); err != nil {
		return nil, nil, err
	}
	if err := v.Iterate(from, end, true, grab(&last)); err != nil {
		return nil, nil, err
	}
	return first, last, nil
}
