package broker

import "github.com/sediment-dev/sediment/codec"

// eventDB returns the logical db of events[i] (its DB is a storage db),
// given end, the storage → logical map as it stands after all of events:
// SWAPDBs among the events after i are undone, newest first, so an event
// before a swap of the same write (MULTI ... SWAPDB ... EXEC) names the db
// it was decided in.
func eventDB(events []codec.Event, i int, end func(storage uint8) uint8) uint8 {
	db := end(events[i].DB)
	for j := len(events) - 1; j > i; j-- {
		e := events[j]
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
