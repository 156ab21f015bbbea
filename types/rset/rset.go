// Package rset is the semantics of Redis sets: decisions over a
// materialize.View that return results and change events. A set is its
// key's metadata (codec.Meta of TypeSet, holding the member count: SCARD in
// O(1)) plus one S key per member (codec.ElementKey(TagSet, ...) → empty).
// A set never exists empty: removing its last member deletes the key.
//
// Errors: materialize.ErrWrongType for a key of another type. Semantics
// follow Redis 7.0's t_set.c.
package rset

import (
	"bytes"
	"slices"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/types/elements"
)

func meta(v *materialize.View, db uint8, key []byte) (codec.Meta, bool, error) {
	m, ok, err := v.Meta(db, key)
	if err == nil && ok && m.Type != codec.TypeSet {
		err = materialize.ErrWrongType
	}
	return m, ok && err == nil, err
}

func metaForWrite(v *materialize.View, db uint8, key []byte) (codec.Meta, bool, []codec.Event, error) {
	m, ok, events, err := v.MetaForWrite(db, key)
	if err == nil && ok && m.Type != codec.TypeSet {
		err = materialize.ErrWrongType
	}
	return m, ok && err == nil, events, err
}

func prefix(db uint8, key []byte) []byte { return codec.KeyPrefix(codec.TagSet, db, key) }

// Card returns the number of members (SCARD), 0 when missing.
func Card(v *materialize.View, db uint8, key []byte) (int64, error) {
	m, _, err := meta(v, db, key)
	return int64(m.Count), err
}

// IsMember reports whether each member is in the set (SISMEMBER,
// SMISMEMBER).
func IsMember(v *materialize.View, db uint8, key []byte, members [][]byte) ([]bool, error) {
	out := make([]bool, len(members))
	if _, ok, err := meta(v, db, key); err != nil || !ok {
		return out, err
	}
	for i, m := range members {
		has, err := v.Has(codec.ElementKey(codec.TagSet, db, key, m))
		if err != nil {
			return nil, err
		}
		out[i] = has
	}
	return out, nil
}

// Members returns every member in byte order (SMEMBERS); a missing key is
// the empty set.
func Members(v *materialize.View, db uint8, key []byte) ([][]byte, error) {
	if _, ok, err := meta(v, db, key); err != nil || !ok {
		return nil, err
	}
	var out [][]byte
	p := prefix(db, key)
	err := v.IterateNoValues(p, codec.PrefixEnd(p), false, func(k []byte) (bool, error) {
		out = append(out, append([]byte(nil), k[len(p):]...))
		return true, nil
	})
	return out, err
}

// Add adds members (SADD) and returns how many were new.
func Add(v *materialize.View, db uint8, key []byte, members [][]byte) (int64, []codec.Event, error) {
	m, ok, events, err := metaForWrite(v, db, key)
	if err != nil {
		return 0, nil, err
	}
	if !ok {
		m = codec.Meta{Type: codec.TypeSet}
		if len(events) == 0 { // absent, not expired: no member to look up
			v.NoElements(codec.TagSet, db, key)
		}
	}
	var added [][]byte
	seen := make(map[string]bool, len(members))
	for _, mem := range members {
		if seen[string(mem)] {
			continue
		}
		seen[string(mem)] = true
		if ok {
			has, err := v.Has(codec.ElementKey(codec.TagSet, db, key, mem))
			if err != nil {
				return 0, nil, err
			}
			if has {
				continue
			}
		}
		added = append(added, mem)
	}
	if len(added) == 0 {
		return 0, events, nil
	}
	prev := m.ExpireAtMs
	m.Count += uint64(len(added))
	return int64(len(added)), append(events, codec.ElementsEvent(codec.OpSAdd, db, key, added), codec.SetMetaEvent(db, key, m, prev)), nil
}

// Rem removes members (SREM) and returns how many were in the set;
// removing the last one deletes the key.
func Rem(v *materialize.View, db uint8, key []byte, members [][]byte) (int64, []codec.Event, error) {
	m, ok, events, err := metaForWrite(v, db, key)
	if err != nil || !ok {
		return 0, events, err
	}
	var gone [][]byte
	seen := make(map[string]bool, len(members))
	for _, mem := range members {
		if seen[string(mem)] {
			continue
		}
		seen[string(mem)] = true
		has, err := v.Has(codec.ElementKey(codec.TagSet, db, key, mem))
		if err != nil {
			return 0, nil, err
		}
		if has {
			gone = append(gone, mem)
		}
	}
	return int64(len(gone)), append(events, remove(db, key, m, gone)...), nil
}

// remove returns the events that take gone (members of the set m) out.
func remove(db uint8, key []byte, m codec.Meta, gone [][]byte) []codec.Event {
	switch {
	case len(gone) == 0:
		return nil
	case uint64(len(gone)) >= m.Count:
		return []codec.Event{codec.DelKeyEvent(db, key, codec.TypeSet, m.ExpireAtMs)}
	}
	prev := m.ExpireAtMs
	m.Count -= uint64(len(gone))
	return []codec.Event{codec.ElementsEvent(codec.OpSRem, db, key, gone), codec.SetMetaEvent(db, key, m, prev)}
}

// Sample returns the members at positions chosen by pick among the set's
// [0, count), in pick's order (SRANDMEMBER; see elements.Pick).
func Sample(v *materialize.View, db uint8, key []byte, pick func(count int64) []int64) ([][]byte, error) {
	m, ok, err := meta(v, db, key)
	if err != nil || !ok {
		return nil, err
	}
	mem, _, err := elements.Sample(v, prefix(db, key), pick(int64(m.Count)))
	return mem, err
}

// SampleRepeat streams count uniform picks that may repeat (SRANDMEMBER
// with a negative count): start gets the set's size (0: absent, nothing
// follows), then emit each pick, a chunk of picks per read
// (elements.Repeat). The slice is valid during the call only.
func SampleRepeat(v *materialize.View, db uint8, key []byte, count int64, start func(n int64), emit func(member []byte)) error {
	m, ok, err := meta(v, db, key)
	if err != nil {
		return err
	}
	return elements.SampleRepeat(int64(m.Count), ok, count, start, func(pos []int64) ([][]byte, error) {
		mem, _, err := elements.Sample(v, prefix(db, key), pos)
		return mem, err
	}, emit)
}

// Pop removes the members at positions chosen by pick (distinct) and
// returns them (SPOP). The events name the members removed, never the
// random choice, so a replay removes the same ones.
func Pop(v *materialize.View, db uint8, key []byte, pick func(count int64) []int64) ([][]byte, []codec.Event, error) {
	m, ok, events, err := metaForWrite(v, db, key)
	if err != nil || !ok {
		return nil, events, err
	}
	mem, _, err := elements.Sample(v, prefix(db, key), pick(int64(m.Count)))
	if err != nil {
		return nil, nil, err
	}
	return mem, append(events, remove(db, key, m, mem)...), nil
}

// Move moves member from src to dst (SMOVE) and reports whether it was in
// src. A missing src is false before any type check, as in Redis; src ==
// dst changes nothing.
func Move(v *materialize.View, db uint8, src, dst, member []byte) (bool, []codec.Event, error) {
	sm, sok, events, err := v.MetaForWrite(db, src)
	if err != nil || !sok {
		return false, events, err
	}
	dm, dok, devents, err := v.MetaForWrite(db, dst)
	if err != nil {
		return false, nil, err
	}
	if sm.Type != codec.TypeSet || (dok && dm.Type != codec.TypeSet) {
		return false, nil, materialize.ErrWrongType
	}
	has, err := v.Has(codec.ElementKey(codec.TagSet, db, src, member))
	if err != nil || !has || bytes.Equal(src, dst) {
		return has, nil, err
	}
	events = append(events, remove(db, src, sm, [][]byte{member})...)
	events = append(events, devents...)
	if dok {
		if has, err = v.Has(codec.ElementKey(codec.TagSet, db, dst, member)); err != nil {
			return false, nil, err
		}
		if has {
			return true, events, nil
		}
	} else {
		dm = codec.Meta{Type: codec.TypeSet}
	}
	prev := dm.ExpireAtMs
	dm.Count++
	return true, append(events, codec.ElementsEvent(codec.OpSAdd, db, dst, [][]byte{member}), codec.SetMetaEvent(db, dst, dm, prev)), nil
}

// Op is a set algebra operation.
type Op int

// The operations.
const (
	Inter Op = iota
	Union
	Diff
)

// Compute returns the members of op over keys, in byte order, and stops
// early once limit members are known (0: no limit; SINTERCARD). Every key
// is checked for its type first: a key of another type is
// materialize.ErrWrongType even when another key is missing. A missing key
// is the empty set.
func Compute(v *materialize.View, db uint8, op Op, keys [][]byte, limit int) ([][]byte, error) {
	metas := make([]codec.Meta, len(keys))
	found := make([]bool, len(keys))
	for i, k := range keys {
		var err error
		if metas[i], found[i], err = meta(v, db, k); err != nil {
			return nil, err
		}
	}
	switch op {
	case Inter:
		// Walk the smallest set, probe the others.
		small := -1
		for i := range keys {
			if !found[i] {
				return nil, nil
			}
			if small < 0 || metas[i].Count < metas[small].Count {
				small = i
			}
		}
		var out [][]byte
		p := prefix(db, keys[small])
		err := v.IterateNoValues(p, codec.PrefixEnd(p), false, func(k []byte) (bool, error) {
			mem := k[len(p):]
			for i, key := range keys {
				if i == small || bytes.Equal(key, keys[small]) {
					continue
				}
				has, err := v.Has(codec.ElementKey(codec.TagSet, db, key, mem))
				if err != nil || !has {
					return err == nil, err
				}
			}
			out = append(out, append([]byte(nil), mem...))
			return limit <= 0 || len(out) < limit, nil
		})
		return out, err
	case Union:
		set := map[string]bool{}
		for i, k := range keys {
			if !found[i] {
				continue
			}
			mem, err := Members(v, db, k)
			if err != nil {
				return nil, err
			}
			for _, m := range mem {
				set[string(m)] = true
			}
		}
		return sorted(set), nil
	default: // Diff: the first set minus the others
		if !found[0] {
			return nil, nil
		}
		var out [][]byte
		p := prefix(db, keys[0])
		err := v.IterateNoValues(p, codec.PrefixEnd(p), false, func(k []byte) (bool, error) {
			mem := k[len(p):]
			for i, key := range keys[1:] {
				if !found[i+1] {
					continue
				}
				has, err := v.Has(codec.ElementKey(codec.TagSet, db, key, mem))
				if err != nil || has {
					return err == nil, err
				}
			}
			out = append(out, append([]byte(nil), mem...))
			return true, nil
		})
		return out, err
	}
}

func sorted(set map[string]bool) [][]byte {
	out := make([][]byte, 0, len(set))
	for m := range set {
		out = append(out, []byte(m))
	}
	slices.SortFunc(out, bytes.Compare)
	return out
}

// Store writes members (distinct) as the set dst, replacing any key there
// with its TTL (the STORE forms); an empty result deletes dst.
func Store(v *materialize.View, db uint8, dst []byte, members [][]byte) ([]codec.Event, error) {
	m, ok, events, err := v.MetaForWrite(db, dst)
	if err != nil {
		return nil, err
	}
	if ok {
		events = append(events, codec.DelKeyEvent(db, dst, m.Type, m.ExpireAtMs))
	}
	if len(members) == 0 {
		return events, nil
	}
	nm := codec.Meta{Type: codec.TypeSet, Count: uint64(len(members))}
	return append(events, codec.ElementsEvent(codec.OpSAdd, db, dst, members), codec.SetMetaEvent(db, dst, nm, 0)), nil
}

// Scan returns about count members from cursor (0: the start), as
// elements.Scan describes.
func Scan(v *materialize.View, db uint8, key []byte, cursor uint64, count int, match func([]byte) bool) (elements.Page, error) {
	m, ok, err := meta(v, db, key)
	if err != nil || !ok {
		return elements.Page{}, err
	}
	return elements.Scan(v, prefix(db, key), m.Count, cursor, count, match)
}
