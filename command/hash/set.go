package hash

import (
	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/internal/ldouble"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/types/rhash"
)

// HSET key field value [field value ...]: the number of new fields.
// HMSET likewise: OK.
// https://redis.io/docs/latest/commands/hset/
func runHSet(x *command.Ctx) error {
	if len(x.Args)%2 == 1 {
		return command.ErrWrongArgs(command.Lower(x.Args[0]))
	}
	hmset := command.EqualFold(x.Args[0], "HMSET")
	var n int64
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		var events []codec.Event
		var err error
		n, events, err = rhash.Set(v, x.DB, x.Args[1], x.Args[2:], false)
		return events, err
	}, func() {
		if hmset {
			x.Reply.OK()
		} else {
			x.Reply.Int(n)
		}
	})
}

// HSETNX key field value: 1 when set, 0 when the field exists.
// https://redis.io/docs/latest/commands/hsetnx/
func runHSetNX(x *command.Ctx) error {
	var n int64
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		var events []codec.Event
		var err error
		n, events, err = rhash.Set(v, x.DB, x.Args[1], x.Args[2:], true)
		return events, err
	}, func() { x.Reply.Int(n) })
}

// HDEL key field [field ...]: the number of fields removed.
// https://redis.io/docs/latest/commands/hdel/
func runHDel(x *command.Ctx) error {
	var n int64
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		var events []codec.Event
		var err error
		n, events, err = rhash.Del(v, x.DB, x.Args[1], x.Args[2:])
		return events, err
	}, func() { x.Reply.Int(n) })
}

// HINCRBY key field increment: the new value. The increment is parsed
// before the key is read, as Redis does.
// https://redis.io/docs/latest/commands/hincrby/
func runHIncrBy(x *command.Ctx) error {
	delta, err := command.IntArg(x.Args[3])
	if err != nil {
		return err
	}
	var n int64
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		var events []codec.Event
		var err error
		n, events, err = rhash.IncrBy(v, x.DB, x.Args[1], x.Args[2], delta)
		return events, wire(err)
	}, func() { x.Reply.Int(n) })
}

// HINCRBYFLOAT key field increment: the new value as a bulk string, with
// Redis's long double arithmetic and text (internal/ldouble). Checks in
// Redis 7.0's order: the increment, its finiteness, the key's type, the
// field's value, the result.
// https://redis.io/docs/latest/commands/hincrbyfloat/
func runHIncrByFloat(x *command.Ctx) error {
	incr, ok := ldouble.Parse(x.Args[3])
	if !ok {
		return command.ErrNotFloat
	}
	if incr.IsInf() {
		return command.ErrNaNOrInf
	}
	var out []byte
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		var events []codec.Event
		var err error
		out, events, err = rhash.Update(v, x.DB, x.Args[1], x.Args[2], func(cur []byte, ok bool) ([]byte, error) {
			return command.IncrFloat(cur, ok, incr, command.ErrHashNotFloat)
		})
		return events, err
	}, func() { x.Reply.Bulk(out) })
}
