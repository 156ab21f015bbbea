package materialize

import (
	"fmt"
	"testing"

	"github.com/sediment-dev/sediment/codec"
)

// TestGroupCacheHoldsNothingForOtherKeys: deleting keys of other types
// (strings, or metadata alone) voids nothing and leaves no entry behind,
// and a stream voided without values leaves no empty entry: the cache's
// size follows the group values it holds, not the keys deleted.
func TestGroupCacheHoldsNothingForOtherKeys(t *testing.T) {
	c := newGroupCache()
	for i := range 1000 {
		c.begin()
		k := []byte(fmt.Sprintf("k%d", i))
		c.stage(codec.DelKeyEvent(0, k, codec.TypeString, 0))
		c.stage(codec.DelMetaEvent(0, k, 0))
		c.stage(codec.DelKeyEvent(0, append(k, 's'), codec.TypeStream, 0))
		if i == 0 && len(c.staged) != 1 {
			t.Fatalf("staged %d streams after deleting a string, metadata and a stream; want 1 (the stream)", len(c.staged))
		}
		c.commit()
	}
	if len(c.committed) != 0 || c.entries != 0 {
		t.Fatalf("committed %d streams, %d values after deleting 3000 keys; want none", len(c.committed), c.entries)
	}
	// A stream with values, deleted: its entry goes.
	c.begin()
	c.stage(codec.GroupSetEvent(0, []byte("s"), []byte("g"), codec.Group{}))
	c.commit()
	if len(c.committed) != 1 || c.entries != 1 {
		t.Fatalf("committed %d streams, %d values; want 1, 1", len(c.committed), c.entries)
	}
	c.begin()
	c.stage(codec.DelKeyEvent(0, []byte("s"), codec.TypeStream, 0))
	c.commit()
	if len(c.committed) != 0 || c.entries != 0 {
		t.Fatalf("after DEL: committed %d streams, %d values; want none", len(c.committed), c.entries)
	}
}

// TestStreamTailsLeaveNothingBehind: tails of many streams, each appended
// to once, stay within tailsMaxBytes, and dropping them (past the bound, or
// on an event the cache does not know) leaves no empty stream entry.
func TestStreamTailsLeaveNothingBehind(t *testing.T) {
	c := newGroupCache()
	big := make([]byte, 4<<10)
	for i := range 20_000 {
		c.begin()
		c.stage(codec.XAddEvent(0, []byte(fmt.Sprintf("s%d", i)), codec.ID{Ms: 1}, [][]byte{[]byte("f"), big}))
		c.commit()
		if c.tailBytes > tailsMaxBytes {
			t.Fatalf("after %d streams: %d bytes of tails, bound %d", i+1, c.tailBytes, tailsMaxBytes)
		}
	}
	if n := len(c.committed); n == 0 || n*len(big) > 2*tailsMaxBytes {
		t.Fatalf("%d streams cached after 20,000 of 4 KiB: want some, and no more than the bound holds", n)
	}
	c.begin()
	c.stage(codec.CopyKeyEvent(0, []byte("dst"), codec.TypeString, 0, []byte("src")))
	c.commit()
	if len(c.committed) != 0 || c.tailBytes != 0 {
		t.Fatalf("after a COPY: %d streams, %d bytes of tails; want none", len(c.committed), c.tailBytes)
	}
	// Deleting keys without tails stages nothing for the tails.
	c.begin()
	c.stage(codec.XAddEvent(0, []byte("s"), codec.ID{Ms: 1}, [][]byte{[]byte("f"), []byte("v")}))
	c.commit()
	c.begin()
	c.stage(codec.DelKeyEvent(0, []byte("str"), codec.TypeString, 0))
	if len(c.staged) != 0 {
		t.Fatalf("a string's deletion staged %d streams", len(c.staged))
	}
	c.stage(codec.DelKeyEvent(0, []byte("s"), codec.TypeStream, 0))
	c.commit()
	if len(c.committed) != 0 {
		t.Fatalf("the stream's deletion left %d streams", len(c.committed))
	}
}

// TestGroupCacheNodesBoundedApart: node keys, which streams never trimmed
// keep adding, are bounded on their own: past groupCacheMax of them they
// are dropped, and the group values stay.
func TestGroupCacheNodesBoundedApart(t *testing.T) {
	c := newGroupCache()
	c.begin()
	c.stage(codec.GroupSetEvent(0, []byte("s"), []byte("g"), codec.Group{}))
	c.commit()
	for i := range groupCacheMax + 10 {
		c.begin()
		first := codec.ID{Ms: uint64(i + 1)}
		c.stage(codec.XNodeSetEvent(0, []byte("s"), codec.StreamNode{First: first, Last: first, Count: 1, Live: 1}))
		c.commit()
		if c.nodes > groupCacheMax {
			t.Fatalf("after %d node keys: %d held", i+1, c.nodes)
		}
	}
	if c.entries != 1 || c.nodes == 0 || c.nodes > 10 {
		t.Fatalf("%d group values, %d node keys; want 1 and the few set after the drop", c.entries, c.nodes)
	}
	if _, exists, ok := c.get(codec.GroupKey(0, []byte("s"), []byte("g"))); !ok || !exists {
		t.Fatal("the group value was dropped with the node keys")
	}
	if _, _, ok := c.get(codec.StreamNodeKey(0, []byte("s"), codec.ID{Ms: 1})); ok {
		t.Fatal("a node key set before the drop is still held")
	}
	if _, exists, ok := c.get(codec.StreamNodeKey(0, []byte("s"), codec.ID{Ms: groupCacheMax + 10})); !ok || !exists {
		t.Fatal("the last node key set is not held")
	}
}
