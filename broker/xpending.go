package broker

import (
	"errors"
	"strconv"

	"github.com/sediment-dev/sediment/groups"
)

func init() {
	register(&cmdSpec{name: "xpending", arity: -3, flags: flagReadonly, first: 1, last: 1, step: 1,
		group: "stream", since: "5.0.0", summary: "Returns the information and entries from a stream consumer group's pending entries list.", run: runXPending})
}

// XPENDING key group [[IDLE min-idle-time] start end count [consumer]]
// Summary reply: [count, smallest ID, greatest ID, [[consumer, count], ...]]
// (nil, nil, nil when the PEL is empty). Extended reply: [[ID, consumer,
// idle ms, delivery count], ...].
// https://redis.io/docs/latest/commands/xpending/
func runXPending(x *exec) error {
	key, group := x.args[1], x.args[2]
	n := len(x.args)
	if n != 3 && (n < 6 || n > 9) {
		return errSyntax
	}
	if n == 3 {
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
	// The extended form, parsed in Redis's order: IDLE, count, start, end;
	// arguments after the consumer are ignored, as in Redis 7.0.
	var a groups.RangeArgs
	at := 3
	if equalFold(x.args[3], "IDLE") {
		idle, err := intArg(x.args[4]) // before the count check, as Redis
		if err != nil {
			return err
		}
		if n < 8 {
			return errSyntax
		}
		a.MinIdleMs = idle
		at = 5
	}
	var err error
	if a.Count, err = intArg(x.args[at+2]); err != nil {
		return err
	}
	if a.Start, err = rangeBound(x.args[at], true); err != nil {
		return err
	}
	if a.End, err = rangeBound(x.args[at+1], false); err != nil {
		return err
	}
	if at+3 < n {
		a.Consumer = x.args[at+3]
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
