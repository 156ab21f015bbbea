package key

import (
	"math"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/keyspace"
	"github.com/sediment-dev/sediment/materialize"
)

// genericSpecs are DEL, UNLINK, EXISTS, TYPE, the EXPIRE and TTL families,
// PERSIST, DBSIZE, FLUSHDB and FLUSHALL.
func genericSpecs() []command.Spec {
	const (
		w   = command.FlagWrite
		wf  = w | command.FlagFast
		rof = command.FlagReadonly | command.FlagFast
	)
	specs := []command.Spec{
		{Name: "del", Arity: -2, Flags: w, First: 1, Last: -1, Step: 1, Group: group, Since: "1.0.0", Summary: "Deletes one or more keys.", Run: runDel},
		{Name: "unlink", Arity: -2, Flags: wf, First: 1, Last: -1, Step: 1, Group: group, Since: "4.0.0", Summary: "Asynchronously deletes one or more keys.", Run: runDel},
		{Name: "exists", Arity: -2, Flags: rof, First: 1, Last: -1, Step: 1, Group: group, Since: "1.0.0", Summary: "Determines whether one or more keys exist.", Run: runExists},
		{Name: "type", Arity: 2, Flags: rof, First: 1, Last: 1, Step: 1, Group: group, Since: "1.0.0", Summary: "Determines the type of value stored at a key.", Run: runType},
		{Name: "persist", Arity: 2, Flags: wf, First: 1, Last: 1, Step: 1, Group: group, Since: "2.2.0", Summary: "Removes the expiration time of a key.", Run: runPersist},
		{Name: "dbsize", Arity: 1, Flags: rof, Group: "server", Since: "1.0.0", Summary: "Returns the number of keys in the database.", Run: runDBSize},
		{Name: "flushdb", Arity: -1, Flags: w, Group: "server", Since: "1.0.0", Summary: "Removes all keys from the current database.", Run: runFlush},
		{Name: "flushall", Arity: -1, Flags: w, Group: "server", Since: "1.0.0", Summary: "Removes all keys from all databases.", Run: runFlush},
		{Name: "swapdb", Arity: 3, Flags: w | command.FlagFast, Group: "server", Since: "4.0.0", Summary: "Swaps two Redis databases.", Run: runSwapDB},
	}
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
		specs = append(specs, command.Spec{Name: c.name, Arity: -3, Flags: wf, First: 1, Last: 1, Step: 1, Group: group,
			Since: c.since, Summary: c.summary, Run: makeExpire(c.name, c.unitMs, c.absolute)})
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
		specs = append(specs, command.Spec{Name: c.name, Arity: 2, Flags: rof, First: 1, Last: 1, Step: 1, Group: group,
			Since: c.since, Summary: c.summary, Run: makeTTL(c.ms, c.absolute)})
	}
	return specs
}

// DEL key [key ...] and UNLINK key [key ...]: the number of keys removed.
// Both are O(1) per key: a key's sub-keys go in one range deletion per tag.
// https://redis.io/docs/latest/commands/del/
func runDel(x *command.Ctx) error {
	var n int64
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		var events []codec.Event
		var err error
		n, events, err = keyspace.Del(v, x.DB, x.Args[1:])
		return events, err
	}, func() { x.Reply.Int(n) })
}

// EXISTS key [key ...]: how many of the keys exist (a key named twice
// counts twice).
// https://redis.io/docs/latest/commands/exists/
func runExists(x *command.Ctx) error {
	n, err := keyspace.Exists(x.View(), x.DB, x.Args[1:])
	if err != nil {
		return err
	}
	x.Reply.Int(n)
	return nil
}

// TYPE key: string, hash, set, stream or none.
// https://redis.io/docs/latest/commands/type/
func runType(x *command.Ctx) error {
	m, ok, err := x.View().Meta(x.DB, x.Args[1])
	if err != nil {
		return err
	}
	if !ok {
		x.Reply.Simple("none")
		return nil
	}
	x.Reply.Simple(m.Type.String())
	return nil
}

// makeExpire returns EXPIRE, PEXPIRE, EXPIREAT or PEXPIREAT:
// <cmd> key time [NX | XX | GT | LT]
// time is in unitMs milliseconds, relative to now unless absolute. Reply: 1
// when the TTL was set (or the key deleted because the time has passed), 0
// when the key does not exist or a condition failed. Checks run in Redis
// 7.0's order (db.c expireGenericCommand): options, the number, overflow,
// the key.
// https://redis.io/docs/latest/commands/expire/
func makeExpire(name string, unitMs int64, absolute bool) func(x *command.Ctx) error {
	return func(x *command.Ctx) error {
		var cond keyspace.Cond
		for _, a := range x.Args[3:] {
			switch {
			case command.EqualFold(a, "NX"):
				cond |= keyspace.NX
			case command.EqualFold(a, "XX"):
				cond |= keyspace.XX
			case command.EqualFold(a, "GT"):
				cond |= keyspace.GT
			case command.EqualFold(a, "LT"):
				cond |= keyspace.LT
			default:
				return command.ErrUnsupportedOption(a)
			}
		}
		if cond&keyspace.NX != 0 && cond&(keyspace.XX|keyspace.GT|keyspace.LT) != 0 {
			return command.ErrExpireNXAndOthers
		}
		if cond&keyspace.GT != 0 && cond&keyspace.LT != 0 {
			return command.ErrExpireGTAndLT
		}
		when, err := command.IntArg(x.Args[2])
		if err != nil {
			return err
		}
		if when > math.MaxInt64/unitMs || when < math.MinInt64/unitMs {
			return command.ErrInvalidExpire(name)
		}
		when *= unitMs
		var done bool
		return x.Write(func(v *materialize.View) ([]codec.Event, error) {
			var events []codec.Event
			var err error
			done, events, err = keyspace.Expire(v, x.DB, x.Args[1], when, absolute, cond)
			if err == keyspace.ErrTimeOverflow {
				err = command.ErrInvalidExpire(name)
			}
			return events, err
		}, func() { x.Reply.IntBool(done) })
	}
}

// makeTTL returns TTL (seconds left), PTTL (milliseconds left), EXPIRETIME
// (Unix seconds) or PEXPIRETIME (Unix milliseconds). Reply: -2 for a missing
// key, -1 for a key without TTL. Seconds are rounded as Redis does.
// https://redis.io/docs/latest/commands/ttl/
func makeTTL(ms, absolute bool) func(x *command.Ctx) error {
	return func(x *command.Ctx) error {
		v := x.View()
		m, ok, err := v.Meta(x.DB, x.Args[1])
		switch {
		case err != nil:
			return err
		case !ok:
			x.Reply.Int(-2)
			return nil
		case m.ExpireAtMs == 0:
			x.Reply.Int(-1)
			return nil
		}
		t := m.ExpireAtMs
		if !absolute {
			t = max(t-v.NowMs(), 0)
		}
		if !ms {
			t = (t + 500) / 1000
		}
		x.Reply.Int(t)
		return nil
	}
}

// PERSIST key: 1 when a TTL was removed, 0 otherwise.
// https://redis.io/docs/latest/commands/persist/
func runPersist(x *command.Ctx) error {
	var done bool
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		var events []codec.Event
		var err error
		done, events, err = keyspace.Persist(v, x.DB, x.Args[1])
		return events, err
	}, func() { x.Reply.IntBool(done) })
}

// DBSIZE: the db's keys, from the key counters (O(1)). As in Redis, a key
// whose TTL has passed counts until it is deleted.
// https://redis.io/docs/latest/commands/dbsize/
func runDBSize(x *command.Ctx) error {
	n, _ := x.View().KeyCount(x.DB)
	x.Reply.Int(n)
	return nil
}

// FLUSHDB [ASYNC|SYNC]: range-deletes the db's keys in every populated
// slot. FLUSHALL [ASYNC|SYNC]: one range deletion per tag, every db. Both
// modes run at once. Blocked XREADGROUP clients of flushed keys get
// UNBLOCKED; blocked XREAD clients keep waiting, as in Redis.
// https://redis.io/docs/latest/commands/flushdb/
func runFlush(x *command.Ctx) error {
	switch {
	case len(x.Args) == 1:
	case len(x.Args) == 2 && (command.EqualFold(x.Args[1], "ASYNC") || command.EqualFold(x.Args[1], "SYNC")):
	default:
		return command.ErrSyntax
	}
	all := command.EqualFold(x.Args[0], "FLUSHALL")
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		if all {
			return []codec.Event{codec.FlushAllEvent()}, nil
		}
		return keyspace.FlushDB(v, x.DB)
	}, func() { x.Reply.OK() })
}

// SWAPDB index1 index2: OK. Clients connected to either database see the
// other's data at once; the swap changes the db map (one event, O(1)
// whatever the databases hold: keyspace.SwapDB). Errors as Redis 7.0's
// swapdbCommand: an index that is not a C int is "ERR invalid first DB
// index" (or second), one outside [0, databases) "ERR DB index is out of
// range".
// https://redis.io/docs/latest/commands/swapdb/
func runSwapDB(x *command.Ctx) error {
	var idx [2]int64
	for i, msg := range []command.WireError{"ERR invalid first DB index", "ERR invalid second DB index"} {
		n, ok := command.ParseInt(x.Args[1+i])
		if !ok || n < math.MinInt32 || n > math.MaxInt32 {
			return msg
		}
		idx[i] = n
	}
	for _, n := range idx {
		if n < 0 || n >= int64(x.Limits.Databases) {
			return command.ErrDBIndex
		}
	}
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		return keyspace.SwapDB(uint8(idx[0]), uint8(idx[1])), nil
	}, func() { x.Reply.OK() })
}
