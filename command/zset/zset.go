// Package zset is the sorted-set command family (Redis 7.0, t_zset.c): one
// Spec per command, each parsing its arguments and running over
// types/rzset. The blocking pops (BZPOPMIN, BZPOPMAX, BZMPOP) queue their
// client with command.Ctx.WriteBlock, as the list pops do.
package zset

import (
	"errors"
	"strconv"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/command/reply"
	"github.com/sediment-dev/sediment/internal/num"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/types/rzset"
)

const (
	wf    = command.FlagWrite | command.FlagFast
	wdf   = wf | command.FlagDenyOOM
	wd    = command.FlagWrite | command.FlagDenyOOM
	w     = command.FlagWrite
	rof   = command.FlagReadonly | command.FlagFast
	ro    = command.FlagReadonly
	wb    = command.FlagWrite | command.FlagBlocking
	wbf   = wb | command.FlagFast
	group = "sorted-set"
)

// Errors of the sorted-set commands (Redis 7.0 t_zset.c).
const (
	ErrXXAndNX        command.WireError = "ERR XX and NX options at the same time are not compatible"
	ErrGTLTNX         command.WireError = "ERR GT, LT, and/or NX options at the same time are not compatible"
	ErrIncrPair       command.WireError = "ERR INCR option supports a single increment-element pair"
	ErrNaN            command.WireError = "ERR resulting score is not a number (NaN)"
	ErrMinMaxFloat    command.WireError = "ERR min or max is not a float"
	ErrMinMaxLex      command.WireError = "ERR min or max not valid string range item"
	ErrLimitRank      command.WireError = "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
	ErrWithScoresLex  command.WireError = "ERR syntax error, WITHSCORES not supported in combination with BYLEX"
	ErrWeightNotFloat command.WireError = "ERR weight value is not a float"
	ErrCountPositive  command.WireError = "ERR count should be greater than 0"
)

// errInputKeys is Redis's reply to a numkeys below 1 of the algebra
// commands, naming the command in lower case.
func errInputKeys(cmd []byte) command.WireError {
	return command.WireError("ERR at least 1 input key is needed for '" + command.Lower(cmd) + "' command")
}

// Specs returns the family's commands.
func Specs() []command.Spec {
	return []command.Spec{
		{Name: "zadd", Arity: -4, Flags: wdf, First: 1, Last: 1, Step: 1, Group: group, Since: "1.2.0", Summary: "Adds one or more members to a sorted set, or updates their scores. Creates the key if it doesn't exist.", Run: runZAdd},
		{Name: "zincrby", Arity: 4, Flags: wdf, First: 1, Last: 1, Step: 1, Group: group, Since: "1.2.0", Summary: "Increments the score of a member in a sorted set.", Run: runZIncrBy},
		{Name: "zrem", Arity: -3, Flags: wf, First: 1, Last: 1, Step: 1, Group: group, Since: "1.2.0", Summary: "Removes one or more members from a sorted set. Deletes the sorted set if all members were removed.", Run: runZRem},
		{Name: "zcard", Arity: 2, Flags: rof, First: 1, Last: 1, Step: 1, Group: group, Since: "1.2.0", Summary: "Returns the number of members in a sorted set.", Run: runZCard},
		{Name: "zscore", Arity: 3, Flags: rof, First: 1, Last: 1, Step: 1, Group: group, Since: "1.2.0", Summary: "Returns the score of a member in a sorted set.", Run: runZScore},
		{Name: "zmscore", Arity: -3, Flags: rof, First: 1, Last: 1, Step: 1, Group: group, Since: "6.2.0", Summary: "Returns the score of one or more members in a sorted set.", Run: runZScore},
		{Name: "zrank", Arity: 3, Flags: rof, First: 1, Last: 1, Step: 1, Group: group, Since: "2.0.0", Summary: "Returns the index of a member in a sorted set ordered by ascending scores.", Run: runZRank},
		{Name: "zrevrank", Arity: 3, Flags: rof, First: 1, Last: 1, Step: 1, Group: group, Since: "2.0.0", Summary: "Returns the index of a member in a sorted set ordered by descending scores.", Run: runZRank},
		{Name: "zcount", Arity: 4, Flags: rof, First: 1, Last: 1, Step: 1, Group: group, Since: "2.0.0", Summary: "Returns the count of members in a sorted set that have scores within a range.", Run: runZCount},
		{Name: "zlexcount", Arity: 4, Flags: rof, First: 1, Last: 1, Step: 1, Group: group, Since: "2.8.9", Summary: "Returns the number of members in a sorted set within a lexicographical range.", Run: runZCount},
		{Name: "zrange", Arity: -4, Flags: ro, First: 1, Last: 1, Step: 1, Group: group, Since: "1.2.0", Summary: "Returns members in a sorted set within a range of indexes.", Run: runZRange},
		{Name: "zrangestore", Arity: -5, Flags: wd, First: 1, Last: 2, Step: 1, Group: group, Since: "6.2.0", Summary: "Stores a range of members from sorted set in a key.", Run: runZRange},
		{Name: "zrevrange", Arity: -4, Flags: ro, First: 1, Last: 1, Step: 1, Group: group, Since: "1.2.0", Summary: "Returns members in a sorted set within a range of indexes in reverse order.", Run: runZRange},
		{Name: "zrangebyscore", Arity: -4, Flags: ro, First: 1, Last: 1, Step: 1, Group: group, Since: "1.0.5", Summary: "Returns members in a sorted set within a range of scores.", Run: runZRange},
		{Name: "zrevrangebyscore", Arity: -4, Flags: ro, First: 1, Last: 1, Step: 1, Group: group, Since: "2.2.0", Summary: "Returns members in a sorted set within a range of scores in reverse order.", Run: runZRange},
		{Name: "zrangebylex", Arity: -4, Flags: ro, First: 1, Last: 1, Step: 1, Group: group, Since: "2.8.9", Summary: "Returns members in a sorted set within a lexicographical range.", Run: runZRange},
		{Name: "zrevrangebylex", Arity: -4, Flags: ro, First: 1, Last: 1, Step: 1, Group: group, Since: "2.8.9", Summary: "Returns members in a sorted set within a lexicographical range in reverse order.", Run: runZRange},
		{Name: "zremrangebyrank", Arity: 4, Flags: w, First: 1, Last: 1, Step: 1, Group: group, Since: "2.0.0", Summary: "Removes members in a sorted set within a range of indexes. Deletes the sorted set if all members were removed.", Run: runZRemRange},
		{Name: "zremrangebyscore", Arity: 4, Flags: w, First: 1, Last: 1, Step: 1, Group: group, Since: "1.2.0", Summary: "Removes members in a sorted set within a range of scores. Deletes the sorted set if all members were removed.", Run: runZRemRange},
		{Name: "zremrangebylex", Arity: 4, Flags: w, First: 1, Last: 1, Step: 1, Group: group, Since: "2.8.9", Summary: "Removes members in a sorted set within a lexicographical range. Deletes the sorted set if all members were removed.", Run: runZRemRange},
		{Name: "zpopmin", Arity: -2, Flags: wf, First: 1, Last: 1, Step: 1, Group: group, Since: "5.0.0", Summary: "Returns the lowest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.", Run: runZPop},
		{Name: "zpopmax", Arity: -2, Flags: wf, First: 1, Last: 1, Step: 1, Group: group, Since: "5.0.0", Summary: "Returns the highest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.", Run: runZPop},
		{Name: "zmpop", Arity: -4, Flags: w, Group: group, Since: "7.0.0", Summary: "Returns the highest- or lowest-scoring members from one or more sorted sets after removing them. Deletes the sorted set if the last member was popped.", Run: runZMPop},
		{Name: "bzpopmin", Arity: -3, Flags: wbf, First: 1, Last: -2, Step: 1, Group: group, Since: "5.0.0", Summary: "Removes and returns the member with the lowest score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.", Run: runBZPop},
		{Name: "bzpopmax", Arity: -3, Flags: wbf, First: 1, Last: -2, Step: 1, Group: group, Since: "5.0.0", Summary: "Removes and returns the member with the highest score from one or more sorted sets. Blocks until a member available otherwise. Deletes the sorted set if the last element was popped.", Run: runBZPop},
		{Name: "bzmpop", Arity: -5, Flags: wb, Group: group, Since: "7.0.0", Summary: "Removes and returns a member by score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.", Run: runZMPop},
		{Name: "zrandmember", Arity: -2, Flags: ro, First: 1, Last: 1, Step: 1, Group: group, Since: "6.2.0", Summary: "Returns one or more random members from a sorted set.", Run: runZRandMember},
		{Name: "zunion", Arity: -3, Flags: ro, Group: group, Since: "6.2.0", Summary: "Returns the union of multiple sorted sets.", Run: runAlgebra},
		{Name: "zinter", Arity: -3, Flags: ro, Group: group, Since: "6.2.0", Summary: "Returns the intersect of multiple sorted sets.", Run: runAlgebra},
		{Name: "zdiff", Arity: -3, Flags: ro, Group: group, Since: "6.2.0", Summary: "Returns the difference between multiple sorted sets.", Run: runAlgebra},
		{Name: "zunionstore", Arity: -4, Flags: wd, First: 1, Last: 1, Step: 1, Group: group, Since: "2.0.0", Summary: "Stores the union of multiple sorted sets in a key.", Run: runAlgebra},
		{Name: "zinterstore", Arity: -4, Flags: wd, First: 1, Last: 1, Step: 1, Group: group, Since: "2.0.0", Summary: "Stores the intersect of multiple sorted sets in a key.", Run: runAlgebra},
		{Name: "zdiffstore", Arity: -4, Flags: wd, First: 1, Last: 1, Step: 1, Group: group, Since: "6.2.0", Summary: "Stores the difference of multiple sorted sets in a key.", Run: runAlgebra},
		{Name: "zintercard", Arity: -3, Flags: ro, Group: group, Since: "7.0.0", Summary: "Returns the number of members of the intersect of multiple sorted sets.", Run: runAlgebra},
		{Name: "zscan", Arity: -3, Flags: ro, First: 1, Last: 1, Step: 1, Group: group, Since: "2.8.0", Summary: "Iterates over members and scores of a sorted set.", Run: runZScan},
	}
}

// floatArg parses a score or increment (getDoubleFromObject), or returns
// command.ErrNotFloat.
func floatArg(b []byte) (float64, error) {
	f, ok := num.ParseDouble(b)
	if !ok {
		return 0, command.ErrNotFloat
	}
	return f, nil
}

// mapErr turns rzset's own errors into Redis's words.
func mapErr(err error) error {
	if errors.Is(err, rzset.ErrNaN) {
		return ErrNaN
	}
	return err
}

// ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]:
// the number of members added (with CH: added or changed); with INCR the
// member's new score, or nil when NX/XX/GT/LT kept it from changing.
// https://redis.io/docs/latest/commands/zadd/
func runZAdd(x *command.Ctx) error {
	var f rzset.Flags
	var ch bool
	i := 2
	for ; i < len(x.Args); i++ {
		a := x.Args[i]
		switch {
		case command.EqualFold(a, "NX"):
			f.NX = true
		case command.EqualFold(a, "XX"):
			f.XX = true
		case command.EqualFold(a, "GT"):
			f.GT = true
		case command.EqualFold(a, "LT"):
			f.LT = true
		case command.EqualFold(a, "CH"):
			ch = true
		case command.EqualFold(a, "INCR"):
			f.Incr = true
		default:
			goto pairs
		}
	}
pairs:
	rest := x.Args[i:]
	switch {
	case len(rest) == 0 || len(rest)%2 != 0:
		return command.ErrSyntax
	case f.NX && f.XX:
		return ErrXXAndNX
	case (f.GT && f.NX) || (f.LT && f.NX) || (f.GT && f.LT):
		return ErrGTLTNX
	case f.Incr && len(rest) > 2:
		return ErrIncrPair
	}
	members := make([]rzset.Member, len(rest)/2)
	for j := range members {
		s, err := floatArg(rest[2*j])
		if err != nil {
			return err
		}
		members[j] = rzset.Member{Member: rest[2*j+1], Score: s}
	}
	return add(x, members, f, ch)
}

// add runs ZADD's decision and reply.
func add(x *command.Ctx, members []rzset.Member, f rzset.Flags, ch bool) error {
	var res rzset.AddResult
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		var events []codec.Event
		var err error
		res, events, err = rzset.Add(v, x.DB, x.Args[1], members, f)
		return events, mapErr(err)
	}, func() {
		switch {
		case f.Incr && res.Found:
			x.Reply.Double(res.Score)
		case f.Incr:
			x.Reply.NullBulk()
		case ch:
			x.Reply.Int(res.Added + res.Updated)
		default:
			x.Reply.Int(res.Added)
		}
	})
}

// ZINCRBY key increment member: the member's new score (a new member
// starts at 0).
// https://redis.io/docs/latest/commands/zincrby/
func runZIncrBy(x *command.Ctx) error {
	incr, err := floatArg(x.Args[2])
	if err != nil {
		return err
	}
	return add(x, []rzset.Member{{Member: x.Args[3], Score: incr}}, rzset.Flags{Incr: true}, false)
}

// ZREM key member [member ...]: the number removed.
// https://redis.io/docs/latest/commands/zrem/
func runZRem(x *command.Ctx) error {
	var n int64
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		var events []codec.Event
		var err error
		n, events, err = rzset.Rem(v, x.DB, x.Args[1], x.Args[2:])
		return events, err
	}, func() { x.Reply.Int(n) })
}

// ZCARD key: the number of members, O(1).
// https://redis.io/docs/latest/commands/zcard/
func runZCard(x *command.Ctx) error {
	n, err := rzset.Card(x.View(), x.DB, x.Args[1])
	if err != nil {
		return err
	}
	x.Reply.Int(n)
	return nil
}

// ZSCORE key member: the score, or nil. ZMSCORE key member [member ...]:
// one score or nil per member.
// https://redis.io/docs/latest/commands/zmscore/
func runZScore(x *command.Ctx) error {
	scores, found, err := rzset.Scores(x.View(), x.DB, x.Args[1], x.Args[2:])
	if err != nil {
		return err
	}
	multi := command.EqualFold(x.Args[0], "ZMSCORE")
	if multi {
		x.Reply.Array(len(scores))
	}
	for i, s := range scores {
		if found[i] {
			x.Reply.Double(s)
		} else {
			x.Reply.NullBulk()
		}
	}
	return nil
}

// ZRANK|ZREVRANK key member: the member's rank (0-based), or nil.
// O(N/1024 + 2048) for a set with rank blocks, O(N) below 2048 members
// (docs/commands.md).
// https://redis.io/docs/latest/commands/zrank/
func runZRank(x *command.Ctx) error {
	r, ok, err := rzset.Rank(x.View(), x.DB, x.Args[1], x.Args[2], command.EqualFold(x.Args[0], "ZREVRANK"))
	if err != nil {
		return err
	}
	if !ok {
		x.Reply.NullBulk()
		return nil
	}
	x.Reply.Int(r)
	return nil
}

// ZCOUNT key min max, ZLEXCOUNT key min max: the number of members in the
// score or lexicographic range.
// https://redis.io/docs/latest/commands/zcount/
func runZCount(x *command.Ctx) error {
	q := rzset.Query{By: rzset.ByScore, Count: -1}
	var err error
	if command.EqualFold(x.Args[0], "ZLEXCOUNT") {
		q.By = rzset.ByLex
		q.LexMin, q.LexMax, err = lexRange(x.Args[2], x.Args[3])
	} else {
		q.Min, q.Max, err = scoreRange(x.Args[2], x.Args[3])
	}
	if err != nil {
		return err
	}
	n, err := rzset.Count(x.View(), x.DB, x.Args[1], q)
	if err != nil {
		return err
	}
	x.Reply.Int(n)
	return nil
}

// scoreRange parses a score range's min and max (zslParseRange): "(" for
// an exclusive bound, then a strtod float; ErrMinMaxFloat otherwise.
func scoreRange(min, max []byte) (lo, hi rzset.ScoreBound, err error) {
	var ok1, ok2 bool
	lo, ok1 = scoreBound(min)
	hi, ok2 = scoreBound(max)
	if !ok1 || !ok2 {
		return lo, hi, ErrMinMaxFloat
	}
	return lo, hi, nil
}

func scoreBound(b []byte) (rzset.ScoreBound, bool) {
	var sb rzset.ScoreBound
	if len(b) > 0 && b[0] == '(' {
		sb.Excl, b = true, b[1:]
	}
	f, ok := num.ParseStrtod(b)
	sb.Value = f
	return sb, ok
}

// lexRange parses a lexicographic range's min and max
// (zslParseLexRange): "-", "+", "[member" or "(member"; ErrMinMaxLex
// otherwise.
func lexRange(min, max []byte) (lo, hi rzset.LexBound, err error) {
	var ok1, ok2 bool
	lo, ok1 = lexBound(min)
	hi, ok2 = lexBound(max)
	if !ok1 || !ok2 {
		return lo, hi, ErrMinMaxLex
	}
	return lo, hi, nil
}

func lexBound(b []byte) (rzset.LexBound, bool) {
	switch {
	case len(b) == 0:
		return rzset.LexBound{}, false
	case b[0] == '+' && len(b) == 1:
		return rzset.LexBound{Inf: 1}, true
	case b[0] == '-' && len(b) == 1:
		return rzset.LexBound{Inf: -1}, true
	case b[0] == '(':
		return rzset.LexBound{Value: b[1:], Excl: true}, true
	case b[0] == '[':
		return rzset.LexBound{Value: b[1:]}, true
	}
	return rzset.LexBound{}, false
}

// members replies the members, with their scores after each when
// withScores: RESP2 one flat array, RESP3 an array of [member, score]
// pairs with the scores as doubles (reply.Pairs), as Redis's
// ZRANGE WITHSCORES.
func members(x *command.Ctx, ms []rzset.Member, withScores bool) {
	if !withScores {
		x.Reply.Array(len(ms))
		for _, m := range ms {
			x.Reply.Bulk(m.Member)
		}
		return
	}
	x.Reply.Pairs(len(ms))
	for _, m := range ms {
		x.Reply.Pair()
		x.Reply.Bulk(m.Member)
		x.Reply.Double(m.Score)
	}
}

// flatMembers replies [member, score, ...] in one flat array in both
// protocols, the scores as bulk strings (ZSCAN) or as doubles (ZPOPMIN
// without a count).
func flatMembers(x *command.Ctx, ms []rzset.Member, bulkScores bool) {
	x.Reply.Array(2 * len(ms))
	var buf [32]byte
	for _, m := range ms {
		x.Reply.Bulk(m.Member)
		if bulkScores {
			x.Reply.Bulk(reply.AppendDouble(buf[:0], m.Score))
		} else {
			x.Reply.Double(m.Score)
		}
	}
}

// ZSCAN key cursor [MATCH pattern] [COUNT count]: [next cursor, [member,
// score, ...]]; a set of up to 128 members comes whole in one call.
// https://redis.io/docs/latest/commands/zscan/
func runZScan(x *command.Ctx) error {
	if _, ok := num.ParseCursor(x.Args[2]); !ok {
		return command.ErrInvalidCursor
	}
	v := x.View()
	if n, err := rzset.Card(v, x.DB, x.Args[1]); err != nil || n == 0 {
		if err == nil {
			command.EmptyScan(x)
		}
		return err
	}
	a, err := command.ParseScan(x.Args, false)
	if err != nil {
		return err
	}
	cur, ms, err := rzset.Scan(v, x.DB, x.Args[1], a.Cursor, a.Count, a.Match)
	if err != nil {
		return err
	}
	x.Reply.Array(2)
	var buf [20]byte
	x.Reply.Bulk(strconv.AppendUint(buf[:0], cur, 10))
	flatMembers(x, ms, true)
	return nil
}
