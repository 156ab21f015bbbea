package broker

import (
	"errors"
	"strconv"

	"github.com/sediment-dev/sediment/groups"
)

func init() {
	register(&command{name: "xpending", arity: -3, flags: flagReadonly, first: 1, last: 1, step: 1,
		group: "stream", since: "5.0.0", summary: "Returns the information and entries from a stream consumer group's pending entries list.", run: runXPending})
}

// XPENDING key group [[IDLE min-idle-time] start end count [consumer]]
// Summary reply: [count, smallest ID, greatest ID, [[consumer, count], ...]]
// (nil, nil, nil when the PEL is empty). Extended reply: [[ID, consumer,
// idle ms, delivery count], ...].
// https://redis.io/docs/latest/commands/xpending/
func runXPending(x *exec) error {
	key, group := x.args[1], x.args[2]
	rest := x.args[3:]
	if len(rest) == 0 {
		s, err := groups.PendingSummary(x.view(), x.db(), key, group)
		if errors.Is(err, groups.ErrNoGroup) {
			return errNoGroup(key, group)
		}
		if err != nil {
			return err
		}
		w := x.w()
		w.WriteArray(4)
		w.WriteInt64(s.Count)
		if s.Count == 0 {
			w.WriteNull()
			w.WriteNull()
			writeNullArray(w)
			return nil
		}
		writeID(w, s.Min)
		writeID(w, s.Max)
		w.WriteArray(len(s.Consumers))
		for _, c := range s.Consumers {
			w.WriteArray(2)
			w.WriteBulk(c.Consumer)
			w.WriteBulkString(strconv.FormatInt(c.Count, 10))
		}
		return nil
	}
	var a groups.RangeArgs
	if equalFold(rest[0], "IDLE") {
		if len(rest) < 2 {
			return errSyntax
		}
		n, err := intArg(rest[1])
		if err != nil {
			return err
		}
		a.MinIdleMs = n
		rest = rest[2:]
	}
	if len(rest) < 3 || len(rest) > 4 {
		return errSyntax
	}
	var err error
	if a.Start, err = rangeBound(rest[0], true); err != nil {
		return err
	}
	if a.End, err = rangeBound(rest[1], false); err != nil {
		return err
	}
	if a.Count, err = intArg(rest[2]); err != nil {
		return err
	}
	if len(rest) == 4 {
		a.Consumer = rest[3]
	}
	ps, err := groups.PendingRange(x.view(), x.db(), key, group, a)
	if errors.Is(err, groups.ErrNoGroup) {
		return errNoGroup(key, group)
	}
	if err != nil {
		return err
	}
	w := x.w()
	w.WriteArray(len(ps))
	for _, p := range ps {
		w.WriteArray(4)
		writeID(w, p.ID)
		w.WriteBulk(p.Consumer)
		w.WriteInt64(p.IdleMs)
		w.WriteUint64(p.DeliveryCount)
	}
	return nil
}
