package stream

import (
	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/command/reply"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/streams"
)

// XRANGE key start end [COUNT count]; XREVRANGE key end start [COUNT count]
// Bounds: "-", "+", an ID ("ms" alone means ms-0 as a start, ms-max as an
// end) or an exclusive "(ID". As in Redis 7.0, a missing key replies an
// empty array, COUNT <= 0 the null array, and the last COUNT wins.
// https://redis.io/docs/latest/commands/xrange/
func runXRange(x *command.Ctx) error {
	reverse := command.EqualFold(x.Args[0], "XREVRANGE")
	lo, hi := x.Args[2], x.Args[3]
	if reverse {
		lo, hi = hi, lo
	}
	start, err := RangeBound(lo, true)
	if err != nil {
		return err
	}
	end, err := RangeBound(hi, false)
	if err != nil {
		return err
	}
	count := int64(-1)
	for rest := x.Args[4:]; len(rest) > 0; rest = rest[2:] {
		if len(rest) < 2 || !command.EqualFold(rest[0], "COUNT") {
			return command.ErrSyntax
		}
		if count, err = command.IntArg(rest[1]); err != nil {
			return err
		}
		if count < 0 {
			count = 0
		}
	}
	v := x.View()
	m, ok, err := streams.Meta(v, x.DB, x.Args[1])
	if err != nil || !ok {
		if err == nil {
			x.Reply.Array(0)
		}
		return err
	}
	if count == 0 {
		x.Reply.NullArray()
		return nil
	}
	if count < 0 || count > int64(^uint(0)>>1) {
		count = 0 // no limit
	}
	// The entries are rendered as the iterator meets them, held until the
	// array's length is known.
	h, w := reply.Hold(x.Reply)
	defer h.Release()
	n := 0
	if err := streams.EachInRange(v, x.DB, x.Args[1], m, start, end, int(count), reverse, func(e streams.Entry) (bool, error) {
		WriteEntry(w, e)
		n++
		return true, nil
	}); err != nil {
		return err
	}
	x.Reply.Array(n)
	h.WriteTo(x.Reply)
	return nil
}

// XLEN key. Reply: integer, 0 for a missing key.
// https://redis.io/docs/latest/commands/xlen/
func runXLen(x *command.Ctx) error {
	n, err := streams.Len(x.View(), x.DB, x.Args[1])
	if err != nil {
		return err
	}
	x.Reply.Int(int64(n))
	return nil
}

// XDEL key id [id ...]. Reply: integer, the number of entries deleted. IDs
// are validated before anything is deleted.
// https://redis.io/docs/latest/commands/xdel/
func runXDel(x *command.Ctx) error {
	var n int
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		// As in Redis, a missing key deletes nothing before IDs are checked.
		if _, ok, err := streams.Meta(v, x.DB, x.Args[1]); err != nil || !ok {
			return nil, err
		}
		ids, err := parseIDs(x.Args[2:])
		if err != nil {
			return nil, err
		}
		var evs []codec.Event
		n, evs, err = streams.Del(v, x.DB, x.Args[1], ids)
		return evs, wire(err)
	}, func() { x.Reply.Int(int64(n)) })
}
