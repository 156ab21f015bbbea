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
