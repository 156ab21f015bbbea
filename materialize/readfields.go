package materialize

import (
	"hash/maphash"
	"sync"
	"sync/atomic"

	"github.com/sediment-dev/sediment/codec"
)

// readFields is the read views' cache of collection elements: hash fields
// with values of at most readFieldValueMax bytes, set members and sorted-set
// members' scores, present or absent, by Pebble key (H, S and Z keys). A
// read of one it holds (HGET, HMGET, SISMEMBER, ZSCORE, ...) makes no
// Pebble lookup: on a hash held in the memtable that lookup, a seek of
// its skiplist, was half of HGET's CPU at `-P 16` (docs/perf.md, "Fields
// and members for reads").
//
// It holds committed state only; each entry carries the sequence of the
// state it was read or written at, and a read view pinned to an earlier
// state skips it (View.cacheSeq). Only collections that reads asked for
// have a record, so a workload of writes alone pays a shard lock and a
// map lookup per written collection:
//
//   - A read view that read an element from Pebble fills it, as of its
//     pinned state's sequence S, and the collection gets a record; unless
//     a committed write to the collection may have come after S: its
//     record's lastWrite, or without a record its shard's unrecorded (the
//     newest write to any collection of the shard without a record, never
//     read or evicted since). A new record starts with lastWrite at
//     unrecorded, so that no older state fills it either.
//   - When a group commits, before it becomes visible (Store.publish, then
//     committed), the writer records what its events left in the
//     collections with a record (and sets their lastWrite), and raises
//     unrecorded for the others.
//
// Both run under the collection's shard lock, so a fill either sees the
// write (and does not fill) or comes before it (and the write then
// records its own value over the fill's). Events it does not know clear
// it, as do FLUSHDB, FLUSHALL and SWAPDB; DEL and COPY empty the key's
// collections; a restart starts it empty. Lists are not held (a list read
// is a range, and LINDEX reads by position).
//
// Layout: shards by collection (codec.KeyPrefix), each a map of
// collections under a read-write lock, so that a key's deletion touches
// one shard. The bytes held, counted as the writer's field cache counts
// them, are bounded over all shards: past the bound the writer evicts
// whole collections at random, and reads stop filling.
type readFields struct {
	seed   maphash.Seed
	shards [readFieldShards]readFieldShard
	bytes  atomic.Int64
	max    atomic.Int64 // bound on bytes: readFieldsMaxBytes (tests lower it, while readers run)
	next   int          // the shard eviction looks at next (the writer's)
}

type readFieldShard struct {
	mu    sync.RWMutex
	colls map[string]*readColl
	// unrecorded is the newest sequence of a write to a collection of the
	// shard without a record (never read, or evicted since): a fill of
	// such a collection from an older state is not made.
	unrecorded uint64
}

// readColl is the record of a collection a read asked for.
type readColl struct {
	m         map[string]readField
	lastWrite uint64 // no fill from an older state: the last committed write to it, or more
}

// readField is one cached element as the state of sequence seq holds it.
// val is the cache's own copy (nil for set members and absent elements).
type readField struct {
	val    []byte
	seq    uint64
	exists bool
}

const (
	readFieldShards = 64
	// readFieldsMaxBytes bounds the cache, counted as the field cache's
	// bytes are (fieldEntryCost per entry and per collection, plus the
	// collection, field and value bytes).
	readFieldsMaxBytes = 32 << 20
	// readFieldValueMax is the largest hash-field value it holds, as the
	// metadata cache holds string values of up to metaCacheMaxValue
	// without counting them apart: a read of a larger one reads Pebble.
	readFieldValueMax = 256
)

func newReadFields() *readFields {
	c := &readFields{seed: maphash.MakeSeed()}
	c.max.Store(readFieldsMaxBytes)
	for i := range c.shards {
		c.shards[i].colls = map[string]*readColl{}
	}
	return c
}

// readFieldCached reports whether k is a key the read cache may hold: an
// H, S or Z key.
func readFieldCached(k []byte) bool {
	if len(k) == 0 {
		return false
	}
	switch codec.Tag(k[0]) {
	case codec.TagHash, codec.TagSet, codec.TagZMember:
		return true
	}
	return false
}

func (c *readFields) shard(coll []byte) *readFieldShard {
	return &c.shards[maphash.Bytes(c.seed, coll)%readFieldShards]
}

// get answers a read of the element key k by a view that may use entries
// up to sequence seq: ok is false when the cache cannot. val is shared:
// the caller copies it.
func (c *readFields) get(k []byte, seq uint64) (val []byte, exists, ok bool) {
	coll, field, ok := splitFieldKey(k)
	if !ok {
		return nil, false, false
	}
	s := c.shard(coll)
	s.mu.RLock()
	var e readField
	if rc := s.colls[string(coll)]; rc != nil {
		e, ok = rc.m[string(field)]
	} else {
		ok = false
	}
	s.mu.RUnlock()
	if !ok || e.seq > seq {
		return nil, false, false
	}
	return e.val, e.exists, true
}

// fill records what a read view found at k in the state of sequence seq
// (a Pebble read): the element's value (val, when exists; at most
// readFieldValueMax bytes) or its absence. The collection gets a record, so
// that the writer keeps it current.
func (c *readFields) fill(k, val []byte, exists bool, seq uint64) {
	if len(val) > readFieldValueMax {
		return
	}
	coll, field, ok := splitFieldKey(k)
	if !ok || c.bytes.Load()+int64(len(coll)+len(field)+len(val)+2*fieldEntryCost) > c.max.Load() {
		return // the writer alone evicts
	}
	s := c.shard(coll)
	s.mu.Lock()
	defer s.mu.Unlock()
	rc := s.colls[string(coll)]
	if rc == nil {
		if s.unrecorded > seq {
			return // it may have been written after seq
		}
		// Fills from states older than the writes unrecorded were are
		// not made from now on either.
		rc = &readColl{lastWrite: s.unrecorded}
		s.colls[string(coll)] = rc
		c.bytes.Add(int64(len(coll) + fieldEntryCost))
	}
	if rc.lastWrite > seq {
		return // written after seq: the write's value is the one to hold
	}
	if old, ok := rc.m[string(field)]; ok && old.seq >= seq {
		return
	}
	c.set(rc, field, val, exists, seq)
}

// publish records the effects of a committed group's events, as of its
// sequence seq. Only the writer calls it, before the group is visible.
func (c *readFields) publish(events []codec.Event, seq uint64) {
	for _, e := range events {
		a := e.Args
		switch e.Op {
		case codec.OpHSet:
			rc, s := c.written(codec.TagHash, e.DB, e.Key, seq)
			for i := 0; rc != nil && i+1 < len(a); i += 2 {
				if len(a[i+1]) > readFieldValueMax {
					c.drop(rc, a[i]) // a read of its value reads Pebble
				} else {
					c.set(rc, a[i], a[i+1], true, seq)
				}
			}
			s.mu.Unlock()
		case codec.OpHDel, codec.OpSRem, codec.OpSAdd:
			tag := codec.TagSet
			if e.Op == codec.OpHDel {
				tag = codec.TagHash
			}
			rc, s := c.written(tag, e.DB, e.Key, seq)
			for _, f := range a {
				if rc != nil {
					c.set(rc, f, nil, e.Op == codec.OpSAdd, seq)
				}
			}
			s.mu.Unlock()
		case codec.OpZAdd: // ranked flag, then (member, score, old score) triples
			rc, s := c.written(codec.TagZMember, e.DB, e.Key, seq)
			for i := 1; rc != nil && i+2 < len(a); i += 3 {
				c.set(rc, a[i], a[i+1], true, seq)
			}
			s.mu.Unlock()
		case codec.OpZRem: // ranked flag, then (member, score) pairs
			rc, s := c.written(codec.TagZMember, e.DB, e.Key, seq)
			for i := 1; rc != nil && i+1 < len(a); i += 2 {
				c.set(rc, a[i], nil, false, seq)
			}
			s.mu.Unlock()
		case codec.OpDelKey, codec.OpCopyKey: // the key's, or the copy's destination's
			for _, tag := range codec.EventTags(e, 3) {
				switch codec.Tag(tag) {
				case codec.TagHash, codec.TagSet, codec.TagZMember:
					rc, s := c.written(codec.Tag(tag), e.DB, e.Key, seq)
					if rc != nil {
						c.empty(rc)
					}
					s.mu.Unlock()
				}
			}
		case codec.OpSetMeta, codec.OpTTLDel, codec.OpZRanks, codec.OpLSet, codec.OpLDel,
			codec.OpXAdd, codec.OpXDel, codec.OpXTrim, codec.OpXNodeSet, codec.OpXNodeDel,
			codec.OpGroupSet, codec.OpGroupDel, codec.OpConsumerSet, codec.OpConsumerDel,
			codec.OpPELSet, codec.OpPELDel, codec.OpIDMPSet, codec.OpIDMPDel, codec.OpIDMPState,
			codec.OpIDMPClear: // no H, S or Z key
		default: // FLUSHDB, FLUSHALL, SWAPDB and any op added later
			c.clear(seq)
		}
		if c.bytes.Load() > c.max.Load() {
			c.evict()
		}
	}
}

// written notes a committed write of sequence seq to the collection of
// tag of (db, key) and returns its record, nil when it has none, with its
// shard, locked: the caller unlocks it.
func (c *readFields) written(tag codec.Tag, db uint8, key []byte, seq uint64) (*readColl, *readFieldShard) {
	coll := codec.KeyPrefix(tag, db, key)
	s := c.shard(coll)
	s.mu.Lock()
	rc := s.colls[string(coll)]
	if rc == nil {
		s.unrecorded = seq
		return nil, s
	}
	rc.lastWrite = seq
	return rc, s
}

// set records field of rc, copying both. Its shard's lock is held.
func (c *readFields) set(rc *readColl, field, val []byte, exists bool, seq uint64) {
	if rc.m == nil {
		rc.m = map[string]readField{}
	}
	if len(val) > 0 {
		val = append([]byte(nil), val...)
	} else {
		val = nil
	}
	if old, ok := rc.m[string(field)]; ok {
		c.bytes.Add(int64(len(val) - len(old.val)))
	} else {
		c.bytes.Add(int64(len(field) + len(val) + fieldEntryCost))
	}
	rc.m[string(field)] = readField{val: val, seq: seq, exists: exists}
}

// drop forgets field of rc. Its shard's lock is held.
func (c *readFields) drop(rc *readColl, field []byte) {
	if e, ok := rc.m[string(field)]; ok {
		c.bytes.Add(-int64(len(field) + len(e.val) + fieldEntryCost))
		delete(rc.m, string(field))
	}
}

// empty forgets every field of rc. Its shard's lock is held.
func (c *readFields) empty(rc *readColl) {
	n := 0
	for f, e := range rc.m {
		n += len(f) + len(e.val) + fieldEntryCost
	}
	c.bytes.Add(-int64(n))
	rc.m = nil
}

// evict drops collections picked at random (Go's map order, shard after
// shard) until the cache is within its bound. Only the writer calls it,
// holding no shard lock.
func (c *readFields) evict() {
	for range readFieldShards {
		s := &c.shards[c.next]
		c.next = (c.next + 1) % readFieldShards
		s.mu.Lock()
		for coll, rc := range s.colls {
			if c.bytes.Load() <= c.max.Load() {
				break
			}
			s.unrecorded = max(s.unrecorded, rc.lastWrite)
			c.empty(rc)
			c.bytes.Add(-int64(len(coll) + fieldEntryCost))
			delete(s.colls, coll)
		}
		s.mu.Unlock()
		if c.bytes.Load() <= c.max.Load() {
			return
		}
	}
}

// clear forgets everything, at a write of sequence seq that may have
// written any collection.
func (c *readFields) clear(seq uint64) {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		for coll, rc := range s.colls {
			c.empty(rc)
			c.bytes.Add(-int64(len(coll) + fieldEntryCost))
		}
		if len(s.colls) > 0 {
			s.colls = map[string]*readColl{}
		}
		s.unrecorded = seq
		s.mu.Unlock()
	}
}
