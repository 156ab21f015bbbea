// Package elements holds what the collection types (hashes, sets) share
// over their element keys (codec.ElementKey: one key per field or member
// under the user key's prefix): sampling for HRANDFIELD/SRANDMEMBER/SPOP
// and the stateless scan cursor of HSCAN/SSCAN.
package elements

import (
	"math/rand/v2"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
)

// Pick returns the positions, among n elements, that a random-element
// command replies for count: all of them in order when count >= n, count
// distinct ones in random order below that, -count uniform picks that may
// repeat when count is negative (Repeat streams those for a reply of any
// size). n == 0 or count == 0: none.
func Pick(n, count int64) []int64 {
	switch {
	case n == 0 || count == 0:
		return nil
	case count < 0:
		out := make([]int64, -count)
		for i := range out {
			out[i] = rand.Int64N(n)
		}
		return out
	case count >= n:
		out := make([]int64, n)
		for i := range out {
			out[i] = int64(i)
		}
		return out
	}
	// count distinct positions: a partial Fisher–Yates over a sparse map.
	swapped := map[int64]int64{}
	at := func(i int64) int64 {
		if v, ok := swapped[i]; ok {
			return v
		}
		return i
	}
	out := make([]int64, count)
	for i := range count {
		j := i + rand.Int64N(n-i)
		out[i] = at(j)
		swapped[j] = at(i)
	}
	return out
}

// RepeatChunk and RepeatChunkMax bound the picks that Repeat hands over at
// once: as many as the collection has elements, within these bounds. A
// random-element command with a negative count thus holds at most
// RepeatChunkMax positions, and the elements read for them, whatever the
// count, and reads each element about once per chunk (a chunk's read walks
// up to its highest position).
const (
	RepeatChunk    = 1 << 16
	RepeatChunkMax = 1 << 20
)

// Repeat calls chunk with count uniform random positions among n (which
// may repeat; n > 0), a chunk at a time in one reused buffer: HRANDFIELD,
// SRANDMEMBER and ZRANDMEMBER with a negative count, whose reply may be far
// larger than the collection (Redis streams it too).
func Repeat(n, count int64, chunk func(pos []int64) error) error {
	size := min(max(n, RepeatChunk), RepeatChunkMax)
	buf := make([]int64, min(count, size))
	for count > 0 {
		c := buf[:min(count, size)]
		for i := range c {
			c[i] = rand.Int64N(n)
		}
		if err := chunk(c); err != nil {
			return err
		}
		count -= int64(len(c))
	}
	return nil
}

// SampleRepeat is the body of the random-element commands with a negative
// count over a collection of n elements (ok false: absent): start gets n
// (0 when absent; nothing follows), then the picks are read a chunk at a
// time (Repeat) with read, which returns a chunk's items in pick order, and
// handed to emit one by one.
func SampleRepeat[T any](n int64, ok bool, count int64, start func(n int64), read func(pos []int64) ([]T, error), emit func(T)) error {
	if !ok {
		start(0)
		return nil
	}
	start(n)
	return Repeat(n, count, func(pos []int64) error {
		items, err := read(pos)
		for _, it := range items {
			emit(it)
		}
		return err
	})
}

// Sample reads the elements at positions pos (in element byte order) under
// prefix p in one pass and returns them, with their values, in pos's order
// (a position named twice comes twice). O(position of the last pick).
func Sample(v *materialize.View, p []byte, pos []int64) (elems, vals [][]byte, err error) {
	return SampleFrom(v, p, p, pos)
}

// SampleFrom is Sample over the keys under p from lower (at or after p, at
// or below the first element: a sorted set's floor).
func SampleFrom(v *materialize.View, p, lower []byte, pos []int64) (elems, vals [][]byte, err error) {
	if len(pos) == 0 {
		return nil, nil, nil
	}
	need := map[int64][]int{}
	last := int64(-1)
	for i, q := range pos {
		need[q] = append(need[q], i)
		last = max(last, q)
	}
	elems, vals = make([][]byte, len(pos)), make([][]byte, len(pos))
	var i int64
	err = v.Iterate(lower, codec.PrefixEnd(p), false, func(k, val []byte) (bool, error) {
		if idx, ok := need[i]; ok {
			e, vv := append([]byte(nil), k[len(p):]...), append([]byte(nil), val...)
			for _, j := range idx {
				elems[j], vals[j] = e, vv
			}
		}
		i++
		return i <= last, nil
	})
	return elems, vals, err
}

// Page is one scan call's result: the next cursor (0: done) and the
// elements with their values.
type Page struct {
	Cursor uint64
	Elems  [][]byte
	Vals   [][]byte
}

// SmallCount is the size up to which a collection comes whole in one scan
// call, as Redis's compact encodings (listpack, intset) do: Redis's
// hash-max-listpack-entries default.
const SmallCount = 128

// Scan returns about count elements under prefix p from cursor (0: the
// start) for a collection of total elements, those match accepts (nil: all).
// A cursor is the first 7 bytes of the next element, big-endian, plus 1; a
// page never ends between two elements sharing those 7 bytes, so a scan
// always progresses, and every element present for the whole scan is
// returned at least once (SCAN's guarantee; elements sharing a 7-byte
// prefix with a page's end may come twice). A collection of at most
// SmallCount elements comes whole.
func Scan(v *materialize.View, p []byte, total, cursor uint64, count int, match func([]byte) bool) (Page, error) {
	var pg Page
	if total <= SmallCount {
		count = int(total) + 1
	}
	lower := p
	if cursor != 0 {
		lower = append(append([]byte(nil), p...), cursorPrefix(cursor)...)
	}
	var lastCursor uint64 // the cursor of the last element taken (0: none yet)
	n := 0
	err := v.Iterate(lower, codec.PrefixEnd(p), false, func(k, val []byte) (bool, error) {
		e := k[len(p):]
		c := cursorOf(e)
		if n >= count && c != lastCursor {
			pg.Cursor = c
			return false, nil
		}
		n++
		lastCursor = c
		if match == nil || match(e) {
			pg.Elems = append(pg.Elems, append([]byte(nil), e...))
			pg.Vals = append(pg.Vals, append([]byte(nil), val...))
		}
		return true, nil
	})
	return pg, err
}

const cursorBytes = 7

// cursorOf is e's cursor: its first 7 bytes (zero-padded), plus 1.
func cursorOf(e []byte) uint64 {
	var c uint64
	for i := range cursorBytes {
		c <<= 8
		if i < len(e) {
			c |= uint64(e[i])
		}
	}
	return c + 1
}

// cursorPrefix is the seek key of cursor c: its 7 bytes without trailing
// zeros, which may be the padding of a shorter element.
func cursorPrefix(c uint64) []byte {
	c--
	b := make([]byte, cursorBytes)
	for i := cursorBytes - 1; i >= 0; i-- {
		b[i] = byte(c)
		c >>= 8
	}
	for len(b) > 0 && b[len(b)-1] == 0 {
		b = b[:len(b)-1]
	}
	return b
}

// Flat holds byte strings (elements, fields, values) read for a reply in
// one buffer: string i is Buf[Ends[i-1]:Ends[i]] (from 0 for the first).
// Neither slice holds pointers, so a read of many strings leaves the
// garbage collector nothing to scan and its appends no write barriers,
// where a [][]byte of copies took an allocation per string (LRANGE and
// the lists' multi-element reads: docs/perf.md, "LRANGE without a slice
// per element").
type Flat struct {
	Buf  []byte
	Ends []int
}

// Append adds b (copied) as the next string.
func (f *Flat) Append(b []byte) {
	f.Buf = append(f.Buf, b...)
	f.Ends = append(f.Ends, len(f.Buf))
}

// Len returns the number of strings.
func (f Flat) Len() int { return len(f.Ends) }

// At returns string i (capacity cut at its end).
func (f Flat) At(i int) []byte {
	start := 0
	if i > 0 {
		start = f.Ends[i-1]
	}
	return f.Buf[start:f.Ends[i]:f.Ends[i]]
}
