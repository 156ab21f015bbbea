package keyspace

import (
	"math"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
)

// Del deletes keys (DEL, UNLINK) and returns how many existed; a key named
// twice counts once. Each deletion is one range deletion per sub-key tag,
// whatever the key's size.
func Del(v *materialize.View, db uint8, keys [][]byte) (int64, []codec.Event, error) {
	var events []codec.Event
	seen := map[string]bool{}
	var n int64
	for _, key := range keys {
		if seen[string(key)] {
			continue
		}
		seen[string(key)] = true
		m, ok, evs, err := v.MetaForWrite(db, key)
		if err != nil {
			return 0, nil, err
		}
		events = append(events, evs...)
		if ok {
			events = append(events, codec.DelKeyEvent(db, key, m.Type, m.ExpireAtMs))
			n++
		}
	}
	return n, events, nil
}

// Exists returns how many of keys exist (EXISTS); a key named twice counts
// twice.
func Exists(v *materialize.View, db uint8, keys [][]byte) (int64, error) {
	var n int64
	for _, key := range keys {
		_, ok, err := v.Meta(db, key)
		if err != nil {
			return 0, err
		}
		if ok {
			n++
		}
	}
	return n, nil
}

// Cond is a condition of EXPIRE and its family (Redis 7.0); none: 0.
type Cond int

// The conditions.
const (
	NX Cond = 1 << iota
	XX
	GT
	LT
)

// Expire sets key's deadline (EXPIRE family) to whenMs, relative to the
// decision time unless absolute, under cond, and reports whether it did
// (true also when the deadline has passed and the key was deleted, as
// Redis does). A key without TTL counts as an infinite TTL for GT and LT.
// Errors: ErrTimeOverflow.
func Expire(v *materialize.View, db uint8, key []byte, whenMs int64, absolute bool, cond Cond) (bool, []codec.Event, error) {
	deadline := whenMs
	if !absolute {
		if whenMs > math.MaxInt64-v.NowMs() {
			return false, nil, ErrTimeOverflow
		}
		deadline += v.NowMs()
	}
	m, ok, events, err := v.MetaForWrite(db, key)
	if err != nil || !ok {
		return false, events, err
	}
	cur := m.ExpireAtMs // 0: none, infinite for GT/LT
	switch {
	case cond&NX != 0 && cur != 0,
		cond&XX != 0 && cur == 0,
		cond&GT != 0 && (cur == 0 || deadline <= cur),
		cond&LT != 0 && cur != 0 && deadline >= cur:
		return false, nil, nil
	}
	if deadline <= v.NowMs() { // already expired: delete now, as Redis
		return true, []codec.Event{codec.DelKeyEvent(db, key, m.Type, cur)}, nil
	}
	m.ExpireAtMs = deadline
	return true, []codec.Event{codec.SetMetaEvent(db, key, m, cur)}, nil
}

// Persist removes key's TTL (PERSIST) and reports whether it had one.
func Persist(v *materialize.View, db uint8, key []byte) (bool, []codec.Event, error) {
	m, ok, events, err := v.MetaForWrite(db, key)
	if err != nil || !ok || m.ExpireAtMs == 0 {
		return false, events, err
	}
	cur := m.ExpireAtMs
	m.ExpireAtMs = 0
	return true, []codec.Event{codec.SetMetaEvent(db, key, m, cur)}, nil
}

// FlushDB returns the event that empties db: one range deletion per tag in
// each hash slot that holds keys of it (FLUSHDB).
func FlushDB(v *materialize.View, db uint8) ([]codec.Event, error) {
	var slots []uint16
	err := v.SeekSlots(codec.TagMeta, db, 0, func(slot uint16) (bool, error) {
		slots = append(slots, slot)
		return true, nil
	})
	return []codec.Event{codec.FlushDBEvent(db, slots)}, err
}

// SwapDB returns the event that swaps the logical dbs a and b (SWAPDB):
// none when they are the same db. The data stays where it is; the db map
// changes (materialize.View.StorageDB), so the cost does not grow with the
// databases' size.
func SwapDB(a, b uint8) []codec.Event {
	if a == b {
		return nil
	}
	return []codec.Event{codec.SwapDBEvent(a, b)}
}
