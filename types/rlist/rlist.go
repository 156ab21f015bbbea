// Package rlist is the semantics of Redis lists: decisions over a
// materialize.View that return results and change events. A list is its
// key's metadata (codec.Meta of TypeList: the element count and the head,
// the position of the first element) plus one I key per element
// (codec.ListKey(db, key, position) → element). Positions are dense: the
// element at index i is at position head + i, so LLEN, LINDEX, LSET and
// the ends of LRANGE are O(1) seeks, pushes and pops at either end are
// O(1), and no read ever steps over the tombstones of popped elements. A
// list never exists empty: removing its last element deletes the key.
//
// Errors: materialize.ErrWrongType for a key of another type; the
// command package maps the others. Semantics follow Redis 7.0's t_list.c.
// Design: docs/rfcs/20261123_lists.md.
package rlist

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/types/elements"
)

// Side is an end of a list.
type Side bool

// The ends.
const (
	Left  Side = true // the head: LPUSH, LPOP, LEFT
	Right Side = false
)

func meta(v *materialize.View, db uint8, key []byte) (codec.Meta, bool, error) {
	m, ok, err := v.Meta(db, key)
	if err == nil && ok && m.Type != codec.TypeList {
		err = materialize.ErrWrongType
	}
	return m, ok && err == nil, err
}

func metaForWrite(v *materialize.View, db uint8, key []byte) (codec.Meta, bool, []codec.Event, error) {
	m, ok, events, err := v.MetaForWrite(db, key)
	if err == nil && ok && m.Type != codec.TypeList {
		err = materialize.ErrWrongType
	}
	return m, ok && err == nil, events, err
}

// Len returns the number of elements (LLEN), 0 when missing.
func Len(v *materialize.View, db uint8, key []byte) (int64, error) {
	m, _, err := meta(v, db, key)
	return int64(m.Count), err
}

// Exists reports whether key holds a list; another type is ErrWrongType.
func Exists(v *materialize.View, db uint8, key []byte) (bool, error) {
	_, ok, err := meta(v, db, key)
	return ok, err
}

// Index returns the element at index i (negative: from the tail; LINDEX),
// and false when the key is missing or i is out of range.
func Index(v *materialize.View, db uint8, key []byte, i int64) ([]byte, bool, error) {
	m, ok, err := meta(v, db, key)
	if err != nil || !ok {
		return nil, false, err
	}
	n := int64(m.Count)
	if i < 0 {
		i += n
	}
	if i < 0 || i >= n {
		return nil, false, nil
	}
	return v.Get(codec.ListKey(db, key, m.Head+i))
}

// span clamps LRANGE/LTRIM's start and stop (negative: from the tail) to
// the list's n elements; ok is false when the range is empty.
func span(start, stop, n int64) (from, to int64, ok bool) {
	if start < 0 {
		start = max(start+n, 0)
	}
	if stop < 0 {
		stop += n
	}
	if start > stop || start >= n {
		return 0, 0, false
	}
	return start, min(stop, n-1), true
}

// each calls fn with the elements at indexes from..to (in range) in index
// order, or reverse order when rev; fn's elem is valid only during the
// call. One bounded seek: O(to - from). The walk stops at the last index
// it was asked for instead of stepping past it: a position rewritten many
// times (a queue that empties and starts again at the same head) holds
// old versions that a step past it would walk through.
func each(v *materialize.View, db uint8, key []byte, m codec.Meta, from, to int64, rev bool, fn func(i int64, elem []byte) (bool, error)) error {
	lower := codec.ListKey(db, key, m.Head+from)
	upper := codec.ListKey(db, key, m.Head+to+1)
	last := to
	if rev {
		last = from
	}
	return v.Iterate(lower, upper, rev, func(k, val []byte) (bool, error) {
		p, err := codec.DecodeListPos(k[len(k)-codec.ListPosLen:])
		if err != nil {
			return false, err
		}
		more, err := fn(p-m.Head, val)
		return more && p-m.Head != last, err
	})
}

// read returns copies of the elements at indexes from..to, in index order
// (reverse order when rev). It always walks forwards: a backward walk
// must pass every old version of the first key it meets.
func read(v *materialize.View, db uint8, key []byte, m codec.Meta, from, to int64, rev bool) ([][]byte, error) {
	if from == to {
		// One element (LPOP, RPOP, LINDEX, BLMOVE): a point lookup, which
		// the sstables' Bloom filters serve; a bounded iterator's first
		// seek visits every level. The head or tail element is read with
		// the ones a queue pops next (View.GetRun).
		k := codec.ListKey(db, key, m.Head+from)
		var (
			elem []byte
			ok   bool
			err  error
		)
		switch n := int64(m.Count); {
		case from == 0 && n > 1:
			elem, ok, err = v.GetRun(k, nil, codec.ListKey(db, key, m.Head+n), false)
		case from == n-1 && n > 1:
			elem, ok, err = v.GetRun(k, codec.ListKey(db, key, m.Head), nil, true)
		default:
			elem, ok, err = v.Get(k)
		}
		if err == nil && !ok {
			err = corrupt(key, from, to, 0)
		}
		return [][]byte{elem}, err
	}
	es, err := readFlat(v, db, key, m, from, to)
	out := make([][]byte, es.Len())
	for i := range out {
		out[i] = es.At(i)
	}
	if rev {
		slices.Reverse(out)
	}
	return out, err
}

// readFlat reads the elements at indexes from..to (from < to) into one
// buffer, in index order: an allocation or two per read, not per element.
func readFlat(v *materialize.View, db uint8, key []byte, m codec.Meta, from, to int64) (elements.Flat, error) {
	var es elements.Flat
	es.Ends = make([]int, 0, to-from+1)
	err := each(v, db, key, m, from, to, false, func(_ int64, elem []byte) (bool, error) {
		if es.Buf == nil {
			// Sized for elements like the first, up to 64 KiB (appends
			// grow it past that).
			c := 64 << 10
			if n := int(to - from + 1); len(elem) < c/n {
				c = len(elem) * n
			}
			es.Buf = make([]byte, 0, c)
		}
		es.Append(elem)
		return true, nil
	})
	if err == nil && int64(len(es.Ends)) != to-from+1 {
		err = corrupt(key, from, to, len(es.Ends))
	}
	return es, err
}

// Range returns the elements from start to stop inclusive (negative: from
// the tail; LRANGE).
func Range(v *materialize.View, db uint8, key []byte, start, stop int64) (elements.Flat, error) {
	m, ok, err := meta(v, db, key)
	if err != nil || !ok {
		return elements.Flat{}, err
	}
	from, to, ok := span(start, stop, int64(m.Count))
	if !ok {
		return elements.Flat{}, nil
	}
	if from == to {
		elems, err := read(v, db, key, m, from, to, false)
		if err != nil {
			return elements.Flat{}, err
		}
		return elements.Flat{Buf: elems[0], Ends: []int{len(elems[0])}}, nil
	}
	return readFlat(v, db, key, m, from, to)
}

// Pos returns the indexes of the matches of elem (LPOS): from the rank-th
// match on (rank < 0: counting from the tail, scanning backwards), at most
// count of them (0: all), looking at no more than maxlen elements (0: all).
// rank must not be 0.
func Pos(v *materialize.View, db uint8, key []byte, elem []byte, rank, count, maxlen int64) ([]int64, error) {
	m, ok, err := meta(v, db, key)
	if err != nil || !ok {
		return nil, err
	}
	rev := rank < 0
	if rev {
		rank = -rank
	}
	var out []int64
	var seen, matches int64
	err = each(v, db, key, m, 0, int64(m.Count)-1, rev, func(i int64, e []byte) (bool, error) {
		if maxlen != 0 && seen >= maxlen {
			return false, nil
		}
		seen++
		if !bytes.Equal(e, elem) {
			return true, nil
		}
		matches++
		if matches < rank {
			return true, nil
		}
		out = append(out, i)
		return count == 0 || int64(len(out)) < count, nil
	})
	return out, err
}

// edit is a write decision on one list in progress: its metadata as the
// events so far leave it.
type edit struct {
	db      uint8
	key     []byte
	m       codec.Meta
	existed bool  // the key existed before the decision
	prevTTL int64 // its expire-at before the decision (for the TTL index)
	events  []codec.Event
}

// openEdit starts an edit of key: its metadata for writing (an expired key
// is deleted first, by the events that start the edit), and whether it is
// a list. A key of another type is ErrWrongType.
func openEdit(v *materialize.View, db uint8, key []byte) (*edit, error) {
	m, ok, events, err := metaForWrite(v, db, key)
	if err != nil {
		return nil, err
	}
	if !ok {
		m = codec.Meta{Type: codec.TypeList}
	}
	return &edit{db: db, key: key, m: m, existed: ok, prevTTL: m.ExpireAtMs, events: events}, nil
}

// push adds elems at one end, each in turn (LPUSH a b c leaves c first).
func (e *edit) push(side Side, elems [][]byte) {
	k := int64(len(elems))
	if k == 0 {
		return
	}
	if side == Left {
		run := make([][]byte, k)
		for i, el := range elems {
			run[k-1-int64(i)] = el
		}
		e.m.Head -= k
		e.events = append(e.events, codec.ListSetEvent(e.db, e.key, e.m.Head, run))
	} else {
		e.events = append(e.events, codec.ListSetEvent(e.db, e.key, e.m.Head+int64(e.m.Count), elems))
	}
	e.m.Count += uint64(k)
}

// pop removes up to count elements from one end and returns them in pop
// order (from that end inwards).
func (e *edit) pop(v *materialize.View, side Side, count int64) ([][]byte, error) {
	n := int64(e.m.Count)
	count = min(count, n)
	if count <= 0 {
		return nil, nil
	}
	from, to := int64(0), count-1
	if side == Right {
		from, to = n-count, n-1
	}
	out, err := read(v, e.db, e.key, e.m, from, to, side == Right)
	if err != nil {
		return nil, err
	}
	e.drop(from, to)
	return out, nil
}

// drop removes the elements at indexes from..to, which must reach one end
// of the list.
func (e *edit) drop(from, to int64) {
	e.events = append(e.events, codec.ListDelEvent(e.db, e.key, e.m.Head+from, e.m.Head+to))
	if from == 0 {
		e.m.Head += to + 1
	}
	e.m.Count -= uint64(to - from + 1)
}

// finish appends the events that store the list's metadata, or delete the
// key when the list is empty (its elements were deleted one run at a
// time, so only the metadata goes: codec.DelMetaEvent), and returns all
// the edit's events. An edit that changed nothing returns only the events
// that opened it.
func (e *edit) finish(changed bool) []codec.Event {
	switch {
	case !changed:
	case e.m.Count == 0 && e.existed:
		e.events = append(e.events, codec.DelMetaEvent(e.db, e.key, e.prevTTL))
	case e.m.Count > 0:
		e.events = append(e.events, codec.SetMetaEvent(e.db, e.key, e.m, e.prevTTL))
	}
	return e.events
}

// Push adds elems at one end (LPUSH, RPUSH; with existing, LPUSHX and
// RPUSHX, which add nothing to a missing key) and returns the new length.
func Push(v *materialize.View, db uint8, key []byte, side Side, existing bool, elems [][]byte) (int64, []codec.Event, error) {
	e, err := openEdit(v, db, key)
	if err != nil {
		return 0, nil, err
	}
	if existing && !e.existed {
		return 0, e.events, nil
	}
	e.push(side, elems)
	return int64(e.m.Count), e.finish(true), nil
}

// Pop removes up to count elements from one end (LPOP, RPOP) and returns
// them in pop order; found is false when the key is missing.
func Pop(v *materialize.View, db uint8, key []byte, side Side, count int64) (elems [][]byte, found bool, events []codec.Event, err error) {
	e, err := openEdit(v, db, key)
	if err != nil || !e.existed {
		return nil, false, e.eventsOrNil(), err
	}
	if elems, err = e.pop(v, side, count); err != nil {
		return nil, false, nil, err
	}
	return elems, true, e.finish(len(elems) > 0), nil
}

// eventsOrNil returns the events of an edit that may be nil.
func (e *edit) eventsOrNil() []codec.Event {
	if e == nil {
		return nil
	}
	return e.events
}

// Set replaces the element at index i (negative: from the tail; LSET):
// found is false for a missing key, inRange false for an index outside the
// list (the command's "no such key" and "index out of range" errors).
func Set(v *materialize.View, db uint8, key []byte, i int64, elem []byte) (found, inRange bool, events []codec.Event, err error) {
	e, err := openEdit(v, db, key)
	if err != nil || !e.existed {
		return false, false, e.eventsOrNil(), err
	}
	n := int64(e.m.Count)
	if i < 0 {
		i += n
	}
	if i < 0 || i >= n {
		return true, false, e.events, nil
	}
	e.events = append(e.events, codec.ListSetEvent(db, key, e.m.Head+i, [][]byte{elem}))
	return true, true, e.finish(true), nil
}

// Insert puts elem before (or after) the first element equal to pivot
// (LINSERT) and returns the new length, -1 when pivot is absent, 0 when
// the key is missing. The shorter side of the list shifts by one
// position, so an insert costs O(index of pivot) to find it plus O(min(i,
// n-i)) rewritten elements.
func Insert(v *materialize.View, db uint8, key []byte, before bool, pivot, elem []byte) (int64, []codec.Event, error) {
	e, err := openEdit(v, db, key)
	if err != nil || !e.existed {
		return 0, e.eventsOrNil(), err
	}
	n := int64(e.m.Count)
	at := int64(-1)
	err = each(v, db, key, e.m, 0, n-1, false, func(i int64, el []byte) (bool, error) {
		if bytes.Equal(el, pivot) {
			at = i
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return 0, nil, err
	}
	if at < 0 {
		return -1, e.events, nil
	}
	if !before {
		at++
	}
	// elem becomes index at: shift [0, at) left or [at, n) right.
	if at <= n-at {
		run, err := read(v, db, key, e.m, 0, at-1, false)
		if err != nil {
			return 0, nil, err
		}
		e.m.Head--
		e.events = append(e.events, codec.ListSetEvent(db, key, e.m.Head, append(run, elem)))
	} else {
		run, err := read(v, db, key, e.m, at, n-1, false)
		if err != nil {
			return 0, nil, err
		}
		e.events = append(e.events, codec.ListSetEvent(db, key, e.m.Head+at, append([][]byte{elem}, run...)))
	}
	e.m.Count++
	return int64(e.m.Count), e.finish(true), nil
}

// Rem removes the first count elements equal to elem (LREM): from the
// head when count > 0, from the tail when count < 0, all when count is 0;
// it returns how many it removed. The gaps close by shifting the side of
// the removed span that rewrites fewer elements.
func Rem(v *materialize.View, db uint8, key []byte, count int64, elem []byte) (int64, []codec.Event, error) {
	e, err := openEdit(v, db, key)
	if err != nil || !e.existed {
		return 0, e.eventsOrNil(), err
	}
	n := int64(e.m.Count)
	limit := count
	if limit < 0 {
		limit = -limit // math.MinInt64 stays negative: no limit, as in Redis
	}
	var gone []int64 // removed indexes, in scan order
	err = each(v, db, key, e.m, 0, n-1, count < 0, func(i int64, el []byte) (bool, error) {
		if bytes.Equal(el, elem) {
			gone = append(gone, i)
		}
		return limit <= 0 || int64(len(gone)) < limit, nil
	})
	if err != nil || len(gone) == 0 {
		return 0, e.events, err
	}
	k := int64(len(gone))
	lo, hi := gone[0], gone[k-1]
	if count < 0 {
		lo, hi = hi, lo
	}
	removed := make(map[int64]bool, k)
	for _, i := range gone {
		removed[i] = true
	}
	keep := func(from, to int64) ([][]byte, error) {
		var run [][]byte
		err := each(v, db, key, e.m, from, to, false, func(i int64, el []byte) (bool, error) {
			if !removed[i] {
				run = append(run, append([]byte(nil), el...))
			}
			return true, nil
		})
		return run, err
	}
	switch {
	case k == n:
		e.drop(0, n-1)
	case hi+1-k <= n-lo-k:
		// The survivors of [0, hi] move right, onto [k, hi].
		run, err := keep(0, hi)
		if err != nil {
			return 0, nil, err
		}
		if len(run) > 0 {
			e.events = append(e.events, codec.ListSetEvent(db, key, e.m.Head+k, run))
		}
		e.drop(0, k-1)
	default:
		// The survivors of [lo, n) move left, onto [lo, n-k).
		run, err := keep(lo, n-1)
		if err != nil {
			return 0, nil, err
		}
		if len(run) > 0 {
			e.events = append(e.events, codec.ListSetEvent(db, key, e.m.Head+lo, run))
		}
		e.drop(n-k, n-1)
	}
	return k, e.finish(true), nil
}

// Trim keeps only the elements from start to stop inclusive (negative:
// from the tail; LTRIM); an empty range deletes the key. A trim that keeps
// every element still rewrites the metadata: LTRIM always touches an
// existing key (a WATCH of it fails), as in Redis.
func Trim(v *materialize.View, db uint8, key []byte, start, stop int64) ([]codec.Event, error) {
	e, err := openEdit(v, db, key)
	if err != nil || !e.existed {
		return e.eventsOrNil(), err
	}
	n := int64(e.m.Count)
	from, to, ok := span(start, stop, n)
	if !ok {
		from, to = n, n-1 // keep nothing
	}
	if to < n-1 {
		e.drop(to+1, n-1)
	}
	if from > 0 {
		e.drop(0, from-1)
	}
	return e.finish(true), nil
}

// Move pops one element from src's from end and pushes it onto dst's to
// end (LMOVE, RPOPLPUSH, and a BLMOVE that finds an element). It returns
// the element, or false when src is missing (before dst's type is
// checked, as in Redis). src and dst may be the same list (a rotation).
func Move(v *materialize.View, db uint8, src, dst []byte, from, to Side) ([]byte, bool, []codec.Event, error) {
	se, err := openEdit(v, db, src)
	if err != nil || !se.existed {
		return nil, false, se.eventsOrNil(), err
	}
	de := se
	if !bytes.Equal(src, dst) {
		if de, err = openEdit(v, db, dst); err != nil {
			return nil, false, nil, err
		}
	}
	elems, err := se.pop(v, from, 1)
	if err != nil {
		return nil, false, nil, err
	}
	de.push(to, elems)
	events := se.finish(true)
	if de != se {
		events = append(events, de.finish(true)...)
	}
	return elems[0], true, events, nil
}

// FirstNonEmpty returns the first of keys holding a list (a key of
// another type before it is ErrWrongType, as Redis checks each key in
// turn), and false when none does.
func FirstNonEmpty(v *materialize.View, db uint8, keys [][]byte) ([]byte, bool, error) {
	for _, k := range keys {
		_, ok, err := meta(v, db, k)
		if err != nil {
			return nil, false, err
		}
		if ok {
			return k, true, nil
		}
	}
	return nil, false, nil
}

func corrupt(key []byte, from, to int64, got int) error {
	return fmt.Errorf("rlist: list %q holds %d elements at indexes %d..%d, want %d: %w", key, got, from, to, to-from+1, codec.ErrCorrupt)
}
