package materialize_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
)

// TestSwapDBMap: swaps compose inside a Txn and across commit groups, the
// views of a group see the group's swaps before they commit, and the map
// is stored (a reopened store reads it back). Swapping back to the
// identity removes the stored map.
func TestSwapDBMap(t *testing.T) {
	dir := t.TempDir()
	s, err := materialize.Open(materialize.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	mapping := func(v interface{ StorageDB(uint8) uint8 }) string {
		return fmt.Sprint(v.StorageDB(0), v.StorageDB(1), v.StorageDB(2), v.StorageDB(3))
	}
	var inside []string
	if _, err := s.WriteTxn(func(tx *materialize.Txn) error {
		for _, p := range [][2]uint8{{0, 1}, {1, 2}} {
			if err := tx.Emit(codec.SwapDBEvent(p[0], p[1])); err != nil {
				return err
			}
			inside = append(inside, mapping(tx.View()))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(inside) != "[1 0 2 3 1 2 0 3]" {
		t.Errorf("maps inside the Txn = %v", inside)
	}
	if got := mapping(s.View()); got != "1 2 0 3" {
		t.Errorf("committed map = %s", got)
	}
	if got := s.View().LogicalDB(0); got != 2 {
		t.Errorf("LogicalDB(0) = %d, want 2", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = materialize.Open(materialize.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := mapping(s.View()); got != "1 2 0 3" {
		t.Errorf("map after reopening = %s", got)
	}
	write(t, s, codec.SwapDBEvent(1, 2))
	write(t, s, codec.SwapDBEvent(0, 1))
	if got := mapping(s.View()); got != "0 1 2 3" {
		t.Errorf("map after swapping back = %s", got)
	}
	if ok, err := s.View().Has(codec.DBMapKey()); err != nil || ok {
		t.Errorf("identity map stored: %v %v", ok, err)
	}
	if _, err := s.Write(func(*materialize.View) ([]codec.Event, error) {
		return []codec.Event{{Op: codec.OpSwapDB, DB: 0}}, nil
	}); err == nil {
		t.Error("a swap event without its second db committed")
	}
}

// TestCorruptDBMapRefused: a db map value longer than the 256 dbs it can
// map is a corrupt store at Open, not a panic.
func TestCorruptDBMapRefused(t *testing.T) {
	dir := t.TempDir()
	s, err := materialize.Open(materialize.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := materialize.RawSet(s, codec.DBMapKey(), make([]byte, 300)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err := materialize.Open(materialize.Options{Dir: dir}); !errors.Is(err, codec.ErrCorrupt) {
		if err == nil {
			s.Close()
		}
		t.Fatalf("Open with a 300-byte db map: %v", err)
	}
}
