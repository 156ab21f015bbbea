package materialize

import (
	"math"
	"sync"
	"sync/atomic"
)

// LogHold keeps change-log records from pruning: while it exists, the
// retention (Options.ChangeLogRetention, ChangeLogRetentionAge) drops no
// record at or after its floor. A consumer that must see every record
// once (the change feed's durable capture, the newest periodic snapshot's
// successors) holds the log from the first record it still needs and
// advances the hold as it goes.
//
// A LogHold is safe for concurrent use. It does not bring back records
// already dropped: a hold taken below FirstSeq keeps the records from
// FirstSeq on (Floor still reports the floor it was given).
type LogHold struct {
	h     *logHolds
	floor uint64 // guarded by h.mu
	done  bool   // guarded by h.mu
}

// logHolds is the Store's set of holds, with their lowest floor kept in an
// atomic for the writer's retention check (math.MaxUint64: none).
type logHolds struct {
	mu    sync.Mutex
	holds map[*LogHold]struct{}
	low   atomic.Uint64
}

func (h *logHolds) init() { h.low.Store(math.MaxUint64) }

// recompute sets low to the lowest floor; h.mu held.
func (h *logHolds) recompute() {
	low := uint64(math.MaxUint64)
	for x := range h.holds {
		low = min(low, x.floor)
	}
	h.low.Store(low)
}

// HoldLog returns a hold that keeps records from seq on (seq 0 is taken
// as 1: the whole retained log).
func (s *Store) HoldLog(seq uint64) *LogHold {
	h := &s.holds
	x := &LogHold{h: h, floor: max(seq, 1)}
	h.mu.Lock()
	if h.holds == nil {
		h.holds = map[*LogHold]struct{}{}
	}
	h.holds[x] = struct{}{}
	h.recompute()
	h.mu.Unlock()
	// A pruning that read the holds' floor before this one counted has
	// finished once the log's readers lock is free (dropBefore reads the
	// floor under it): from here on no pruning drops what x keeps.
	s.log.readers.RLock()
	s.log.readers.RUnlock()
	return x
}

// Advance moves the hold's floor to seq: records before seq may go once
// no other hold or the retention keeps them. A floor never moves back; an
// Advance to an earlier seq, or after Release, does nothing.
func (x *LogHold) Advance(seq uint64) {
	x.h.mu.Lock()
	defer x.h.mu.Unlock()
	if x.done || seq <= x.floor {
		return
	}
	x.floor = seq
	x.h.recompute()
}

// Floor returns the first record the hold keeps (0 after Release).
func (x *LogHold) Floor() uint64 {
	x.h.mu.Lock()
	defer x.h.mu.Unlock()
	if x.done {
		return 0
	}
	return x.floor
}

// Release ends the hold. It may be called more than once.
func (x *LogHold) Release() {
	x.h.mu.Lock()
	defer x.h.mu.Unlock()
	if x.done {
		return
	}
	x.done = true
	delete(x.h.holds, x)
	x.h.recompute()
}
