package stream

import (
	"errors"
	"math"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/command/reply"
	"github.com/sediment-dev/sediment/groups"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/streams"
)

var xinfoSubcommands = map[string]int{"stream": -3, "groups": 3, "consumers": 4, "help": 2, "deadletter": 4}

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
// Replies as Redis (maps of field name to value), with 7.2's consumer
// fields (CONSUMERS' inactive, FULL's active-time), and one difference:
// STREAM's radix-tree-keys and radix-tree-nodes are estimates (Sediment has
// no radix tree: streams.RadixTreeKeys). STREAM FULL [COUNT n] adds the
// entries and every group with its PEL and consumers, each list cut at
// COUNT (default 10; 0 or less: all), as Redis 7.0's
// xinfoReplyWithStreamInfo.
// https://redis.io/docs/latest/commands/xinfo-stream/
func runXInfo(x *command.Ctx) error {
	sub := x.Args[1]
	name, err := subcommand(x.Args, "xinfo", xinfoSubcommands)
	if err != nil {
		return err
	}
	if name == "help" {
		command.WriteHelp(x.Reply, xinfoHelp)
		return nil
	}
	v := x.View()
	key := x.Args[2]
	m, ok, err := streams.Meta(v, x.DB, key)
	if err != nil {
		return err
	}
	if !ok {
		return command.ErrNoSuchKey
	}
	w := x.Reply
	switch name {
	case "stream":
		if len(x.Args) > 3 {
			// FULL [COUNT n], parsed after the key as Redis does.
			a := x.Args
			if !command.EqualFold(a[3], "FULL") || (len(a) != 4 && (len(a) != 6 || !command.EqualFold(a[4], "COUNT"))) {
				return command.ErrSubcommandSyntax(sub, "xinfo")
			}
			count := int64(10)
			if len(a) == 6 {
				if count, err = command.IntArg(a[5]); err != nil {
					return err
				}
			}
			return xinfoStreamFull(x, v, key, m.Stream, max(count, 0))
		}
		ngroups, err := groups.Count(v, x.DB, key)
		if err != nil {
			return err
		}
		first, err := streams.Range(v, x.DB, key, codec.ID{}, codec.MaxID, 1, false)
		if err != nil {
			return err
		}
		last, err := streams.Range(v, x.DB, key, codec.ID{}, codec.MaxID, 1, true)
		if err != nil {
			return err
		}
		idmp, err := streams.LoadIDMPInfo(v, x.DB, key, x.StreamConfig())
		if err != nil {
			return err
		}
		w.Map(16)
		writeStreamHeader(w, m.Stream, idmp, x.StreamConfig().NodeSize())
		w.BulkString("groups")
		w.Int(ngroups)
		w.BulkString("first-entry")
		writeOneEntry(w, first)
		w.BulkString("last-entry")
		writeOneEntry(w, last)
	case "groups":
		gs, err := groups.Infos(v, x.DB, key, m.Stream)
		if err != nil {
			return err
		}
		w.Array(len(gs))
		for _, g := range gs {
			w.Map(6)
			w.BulkString("name")
			w.Bulk(g.Name)
			w.BulkString("consumers")
			w.Int(g.Consumers)
			w.BulkString("pending")
			w.Int(g.Pending)
			w.BulkString("last-delivered-id")
			WriteID(w, g.LastDeliveredID)
			writeReadLag(w, g)
		}
	case "deadletter":
		// A Sediment extension: the group's dead-letter settings
		// (XGROUP DEADLETTER) and how many entries it moved.
		_, g, err := groups.Lookup(v, x.DB, key, x.Args[3])
		if errors.Is(err, groups.ErrNoGroup) {
			return command.ErrNoSuchGroup(key, x.Args[3])
		}
		if err != nil {
			return err
		}
		w.Map(3)
		w.BulkString("dead-letter-key")
		if g.MaxDeliveries == 0 {
			w.NullBulk()
		} else {
			w.BulkString(g.DeadLetterKey)
		}
		w.BulkString("max-deliveries")
		w.Uint(g.MaxDeliveries)
		w.BulkString("dead-lettered")
		w.Uint(g.DeadLettered)
	case "consumers":
		cs, err := groups.ConsumerInfos(v, x.DB, key, x.Args[3])
		if errors.Is(err, groups.ErrNoGroup) {
			return command.ErrNoSuchGroup(key, x.Args[3])
		}
		if err != nil {
			return err
		}
		w.Array(len(cs))
		for _, c := range cs {
			w.Map(4)
			w.BulkString("name")
			w.Bulk(c.Name)
			w.BulkString("pending")
			w.Int(c.Pending)
			w.BulkString("idle")
			w.Int(c.IdleMs)
			w.BulkString("inactive")
			w.Int(c.InactiveMs)
		}
	}
	return nil
}

// writeStreamHeader writes the fields XINFO STREAM starts with, with and
// without FULL, in Redis 7.0's order. Clients parse every field Redis
// sends (go-redis, ioredis and node-redis fail without the radix-tree
// pair).
//
// Redis 8.6's idempotent-production fields follow, in its order.
func writeStreamHeader(w reply.Writer, s codec.StreamMeta, idmp streams.IDMPInfo, nodeSize uint64) {
	w.BulkString("length")
	w.Uint(s.Length)
	w.BulkString("radix-tree-keys")
	w.Uint(streams.RadixTreeKeys(s, nodeSize))
	w.BulkString("radix-tree-nodes")
	w.Uint(streams.RadixTreeNodes(s, nodeSize))
	w.BulkString("last-generated-id")
	WriteID(w, s.LastID)
	w.BulkString("max-deleted-entry-id")
	WriteID(w, s.MaxDeletedID)
	w.BulkString("entries-added")
	w.Uint(s.EntriesAdded)
	w.BulkString("recorded-first-entry-id")
	WriteID(w, s.FirstID)
	for _, f := range []struct {
		name string
		n    uint64
	}{
		{"idmp-duration", uint64(idmp.DurationS)}, {"idmp-maxsize", uint64(idmp.MaxSize)},
		{"pids-tracked", idmp.Pids}, {"iids-tracked", idmp.IIDs},
		{"iids-added", idmp.Added}, {"iids-duplicates", idmp.Duplicates},
	} {
		w.BulkString(f.name)
		w.Uint(f.n)
	}
}

// writeReadLag writes a group's entries-read and lag, each null when
// unknown (Redis 7.0).
func writeReadLag(w reply.Writer, g groups.GroupInfo) {
	w.BulkString("entries-read")
	if g.EntriesRead == groups.InvalidEntriesRead {
		w.NullBulk()
	} else {
		w.Int(g.EntriesRead)
	}
	w.BulkString("lag")
	if g.LagKnown {
		w.Int(g.Lag)
	} else {
		w.NullBulk()
	}
}

// xinfoStreamFull writes XINFO STREAM FULL's reply: count bounds the
// entries and each PEL listed (0: all).
func xinfoStreamFull(x *command.Ctx, v *materialize.View, key []byte, s codec.StreamMeta, count int64) error {
	entries, err := streams.Range(v, x.DB, key, codec.ID{}, codec.MaxID, int(min(count, math.MaxInt32)), false)
	if err != nil {
		return err
	}
	gs, err := groups.Infos(v, x.DB, key, s)
	if err != nil {
		return err
	}
	limit := count
	if limit == 0 {
		limit = math.MaxInt64
	}
	pending := func(group, consumer []byte) ([]groups.Pending, error) {
		return groups.PendingRange(v, x.DB, key, group, groups.RangeArgs{End: codec.MaxID, Count: limit, Consumer: consumer})
	}
	idmp, err := streams.LoadIDMPInfo(v, x.DB, key, x.StreamConfig())
	if err != nil {
		return err
	}
	w := x.Reply
	w.Map(15)
	writeStreamHeader(w, s, idmp, x.StreamConfig().NodeSize())
	w.BulkString("entries")
	WriteEntries(w, entries)
	w.BulkString("groups")
	w.Array(len(gs))
	for _, g := range gs {
		pel, err := pending(g.Name, nil)
		if err != nil {
			return err
		}
		cs, err := groups.ConsumerInfos(v, x.DB, key, g.Name)
		if err != nil {
			return err
		}
		w.Map(8)
		w.BulkString("name")
		w.Bulk(g.Name)
		w.BulkString("last-delivered-id")
		WriteID(w, g.LastDeliveredID)
		writeReadLag(w, g)
		w.BulkString("pel-count")
		w.Int(g.Pending)
		w.BulkString("nacked-count") // Redis 8.8, between pel-count and pending (t_stream.c xinfoReplyWithStreamInfo)
		w.Int(g.Nacked)
		w.BulkString("pending")
		w.Array(len(pel))
		for _, p := range pel {
			w.Array(4)
			WriteID(w, p.ID)
			w.Bulk(p.Consumer)
			w.Int(p.DeliveryTimeMs)
			w.Uint(p.DeliveryCount)
		}
		w.BulkString("consumers")
		w.Array(len(cs))
		for _, c := range cs {
			cpel, err := pending(g.Name, c.Name)
			if err != nil {
				return err
			}
			w.Map(5)
			w.BulkString("name")
			w.Bulk(c.Name)
			w.BulkString("seen-time")
			w.Int(c.SeenTimeMs)
			w.BulkString("active-time")
			w.Int(c.ActiveTimeMs)
			w.BulkString("pel-count")
			w.Int(c.Pending)
			w.BulkString("pending")
			w.Array(len(cpel))
			for _, p := range cpel {
				w.Array(3)
				WriteID(w, p.ID)
				w.Int(p.DeliveryTimeMs)
				w.Uint(p.DeliveryCount)
			}
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
	WriteEntry(w, entries[0])
}
