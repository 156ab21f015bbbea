// Package hash is the hash command family (Redis 7.0, t_hash.c): one Spec
// per command, each parsing its arguments and running over types/rhash.
package hash

import (
	"errors"

	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/types/rhash"
)

const (
	rw    = command.FlagWrite | command.FlagDenyOOM | command.FlagFast
	rof   = command.FlagReadonly | command.FlagFast
	ro    = command.FlagReadonly
	group = "hash"
)

// Specs returns the family's commands.
func Specs() []command.Spec {
	return []command.Spec{
		{Name: "hset", Arity: -4, Flags: rw, First: 1, Last: 1, Step: 1, Group: group, Since: "2.0.0", Summary: "Creates or modifies the value of a field in a hash.", Run: runHSet},
		{Name: "hmset", Arity: -4, Flags: rw, First: 1, Last: 1, Step: 1, Group: group, Since: "2.0.0", Summary: "Sets the values of multiple fields.", Run: runHSet},
		{Name: "hsetnx", Arity: 4, Flags: rw, First: 1, Last: 1, Step: 1, Group: group, Since: "2.0.0", Summary: "Sets the value of a field in a hash only when the field doesn't exist.", Run: runHSetNX},
		{Name: "hget", Arity: 3, Flags: rof, First: 1, Last: 1, Step: 1, Group: group, Since: "2.0.0", Summary: "Returns the value of a field in a hash.", Run: runHGet},
		{Name: "hmget", Arity: -3, Flags: rof, First: 1, Last: 1, Step: 1, Group: group, Since: "2.0.0", Summary: "Returns the values of all fields in a hash.", Run: runHMGet},
		{Name: "hdel", Arity: -3, Flags: command.FlagWrite | command.FlagFast, First: 1, Last: 1, Step: 1, Group: group, Since: "2.0.0", Summary: "Deletes one or more fields and their values from a hash. Deletes the hash if no fields remain.", Run: runHDel},
		{Name: "hlen", Arity: 2, Flags: rof, First: 1, Last: 1, Step: 1, Group: group, Since: "2.0.0", Summary: "Returns the number of fields in a hash.", Run: runHLen},
		{Name: "hstrlen", Arity: 3, Flags: rof, First: 1, Last: 1, Step: 1, Group: group, Since: "3.2.0", Summary: "Returns the length of the value of a field.", Run: runHStrlen},
		{Name: "hexists", Arity: 3, Flags: rof, First: 1, Last: 1, Step: 1, Group: group, Since: "2.0.0", Summary: "Determines whether a field exists in a hash.", Run: runHExists},
		{Name: "hkeys", Arity: 2, Flags: ro, First: 1, Last: 1, Step: 1, Group: group, Since: "2.0.0", Summary: "Returns all fields in a hash.", Run: runHAll},
		{Name: "hvals", Arity: 2, Flags: ro, First: 1, Last: 1, Step: 1, Group: group, Since: "2.0.0", Summary: "Returns all values in a hash.", Run: runHAll},
		{Name: "hgetall", Arity: 2, Flags: ro, First: 1, Last: 1, Step: 1, Group: group, Since: "2.0.0", Summary: "Returns all fields and values in a hash.", Run: runHAll},
		{Name: "hincrby", Arity: 4, Flags: rw, First: 1, Last: 1, Step: 1, Group: group, Since: "2.0.0", Summary: "Increments the integer value of a field in a hash by a number. Uses 0 as initial value if the field doesn't exist.", Run: runHIncrBy},
		{Name: "hincrbyfloat", Arity: 4, Flags: rw, First: 1, Last: 1, Step: 1, Group: group, Since: "2.6.0", Summary: "Increments the floating point value of a field by a number. Uses 0 as initial value if the field doesn't exist.", Run: runHIncrByFloat},
		{Name: "hrandfield", Arity: -2, Flags: ro, First: 1, Last: 1, Step: 1, Group: group, Since: "6.2.0", Summary: "Returns one or more random fields from a hash.", Run: runHRandField},
		{Name: "hscan", Arity: -3, Flags: ro, First: 1, Last: 1, Step: 1, Group: group, Since: "2.8.0", Summary: "Iterates over fields and values of a hash.", Run: runHScan},
	}
}

// wire maps rhash's errors to Redis's words.
func wire(err error) error {
	switch {
	case errors.Is(err, rhash.ErrNotInteger):
		return command.ErrHashNotInteger
	case errors.Is(err, rhash.ErrOverflow):
		return command.ErrOverflow
	}
	return err
}
