// Package list is the list command family (Redis 7.0, t_list.c): one Spec
// per command, each parsing its arguments and running over types/rlist.
// The blocking pops (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP) queue their
// client with command.Ctx.WriteBlock, so the writer serves blocked clients
// in arrival order right after the write that pushed onto their key.
package list

import (
	"time"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/types/rlist"
)

const (
	wf    = command.FlagWrite | command.FlagFast
	wdf   = wf | command.FlagDenyOOM
	wd    = command.FlagWrite | command.FlagDenyOOM
	w     = command.FlagWrite
	rof   = command.FlagReadonly | command.FlagFast
	ro    = command.FlagReadonly
	wb    = command.FlagWrite | command.FlagBlocking
	wdb   = wd | command.FlagBlocking
	group = "list"
)

// Errors of the list commands (Redis 7.0 t_list.c, server.c).
const (
	ErrIndexRange     command.WireError = "ERR index out of range"
	ErrRankZero       command.WireError = "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list"
	ErrCountNegative  command.WireError = "ERR COUNT can't be negative"
	ErrMaxLenNegative command.WireError = "ERR MAXLEN can't be negative"
	ErrCountPositive  command.WireError = "ERR count should be greater than 0"
)

// Specs returns the family's commands.
func Specs() []command.Spec {
	return []command.Spec{
		{Name: "lpush", Arity: -3, Flags: wdf, First: 1, Last: 1, Step: 1, Group: group, Since: "1.0.0", Summary: "Prepends one or more elements to a list. Creates the key if it doesn't exist.", Run: runPush},
		{Name: "rpush", Arity: -3, Flags: wdf, First: 1, Last: 1, Step: 1, Group: group, Since: "1.0.0", Summary: "Appends one or more elements to a list. Creates the key if it doesn't exist.", Run: runPush},
		{Name: "lpushx", Arity: -3, Flags: wdf, First: 1, Last: 1, Step: 1, Group: group, Since: "2.2.0", Summary: "Prepends one or more elements to a list only when the list exists.", Run: runPush},
		{Name: "rpushx", Arity: -3, Flags: wdf, First: 1, Last: 1, Step: 1, Group: group, Since: "2.2.0", Summary: "Appends an element to a list only when the list exists.", Run: runPush},
		{Name: "lpop", Arity: -2, Flags: wf, First: 1, Last: 1, Step: 1, Group: group, Since: "1.0.0", Summary: "Returns the first elements in a list after removing it. Deletes the list if the last element was popped.", Run: runPop},
		{Name: "rpop", Arity: -2, Flags: wf, First: 1, Last: 1, Step: 1, Group: group, Since: "1.0.0", Summary: "Returns and removes the last elements of a list. Deletes the list if the last element was popped.", Run: runPop},
		{Name: "llen", Arity: 2, Flags: rof, First: 1, Last: 1, Step: 1, Group: group, Since: "1.0.0", Summary: "Returns the length of a list.", Run: runLLen},
		{Name: "lrange", Arity: 4, Flags: ro, First: 1, Last: 1, Step: 1, Group: group, Since: "1.0.0", Summary: "Returns a range of elements from a list.", Run: runLRange},
		{Name: "lindex", Arity: 3, Flags: ro, First: 1, Last: 1, Step: 1, Group: group, Since: "1.0.0", Summary: "Returns an element from a list by its index.", Run: runLIndex},
		{Name: "lset", Arity: 4, Flags: wd, First: 1, Last: 1, Step: 1, Group: group, Since: "1.0.0", Summary: "Sets the value of an element in a list by its index.", Run: runLSet},
		{Name: "linsert", Arity: 5, Flags: wd, First: 1, Last: 1, Step: 1, Group: group, Since: "2.2.0", Summary: "Inserts an element before or after another element in a list.", Run: runLInsert},
		{Name: "lrem", Arity: 4, Flags: w, First: 1, Last: 1, Step: 1, Group: group, Since: "1.0.0", Summary: "Removes elements from a list. Deletes the list if the last element was removed.", Run: runLRem},
		{Name: "ltrim", Arity: 4, Flags: w, First: 1, Last: 1, Step: 1, Group: group, Since: "1.0.0", Summary: "Removes elements from both ends a list. Deletes the list if all elements were trimmed.", Run: runLTrim},
		{Name: "lpos", Arity: -3, Flags: ro, First: 1, Last: 1, Step: 1, Group: group, Since: "6.0.6", Summary: "Returns the index of matching elements in a list.", Run: runLPos},
		{Name: "lmove", Arity: 5, Flags: wd, First: 1, Last: 2, Step: 1, Group: group, Since: "6.2.0", Summary: "Returns an element after popping it from one list and pushing it to another. Deletes the list if the last element was moved.", Run: runLMove},
		{Name: "rpoplpush", Arity: 3, Flags: wd, First: 1, Last: 2, Step: 1, Group: group, Since: "1.2.0", Summary: "Returns the last element of a list after removing and pushing it to another list. Deletes the list if the last element was popped.", Run: runLMove},
		{Name: "lmpop", Arity: -4, Flags: w, Group: group, Since: "7.0.0", Summary: "Returns multiple elements from a list after removing them. Deletes the list if the last element was popped.", Run: runLMPop},
		{Name: "blpop", Arity: -3, Flags: wb, First: 1, Last: -2, Step: 1, Group: group, Since: "2.0.0", Summary: "Removes and returns the first element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", Run: runBPop},
		{Name: "brpop", Arity: -3, Flags: wb, First: 1, Last: -2, Step: 1, Group: group, Since: "2.0.0", Summary: "Removes and returns the last element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", Run: runBPop},
		{Name: "blmove", Arity: 6, Flags: wdb, First: 1, Last: 2, Step: 1, Group: group, Since: "6.2.0", Summary: "Pops an element from a list, pushes it to another list and returns it. Blocks until an element is available otherwise. Deletes the list if the last element was moved.", Run: runBLMove},
		{Name: "brpoplpush", Arity: 4, Flags: wdb, First: 1, Last: 2, Step: 1, Group: group, Since: "2.2.0", Summary: "Pops an element from a list, pushes it to another list and returns it. Block until an element is available otherwise. Deletes the list if the last element was popped.", Run: runBLMove},
		{Name: "blmpop", Arity: -5, Flags: wb, Group: group, Since: "7.0.0", Summary: "Pops the first element from one of multiple lists. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", Run: runLMPop},
	}
}

// LPUSH|RPUSH|LPUSHX|RPUSHX key element [element ...]: the new length (0
// for the X forms on a missing key).
// https://redis.io/docs/latest/commands/lpush/
func runPush(x *command.Ctx) error {
	name := x.Args[0]
	side := rlist.Side(name[0] == 'l' || name[0] == 'L')
	existing := len(name) == 6
	var n int64
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		var events []codec.Event
		var err error
		n, events, err = rlist.Push(v, x.DB, x.Args[1], side, existing, x.Args[2:])
		return events, err
	}, func() { x.Reply.Int(n) })
}

// LPOP|RPOP key [count]: one element (nil when missing), or with a count
// an array of up to count (a null array when missing).
// https://redis.io/docs/latest/commands/lpop/
func runPop(x *command.Ctx) error {
	if len(x.Args) > 3 {
		return command.WireError("ERR wrong number of arguments for '" + command.Lower(x.Args[0]) + "' command")
	}
	side := rlist.Side(x.Args[0][0] == 'l' || x.Args[0][0] == 'L')
	withCount := len(x.Args) == 3
	count := int64(1)
	if withCount {
		n, ok := command.ParseInt(x.Args[2])
		if !ok || n < 0 {
			return command.ErrMustBePositive
		}
		count = n
	}
	var (
		elems [][]byte
		found bool
	)
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		var events []codec.Event
		var err error
		elems, found, events, err = rlist.Pop(v, x.DB, x.Args[1], side, count)
		return events, err
	}, func() {
		switch {
		case !withCount && !found:
			x.Reply.NullBulk()
		case !withCount:
			x.Reply.Bulk(elems[0])
		case !found:
			x.Reply.NullArray()
		default:
			bulks(x, elems)
		}
	})
}

func bulks(x *command.Ctx, elems [][]byte) {
	x.Reply.Array(len(elems))
	for _, e := range elems {
		x.Reply.Bulk(e)
	}
}

// LLEN key: the length, O(1).
// https://redis.io/docs/latest/commands/llen/
func runLLen(x *command.Ctx) error {
	n, err := rlist.Len(x.View(), x.DB, x.Args[1])
	if err != nil {
		return err
	}
	x.Reply.Int(n)
	return nil
}

// LRANGE key start stop: the elements from start to stop inclusive.
// O(S + N): one seek to start, then N elements.
// https://redis.io/docs/latest/commands/lrange/
func runLRange(x *command.Ctx) error {
	start, err := command.IntArg(x.Args[2])
	if err != nil {
		return err
	}
	stop, err := command.IntArg(x.Args[3])
	if err != nil {
		return err
	}
	elems, err := rlist.Range(x.View(), x.DB, x.Args[1], start, stop)
	if err != nil {
		return err
	}
	x.Reply.Array(elems.Len())
	for i := range elems.Len() {
		x.Reply.Bulk(elems.At(i))
	}
	return nil
}

// LINDEX key index: the element, or nil. O(1). Redis looks the key up
// before it parses the index, so a missing key with a bad index is nil.
// https://redis.io/docs/latest/commands/lindex/
func runLIndex(x *command.Ctx) error {
	v := x.View()
	i, err := command.IntArg(x.Args[2])
	if err != nil {
		if ok, lerr := rlist.Exists(v, x.DB, x.Args[1]); lerr != nil || !ok {
			if lerr == nil {
				x.Reply.NullBulk()
			}
			return lerr
		}
		return err
	}
	elem, ok, err := rlist.Index(v, x.DB, x.Args[1], i)
	if err != nil {
		return err
	}
	if !ok {
		x.Reply.NullBulk()
		return nil
	}
	x.Reply.Bulk(elem)
	return nil
}

// LSET key index element: OK. A missing key is "no such key" (before the
// index is parsed), an index outside the list "index out of range". O(1).
// https://redis.io/docs/latest/commands/lset/
func runLSet(x *command.Ctx) error {
	i, iErr := command.IntArg(x.Args[2])
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		found, inRange, events, err := rlist.Set(v, x.DB, x.Args[1], i, x.Args[3])
		switch {
		case err != nil:
			return nil, err
		case !found:
			return events, command.ErrNoSuchKey
		case iErr != nil:
			return events, iErr
		case !inRange:
			return events, ErrIndexRange
		}
		return events, nil
	}, func() { x.Reply.OK() })
}

// LINSERT key BEFORE|AFTER pivot element: the new length, -1 when pivot
// is absent, 0 when the key is missing.
// https://redis.io/docs/latest/commands/linsert/
func runLInsert(x *command.Ctx) error {
	var before bool
	switch {
	case command.EqualFold(x.Args[2], "BEFORE"):
		before = true
	case command.EqualFold(x.Args[2], "AFTER"):
	default:
		return command.ErrSyntax
	}
	var n int64
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		var events []codec.Event
		var err error
		n, events, err = rlist.Insert(v, x.DB, x.Args[1], before, x.Args[3], x.Args[4])
		return events, err
	}, func() { x.Reply.Int(n) })
}

// LREM key count element: the number removed.
// https://redis.io/docs/latest/commands/lrem/
func runLRem(x *command.Ctx) error {
	count, err := command.IntArg(x.Args[2])
	if err != nil {
		return err
	}
	var n int64
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		var events []codec.Event
		var err error
		n, events, err = rlist.Rem(v, x.DB, x.Args[1], count, x.Args[3])
		return events, err
	}, func() { x.Reply.Int(n) })
}

// LTRIM key start stop: OK.
// https://redis.io/docs/latest/commands/ltrim/
func runLTrim(x *command.Ctx) error {
	start, err := command.IntArg(x.Args[2])
	if err != nil {
		return err
	}
	stop, err := command.IntArg(x.Args[3])
	if err != nil {
		return err
	}
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		return rlist.Trim(v, x.DB, x.Args[1], start, stop)
	}, func() { x.Reply.OK() })
}

// LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len]: the index
// of the first match (nil when none), or with COUNT an array of matches.
// https://redis.io/docs/latest/commands/lpos/
func runLPos(x *command.Ctx) error {
	rank, count, maxlen := int64(1), int64(-1), int64(0)
	for j := 3; j < len(x.Args); j++ {
		more := j+1 < len(x.Args)
		switch {
		case command.EqualFold(x.Args[j], "RANK") && more:
			j++
			n, err := command.IntArg(x.Args[j])
			if err != nil {
				return err
			}
			if n == 0 {
				return ErrRankZero
			}
			rank = n
		case command.EqualFold(x.Args[j], "COUNT") && more:
			j++
			n, ok := command.ParseInt(x.Args[j]) // Redis: this error for a non-integer too
			if !ok || n < 0 {
				return ErrCountNegative
			}
			count = n
		case command.EqualFold(x.Args[j], "MAXLEN") && more:
			j++
			n, ok := command.ParseInt(x.Args[j])
			if !ok || n < 0 {
				return ErrMaxLenNegative
			}
			maxlen = n
		default:
			return command.ErrSyntax
		}
	}
	limit := count
	if limit < 0 {
		limit = 1
	}
	at, err := rlist.Pos(x.View(), x.DB, x.Args[1], x.Args[2], rank, limit, maxlen)
	if err != nil {
		return err
	}
	if count < 0 {
		if len(at) == 0 {
			x.Reply.NullBulk()
		} else {
			x.Reply.Int(at[0])
		}
		return nil
	}
	x.Reply.Array(len(at))
	for _, i := range at {
		x.Reply.Int(i)
	}
	return nil
}

// side parses LEFT or RIGHT.
func side(b []byte) (rlist.Side, error) {
	switch {
	case command.EqualFold(b, "LEFT"):
		return rlist.Left, nil
	case command.EqualFold(b, "RIGHT"):
		return rlist.Right, nil
	}
	return false, command.ErrSyntax
}

// moveSides parses LMOVE's and BLMOVE's wherefrom and whereto, or gives
// RPOPLPUSH's and BRPOPLPUSH's RIGHT LEFT.
func moveSides(x *command.Ctx) (from, to rlist.Side, err error) {
	if len(x.Args) < 5 {
		return rlist.Right, rlist.Left, nil
	}
	if from, err = side(x.Args[3]); err != nil {
		return
	}
	to, err = side(x.Args[4])
	return
}

// LMOVE source destination LEFT|RIGHT LEFT|RIGHT, RPOPLPUSH source
// destination: the element moved, or nil when source is missing.
// https://redis.io/docs/latest/commands/lmove/
func runLMove(x *command.Ctx) error {
	from, to, err := moveSides(x)
	if err != nil {
		return err
	}
	var (
		elem  []byte
		found bool
	)
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		var events []codec.Event
		var err error
		elem, found, events, err = rlist.Move(v, x.DB, x.Args[1], x.Args[2], from, to)
		return events, err
	}, func() { bulkOrNil(x, elem, found) })
}

func bulkOrNil(x *command.Ctx, elem []byte, found bool) {
	if !found {
		x.Reply.NullBulk()
		return
	}
	x.Reply.Bulk(elem)
}

// BLPOP|BRPOP key [key ...] timeout: [key, element] from the first key
// holding a list, or once one of the keys is pushed onto; a null array on
// timeout (and at once inside MULTI).
// https://redis.io/docs/latest/commands/blpop/
func runBPop(x *command.Ctx) error {
	side := rlist.Side(x.Args[0][1] == 'l' || x.Args[0][1] == 'L')
	keys := x.Args[1 : len(x.Args)-1]
	timeout, err := command.TimeoutArg(x.Args[len(x.Args)-1], x.View().NowMs())
	if err != nil {
		return err
	}
	return blockingPop(x, keys, side, -1, timeout)
}

// LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count], BLMPOP timeout
// numkeys ...: [key, [elements]] from the first key holding a list (up to
// count elements, default 1), a null array when none does (BLMPOP: once
// one is pushed onto, or null on timeout).
// https://redis.io/docs/latest/commands/lmpop/
func runLMPop(x *command.Ctx) error {
	blocking := command.EqualFold(x.Args[0], "BLMPOP")
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
	where, err := side(x.Args[whereAt])
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
		return popFirst(x, keys, where, count)
	}
	timeout, err := command.TimeoutArg(x.Args[1], x.View().NowMs())
	if err != nil {
		return err
	}
	return blockingPop(x, keys, where, count, timeout)
}

// popFirst is LMPOP: pop from the first of keys holding a list.
func popFirst(x *command.Ctx, keys [][]byte, where rlist.Side, count int64) error {
	var (
		key   []byte
		elems [][]byte
	)
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		k, ok, err := rlist.FirstNonEmpty(v, x.DB, keys)
		if err != nil || !ok {
			key = nil
			return nil, err
		}
		key = k
		var events []codec.Event
		elems, _, events, err = rlist.Pop(v, x.DB, k, where, count)
		return events, err
	}, func() { keyElems(x, key, elems, true) })
}

// keyElems replies [key, element] (single) or [key, [elements]], or a
// null array when key is nil.
func keyElems(x *command.Ctx, key []byte, elems [][]byte, nested bool) {
	if key == nil {
		x.Reply.NullArray()
		return
	}
	x.Reply.Array(2)
	x.Reply.Bulk(key)
	if nested {
		bulks(x, elems)
		return
	}
	x.Reply.Bulk(elems[0])
}

// blockingPop is BLPOP, BRPOP (count -1: one element, flat reply) and
// BLMPOP: pop from the first of keys holding a list, or queue the client
// in the same decision, served by the writer from whichever key is pushed
// onto first.
func blockingPop(x *command.Ctx, keys [][]byte, where rlist.Side, count int64, timeout time.Duration) error {
	var (
		key   []byte
		elems [][]byte
	)
	n := max(count, 1)
	pop := func(v *materialize.View, db uint8, k []byte) ([]codec.Event, bool, error) {
		got, found, events, err := rlist.Pop(v, db, k, where, n)
		if err != nil || !found {
			return events, false, err
		}
		key, elems = k, got
		return events, true, nil
	}
	queued, served, err := x.WriteBlock(func(v *materialize.View) ([]codec.Event, *command.Waiter, error) {
		k, ok, err := rlist.FirstNonEmpty(v, x.DB, keys)
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
		return nil, &command.Waiter{Keys: keys, Pop: true, Pops: codec.TypeList, Serve: func(v *materialize.View, k []byte) ([]codec.Event, bool) {
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
	keyElems(x, key, elems, count >= 0)
	return nil
}

// BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout, BRPOPLPUSH
// source destination timeout: LMOVE, or once source is pushed onto; a
// null array on timeout (a null bulk at once inside MULTI).
// https://redis.io/docs/latest/commands/blmove/
func runBLMove(x *command.Ctx) error {
	from, to, err := moveSides(x)
	if err != nil {
		return err
	}
	timeout, err := command.TimeoutArg(x.Args[len(x.Args)-1], x.View().NowMs())
	if err != nil {
		return err
	}
	var (
		elem    []byte
		moved   bool
		wakeErr error
	)
	src, dst := x.Args[1], x.Args[2]
	queued, served, err := x.WriteBlock(func(v *materialize.View) ([]codec.Event, *command.Waiter, error) {
		var events []codec.Event
		var err error
		if elem, moved, events, err = rlist.Move(v, x.DB, src, dst, from, to); err != nil || moved || x.InTxn() {
			return events, nil, err
		}
		return events, &command.Waiter{Keys: [][]byte{src}, Pop: true, Pops: codec.TypeList, Serve: func(v *materialize.View, _ []byte) ([]codec.Event, bool) {
			db := v.StorageDB(x.SelectedDB())
			if ok, err := rlist.Exists(v, db, src); err != nil || !ok {
				return nil, false // not a list (yet): keep waiting
			}
			var events []codec.Event
			elem, moved, events, wakeErr = rlist.Move(v, db, src, dst, from, to)
			return events, true // a wrong-typed destination is the client's error
		}}, nil
	}, timeout)
	switch {
	case err != nil:
		return err
	case queued && !served:
		x.Reply.NullArray()
		return nil
	case wakeErr != nil:
		return wakeErr
	}
	bulkOrNil(x, elem, moved)
	return nil
}
