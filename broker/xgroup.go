package broker

import (
	"errors"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/groups"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/streams"
)

func init() {
	register(
		&command{name: "xgroup", arity: -2, flags: flagWrite, first: 2, last: 2, step: 1,
			group: "stream", since: "5.0.0", summary: "A container for consumer groups commands.", run: runXGroup},
		&command{name: "xack", arity: -4, flags: flagWrite | flagFast, first: 1, last: 1, step: 1,
			group: "stream", since: "5.0.0", summary: "Returns the number of messages that were successfully acknowledged by the consumer group member of a stream.", run: runXAck},
	)
}

// XGROUP CREATE key group id|$ [MKSTREAM] [ENTRIESREAD entries-read]
// XGROUP DESTROY key group
// https://redis.io/docs/latest/commands/xgroup/
// Differs from Redis: CREATECONSUMER, DELCONSUMER and SETID are not yet
// supported (docs/commands.md).
func runXGroup(x *exec) error {
	sub := x.args[1]
	switch {
	case equalFold(sub, "CREATE") && len(x.args) >= 5:
		return runXGroupCreate(x)
	case equalFold(sub, "DESTROY") && len(x.args) == 4:
		return runXGroupDestroy(x)
	case equalFold(sub, "HELP") && len(x.args) == 2:
		x.c.drain() // XGROUP is a pipelined write: reply after earlier writes
		lines := []string{
			"XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"CREATE <key> <groupname> <id|$> [option]",
			"    Create a new consumer group. Options are:",
			"    * MKSTREAM",
			"      Create the empty stream if it does not exist.",
			"    * ENTRIESREAD entries_read",
			"      Set the group's entries_read counter (internal use).",
			"DESTROY <key> <groupname>",
			"    Remove the specified group.",
			"HELP",
			"    Print this help.",
		}
		x.w().WriteArray(len(lines))
		for _, l := range lines {
			x.w().WriteString(l)
		}
		return nil
	case equalFold(sub, "CREATE"), equalFold(sub, "DESTROY"), equalFold(sub, "HELP"):
		return errWrongArgsSub("xgroup", sub)
	}
	return errUnknownSubcommand(sub, "xgroup")
}

// runXGroupCreate checks in Redis's order: options, then the key, then the ID.
func runXGroupCreate(x *exec) error {
	key, group := x.args[2], x.args[3]
	a := groups.CreateArgs{EntriesRead: groups.InvalidEntriesRead}
	if len(x.args) > 8 {
		return errSubcommandSyntax(x.args[1], "xgroup")
	}
	for i := 5; i < len(x.args); i++ {
		switch {
		case equalFold(x.args[i], "MKSTREAM"):
			a.MkStream = true
		case equalFold(x.args[i], "ENTRIESREAD") && i+1 < len(x.args):
			n, err := intArg(x.args[i+1])
			if err != nil {
				return err
			}
			if n < 0 && n != groups.InvalidEntriesRead {
				return errEntriesRead
			}
			a.EntriesRead = n
			i++
		default:
			return errSubcommandSyntax(x.args[1], "xgroup")
		}
	}
	return x.writeAsync(func(v *materialize.View) ([]codec.Event, error) {
		if _, ok, err := streams.Meta(v, x.db(), key); err != nil {
			return nil, err
		} else if !ok && !a.MkStream {
			return nil, groups.ErrNoKey
		}
		if isDollar(x.args[4]) {
			a.Dollar = true
		} else {
			id, err := streamID(x.args[4], 0)
			if err != nil {
				return nil, err
			}
			a.ID = id
		}
		return groups.Create(v, x.db(), key, group, a)
	}, func() {
		x.w().WriteString("OK")
	})
}

func runXGroupDestroy(x *exec) error {
	var existed bool
	return x.writeAsync(func(v *materialize.View) ([]codec.Event, error) {
		var (
			evs []codec.Event
			err error
		)
		existed, evs, err = groups.Destroy(v, x.db(), x.args[2], x.args[3])
		return evs, err
	}, func() {
		if existed {
			x.w().WriteInt(1)
		} else {
			x.w().WriteInt(0)
		}
	})
}

// XACK key group id [id ...]
// Reply: integer, the number of IDs that were pending and are now acknowledged.
// https://redis.io/docs/latest/commands/xack/
func runXAck(x *exec) error {
	var n int
	return x.writeAsync(func(v *materialize.View) ([]codec.Event, error) {
		// As in Redis: no key or group acknowledges nothing, before IDs are checked.
		if _, _, err := groups.Lookup(v, x.db(), x.args[1], x.args[2]); err != nil {
			if errors.Is(err, groups.ErrNoGroup) {
				err = nil
			}
			return nil, err
		}
		ids, err := streamIDs(x.args[3:])
		if err != nil {
			return nil, err
		}
		var evs []codec.Event
		n, evs, err = groups.Ack(v, x.db(), x.args[1], x.args[2], ids)
		return evs, err
	}, func() {
		x.w().WriteInt(n)
	})
}
