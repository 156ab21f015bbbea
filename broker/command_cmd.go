package broker

import (
	"sort"

	"github.com/tidwall/redcon"
)

// COMMAND [COUNT | INFO [name ...] | DOCS [name ...] | LIST]
// The replies follow Redis 7's shapes, built from the command table.
// https://redis.io/docs/latest/commands/command/
func runCommand(x *exec) error {
	w := x.w()
	if len(x.args) == 1 {
		cmds := sortedCommands()
		w.WriteArray(len(cmds))
		for _, c := range cmds {
			writeCommandInfo(w, c)
		}
		return nil
	}
	sub := x.args[1]
	switch {
	case equalFold(sub, "COUNT") && len(x.args) == 2:
		w.WriteInt(len(commandTable))
	case equalFold(sub, "LIST") && len(x.args) == 2:
		cmds := sortedCommands()
		w.WriteArray(len(cmds))
		for _, c := range cmds {
			w.WriteBulkString(c.name)
		}
	case equalFold(sub, "INFO"):
		cmds := namedCommands(x.args[2:])
		w.WriteArray(len(cmds))
		for _, c := range cmds {
			if c == nil {
				w.WriteNull()
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
		w.WriteArray(2 * len(cmds))
		for _, c := range cmds {
			w.WriteBulkString(c.name)
			w.WriteArray(6)
			w.WriteBulkString("summary")
			w.WriteBulkString(c.summary)
			w.WriteBulkString("since")
			w.WriteBulkString(c.since)
			w.WriteBulkString("group")
			w.WriteBulkString(c.group)
		}
	case equalFold(sub, "COUNT"), equalFold(sub, "LIST"):
		return errWrongArgsSub("command", sub)
	default:
		return errUnknownSubcommand(sub, "command")
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
func writeCommandInfo(w *redcon.Writer, c *cmdSpec) {
	w.WriteArray(10)
	w.WriteBulkString(c.name)
	w.WriteInt(c.arity)
	flags := c.flags.Names()
	w.WriteArray(len(flags))
	for _, f := range flags {
		w.WriteString(f)
	}
	w.WriteInt(c.first)
	w.WriteInt(c.last)
	w.WriteInt(c.step)
	cats := c.aclCategories()
	w.WriteArray(len(cats))
	for _, cat := range cats {
		w.WriteString(cat)
	}
	w.WriteArray(0) // tips
	w.WriteArray(0) // key specs
	w.WriteArray(0) // subcommands
}

// aclCategories derives Redis's ACL categories from the flags and group.
func (c *cmdSpec) aclCategories() []string {
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
