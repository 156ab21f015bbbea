package broker

import (
	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/streams"
)

func init() {
	register(
		&cmdSpec{name: "xrange", arity: -4, flags: flagReadonly, first: 1, last: 1, step: 1,
			group: "stream", since: "5.0.0", summary: "Returns the messages from a stream within a range of IDs.", run: makeXRange(false)},
		&cmdSpec{name: "xrevrange", arity: -4, flags: flagReadonly, first: 1, last: 1, step: 1,
			group: "stream", since: "5.0.0", summary: "Returns the messages from a stream within a range of IDs in reverse order.", run: makeXRange(true)},
		&cmdSpec{name: "xlen", arity: 2, flags: flagReadonly | flagFast, first: 1, last: 1, step: 1,
			group: "stream", since: "5.0.0", summary: "Return the number of messages in a stream.", run: runXLen},
		&cmdSpec{name: "xdel", arity: -3, flags: flagWrite | flagFast, first: 1, last: 1, step: 1,
			group: "stream", since: "5.0.0", summary: "Returns the number of messages after removing them from a stream.", run: runXDel},
	)
}

// makeXRange returns XRANGE (or XREVRANGE when reverse).
// XRANGE key start end [COUNT count]; XREVRANGE key end start [COUNT count]
// Bounds: "-", "+", an ID ("ms" alone means ms-0 as a start, ms-max as an
// end) or an exclusive "(ID". As in Redis 7.0, a missing key replies an
// empty array, COUNT <= 0 the null array, and the last COUNT wins.
// https://redis.io/docs/latest/commands/xrange/
func makeXRange(reverse bool) func(x *exec) error {
	return func(x *exec) error {
		lo, hi := x.args[2], x.args[3]
		if reverse {
			lo, hi = hi, lo
		}
		start, err := rangeBound(lo, true)
		if err != nil {
			return err
		}
		end, err := rangeBound(hi, false)
		if err != nil {
			return err
		}
		count := int64(-1)
		for rest := x.args[4:]; len(rest) > 0; rest = rest[2:] {
			if len(rest) < 2 || !equalFold(rest[0], "COUNT") {
				return errSyntax
			}
			if count, err = intArg(rest[1]); err != nil {
				return err
			}
			if count < 0 {
				count = 0
			}
		}
		v := x.view()
		if _, ok, err := streams.Meta(v, x.db(), x.args[1]); err != nil || !ok {
			if err == nil {
				x.w().WriteArray(0)
			}
			return err
		}
		if count == 0 {
			writeNullArray(x.w())
			return nil
		}
		if count < 0 || count > int64(^uint(0)>>1) {
			count = 0 // no limit
		}
		entries, err := streams.Range(v, x.db(), x.args[1], start, end, int(count), reverse)
		if err != nil {
			return err
		}
		writeEntries(x.w(), entries)
		return nil
	}
}

// XLEN key. Reply: integer, 0 for a missing key.
// https://redis.io/docs/latest/commands/xlen/
func runXLen(x *exec) error {
	n, err := streams.Len(x.view(), x.db(), x.args[1])
	if err != nil {
		return err
	}
	x.w().WriteInt64(int64(n))
	return nil
}

// XDEL key id [id ...]. Reply: integer, the number of entries deleted. IDs
// are validated before anything is deleted.
// https://redis.io/docs/latest/commands/xdel/
func runXDel(x *exec) error {
	var n int
	return x.writeAsync(func(v *materialize.View) ([]codec.Event, error) {
		// As in Redis, a missing key deletes nothing before IDs are checked.
		if _, ok, err := streams.Meta(v, x.db(), x.args[1]); err != nil || !ok {
			return nil, err
		}
		ids, err := streamIDs(x.args[2:])
		if err != nil {
			return nil, err
		}
		var evs []codec.Event
		n, evs, err = streams.Del(v, x.db(), x.args[1], ids)
		return evs, err
	}, func() {
		x.w().WriteInt64(int64(n))
	})
}
