package broker

import (
	"math"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
)

func init() {
	for _, c := range []struct {
		name, summary, since string
		unitMs               int64
		absolute             bool
	}{
		{"expire", "Sets the expiration time of a key in seconds.", "1.0.0", 1000, false},
		{"pexpire", "Sets the expiration time of a key in milliseconds.", "2.6.0", 1, false},
		{"expireat", "Sets the expiration time of a key to a Unix timestamp.", "1.2.0", 1000, true},
		{"pexpireat", "Sets the expiration time of a key to a Unix milliseconds timestamp.", "2.6.0", 1, true},
	} {
		register(&cmdSpec{name: c.name, arity: -3, flags: flagWrite | flagFast, first: 1, last: 1, step: 1,
			group: "generic", since: c.since, summary: c.summary, run: makeExpire(c.name, c.unitMs, c.absolute)})
	}
	for _, c := range []struct {
		name, summary, since string
		ms, absolute         bool
	}{
		{"ttl", "Returns the expiration time in seconds of a key.", "1.0.0", false, false},
		{"pttl", "Returns the expiration time in milliseconds of a key.", "2.6.0", true, false},
		{"expiretime", "Returns the expiration time of a key as a Unix timestamp.", "7.0.0", false, true},
		{"pexpiretime", "Returns the expiration time of a key as a Unix milliseconds timestamp.", "7.0.0", true, true},
	} {
		register(&cmdSpec{name: c.name, arity: 2, flags: flagReadonly | flagFast, first: 1, last: 1, step: 1,
			group: "generic", since: c.since, summary: c.summary, run: makeTTL(c.ms, c.absolute)})
	}
	register(&cmdSpec{name: "persist", arity: 2, flags: flagWrite | flagFast, first: 1, last: 1, step: 1,
		group: "generic", since: "2.2.0", summary: "Removes the expiration time of a key.", run: runPersist})
}

// Conditions of EXPIRE and its family (Redis 7.0).
const (
	expireNX = 1 << iota
	expireXX
	expireGT
	expireLT
)

// makeExpire returns EXPIRE, PEXPIRE, EXPIREAT or PEXPIREAT:
// <cmd> key time [NX | XX | GT | LT]
// time is in unitMs milliseconds, relative to now unless absolute. Reply: 1
// when the TTL was set (or the key deleted because the time has passed), 0
// when the key does not exist or a condition failed. A key with no TTL
// counts as an infinite TTL for GT and LT. Checks run in Redis 7.0's order
// (db.c expireGenericCommand): options, the number, overflow, the key.
// https://redis.io/docs/latest/commands/expire/
func makeExpire(name string, unitMs int64, absolute bool) func(x *exec) error {
	return func(x *exec) error {
		flags := 0
		for _, a := range x.args[3:] {
			switch {
			case equalFold(a, "NX"):
				flags |= expireNX
			case equalFold(a, "XX"):
				flags |= expireXX
			case equalFold(a, "GT"):
				flags |= expireGT
			case equalFold(a, "LT"):
				flags |= expireLT
			default:
				return errUnsupportedOption(a)
			}
		}
		if flags&expireNX != 0 && flags&(expireXX|expireGT|expireLT) != 0 {
			return errExpireNXAndOthers
		}
		if flags&expireGT != 0 && flags&expireLT != 0 {
			return errExpireGTAndLT
		}
		when, err := intArg(x.args[2])
		if err != nil {
			return err
		}
		if when > math.MaxInt64/unitMs || when < math.MinInt64/unitMs {
			return errInvalidExpireIn(name)
		}
		when *= unitMs
		var n int
		return x.writeAsync(func(v *materialize.View) ([]codec.Event, error) {
			deadline := when
			if !absolute {
				if when > math.MaxInt64-v.NowMs() {
					return nil, errInvalidExpireIn(name)
				}
				deadline += v.NowMs()
			}
			m, ok, events, err := v.MetaForWrite(x.db(), x.args[1])
			if err != nil || !ok {
				n = 0
				return events, err
			}
			cur := m.ExpireAtMs // 0: none, infinite for GT/LT
			switch {
			case flags&expireNX != 0 && cur != 0,
				flags&expireXX != 0 && cur == 0,
				flags&expireGT != 0 && (cur == 0 || deadline <= cur),
				flags&expireLT != 0 && cur != 0 && deadline >= cur:
				n = 0
				return nil, nil
			}
			n = 1
			if deadline <= v.NowMs() { // already expired: delete now, as Redis
				return []codec.Event{codec.DelKeyEvent(x.db(), x.args[1], m.Type, cur)}, nil
			}
			m.ExpireAtMs = deadline
			return []codec.Event{codec.SetMetaEvent(x.db(), x.args[1], m, cur)}, nil
		}, func() { x.w().WriteInt(n) })
	}
}

// makeTTL returns TTL (seconds left), PTTL (milliseconds left), EXPIRETIME
// (Unix seconds) or PEXPIRETIME (Unix milliseconds). Reply: -2 for a missing
// key, -1 for a key without TTL. Seconds are rounded as Redis does.
// https://redis.io/docs/latest/commands/ttl/
func makeTTL(ms, absolute bool) func(x *exec) error {
	return func(x *exec) error {
		v := x.view()
		m, ok, err := v.Meta(x.db(), x.args[1])
		switch {
		case err != nil:
			return err
		case !ok:
			x.w().WriteInt(-2)
			return nil
		case m.ExpireAtMs == 0:
			x.w().WriteInt(-1)
			return nil
		}
		t := m.ExpireAtMs
		if !absolute {
			t = max(t-v.NowMs(), 0)
		}
		if !ms {
			t = (t + 500) / 1000
		}
		x.w().WriteInt64(t)
		return nil
	}
}

// PERSIST key. Reply: 1 when a TTL was removed, 0 otherwise.
// https://redis.io/docs/latest/commands/persist/
func runPersist(x *exec) error {
	var n int
	return x.writeAsync(func(v *materialize.View) ([]codec.Event, error) {
		m, ok, events, err := v.MetaForWrite(x.db(), x.args[1])
		if err != nil || !ok || m.ExpireAtMs == 0 {
			n = 0
			return events, err
		}
		n = 1
		cur := m.ExpireAtMs
		m.ExpireAtMs = 0
		return []codec.Event{codec.SetMetaEvent(x.db(), x.args[1], m, cur)}, nil
	}, func() { x.w().WriteInt(n) })
}
