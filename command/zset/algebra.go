package zset

import (
	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/internal/num"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/types/rzset"
)

// algebra is one parsed ZUNION/ZINTER/ZDIFF/ZINTERCARD request.
type algebra struct {
	op         rzset.SetOp
	dst        []byte // the STORE forms' destination
	keys       [][]byte
	weights    []float64
	agg        rzset.Aggregate
	withScores bool
	card       bool  // ZINTERCARD
	limit      int64 // ZINTERCARD's LIMIT
	optErr     error // an option error, replied after the keys' type check as in Redis
}

// parseAlgebra reads the request as zunionInterDiffGenericCommand does:
// numkeys and the keys first (errors replied at once), then the options
// (an error there is kept in optErr: Redis checks the keys' types before
// it parses them).
func parseAlgebra(args [][]byte) (a algebra, err error) {
	name := args[0]
	at := 1
	switch {
	case command.EqualFold(name, "ZUNION"), command.EqualFold(name, "ZUNIONSTORE"):
		a.op = rzset.Union
	case command.EqualFold(name, "ZDIFF"), command.EqualFold(name, "ZDIFFSTORE"):
		a.op = rzset.Diff
	default:
		a.op = rzset.Inter
	}
	a.card = command.EqualFold(name, "ZINTERCARD")
	if len(name) > 5 && command.EqualFold(name[len(name)-5:], "STORE") {
		a.dst, at = args[1], 2
	}
	n, err := command.IntArg(args[at])
	if err != nil {
		return a, err
	}
	if n < 1 {
		return a, errInputKeys(name)
	}
	if n > int64(len(args)-at-1) {
		return a, command.ErrSyntax
	}
	a.keys = args[at+1 : at+1+int(n)]
	a.optErr = a.parseOptions(args[at+1+int(n):])
	return a, nil
}

func (a *algebra) parseOptions(opts [][]byte) error {
	for j := 0; j < len(opts); j++ {
		o, left := opts[j], len(opts)-j
		switch {
		case a.op != rzset.Diff && !a.card && left >= len(a.keys)+1 && command.EqualFold(o, "WEIGHTS"):
			a.weights = make([]float64, len(a.keys))
			for i := range a.keys {
				j++
				w, ok := num.ParseDouble(opts[j])
				if !ok {
					return ErrWeightNotFloat
				}
				a.weights[i] = w
			}
		case a.op != rzset.Diff && !a.card && left >= 2 && command.EqualFold(o, "AGGREGATE"):
			j++
			switch o := opts[j]; {
			case command.EqualFold(o, "SUM"):
				a.agg = rzset.Sum
			case command.EqualFold(o, "MIN"):
				a.agg = rzset.Min
			case command.EqualFold(o, "MAX"):
				a.agg = rzset.Max
			default:
				return command.ErrSyntax
			}
		case a.dst == nil && !a.card && command.EqualFold(o, "WITHSCORES"):
			a.withScores = true
		case a.card && left >= 2 && command.EqualFold(o, "LIMIT"):
			j++
			l, ok := command.ParseInt(opts[j])
			if !ok || l < 0 {
				return command.ErrLimitNegative
			}
			a.limit = l
		default:
			return command.ErrSyntax
		}
	}
	return nil
}

// compute checks the keys' types, then the options, then computes.
func (a *algebra) compute(v *materialize.View, db uint8) ([]rzset.Member, error) {
	if err := rzset.CheckSources(v, db, a.keys); err != nil {
		return nil, err
	}
	if a.optErr != nil {
		return nil, a.optErr
	}
	return rzset.Compute(v, db, a.op, a.keys, a.weights, a.agg, int(min(a.limit, 1<<31)))
}

// ZUNION|ZINTER numkeys key [key ...] [WEIGHTS weight ...] [AGGREGATE
// SUM|MIN|MAX] [WITHSCORES], ZDIFF numkeys key [key ...] [WITHSCORES]:
// the result in score order. The STORE forms (destination numkeys ...)
// store it (deleting destination when empty) and reply its size;
// ZINTERCARD numkeys key [key ...] [LIMIT limit] replies the size of the
// intersection, counting stopped at limit. Sets count as sorted sets whose
// scores are all 1.
// https://redis.io/docs/latest/commands/zunion/
func runAlgebra(x *command.Ctx) error {
	a, err := parseAlgebra(x.Args)
	if err != nil {
		return err
	}
	if a.dst == nil {
		ms, err := a.compute(x.View(), x.DB)
		if err != nil {
			return err
		}
		if a.card {
			x.Reply.Int(int64(len(ms)))
			return nil
		}
		members(x, ms, a.withScores)
		return nil
	}
	var n int64
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		ms, err := a.compute(v, x.DB)
		if err != nil {
			return nil, err
		}
		n = int64(len(ms))
		return rzset.Store(v, x.DB, a.dst, ms)
	}, func() { x.Reply.Int(n) })
}
