package zset

import (
	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/command/reply"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/types/rzset"
)

// rangeForm is how one command of the ZRANGE family reads its arguments
// (Redis 7.0's zrangeGenericCommand parameters).
type rangeForm struct {
	at    int  // the source key's argument index
	store bool // ZRANGESTORE
	by    rzset.By
	auto  bool // BYSCORE/BYLEX may be given (ZRANGE, ZRANGESTORE)
	rev   bool
	dir   bool // REV may be given
}

func formOf(name []byte) rangeForm {
	switch {
	case command.EqualFold(name, "ZRANGESTORE"):
		return rangeForm{at: 2, store: true, auto: true, dir: true}
	case command.EqualFold(name, "ZREVRANGE"):
		return rangeForm{at: 1, rev: true}
	case command.EqualFold(name, "ZRANGEBYSCORE"):
		return rangeForm{at: 1, by: rzset.ByScore}
	case command.EqualFold(name, "ZREVRANGEBYSCORE"):
		return rangeForm{at: 1, by: rzset.ByScore, rev: true}
	case command.EqualFold(name, "ZRANGEBYLEX"):
		return rangeForm{at: 1, by: rzset.ByLex}
	case command.EqualFold(name, "ZREVRANGEBYLEX"):
		return rangeForm{at: 1, by: rzset.ByLex, rev: true}
	}
	return rangeForm{at: 1, auto: true, dir: true} // ZRANGE
}

// parseRange reads a ZRANGE-family command's query, as
// zrangeGenericCommand does: options first (WITHSCORES, LIMIT offset
// count, REV, BYSCORE, BYLEX where the command allows them), then the
// conflicts, then the range (given max first when reversed by score or
// lex).
func parseRange(args [][]byte, f rangeForm) (q rzset.Query, withScores bool, err error) {
	q = rzset.Query{By: f.by, Rev: f.rev, Count: -1}
	limit := false
	for j := f.at + 3; j < len(args); j++ {
		a, left := args[j], len(args)-j-1
		switch {
		case !f.store && command.EqualFold(a, "WITHSCORES"):
			withScores = true
		case command.EqualFold(a, "LIMIT") && left >= 2:
			if q.Offset, err = command.IntArg(args[j+1]); err != nil {
				return q, false, err
			}
			if q.Count, err = command.IntArg(args[j+2]); err != nil {
				return q, false, err
			}
			limit = q.Count != -1 // Redis's check: LIMIT x -1 passes with ranks
			j += 2
		case f.dir && command.EqualFold(a, "REV"):
			q.Rev, f.dir = true, false
		case f.auto && command.EqualFold(a, "BYLEX"):
			q.By, f.auto = rzset.ByLex, false
		case f.auto && command.EqualFold(a, "BYSCORE"):
			q.By, f.auto = rzset.ByScore, false
		default:
			return q, false, command.ErrSyntax
		}
	}
	switch {
	case limit && q.By == rzset.ByRank:
		return q, false, ErrLimitRank
	case withScores && q.By == rzset.ByLex:
		return q, false, ErrWithScoresLex
	}
	min, max := args[f.at+1], args[f.at+2]
	if q.Rev && q.By != rzset.ByRank {
		min, max = max, min
	}
	switch q.By {
	case rzset.ByRank:
		if q.Start, err = command.IntArg(min); err == nil {
			q.Stop, err = command.IntArg(max)
		}
	case rzset.ByScore:
		q.Min, q.Max, err = scoreRange(min, max)
	default:
		q.LexMin, q.LexMax, err = lexRange(min, max)
	}
	return q, withScores, err
}

// ZRANGE key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count]
// [WITHSCORES], and ZREVRANGE, ZRANGEBYSCORE, ZREVRANGEBYSCORE,
// ZRANGEBYLEX, ZREVRANGEBYLEX (the forms before 6.2): the members in the
// range. ZRANGESTORE dst src ...: the range stored as dst (deleted when
// empty), its size replied. A range by rank costs the blocks before its
// start plus the members returned (docs/commands.md).
// https://redis.io/docs/latest/commands/zrange/
func runZRange(x *command.Ctx) error {
	f := formOf(x.Args[0])
	q, withScores, err := parseRange(x.Args, f)
	if err != nil {
		return err
	}
	src := x.Args[f.at]
	if !f.store {
		// Each member is rendered as the walk meets it, held until their
		// count is known.
		h, w := reply.Hold(x.Reply)
		defer h.Release()
		n := 0
		if err := rzset.Each(x.View(), x.DB, src, q, func(member []byte, score float64) error {
			if withScores {
				w.Pair()
			}
			w.Bulk(member)
			if withScores {
				w.Double(score)
			}
			n++
			return nil
		}); err != nil {
			return err
		}
		if withScores {
			x.Reply.Pairs(n)
		} else {
			x.Reply.Array(n)
		}
		h.WriteTo(x.Reply)
		return nil
	}
	var n int64
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		ms, err := rzset.Range(v, x.DB, src, q)
		if err != nil {
			return nil, err
		}
		n = int64(len(ms))
		return rzset.Store(v, x.DB, x.Args[1], ms)
	}, func() { x.Reply.Int(n) })
}

// ZREMRANGEBYRANK key start stop, ZREMRANGEBYSCORE key min max,
// ZREMRANGEBYLEX key min max: the number of members removed.
// https://redis.io/docs/latest/commands/zremrangebyscore/
func runZRemRange(x *command.Ctx) error {
	q := rzset.Query{Count: -1}
	var err error
	switch name := x.Args[0]; {
	case command.EqualFold(name, "ZREMRANGEBYRANK"):
		if q.Start, err = command.IntArg(x.Args[2]); err == nil {
			q.Stop, err = command.IntArg(x.Args[3])
		}
	case command.EqualFold(name, "ZREMRANGEBYSCORE"):
		q.By = rzset.ByScore
		q.Min, q.Max, err = scoreRange(x.Args[2], x.Args[3])
	default:
		q.By = rzset.ByLex
		q.LexMin, q.LexMax, err = lexRange(x.Args[2], x.Args[3])
	}
	if err != nil {
		return err
	}
	var n int64
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		var events []codec.Event
		var err error
		n, events, err = rzset.RemRange(v, x.DB, x.Args[1], q)
		return events, err
	}, func() { x.Reply.Int(n) })
}
