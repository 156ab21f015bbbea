package materialize

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sediment-dev/sediment/codec"
)

// PinnedState is the committed state right after one change-log record,
// held for as long as a reader needs it: the change feed's snapshot
// (docs/change-feed.md, "Snapshot, then changes") reads a key pattern's
// state at Seq through it, page after page, while writes go on.
//
// It is a Pebble snapshot, not an iterator: it keeps no memtable or
// sstable alive. Its cost is on disk: while it is open, compactions keep
// every version of a key that it can see, so the data overwritten or
// deleted after Seq stays on disk (and in the LSM's read path) until
// Close. Seq is exact because every commit writes the applied sequence
// (the A key, codec.AppliedKey) in the same atomic batch as its effects:
// the snapshot reads the A key of the state it holds.
//
// Its reads are safe for concurrent use; Close must come after the last
// of them, and before the Store's Close (which fails on a leaked
// snapshot).
type PinnedState struct {
	snap   *pebble.Snapshot
	s      *Store
	seq    uint64
	dbm    *dbMap
	timeMs int64
	epoch  uint32 // its registration in Store.pins
}

// PinState pins the latest committed state. The state's sequence is the
// last record whose effects it holds, exactly: a record committed after
// PinState returns is not in it, and every record up to Seq is.
func (s *Store) PinState() (*PinnedState, error) {
	epoch := s.pins.enter()
	before := s.committed.Load()
	snap := s.db.NewSnapshot()
	seq, err := readApplied(snap)
	if after := s.applying.Load(); err == nil && (seq < before || seq > after) {
		// A group stores applying, then applies its batch (with its A),
		// then stores committed: the state pinned between two loads of
		// them is between the two.
		err = fmt.Errorf("materialize: pinned state at %d, outside %d..%d: %w", seq, before, after, codec.ErrCorrupt)
	}
	var dbm *dbMap
	if err == nil {
		dbm, err = readDBMap(snap)
	}
	if err != nil {
		snap.Close()
		s.pins.exit(epoch)
		return nil, err
	}
	return &PinnedState{snap: snap, s: s, seq: seq, dbm: dbm, timeMs: s.opts.Now().UnixMilli(), epoch: epoch}, nil
}

// Seq returns the sequence of the last change-log record whose effects the
// state holds (0: none).
func (p *PinnedState) Seq() uint64 { return p.seq }

// TimeMs returns when the state was pinned, in Unix milliseconds.
func (p *PinnedState) TimeMs() int64 { return p.timeMs }

// LogicalDB returns the logical db (what SELECT names) of storage db s as
// of Seq: SWAPDBs after Seq do not change it.
func (p *PinnedState) LogicalDB(s uint8) uint8 { return p.dbm.logical[s] }

// StorageDB returns the storage db of logical db l as of Seq.
func (p *PinnedState) StorageDB(l uint8) uint8 { return p.dbm.storage[l] }

// View returns a View of the pinned state. Its reads see the state at Seq
// whenever they run, its metadata reads go to Pebble (not to the cache,
// which holds the latest state), and its decision time is TimeMs (so
// Meta reads a key whose TTL had passed then as absent; Iterate returns
// every stored key). It is valid until Close; any number may be used
// at once.
func (p *PinnedState) View() *View {
	return &View{r: p.snap, vlog: p.s.log, nowMs: p.timeMs, iters: &p.s.iters, dbm: p.dbm}
}

// Close releases the state. It may be called more than once (not
// concurrently).
func (p *PinnedState) Close() error {
	if p.snap == nil {
		return nil
	}
	err := p.snap.Close()
	p.snap = nil
	p.s.pins.exit(p.epoch)
	return err
}
