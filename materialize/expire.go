package materialize

import (
	"encoding/binary"
	"math/bits"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sediment-dev/sediment/codec"
)

// ExpiredKey names a key removed by active expiry.
type ExpiredKey struct {
	DB  uint8
	Key []byte
}

// ttlSlots is an in-memory index over the TTL index (E keys): which hash
// slots hold TTL entries, and per slot a deadline no live entry is below.
// Active expiry visits only those slots and starts each walk at that
// deadline, so it never walks the entries it deleted before (tombstones
// until compaction), nor the slots between populated ones.
//
// It is a cache: after Open, and after a cycle whose write failed, it is
// unknown and the next cycle rebuilds it with one full walk. A cycle raises
// a slot's bound to the first entry it leaves in place and forgets a slot it
// emptied; every committed write that adds a TTL entry (observe) marks its
// slot and lowers the bound to that deadline, so the bound never passes a
// live entry.
type ttlSlots struct {
	mu    sync.Mutex
	known bool
	has   [codec.NumSlots / 64]uint64
	from  [codec.NumSlots]int64 // valid where has is set
}

func (t *ttlSlots) markLocked(slot uint16, deadline int64) {
	w, b := slot/64, uint64(1)<<(slot%64)
	if t.has[w]&b == 0 || deadline < t.from[slot] {
		t.from[slot] = deadline
	}
	t.has[w] |= b
}

// observe records a committed event that adds a TTL index entry.
func (t *ttlSlots) observe(e codec.Event) {
	if e.Op != codec.OpSetMeta || len(e.Args) == 0 {
		return
	}
	exp, err := codec.MetaExpireAt(e.Args[0])
	if err != nil || exp == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.markLocked(codec.Slot(e.Key), exp)
}

// forget marks the index unknown: the next cycle walks it whole.
func (t *ttlSlots) forget() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.known = false
}

// ttlSeekKey returns E | slot | deadline: where slot's entries from
// deadline on start.
func ttlSeekKey(slot uint16, deadline int64) []byte {
	return binary.BigEndian.AppendUint64(codec.SlotPrefix(codec.TagTTL, slot), uint64(deadline))
}

// rebuildLocked walks the whole TTL index once: one seek per populated
// slot, its first entry giving the slot's bound. t.mu must be held.
func (t *ttlSlots) rebuildLocked(it *pebble.Iterator) error {
	t.has = [codec.NumSlots / 64]uint64{}
	for valid := it.First(); valid; {
		slot, deadline, _, _, err := codec.DecodeTTLKey(it.Key())
		if err != nil {
			return err
		}
		t.markLocked(slot, deadline)
		if slot == codec.NumSlots-1 {
			break
		}
		valid = it.SeekGE(codec.SlotPrefix(codec.TagTTL, slot+1))
	}
	t.known = true
	return it.Error()
}

// ExpireCycle is one round of active expiry: it walks the TTL index of each
// populated slot up to the current time and deletes, through Write, up to
// limit keys whose deadline has passed. TTL index entries that no longer
// match their key's metadata (left by FLUSHDB or an overwrite) are removed
// too. It returns the keys it deleted. Its cost is one seek per slot holding
// TTL entries plus the entries it deletes, whatever was expired before
// (ttlSlots).
func (s *Store) ExpireCycle(limit int) ([]ExpiredKey, error) {
	var out []ExpiredKey
	_, err := s.Write(func(v *View) ([]codec.Event, error) {
		out = out[:0]
		t := &s.ttl
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.known && t.has == ([codec.NumSlots / 64]uint64{}) {
			// No slot holds a TTL: no iterator (whose making, after a
			// range deletion, re-fragments the memtable's range
			// tombstones).
			return nil, nil
		}
		it, err := v.newIter(&pebble.IterOptions{
			LowerBound: []byte{byte(codec.TagTTL)},
			UpperBound: []byte{byte(codec.TagTTL) + 1},
		}, nil)
		if err != nil {
			return nil, err
		}
		defer it.Close()
		defer v.iters.record(it)
		if !t.known {
			if err := t.rebuildLocked(it); err != nil {
				return nil, err
			}
		}
		var events []codec.Event
		for w := range t.has {
			for word := t.has[w]; word != 0 && len(events) < limit; word &= word - 1 {
				slot := uint16(w*64 + bits.TrailingZeros64(word))
				upper := codec.SlotPrefix(codec.TagTTL, slot+1)
				if slot == codec.NumSlots-1 {
					upper = []byte{byte(codec.TagTTL) + 1}
				}
				it.SetBounds(ttlSeekKey(slot, t.from[slot]), upper)
				valid := it.First()
				for ; valid && len(events) < limit; valid = it.Next() {
					_, deadline, db, key, err := codec.DecodeTTLKey(it.Key())
					if err != nil {
						return nil, err
					}
					t.from[slot] = deadline // entries below it are gone or go now
					if deadline >= v.NowMs() {
						break
					}
					key = append([]byte(nil), key...)
					m, ok, err := v.rawMetaOpt(db, key, false) // type and deadline only
					if err != nil {
						return nil, err
					}
					if ok && m.ExpireAtMs == deadline {
						events = append(events, codec.ExpiredKeyEvent(db, key, m.Type, deadline))
						out = append(out, ExpiredKey{db, key})
					} else {
						events = append(events, codec.TTLDelEvent(db, key, deadline))
					}
				}
				if err := it.Error(); err != nil {
					return nil, err
				}
				if !valid {
					t.has[w] &^= 1 << (slot % 64) // emptied by this cycle
				}
			}
		}
		return events, nil
	})
	if err != nil {
		s.ttl.forget() // the deletions may not have committed
	}
	return out, err
}
