package broker

import (
	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/streams"
)

func init() {
	register(
		&command{name: "xrange", arity: -4, flags: flagReadonly, first: 1, last: 1, step: 1,
			group: "stream", since: "5.0.0", summary: "Returns the messages from a stream within a range of IDs.", run: makeXRange(false)},
		&command{name: "xrevrange", arity: -4, flags: flagReadonly, first: 1, last: 1, step: 1,
			group: "stream", since: "5.0.0", summary: "Returns the messages from a stream within a range of IDs in reverse order.", run: makeXRange(true)},
		&command{name: "xlen", arity: 2, flags: flagReadonly | flagFast, first: 1, last: 1, step: 1,
			group: "stream", since: "5.0.0", summary: "Return the number of messages in a stream.", run: runXLen},
		&command{name: "xdel", arity: -3, flags: flagWrite | flagFast, first: 1, last: 1, step: 1,
			group: "stream", since: "5.0.0", summary: "Returns the number of messages after removing them from a stream.", run: runXDel},
	)
}

// makeXRange returns XRANGE (or XREVRANGE when reverse).
// XRANGE key start end [COUNT count]; XREVRANGE key end start [COUNT count]
// Bounds: "-", "+", an ID ("ms" alone means ms-0 as a start, ms-max as an
// end) or an exclusive "(ID". COUNT <= 0 replies the null array, as Redis 7.0 does.
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
		count := -1
		switch rest := x.args[4:]; {
		case len(rest) == 2 && equalFold(rest[0], "COUNT"):
			n, err := intArg(rest[1])
			if err != nil {
				return err
			}
			if n <= 0 {
				writeNullArray(x.w())
				return nil
			}
			if n < int64(^uint(0)>>1) {
				count = int(n)
			}
		case len(rest) != 0:
			return errSyntax
		}
		entries, err := streams.Range(x.view(), x.db(), x.args[1], start, end, count, reverse)
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
	ids := make([]codec.ID, len(x.args)-2)
	for i, a := range x.args[2:] {
		id, err := streamID(a, 0)
		if err != nil {
			return err
		}
		ids[i] = id
	}
	var n int
	err := x.write(func(v *materialize.View) ([]codec.Event, error) {
		var (
			evs []codec.Event
			err error
		)
		n, evs, err = streams.Del(v, x.db(), x.args[1], ids)
		return evs, err
	})
	if err != nil {
		return err
	}
	x.w().WriteInt64(int64(n))
	return nil
}
