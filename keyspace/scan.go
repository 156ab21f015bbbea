package keyspace

import (
	"sync"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
)

// Scan calls fn for each live key of db (a storage db) in hash-slot
// order, with its metadata, starting at slot from (after the metadata key
// after, when set: a position inside that slot), until fn returns false.
// It returns where to resume: the next slot to visit (0: done) or, when fn
// stopped inside a slot that holds more live keys, that slot and the last
// metadata key visited. Metadata keys are rewritten by every write to
// their key: View.IterateKeys keeps a scan from walking their older
// versions. Expired keys are skipped (KEYS and SCAN do not return them).
func Scan(v *materialize.View, db uint8, from uint16, after []byte, fn func(key []byte, m codec.Meta) bool) (next uint16, resume []byte, err error) {
	err = v.SeekSlots(codec.TagMeta, db, from, func(slot uint16) (bool, error) {
		p := codec.SlotDBPrefix(codec.TagMeta, slot, db)
		lower := p
		if slot == from && after != nil {
			lower = append(after[:len(after):len(after)], 0)
		}
		stopped, more := false, false
		var last []byte
		err := v.IterateKeys(lower, codec.PrefixEnd(p), func(k, val []byte) (bool, error) {
			m, err := codec.DecodeMeta(val)
			if err != nil {
				return false, err
			}
			if v.Expired(m) {
				return true, nil
			}
			if stopped {
				more = true // a live key after the stop: resume inside the slot
				return false, nil
			}
			d, err := codec.DecodeKey(k)
			if err != nil {
				return false, err
			}
			last = append(last[:0], k...)
			stopped = !fn(append([]byte(nil), d.Key...), m)
			return true, nil
		})
		switch {
		case err != nil:
			return false, err
		case more:
			next, resume = slot, last
			return false, nil
		case stopped && slot+1 < codec.NumSlots:
			next = slot + 1
			return false, nil
		}
		return true, nil
	})
	return next, resume, err
}

// ScanCursors remembers the positions inside a hash slot where SCAN calls
// stopped, so that a cursor (a 64-bit number) can name one: cursor =
// 16384 + token*16384 + slot, where token names the last metadata key
// returned. Cursors below 16384 are slot starts and need no memory. It is
// safe for concurrent use; the zero value is ready. One serves a whole
// server (broker), whatever the db: a cursor used in another db resumes
// at the same slot and key position there.
//
// It is a cache, bounded by ScanMaxTokens positions and ScanMaxBytes of
// keys, oldest forgotten first, and empty after a restart. A forgotten
// token resumes at the start of its slot: the slot's keys come again, none
// is missed. A client that keeps a cursor across more than ScanMaxTokens
// other paged SCAN calls of the whole server sees such repeats; if every
// call of a scan were forgotten it would not progress, which takes a
// server answering tens of thousands of paged scans at once.
type ScanCursors struct {
	mu    sync.Mutex
	next  uint64
	m     map[uint64][]byte
	order []uint64 // FIFO of live tokens
	bytes int
}

// The bounds of ScanCursors.
const (
	ScanMaxTokens = 1 << 16
	ScanMaxBytes  = 64 << 20
)

// Cursor returns the cursor of the position after key (a metadata key, as
// Scan's resume) in slot.
func (t *ScanCursors) Cursor(slot uint16, key []byte) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[uint64][]byte{}
	}
	t.next++
	tok := t.next
	t.m[tok] = append([]byte(nil), key...)
	t.order = append(t.order, tok)
	t.bytes += len(key)
	for len(t.order) > ScanMaxTokens || t.bytes > ScanMaxBytes {
		old := t.order[0]
		t.order = t.order[1:]
		t.bytes -= len(t.m[old])
		delete(t.m, old)
	}
	return codec.NumSlots + tok*codec.NumSlots + uint64(slot)
}

// Position decodes a cursor: the slot to start at and, inside it, the key
// after which to resume (nil: the slot's start, also for a forgotten
// token).
func (t *ScanCursors) Position(cur uint64) (slot uint16, after []byte) {
	if cur < codec.NumSlots {
		return uint16(cur), nil
	}
	r := cur - codec.NumSlots
	slot = uint16(r % codec.NumSlots)
	t.mu.Lock()
	defer t.mu.Unlock()
	return slot, t.m[r/codec.NumSlots]
}
