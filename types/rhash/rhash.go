// Package rhash is the semantics of Redis hashes: decisions over a
// materialize.View that return results and change events. A hash is its
// key's metadata (codec.Meta of TypeHash, holding the field count: HLEN in
// O(1)) plus one H key per field (codec.ElementKey(TagHash, ...) → value).
// A hash never exists empty: removing its last field deletes the key.
//
// Errors: materialize.ErrWrongType for a key of another type, and this
// package's sentinels, which the command layer maps to Redis's words.
// Semantics follow Redis 7.0's t_hash.c.
package rhash

import (
	"errors"
	"math"
	"strconv"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/internal/num"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/types/elements"
)

// Errors.
var (
	// ErrNotInteger: the field's value is not a decimal int64 (HINCRBY).
	ErrNotInteger = errors.New("rhash: hash value is not an integer")
	// ErrOverflow: an increment would leave the int64 range.
	ErrOverflow = errors.New("rhash: increment or decrement would overflow")
)

// meta returns key's live hash metadata; ok is false when the key is
// missing (or expired).
func meta(v *materialize.View, db uint8, key []byte) (codec.Meta, bool, error) {
	m, ok, err := v.Meta(db, key)
	if err == nil && ok && m.Type != codec.TypeHash {
		err = materialize.ErrWrongType
	}
	return m, ok && err == nil, err
}

// metaForWrite is meta for a write: it also returns the deletion of an
// expired stored key, to emit first.
func metaForWrite(v *materialize.View, db uint8, key []byte) (codec.Meta, bool, []codec.Event, error) {
	m, ok, events, err := v.MetaForWrite(db, key)
	if err == nil && ok && m.Type != codec.TypeHash {
		err = materialize.ErrWrongType
	}
	return m, ok && err == nil, events, err
}

// Len returns the number of fields (HLEN), 0 when missing.
func Len(v *materialize.View, db uint8, key []byte) (int64, error) {
	m, _, err := meta(v, db, key)
	return int64(m.Count), err
}

// Get returns field's value (HGET); ok is false when the key or the field
// is missing.
func Get(v *materialize.View, db uint8, key, field []byte) ([]byte, bool, error) {
	if _, ok, err := meta(v, db, key); err != nil || !ok {
		return nil, false, err
	}
	return v.Get(codec.ElementKey(codec.TagHash, db, key, field))
}

// MGet returns each field's value (HMGET); found[i] is false for a missing
// field.
func MGet(v *materialize.View, db uint8, key []byte, fields [][]byte) (vals [][]byte, found []bool, err error) {
	vals, found = make([][]byte, len(fields)), make([]bool, len(fields))
	if _, ok, err := meta(v, db, key); err != nil || !ok {
		return vals, found, err
	}
	for i, f := range fields {
		if vals[i], found[i], err = v.Get(codec.ElementKey(codec.TagHash, db, key, f)); err != nil {
			return nil, nil, err
		}
	}
	return vals, found, nil
}

// All calls fn for each field and value in field order (HGETALL, HKEYS,
// HVALS) until fn returns false. It returns the hash's field count.
func All(v *materialize.View, db uint8, key []byte, fn func(field, val []byte) bool) (int64, error) {
	m, ok, err := meta(v, db, key)
	if err != nil || !ok {
		return 0, err
	}
	p := codec.KeyPrefix(codec.TagHash, db, key)
	err = v.Iterate(p, codec.PrefixEnd(p), false, func(k, val []byte) (bool, error) {
		return fn(k[len(p):], val), nil
	})
	return int64(m.Count), err
}

// Set writes the field/value pairs (HSET, HMSET; with nx, HSETNX's single
// pair only if the field is missing) and returns how many fields are new.
// A field named twice takes its last value.
func Set(v *materialize.View, db uint8, key []byte, pairs [][]byte, nx bool) (int64, []codec.Event, error) {
	m, ok, events, err := metaForWrite(v, db, key)
	if err != nil {
		return 0, nil, err
	}
	if !ok {
		m = codec.Meta{Type: codec.TypeHash}
		if len(events) == 0 { // absent, not expired: no field to look up
			v.NoElements(codec.TagHash, db, key)
		}
	}
	seen := make(map[string]bool, len(pairs)/2)
	var added int64
	out := make([][]byte, 0, len(pairs))
	for i := 0; i < len(pairs); i += 2 {
		f := pairs[i]
		if !seen[string(f)] {
			seen[string(f)] = true
			exists := false
			if ok {
				if exists, err = fieldExists(v, codec.ElementKey(codec.TagHash, db, key, f), len(pairs[i+1])); err != nil {
					return 0, nil, err
				}
			}
			if exists && nx {
				continue
			}
			if !exists {
				added++
			}
		}
		out = append(out, f, pairs[i+1])
	}
	if len(out) == 0 {
		return 0, events, nil
	}
	events = append(events, codec.ElementsEvent(codec.OpHSet, db, key, out))
	if added > 0 {
		prev := m.ExpireAtMs
		m.Count += uint64(added)
		events = append(events, codec.SetMetaEvent(db, key, m, prev))
	}
	return added, events, nil
}

// Del removes fields (HDEL) and returns how many existed; removing the
// last one deletes the key.
func Del(v *materialize.View, db uint8, key []byte, fields [][]byte) (int64, []codec.Event, error) {
	m, ok, events, err := metaForWrite(v, db, key)
	if err != nil || !ok {
		return 0, events, err
	}
	seen := make(map[string]bool, len(fields))
	var gone [][]byte
	for _, f := range fields {
		if seen[string(f)] {
			continue
		}
		seen[string(f)] = true
		has, err := v.Has(codec.ElementKey(codec.TagHash, db, key, f))
		if err != nil {
			return 0, nil, err
		}
		if has {
			gone = append(gone, f)
		}
	}
	n := int64(len(gone))
	switch {
	case n == 0:
		return 0, events, nil
	case uint64(n) >= m.Count:
		return n, append(events, codec.DelKeyEvent(db, key, codec.TypeHash, m.ExpireAtMs)), nil
	}
	prev := m.ExpireAtMs
	m.Count -= uint64(n)
	return n, append(events, codec.ElementsEvent(codec.OpHDel, db, key, gone), codec.SetMetaEvent(db, key, m, prev)), nil
}

// Update replaces field's value with f's result for the current value (nil
// and false when missing), creating the key and the field if needed:
// HINCRBY's and HINCRBYFLOAT's shape.
func Update(v *materialize.View, db uint8, key, field []byte, f func(cur []byte, ok bool) ([]byte, error)) ([]byte, []codec.Event, error) {
	m, ok, events, err := metaForWrite(v, db, key)
	if err != nil {
		return nil, nil, err
	}
	var cur []byte
	found := false
	if ok {
		if cur, found, err = v.Get(codec.ElementKey(codec.TagHash, db, key, field)); err != nil {
			return nil, nil, err
		}
	} else {
		m = codec.Meta{Type: codec.TypeHash}
		if len(events) == 0 { // absent, not expired
			v.NoElements(codec.TagHash, db, key)
		}
	}
	nv, err := f(cur, found)
	if err != nil {
		return nil, nil, err
	}
	events = append(events, codec.ElementsEvent(codec.OpHSet, db, key, [][]byte{field, nv}))
	if !found {
		prev := m.ExpireAtMs
		m.Count++
		events = append(events, codec.SetMetaEvent(db, key, m, prev))
	}
	return nv, events, nil
}

// IncrBy adds delta to field's integer value (0 when missing), HINCRBY.
// Errors: ErrNotInteger, ErrOverflow, materialize.ErrWrongType.
func IncrBy(v *materialize.View, db uint8, key, field []byte, delta int64) (int64, []codec.Event, error) {
	var n int64
	_, events, err := Update(v, db, key, field, func(cur []byte, ok bool) ([]byte, error) {
		var c int64
		if ok {
			var valid bool
			if c, valid = num.ParseInt(cur); !valid {
				return nil, ErrNotInteger
			}
		}
		if (delta < 0 && c < math.MinInt64-delta) || (delta > 0 && c > math.MaxInt64-delta) {
			return nil, ErrOverflow
		}
		n = c + delta
		return strconv.AppendInt(nil, n, 10), nil
	})
	return n, events, err
}

// Sample returns the fields at positions chosen by pick among the hash's
// [0, count), with their values, in pick's order (HRANDFIELD's read; see
// elements.Pick).
func Sample(v *materialize.View, db uint8, key []byte, pick func(count int64) []int64) (fields, vals [][]byte, err error) {
	m, ok, err := meta(v, db, key)
	if err != nil || !ok {
		return nil, nil, err
	}
	return elements.Sample(v, codec.KeyPrefix(codec.TagHash, db, key), pick(int64(m.Count)))
}

// SampleRepeat streams count uniform picks that may repeat (HRANDFIELD
// with a negative count): start gets the hash's size (0: absent, nothing
// follows), then emit each pick's field and value, a chunk of picks per
// read (elements.Repeat). The slices are valid during the call only.
func SampleRepeat(v *materialize.View, db uint8, key []byte, count int64, start func(n int64), emit func(field, val []byte)) error {
	m, ok, err := meta(v, db, key)
	if err != nil {
		return err
	}
	p := codec.KeyPrefix(codec.TagHash, db, key)
	return elements.SampleRepeat(int64(m.Count), ok, count, start, func(pos []int64) ([][2][]byte, error) {
		fs, vs, err := elements.Sample(v, p, pos)
		out := make([][2][]byte, len(fs))
		for i := range fs {
			out[i] = [2][]byte{fs[i], vs[i]}
		}
		return out, err
	}, func(fv [2][]byte) { emit(fv[0], fv[1]) })
}

// Scan returns about count fields from cursor (0: the start), as
// elements.Scan describes.
func Scan(v *materialize.View, db uint8, key []byte, cursor uint64, count int, match func([]byte) bool) (elements.Page, error) {
	m, ok, err := meta(v, db, key)
	if err != nil || !ok {
		return elements.Page{}, err
	}
	return elements.Scan(v, codec.KeyPrefix(codec.TagHash, db, key), m.Count, cursor, count, match)
}

// largeField is the value size from which HSET checks whether a field
// exists without reading its old value (View.HasKey): Pebble keeps values
// of 4 KiB or more in blob files, and a field overwritten with a large
// value most likely held one. Below it a Get (View.Has) is cheaper.
const largeField = 4 << 10

// fieldExists reports whether the field at k exists, by the cheaper check
// for a field about to be set to a value of size bytes.
func fieldExists(v *materialize.View, k []byte, size int) (bool, error) {
	if size >= largeField {
		return v.HasKey(k)
	}
	return v.Has(k)
}
