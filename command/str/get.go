package str

import (
	"errors"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/types/rstring"
)

// GET key. Reply: bulk string, or nil.
// https://redis.io/docs/latest/commands/get/
func runGet(x *command.Ctx) error {
	ok, err := rstring.GetWith(x.View(), x.DB, x.Args[1], func(val []byte, shared bool) {
		if shared {
			x.Reply.BulkShared(val)
		} else {
			x.Reply.Bulk(val)
		}
	}, x.Reply.BulkFill)
	if err == nil && !ok {
		x.Reply.NullBulk()
	}
	return err
}

// MGET key [key ...]. Reply: one bulk string or nil per key; a key of
// another type is nil, not an error.
// https://redis.io/docs/latest/commands/mget/
func runMGet(x *command.Ctx) error {
	v := x.View()
	keys := x.Args[1:]
	vals := make([][]byte, len(keys))
	found := make([]bool, len(keys))
	for i, k := range keys {
		val, ok, err := rstring.Get(v, x.DB, k)
		if err != nil && !errors.Is(err, materialize.ErrWrongType) {
			return err
		}
		vals[i], found[i] = val, ok
	}
	x.Reply.Array(len(keys))
	for i := range keys {
		if found[i] {
			x.Reply.Bulk(vals[i])
		} else {
			x.Reply.NullBulk()
		}
	}
	return nil
}

// STRLEN key. Reply: the value's length in bytes, 0 when missing.
// https://redis.io/docs/latest/commands/strlen/
func runStrlen(x *command.Ctx) error {
	val, _, err := rstring.Get(x.View(), x.DB, x.Args[1])
	if err != nil {
		return err
	}
	x.Reply.Int(int64(len(val)))
	return nil
}

// GETRANGE key start end (and SUBSTR). Reply: the bytes from start to end
// inclusive, negative indexes counting from the end; "" when missing.
// https://redis.io/docs/latest/commands/getrange/
func runGetRange(x *command.Ctx) error {
	start, err := command.IntArg(x.Args[2])
	if err != nil {
		return err
	}
	end, err := command.IntArg(x.Args[3])
	if err != nil {
		return err
	}
	val, _, err := rstring.Get(x.View(), x.DB, x.Args[1])
	if err != nil {
		return err
	}
	x.Reply.Bulk(rstring.Range(val, start, end))
	return nil
}

// GETDEL key. Reply: the value, or nil; the key is deleted.
// https://redis.io/docs/latest/commands/getdel/
func runGetDel(x *command.Ctx) error {
	var (
		val []byte
		ok  bool
	)
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		var events []codec.Event
		var err error
		val, ok, events, err = rstring.GetDel(v, x.DB, x.Args[1])
		return events, err
	}, func() { bulkOrNil(x, val, ok) })
}

// GETEX key [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT
// unix-time-milliseconds|PERSIST]. Reply: the value, or nil. Checks in
// Redis's order: options, the key, its type, then the expire time.
// https://redis.io/docs/latest/commands/getex/
func runGetEx(x *command.Ctx) error {
	o, err := parseOptions(x.Args, 2, forGetEx)
	if err != nil {
		return err
	}
	var (
		val []byte
		ok  bool
	)
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		key := x.Args[1]
		if _, found, err := rstring.Get(v, x.DB, key); err != nil || !found {
			return nil, err
		}
		e, err := o.expiry(command.Lower(x.Args[0]))
		if err != nil {
			return nil, err
		}
		var events []codec.Event
		val, ok, events, err = rstring.GetEx(v, x.DB, key, rstring.GetExArgs{Expire: e, Persist: o.persist})
		return events, wire(command.Lower(x.Args[0]), err)
	}, func() { bulkOrNil(x, val, ok) })
}

func bulkOrNil(x *command.Ctx, val []byte, ok bool) {
	if ok {
		x.Reply.Bulk(val)
	} else {
		x.Reply.NullBulk()
	}
}
