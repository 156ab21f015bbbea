package materialize

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sediment-dev/sediment/codec"
)

// Rank blocks of large sorted sets (codec/zset.go, docs/key-format.md
// §3.6c): a block is split in two halves once it holds more than
// ZBlockMax members, and merged into a neighbour once the two hold at most
// ZBlockMerge together; a build cuts the score index into blocks of
// ZBlockMerge. So every block but the last holds between ZBlockMerge/2 and
// ZBlockMax members after a build or a split, no two neighbours hold
// ZBlockMerge or fewer together, and a set of N members has at most
// 2N/ZBlockMerge + 1 blocks.
const (
	ZBlockMax   = 2048
	ZBlockMerge = 1024
)

// applyZAdd applies an OpZAdd event: per member, the old score-index key
// out, the new score written to both keys, and with ranked the rank blocks
// moved along (zc: the writer's copy of them, or nil).
func applyZAdd(b *pebble.Batch, e codec.Event, zc *zBlockCache) error {
	a := e.Args
	if len(a) < 1 || len(a[0]) != 1 || (len(a)-1)%3 != 0 {
		return fmt.Errorf("materialize: ZADD event with %d args: %w", len(a), codec.ErrCorrupt)
	}
	rb, err := rankedBlocks(b, e, zc)
	if err != nil {
		return err
	}
	for i := 1; i < len(a); i += 3 {
		member := a[i]
		score, err := codec.DecodeScoreArg(a[i+1])
		if err != nil {
			return err
		}
		if len(a[i+2]) > 0 {
			prev, err := codec.DecodeScoreArg(a[i+2])
			if err != nil {
				return err
			}
			if err := zIndexDel(b, e.DB, e.Key, prev, member, rb); err != nil {
				return err
			}
		}
		if err := b.Set(codec.ZMemberKey(e.DB, e.Key, member), a[i+1], nil); err != nil {
			return err
		}
		yk := codec.ZScoreKey(e.DB, e.Key, score, member)
		if err := b.Set(yk, nil, nil); err != nil {
			return err
		}
		if rb.ranked() {
			if err := zBlockAdd(rb, yk); err != nil {
				return err
			}
		}
	}
	return nil
}

// applyZRem applies an OpZRem event.
func applyZRem(b *pebble.Batch, e codec.Event, zc *zBlockCache) error {
	a := e.Args
	if len(a) < 1 || len(a[0]) != 1 || (len(a)-1)%2 != 0 {
		return fmt.Errorf("materialize: ZREM event with %d args: %w", len(a), codec.ErrCorrupt)
	}
	rb, err := rankedBlocks(b, e, zc)
	if err != nil {
		return err
	}
	for i := 1; i < len(a); i += 2 {
		score, err := codec.DecodeScoreArg(a[i+1])
		if err != nil {
			return err
		}
		if err := b.Delete(codec.ZMemberKey(e.DB, e.Key, a[i]), nil); err != nil {
			return err
		}
		if err := zIndexDel(b, e.DB, e.Key, score, a[i], rb); err != nil {
			return err
		}
	}
	return nil
}

// applyZRanks applies an OpZRanks event: build the blocks (dropping any
// first) or drop them. Both are point writes: a set that shrinks below
// RankOff leaves no range tombstone over its blocks. The writer's copy of
// the set's blocks (zc, or nil) is dropped: the next ranked event loads
// the new ones.
func applyZRanks(b *pebble.Batch, e codec.Event, zc *zBlockCache) error {
	if len(e.Args) < 1 || len(e.Args) > 2 || len(e.Args[0]) != 1 {
		return fmt.Errorf("materialize: ZRANKS event: %w", codec.ErrCorrupt)
	}
	var floor []byte // no live block's upper fence is below it, nor (on) any member
	if len(e.Args) == 2 {
		floor = e.Args[1]
	}
	bp := codec.KeyPrefix(codec.TagZBlock, e.DB, e.Key)
	if zc != nil {
		zc.dirty = true
		zc.forget(bp)
	}
	old, err := collectKeys(b, bp, floor)
	if err != nil {
		return err
	}
	for _, k := range old {
		if err := b.Delete(k, nil); err != nil {
			return err
		}
	}
	if e.Args[0][0] != 1 {
		return nil
	}
	yp := codec.KeyPrefix(codec.TagZScore, e.DB, e.Key)
	it, err := b.NewIter(&pebble.IterOptions{LowerBound: append(yp[:len(yp):len(yp)], floor...), UpperBound: codec.PrefixEnd(yp)})
	if err != nil {
		return err
	}
	var (
		lo  []byte // the current block's lower fence
		n   uint64
		set []zBlock
	)
	for ok := it.First(); ok; ok = it.Next() {
		if n == ZBlockMerge {
			hi := append([]byte(nil), it.Key()[len(yp):]...)
			set = append(set, zBlock{hi: hi, lo: lo, n: n})
			lo, n = hi, 0
		}
		n++
	}
	if err := it.Close(); err != nil {
		return err
	}
	if n > 0 {
		set = append(set, zBlock{hi: codec.ZBlockEnd, lo: lo, n: n})
	}
	for _, bl := range set {
		if err := bl.put(b, bp); err != nil {
			return err
		}
	}
	return nil
}

// collectKeys returns every key under prefix p in b from p+from on.
func collectKeys(b *pebble.Batch, p, from []byte) ([][]byte, error) {
	it, err := b.NewIter(&pebble.IterOptions{LowerBound: append(p[:len(p):len(p)], from...), UpperBound: codec.PrefixEnd(p)})
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for ok := it.First(); ok; ok = it.Next() {
		out = append(out, append([]byte(nil), it.Key()...))
	}
	return out, it.Close()
}

// zBlock is one rank block: the score-index suffixes in [lo, hi), n of
// them. Its key is B|...|hi (codec.ZBlockEnd for the last block), its
// value n then lo (codec.AppendZBlock).
type zBlock struct {
	hi, lo []byte
	n      uint64
}

func (bl zBlock) put(b *pebble.Batch, bp []byte) error {
	k := append(append(make([]byte, 0, len(bp)+len(bl.hi)), bp...), bl.hi...)
	return b.Set(k, codec.AppendZBlock(nil, bl.n, bl.lo), nil)
}

func (bl zBlock) del(b *pebble.Batch, bp []byte) error {
	return b.Delete(append(append(make([]byte, 0, len(bp)+len(bl.hi)), bp...), bl.hi...), nil)
}

// zBlockAt returns the first block whose upper fence is at or above from
// (a suffix), found false when there is none. Every lookup is a forward
// seek: a block key is rewritten on every member added or removed, and a
// reverse step would walk all its versions still in the memtable.
func zBlockAt(b *pebble.Batch, bp, from []byte) (zBlock, bool, error) {
	it, err := b.NewIter(&pebble.IterOptions{LowerBound: bp, UpperBound: codec.PrefixEnd(bp)})
	if err != nil {
		return zBlock{}, false, err
	}
	var bl zBlock
	ok := it.SeekGE(append(append(make([]byte, 0, len(bp)+len(from)), bp...), from...))
	if ok {
		bl.hi = append([]byte(nil), it.Key()[len(bp):]...)
		var lo []byte
		if bl.n, lo, err = codec.DecodeZBlock(it.Value()); err == nil {
			bl.lo = append([]byte(nil), lo...)
		}
	}
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	return bl, ok && err == nil, err
}

// rankedBlocks returns the rank blocks of e's set when e is flagged
// ranked, else the zero zRankBlocks.
func rankedBlocks(b *pebble.Batch, e codec.Event, zc *zBlockCache) (zRankBlocks, error) {
	if e.Args[0][0] != 1 {
		return zRankBlocks{}, nil
	}
	return zc.rankBlocks(b, codec.KeyPrefix(codec.TagZBlock, e.DB, e.Key))
}

// zIndexDel deletes a member's score-index key and, when rb is a ranked
// set's blocks, counts it out of its block.
func zIndexDel(b *pebble.Batch, db uint8, key []byte, score float64, member []byte, rb zRankBlocks) error {
	yk := codec.ZScoreKey(db, key, score, member)
	if err := b.Delete(yk, nil); err != nil || !rb.ranked() {
		return err
	}
	return zBlockRemove(rb, yk)
}

// zBlockAdd counts the score-index key yk (already written) into its
// block, splitting the block when it grows past ZBlockMax.
func zBlockAdd(rb zRankBlocks, yk []byte) error {
	yp := yk[:len(rb.bp):len(rb.bp)] // the Y prefix: the B prefix's length
	bl, found, err := rb.of(yk[len(yp):])
	if err != nil {
		return err
	}
	if !found {
		// No block at all: the set's members were all removed one by one
		// (each block emptied was dropped); this member starts again.
		return rb.put(zBlock{hi: codec.ZBlockEnd, n: 1})
	}
	if bl.n++; bl.n <= ZBlockMax {
		return rb.put(bl)
	}
	// Split: the member at index n/2 of the block starts its upper half.
	// The first block (no lower fence) is walked back from its upper
	// fence: below its first member lie the tombstones of every member
	// popped since the last compaction, which a walk up from the prefix
	// would step over.
	upper := codec.PrefixEnd(yp)
	if string(bl.hi) != string(codec.ZBlockEnd) {
		upper = append(append([]byte(nil), yp...), bl.hi...)
	}
	it, err := rb.b.NewIter(&pebble.IterOptions{LowerBound: append(append([]byte(nil), yp...), bl.lo...), UpperBound: upper})
	if err != nil {
		return err
	}
	var mid []byte
	i := uint64(0)
	at, first, step := bl.n/2, it.First, it.Next
	if len(bl.lo) == 0 {
		at, first, step = bl.n-1-bl.n/2, it.Last, it.Prev
	}
	for ok := first(); ok; ok = step() {
		if i == at {
			mid = append([]byte(nil), it.Key()[len(yp):]...)
			break
		}
		i++
	}
	if err := it.Close(); err != nil {
		return err
	}
	if mid == nil {
		return fmt.Errorf("materialize: rank block of %d members ends after %d: %w", bl.n, i, codec.ErrCorrupt)
	}
	if err := rb.put(zBlock{hi: mid, lo: bl.lo, n: bl.n / 2}); err != nil {
		return err
	}
	return rb.put(zBlock{hi: bl.hi, lo: mid, n: bl.n - bl.n/2})
}

// zBlockRemove counts the score-index key yk (already deleted) out of its
// block. A block that holds ZBlockMerge or fewer members together with a
// neighbour is merged with it (an emptied block always is: its range joins
// the neighbour's); the last block emptied leaves none.
func zBlockRemove(rb zRankBlocks, yk []byte) error {
	bl, found, err := rb.of(yk[len(rb.bp):])
	if err != nil {
		return err
	}
	if !found || bl.n == 0 {
		return fmt.Errorf("materialize: rank block of a removed member is empty: %w", codec.ErrCorrupt)
	}
	bl.n--
	if bl.n >= ZBlockMerge {
		return rb.put(bl) // too full to merge with any neighbour
	}
	// The block before ends at bl.lo, the one after is the first above
	// bl.hi: forward seeks both.
	var prev, next zBlock
	hasPrev, hasNext := len(bl.lo) > 0, string(bl.hi) != string(codec.ZBlockEnd)
	if hasPrev {
		var ok bool
		if prev, ok, err = rb.at(bl.lo); err != nil {
			return err
		}
		if !ok || string(prev.hi) != string(bl.lo) {
			return fmt.Errorf("materialize: rank block below %q missing: %w", bl.lo, codec.ErrCorrupt)
		}
	}
	if hasNext {
		var ok bool
		if next, ok, err = rb.of(bl.hi); err != nil {
			return err
		}
		if !ok || string(next.lo) != string(bl.hi) {
			return fmt.Errorf("materialize: rank block above %q missing: %w", bl.hi, codec.ErrCorrupt)
		}
	}
	switch {
	case hasPrev && (prev.n+bl.n <= ZBlockMerge || bl.n == 0 && !hasNext):
		if err := rb.del(prev); err != nil {
			return err
		}
		return rb.put(zBlock{hi: bl.hi, lo: prev.lo, n: prev.n + bl.n})
	case hasNext && (bl.n+next.n <= ZBlockMerge || bl.n == 0):
		if err := rb.del(bl); err != nil {
			return err
		}
		return rb.put(zBlock{hi: next.hi, lo: bl.lo, n: bl.n + next.n})
	case bl.n == 0:
		return rb.del(bl) // the only block
	}
	return rb.put(bl)
}
