// Package key is the generic key command family (Redis 7.0, db.c,
// expire.c, object.c): DEL, UNLINK, EXISTS, TYPE, the EXPIRE and TTL
// families, PERSIST, RENAME, RENAMENX, COPY, MOVE, TOUCH, RANDOMKEY,
// OBJECT, KEYS, SCAN, and DBSIZE, FLUSHDB, FLUSHALL, SWAPDB.
package key

import (
	"errors"
	"fmt"
	"math"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/keyspace"
	"github.com/sediment-dev/sediment/materialize"
)

const group = "generic"

// Specs returns the family's commands.
func Specs() []command.Spec {
	return append(append(genericSpecs(), scanSpecs()...), []command.Spec{
		{Name: "rename", Arity: 3, Flags: command.FlagWrite, First: 1, Last: 2, Step: 1, Group: group, Since: "1.0.0", Summary: "Renames a key and overwrites the destination.", Run: runRename},
		{Name: "renamenx", Arity: 3, Flags: command.FlagWrite | command.FlagFast, First: 1, Last: 2, Step: 1, Group: group, Since: "1.0.0", Summary: "Renames a key only when the target key name doesn't exist.", Run: runRename},
		{Name: "copy", Arity: -3, Flags: command.FlagWrite | command.FlagDenyOOM, First: 1, Last: 2, Step: 1, Group: group, Since: "6.2.0", Summary: "Copies the value of a key to a new key.", Run: runCopy},
		{Name: "move", Arity: 3, Flags: command.FlagWrite | command.FlagFast, First: 1, Last: 1, Step: 1, Group: group, Since: "1.0.0", Summary: "Moves a key to another database.", Run: runMove},
		{Name: "touch", Arity: -2, Flags: command.FlagReadonly | command.FlagFast, First: 1, Last: -1, Step: 1, Group: group, Since: "3.2.1", Summary: "Returns the number of existing keys out of those specified after updating the time they were last accessed.", Run: runTouch},
		{Name: "randomkey", Arity: 1, Flags: command.FlagReadonly, Group: group, Since: "1.0.0", Summary: "Returns a random key name from the database.", Run: runRandomKey},
		{Name: "object", Arity: -2, Group: group, Since: "2.2.3", Summary: "A container for object introspection commands.", Run: runObject},
	}...)
}

// wire maps keyspace's errors to Redis's words.
func wire(err error) error {
	switch {
	case errors.Is(err, keyspace.ErrNoSuchKey):
		return command.ErrNoSuchKey
	case errors.Is(err, keyspace.ErrSameObject):
		return command.ErrSameObject
	}
	return err
}

// RENAME key newkey: OK. RENAMENX key newkey: 1, or 0 when newkey exists.
// The TTL moves with the key; a stream keeps its groups and PELs. Cost:
// O(elements) (the sub-keys are rewritten), where Redis's is O(1).
// https://redis.io/docs/latest/commands/rename/
func runRename(x *command.Ctx) error {
	nx := command.EqualFold(x.Args[0], "RENAMENX")
	var done bool
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		var events []codec.Event
		var err error
		done, events, err = keyspace.Rename(v, x.DB, x.Args[1], x.Args[2], nx)
		return events, wire(err)
	}, func() {
		if nx {
			x.Reply.IntBool(done)
		} else {
			x.Reply.OK()
		}
	})
}

// db parses a database index as MOVE and COPY do: getIntFromObjectOrReply
// (an integer within C's int, with its range error), then selectDb's
// [0, databases), else "ERR DB index is out of range".
func db(x *command.Ctx, b []byte) (uint8, error) {
	n, err := command.IntArg(b)
	if err != nil {
		return 0, err
	}
	if n < math.MinInt32 || n > math.MaxInt32 {
		return 0, command.ErrValueRange(math.MinInt32, math.MaxInt32)
	}
	if n < 0 || n >= int64(x.Limits.Databases) {
		return 0, command.ErrDBIndex
	}
	return uint8(n), nil
}

// COPY source destination [DB destination-db] [REPLACE]: 1 when copied,
// 0 when source is missing or destination exists (without REPLACE).
// https://redis.io/docs/latest/commands/copy/
func runCopy(x *command.Ctx) error {
	dst, replace := x.SelectedDB(), false
	for i := 3; i < len(x.Args); i++ {
		switch {
		case command.EqualFold(x.Args[i], "REPLACE"):
			replace = true
		case command.EqualFold(x.Args[i], "DB") && i+1 < len(x.Args):
			d, err := db(x, x.Args[i+1])
			if err != nil {
				return err
			}
			dst = d
			i++
		default:
			return command.ErrSyntax
		}
	}
	var done bool
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		var events []codec.Event
		var err error
		done, events, err = keyspace.Copy(v, x.DB, x.Args[1], v.StorageDB(dst), x.Args[2], replace)
		return events, wire(err)
	}, func() { x.Reply.IntBool(done) })
}

// MOVE key db: 1 when moved, 0 when missing or already in db.
// https://redis.io/docs/latest/commands/move/
func runMove(x *command.Ctx) error {
	dst, err := db(x, x.Args[2])
	if err != nil {
		return err
	}
	var done bool
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		var events []codec.Event
		var err error
		done, events, err = keyspace.Move(v, x.DB, x.Args[1], v.StorageDB(dst))
		return events, wire(err)
	}, func() { x.Reply.IntBool(done) })
}

// TOUCH key [key ...]: how many exist (a key named twice counts twice).
// Sediment keeps no access times, so nothing else happens.
// https://redis.io/docs/latest/commands/touch/
func runTouch(x *command.Ctx) error {
	v := x.View()
	var n int64
	for _, k := range x.Args[1:] {
		_, ok, err := v.Meta(x.DB, k)
		if err != nil {
			return err
		}
		if ok {
			n++
		}
	}
	x.Reply.Int(n)
	return nil
}

// RANDOMKEY: a random key, or nil when the database is empty.
// https://redis.io/docs/latest/commands/randomkey/
func runRandomKey(x *command.Ctx) error {
	k, ok, err := keyspace.Random(x.View(), x.DB)
	if err != nil {
		return err
	}
	if ok {
		x.Reply.Bulk(k)
	} else {
		x.Reply.NullBulk()
	}
	return nil
}

var objectHelp = []string{
	"OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"ENCODING <key>",
	"    Return the kind of internal representation used in order to store the value",
	"    associated with a <key>.",
	"FREQ <key>",
	"    Return the access frequency index of the <key>. The returned integer is",
	"    proportional to the logarithm of the recent access frequency of the key.",
	"IDLETIME <key>",
	"    Return the idle time of the <key>, that is the approximated number of",
	"    seconds elapsed since the last access to the key.",
	"REFCOUNT <key>",
	"    Return the number of references of the value associated with the specified",
	"    <key>.",
	"HELP",
	"    Prints this help.",
}

// OBJECT ENCODING|REFCOUNT|IDLETIME|FREQ key, OBJECT HELP. ENCODING gives
// the name Redis 7.0 would (keyspace.Encoding); REFCOUNT is 1, or
// 2147483647 for the integers 0..9999 Redis shares; IDLETIME is 0 (no
// access times are kept); FREQ is Redis's error under its default
// noeviction policy. A missing key is nil.
// https://redis.io/docs/latest/commands/object/
func runObject(x *command.Ctx) error {
	sub := x.Args[1]
	arity := 3
	if command.EqualFold(sub, "HELP") {
		arity = 2
	}
	known := false
	for _, s := range []string{"ENCODING", "REFCOUNT", "IDLETIME", "FREQ", "HELP"} {
		known = known || command.EqualFold(sub, s)
	}
	if !known {
		return command.ErrUnknownSubcommand(sub, "object")
	}
	if len(x.Args) != arity {
		return command.ErrWrongArgs(fmt.Sprintf("object|%s", command.Lower(sub)))
	}
	if arity == 2 {
		command.WriteHelp(x.Reply, objectHelp)
		return nil
	}
	enc, ok, err := keyspace.Encoding(x.View(), x.DB, x.Args[2])
	if err != nil {
		return err
	}
	if !ok {
		x.Reply.NullBulk()
		return nil
	}
	switch {
	case command.EqualFold(sub, "ENCODING"):
		x.Reply.BulkString(enc)
	case command.EqualFold(sub, "REFCOUNT"):
		refs := int64(1)
		if enc == "int" && isSharedInt(x) {
			refs = math.MaxInt32
		}
		x.Reply.Int(refs)
	case command.EqualFold(sub, "IDLETIME"):
		x.Reply.Int(0)
	default:
		return command.ErrFreqNotTracked
	}
	return nil
}

// isSharedInt reports whether the string is one of the integers 0..9999
// Redis keeps shared (OBJ_SHARED_INTEGERS).
func isSharedInt(x *command.Ctx) bool {
	m, ok, err := x.View().Meta(x.DB, x.Args[2])
	if err != nil || !ok {
		return false
	}
	n, isInt := command.ParseInt(m.Value)
	return isInt && n >= 0 && n < 10000
}
