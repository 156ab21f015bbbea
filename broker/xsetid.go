package broker

import (
	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/streams"
)

func init() {
	register(&cmdSpec{name: "xsetid", arity: -3, flags: flagWrite | flagDenyOOM | flagFast, first: 1, last: 1, step: 1,
		group: "stream", since: "5.0.0", summary: "An internal command for replicating stream values.", run: runXSetID})
}

// XSETID key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id]
// Reply: OK. Arguments are checked before the key, as in Redis 7.0.
// https://redis.io/docs/latest/commands/xsetid/
func runXSetID(x *exec) error {
	id, err := streamID(x.args[2], 0)
	if err != nil {
		return err
	}
	a := streams.SetIDArgs{EntriesAdded: -1}
	for i := 3; i < len(x.args); i += 2 {
		opt, more := x.args[i], i+1 < len(x.args)
		switch {
		case equalFold(opt, "ENTRIESADDED") && more:
			n, err := intArg(x.args[i+1])
			if err != nil {
				return err
			}
			if n < 0 {
				return errXSetIDEntriesAddedNeg
			}
			a.EntriesAdded = n
		case equalFold(opt, "MAXDELETEDID") && more:
			d, err := streamID(x.args[i+1], 0)
			if err != nil {
				return err
			}
			if id.Less(d) {
				return errXSetIDBelowGivenMaxDeleted
			}
			a.MaxDeletedID = d
		default:
			return errSyntax
		}
	}
	return x.writeAsync(func(v *materialize.View) ([]codec.Event, error) {
		found, evs, err := streams.SetID(v, x.db(), x.args[1], id, a)
		if err == nil && !found {
			err = errNoSuchKey
		}
		return evs, err
	}, func() { x.w().WriteString("OK") })
}
