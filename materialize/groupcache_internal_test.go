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
