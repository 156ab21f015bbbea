package stream

import (
	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/streams"
)

// XSETID key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id]
// Reply: OK. Arguments are checked before the key, as in Redis 7.0.
// https://redis.io/docs/latest/commands/xsetid/
func runXSetID(x *command.Ctx) error {
	id, err := ParseID(x.Args[2], 0)
	if err != nil {
		return err
	}
	a := streams.SetIDArgs{EntriesAdded: -1, NodeSize: x.StreamConfig().NodeSize()}
	for i := 3; i < len(x.Args); i += 2 {
		opt, more := x.Args[i], i+1 < len(x.Args)
		switch {
		case command.EqualFold(opt, "ENTRIESADDED") && more:
			n, err := command.IntArg(x.Args[i+1])
			if err != nil {
				return err
			}
			if n < 0 {
				return command.ErrXSetIDEntriesAddedNeg
			}
			a.EntriesAdded = n
		case command.EqualFold(opt, "MAXDELETEDID") && more:
			d, err := ParseID(x.Args[i+1], 0)
			if err != nil {
				return err
			}
			if id.Less(d) {
				return command.ErrXSetIDBelowMaxDeleted
			}
			a.MaxDeletedID = d
		default:
			return command.ErrSyntax
		}
	}
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		found, evs, err := streams.SetID(v, x.DB, x.Args[1], id, a)
		if err == nil && !found {
			err = command.ErrNoSuchKey
		}
		return evs, wire(err)
	}, func() { x.Reply.OK() })
}
