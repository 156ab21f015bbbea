package hash

import (
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/command/reply"
	"github.com/sediment-dev/sediment/internal/num"
	"github.com/sediment-dev/sediment/types/elements"
	"github.com/sediment-dev/sediment/types/rhash"
)

// HGET key field: the value, or nil.
// https://redis.io/docs/latest/commands/hget/
func runHGet(x *command.Ctx) error {
	val, ok, err := rhash.Get(x.View(), x.DB, x.Args[1], x.Args[2])
	if err != nil {
		return err
	}
	if ok {
		x.Reply.Bulk(val)
	} else {
		x.Reply.NullBulk()
	}
	return nil
}

// HMGET key field [field ...]: a value or nil per field.
// https://redis.io/docs/latest/commands/hmget/
func runHMGet(x *command.Ctx) error {
	vals, found, err := rhash.MGet(x.View(), x.DB, x.Args[1], x.Args[2:])
	if err != nil {
		return err
	}
	x.Reply.Array(len(vals))
	for i, v := range vals {
		if found[i] {
			x.Reply.Bulk(v)
		} else {
			x.Reply.NullBulk()
		}
	}
	return nil
}

// HLEN key: the number of fields, O(1).
// https://redis.io/docs/latest/commands/hlen/
func runHLen(x *command.Ctx) error {
	n, err := rhash.Len(x.View(), x.DB, x.Args[1])
	if err != nil {
		return err
	}
	x.Reply.Int(n)
	return nil
}

// HSTRLEN key field: the value's length, 0 when missing.
// https://redis.io/docs/latest/commands/hstrlen/
func runHStrlen(x *command.Ctx) error {
	val, _, err := rhash.Get(x.View(), x.DB, x.Args[1], x.Args[2])
	if err != nil {
		return err
	}
	x.Reply.Int(int64(len(val)))
	return nil
}

// HEXISTS key field: 1 or 0.
// https://redis.io/docs/latest/commands/hexists/
func runHExists(x *command.Ctx) error {
	_, ok, err := rhash.Get(x.View(), x.DB, x.Args[1], x.Args[2])
	if err != nil {
		return err
	}
	x.Reply.IntBool(ok)
	return nil
}

// HKEYS, HVALS, HGETALL key: the fields, the values, or both (a map), in
// field byte order.
// https://redis.io/docs/latest/commands/hgetall/
func runHAll(x *command.Ctx) error {
	keys, vals := true, true
	switch {
	case command.EqualFold(x.Args[0], "HKEYS"):
		vals = false
	case command.EqualFold(x.Args[0], "HVALS"):
		keys = false
	}
	// Rendered as the walk meets them, held until their count is known.
	h, w := reply.Hold(x.Reply)
	defer h.Release()
	n := 0
	_, err := rhash.All(x.View(), x.DB, x.Args[1], func(f, v []byte) bool {
		if keys {
			w.Bulk(f)
		}
		if vals {
			w.Bulk(v)
		}
		n++
		return true
	})
	if err != nil {
		return err
	}
	if keys && vals {
		x.Reply.Map(n)
	} else {
		x.Reply.Array(n)
	}
	h.WriteTo(x.Reply)
	return nil
}

// HRANDFIELD key [count [WITHVALUES]]: one random field (or nil); with a
// count, that many distinct fields (at most all), or with a negative count
// that many picks that may repeat; WITHVALUES adds each value (RESP2:
// field, value, ... flat; RESP3: [field, value] pairs, reply.Pairs).
// https://redis.io/docs/latest/commands/hrandfield/
func runHRandField(x *command.Ctx) error {
	if len(x.Args) == 2 {
		fs, _, err := rhash.Sample(x.View(), x.DB, x.Args[1], func(n int64) []int64 {
			if n == 0 {
				return nil
			}
			return []int64{rand.Int64N(n)}
		})
		if err != nil {
			return err
		}
		if len(fs) == 0 {
			x.Reply.NullBulk()
		} else {
			x.Reply.Bulk(fs[0])
		}
		return nil
	}
	count, ok := num.ParseInt(x.Args[2])
	if !ok {
		return command.ErrNotInteger
	}
	if count < -math.MaxInt64 {
		return command.ErrValueRange(-math.MaxInt64, math.MaxInt64)
	}
	withValues := false
	switch {
	case len(x.Args) > 4 || (len(x.Args) == 4 && !command.EqualFold(x.Args[3], "WITHVALUES")):
		return command.ErrSyntax
	case len(x.Args) == 4:
		withValues = true
		if count < -math.MaxInt64/2 || count > math.MaxInt64/2 {
			return command.ErrOutOfRange
		}
	}
	if count < 0 {
		return rhash.SampleRepeat(x.View(), x.DB, x.Args[1], -count, func(n int64) {
			switch {
			case n == 0:
				x.Reply.Array(0)
			case withValues:
				x.Reply.Pairs(int(-count))
			default:
				x.Reply.Array(int(-count))
			}
		}, func(f, v []byte) {
			if withValues {
				x.Reply.Pair()
			}
			x.Reply.Bulk(f)
			if withValues {
				x.Reply.Bulk(v)
			}
		})
	}
	fs, vs, err := rhash.Sample(x.View(), x.DB, x.Args[1], func(n int64) []int64 { return elements.Pick(n, count) })
	if err != nil {
		return err
	}
	if withValues {
		x.Reply.Pairs(len(fs))
	} else {
		x.Reply.Array(len(fs))
	}
	for i := range fs {
		if withValues {
			x.Reply.Pair()
		}
		x.Reply.Bulk(fs[i])
		if withValues {
			x.Reply.Bulk(vs[i])
		}
	}
	return nil
}

// HSCAN key cursor [MATCH pattern] [COUNT count] [NOVALUES]: [next cursor,
// [field, value, ...]]. Hashes of up to 128 fields come whole in one call
// (cursor 0), as Redis's small hashes do; larger ones about COUNT fields a
// call, with a cursor of Sediment's own (rhash.Scan). NOVALUES (Redis
// 7.4) returns the fields alone.
// https://redis.io/docs/latest/commands/hscan/
func runHScan(x *command.Ctx) error {
	// Redis's order: the cursor, then the key (missing: an empty page
	// whatever the options; another type: WRONGTYPE), then the options.
	if _, ok := num.ParseCursor(x.Args[2]); !ok {
		return command.ErrInvalidCursor
	}
	v := x.View()
	if n, err := rhash.Len(v, x.DB, x.Args[1]); err != nil || n == 0 {
		if err == nil {
			command.EmptyScan(x)
		}
		return err
	}
	a, err := command.ParseScan(x.Args, true)
	if err != nil {
		return err
	}
	pg, err := rhash.Scan(v, x.DB, x.Args[1], a.Cursor, a.Count, a.Match)
	if err != nil {
		return err
	}
	x.Reply.Array(2)
	var buf [20]byte
	x.Reply.Bulk(strconv.AppendUint(buf[:0], pg.Cursor, 10))
	if a.NoValues {
		x.Reply.Array(len(pg.Elems))
	} else {
		x.Reply.Array(2 * len(pg.Elems))
	}
	for i, f := range pg.Elems {
		x.Reply.Bulk(f)
		if !a.NoValues {
			x.Reply.Bulk(pg.Vals[i])
		}
	}
	return nil
}
