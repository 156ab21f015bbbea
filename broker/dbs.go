package broker

import "github.com/sediment-dev/sediment/codec"

// eventDBs gives the logical db of each of a write's events (whose DB is a
// storage db), given end, the storage → logical map as it stands after all
// of them: SWAPDBs among the events after an event are undone, newest
// first, so an event before a swap of the same write (MULTI ... SWAPDB ...
// EXEC) names the db it was decided in. Without a swap, at costs one map
// lookup.
type eventDBs struct {
	events   []codec.Event
	end      func(storage uint8) uint8
	lastSwap int // index of the last OpSwapDB, -1 if none
}

func newEventDBs(events []codec.Event, end func(storage uint8) uint8) eventDBs {
	d := eventDBs{events: events, end: end, lastSwap: -1}
	for j := len(events) - 1; j >= 0; j-- {
		if events[j].Op == codec.OpSwapDB {
			d.lastSwap = j
			break
		}
	}
	return d
}

// at returns the logical db of events[i].
func (d eventDBs) at(i int) uint8 {
	db := d.end(d.events[i].DB)
	for j := d.lastSwap; j > i; j-- {
		e := d.events[j]
		if e.Op != codec.OpSwapDB {
			continue
		}
		switch other := e.Args[0][0]; db {
		case e.DB:
			db = other
		case other:
			db = e.DB
		}
	}
	return db
}
