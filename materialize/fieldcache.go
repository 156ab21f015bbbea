package materialize

import (
	"github.com/sediment-dev/sediment/codec"
)

const (
	// fieldCacheMaxBytes bounds the field cache: its fields, values and
	// an overhead of fieldEntryCost each. Past it, each new entry evicts
	// an entry picked at random.
	fieldCacheMaxBytes = 32 << 20
	// fieldValueMax is the largest hash-field value the cache copies; a
	// larger one is cached as present, value unknown (its Get reads
	// Pebble, its existence check does not).
	fieldValueMax = 64
	// fieldEntryCost is the overhead counted per entry: the map slot with
	// its string header and value, a share of the map's growth, and the
	// allocations' rounding. Measured with 200,000 fields of 20 bytes: the
	// heap held 0.97–1.10 times the count for values of 0 to 64 bytes.
	fieldEntryCost = 80
	// listValueMax is the largest list element the cache copies; a list
	// whose element is larger is not read ahead (fieldColl.noRun).
	listValueMax = 1 << 10
	// listRunMax and listRunBytes bound one read-ahead of a list's
	// elements (View.GetRun): elements, and bytes of values.
	listRunMax   = 32
	listRunBytes = 16 << 10
)

// fieldCache is the writer's cache of collection elements: hash fields
// (H keys, with their values up to fieldValueMax bytes), set members (S)
// and sorted-set members' scores (Z), present or absent, and list
// elements (I, up to listValueMax bytes) read ahead of LPOP and RPOP
// (View.GetRun), by Pebble key.
// Every HSET, SADD and ZADD looks up the field or member it writes: a
// Pebble point lookup that walks the memtable skiplist and consults every
// level's filter, a third of HSET's CPU at `-P 16` and a quarter of
// ZADD's (docs/perf.md, "Fields and members from memory"). The cache
// answers them from memory.
//
// It is a cache over Pebble, owned by the writer goroutine, like
// zBlockCache, with one level that follows the batch the writer stages:
//
//   - every event that writes H, S or Z keys updates it (stage): HSET,
//     HDEL, SADD, SREM, ZADD and ZREM events set entries, as list events
//     do for a list it holds (stageList); DEL and COPY (its destination)
//     drop the key's collections; FLUSHDB, FLUSHALL, SWAPDB and any event
//     kind it does not know drop everything;
//   - a lookup it cannot answer reads the batch (the committed state with
//     the group's staged writes, which the cache already holds) and fills
//     it with what it found;
//   - a group that does not commit leaves it ahead of Pebble: the next
//     group starts from an empty cache (begin).
//
// A collection the writer saw begin empty (View.NoElements: a decision
// found its key absent) is *complete*: every element it has is cached, so
// the lookup of one it does not hold is answered "absent" without Pebble
// (an HSET, SADD or ZADD of a new field or member). It stays complete
// while every write to it passes through stage; evicting one of its
// entries ends it.
//
// Read views (Store.View, ReadView) never use it; a restart starts it
// empty. An entry may outlive its key's expiry: decisions read the
// metadata first and do not look up the fields of an expired key, whose
// deletion (OpDelKey) drops them.
type fieldCache struct {
	colls map[string]*fieldColl // by element-key prefix, codec.KeyPrefix(tag, db, key)
	bytes int                   // counted size of every entry
	max   int                   // bound on bytes: fieldCacheMaxBytes
	dirty bool                  // changed since the last committed group
}

// fieldColl is one collection's cached elements, by field or member (a
// list's by position, codec.ListKey's last 8 bytes).
type fieldColl struct {
	m map[string]fieldVal
	// noRun: a list read ahead met an element over listValueMax; its
	// elements are looked up one at a time.
	noRun bool
	// complete: m holds every element the collection has (present ones;
	// an element m does not hold is absent). Set by empty, cleared when
	// an entry is evicted or dropped.
	complete bool
}

// marked reports whether fc carries a mark (noRun or complete), counted
// as one entry.
func (fc *fieldColl) marked() bool { return fc.noRun || fc.complete }

// fieldVal is one cached element. val is the cache's own copy when known.
type fieldVal struct {
	val           []byte
	exists, known bool // known: val is the stored value (exists only)
}

func newFieldCache() *fieldCache {
	return &fieldCache{colls: map[string]*fieldColl{}, max: fieldCacheMaxBytes}
}

// fieldCached reports whether k is a key the cache holds: an H, S, Z or
// I key.
func fieldCached(k []byte) bool {
	if len(k) == 0 {
		return false
	}
	switch codec.Tag(k[0]) {
	case codec.TagHash, codec.TagSet, codec.TagZMember, codec.TagList:
		return true
	}
	return false
}

// valueMax returns the largest value the cache copies for the collection
// coll.
func valueMax(coll []byte) int {
	if codec.Tag(coll[0]) == codec.TagList {
		return listValueMax
	}
	return fieldValueMax
}

// splitFieldKey returns the collection prefix (tag|slot|db|keylen|key)
// and the field of an element key k; ok is false for a malformed key.
func splitFieldKey(k []byte) (coll, field []byte, ok bool) { return codec.SplitKeyPrefix(k) }

// readsAhead reports whether GetRun may read ahead in the list coll: it
// is not marked as holding elements too large to cache.
func (c *fieldCache) readsAhead(coll []byte) bool {
	fc := c.colls[string(coll)]
	return fc == nil || !fc.noRun
}

// begin starts a commit group: a cache changed by a group that did not
// commit is dropped.
func (c *fieldCache) begin() {
	if c.dirty {
		c.clear()
	}
}

// commit marks the cache in step with Pebble again.
func (c *fieldCache) commit() { c.dirty = false }

func (c *fieldCache) clear() {
	clear(c.colls)
	c.bytes, c.dirty = 0, false
}

// get answers a lookup of the element key k: ok is false when the cache
// does not know k, or (needValue) knows it exists but not its value.
func (c *fieldCache) get(k []byte, needValue bool) (val []byte, exists, ok bool) {
	coll, field, ok := splitFieldKey(k)
	if !ok {
		return nil, false, false
	}
	fc := c.colls[string(coll)]
	if fc == nil {
		return nil, false, false
	}
	e, ok := fc.m[string(field)]
	if !ok {
		return nil, false, fc.complete
	}
	if needValue && e.exists && !e.known {
		return nil, false, false
	}
	return e.val, e.exists, true
}

// empty records that the collection coll has no elements (its key does
// not exist): it becomes complete, holding no entry. What the cache held
// of it is dropped.
func (c *fieldCache) empty(coll []byte) {
	c.dirty = true
	if fc := c.colls[string(coll)]; fc != nil {
		c.dropColl(string(coll), fc)
	}
	fc := &fieldColl{m: map[string]fieldVal{}, complete: true}
	c.colls[string(coll)] = fc
	c.bytes += fieldEntryCost
	if c.bytes > c.max {
		c.evict(fc)
	}
}

// fill records what a lookup of k in the writer's batch found: val is the
// stored value (when known) or nil.
func (c *fieldCache) fill(k, val []byte, exists, known bool) {
	coll, field, ok := splitFieldKey(k)
	if ok {
		c.put(coll, field, val, exists, known)
	}
}

// put sets the entry of field in the collection coll, copying both.
func (c *fieldCache) put(coll, field, val []byte, exists, known bool) {
	c.dirty = true
	if known && len(val) > valueMax(coll) {
		val, known = nil, false
	}
	if known && len(val) > 0 {
		val = append([]byte(nil), val...)
	} else {
		val = nil
	}
	fc := c.colls[string(coll)]
	if fc == nil {
		fc = &fieldColl{m: map[string]fieldVal{}}
		c.colls[string(coll)] = fc
	}
	old, had := fc.m[string(field)]
	if fc.complete && !exists {
		// Absent is what a complete collection answers for what it
		// does not hold.
		if had {
			c.bytes -= len(field) + len(old.val) + fieldEntryCost
			delete(fc.m, string(field))
		}
		return
	}
	if had {
		c.bytes += len(val) - len(old.val)
	} else {
		c.bytes += len(field) + len(val) + fieldEntryCost
		if c.bytes > c.max {
			c.evict(fc)
		}
	}
	fc.m[string(field)] = fieldVal{val: val, exists: exists, known: known}
}

// evict drops entries picked at random (Go's map order) until the cache
// is back under its bound, sparing the collection keep, being written.
func (c *fieldCache) evict(keep *fieldColl) {
	for coll, fc := range c.colls {
		if c.bytes <= c.max {
			return
		}
		if fc == keep {
			continue
		}
		c.dropColl(coll, fc)
	}
	for f, e := range keep.m {
		if c.bytes <= c.max {
			return
		}
		c.bytes -= len(f) + len(e.val) + fieldEntryCost
		delete(keep.m, f)
		if keep.complete {
			keep.complete = false
			c.bytes -= fieldEntryCost
		}
	}
}

// drop forgets field of the collection coll, if cached.
func (c *fieldCache) drop(coll, field []byte) {
	fc := c.colls[string(coll)]
	if fc == nil {
		return
	}
	if e, ok := fc.m[string(field)]; ok {
		c.dirty = true
		c.bytes -= len(field) + len(e.val) + fieldEntryCost
		delete(fc.m, string(field))
		if fc.complete { // (lists, which are never complete, drop elements)
			fc.complete = false
			if !fc.noRun {
				c.bytes -= fieldEntryCost
			}
		}
		if len(fc.m) == 0 && !fc.noRun {
			delete(c.colls, string(coll))
		}
	}
}

// markNoRun marks the list coll as one not to read ahead, counting the
// mark as an entry.
func (c *fieldCache) markNoRun(coll []byte) {
	fc := c.colls[string(coll)]
	if fc == nil {
		fc = &fieldColl{m: map[string]fieldVal{}}
		c.colls[string(coll)] = fc
	}
	if !fc.noRun {
		if !fc.marked() {
			c.bytes += fieldEntryCost
		}
		fc.noRun = true
		c.dirty = true
	}
}

// dropColl forgets one collection.
func (c *fieldCache) dropColl(coll string, fc *fieldColl) {
	for f, e := range fc.m {
		c.bytes -= len(f) + len(e.val) + fieldEntryCost
	}
	if fc.marked() {
		c.bytes -= fieldEntryCost
	}
	delete(c.colls, coll)
}

// forget drops the collections of every type of key (db, key).
func (c *fieldCache) forget(db uint8, key []byte) {
	if len(c.colls) == 0 {
		return
	}
	c.dirty = true
	p := codec.KeyPrefix(codec.TagHash, db, key)
	for _, tag := range [...]codec.Tag{codec.TagHash, codec.TagSet, codec.TagZMember, codec.TagList} {
		p[0] = byte(tag)
		if fc := c.colls[string(p)]; fc != nil {
			c.dropColl(string(p), fc)
		}
	}
}

// stage records the effect of an event the writer staged.
func (c *fieldCache) stage(e codec.Event) {
	a := e.Args
	switch e.Op {
	case codec.OpHSet:
		p := codec.KeyPrefix(codec.TagHash, e.DB, e.Key)
		for i := 0; i+1 < len(a); i += 2 {
			c.put(p, a[i], a[i+1], true, true)
		}
	case codec.OpHDel, codec.OpSRem:
		tag := codec.TagHash
		if e.Op == codec.OpSRem {
			tag = codec.TagSet
		}
		p := codec.KeyPrefix(tag, e.DB, e.Key)
		for _, f := range a {
			c.put(p, f, nil, false, true)
		}
	case codec.OpSAdd:
		p := codec.KeyPrefix(codec.TagSet, e.DB, e.Key)
		for _, m := range a {
			c.put(p, m, nil, true, true)
		}
	case codec.OpZAdd: // ranked flag, then (member, score, old score) triples
		p := codec.KeyPrefix(codec.TagZMember, e.DB, e.Key)
		for i := 1; i+2 < len(a); i += 3 {
			c.put(p, a[i], a[i+1], true, true)
		}
	case codec.OpZRem: // ranked flag, then (member, score) pairs
		p := codec.KeyPrefix(codec.TagZMember, e.DB, e.Key)
		for i := 1; i+1 < len(a); i += 2 {
			c.put(p, a[i], nil, false, true)
		}
	case codec.OpLSet, codec.OpLDel:
		c.stageList(e)
	case codec.OpDelKey, codec.OpCopyKey: // the key's, or the copy's destination's
		c.forget(e.DB, e.Key)
	case codec.OpSetMeta, codec.OpTTLDel, codec.OpZRanks,
		codec.OpXAdd, codec.OpXDel, codec.OpXTrim, codec.OpXNodeSet, codec.OpXNodeDel,
		codec.OpGroupSet, codec.OpGroupDel, codec.OpConsumerSet, codec.OpConsumerDel,
		codec.OpPELSet, codec.OpPELDel, codec.OpIDMPSet, codec.OpIDMPDel, codec.OpIDMPState,
		codec.OpIDMPClear: // no H, S or Z key
	default: // FLUSHDB, FLUSHALL, SWAPDB and any op added later
		if len(c.colls) > 0 {
			c.clear()
		}
	}
}

// stageList records an OpLSet or OpLDel event of a list the cache holds
// elements of (the elements of other lists are not cached as they are
// written: a list enters the cache by a lookup, GetRun's read-ahead
// above all). A set element is cached, replacing any copy; a deleted one
// is dropped; a deletion of more than listPointDeleteMax elements drops
// the list.
func (c *fieldCache) stageList(e codec.Event) {
	if len(c.colls) == 0 {
		return
	}
	coll := codec.KeyPrefix(codec.TagList, e.DB, e.Key)
	fc := c.colls[string(coll)]
	if fc == nil {
		return
	}
	a := e.Args
	first, err := codec.DecodeInt64Arg(a[0]) // applyEvent checked the event
	if err != nil {
		c.dropColl(string(coll), fc)
		return
	}
	var pos [codec.ListPosLen]byte
	if e.Op == codec.OpLSet {
		for i, elem := range a[1:] {
			c.put(coll, codec.AppendListPos(pos[:0], first+int64(i)), elem, true, true)
		}
		return
	}
	last, err := codec.DecodeInt64Arg(a[1])
	if err != nil || last-first >= listPointDeleteMax {
		c.dropColl(string(coll), fc)
		return
	}
	for p := first; p <= last; p++ {
		c.drop(coll, codec.AppendListPos(pos[:0], p))
	}
}
