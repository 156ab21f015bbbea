package materialize

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/sediment-dev/sediment/codec"
)

// zMembers returns ZADD triples of n new members named prefix%05d, scored
// from first on.
func zMembers(prefix string, first, n int) [][]byte {
	var t [][]byte
	for i := range n {
		t = append(t, fmt.Appendf(nil, "%s%05d", prefix, first+i), codec.ScoreArg(float64(first+i)), nil)
	}
	return t
}

// zCacheMatches fails unless the writer's copy of key's rank blocks is
// held and equals the B keys in Pebble, and the cache's block count is
// the sum over its sets.
func zCacheMatches(t *testing.T, s *Store, db uint8, key, step string) {
	t.Helper()
	bp := codec.KeyPrefix(codec.TagZBlock, db, []byte(key))
	zs := s.zblocks.sets[string(bp)]
	if zs == nil {
		t.Fatalf("%s: %q's blocks are not cached", step, key)
	}
	kvs, err := RawScan(s, bp)
	if err != nil {
		t.Fatal(err)
	}
	if len(kvs) != len(zs.bl) || len(kvs) == 0 {
		t.Fatalf("%s: %q has %d B keys, the cache %d blocks", step, key, len(kvs), len(zs.bl))
	}
	for i, kv := range kvs {
		n, lo, err := codec.DecodeZBlock(kv[1])
		if err != nil {
			t.Fatal(err)
		}
		bl := zs.bl[i]
		if !bytes.Equal(kv[0][len(bp):], bl.hi) || !bytes.Equal(lo, bl.lo) || n != bl.n {
			t.Fatalf("%s: %q block %d: stored %x..%x n %d, cached %x..%x n %d", step, key, i, lo, kv[0][len(bp):], n, bl.lo, bl.hi, bl.n)
		}
	}
	total := 0
	for _, zs := range s.zblocks.sets {
		total += len(zs.bl)
	}
	if total != s.zblocks.blocks {
		t.Fatalf("%s: the cache counts %d blocks and holds %d", step, s.zblocks.blocks, total)
	}
}

// TestZBlockCacheFollowsPebble: the writer's copy of a ranked set's rank
// blocks stays equal to its B keys through splits and merges, and through
// what replaces a set's keys behind it: DEL and a COPY onto a cached set,
// FLUSHDB, and a commit group that fails after changing blocks.
func TestZBlockCacheFollowsPebble(t *testing.T) {
	s := openTemp(t)
	write, must := eventWriters(t, s)
	// A ranked set built from 3000 members (blocks of 1024), written to:
	// loaded, then a split (past ZBlockMax).
	ranked := func(key, prefix string) {
		must(codec.ZAddEvent(0, []byte(key), false, zMembers(prefix, 0, 3000)), codec.ZRanksEvent(0, []byte(key), true, nil))
	}
	ranked("a", "a")
	must(codec.ZAddEvent(0, []byte("a"), true, zMembers("a", 5000, 10)))
	zCacheMatches(t, s, 0, "a", "load")
	must(codec.ZAddEvent(0, []byte("a"), true, zMembers("a", 3000, 1500)))
	zCacheMatches(t, s, 0, "a", "split")
	// Removals down to a merge.
	var pairs [][]byte
	for i := range 1100 { // the first block empties, and goes
		pairs = append(pairs, fmt.Appendf(nil, "a%05d", i), codec.ScoreArg(float64(i)))
	}
	must(codec.ZRemEvent(0, []byte("a"), true, pairs))
	zCacheMatches(t, s, 0, "a", "merge")

	// b cached with other members, then replaced by a copy of a (COPY
	// REPLACE): DEL then COPY in one group.
	ranked("b", "b")
	must(codec.ZAddEvent(0, []byte("b"), true, zMembers("b", 4000, 1)))
	zCacheMatches(t, s, 0, "b", "b")
	must(codec.DelKeyEvent(0, []byte("b"), codec.TypeZSet, 0), codec.CopyKeyEvent(0, []byte("b"), codec.TypeZSet, 0, []byte("a")),
		codec.ZAddEvent(0, []byte("b"), true, zMembers("c", 0, 5)))
	zCacheMatches(t, s, 0, "b", "copy onto a cached set")

	// FLUSHDB, then a set of the same name built again.
	must(codec.FlushDBEvent(0, []uint16{codec.Slot([]byte("a")), codec.Slot([]byte("b"))}))
	if len(s.zblocks.sets) != 0 || s.zblocks.blocks != 0 {
		t.Fatalf("after FLUSHDB the cache holds %d sets, %d blocks", len(s.zblocks.sets), s.zblocks.blocks)
	}
	ranked("a", "d")
	must(codec.ZAddEvent(0, []byte("a"), true, zMembers("e", 0, 5)))
	zCacheMatches(t, s, 0, "a", "after FLUSHDB")

	// A group that fails after changing blocks (a corrupt event after a
	// ranked ZADD that splits): nothing of it reaches Pebble, and the
	// cache it changed is not used again.
	if err := write(codec.ZAddEvent(0, []byte("a"), true, zMembers("f", 0, 1500)), codec.Event{Op: 0x7f, Key: []byte("a")}); err == nil {
		t.Fatal("a group with a corrupt event committed")
	}
	must(codec.ZAddEvent(0, []byte("a"), true, zMembers("g", 0, 5)))
	zCacheMatches(t, s, 0, "a", "after a failed group")
}

// TestZBlockCacheBound: sets that would take the cache past
// zBlockCacheMax blocks are not cached, nor loaded again on their next
// writes, and their writes go on from Pebble.
func TestZBlockCacheBound(t *testing.T) {
	c := newZBlockCache()
	c.blocks = zBlockCacheMax - 1
	s := openTemp(t)
	s.zblocks = c
	if _, err := s.Write(func(*View) ([]codec.Event, error) {
		return []codec.Event{codec.ZAddEvent(0, []byte("z"), false, zMembers("m", 0, 3000)), codec.ZRanksEvent(0, []byte("z"), true, nil),
			codec.ZAddEvent(0, []byte("z"), true, zMembers("n", 0, 10))}, nil
	}); err != nil {
		t.Fatal(err)
	}
	bp := string(codec.KeyPrefix(codec.TagZBlock, 0, []byte("z")))
	if zs, marked := c.sets[bp]; len(c.sets) != 1 || !marked || zs != nil || c.blocks != zBlockCacheMax {
		t.Fatalf("a set of 3 blocks past the bound: %d sets, marked %v, cached %v, %d blocks; want it marked (one block's worth)", len(c.sets), marked, zs != nil, c.blocks)
	}
	// With room again, the marked set is not loaded by its next write.
	c.blocks = 1
	if _, err := s.Write(func(*View) ([]codec.Event, error) {
		return []codec.Event{codec.ZAddEvent(0, []byte("z"), true, zMembers("n", 10, 5))}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if zs := c.sets[bp]; zs != nil || c.blocks != 1 {
		t.Fatalf("a marked set was loaded again: cached %v, %d blocks", zs != nil, c.blocks)
	}
	kvs, err := RawScan(s, codec.KeyPrefix(codec.TagZBlock, 0, []byte("z")))
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, kv := range kvs {
		c, _, err := codec.DecodeZBlock(kv[1])
		if err != nil {
			t.Fatal(err)
		}
		n += c
	}
	if len(kvs) != 3 || n != 3015 {
		t.Fatalf("uncached writes left %d blocks counting %d members, want 3 counting 3015", len(kvs), n)
	}
}
