// Package rstring is the semantics of Redis strings: decisions over a
// materialize.View that return results and change events. A string is its
// key's metadata (codec.Meta of TypeString, the value inline), so every
// write is one OpSetMeta event (after an OpDelKey when it replaces a key of
// another type, or when it meets an expired key).
//
// Errors: materialize.ErrWrongType for a key of another type, and this
// package's sentinels, which the command layer maps to Redis's words.
// Semantics follow Redis 7.0's t_string.c.
package rstring

import (
	"bytes"
	"errors"
	"math"
	"strconv"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/internal/num"
	"github.com/sediment-dev/sediment/materialize"
)

// MaxLen is the longest string a write may produce: Redis's
// proto-max-bulk-len default, 512 MiB (checkStringLength).
const MaxLen = 512 << 20

// Errors.
var (
	// ErrNotInteger: the stored value is not a decimal int64 (INCR family).
	ErrNotInteger = errors.New("rstring: value is not an integer")
	// ErrOverflow: an increment would leave the int64 range.
	ErrOverflow = errors.New("rstring: increment or decrement would overflow")
	// ErrTooLong: the result would exceed MaxLen.
	ErrTooLong = errors.New("rstring: string exceeds the maximum length")
	// ErrExpireOverflow: a relative expiry added to the decision time
	// leaves the int64 range of Unix milliseconds.
	ErrExpireOverflow = errors.New("rstring: expire time overflows")
)

// lookup returns key's live string value for a write, the deletion of an
// expired stored key to emit first, and the key's metadata.
func lookup(v *materialize.View, db uint8, key []byte) (m codec.Meta, ok bool, events []codec.Event, err error) {
	m, ok, events, err = v.MetaForWrite(db, key)
	if err == nil && ok && m.Type != codec.TypeString {
		err = materialize.ErrWrongType
	}
	return m, ok, events, err
}

// Get returns key's value; ok is false when the key does not exist.
func Get(v *materialize.View, db uint8, key []byte) (val []byte, ok bool, err error) {
	m, ok, err := v.Meta(db, key)
	if err != nil || !ok {
		return nil, false, err
	}
	if m.Type != codec.TypeString {
		return nil, false, materialize.ErrWrongType
	}
	return m.Value, true, nil
}

// GetWith hands key's value over and reports whether the key exists
// (neither callback is called otherwise): to fn when it is in memory or
// inline in the store, valid only during the call unless shared (shared
// values never change and may be kept); to fill when it is kept in the
// change log (View.MetaWith), with its length and a read that copies it
// into a buffer of that length, so that the caller reads it where it
// wants it (GET: its reply buffer). fill's error is GetWith's.
func GetWith(v *materialize.View, db uint8, key []byte, fn func(val []byte, shared bool), fill func(n int, read func(dst []byte) error) error) (bool, error) {
	return v.MetaWith(db, key, func(m codec.Meta, shared bool) error {
		if m.Type != codec.TypeString {
			return materialize.ErrWrongType
		}
		if !m.Ref.IsZero() {
			ref := m.Ref // captured alone: a captured m would go to the heap on every call
			return fill(int(ref.Len), func(dst []byte) error { return v.ReadValue(ref, dst) })
		}
		fn(m.Value, shared)
		return nil
	})
}

// put returns the events that store val under key with deadline expireAt
// (0: none) over the key's current metadata m (ok: it exists).
func put(db uint8, key []byte, m codec.Meta, ok bool, val []byte, expireAt int64, events []codec.Event) []codec.Event {
	prevExpire := m.ExpireAtMs
	if ok && m.Type != codec.TypeString {
		events = append(events, codec.DelKeyEvent(db, key, m.Type, m.ExpireAtMs))
		prevExpire = 0
	}
	if !ok {
		prevExpire = 0
	}
	return append(events, codec.SetMetaEvent(db, key, codec.Meta{Type: codec.TypeString, Value: val, ExpireAtMs: expireAt}, prevExpire))
}

// Expiry is a TTL option of SET or GETEX. The zero value sets none.
type Expiry struct {
	AtMs  int64 // EXAT/PXAT: absolute Unix ms
	RelMs int64 // EX/PX: relative to the decision time
}

// deadline resolves e at the decision time nowMs (0: no deadline).
func (e Expiry) deadline(nowMs int64) (int64, error) {
	if e.RelMs > 0 {
		if e.RelMs > math.MaxInt64-nowMs {
			return 0, ErrExpireOverflow
		}
		return nowMs + e.RelMs, nil
	}
	return e.AtMs, nil
}

// SetArgs are SET's options.
type SetArgs struct {
	NX, XX, Get, KeepTTL bool
	Expire               Expiry
}

// SetResult is what SET did: Old/HadOld is the previous value (with GET),
// Done tells whether the value was written (NX/XX may prevent it).
type SetResult struct {
	Old    []byte
	HadOld bool
	Done   bool
}

// Set stores val under key (SET), replacing a key of any type; with Get, a
// previous key of another type is materialize.ErrWrongType and nothing is
// written. https://redis.io/docs/latest/commands/set/
func Set(v *materialize.View, db uint8, key, val []byte, a SetArgs) (SetResult, []codec.Event, error) {
	var r SetResult
	lookup := v.MetaHeaderForWrite // SET needs the old value only with GET
	if a.Get {
		lookup = v.MetaForWrite
	}
	m, ok, events, err := lookup(db, key)
	if err != nil {
		return r, nil, err
	}
	if a.Get && ok {
		if m.Type != codec.TypeString {
			return r, nil, materialize.ErrWrongType
		}
		r.Old, r.HadOld = m.Value, true
	}
	if (a.NX && ok) || (a.XX && !ok) {
		return r, events, nil
	}
	expireAt, err := a.Expire.deadline(v.NowMs())
	if err != nil {
		return r, nil, err
	}
	if a.KeepTTL && ok {
		expireAt = m.ExpireAtMs
	}
	r.Done = true
	return r, put(db, key, m, ok, val, expireAt, events), nil
}

// MSet stores each pair (keys[i], vals[i]) as SET would, in order; with nx
// (MSETNX) it writes nothing and returns false when any key exists.
func MSet(v *materialize.View, db uint8, keys, vals [][]byte, nx bool) (bool, []codec.Event, error) {
	if nx {
		for _, k := range keys {
			_, ok, err := v.Meta(db, k)
			if err != nil {
				return false, nil, err
			}
			if ok {
				return false, nil, nil
			}
		}
	}
	// A key named twice is written twice: the second pair sees the first
	// (the events of one write apply in order), so the last value wins.
	// Up to msetSeenScan keys are checked against the earlier ones
	// directly, more through a set.
	var seen map[string]struct{}
	if len(keys) > msetSeenScan {
		seen = make(map[string]struct{}, len(keys))
	}
	events := make([]codec.Event, 0, len(keys))
	for i, k := range keys {
		if namedBefore(keys[:i], k, seen) {
			// The View does not see this write's own events: the earlier
			// pair left a string without TTL.
			events = put(db, k, codec.Meta{Type: codec.TypeString}, true, vals[i], 0, events)
			continue
		}
		// The old value is never read: a header spares a large string's
		// read from Pebble, as for SET.
		m, ok, del, err := v.MetaHeaderForWrite(db, k)
		if err != nil {
			return false, nil, err
		}
		events = put(db, k, m, ok, vals[i], 0, append(events, del...))
	}
	return true, events, nil
}

// msetSeenScan is the most keys MSet checks for repeats by comparing each
// with the ones before it.
const msetSeenScan = 16

// namedBefore reports whether k is one of before: with seen nil by
// comparing, else by seen, to which it adds k.
func namedBefore(before [][]byte, k []byte, seen map[string]struct{}) bool {
	if seen == nil {
		for _, b := range before {
			if bytes.Equal(b, k) {
				return true
			}
		}
		return false
	}
	if _, ok := seen[string(k)]; ok {
		return true
	}
	seen[string(k)] = struct{}{}
	return false
}

// GetDel returns key's value and deletes the key (GETDEL).
func GetDel(v *materialize.View, db uint8, key []byte) ([]byte, bool, []codec.Event, error) {
	m, ok, events, err := lookup(v, db, key)
	if err != nil || !ok {
		return nil, false, events, err
	}
	return m.Value, true, append(events, codec.DelKeyEvent(db, key, m.Type, m.ExpireAtMs)), nil
}

// GetExArgs are GETEX's options: at most one of Expire and Persist.
type GetExArgs struct {
	Expire  Expiry
	Persist bool
}

// GetEx returns key's value and changes its TTL (GETEX): Expire sets it (a
// deadline already past deletes the key, as Redis does), Persist removes
// it, neither leaves it. https://redis.io/docs/latest/commands/getex/
func GetEx(v *materialize.View, db uint8, key []byte, a GetExArgs) ([]byte, bool, []codec.Event, error) {
	m, ok, events, err := lookup(v, db, key)
	if err != nil || !ok {
		return nil, false, events, err
	}
	switch {
	case a.Expire != (Expiry{}):
		at, err := a.Expire.deadline(v.NowMs())
		if err != nil {
			return nil, false, nil, err
		}
		if at <= v.NowMs() {
			return m.Value, true, append(events, codec.DelKeyEvent(db, key, m.Type, m.ExpireAtMs)), nil
		}
		nm := m
		nm.ExpireAtMs = at
		events = append(events, codec.SetMetaEvent(db, key, nm, m.ExpireAtMs))
	case a.Persist && m.ExpireAtMs != 0:
		nm := m
		nm.ExpireAtMs = 0
		events = append(events, codec.SetMetaEvent(db, key, nm, m.ExpireAtMs))
	}
	return m.Value, true, events, nil
}

// Append appends val to key's value, creating the key, and returns the new
// length (APPEND). The TTL stays.
func Append(v *materialize.View, db uint8, key, val []byte) (int64, []codec.Event, error) {
	m, ok, events, err := lookup(v, db, key)
	if err != nil {
		return 0, nil, err
	}
	if int64(len(m.Value))+int64(len(val)) > MaxLen {
		return 0, nil, ErrTooLong
	}
	nv := make([]byte, 0, len(m.Value)+len(val))
	nv = append(append(nv, m.Value...), val...)
	return int64(len(nv)), put(db, key, m, ok, nv, m.ExpireAtMs, events), nil
}

// SetRange overwrites key's value from offset (>= 0) with val, padding with
// zero bytes, and returns the new length (SETRANGE). An empty val changes
// nothing (and creates no key). The TTL stays.
func SetRange(v *materialize.View, db uint8, key []byte, offset int64, val []byte) (int64, []codec.Event, error) {
	m, ok, events, err := lookup(v, db, key)
	if err != nil {
		return 0, nil, err
	}
	if len(val) == 0 {
		return int64(len(m.Value)), events, nil
	}
	if offset > MaxLen-int64(len(val)) {
		return 0, nil, ErrTooLong
	}
	end := int(offset) + len(val)
	nv := make([]byte, max(end, len(m.Value)))
	copy(nv, m.Value)
	copy(nv[offset:], val)
	return int64(len(nv)), put(db, key, m, ok, nv, m.ExpireAtMs, events), nil
}

// Range returns the bytes of s from start to end inclusive, with Redis's
// GETRANGE rules for negative and out-of-range indexes.
func Range(s []byte, start, end int64) []byte {
	n := int64(len(s))
	if start < 0 && end < 0 && start > end {
		return nil
	}
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	start, end = max(start, 0), max(end, 0)
	if end >= n {
		end = n - 1
	}
	if start > end || n == 0 {
		return nil
	}
	return s[start : end+1]
}

// IncrBy adds delta to key's integer value (0 when missing) and returns the
// result (INCR, DECR, INCRBY, DECRBY). The TTL stays. Errors: ErrNotInteger,
// ErrOverflow, materialize.ErrWrongType.
func IncrBy(v *materialize.View, db uint8, key []byte, delta int64) (int64, []codec.Event, error) {
	m, ok, events, err := lookup(v, db, key)
	if err != nil {
		return 0, nil, err
	}
	var cur int64
	if ok {
		if cur, ok = num.ParseInt(m.Value); !ok {
			return 0, nil, ErrNotInteger
		}
		ok = true
	}
	if (delta < 0 && cur < math.MinInt64-delta) || (delta > 0 && cur > math.MaxInt64-delta) {
		return 0, nil, ErrOverflow
	}
	n := cur + delta
	return n, put(db, key, m, ok, strconv.AppendInt(nil, n, 10), m.ExpireAtMs, events), nil
}

// Update replaces key's value with f's result for the current value (nil
// and false when the key is missing), keeping the TTL: INCRBYFLOAT's shape.
func Update(v *materialize.View, db uint8, key []byte, f func(cur []byte, ok bool) ([]byte, error)) ([]byte, []codec.Event, error) {
	m, ok, events, err := lookup(v, db, key)
	if err != nil {
		return nil, nil, err
	}
	nv, err := f(m.Value, ok)
	if err != nil {
		return nil, nil, err
	}
	return nv, put(db, key, m, ok, nv, m.ExpireAtMs, events), nil
}
