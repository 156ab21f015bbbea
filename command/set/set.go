// Package set is the set command family (Redis 7.0, t_set.c): one Spec per
// command, each parsing its arguments and running over types/rset.
package set

import (
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/internal/num"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/types/elements"
	"github.com/sediment-dev/sediment/types/rset"
)

const (
	wf    = command.FlagWrite | command.FlagFast
	wdf   = wf | command.FlagDenyOOM
	wd    = command.FlagWrite | command.FlagDenyOOM
	rof   = command.FlagReadonly | command.FlagFast
	ro    = command.FlagReadonly
	group = "set"
)

// Specs returns the family's commands.
func Specs() []command.Spec {
	return []command.Spec{
		{Name: "sadd", Arity: -3, Flags: wdf, First: 1, Last: 1, Step: 1, Group: group, Since: "1.0.0", Summary: "Adds one or more members to a set. Creates the key if it doesn't exist.", Run: runSAdd},
		{Name: "srem", Arity: -3, Flags: wf, First: 1, Last: 1, Step: 1, Group: group, Since: "1.0.0", Summary: "Removes one or more members from a set. Deletes the set if the last member was removed.", Run: runSRem},
		{Name: "scard", Arity: 2, Flags: rof, First: 1, Last: 1, Step: 1, Group: group, Since: "1.0.0", Summary: "Returns the number of members in a set.", Run: runSCard},
		{Name: "sismember", Arity: 3, Flags: rof, First: 1, Last: 1, Step: 1, Group: group, Since: "1.0.0", Summary: "Determines whether a member belongs to a set.", Run: runSIsMember},
		{Name: "smismember", Arity: -3, Flags: rof, First: 1, Last: 1, Step: 1, Group: group, Since: "6.2.0", Summary: "Determines whether multiple members belong to a set.", Run: runSIsMember},
		{Name: "smembers", Arity: 2, Flags: ro, First: 1, Last: 1, Step: 1, Group: group, Since: "1.0.0", Summary: "Returns all members of a set.", Run: runSMembers},
		{Name: "srandmember", Arity: -2, Flags: ro, First: 1, Last: 1, Step: 1, Group: group, Since: "1.0.0", Summary: "Get one or multiple random members from a set", Run: runSRandMember},
		{Name: "spop", Arity: -2, Flags: wf, First: 1, Last: 1, Step: 1, Group: group, Since: "1.0.0", Summary: "Returns one or more random members from a set after removing them. Deletes the set if the last member was popped.", Run: runSPop},
		{Name: "smove", Arity: 4, Flags: wf, First: 1, Last: 2, Step: 1, Group: group, Since: "1.0.0", Summary: "Moves a member from one set to another.", Run: runSMove},
		{Name: "sinter", Arity: -2, Flags: ro, First: 1, Last: -1, Step: 1, Group: group, Since: "1.0.0", Summary: "Returns the intersect of multiple sets.", Run: runAlgebra},
		{Name: "sunion", Arity: -2, Flags: ro, First: 1, Last: -1, Step: 1, Group: group, Since: "1.0.0", Summary: "Returns the union of multiple sets.", Run: runAlgebra},
		{Name: "sdiff", Arity: -2, Flags: ro, First: 1, Last: -1, Step: 1, Group: group, Since: "1.0.0", Summary: "Returns the difference of multiple sets.", Run: runAlgebra},
		{Name: "sinterstore", Arity: -3, Flags: wd, First: 1, Last: -1, Step: 1, Group: group, Since: "1.0.0", Summary: "Stores the intersect of multiple sets in a key.", Run: runStore},
		{Name: "sunionstore", Arity: -3, Flags: wd, First: 1, Last: -1, Step: 1, Group: group, Since: "1.0.0", Summary: "Stores the union of multiple sets in a key.", Run: runStore},
		{Name: "sdiffstore", Arity: -3, Flags: wd, First: 1, Last: -1, Step: 1, Group: group, Since: "1.0.0", Summary: "Stores the difference of multiple sets in a key.", Run: runStore},
		{Name: "sintercard", Arity: -3, Flags: ro, Group: group, Since: "7.0.0", Summary: "Returns the number of members of the intersect of multiple sets.", Run: runSInterCard},
		{Name: "sscan", Arity: -3, Flags: ro, First: 1, Last: 1, Step: 1, Group: group, Since: "2.8.0", Summary: "Iterates over members of a set.", Run: runSScan},
	}
}

// SADD key member [member ...]: the number of new members.
// https://redis.io/docs/latest/commands/sadd/
func runSAdd(x *command.Ctx) error {
	var n int64
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		var events []codec.Event
		var err error
		n, events, err = rset.Add(v, x.DB, x.Args[1], x.Args[2:])
		return events, err
	}, func() { x.Reply.Int(n) })
}

// SREM key member [member ...]: the number removed.
// https://redis.io/docs/latest/commands/srem/
func runSRem(x *command.Ctx) error {
	var n int64
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		var events []codec.Event
		var err error
		n, events, err = rset.Rem(v, x.DB, x.Args[1], x.Args[2:])
		return events, err
	}, func() { x.Reply.Int(n) })
}

// SCARD key: the number of members, O(1).
// https://redis.io/docs/latest/commands/scard/
func runSCard(x *command.Ctx) error {
	n, err := rset.Card(x.View(), x.DB, x.Args[1])
	if err != nil {
		return err
	}
	x.Reply.Int(n)
	return nil
}

// SISMEMBER key member: 1 or 0. SMISMEMBER key member [member ...]: one
// 1 or 0 per member.
// https://redis.io/docs/latest/commands/smismember/
func runSIsMember(x *command.Ctx) error {
	in, err := rset.IsMember(x.View(), x.DB, x.Args[1], x.Args[2:])
	if err != nil {
		return err
	}
	if command.EqualFold(x.Args[0], "SISMEMBER") {
		x.Reply.IntBool(in[0])
		return nil
	}
	x.Reply.Array(len(in))
	for _, b := range in {
		x.Reply.IntBool(b)
	}
	return nil
}

// SMEMBERS key: the members, in byte order (Redis: unspecified).
// https://redis.io/docs/latest/commands/smembers/
func runSMembers(x *command.Ctx) error {
	mem, err := rset.Members(x.View(), x.DB, x.Args[1])
	if err != nil {
		return err
	}
	members(x, mem)
	return nil
}

func members(x *command.Ctx, mem [][]byte) {
	x.Reply.Set(len(mem))
	for _, m := range mem {
		x.Reply.Bulk(m)
	}
}

// SRANDMEMBER key [count]: a random member (or nil); with a count, that
// many distinct members (at most all), or with a negative count that many
// picks that may repeat.
// https://redis.io/docs/latest/commands/srandmember/
func runSRandMember(x *command.Ctx) error {
	if len(x.Args) > 3 {
		return command.ErrSyntax
	}
	if len(x.Args) == 2 {
		mem, err := rset.Sample(x.View(), x.DB, x.Args[1], one)
		if err != nil {
			return err
		}
		bulkOrNil(x, mem)
		return nil
	}
	count, err := command.IntArg(x.Args[2])
	if err != nil {
		return err
	}
	if count < -math.MaxInt64 {
		return command.ErrValueRange(-math.MaxInt64, math.MaxInt64)
	}
	if count < 0 {
		return rset.SampleRepeat(x.View(), x.DB, x.Args[1], -count, func(n int64) {
			x.Reply.Array(int(min(n, 1) * -count))
		}, func(m []byte) { x.Reply.Bulk(m) })
	}
	mem, err := rset.Sample(x.View(), x.DB, x.Args[1], func(n int64) []int64 { return elements.Pick(n, count) })
	if err != nil {
		return err
	}
	x.Reply.Array(len(mem))
	for _, m := range mem {
		x.Reply.Bulk(m)
	}
	return nil
}

// one picks one random position.
func one(n int64) []int64 {
	if n == 0 {
		return nil
	}
	return []int64{rand.Int64N(n)}
}

func bulkOrNil(x *command.Ctx, mem [][]byte) {
	if len(mem) == 0 {
		x.Reply.NullBulk()
	} else {
		x.Reply.Bulk(mem[0])
	}
}

// SPOP key [count]: a random member removed (or nil); with a count, up to
// that many distinct members removed (a set; count >= 0). The change
// events name the members removed, never the random choice.
// https://redis.io/docs/latest/commands/spop/
func runSPop(x *command.Ctx) error {
	if len(x.Args) > 3 {
		return command.ErrSyntax
	}
	withCount := len(x.Args) == 3
	var count int64 = 1
	if withCount {
		n, ok := parseInt(x.Args[2]) // Redis: this error for a non-integer too
		if !ok || n < 0 {
			return command.ErrMustBePositive
		}
		count = n
	}
	var mem [][]byte
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		var events []codec.Event
		var err error
		mem, events, err = rset.Pop(v, x.DB, x.Args[1], func(n int64) []int64 { return elements.Pick(n, count) })
		return events, err
	}, func() {
		if withCount {
			members(x, mem)
		} else {
			bulkOrNil(x, mem)
		}
	})
}

// SMOVE source destination member: 1 when moved, 0 when not in source.
// https://redis.io/docs/latest/commands/smove/
func runSMove(x *command.Ctx) error {
	var moved bool
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		var events []codec.Event
		var err error
		moved, events, err = rset.Move(v, x.DB, x.Args[1], x.Args[2], x.Args[3])
		return events, err
	}, func() { x.Reply.IntBool(moved) })
}

func opOf(name []byte) rset.Op {
	switch {
	case command.EqualFold(name[:min(len(name), 6)], "SUNION"):
		return rset.Union
	case command.EqualFold(name[:min(len(name), 5)], "SDIFF"):
		return rset.Diff
	}
	return rset.Inter
}

// SINTER, SUNION, SDIFF key [key ...]: the members of the result; a
// missing key is the empty set; WRONGTYPE for any key of another type.
// https://redis.io/docs/latest/commands/sinter/
func runAlgebra(x *command.Ctx) error {
	mem, err := rset.Compute(x.View(), x.DB, opOf(x.Args[0]), x.Args[1:], 0)
	if err != nil {
		return err
	}
	members(x, mem)
	return nil
}

// SINTERSTORE, SUNIONSTORE, SDIFFSTORE destination key [key ...]: the
// result's size; the result replaces destination (deleted when empty).
// https://redis.io/docs/latest/commands/sinterstore/
func runStore(x *command.Ctx) error {
	var n int64
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		mem, err := rset.Compute(v, x.DB, opOf(x.Args[0]), x.Args[2:], 0)
		if err != nil {
			return nil, err
		}
		n = int64(len(mem))
		return rset.Store(v, x.DB, x.Args[1], mem)
	}, func() { x.Reply.Int(n) })
}

// SINTERCARD numkeys key [key ...] [LIMIT limit]: the size of the
// intersection, counting stops at limit (0: no limit).
// https://redis.io/docs/latest/commands/sintercard/
func runSInterCard(x *command.Ctx) error {
	numkeys, ok := parseInt(x.Args[1])
	if !ok || numkeys < 1 {
		return command.ErrNumKeys
	}
	if numkeys > int64(len(x.Args)-2) {
		return command.ErrNumKeysArgs
	}
	keys := x.Args[2 : 2+numkeys]
	var limit int64
	for i := 2 + int(numkeys); i < len(x.Args); i++ {
		if command.EqualFold(x.Args[i], "LIMIT") && i+1 < len(x.Args) {
			n, ok := parseInt(x.Args[i+1])
			if !ok || n < 0 {
				return command.ErrLimitNegative
			}
			limit = n
			i++
			continue
		}
		return command.ErrSyntax
	}
	mem, err := rset.Compute(x.View(), x.DB, rset.Inter, keys, int(min(limit, math.MaxInt32)))
	if err != nil {
		return err
	}
	x.Reply.Int(int64(len(mem)))
	return nil
}

func parseInt(b []byte) (int64, bool) { n, err := command.IntArg(b); return n, err == nil }

// SSCAN key cursor [MATCH pattern] [COUNT count]: [next cursor, [member,
// ...]], as HSCAN (sets of up to 128 members whole in one call).
// https://redis.io/docs/latest/commands/sscan/
func runSScan(x *command.Ctx) error {
	// Redis's order, as HSCAN: the cursor, the key, then the options.
	if _, ok := num.ParseCursor(x.Args[2]); !ok {
		return command.ErrInvalidCursor
	}
	v := x.View()
	if n, err := rset.Card(v, x.DB, x.Args[1]); err != nil || n == 0 {
		if err == nil {
			command.EmptyScan(x)
		}
		return err
	}
	a, err := command.ParseScan(x.Args, false)
	if err != nil {
		return err
	}
	pg, err := rset.Scan(v, x.DB, x.Args[1], a.Cursor, a.Count, a.Match)
	if err != nil {
		return err
	}
	x.Reply.Array(2)
	var buf [20]byte
	x.Reply.Bulk(strconv.AppendUint(buf[:0], pg.Cursor, 10))
	x.Reply.Array(len(pg.Elems))
	for _, m := range pg.Elems {
		x.Reply.Bulk(m)
	}
	return nil
}
