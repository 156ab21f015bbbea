package materialize

import (
	"bytes"
	"fmt"
	"sort"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sediment-dev/sediment/codec"
)

// zBlockCacheMax is the most rank blocks the writer keeps in memory, over
// all sets: about 64 million members' worth (a block holds 512 to 2048),
// and about 10 MiB with 30-byte fences. A set that would take the cache
// past it is not cached: its writes seek Pebble as before.
const zBlockCacheMax = 1 << 16

// zBlockCache is the writer's copy of the rank blocks (B keys,
// docs/key-format.md §3.6c) of the ranked sorted sets it has written: per
// set, every block in fence order. A ZADD or ZREM of a large set finds the
// block of each member it counts in or out here instead of with a Pebble
// iterator's seek, which visits every LSM level and the block key's many
// versions in the memtable (docs/perf.md, "Rank blocks from memory").
//
// It is a cache over Pebble, owned by the writer goroutine, and follows
// the batch the writer stages: a set is loaded from the batch the first
// time a group applies a ranked event to it, and every rank-block write of
// zrank.go updates it with the batch. A group that does not commit leaves
// it out of step with Pebble, so the next group starts from an empty cache
// (begin); events that delete or replace a set's keys other than through
// zrank.go drop that set (stage), and those that reach many keys (FLUSHDB,
// FLUSHALL, SWAPDB, and any event kind it does not know) drop every set.
type zBlockCache struct {
	// sets is by B-key prefix (codec.KeyPrefix(TagZBlock, db, key)); a
	// nil entry marks a set loaded once and found too large for the
	// bound, which is not loaded again until dropped.
	sets   map[string]*zBlocks
	blocks int  // blocks held over all sets, plus one per nil entry
	dirty  bool // used since the last committed group
}

// zBlocks is one set's rank blocks in ascending order of upper fence
// (codec.ZBlockEnd, the last block's, sorts above every score-index
// suffix).
type zBlocks struct {
	bl []zBlock
}

func newZBlockCache() *zBlockCache {
	return &zBlockCache{sets: map[string]*zBlocks{}}
}

// begin starts a commit group: a cache the last group used without
// committing is dropped.
func (c *zBlockCache) begin() {
	if c.dirty {
		c.clear()
	}
}

// commit marks the cache in step with Pebble again.
func (c *zBlockCache) commit() { c.dirty = false }

func (c *zBlockCache) clear() {
	clear(c.sets)
	c.blocks, c.dirty = 0, false
}

// forget drops the set whose B keys start with bp.
func (c *zBlockCache) forget(bp []byte) {
	if zs, ok := c.sets[string(bp)]; ok {
		c.blocks -= zs.size()
		delete(c.sets, string(bp))
	}
}

// stage drops what an event the writer staged changes of the B keys other
// than through zrank.go, which keeps the cache itself.
func (c *zBlockCache) stage(e codec.Event) {
	switch e.Op {
	case codec.OpZAdd, codec.OpZRem, codec.OpZRanks, // zrank.go
		codec.OpSetMeta, codec.OpTTLDel, codec.OpHSet, codec.OpHDel, codec.OpSAdd, codec.OpSRem,
		codec.OpLSet, codec.OpLDel, codec.OpXAdd, codec.OpXDel, codec.OpXTrim, codec.OpXNodeSet,
		codec.OpXNodeDel, codec.OpGroupSet, codec.OpGroupDel, codec.OpConsumerSet, codec.OpConsumerDel,
		codec.OpPELSet, codec.OpPELDel, codec.OpIDMPSet, codec.OpIDMPDel, codec.OpIDMPState,
		codec.OpIDMPClear: // no B key
	case codec.OpDelKey, codec.OpCopyKey: // the key's, or the copy's destination's
		c.forget(codec.KeyPrefix(codec.TagZBlock, e.DB, e.Key))
	default:
		if len(c.sets) > 0 {
			c.clear()
		}
	}
}

// rankBlocks returns the rank blocks of the set whose B keys start with
// bp, as apply reads and writes them: the batch's, with the cache's copy
// when it holds (or can load) the set.
func (c *zBlockCache) rankBlocks(b *pebble.Batch, bp []byte) (zRankBlocks, error) {
	r := zRankBlocks{b: b, bp: bp}
	if c == nil {
		return r, nil
	}
	c.dirty = true
	if zs, ok := c.sets[string(bp)]; ok {
		if zs != nil {
			r.c, r.zc = zs, c
		}
		return r, nil
	}
	if c.blocks >= zBlockCacheMax {
		return r, nil
	}
	zs, err := loadZBlocks(b, bp)
	if err != nil {
		return r, err
	}
	if c.blocks+len(zs.bl) > zBlockCacheMax {
		zs = nil // too large: marked, so that its next writes do not load it again
	} else {
		r.c, r.zc = zs, c
	}
	c.sets[string(bp)] = zs
	c.blocks += zs.size()
	return r, nil
}

// loadZBlocks reads every B key under bp from b. A block key is rewritten
// on every member counted in or out, and its versions in the memtable
// would make each step a walk: it seeks from key to key.
func loadZBlocks(b *pebble.Batch, bp []byte) (*zBlocks, error) {
	it, err := b.NewIter(&pebble.IterOptions{LowerBound: bp, UpperBound: codec.PrefixEnd(bp)})
	if err != nil {
		return nil, err
	}
	zs := &zBlocks{}
	var next []byte
	for ok := it.First(); ok; ok = it.SeekGE(next) {
		n, lo, err := codec.DecodeZBlock(it.Value())
		if err != nil {
			it.Close()
			return nil, err
		}
		hi := bytes.Clone(it.Key()[len(bp):])
		zs.bl = append(zs.bl, zBlock{hi: hi, lo: bytes.Clone(lo), n: n})
		next = append(append(next[:0], it.Key()...), 0)
	}
	if err := it.Close(); err != nil {
		return nil, err
	}
	return zs, nil
}

// zRankBlocks is one set's rank blocks as an apply sees them: the B keys
// in b under bp, and the writer's copy c when the cache holds the set
// (nil: every lookup seeks b).
type zRankBlocks struct {
	b  *pebble.Batch
	bp []byte
	c  *zBlocks
	zc *zBlockCache
}

// at returns the first block whose upper fence is at or above from (a
// score-index suffix), found false when there is none.
func (r zRankBlocks) at(from []byte) (zBlock, bool, error) {
	if r.c == nil {
		return zBlockAt(r.b, r.bp, from)
	}
	i := r.c.search(from)
	if i == len(r.c.bl) {
		return zBlock{}, false, nil
	}
	return r.c.bl[i], true, nil
}

// of returns the block holding the score-index suffix s: the first whose
// upper fence is above s.
func (r zRankBlocks) of(s []byte) (zBlock, bool, error) {
	if r.c == nil {
		return zBlockAt(r.b, r.bp, append(append(make([]byte, 0, len(s)+1), s...), 0))
	}
	i := sort.Search(len(r.c.bl), func(i int) bool { return bytes.Compare(r.c.bl[i].hi, s) > 0 })
	if i == len(r.c.bl) {
		return zBlock{}, false, nil
	}
	return r.c.bl[i], true, nil
}

// ranked reports whether r is a set's rank blocks: the zero zRankBlocks
// stands for a set without them.
func (r zRankBlocks) ranked() bool { return r.b != nil }

// put writes bl's B key, replacing the block of the same upper fence.
// The cache keeps bl's fences: they must not change after.
func (r zRankBlocks) put(bl zBlock) error {
	if err := bl.put(r.b, r.bp); err != nil {
		return err
	}
	if r.c == nil {
		return nil
	}
	i, found := r.c.find(bl.hi)
	if found {
		r.c.bl[i] = bl
		return nil
	}
	r.c.bl = append(r.c.bl, zBlock{})
	copy(r.c.bl[i+1:], r.c.bl[i:])
	r.c.bl[i] = bl
	r.zc.blocks++
	return nil
}

// del deletes bl's B key.
func (r zRankBlocks) del(bl zBlock) error {
	if err := bl.del(r.b, r.bp); err != nil {
		return err
	}
	if r.c == nil {
		return nil
	}
	i, found := r.c.find(bl.hi)
	if !found {
		return fmt.Errorf("materialize: cached rank blocks lack the block ending at %q: %w", bl.hi, codec.ErrCorrupt)
	}
	r.c.bl = append(r.c.bl[:i], r.c.bl[i+1:]...)
	r.zc.blocks--
	return nil
}

// size is what zs counts toward zBlockCacheMax: its blocks, or one for a
// set marked too large (nil).
func (zs *zBlocks) size() int {
	if zs == nil {
		return 1
	}
	return len(zs.bl)
}

// find returns the index of the block whose upper fence is hi, found
// false (and where it would go) when there is none.
func (zs *zBlocks) find(hi []byte) (int, bool) {
	i := zs.search(hi)
	return i, i < len(zs.bl) && bytes.Equal(zs.bl[i].hi, hi)
}

// search returns the index of the first block whose upper fence is at or
// above from.
func (zs *zBlocks) search(from []byte) int {
	return sort.Search(len(zs.bl), func(i int) bool { return bytes.Compare(zs.bl[i].hi, from) >= 0 })
}
