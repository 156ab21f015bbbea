package materialize

import (
	"bytes"
	"hash/maphash"
	"math/rand/v2"
	"sync"
	"unsafe"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sediment-dev/sediment/codec"
)

// metaCache is an in-memory index of key metadata over the T keys: a
// cache of each key's type, TTL, stream metadata and string value (up to
// 256 KiB, within a byte budget), so that commands usually find them
// without a Pebble lookup.
//
// It holds committed state only. The writer goroutine is its only writer:
// after each group commit it records the metadata the group's events set or
// deleted, and it fills misses from its own Pebble reads (no commit can race
// with those, as the writer makes every commit). Readers never fill it, so a
// reader that read Pebble before a commit cannot put a stale value back.
// FLUSHDB/FLUSHALL clear it; a restart starts it empty.
//
// Cached Meta.Value slices are shared and must not be modified.
type metaCache struct {
	seed   maphash.Seed
	shards [metaCacheShards]metaShard
}

// metaShard is one shard of the cache: an open-addressing table (linear
// probing, deletion by backward shift) of entries that hold their key.
// A lookup of a cached key reads its slot and its entry, where a Go map
// of pointers read the map's control word, its slot, the key's string
// and the entry (392 bytes then): at 100,000 keys, past the processor's
// caches, a lookup took 700–900 ns alone (BenchmarkMetaCache; docs/perf.md,
// "A metadata cache that fits the processor's caches").
type metaShard struct {
	mu sync.RWMutex
	// slots has a power-of-two length, nil until the first entry; at most
	// three quarters are used, so every probe ends at a free slot.
	slots []metaSlot
	n     int // entries in slots
	// copied is the bytes of the values longer than metaCacheMaxValue the
	// shard holds (copies, or requests' arguments kept: View.KeepValue):
	// at most metaCacheCopiedMax/metaCacheShards.
	copied int
	// held lists the entries that hold such copies (cacheEntry.held is 1 +
	// the index). Past the budget a random one of them drops its value and
	// keeps its metadata: the keys whose values do not fit keep their type
	// and TTL in the cache, and small keys are not evicted for large values.
	held []*cacheEntry
}

// metaSlot is a table slot: the hash of its entry's cache key with the
// low bit set (0: a free slot), and the entry.
type metaSlot struct {
	h uint64
	e *cacheEntry
}

// metaKeyInline is the longest cache key (db, then key) an entry holds
// inline; a longer one is a string of its own. 39 key bytes keep an entry
// in a 160-byte allocation.
const metaKeyInline = 40

// cacheEntry is a committed entry: cachedMeta's fields with the stream
// metadata behind a pointer (codec.Meta inline was 360 bytes, most of
// them StreamMeta, zero for other types) and the cache key beside them.
// A stored codec.Meta never has a Ref (putKey keeps such a key without
// its value). TestMetaCacheKeepsEveryField fails when codec.Meta gains a
// field this does not keep.
type cacheEntry struct {
	// The key and the fields a string's lookup reads come first, so that
	// a hit touches as few cache lines as it can.
	klen       uint8 // bytes of the key in short; 0: the key is long
	short      [metaKeyInline]byte
	typ        codec.Type
	exists     bool
	noValue    bool
	ranked     bool
	held       uint32 // 1 + the index in the shard's held list; 0: none
	expireAtMs int64
	seq        uint64
	value      []byte
	count      uint64
	head       int64
	floor      []byte
	stream     *codec.StreamMeta // nil: a zero StreamMeta
	long       string            // the key, when longer than metaKeyInline
}

// keyIs reports whether e's cache key is k.
func (e *cacheEntry) keyIs(k []byte) bool {
	if e.klen == 0 {
		return e.long == string(k)
	}
	return string(e.short[:e.klen]) == string(k)
}

func (e *cacheEntry) setKey(k []byte) {
	if len(k) > 0 && len(k) <= metaKeyInline {
		e.klen = uint8(copy(e.short[:], k))
		return
	}
	e.long = string(k)
}

// set stores m in e (its key and held index unchanged), with value in
// place of m.Value and without m.Ref.
func (e *cacheEntry) set(m *codec.Meta, value []byte, exists, noValue bool, seq uint64) {
	e.expireAtMs, e.seq, e.value, e.count, e.head, e.floor = m.ExpireAtMs, seq, value, m.Count, m.Head, m.Floor
	e.typ, e.exists, e.noValue, e.ranked = m.Type, exists, noValue, m.Ranked
	switch {
	case m.Stream != (codec.StreamMeta{}) && e.stream != nil:
		*e.stream = m.Stream
	case m.Stream != (codec.StreamMeta{}):
		s := m.Stream
		e.stream = &s
	default:
		e.stream = nil
	}
}

// load returns what e holds.
func (e *cacheEntry) load() cachedMeta {
	cm := cachedMeta{exists: e.exists, seq: e.seq, noValue: e.noValue}
	cm.meta = codec.Meta{Type: e.typ, ExpireAtMs: e.expireAtMs, Value: e.value, Count: e.count, Head: e.head, Ranked: e.ranked, Floor: e.floor}
	if e.stream != nil {
		cm.meta.Stream = *e.stream
	}
	return cm
}

type cachedMeta struct {
	meta   codec.Meta
	exists bool
	// seq is the committed sequence the entry is known to hold at: the
	// group that set it, or the last one committed when the writer read
	// it. A read view pinned to an earlier state must not use it.
	seq uint64
	// noValue: a string too large to cache (metaCacheMaxCopied); meta
	// has its type and TTL, a nil Value, and a read that needs the value
	// goes to Pebble.
	noValue bool
	// pend, in the overlay only: 1 + the index in overlay.pend of the
	// key's deferred M-key write, if that entry is still this key's (an
	// index from before the last flushMeta may name another key's).
	pend uint32
}

const (
	metaCacheShards = 64
	// metaCacheShardMax bounds each shard (about 190 bytes an entry with
	// its slots, BenchmarkMetaCache's heap-B/key; 2^18 entries in all);
	// past it random entries are evicted.
	metaCacheShardMax = (1 << 18) / metaCacheShards
	// metaCacheMaxValue is the largest string value cached as the event
	// or read left it (aliased, not copied).
	metaCacheMaxValue = 256
	// splitAboveCached fails to compile unless values of the split form
	// (codec.SplitValueMin, which alias the request) are longer than
	// metaCacheMaxValue: the cache copies them.
	splitAboveCached = uint(codec.SplitValueMin - metaCacheMaxValue)
	// metaCacheMaxCopied is the largest string value the cache holds: one
	// longer than metaCacheMaxValue is copied when its group commits (or
	// kept as the request's argument: View.KeepValue), within
	// metaCacheCopiedMax bytes of such values over all shards (past
	// it, random values of the shard are dropped; their keys' metadata
	// stays). A GET of a value the cache holds makes no Pebble lookup: for
	// 100 KB values that was a third of its CPU, the blob file read
	// (docs/perf.md, "Values up to 4 KiB in the metadata cache" and
	// "Values up to 256 KiB in the metadata cache"). It is a quarter of a
	// shard's budget, so that a shard holds several.
	metaCacheMaxCopied = 256 << 10
	metaCacheCopiedMax = 64 << 20
	// copiedFitsShard fails to compile unless a shard's budget holds four
	// values of metaCacheMaxCopied (putKey relies on one fitting).
	copiedFitsShard = uint(metaCacheCopiedMax/metaCacheShards - 4*metaCacheMaxCopied)
)

func newMetaCache() *metaCache {
	return &metaCache{seed: maphash.MakeSeed()}
}

// hashOf returns the shard of the cache key k (db, then key) and k's hash
// as its slots hold it: the low bits pick the shard, the next ones the
// home slot.
func (c *metaCache) hashOf(k []byte) (*metaShard, uint64) {
	h := maphash.Bytes(c.seed, k)
	return &c.shards[h%metaCacheShards], h | 1
}

// home is the slot where a probe for hash h starts.
func (s *metaShard) home(h uint64) int {
	return int(h/metaCacheShards) & (len(s.slots) - 1)
}

// find returns the slot of the entry of cache key k with hash h, or -1.
func (s *metaShard) find(h uint64, k []byte) int {
	if s.slots == nil {
		return -1
	}
	mask := len(s.slots) - 1
	for i := s.home(h); ; i = (i + 1) & mask {
		sl := &s.slots[i]
		if sl.h == 0 {
			return -1
		}
		if sl.h == h && sl.e.keyIs(k) {
			return i
		}
	}
}

// insert adds e, whose key is not in s, with hash h.
func (s *metaShard) insert(h uint64, e *cacheEntry) {
	if (s.n+1)*4 > len(s.slots)*3 {
		s.grow()
	}
	mask := len(s.slots) - 1
	i := s.home(h)
	for s.slots[i].h != 0 {
		i = (i + 1) & mask
	}
	s.slots[i] = metaSlot{h: h, e: e}
	s.n++
}

// grow doubles the table (16 slots at first).
func (s *metaShard) grow() {
	old := s.slots
	s.slots = make([]metaSlot, max(16, 2*len(old)))
	mask := len(s.slots) - 1
	for _, sl := range old {
		if sl.h == 0 {
			continue
		}
		i := s.home(sl.h)
		for s.slots[i].h != 0 {
			i = (i + 1) & mask
		}
		s.slots[i] = sl
	}
}

// remove deletes the entry in slot i, moving later entries of its probe
// run back so that no probe meets a gap before its entry.
func (s *metaShard) remove(i int) {
	mask := len(s.slots) - 1
	for {
		s.slots[i] = metaSlot{}
		j := i
		for {
			j = (j + 1) & mask
			if s.slots[j].h == 0 {
				s.n--
				return
			}
			// The entry at j may fill i unless its home is cyclically
			// in (i, j].
			home := s.home(s.slots[j].h)
			if i <= j && (home <= i || home > j) || i > j && home <= i && home > j {
				break
			}
		}
		s.slots[i] = s.slots[j]
		i = j
	}
}

// cacheKey returns (db, key) as one cache key, in buf when it fits.
func cacheKey(buf []byte, db uint8, key []byte) []byte {
	return append(append(buf[:0], db), key...)
}

// get returns the cached metadata of (db, key), if cached.
func (c *metaCache) get(db uint8, key []byte) (cachedMeta, bool) {
	var buf [64]byte
	k := cacheKey(buf[:], db, key)
	s, h := c.hashOf(k)
	s.mu.RLock()
	defer s.mu.RUnlock()
	if i := s.find(h, k); i >= 0 {
		return s.slots[i].e.load(), true
	}
	return cachedMeta{}, false
}

// put caches *m (exists false: the key is absent) as of committed
// sequence seq; m is not kept (a pointer spares copying 360 bytes twice).
// Only the writer calls it. m.Value must not alias memory that changes
// later.
func (c *metaCache) put(db uint8, key []byte, m *codec.Meta, exists bool, seq uint64) {
	var buf [64]byte
	c.putKey(cacheKey(buf[:], db, key), m, exists, seq, false)
}

// putKey is put of the cache key k (db, then key). With keep, a value longer
// than metaCacheMaxValue is held as it is rather than copied: it is a
// request's argument the writer was told it may keep (View.KeepValue).
func (c *metaCache) putKey(k []byte, m *codec.Meta, exists bool, seq uint64, keep bool) {
	s, h := c.hashOf(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	value, noValue := m.Value, false
	n := 0 // bytes copied
	switch l := len(m.Value); {
	case exists && !m.Ref.IsZero():
		// A value in the change log, not read (rawMetaOpt without
		// needValue): the entry has the type and TTL only.
		value, noValue = nil, true
	case !exists || l <= metaCacheMaxValue:
	case l <= metaCacheMaxCopied:
		if !keep {
			value = bytes.Clone(m.Value)
		}
		n = l
	default:
		value, noValue = nil, true
	}
	var p *cacheEntry
	if i := s.find(h, k); i >= 0 {
		p = s.slots[i].e
		s.copied -= copiedLen(p)
	} else {
		if s.n >= metaCacheShardMax {
			s.evict(metaCacheShardMax / 16)
		}
		p = new(cacheEntry)
		p.setKey(k)
		s.insert(h, p)
	}
	p.set(m, value, exists, noValue, seq)
	s.copied += n
	switch {
	case n > 0 && p.held == 0:
		s.held = append(s.held, p)
		p.held = uint32(len(s.held))
	case n == 0 && p.held != 0:
		s.unhold(p)
	}
	// p's own value fits (n <= metaCacheMaxCopied, a quarter of the
	// budget), so while the shard is over it others hold values.
	for s.copied > metaCacheCopiedMax/metaCacheShards {
		i := rand.IntN(len(s.held))
		if s.held[i] == p {
			i = (i + 1) % len(s.held)
		}
		s.dropValue(s.held[i])
	}
}

// dropValue removes the copied value of e, a held entry, keeping its
// metadata: a read that needs the value reads it from Pebble.
func (s *metaShard) dropValue(e *cacheEntry) {
	s.copied -= copiedLen(e)
	e.value, e.noValue = nil, true
	s.unhold(e)
}

// unhold removes e from the shard's held list.
func (s *metaShard) unhold(e *cacheEntry) {
	i, last := int(e.held)-1, len(s.held)-1
	s.held[i] = s.held[last]
	s.held[i].held = uint32(i + 1)
	s.held[last] = nil
	s.held = s.held[:last]
	e.held = 0
}

// evict removes n entries picked at random: each the first entry at or
// after a random slot.
func (s *metaShard) evict(n int) {
	mask := len(s.slots) - 1
	for ; n > 0 && s.n > 0; n-- {
		i := rand.IntN(len(s.slots))
		for s.slots[i].h == 0 {
			i = (i + 1) & mask
		}
		e := s.slots[i].e
		s.copied -= copiedLen(e)
		if e.held != 0 {
			s.unhold(e)
		}
		s.remove(i)
	}
}

// copiedLen is the bytes of e's value the shard counts as copied.
func copiedLen(e *cacheEntry) int {
	if n := len(e.value); n > metaCacheMaxValue {
		return n
	}
	return 0
}

func (c *metaCache) clear() {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		s.slots, s.n = nil, 0
		s.copied = 0
		s.held = nil
		s.mu.Unlock()
	}
}

// metaEffect returns the metadata an event leaves for its key, and false
// for events that do not change metadata.
func metaEffect(e codec.Event) (cachedMeta, bool) {
	switch e.Op {
	case codec.OpSetMeta:
		m, err := codec.EventMeta(e)
		if err != nil {
			return cachedMeta{}, false
		}
		// m.Value aliases the event's argument, which nothing changes
		// once built (and DecodeMeta caps it: an append copies). In the
		// split form that is the request's value, valid until the group
		// commits: longer than metaCacheMaxValue, so the committed cache
		// copies it, holds the argument itself when the decision said it
		// may (View.KeepValue), or keeps the key without its value
		// (splitAboveCached).
		return cachedMeta{meta: m, exists: true}, true
	case codec.OpDelKey:
		return cachedMeta{}, true
	}
	return cachedMeta{}, false
}

// publish brings the committed cache c up to the group the overlay
// staged, which committed whole (a group that fails commits nothing), as
// of its last sequence seq: a staged FLUSHDB/FLUSHALL clears c (the
// overlay holds only what was staged after it), then each key staged
// takes its last metadata. It decodes nothing: the overlay holds the
// decoded values.
func (o *overlay) publish(c *metaCache, seq uint64) {
	if o.flushed {
		c.clear()
	}
	for k, i := range o.m {
		cm := &o.ents[i]
		// k is in o.keys, reused by the next group: putKey copies it.
		c.putKey(unsafe.Slice(unsafe.StringData(k), len(k)), &cm.meta, cm.exists, seq, o.kept(cm.meta.Value))
	}
}

// get returns the staged metadata of (db, key), if the group staged any.
func (o *overlay) get(db uint8, key []byte) (cachedMeta, bool) {
	var buf [64]byte
	i, ok := o.m[string(append(append(buf[:0], db), key...))]
	if !ok {
		return cachedMeta{}, false
	}
	return o.ents[i], true
}

// entry returns the staged entry of (db, key), a zero one added if the
// group staged none.
func (o *overlay) entry(db uint8, key []byte) *cachedMeta {
	var buf [64]byte
	if i, ok := o.m[string(append(append(buf[:0], db), key...))]; ok {
		return &o.ents[i]
	}
	start := len(o.keys)
	o.keys = append(append(o.keys, db), key...)
	// The string shares o.keys' array, which only grows (a new array
	// leaves the old one to the strings made from it) until reset.
	k := unsafe.String(&o.keys[start], len(o.keys)-start)
	o.m[k] = int32(len(o.ents))
	o.ents = append(o.ents, cachedMeta{})
	return &o.ents[len(o.ents)-1]
}

// clearEntries forgets every staged entry.
func (o *overlay) clearEntries() {
	clear(o.m)
	clear(o.ents) // they alias requests
	o.ents = o.ents[:0]
	if cap(o.ents) > overlayEntsKept {
		o.ents = nil // a group of many keys does not hold its array for ever
	}
	if cap(o.keys) > overlayKeysKept {
		o.keys = nil
	}
	o.keys = o.keys[:0]
}

// The largest arrays of staged entries (about 1.4 MB) and of their keys'
// bytes an overlay keeps for the next group.
const (
	overlayEntsKept = 4096
	overlayKeysKept = 1 << 20
)

// keepValue notes b, a request's argument, as one the committed cache may
// hold without a copy (View.KeepValue).
func (o *overlay) keepValue(b []byte) {
	if len(b) > metaCacheMaxValue {
		if o.keep == nil {
			o.keep = map[valueAt]struct{}{}
		}
		o.keep[valueAt{&b[0], len(b)}] = struct{}{}
	}
}

// kept reports whether v is exactly an argument keepValue noted in the
// group (its first byte and length).
func (o *overlay) kept(v []byte) bool {
	if len(v) <= metaCacheMaxValue || len(o.keep) == 0 {
		return false
	}
	_, ok := o.keep[valueAt{&v[0], len(v)}]
	return ok
}

// overlay is the metadata staged by the current commit group, seen by the
// group's later decisions before the group commits. Only the writer uses it.
type overlay struct {
	// m indexes ents, the group's staged metadata, by cache key (db, then
	// key), whose bytes are in keys: all three are reused from group to
	// group, so staging a key allocates nothing (a map of cachedMeta,
	// 344 bytes, kept each value in an allocation of its own, and each
	// key was a string of its own).
	m       map[string]int32
	ents    []cachedMeta
	keys    []byte
	flushed bool   // a FLUSHDB/FLUSHALL is staged: the committed cache is stale
	dbBase  *dbMap // the committed db map as the group started
	dbs     *dbMap // the db map after the group's swaps; nil: none staged
	base    uint64 // the last committed sequence as the group started
	// pend holds the group's deferred M-key writes (deferMeta), the last
	// OpSetMeta event of each key, to be written into pendB by flushMeta.
	pend  []codec.Event
	pendB *pebble.Batch
	// keep holds the requests' arguments the group's cache entries may
	// hold without a copy (View.KeepValue), by first byte and length.
	keep map[valueAt]struct{}
	// looked are the group's last lookups of keys the overlay did not
	// hold (noteLooked), a ring: the staging of the event a decision
	// emits for a key it looked up (Store.count: did the key exist, with a
	// TTL?) finds the answer here instead of in the committed cache, whose
	// lookup misses the CPU caches. A key the overlay does not hold has
	// the state it had when the group started, until an event that may
	// change keys without staging their metadata (keepsMeta false: DEL,
	// COPY, FLUSHDB, SWAPDB, ...) is staged: forgetLooked then drops them.
	looked  [16]lookedKey
	lookedN int
}

// lookedKey is a key's existence and deadline as a lookup found it.
type lookedKey struct {
	key        []byte // db, then key; empty: a free slot
	exists     bool
	expireAtMs int64
}

// noteLooked records a lookup of (db, key) that the overlay did not answer.
func (o *overlay) noteLooked(db uint8, key []byte, exists bool, expireAtMs int64) {
	l := &o.looked[o.lookedN%len(o.looked)]
	o.lookedN++
	l.key = append(append(l.key[:0], db), key...)
	l.exists, l.expireAtMs = exists, expireAtMs
}

// lookedUp returns what the group's last lookups found for (db, key), ok
// false when none of them was of it.
func (o *overlay) lookedUp(db uint8, key []byte) (exists bool, expireAtMs int64, ok bool) {
	for i := range o.looked {
		l := &o.looked[i]
		if len(l.key) == 1+len(key) && l.key[0] == db && string(l.key[1:]) == string(key) {
			return l.exists, l.expireAtMs, true
		}
	}
	return false, 0, false
}

// forgetLooked drops the recorded lookups (their buffers kept).
func (o *overlay) forgetLooked() {
	for i := range o.looked {
		o.looked[i].key = o.looked[i].key[:0]
	}
}

func (o *overlay) reset() {
	clear(o.pend) // the events alias requests
	o.pend, o.pendB = o.pend[:0], nil
	clear(o.keep)
	o.clearEntries()
	o.forgetLooked()
	o.flushed = false
	o.dbs = nil
}

// deferMeta stages e, an OpSetMeta event whose TTL keys are in b already
// (applySetMetaTTL), without writing its M key: the overlay answers the
// group's reads of the key's metadata, and the key's last such event is
// written once, by flushMeta, before anything else could read or delete
// M keys in b, and when the group is sealed. A stream, list, hash or set
// written by every command of a group rewrote its M key once per command,
// each version one more memtable insert (docs/perf.md, "One metadata
// write per key and group"). It reports false, staging nothing, for an
// event whose metadata does not decode (stage applies it as it is).
func (o *overlay) deferMeta(b *pebble.Batch, e codec.Event) bool {
	cm, ok := metaEffect(e)
	if !ok {
		return false
	}
	p := o.entry(e.DB, e.Key)
	if old := p.pend; old != 0 && int(old) <= len(o.pend) && o.pend[old-1].DB == e.DB && bytes.Equal(o.pend[old-1].Key, e.Key) {
		cm.pend = old
		o.pend[old-1] = e
	} else {
		o.pend = append(o.pend, e)
		cm.pend = uint32(len(o.pend))
	}
	o.pendB = b
	*p = cm
	return true
}

// flushMeta writes the deferred M keys into their batch. With refs (at
// the group's seal, once each of its records is staged in the change log:
// Store.noteValueRefs), a value that refs locates is written as a
// reference to it (applyMetaRef).
func (o *overlay) flushMeta(refs map[valueAt]codec.ValueRef) error {
	for _, e := range o.pend {
		var err error
		if ref := valueRefOf(refs, e); !ref.IsZero() {
			err = applyMetaRef(o.pendB, e, ref)
		} else {
			err = applyMetaKey(o.pendB, e)
		}
		if err != nil {
			return err
		}
	}
	clear(o.pend)
	o.pend = o.pend[:0]
	return nil
}

func (o *overlay) observe(e codec.Event) {
	switch e.Op {
	case codec.OpSwapDB:
		cur := o.dbs
		if cur == nil {
			cur = o.dbBase
		}
		o.dbs = cur.swapped(e.DB, e.Args[0][0]) // applyEvent checked the args
		return
	case codec.OpFlushDB, codec.OpFlushAll:
		o.clearEntries()
		o.flushed = true
		return
	}
	if cm, ok := metaEffect(e); ok {
		*o.entry(e.DB, e.Key) = cm
	}
}
