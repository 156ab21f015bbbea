package broker

import (
	"sync"

	"github.com/sediment-dev/sediment/codec"
)

// scanTokens remembers the positions inside a hash slot where SCAN calls
// stopped, so that a cursor (a 64-bit number) can name one: cursor =
// 16384 + token*16384 + slot, where token names the last metadata key
// returned. Cursors below 16384 are slot starts and need no memory.
//
// It is a cache, bounded by scanMaxTokens positions and scanMaxBytes of
// keys, oldest forgotten first, and empty after a restart. A forgotten
// token resumes at the start of its slot: the slot's keys come again, none
// is missed. A client that keeps a cursor across more than scanMaxTokens
// other paged SCAN calls of the whole server sees such repeats; if every
// call of a scan were forgotten it would not progress, which takes a
// server answering tens of thousands of paged scans at once.
type scanTokens struct {
	mu    sync.Mutex
	next  uint64
	m     map[uint64][]byte
	order []uint64 // FIFO of live tokens
	bytes int
}

const (
	scanMaxTokens = 1 << 16
	scanMaxBytes  = 64 << 20
)

// cursor returns the cursor of the position after key (a metadata key) in
// slot.
func (t *scanTokens) cursor(slot uint16, key []byte) uint64 {
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
	for len(t.order) > scanMaxTokens || t.bytes > scanMaxBytes {
		old := t.order[0]
		t.order = t.order[1:]
		t.bytes -= len(t.m[old])
		delete(t.m, old)
	}
	return codec.NumSlots + tok*codec.NumSlots + uint64(slot)
}

// position decodes a cursor: the slot to start at and, inside it, the key
// after which to resume (nil: the slot's start). ok is false for a cursor
// past the last slot that names no position (the scan is over).
func (t *scanTokens) position(cur uint64) (slot uint16, after []byte, ok bool) {
	if cur < codec.NumSlots {
		return uint16(cur), nil, true
	}
	r := cur - codec.NumSlots
	slot = uint16(r % codec.NumSlots)
	t.mu.Lock()
	defer t.mu.Unlock()
	return slot, t.m[r/codec.NumSlots], true // forgotten: the slot's start
}
