package broker

import (
	"slices"
	"sort"

	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/command/reply"
	"github.com/sediment-dev/sediment/internal/glob"
)

// COMMAND [COUNT | INFO [name ...] | DOCS [name ...] | LIST [FILTERBY
// ...] | GETKEYS command [arg ...] | GETKEYSANDFLAGS command [arg ...] |
// HELP]
// The replies follow Redis 7.0's shapes: INFO and DOCS from the command
// table and Redis 7.0.15's documentation (command_docs.go).
// https://redis.io/docs/latest/commands/command/
func runCommand(x *exec) error {
	w := x.reply()
	if len(x.args) == 1 {
		commandInfo(w, nil)
		return nil
	}
	sub := x.args[1]
	switch {
	case equalFold(sub, "COUNT") && len(x.args) == 2:
		w.Int(int64(len(commandTable)))
	case equalFold(sub, "LIST"):
		return commandList(x, w)
	case equalFold(sub, "INFO"):
		commandInfo(w, x.args[2:])
	case equalFold(sub, "DOCS"):
		commandDocsReply(w, x.args[2:])
	case equalFold(sub, "GETKEYS") && len(x.args) >= 4:
		return commandGetKeys(x, w, false)
	case equalFold(sub, "GETKEYSANDFLAGS") && len(x.args) >= 4:
		return commandGetKeys(x, w, true)
	case equalFold(sub, "HELP") && len(x.args) == 2:
		command.WriteHelp(w, commandHelp)
	case equalFold(sub, "COUNT"), equalFold(sub, "GETKEYS"), equalFold(sub, "GETKEYSANDFLAGS"), equalFold(sub, "HELP"):
		return errWrongArgsSub("command", sub)
	default:
		return errUnknownSubcommand(sub, "command")
	}
	return nil
}

// commandHelp is COMMAND HELP's text, Redis 7.0's.
var commandHelp = []string{
	"COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"(no subcommand)",
	"    Return details about all Redis commands.",
	"COUNT",
	"    Return the total number of commands in this Redis server.",
	"LIST",
	"    Return a list of all commands in this Redis server.",
	"INFO [<command-name> ...]",
	"    Return details about multiple Redis commands.",
	"    If no command names are given, documentation details for all",
	"    commands are returned.",
	"DOCS [<command-name> ...]",
	"    Return documentation details about multiple Redis commands.",
	"    If no command names are given, documentation details for all",
	"    commands are returned.",
	"GETKEYS <full-command>",
	"    Return the keys from a full Redis command.",
	"GETKEYSANDFLAGS <full-command>",
	"    Return the keys and the access flags from a full Redis command.",
	"HELP",
	"    Prints this help.",
}

// commandList is COMMAND LIST [FILTERBY MODULE name | ACLCAT category |
// PATTERN pattern]: as in Redis 7.0, the names of every command and of
// every subcommand ("config|get"), each kept when it passes the filter.
// MODULE matches nothing (Sediment has no modules); ACLCAT takes a
// category name, any case, without '@' (an unknown one matches nothing);
// PATTERN is a glob matched against the full name, ignoring case.
// Differs from Redis: PATTERN ignores case by lower-casing the pattern
// before matching, where Redis folds each byte as it compares; the two
// differ only for a class range whose bounds change order when
// lower-cased ("[Z-a]").
func commandList(x *exec, w reply.Writer) error {
	keep := func(*aclCmd) bool { return true }
	switch opts := x.args[2:]; {
	case len(opts) == 0:
	case len(opts) == 3 && equalFold(opts[0], "FILTERBY"):
		arg := opts[2]
		switch {
		case equalFold(opts[1], "MODULE"):
			keep = func(*aclCmd) bool { return false }
		case equalFold(opts[1], "ACLCAT"):
			i := slices.Index(aclCategories, command.Lower(arg))
			keep = func(a *aclCmd) bool { return i >= 0 && a.cats&(1<<i) != 0 }
		case equalFold(opts[1], "PATTERN"):
			pattern := []byte(command.Lower(arg))
			keep = func(a *aclCmd) bool { return glob.Match(pattern, []byte(a.name)) }
		default:
			return errSyntax
		}
	default:
		return errSyntax
	}
	var names []string
	for _, a := range acls().cmds {
		if keep(a) {
			names = append(names, a.name)
		}
	}
	w.Array(len(names))
	for _, n := range names {
		w.BulkString(n)
	}
	return nil
}

// commandGetKeys is COMMAND GETKEYS and (withFlags) GETKEYSANDFLAGS
// command [arg ...]: the keys of a request, as Redis 7.0 finds them (key
// positions, numkeys, STREAMS), with its errors, checked in its order
// (the command or subcommand, whether it has keys, its arity). With flags
// each key comes as [key, flags] with its key spec's flags (keyFlags), a
// set in RESP3.
func commandGetKeys(x *exec, w reply.Writer, withFlags bool) error {
	args := x.args[2:]
	cmd := lookup(args[0])
	if cmd == nil {
		return errGetKeysInvalidCommand
	}
	a := acls().aclFor(cmd, args)
	hasKeys := cmd.first > 0 || slices.Contains(movableKeyCommands, cmd.name)
	arityOK := cmd.arityOK(len(args))
	if cmd.container {
		// Redis looks the subcommand up: it has its own key specs and arity.
		if a.parent == nil {
			return errGetKeysInvalidCommand
		}
		hasKeys, arityOK = a.hasKeys(), a.arityOK(len(args))
	}
	switch {
	case !hasKeys:
		return errGetKeysNoKeys
	case !arityOK:
		return errGetKeysArity
	}
	keys, ok := getKeys(cmd, args)
	if !ok {
		return errGetKeysInvalid
	}
	w.Array(len(keys))
	for i, k := range keys {
		if !withFlags {
			w.Bulk(k)
			continue
		}
		w.Array(2)
		w.Bulk(k)
		flags := a.keyFlags(args, i).names()
		w.Set(len(flags))
		for _, f := range flags {
			w.Simple(f)
		}
	}
	return nil
}

func sortedCommands() []*cmdSpec {
	out := make([]*cmdSpec, 0, len(commandTable))
	for _, c := range commandTable {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// derivedCategories derives ACL categories from the flags and group, for
// the commands Redis 7.0's table (acl_commands.tsv) does not have.
func (c *cmdSpec) derivedCategories() []string {
	var out []string
	if c.flags&flagWrite != 0 {
		out = append(out, "@write")
	}
	if c.flags&flagReadonly != 0 {
		out = append(out, "@read")
	}
	switch c.group {
	case "generic":
		out = append(out, "@keyspace")
	case "server":
		out = append(out, "@admin", "@dangerous")
	default:
		out = append(out, "@"+c.group)
	}
	if c.flags&flagFast != 0 {
		out = append(out, "@fast")
	} else {
		out = append(out, "@slow")
	}
	if c.flags&flagBlocking != 0 {
		out = append(out, "@blocking")
	}
	return out
}
