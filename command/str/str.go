// Package str is the string command family (Redis 7.0, t_string.c): one
// Spec per command, each parsing its arguments and running over
// types/rstring.
package str

import (
	"errors"

	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/types/rstring"
)

const (
	rw    = command.FlagWrite | command.FlagDenyOOM
	rwf   = rw | command.FlagFast
	ro    = command.FlagReadonly
	rof   = ro | command.FlagFast
	group = "string"
)

// Specs returns the family's commands.
func Specs() []command.Spec {
	return []command.Spec{
		{Name: "get", Arity: 2, Flags: rof, First: 1, Last: 1, Step: 1, Group: group, Since: "1.0.0", Summary: "Returns the string value of a key.", Run: runGet},
		{Name: "lcs", Arity: -3, Flags: ro, First: 1, Last: 2, Step: 1, Group: group, Since: "7.0.0", Summary: "Finds the longest common substring.", Run: runLCS},
		{Name: "mget", Arity: -2, Flags: rof, First: 1, Last: -1, Step: 1, Group: group, Since: "1.0.0", Summary: "Atomically returns the string values of one or more keys.", Run: runMGet},
		{Name: "strlen", Arity: 2, Flags: rof, First: 1, Last: 1, Step: 1, Group: group, Since: "2.2.0", Summary: "Returns the length of a string value.", Run: runStrlen},
		{Name: "getrange", Arity: 4, Flags: ro, First: 1, Last: 1, Step: 1, Group: group, Since: "2.4.0", Summary: "Returns a substring of the string stored at a key.", Run: runGetRange},
		{Name: "substr", Arity: 4, Flags: ro, First: 1, Last: 1, Step: 1, Group: group, Since: "1.0.0", Summary: "Returns a substring from a string value.", Run: runGetRange},
		{Name: "set", Arity: -3, Flags: rw, First: 1, Last: 1, Step: 1, Group: group, Since: "1.0.0", Summary: "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.", Run: runSet},
		{Name: "setnx", Arity: 3, Flags: rwf, First: 1, Last: 1, Step: 1, Group: group, Since: "1.0.0", Summary: "Set the string value of a key only when the key doesn't exist.", Run: runSetNX},
		{Name: "setex", Arity: 4, Flags: rw, First: 1, Last: 1, Step: 1, Group: group, Since: "2.0.0", Summary: "Sets the string value and expiration time of a key. Creates the key if it doesn't exist.", Run: runSetEx},
		{Name: "psetex", Arity: 4, Flags: rw, First: 1, Last: 1, Step: 1, Group: group, Since: "2.6.0", Summary: "Sets both string value and expiration time in milliseconds of a key. The key is created if it doesn't exist.", Run: runSetEx},
		{Name: "getset", Arity: 3, Flags: rwf, First: 1, Last: 1, Step: 1, Group: group, Since: "1.0.0", Summary: "Returns the previous string value of a key after setting it to a new value.", Run: runGetSet},
		{Name: "getdel", Arity: 2, Flags: command.FlagWrite | command.FlagFast, First: 1, Last: 1, Step: 1, Group: group, Since: "6.2.0", Summary: "Returns the string value of a key after deleting the key.", Run: runGetDel},
		{Name: "getex", Arity: -2, Flags: command.FlagWrite | command.FlagFast, First: 1, Last: 1, Step: 1, Group: group, Since: "6.2.0", Summary: "Returns the string value of a key after setting its expiration time.", Run: runGetEx},
		{Name: "mset", Arity: -3, Flags: rw, First: 1, Last: -1, Step: 2, Group: group, Since: "1.0.1", Summary: "Atomically creates or modifies the string values of one or more keys.", Run: runMSet},
		{Name: "msetnx", Arity: -3, Flags: rw, First: 1, Last: -1, Step: 2, Group: group, Since: "1.0.1", Summary: "Atomically modifies the string values of one or more keys only when all keys don't exist.", Run: runMSet},
		{Name: "append", Arity: 3, Flags: rwf, First: 1, Last: 1, Step: 1, Group: group, Since: "2.0.0", Summary: "Appends a string to the value of a key. Creates the key if it doesn't exist.", Run: runAppend},
		{Name: "setrange", Arity: 4, Flags: rw, First: 1, Last: 1, Step: 1, Group: group, Since: "2.2.0", Summary: "Overwrites a part of a string value with another by an offset. Creates the key if it doesn't exist.", Run: runSetRange},
		{Name: "incr", Arity: 2, Flags: rwf, First: 1, Last: 1, Step: 1, Group: group, Since: "1.0.0", Summary: "Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.", Run: runIncr},
		{Name: "decr", Arity: 2, Flags: rwf, First: 1, Last: 1, Step: 1, Group: group, Since: "1.0.0", Summary: "Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.", Run: runIncr},
		{Name: "incrby", Arity: 3, Flags: rwf, First: 1, Last: 1, Step: 1, Group: group, Since: "1.0.0", Summary: "Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist.", Run: runIncr},
		{Name: "incrbyfloat", Arity: 3, Flags: rwf, First: 1, Last: 1, Step: 1, Group: group, Since: "2.6.0", Summary: "Increment the floating point value of a key by a number. Uses 0 as initial value if the key doesn't exist.", Run: runIncrByFloat},
		{Name: "decrby", Arity: 3, Flags: rwf, First: 1, Last: 1, Step: 1, Group: group, Since: "1.0.0", Summary: "Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist.", Run: runIncr},
	}
}

// wire maps rstring's errors to Redis's words for the command cmd.
func wire(cmd string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, rstring.ErrNotInteger):
		return command.ErrNotInteger
	case errors.Is(err, rstring.ErrOverflow):
		return command.ErrOverflow
	case errors.Is(err, rstring.ErrTooLong):
		return command.ErrStringTooLong
	case errors.Is(err, rstring.ErrExpireOverflow):
		return command.ErrInvalidExpire(cmd)
	}
	return err
}
