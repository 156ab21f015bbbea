package stream

import (
	"errors"
	"strconv"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/groups"
	"github.com/sediment-dev/sediment/materialize"
)

// XACK key group id [id ...]
// Reply: integer, the number of IDs that were pending and are now acknowledged.
// https://redis.io/docs/latest/commands/xack/
func runXAck(x *command.Ctx) error {
	var n int
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		// As in Redis: no key or group acknowledges nothing, before IDs are checked.
		if _, _, err := groups.Lookup(v, x.DB, x.Args[1], x.Args[2]); err != nil {
			if errors.Is(err, groups.ErrNoGroup) {
				err = nil
			}
			return nil, err
		}
		ids, err := parseIDs(x.Args[3:])
		if err != nil {
			return nil, err
		}
		var evs []codec.Event
		n, evs, err = groups.Ack(v, x.DB, x.Args[1], x.Args[2], ids)
		return evs, err
	}, func() { x.Reply.Int(int64(n)) })
}

// XPENDING key group [[IDLE min-idle-time] start end count [consumer]]
// Summary reply: [count, smallest ID, greatest ID, [[consumer, count], ...]]
// (nil, nil, nil when the PEL is empty). Extended reply: [[ID, consumer,
// idle ms, delivery count], ...].
// https://redis.io/docs/latest/commands/xpending/
func runXPending(x *command.Ctx) error {
	key, group := x.Args[1], x.Args[2]
	n := len(x.Args)
	if n != 3 && (n < 6 || n > 9) {
		return command.ErrSyntax
	}
	w := x.Reply
	if n == 3 {
		s, err := groups.PendingSummary(x.View(), x.DB, key, group)
		if errors.Is(err, groups.ErrNoGroup) {
			return command.ErrNoGroup(key, group)
		}
		if err != nil {
			return err
		}
		w.Array(4)
		w.Int(s.Count)
		if s.Count == 0 {
			w.NullBulk()
			w.NullBulk()
			w.NullArray()
			return nil
		}
		WriteID(w, s.Min)
		WriteID(w, s.Max)
		w.Array(len(s.Consumers))
		for _, c := range s.Consumers {
			w.Array(2)
			w.Bulk(c.Consumer)
			w.BulkString(strconv.FormatInt(c.Count, 10))
		}
		return nil
	}
	// The extended form, parsed in Redis's order: IDLE, count, start, end;
	// arguments after the consumer are ignored, as in Redis 7.0.
	var a groups.RangeArgs
	at := 3
	if command.EqualFold(x.Args[3], "IDLE") {
		idle, err := command.IntArg(x.Args[4]) // before the count check, as Redis
		if err != nil {
			return err
		}
		if n < 8 {
			return command.ErrSyntax
		}
		a.MinIdleMs = idle
		at = 5
	}
	var err error
	if a.Count, err = command.IntArg(x.Args[at+2]); err != nil {
		return err
	}
	if a.Start, err = RangeBound(x.Args[at], true); err != nil {
		return err
	}
	if a.End, err = RangeBound(x.Args[at+1], false); err != nil {
		return err
	}
	if at+3 < n {
		a.Consumer = x.Args[at+3]
	}
	ps, err := groups.PendingRange(x.View(), x.DB, key, group, a)
	if errors.Is(err, groups.ErrNoGroup) {
		return command.ErrNoGroup(key, group)
	}
	if err != nil {
		return err
	}
	w.Array(len(ps))
	for _, p := range ps {
		w.Array(4)
		WriteID(w, p.ID)
		w.Bulk(p.Consumer)
		w.Int(p.IdleMs)
		w.Uint(p.DeliveryCount)
	}
	return nil
}
