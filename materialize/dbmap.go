package materialize

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sediment-dev/sediment/codec"
)

// dbMap maps logical dbs (the numbers SELECT, MOVE and SWAPDB name) to
// storage dbs (the db byte that keys and events carry), both ways. It is
// the identity until a SWAPDB; SWAPDB exchanges two entries, so a swap
// costs O(1) whatever the databases hold. A *dbMap is never modified once
// published: a swap makes a new one.
type dbMap struct {
	storage [256]uint8 // logical → storage
	logical [256]uint8 // storage → logical
}

var identityDBs = func() *dbMap {
	m := &dbMap{}
	for i := range m.storage {
		m.storage[i], m.logical[i] = uint8(i), uint8(i)
	}
	return m
}()

// swapped returns a copy of m with the logical dbs a and b exchanged.
func (m *dbMap) swapped(a, b uint8) *dbMap {
	n := *m
	n.storage[a], n.storage[b] = m.storage[b], m.storage[a]
	n.logical[n.storage[a]], n.logical[n.storage[b]] = a, b
	return &n
}

// decodeDBMap reads the value of the D key (codec.DBMapKey).
func decodeDBMap(val []byte) (*dbMap, error) {
	m := *identityDBs
	var seen [256]bool
	if len(val) > len(m.storage) {
		return nil, fmt.Errorf("materialize: db map of %d bytes: %w", len(val), codec.ErrCorrupt)
	}
	for i, s := range val {
		m.storage[i] = s
	}
	for i, s := range m.storage {
		if seen[s] {
			return nil, fmt.Errorf("materialize: db map maps two dbs to storage db %d: %w", s, codec.ErrCorrupt)
		}
		seen[s] = true
		m.logical[s] = uint8(i)
	}
	return &m, nil
}

// encode returns the D key's value: the storage db of each logical db up
// to the last one that is not its own.
func (m *dbMap) encode() []byte {
	n := 0
	for i, s := range m.storage {
		if int(s) != i {
			n = i + 1
		}
	}
	return append([]byte(nil), m.storage[:n]...)
}

// readDBMap reads the db map from r (the identity when absent).
func readDBMap(r pebble.Reader) (*dbMap, error) {
	val, closer, err := r.Get(codec.DBMapKey())
	if errors.Is(err, pebble.ErrNotFound) {
		return identityDBs, nil
	}
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	return decodeDBMap(val)
}

// applySwapDB applies an OpSwapDB event: it reads the map as the batch
// leaves it (so swaps staged earlier in the batch compose) and writes the
// swapped map.
func applySwapDB(b *pebble.Batch, e codec.Event) error {
	if len(e.Args) != 1 || len(e.Args[0]) != 1 {
		return fmt.Errorf("materialize: swapdb event args: %w", codec.ErrCorrupt)
	}
	m, err := readDBMap(b)
	if err != nil {
		return err
	}
	m = m.swapped(e.DB, e.Args[0][0])
	if val := m.encode(); len(val) > 0 {
		return b.Set(codec.DBMapKey(), val, nil)
	}
	return b.Delete(codec.DBMapKey(), nil)
}

// dbs returns the db map v reads through: the commit group's when a swap
// is staged, else the committed one as of v's creation.
func (v *View) dbs() *dbMap {
	if v.staged != nil && v.staged.dbs != nil {
		return v.staged.dbs
	}
	if v.dbm != nil {
		return v.dbm
	}
	return identityDBs
}

// StorageDB returns the storage db of the logical db: the db byte to pass
// to every read and event for a client that selected db (SWAPDB changes
// it). Callers resolve it on the View they read, inside their decision
// for writes, never ahead of it: a write decided after a SWAPDB must land
// in the swapped db.
func (v *View) StorageDB(db uint8) uint8 { return v.dbs().storage[db] }

// LogicalDB returns the logical db whose data lives in storage db s.
func (v *View) LogicalDB(s uint8) uint8 { return v.dbs().logical[s] }

// StorageDB is View.StorageDB on the latest committed map.
func (s *Store) StorageDB(db uint8) uint8 { return s.dbm.Load().storage[db] }

// LogicalDB is View.LogicalDB on the latest committed map.
func (s *Store) LogicalDB(storage uint8) uint8 { return s.dbm.Load().logical[storage] }
