package broker

import (
	"errors"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/command/reply"
	"github.com/sediment-dev/sediment/command/stream"
	"github.com/sediment-dev/sediment/groups"
	"github.com/sediment-dev/sediment/streams"
)

func init() {
	register(&cmdSpec{name: "xinfo", arity: -2, flags: flagReadonly, first: 2, last: 2, step: 1,
		group: "stream", since: "5.0.0", summary: "A container for stream introspection commands.", run: runXInfo})
}

var xinfoSubcommands = map[string]int{"stream": -3, "groups": 3, "consumers": 4, "help": 2}

var xinfoHelp = []string{
	"XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"CONSUMERS <key> <groupname>",
	"    Show consumers of <groupname>.",
	"GROUPS <key>",
	"    Show the stream consumer groups.",
	"STREAM <key> [FULL [COUNT <count>]",
	"    Show information about the stream.",
	"HELP",
	"    Prints this help.",
}

// XINFO STREAM key | GROUPS key | CONSUMERS key group | HELP
// Replies as Redis 7.0 (field name, value, ...), with two differences:
// STREAM omits radix-tree-keys and radix-tree-nodes (Sediment has no radix
// tree), and STREAM FULL is not supported.
// https://redis.io/docs/latest/commands/xinfo-stream/
func runXInfo(x *exec) error {
	sub := x.args[1]
	name, err := subcommand(x.args, "xinfo", xinfoSubcommands)
	if err != nil {
		return err
	}
	w := x.w()
	rw := reply.New(w)
	if name == "help" {
		w.WriteArray(len(xinfoHelp))
		for _, l := range xinfoHelp {
			w.WriteString(l)
		}
		return nil
	}
	if name == "stream" && len(x.args) > 3 {
		if equalFold(x.args[3], "FULL") {
			return errXInfoFull
		}
		return errSubcommandSyntax(sub, "xinfo")
	}
	v := x.view()
	key := x.args[2]
	m, ok, err := streams.Meta(v, x.db(), key)
	if err != nil {
		return err
	}
	if !ok {
		return command.ErrNoSuchKey
	}
	switch name {
	case "stream":
		ngroups, err := groups.Count(v, x.db(), key)
		if err != nil {
			return err
		}
		first, err := streams.Range(v, x.db(), key, codec.ID{}, codec.MaxID, 1, false)
		if err != nil {
			return err
		}
		last, err := streams.Range(v, x.db(), key, codec.ID{}, codec.MaxID, 1, true)
		if err != nil {
			return err
		}
		s := m.Stream
		w.WriteArray(16)
		w.WriteBulkString("length")
		w.WriteUint64(s.Length)
		w.WriteBulkString("last-generated-id")
		stream.WriteID(rw, s.LastID)
		w.WriteBulkString("max-deleted-entry-id")
		stream.WriteID(rw, s.MaxDeletedID)
		w.WriteBulkString("entries-added")
		w.WriteUint64(s.EntriesAdded)
		w.WriteBulkString("recorded-first-entry-id")
		stream.WriteID(rw, s.FirstID)
		w.WriteBulkString("groups")
		w.WriteInt64(ngroups)
		w.WriteBulkString("first-entry")
		writeOneEntry(rw, first)
		w.WriteBulkString("last-entry")
		writeOneEntry(rw, last)
	case "groups":
		gs, err := groups.Infos(v, x.db(), key, m.Stream)
		if err != nil {
			return err
		}
		w.WriteArray(len(gs))
		for _, g := range gs {
			w.WriteArray(12)
			w.WriteBulkString("name")
			w.WriteBulk(g.Name)
			w.WriteBulkString("consumers")
			w.WriteInt64(g.Consumers)
			w.WriteBulkString("pending")
			w.WriteInt64(g.Pending)
			w.WriteBulkString("last-delivered-id")
			stream.WriteID(rw, g.LastDeliveredID)
			w.WriteBulkString("entries-read")
			if g.EntriesRead == groups.InvalidEntriesRead {
				w.WriteNull()
			} else {
				w.WriteInt64(g.EntriesRead)
			}
			w.WriteBulkString("lag")
			if g.LagKnown {
				w.WriteInt64(g.Lag)
			} else {
				w.WriteNull()
			}
		}
	case "consumers":
		cs, err := groups.ConsumerInfos(v, x.db(), key, x.args[3])
		if errors.Is(err, groups.ErrNoGroup) {
			return errNoSuchGroup(key, x.args[3])
		}
		if err != nil {
			return err
		}
		w.WriteArray(len(cs))
		for _, c := range cs {
			w.WriteArray(6)
			w.WriteBulkString("name")
			w.WriteBulk(c.Name)
			w.WriteBulkString("pending")
			w.WriteInt64(c.Pending)
			w.WriteBulkString("idle")
			w.WriteInt64(c.IdleMs)
		}
	}
	return nil
}

// writeOneEntry writes the first of entries as [id, [field, value, ...]],
// or a null when there is none.
func writeOneEntry(w reply.Writer, entries []streams.Entry) {
	if len(entries) == 0 {
		w.NullBulk()
		return
	}
	stream.WriteEntry(w, entries[0])
}
