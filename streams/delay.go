package streams

import (
	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
)

// Delayed delivery (a Sediment extension, docs/streams.md "Delayed
// delivery"): an entry added with XADD DELAY or DELIVERAT has its ID and
// place in the stream at once, and its due time in its value (Entry.DueMs).
// XRANGE, XREVRANGE, XLEN and XINFO see it at once. XREAD reads up to the
// first entry not yet due and stops there (head-of-line: ReadDue); a
// group's '>' read parks it in the group's PEL (package groups).

// ReadDue returns up to count entries (count <= 0: all) with ID > after
// that are due at nowMs, in order, stopping before the first entry that is
// not (XREAD: an entry is never returned before its due time, nor any
// entry after it). holdMs is that entry's due time, when the read stopped
// at one before count was reached (0 otherwise): a blocked reader's timed
// wake. An absent key is an empty read.
func ReadDue(v *materialize.View, db uint8, key []byte, after codec.ID, count int, nowMs int64) (entries []Entry, holdMs int64, err error) {
	err = Each(v, db, key, after, func(e Entry) (bool, error) {
		if !e.Due(nowMs) {
			holdMs = e.DueMs
			return false, nil
		}
		entries = append(entries, e)
		return count <= 0 || len(entries) < count, nil
	})
	return entries, holdMs, err
}

// Each calls fn with the entries of key with ID > after, in order, until
// fn returns false or an error (returned). The entries are fn's to keep,
// read-only: their fields may be shared with the writer's tail cache.
// An absent key has none; materialize.ErrWrongType when key is not a
// stream.
func Each(v *materialize.View, db uint8, key []byte, after codec.ID, fn func(Entry) (bool, error)) error {
	start, ok := after.Next()
	if !ok {
		return nil
	}
	m, ok, err := Meta(v, db, key)
	if err != nil || !ok {
		return err
	}
	if _, _, _, ok := liveBounds(db, key, m.Stream, start, codec.MaxID); !ok {
		return nil
	}
	// The newest entries, usually what a `>` read wants, come from the
	// writer's cache when it holds them all (every live entry is at or
	// above the stream's first ID).
	from := start
	if from.Less(m.Stream.FirstID) {
		from = m.Stream.FirstID
	}
	if ok, err := v.StreamTail(db, key, from, func(te materialize.TailEntry) (bool, error) {
		return fn(Entry{ID: te.ID, Fields: te.Fields, Trace: te.Tail.Trace, DueMs: te.Tail.DueMs})
	}); ok || err != nil {
		return err
	}
	return EachInRange(v, db, key, m, start, codec.MaxID, 0, false, func(e Entry) (bool, error) {
		return fn(e.clone())
	})
}
