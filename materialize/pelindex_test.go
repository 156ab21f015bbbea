package materialize

import (
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sediment-dev/sediment/codec"
)

// TestPELIndexKeysVanishAtFlush: deliveries acknowledged within one
// memtable's life leave one tombstone each on disk (their P key's), not
// three: the Q and W keys go with SingleDelete (apply.go), which a flush
// drops together with the Set it meets. Re-deliveries in between (to
// another consumer, to the same consumer at the same time, after a NACK)
// change nothing, and Pebble reports no SingleDelete misuse.
func TestPELIndexKeysVanishAtFlush(t *testing.T) {
	s, err := Open(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	key, group := []byte("s\x00k"), []byte("g")
	alice, bob := []byte("alice"), []byte("") // a consumer may be named ""
	write := func(evs ...codec.Event) {
		t.Helper()
		if _, err := s.Write(func(*View) ([]codec.Event, error) { return evs, nil }); err != nil {
			t.Fatal(err)
		}
	}
	const n = 400
	for i := range n {
		id := codec.ID{Ms: uint64(i + 1)}
		pe := codec.PELEntry{DeliveryTimeMs: int64(1000 + i), DeliveryCount: 1, Consumer: alice}
		write(codec.PELSetEvent(0, key, group, id, pe, nil))
		prev := pe
		switch i % 4 {
		case 1: // claimed by another consumer, later
			pe = codec.PELEntry{DeliveryTimeMs: prev.DeliveryTimeMs + 5, DeliveryCount: 2, Consumer: bob}
			write(codec.PELSetEvent(0, key, group, id, pe, &prev))
		case 2: // re-delivered to its owner in the same millisecond: the same Q and W keys
			pe.DeliveryCount++
			write(codec.PELSetEvent(0, key, group, id, pe, &prev))
		case 3: // NACKed (no owner, no Q key), then delivered again
			pe = codec.PELEntry{DeliveryTimeMs: prev.DeliveryTimeMs, DeliveryCount: 1, NackSeq: uint64(i + 1)}
			write(codec.PELSetEvent(0, key, group, id, pe, &prev))
			prev = pe
			pe = codec.PELEntry{DeliveryTimeMs: prev.DeliveryTimeMs + 7, DeliveryCount: 2, Consumer: alice}
			write(codec.PELSetEvent(0, key, group, id, pe, &prev))
		}
		write(codec.PELDelEvent(0, key, group, id, pe))
	}
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	tables, err := s.db.SSTables(pebble.WithProperties())
	if err != nil {
		t.Fatal(err)
	}
	var deletions, entries uint64
	for _, level := range tables {
		for _, tb := range level {
			deletions += tb.Properties.NumDeletions
			entries += tb.Properties.NumEntries
		}
	}
	// One P tombstone per delivery, and one more per NACKed entry
	// re-delivered: its OpPELSet names the previous owner "" (no owner),
	// whose Q key does not exist, so that SingleDelete meets no Set and
	// stays until it reaches the last level. With Delete: 1,700.
	if want := uint64(n + n/4); deletions != want {
		t.Fatalf("%d tombstones on disk (%d entries) for %d acknowledged deliveries: want %d", deletions, entries, n, want)
	}
	if m := s.StorageStats().SingleDeleteMisuses; m != 0 {
		t.Fatalf("%d SingleDelete misuses", m)
	}
}
