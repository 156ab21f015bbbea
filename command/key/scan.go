package key

import (
	"strconv"
	"strings"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/internal/glob"
	"github.com/sediment-dev/sediment/internal/num"
	"github.com/sediment-dev/sediment/keyspace"
)

func scanSpecs() []command.Spec {
	return []command.Spec{
		{Name: "keys", Arity: 2, Flags: command.FlagReadonly, Group: group, Since: "1.0.0", Summary: "Returns all key names that match a pattern.", Run: runKeys},
		{Name: "scan", Arity: -2, Flags: command.FlagReadonly, Group: group, Since: "2.8.0", Summary: "Iterates over the key names in the database.", Run: runScan},
	}
}

// matchesAll reports whether pattern is "*", which KEYS and SCAN MATCH, as
// Redis, answer without matching: unlike glob.Match("*", ""), it takes the
// empty key too.
func matchesAll(pattern []byte) bool {
	return len(pattern) == 1 && pattern[0] == '*'
}

// KEYS pattern: array of keys, in hash-slot order. O(N) in the db's keys,
// each match O(len(pattern) × len(key)) (glob.Match). The scan stops early
// when the client disconnects (command.Guard): ErrClientGone.
// https://redis.io/docs/latest/commands/keys/
func runKeys(x *command.Ctx) error {
	pattern := x.Args[1]
	all := matchesAll(pattern)
	var keys [][]byte
	g := x.Guard()
	defer g.Release()
	gone := false
	_, _, err := keyspace.Scan(x.View(), x.DB, 0, nil, func(key []byte, _ codec.Meta) bool {
		if gone = g.Gone(); gone {
			return false
		}
		if all || glob.Match(pattern, key) {
			keys = append(keys, key)
		}
		return true
	})
	switch {
	case err != nil:
		return err
	case gone:
		return command.ErrClientGone
	}
	x.Reply.Array(len(keys))
	for _, k := range keys {
		x.Reply.Bulk(k)
	}
	return nil
}

// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]: [next cursor,
// keys]. Each call visits about COUNT keys, in hash-slot order. A cursor
// below 16384 is the next slot to visit; one above names a position inside
// a slot (keyspace.ScanCursors): a call that reaches COUNT inside a slot
// holding more keys stops there, so a keyspace in one slot (hash tags) is
// still paged. Every key present for the whole iteration is returned at
// least once (exactly once unless a position was forgotten). Options come
// in pairs, as Redis's scanGenericCommand reads them; COUNT < 1 is a
// syntax error.
// https://redis.io/docs/latest/commands/scan/
func runScan(x *command.Ctx) error {
	cur, ok := num.ParseCursor(x.Args[1])
	if !ok {
		return command.ErrInvalidCursor
	}
	var pattern, typ []byte
	all := true // no MATCH, or MATCH *
	count := int64(10)
	for i := 2; i < len(x.Args); i += 2 {
		if i+1 >= len(x.Args) {
			return command.ErrSyntax
		}
		switch {
		case command.EqualFold(x.Args[i], "MATCH"):
			pattern = x.Args[i+1]
			all = matchesAll(pattern)
		case command.EqualFold(x.Args[i], "COUNT"):
			var err error
			if count, err = command.IntArg(x.Args[i+1]); err != nil {
				return err
			}
			if count < 1 {
				return command.ErrSyntax
			}
		case command.EqualFold(x.Args[i], "TYPE"):
			typ = x.Args[i+1]
		default:
			return command.ErrSyntax
		}
	}
	cursors := x.ScanCursors()
	slot, after := cursors.Position(cur)
	g := x.Guard()
	defer g.Release()
	var keys [][]byte
	visited, gone := int64(0), false
	nextSlot, resume, err := keyspace.Scan(x.View(), x.DB, slot, after, func(key []byte, m codec.Meta) bool {
		if gone = g.Gone(); gone {
			return false
		}
		visited++
		if (all || glob.Match(pattern, key)) && (typ == nil || command.EqualFold(typ, strings.ToUpper(m.Type.String()))) {
			keys = append(keys, key)
		}
		return visited < count
	})
	switch {
	case err != nil:
		return err
	case gone:
		return command.ErrClientGone
	}
	next := uint64(nextSlot)
	if resume != nil {
		next = cursors.Cursor(nextSlot, resume)
	}
	x.Reply.Array(2)
	x.Reply.BulkString(strconv.FormatUint(next, 10))
	x.Reply.Array(len(keys))
	for _, k := range keys {
		x.Reply.Bulk(k)
	}
	return nil
}
