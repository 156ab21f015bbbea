package str

import (
	"math"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/internal/ldouble"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/types/rstring"
)

// APPEND key value. Reply: the new length.
// https://redis.io/docs/latest/commands/append/
func runAppend(x *command.Ctx) error {
	var n int64
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		var events []codec.Event
		var err error
		n, events, err = rstring.Append(v, x.DB, x.Args[1], x.Args[2])
		return events, wire("append", err)
	}, func() { x.Reply.Int(n) })
}

// SETRANGE key offset value. Reply: the new length.
// https://redis.io/docs/latest/commands/setrange/
func runSetRange(x *command.Ctx) error {
	offset, err := command.IntArg(x.Args[2])
	if err != nil {
		return err
	}
	if offset < 0 {
		return command.ErrOffsetRange
	}
	var n int64
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		var events []codec.Event
		var err error
		n, events, err = rstring.SetRange(v, x.DB, x.Args[1], offset, x.Args[3])
		return events, wire("setrange", err)
	}, func() { x.Reply.Int(n) })
}

// INCR key, DECR key, INCRBY key increment, DECRBY key decrement. Reply:
// the new value.
// https://redis.io/docs/latest/commands/incr/
func runIncr(x *command.Ctx) error {
	var delta int64
	switch cmd := command.Lower(x.Args[0]); cmd {
	case "incr":
		delta = 1
	case "decr":
		delta = -1
	default:
		n, err := command.IntArg(x.Args[2])
		if err != nil {
			return err
		}
		if cmd == "decrby" {
			if n == math.MinInt64 {
				return command.ErrDecrOverflow
			}
			n = -n
		}
		delta = n
	}
	var n int64
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		var events []codec.Event
		var err error
		n, events, err = rstring.IncrBy(v, x.DB, x.Args[1], delta)
		return events, wire("incr", err)
	}, func() { x.Reply.Int(n) })
}

// INCRBYFLOAT key increment. Reply: the new value as a bulk string. The
// arithmetic and the text are Redis's long double ones (internal/ldouble):
// SET n 0.1, INCRBYFLOAT n 0.2 gives "0.3". Checks in Redis 7.0's order:
// the key's type, the stored value, the increment, the result.
// https://redis.io/docs/latest/commands/incrbyfloat/
func runIncrByFloat(x *command.Ctx) error {
	var out []byte
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		var events []codec.Event
		var err error
		out, events, err = rstring.Update(v, x.DB, x.Args[1], func(cur []byte, ok bool) ([]byte, error) {
			// Redis checks the type (rstring.Update), then the stored value,
			// then the increment; both number errors have the same text.
			incr, valid := ldouble.Parse(x.Args[2])
			if !valid {
				return nil, command.ErrNotFloat
			}
			return command.IncrFloat(cur, ok, incr, command.ErrNotFloat)
		})
		return events, err
	}, func() { x.Reply.Bulk(out) })
}
