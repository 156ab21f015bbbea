package materialize

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sediment-dev/sediment/codec"
)

// Key counters: per db, the number of stored keys and of those with a TTL,
// so that DBSIZE and INFO keyspace are O(1). As in Redis, a key whose TTL
// has passed counts until it is deleted (by a write that meets it or by
// active expiry).
//
// The writer keeps them: before each event is applied it compares the
// key's stored metadata (through the group's overlay) with what the event
// leaves, and the group's new counts are written under K|db in the same
// batch as the events (docs/key-format.md). Open reads them back; a store
// written before the counters existed has no K keys and is counted once.

// dbCounts are one db's committed counts.
type dbCounts struct{ keys, expires atomic.Int64 }

// counts is the staged side: the group's counts for the dbs it touched.
type stagedCounts struct {
	m        map[uint8]*[2]int64 // db → keys, expires
	flushAll bool                // a FLUSHALL is staged: untouched dbs count 0
}

func (c *stagedCounts) reset() {
	clear(c.m)
	c.flushAll = false
}

// KeyCount returns db's number of stored keys and of those with a TTL, as
// of this View (inside a write: including the group's staged writes).
func (v *View) KeyCount(db uint8) (keys, expires int64) {
	if v.counts == nil {
		return 0, 0
	}
	if v.stagedCounts != nil {
		if c, ok := v.stagedCounts.m[db]; ok {
			return c[0], c[1]
		}
		if v.stagedCounts.flushAll {
			return 0, 0
		}
	}
	return v.counts[db].keys.Load(), v.counts[db].expires.Load()
}

// stagedFor returns the group's counts of db, starting from the committed
// ones.
func (s *Store) stagedFor(db uint8) *[2]int64 {
	c := s.stagedCounts.m[db]
	if c == nil {
		c = &[2]int64{}
		if !s.stagedCounts.flushAll {
			c[0], c[1] = s.counts[db].keys.Load(), s.counts[db].expires.Load()
		}
		s.stagedCounts.m[db] = c
	}
	return c
}

// count adjusts the group's counts for e, which is about to be applied; v
// reads the state before it.
func (s *Store) count(v *View, e codec.Event) error {
	switch e.Op {
	case codec.OpSetMeta, codec.OpDelKey:
		existed, expireAtMs, err := v.existedForCount(e.DB, e.Key)
		if err != nil {
			return err
		}
		c := s.stagedFor(e.DB)
		if existed {
			c[0]--
			if expireAtMs != 0 {
				c[1]--
			}
		}
		if e.Op == codec.OpSetMeta && !existed && s.filters.created(e.DB, e.Key) && s.filters.rebuilding.CompareAndSwap(false, true) {
			s.wg.Add(1)
			go s.rebuildFilter()
		}
		if e.Op == codec.OpSetMeta {
			// Only the deadline matters here: the header's expire-at
			// (docs/key-format.md 5.1); applyEvent checks the rest.
			if len(e.Args) == 0 || len(e.Args[0]) < 10 {
				return fmt.Errorf("materialize: set-meta event without a meta value: %w", codec.ErrCorrupt)
			}
			b := e.Args[0]
			c[0]++
			if binary.BigEndian.Uint64(b[2:10]) != 0 {
				c[1]++
			}
		}
	case codec.OpFlushDB:
		*s.stagedFor(e.DB) = [2]int64{}
	case codec.OpFlushAll:
		clear(s.stagedCounts.m)
		s.stagedCounts.flushAll = true
	}
	return nil
}

// stageCounts writes the group's counts under K|db into b (deleting the K
// key of a db left empty).
func (s *Store) stageCounts(b *pebble.Batch) error {
	if s.stagedCounts.flushAll {
		for db := range s.counts {
			if _, ok := s.stagedCounts.m[uint8(db)]; !ok && s.counts[db].keys.Load() != 0 {
				s.stagedCounts.m[uint8(db)] = &[2]int64{}
			}
		}
	}
	for db, c := range s.stagedCounts.m {
		var err error
		if *c == ([2]int64{}) {
			err = b.Delete(codec.CountKey(db), nil) // an empty db leaves no key
		} else {
			err = b.Set(codec.CountKey(db), appendCounts(nil, c), nil)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// commitCounts publishes the group's counts once it committed.
func (s *Store) commitCounts() {
	for db, c := range s.stagedCounts.m {
		s.counts[db].keys.Store(c[0])
		s.counts[db].expires.Store(c[1])
	}
}

func appendCounts(b []byte, c *[2]int64) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(c[0]))
	return binary.BigEndian.AppendUint64(b, uint64(c[1]))
}

// loadCounts reads the K keys, or counts the stored keys once (and writes
// the K keys) when there are none.
func (s *Store) loadCounts() error {
	found := false
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{byte(codec.TagCount)}, UpperBound: []byte{byte(codec.TagCount) + 1}})
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		k, v := it.Key(), it.Value()
		if len(k) != 2 || len(v) != 16 {
			it.Close()
			return codec.ErrCorrupt
		}
		found = true
		s.counts[k[1]].keys.Store(int64(binary.BigEndian.Uint64(v)))
		s.counts[k[1]].expires.Store(int64(binary.BigEndian.Uint64(v[8:])))
	}
	if err := it.Close(); err != nil || found {
		return err
	}
	// No counters yet: count every T key once.
	var c [256][2]int64
	it, err = s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{byte(codec.TagMeta)}, UpperBound: []byte{byte(codec.TagMeta) + 1}})
	if err != nil {
		return err
	}
	any := false
	for ok := it.First(); ok; ok = it.Next() {
		d, err := codec.DecodeKey(it.Key())
		if err != nil {
			it.Close()
			return err
		}
		m, err := codec.DecodeMeta(it.Value())
		if err != nil {
			it.Close()
			return err
		}
		any = true
		c[d.DB][0]++
		if m.ExpireAtMs != 0 {
			c[d.DB][1]++
		}
	}
	if err := it.Close(); err != nil || !any {
		return err
	}
	b := s.db.NewBatch()
	defer b.Close()
	for db := range c {
		s.counts[db].keys.Store(c[db][0])
		s.counts[db].expires.Store(c[db][1])
		if c[db][0] != 0 {
			if err := b.Set(codec.CountKey(uint8(db)), appendCounts(nil, &c[db]), nil); err != nil {
				return err
			}
		}
	}
	// No WAL (the change log is the store's): a crash before the next
	// flush loses these keys, and the next Open counts again.
	return s.db.Apply(b, pebble.NoSync)
}
