package materialize

import (
	"bytes"
	"errors"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sediment-dev/sediment/codec"
)

// Raw access to the Pebble database under a Store, bypassing the change
// log, the metadata cache, the key counts and every index: for tests that
// corrupt a store on purpose (check_test.go). The writes are not in the
// change log: Close flushes them, and nothing replays them.

// RawGet returns a copy of k's value, and false when k is absent.
func RawGet(s *Store, k []byte) ([]byte, bool, error) {
	v, closer, err := s.db.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer closer.Close()
	return append([]byte{}, v...), true, nil
}

// RawSet sets k to v.
func RawSet(s *Store, k, v []byte) error { return s.db.Set(k, v, pebble.NoSync) }

// RawDelete deletes k.
func RawDelete(s *Store, k []byte) error { return s.db.Delete(k, pebble.NoSync) }

// RawScan returns the keys that start with prefix, in order, with
// copies of their values.
func RawScan(s *Store, prefix []byte) ([][2][]byte, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: codec.PrefixEnd(prefix)})
	if err != nil {
		return nil, err
	}
	var out [][2][]byte
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			return nil, err
		}
		out = append(out, [2][]byte{bytes.Clone(it.Key()), append([]byte{}, v...)})
	}
	return out, errors.Join(it.Error(), it.Close())
}

// GetUncached is v.Get without the writer's group cache: what Pebble (the
// commit group's batch over the committed state) holds at k.
func GetUncached(v *View, k []byte) ([]byte, bool, error) {
	c := v.gcache
	v.gcache = nil
	defer func() { v.gcache = c }()
	return v.Get(k)
}
