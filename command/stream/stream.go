// Package stream is the stream command family (Redis 7.0, t_stream.c): one
// Spec per command, each parsing its arguments and running over streams
// and groups, the blocking reads XREAD and XREADGROUP included (they wait
// through command.Ctx.Block and WriteBlock).
package stream

import (
	"errors"

	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/groups"
	"github.com/sediment-dev/sediment/streams"
)

const group = "stream"

// Specs returns the family's commands.
func Specs() []command.Spec {
	const (
		w   = command.FlagWrite
		wf  = w | command.FlagFast
		wdf = wf | command.FlagDenyOOM
		ro  = command.FlagReadonly
	)
	return append(readSpecs(), []command.Spec{
		{Name: "xadd", Arity: -5, Flags: wdf, First: 1, Last: 1, Step: 1, Group: group, Since: "5.0.0", Summary: "Appends a new message to a stream. Creates the key if it doesn't exist.", Run: runXAdd},
		{Name: "xtrim", Arity: -4, Flags: w, First: 1, Last: 1, Step: 1, Group: group, Since: "5.0.0", Summary: "Deletes messages from the beginning of a stream.", Run: runXTrim},
		{Name: "xrange", Arity: -4, Flags: ro, First: 1, Last: 1, Step: 1, Group: group, Since: "5.0.0", Summary: "Returns the messages from a stream within a range of IDs.", Run: runXRange},
		{Name: "xrevrange", Arity: -4, Flags: ro, First: 1, Last: 1, Step: 1, Group: group, Since: "5.0.0", Summary: "Returns the messages from a stream within a range of IDs in reverse order.", Run: runXRange},
		{Name: "xlen", Arity: 2, Flags: ro | command.FlagFast, First: 1, Last: 1, Step: 1, Group: group, Since: "5.0.0", Summary: "Return the number of messages in a stream.", Run: runXLen},
		{Name: "xdel", Arity: -3, Flags: wf, First: 1, Last: 1, Step: 1, Group: group, Since: "5.0.0", Summary: "Returns the number of messages after removing them from a stream.", Run: runXDel},
		{Name: "xdelex", Arity: -5, Flags: wf, First: 1, Last: 1, Step: 1, Group: group, Since: "8.2.0", Summary: "Deletes one or multiple entries from the stream.", Run: runXDelEx},
		{Name: "xackdel", Arity: -6, Flags: wf, First: 1, Last: 1, Step: 1, Group: group, Since: "8.2.0", Summary: "Acknowledges and conditionally deletes one or multiple entries for a stream consumer group.", Run: runXAckDel},
		{Name: "xcfgset", Arity: -2, Flags: wf, First: 1, Last: 1, Step: 1, Group: group, Since: "8.6.0", Summary: "Sets the idempotent-production settings of a stream.", Run: runXCfgSet},
		{Name: "xidmprecord", Arity: 5, Flags: wdf, First: 1, Last: 1, Step: 1, Group: group, Since: "8.6.2", Summary: "An internal command for setting IDMP metadata on an existing stream message.", Run: runXIDMPRecord},
		{Name: "xnack", Arity: -7, Flags: wf, First: 1, Last: 1, Step: 1, Group: group, Since: "8.8.0", Summary: "Releases pending messages back to the group's PEL without acknowledging them, making them available for re-delivery.", Run: runXNack},
		{Name: "xsetid", Arity: -3, Flags: wdf, First: 1, Last: 1, Step: 1, Group: group, Since: "5.0.0", Summary: "An internal command for replicating stream values.", Run: runXSetID},
		{Name: "xack", Arity: -4, Flags: wf, First: 1, Last: 1, Step: 1, Group: group, Since: "5.0.0", Summary: "Returns the number of messages that were successfully acknowledged by the consumer group member of a stream.", Run: runXAck},
		{Name: "xgroup", Arity: -2, Flags: w, First: 2, Last: 2, Step: 1, Group: group, Since: "5.0.0", Summary: "A container for consumer groups commands.", Run: runXGroup},
		{Name: "xclaim", Arity: -6, Flags: wf, First: 1, Last: 1, Step: 1, Group: group, Since: "5.0.0", Summary: "Changes, or acquires, ownership of a message in a consumer group, as if the message was delivered a consumer group member.", Run: runXClaim},
		{Name: "xautoclaim", Arity: -6, Flags: wf, First: 1, Last: 1, Step: 1, Group: group, Since: "6.2.0", Summary: "Changes, or acquires, ownership of messages in a consumer group, as if the messages were delivered to as consumer group member.", Run: runXAutoClaim},
		{Name: "xinfo", Arity: -2, Flags: ro, First: 2, Last: 2, Step: 1, Group: group, Since: "5.0.0", Summary: "A container for stream introspection commands.", Run: runXInfo},
		{Name: "xpending", Arity: -3, Flags: ro, First: 1, Last: 1, Step: 1, Group: group, Since: "5.0.0", Summary: "Returns the information and entries from a stream consumer group's pending entries list.", Run: runXPending},
	}...)
}

// wire maps streams' and groups' errors to Redis's words; others pass
// through (the broker maps materialize.ErrWrongType).
func wire(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, streams.ErrIDTooSmall):
		return command.ErrXAddIDSmall
	case errors.Is(err, streams.ErrIDZero):
		return command.ErrXAddIDZero
	case errors.Is(err, streams.ErrExhausted):
		return command.ErrStreamExhausted
	case errors.Is(err, streams.ErrSeqOverflow):
		return command.ErrElementsTooLarge
	case errors.Is(err, streams.ErrSetIDBelowTop):
		return command.ErrXSetIDBelowTop
	case errors.Is(err, streams.ErrSetIDEntriesAdded):
		return command.ErrXSetIDEntriesAddedSmall
	case errors.Is(err, groups.ErrGroupExists):
		return command.ErrBusyGroup
	case errors.Is(err, groups.ErrNoKey):
		return command.ErrXGroupNoKey
	}
	return err
}
