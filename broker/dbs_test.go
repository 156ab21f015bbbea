package broker

import (
	"testing"

	"github.com/sediment-dev/sediment/codec"
)

// TestEventDBs: an event before a SWAPDB of the same write names the db it
// was decided in; after it, the swapped one; without swaps, the end map.
func TestEventDBs(t *testing.T) {
	// Storage → logical after the write: dbs 0 and 1 swapped, then 1 and 2.
	end := func(s uint8) uint8 { return map[uint8]uint8{0: 2, 1: 0, 2: 1, 3: 3}[s] }
	events := []codec.Event{
		codec.SetMetaEvent(0, []byte("a"), codec.Meta{Type: codec.TypeString}, 0), // decided in logical 0 (storage 0)
		codec.SwapDBEvent(0, 1),
		codec.SetMetaEvent(0, []byte("b"), codec.Meta{Type: codec.TypeString}, 0), // logical 1 (storage 0)
		codec.SwapDBEvent(1, 2),
		codec.SetMetaEvent(0, []byte("c"), codec.Meta{Type: codec.TypeString}, 0), // logical 2 (storage 0)
		codec.SetMetaEvent(3, []byte("d"), codec.Meta{Type: codec.TypeString}, 0), // untouched db 3
	}
	d := newEventDBs(events, end)
	for i, want := range map[int]uint8{0: 0, 2: 1, 4: 2, 5: 3} {
		if got := d.at(i); got != want {
			t.Errorf("event %d: logical db %d, want %d", i, got, want)
		}
	}
	plain := newEventDBs(events[4:], end)
	if plain.lastSwap != -1 || plain.at(0) != 2 {
		t.Errorf("without swaps: lastSwap %d, db %d", plain.lastSwap, plain.at(0))
	}
}
