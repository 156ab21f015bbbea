package zset

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/types/elements"
	"github.com/sediment-dev/sediment/types/rzset"
)

// ZPOPMIN|ZPOPMAX key [count]: up to count members (default 1) with the
// lowest (highest) scores, removed: [member, score, ...]; count 0 is an
// empty array (WRONGTYPE still checked). With a count, RESP3 nests the
// pairs (members); without one the reply stays flat, as Redis 7.0's.
// https://redis.io/docs/latest/commands/zpopmin/
func runZPop(x *command.Ctx) error {
	if len(x.Args) > 3 {
		return command.ErrSyntax
	}
	max := command.EqualFold(x.Args[0], "ZPOPMAX")
	count := int64(1)
	if len(x.Args) == 3 {
		n, ok := command.ParseInt(x.Args[2])
		if !ok || n < 0 {
			return command.ErrMustBePositive
		}
		if n == 0 { // after the type check, as in Redis: a decision that writes nothing
			return x.Write(func(v *materialize.View) ([]codec.Event, error) {
				_, err := rzset.Exists(v, x.DB, x.Args[1])
				return nil, err
			}, func() { x.Reply.Array(0) })
		}
		count = n
	}
	var got []rzset.Member
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		var events []codec.Event
		var err error
		got, _, events, err = rzset.Pop(v, x.DB, x.Args[1], max, count)
		return events, err
	}, func() {
		if len(x.Args) == 3 {
			members(x, got, true)
		} else {
			flatMembers(x, got, false)
		}
	})
}

func minMax(b []byte) (max bool, err error) {
	switch {
	case command.EqualFold(b, "MIN"):
		return false, nil
	case command.EqualFold(b, "MAX"):
		return true, nil
	}
	return false, command.ErrSyntax
}

// ZMPOP numkeys key [key ...] MIN|MAX [COUNT count], BZMPOP timeout
// numkeys ...: [key, [[member, score], ...]] from the first key holding a
// sorted set (up to count members, default 1), a null array when none
// does (BZMPOP: once one is added to, or null on timeout).
// https://redis.io/docs/latest/commands/zmpop/
func runZMPop(x *command.Ctx) error {
	blocking := command.EqualFold(x.Args[0], "BZMPOP")
	at := 1
	if blocking {
		at = 2
	}
	n, ok := command.ParseInt(x.Args[at])
	if !ok || n <= 0 {
		return command.ErrNumKeys
	}
	whereAt := int64(at) + n + 1
	if whereAt >= int64(len(x.Args)) || whereAt < 0 {
		return command.ErrSyntax
	}
	max, err := minMax(x.Args[whereAt])
	if err != nil {
		return err
	}
	count := int64(-1)
	for j := whereAt + 1; j < int64(len(x.Args)); j++ {
		if count == -1 && command.EqualFold(x.Args[j], "COUNT") && j+1 < int64(len(x.Args)) {
			j++
			c, ok := command.ParseInt(x.Args[j])
			if !ok || c <= 0 {
				return ErrCountPositive
			}
			count = c
			continue
		}
		return command.ErrSyntax
	}
	if count == -1 {
		count = 1
	}
	keys := x.Args[at+1 : whereAt]
	if !blocking {
		var (
			key []byte
			got []rzset.Member
		)
		return x.Write(func(v *materialize.View) ([]codec.Event, error) {
			k, ok, err := rzset.FirstNonEmpty(v, x.DB, keys)
			if err != nil || !ok {
				key = nil
				return nil, err
			}
			key = k
			var events []codec.Event
			got, _, events, err = rzset.Pop(v, x.DB, k, max, count)
			return events, err
		}, func() { keyMembers(x, key, got, true) })
	}
	timeout, err := command.TimeoutArg(x.Args[1], x.View().NowMs())
	if err != nil {
		return err
	}
	return blockingPop(x, keys, max, count, true, timeout)
}

// keyMembers replies [key, member, score] (flat) or [key, [[member,
// score], ...]] (nested), or a null array when key is nil.
func keyMembers(x *command.Ctx, key []byte, got []rzset.Member, nested bool) {
	if key == nil {
		x.Reply.NullArray()
		return
	}
	if !nested {
		x.Reply.Array(3)
		x.Reply.Bulk(key)
		x.Reply.Bulk(got[0].Member)
		x.Reply.Double(got[0].Score)
		return
	}
	x.Reply.Array(2)
	x.Reply.Bulk(key)
	x.Reply.Array(len(got))
	for _, m := range got {
		x.Reply.Array(2)
		x.Reply.Bulk(m.Member)
		x.Reply.Double(m.Score)
	}
}

// BZPOPMIN|BZPOPMAX key [key ...] timeout: [key, member, score] from the
// first key holding a sorted set, or once one of the keys is added to; a
// null array on timeout (and at once inside MULTI).
// https://redis.io/docs/latest/commands/bzpopmin/
func runBZPop(x *command.Ctx) error {
	max := command.EqualFold(x.Args[0], "BZPOPMAX")
	keys := x.Args[1 : len(x.Args)-1]
	timeout, err := command.TimeoutArg(x.Args[len(x.Args)-1], x.View().NowMs())
	if err != nil {
		return err
	}
	return blockingPop(x, keys, max, 1, false, timeout)
}

// blockingPop pops from the first of keys holding a sorted set, or queues
// the client in the same decision, served by the writer from whichever
// key is added to first (the list pops' scheme, command/list).
func blockingPop(x *command.Ctx, keys [][]byte, max bool, count int64, nested bool, timeout time.Duration) error {
	var (
		key []byte
		got []rzset.Member
	)
	pop := func(v *materialize.View, db uint8, k []byte) ([]codec.Event, bool, error) {
		ms, found, events, err := rzset.Pop(v, db, k, max, count)
		if err != nil || !found {
			return events, false, err
		}
		key, got = k, ms
		return events, true, nil
	}
	queued, served, err := x.WriteBlock(func(v *materialize.View) ([]codec.Event, *command.Waiter, error) {
		k, ok, err := rzset.FirstNonEmpty(v, x.DB, keys)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			events, _, err := pop(v, x.DB, k)
			return events, nil, err
		}
		if x.InTxn() {
			return nil, nil, nil // a timeout at once
		}
		return nil, &command.Waiter{Keys: keys, Pop: true, Pops: codec.TypeZSet, Serve: func(v *materialize.View, k []byte) ([]codec.Event, bool) {
			events, ok, err := pop(v, v.StorageDB(x.SelectedDB()), k)
			return events, ok && err == nil
		}}, nil
	}, timeout)
	switch {
	case err != nil:
		return err
	case queued && !served:
		key = nil
	}
	keyMembers(x, key, got, nested)
	return nil
}

// ZRANDMEMBER key [count [WITHSCORES]]: a random member (or nil); with a
// count, that many distinct members (at most all, then highest score
// first, as Redis 7.0 replies),
// or with a negative count that many picks that may repeat.
// https://redis.io/docs/latest/commands/zrandmember/
func runZRandMember(x *command.Ctx) error {
	if len(x.Args) == 2 {
		ms, err := rzset.Sample(x.View(), x.DB, x.Args[1], func(n int64) []int64 {
			if n == 0 {
				return nil
			}
			return []int64{rand.Int64N(n)}
		})
		if err != nil {
			return err
		}
		if len(ms) == 0 {
			x.Reply.NullBulk()
		} else {
			x.Reply.Bulk(ms[0].Member)
		}
		return nil
	}
	count, err := command.IntArg(x.Args[2])
	if err != nil {
		return err
	}
	if count < -math.MaxInt64 {
		return command.ErrValueRange(-math.MaxInt64, math.MaxInt64)
	}
	withScores := false
	switch {
	case len(x.Args) > 4 || (len(x.Args) == 4 && !command.EqualFold(x.Args[3], "WITHSCORES")):
		return command.ErrSyntax
	case len(x.Args) == 4:
		withScores = true
		if count < -math.MaxInt64/2 || count > math.MaxInt64/2 {
			return command.ErrOutOfRange
		}
	}
	if count < 0 {
		return rzset.SampleRepeat(x.View(), x.DB, x.Args[1], -count, func(n int64) {
			switch {
			case n == 0:
				x.Reply.Array(0)
			case withScores:
				x.Reply.Pairs(int(-count))
			default:
				x.Reply.Array(int(-count))
			}
		}, func(m rzset.Member) {
			if withScores {
				x.Reply.Pair()
			}
			x.Reply.Bulk(m.Member)
			if withScores {
				x.Reply.Double(m.Score)
			}
		})
	}
	ms, err := rzset.Sample(x.View(), x.DB, x.Args[1], func(n int64) []int64 {
		p := elements.Pick(n, count)
		if count >= n {
			slices.Reverse(p) // the whole set: Redis replies it highest score first
		}
		return p
	})
	if err != nil {
		return err
	}
	members(x, ms, withScores)
	return nil
}
