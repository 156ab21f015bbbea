package stream

import (
	"errors"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/groups"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/streams"
)

// xgroupSubcommands are XGROUP's subcommands with their Redis arities
// (src/commands/xgroup-*.json), counting XGROUP and the subcommand.
var xgroupSubcommands = map[string]int{
	"create": -5, "setid": -5, "destroy": 4, "createconsumer": 5, "delconsumer": 5, "help": 2,
}

var xgroupHelp = []string{
	"XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"CREATE <key> <groupname> <id|$> [option]",
	"    Create a new consumer group. Options are:",
	"    * MKSTREAM",
	"      Create the empty stream if it does not exist.",
	"    * ENTRIESREAD entries_read",
	"      Set the group's entries_read counter (internal use).",
	"CREATECONSUMER <key> <groupname> <consumer>",
	"    Create a new consumer in the specified group.",
	"DELCONSUMER <key> <groupname> <consumer>",
	"    Remove the specified consumer.",
	"DESTROY <key> <groupname>",
	"    Remove the specified group.",
	"SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
	"    Set the current group ID and entries_read counter.",
	"HELP",
	"    Prints this help.",
}

// XGROUP CREATE key group id|$ [MKSTREAM] [ENTRIESREAD entries-read]
// XGROUP SETID key group id|$|-|+ [ENTRIESREAD entries-read]
// XGROUP DESTROY key group
// XGROUP CREATECONSUMER key group consumer
// XGROUP DELCONSUMER key group consumer
// XGROUP HELP
// Replies: OK (CREATE, SETID); 1 or 0 (DESTROY, CREATECONSUMER: whether it
// existed / was created); DELCONSUMER: the consumer's pending count.
// Checks run in Redis 7.0's order (t_stream.c xgroupCommand): subcommand
// arity, options, the key, the group, then the ID.
// https://redis.io/docs/latest/commands/xgroup/
func runXGroup(x *command.Ctx) error {
	if command.EqualFold(x.Args[1], "DEADLETTER") {
		return runXGroupDeadLetter(x)
	}
	sub, args := x.Args[1], x.Args
	name, err := subcommand(args, "xgroup", xgroupSubcommands)
	if err != nil {
		return err
	}
	if name == "help" {
		// XGROUP is a pipelined write: its reply goes after those of the
		// writes submitted before it, so HELP replies through a write that
		// decides nothing.
		return x.Write(func(*materialize.View) ([]codec.Event, error) { return nil, nil },
			func() { command.WriteHelp(x.Reply, xgroupHelp) })
	}
	key, group := args[2], args[3]
	mkstream := false
	entriesRead := int64(groups.InvalidEntriesRead)
	for i := 5; i < len(args); i++ {
		switch {
		case name == "create" && command.EqualFold(args[i], "MKSTREAM"):
			mkstream = true
		case (name == "create" || name == "setid") && command.EqualFold(args[i], "ENTRIESREAD") && i+1 < len(args):
			n, err := command.IntArg(args[i+1])
			if err != nil {
				return err
			}
			if n < 0 && n != groups.InvalidEntriesRead {
				return command.ErrEntriesRead
			}
			entriesRead = n
			i++
		default:
			return command.ErrSubcommandSyntax(sub, "xgroup")
		}
	}
	// Redis dispatches on these argument counts after its key checks.
	shapeOK := (name != "create" || len(args) <= 8) && (name != "setid" || len(args) == 5 || len(args) == 7)
	var (
		n     int64 // DESTROY, CREATECONSUMER: 0/1; DELCONSUMER: pending count
		isInt bool  // the reply is n, not OK
	)
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		if !mkstream {
			_, ok, err := streams.Meta(v, x.DB, key)
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, command.ErrXGroupNoKey
			}
			if name != "create" && name != "destroy" {
				if _, _, err := groups.Lookup(v, x.DB, key, group); errors.Is(err, groups.ErrNoGroup) {
					return nil, command.ErrNoSuchGroup(key, group)
				}
			}
		}
		if !shapeOK {
			return nil, command.ErrSubcommandSyntax(sub, "xgroup")
		}
		switch name {
		case "create", "setid":
			var id codec.ID
			dollar := isDollar(args[4])
			switch {
			case dollar:
			case name == "setid" && len(args[4]) == 1 && args[4][0] == '-':
				// SETID parses its ID as XRANGE's bounds (Redis's
				// streamParseIDOrReply): '-' is 0-0, '+' the largest ID;
				// CREATE's parse is strict.
			case name == "setid" && len(args[4]) == 1 && args[4][0] == '+':
				id = codec.MaxID
			default:
				var err error
				if id, err = ParseID(args[4], 0); err != nil {
					return nil, err
				}
			}
			if name == "setid" {
				evs, err := groups.SetID(v, x.DB, key, group, id, dollar, entriesRead)
				return evs, wire(err)
			}
			evs, err := groups.Create(v, x.DB, key, group, groups.CreateArgs{ID: id, Dollar: dollar, MkStream: mkstream, EntriesRead: entriesRead})
			return evs, wire(err)
		case "destroy":
			existed, evs, err := groups.Destroy(v, x.DB, key, group)
			n, isInt = boolInt(existed), true
			return evs, wire(err)
		case "createconsumer":
			created, evs, err := groups.CreateConsumer(v, x.DB, key, group, args[4])
			n, isInt = boolInt(created), true
			return evs, wire(err)
		default: // delconsumer
			pending, evs, err := groups.DelConsumer(v, x.DB, key, group, args[4])
			n, isInt = int64(pending), true
			return evs, wire(err)
		}
	}, func() {
		if isInt {
			x.Reply.Int(n)
		} else {
			x.Reply.OK()
		}
	})
}

// subcommand returns the lower-cased subcommand of a container command
// (args[1]) after checking it against arities, Redis's per-subcommand
// arities counting the command and the subcommand (negative: at least).
// Errors: unknown subcommand, wrong number of arguments for 'cmd|sub'.
func subcommand(args [][]byte, cmd string, arities map[string]int) (string, error) {
	name := command.Lower(args[1])
	arity, known := arities[name]
	if !known {
		return "", command.ErrUnknownSubcommand(args[1], cmd)
	}
	if n := len(args); (arity >= 0 && n != arity) || (arity < 0 && n < -arity) {
		return "", command.ErrWrongArgsSub(cmd, args[1])
	}
	return name, nil
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

const (
	errMaxDeliveries  command.WireError = "ERR MAXDELIVERIES must be a positive integer"
	errDeadLetterSelf command.WireError = "ERR the dead-letter stream must be another key"
)

// XGROUP DEADLETTER key group dlq-key MAXDELIVERIES n | XGROUP DEADLETTER key group OFF
// (a Sediment extension; docs/rfcs/20261126_dead_letters_delayed_delivery.md)
// Reply: OK. From then on a claim (XREADGROUP CLAIM, XCLAIM, XAUTOCLAIM)
// that meets an entry of the group delivered n times moves it, with its
// delivery history, to the stream dlq-key instead of delivering it. OFF
// turns that off. Errors: the key's (XGROUP's texts), then the group's,
// then a dlq-key equal to key.
func runXGroupDeadLetter(x *command.Ctx) error {
	a := x.Args
	var (
		dlq []byte
		max uint64
	)
	switch {
	case len(a) == 5 && command.EqualFold(a[4], "OFF"):
	case len(a) == 7 && command.EqualFold(a[5], "MAXDELIVERIES"):
		n, ok := command.ParseInt(a[6])
		if !ok || n < 1 {
			return errMaxDeliveries
		}
		dlq, max = a[4], uint64(n)
	case len(a) == 5 || len(a) == 7:
		return command.ErrSubcommandSyntax(a[1], "xgroup")
	default:
		return command.ErrWrongArgsSub("xgroup", a[1])
	}
	key, group := a[2], a[3]
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		if _, ok, err := streams.Meta(v, x.DB, key); err != nil || !ok {
			if err == nil {
				err = command.ErrXGroupNoKey
			}
			return nil, err
		}
		evs, err := groups.SetDeadLetter(v, x.DB, key, group, dlq, max)
		switch {
		case errors.Is(err, groups.ErrNoGroup):
			return nil, command.ErrNoSuchGroup(key, group)
		case errors.Is(err, groups.ErrDeadLetterSelf):
			return nil, errDeadLetterSelf
		}
		return evs, err
	}, func() { x.Reply.OK() })
}
