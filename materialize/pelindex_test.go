package materialize

import (
	"bytes"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sediment-dev/sediment/codec"
)

// TestPELIndexKeysVanishAtFlush: deliveries acknowledged within one
// memtable's life leave no tombstone on disk: their P, Q and W keys go
// with SingleDelete (apply.go), which a flush drops together with the Set
// it meets. Re-deliveries in between (to another consumer, to the same
// consumer at the same time, after a NACK) change nothing, and Pebble
// reports no SingleDelete misuse.
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
	// One tombstone per NACKed entry re-delivered: its OpPELSet names the
	// previous owner "" (no owner), whose Q key does not exist, so that
	// SingleDelete meets no Set and stays until it reaches the last level.
	// With Delete for P, Q and W: 1,700; for P alone: 500.
	if want := uint64(n / 4); deletions != want {
		t.Fatalf("%d tombstones on disk (%d entries) for %d acknowledged deliveries: want %d", deletions, entries, n, want)
	}
	if m := s.StorageStats().SingleDeleteMisuses; m != 0 {
		t.Fatalf("%d SingleDelete misuses", m)
	}
}

// TestFormatMigrationCompactsPELKeys: a store from a version that rewrote
// P keys in place (two Sets of one key, in two sstables) is compacted at
// Open before its P keys are removed with SingleDelete, so that an
// acknowledged entry stays gone through flushes and compactions; the
// format flags are recorded, and a second Open does not compact again.
// Pebble compacts nothing on its own here, so the two Sets stay apart
// until the migration or the test's last compaction.
func TestFormatMigrationCompactsPELKeys(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Dir: dir, pebbleOptions: func(po *pebble.Options) { po.DisableAutomaticCompactions = true }}
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	key, group, id := []byte("s"), []byte("g"), codec.ID{Ms: 7}
	first := codec.PELEntry{DeliveryTimeMs: 1000, DeliveryCount: 1, Consumer: []byte("alice")}
	if _, err := s.Write(func(*View) ([]codec.Event, error) {
		return []codec.Event{codec.PELSetEvent(0, key, group, id, first, nil)}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	// What an earlier version's re-delivery left: a second Set of the P
	// key in place, in a later sstable, and no format flags.
	second := codec.PELEntry{DeliveryTimeMs: 2000, DeliveryCount: 2, Consumer: []byte("alice")}
	b := s.db.NewBatch()
	if err := b.Set(codec.PELKey(0, key, group, id), codec.AppendPELEntry(nil, second), nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(codec.FormatKey(), nil); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Apply(b, pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	if s, err = Open(opts); err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	if f, err := readFormat(s.db); err != nil || f != codec.FormatCurrent {
		t.Fatalf("format flags after Open: %#x, %v; want %#x", f, err, codec.FormatCurrent)
	}
	if _, err := s.Write(func(*View) ([]codec.Event, error) {
		return []codec.Event{codec.PELDelEvent(0, key, group, id, second)}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Compact(t.Context(), []byte{0}, []byte{0xff}, false); err != nil {
		t.Fatal(err)
	}
	if v, closer, err := s.db.Get(codec.PELKey(0, key, group, id)); err == nil {
		v = bytes.Clone(v)
		closer.Close()
		t.Fatalf("the acknowledged entry's P key is back after a compaction: %x", v)
	} else if err != pebble.ErrNotFound {
		t.Fatal(err)
	}
	if m := s.StorageStats().SingleDeleteMisuses; m != 0 {
		t.Fatalf("%d SingleDelete misuses", m)
	}

	// Flags recorded: the next Open leaves the tables as they are.
	compactions := s.db.Metrics().Compact.Count
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(opts); err != nil {
		t.Fatal(err)
	}
	if n := s.db.Metrics().Compact.Count; n != 0 {
		t.Errorf("%d compactions at the second Open (the first one's store had made %d)", n, compactions)
	}
}
