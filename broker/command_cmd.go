package broker

import (
	"slices"
	"sort"

	"github.com/sediment-dev/sediment/command/reply"
)

// COMMAND [COUNT | INFO [name ...] | DOCS [name ...] | LIST]
// The replies follow Redis 7's shapes, built from the command table.
// https://redis.io/docs/latest/commands/command/
func runCommand(x *exec) error {
	w := x.reply()
	if len(x.args) == 1 {
		cmds := sortedCommands()
		w.Array(len(cmds))
		for _, c := range cmds {
			writeCommandInfo(w, c)
		}
		return nil
	}
	sub := x.args[1]
	switch {
	case equalFold(sub, "COUNT") && len(x.args) == 2:
		w.Int(int64(len(commandTable)))
	case equalFold(sub, "LIST") && len(x.args) == 2:
		cmds := sortedCommands()
		w.Array(len(cmds))
		for _, c := range cmds {
			w.BulkString(c.name)
		}
	case equalFold(sub, "INFO"):
		cmds := namedCommands(x.args[2:])
		w.Array(len(cmds))
		for _, c := range cmds {
			if c == nil {
				w.NullBulk()
			} else {
				writeCommandInfo(w, c)
			}
		}
	case equalFold(sub, "DOCS"):
		var cmds []*cmdSpec
		for _, c := range namedCommands(x.args[2:]) {
			if c != nil {
				cmds = append(cmds, c)
			}
		}
		w.Map(len(cmds))
		for _, c := range cmds {
			w.BulkString(c.name)
			w.Map(3)
			w.BulkString("summary")
			w.BulkString(c.summary)
			w.BulkString("since")
			w.BulkString(c.since)
			w.BulkString("group")
			w.BulkString(c.group)
		}
	case equalFold(sub, "GETKEYS") && len(x.args) >= 4:
		return commandGetKeys(x, w)
	case equalFold(sub, "COUNT"), equalFold(sub, "LIST"), equalFold(sub, "GETKEYS"):
		return errWrongArgsSub("command", sub)
	default:
		return errUnknownSubcommand(sub, "command")
	}
	return nil
}

// COMMAND GETKEYS command [arg ...]: the keys of a request, as Redis 7.0
// finds them (key positions, numkeys, STREAMS), with its errors.
func commandGetKeys(x *exec, w reply.Writer) error {
	args := x.args[2:]
	cmd := lookup(args[0])
	switch {
	case cmd == nil:
		return errGetKeysInvalidCommand
	case cmd.first <= 0 && !slices.Contains(movableKeyCommands, cmd.name):
		return errGetKeysNoKeys
	case !cmd.arityOK(len(args)):
		return errGetKeysArity
	}
	keys, ok := getKeys(cmd, args)
	if !ok {
		return errGetKeysInvalid
	}
	w.Array(len(keys))
	for _, k := range keys {
		w.Bulk(k)
	}
	return nil
}

// namedCommands looks up names; with none it returns every command.
func namedCommands(names [][]byte) []*cmdSpec {
	if len(names) == 0 {
		return sortedCommands()
	}
	out := make([]*cmdSpec, len(names))
	for i, n := range names {
		out[i] = lookup(n)
	}
	return out
}

func sortedCommands() []*cmdSpec {
	out := make([]*cmdSpec, 0, len(commandTable))
	for _, c := range commandTable {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// writeCommandInfo writes one COMMAND INFO entry: name, arity, flags,
// first key, last key, step, ACL categories, tips, key specs, subcommands.
func writeCommandInfo(w reply.Writer, c *cmdSpec) {
	w.Array(10)
	w.BulkString(c.name)
	w.Int(int64(c.arity))
	flags := c.flags.Names()
	w.Array(len(flags))
	for _, f := range flags {
		w.Simple(f)
	}
	w.Int(int64(c.first))
	w.Int(int64(c.last))
	w.Int(int64(c.step))
	cats := acls().byName[c.name].categoryNames()
	w.Array(len(cats))
	for _, cat := range cats {
		w.Simple(cat)
	}
	w.Array(0) // tips
	w.Array(0) // key specs
	w.Array(0) // subcommands
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
