package materialize

import (
	"bytes"
	"slices"

	"github.com/sediment-dev/sediment/codec"
)

// groupCache is the writer's cache of consumer-group values: the group
// (G), consumer (C) and PEL entry (P) keys, by Pebble key. Every
// XREADGROUP and XACK reads its group and consumer, and an XACK the PEL
// entry its XREADGROUP wrote a moment before; each of those was a Pebble
// point lookup (a walk of the memtable skiplist with a cache miss per
// level). The cache answers them from memory. It holds the streams' node
// keys (N) the same way, for the trims of capped streams: a trim reads the
// head node key and the one after it by point lookups (streams,
// nodeEditor.keyAt), and a Pebble read after a trim's range deletion
// re-fragments every range tombstone of the memtable (docs/perf.md, "Trims
// without Pebble reads").
//
// Only the writer goroutine uses it, so it needs no lock: decisions read
// it through the writer's views, and it learns every change from the
// events the writer stages (Store.stage), the same events that produce
// the Pebble keys, so it cannot disagree with them. Two levels keep it
// right while a group is being decided:
//
//   - staged: what the current commit group's events set or deleted, seen
//     by its later decisions; a range deletion of a stream's keys (DEL,
//     RENAME or COPY onto it, XGROUP DESTROY) voids the stream's committed
//     values for the rest of the group, and a FLUSHDB/FLUSHALL all of them.
//   - committed: the values as of the last committed group; publish folds
//     the staged level into it once the group is applied, and a failed
//     group's staged level is dropped by the next beginGroup.
//
// A miss reads Pebble and fills the committed level, unless the staged
// level covers the stream (its read saw staged writes). A read view
// (Store.View, ReadView) never uses the cache. FLUSHDB/FLUSHALL clear it; a
// restart starts it empty. Its size is bounded by groupCacheMax entries:
// past it the committed level is cleared and refills on use.
//
// It also keeps each stream's newest entries (streamTail), learnt from the
// XADD events the writer stages, with the same two levels, for the reads
// of the entries after a group's last-delivered-id.
type groupCache struct {
	committed map[string]*streamVals // by stream: db|keylen|key of the Pebble key
	entries   int                    // group, consumer and PEL values in committed
	nodes     int                    // node-key values in committed (bounded apart: streams never trimmed add them)
	staged    map[string]*streamVals
	flushed   bool // a FLUSHDB/FLUSHALL is staged: the committed level is void

	// tailBytes is the size of the committed tails (streamTail.bytes);
	// tailsVoid: an event the cache does not know staged (COPY, SWAPDB,
	// ...): every committed tail is void.
	tailBytes int
	tailsVoid bool

	// heads are hints of each stream's head node key (its first ID), by
	// stream, for the trims of capped streams: the head's reverse seek
	// (streams, nodeEditor.first) walked every version of the head node
	// key that the memtable held, and an exact MAXLEN rewrites it on
	// every XADD. A hint is only checked and used (View.StreamHeadHint),
	// so it needs no staging: a wrong one costs the seek.
	heads map[string]codec.ID
}

// streamTail is a stream's newest entries, learnt from the OpXAdd events
// the writer staged, so that a read of the entries after a consumer
// group's last-delivered-id (XREADGROUP `>`), which are usually the ones
// added a moment before, needs no Pebble iterator. Every live entry of the
// stream with an ID at or above from is in entries, in ID order: an XADD's
// ID is above every live entry's, so the entries an XADD adds extend the
// tail; a trim drops the entries at or below its last ID (and from moves
// above it); any other event that could remove an entry (XDEL, DEL,
// RENAME, COPY, FLUSHDB, SWAPDB) voids it. A tail keeps at most
// tailMaxBytes of fields, dropping its oldest entries (from moves up); an
// entry larger than that voids it.
type streamTail struct {
	from    codec.ID
	entries []TailEntry // from entries[head] on; the dropped ones before it are zeroed
	head    int
	bytes   int
}

// TailEntry is a stream entry held by the writer's tail cache: the fields
// are the cache's own copy (never modified), as are Trace and DueMs.
type TailEntry struct {
	ID     codec.ID
	Fields [][]byte
	Tail   codec.EntryTail
}

const (
	// tailMaxBytes bounds one stream's tail (fields and overhead);
	// tailsMaxBytes all of them: past it every tail is dropped and they
	// start again from the next XADDs.
	tailMaxBytes  = 64 << 10
	tailsMaxBytes = 16 << 20
	tailEntryCost = 64 // overhead counted per entry and per field
)

// streamVals are one stream's cached values, by the Pebble key's suffix
// after the stream (the group name, then a consumer name or an ID), one
// map per tag.
type streamVals struct {
	g, c, p, n map[string]cachedVal
	// void (staged level only): the group deleted or replaced the stream's
	// group or node keys, so its committed values no longer hold.
	void bool
	// nodeDels (staged level only) are the [from, to] suffix ranges (first
	// IDs) of node keys the group removed with a range deletion: those
	// keys are absent unless n sets them again (a set staged before the
	// deletion was marked absent by it).
	nodeDels [][2]string

	// tail (committed level) is the stream's tail cache. On the staged
	// level, adds are the entries this group's XADDs added, and tailVoid
	// says an event of the group may have removed entries: the committed
	// tail and the adds are dropped at commit.
	tail     *streamTail
	adds     []TailEntry
	tailVoid bool
	// trimTo (with trimmed) is the largest ID this group's trims may have
	// removed: the tail holds nothing at or below it any more.
	trimTo  codec.ID
	trimmed bool
}

type cachedVal struct {
	val    []byte // shared: never modified (an event argument or a copy)
	exists bool
}

// groupTags are the tags of the keys the cache holds, as in a tag list
// (codec.TagsArg).
var groupTags = string([]byte{byte(codec.TagGroup), byte(codec.TagConsumer), byte(codec.TagPEL), byte(codec.TagStreamNode)})

// groupCacheMax bounds the committed level's group, consumer and PEL
// values (a PEL entry is about 150 bytes with its key and the maps'
// overhead: some 10 MiB in all), and apart from them its node keys.
const groupCacheMax = 1 << 16

func newGroupCache() *groupCache {
	return &groupCache{committed: map[string]*streamVals{}, staged: map[string]*streamVals{}, heads: map[string]codec.ID{}}
}

// noteHead records first as stream's head hint; past groupCacheMax hints
// they are all dropped.
func (c *groupCache) noteHead(stream []byte, first codec.ID) {
	if cur, ok := c.heads[string(stream)]; ok && cur == first {
		return
	}
	if len(c.heads) >= groupCacheMax {
		clear(c.heads)
	}
	c.heads[string(stream)] = first
}

// streamOf returns the cache's key of stream (db, key): the db|keylen|key
// part of its Pebble keys.
func streamOf(db uint8, key []byte) []byte {
	return appendStreamOf(nil, db, key)
}

// appendStreamOf is streamOf into b's array (a caller's stack buffer: the
// writer looks tails up for every XADD without allocating).
func appendStreamOf(b []byte, db uint8, key []byte) []byte {
	return codec.AppendKeyPrefix(b, codec.TagGroup, db, key)[3:]
}

// splitGroupKey returns the stream part (db|keylen|key) and the suffix of
// k, a Pebble key tag|slot|db|keylen|key|suffix; ok is false for a tag the
// cache does not hold or a malformed key.
func splitGroupKey(k []byte) (stream, suffix []byte, ok bool) {
	if !groupCached(k) {
		return nil, nil, false
	}
	p, suffix, ok := codec.SplitKeyPrefix(k)
	if !ok {
		return nil, nil, false
	}
	return p[3:], suffix, true
}

// groupCached reports whether k is a key the group cache holds: a group,
// consumer, PEL-entry or stream node key (other keys, large values among
// them, are neither looked up in it nor copied into it).
func groupCached(k []byte) bool {
	if len(k) == 0 {
		return false
	}
	switch codec.Tag(k[0]) {
	case codec.TagGroup, codec.TagConsumer, codec.TagPEL, codec.TagStreamNode:
		return true
	}
	return false
}

func (sv *streamVals) tagMap(tag byte, create bool) map[string]cachedVal {
	p := &sv.p
	switch codec.Tag(tag) {
	case codec.TagGroup:
		p = &sv.g
	case codec.TagConsumer:
		p = &sv.c
	case codec.TagStreamNode:
		p = &sv.n
	}
	if *p == nil && create {
		*p = map[string]cachedVal{}
	}
	return *p
}

// get answers a lookup of k from the cache: ok is false when the cache
// does not know k (Pebble must be read).
func (c *groupCache) get(k []byte) (val []byte, exists, ok bool) {
	stream, suffix, ok := splitGroupKey(k)
	if !ok {
		return nil, false, false
	}
	if sv := c.staged[string(stream)]; sv != nil {
		if e, ok := sv.tagMap(k[0], false)[string(suffix)]; ok {
			return e.val, e.exists, true
		}
		if sv.nodeDeleted(k[0], suffix) {
			return nil, false, true
		}
		if sv.void {
			return nil, false, false
		}
	}
	if c.flushed {
		return nil, false, false
	}
	if sv := c.committed[string(stream)]; sv != nil {
		if e, ok := sv.tagMap(k[0], false)[string(suffix)]; ok {
			return e.val, e.exists, true
		}
	}
	return nil, false, false
}

// fill records what a Pebble lookup of k found (val is the caller's copy,
// kept), when it is the committed state: nothing of the current group
// covers k's stream.
func (c *groupCache) fill(k, val []byte, exists bool) {
	if c.flushed {
		return
	}
	stream, suffix, ok := splitGroupKey(k)
	if !ok {
		return
	}
	if sv := c.staged[string(stream)]; sv != nil {
		if _, ok := sv.tagMap(k[0], false)[string(suffix)]; ok || sv.void || sv.nodeDeleted(k[0], suffix) {
			return
		}
	}
	sv := c.committed[string(stream)]
	if sv == nil {
		sv = &streamVals{}
		c.committed[string(stream)] = sv
	}
	m := sv.tagMap(k[0], true)
	if _, ok := m[string(suffix)]; !ok {
		*c.counter(k[0])++
	}
	m[string(suffix)] = cachedVal{val: val, exists: exists}
}

// counter returns the count of committed values of tag's keys: nodes for
// node keys, entries for the others.
func (c *groupCache) counter(tag byte) *int {
	if codec.Tag(tag) == codec.TagStreamNode {
		return &c.nodes
	}
	return &c.entries
}

// nodeDeleted reports whether a range deletion of this group (nodeDels)
// removed the key of tag and suffix.
func (sv *streamVals) nodeDeleted(tag byte, suffix []byte) bool {
	if codec.Tag(tag) != codec.TagStreamNode {
		return false
	}
	for _, r := range sv.nodeDels {
		if string(suffix) >= r[0] && string(suffix) <= r[1] {
			return true
		}
	}
	return false
}

// size is the number of values sv's maps hold.
func (sv *streamVals) size() int { return len(sv.g) + len(sv.c) + len(sv.p) + len(sv.n) }

// begin starts a commit group: nothing staged.
func (c *groupCache) begin() {
	clear(c.staged)
	c.flushed, c.tailsVoid = false, false
}

// stage records the effect of an event the writer staged.
func (c *groupCache) stage(e codec.Event) {
	c.stageTail(e)
	var kb [160]byte // stageKey keeps copies of the parts of a key it is given
	switch e.Op {
	case codec.OpFlushDB, codec.OpFlushAll:
		clear(c.staged)
		c.flushed = true
	case codec.OpDelKey, codec.OpCopyKey, codec.OpGroupDel:
		// Every group key of the stream (DEL; COPY and RENAME replace the
		// destination's), or of one group: void the stream's values. A
		// deletion or copy of a key without group keys (another type, or
		// metadata alone) voids nothing.
		if e.Op != codec.OpGroupDel && !bytes.ContainsAny(codec.EventTags(e, 3), groupTags) {
			return
		}
		c.staged[string(streamOf(e.DB, e.Key))] = &streamVals{void: true}
	case codec.OpGroupSet:
		if len(e.Args) >= 2 {
			c.stageKey(codec.AppendGroupKey(kb[:0], e.DB, e.Key, e.Args[0]), e.Args[1], true)
		}
	case codec.OpConsumerSet:
		if len(e.Args) >= 3 {
			c.stageKey(codec.AppendConsumerKey(kb[:0], e.DB, e.Key, e.Args[0], e.Args[1]), e.Args[2], true)
		}
	case codec.OpConsumerDel:
		if len(e.Args) >= 2 {
			c.stageKey(codec.AppendConsumerKey(kb[:0], e.DB, e.Key, e.Args[0], e.Args[1]), nil, false)
		}
	case codec.OpXNodeSet:
		if len(e.Args) >= 2 && len(e.Args[0]) == codec.IDLen {
			c.stageKey(append(codec.AppendKeyPrefix(kb[:0], codec.TagStreamNode, e.DB, e.Key), e.Args[0]...), e.Args[1], true)
		}
	case codec.OpXNodeDel:
		if len(e.Args) < 2 || len(e.Args[0]) != codec.IDLen || len(e.Args[1]) != codec.IDLen {
			return // applyEvent refuses the event: the group fails
		}
		if bytes.Equal(e.Args[0], e.Args[1]) {
			c.stageKey(append(codec.AppendKeyPrefix(kb[:0], codec.TagStreamNode, e.DB, e.Key), e.Args[0]...), nil, false)
			return
		}
		sv := c.stagedOf(streamOf(e.DB, e.Key))
		from, to := string(e.Args[0]), string(e.Args[1])
		for k := range sv.n {
			if k >= from && k <= to {
				sv.n[k] = cachedVal{} // deleted
			}
		}
		sv.nodeDels = append(sv.nodeDels, [2]string{from, to})
	case codec.OpPELSet, codec.OpPELDel:
		if len(e.Args) < 3 {
			return
		}
		id, err := codec.DecodeIDArg(e.Args[1])
		if err != nil {
			return // applyEvent refused the event: the group fails
		}
		k := codec.AppendPELKey(kb[:0], e.DB, e.Key, e.Args[0], id)
		if e.Op == codec.OpPELSet {
			c.stageKey(k, e.Args[2], true)
		} else {
			c.stageKey(k, nil, false)
		}
	}
}

// stageTail records what an event does to the stream tails: an XADD's
// entry extends its stream's; events that cannot remove stream entries
// leave them; the others void the tail of their key, or every tail when
// the event is not about one key's entries.
func (c *groupCache) stageTail(e codec.Event) {
	switch e.Op {
	case codec.OpXAdd:
		if len(e.Args) < 1 {
			return
		}
		id, err := codec.DecodeIDArg(e.Args[0])
		if err != nil {
			return // applyEvent refused the event: the group fails
		}
		fv, tail, err := codec.XAddEntry(e.Args[1:])
		if err != nil {
			return
		}
		var sb [96]byte
		stream := appendStreamOf(sb[:0], e.DB, e.Key)
		sv := c.stagedOf(stream)
		if sv.tailVoid {
			return
		}
		// An entry that does not extend the tail (an ID not above its
		// last: never from XADD, which allocates above the stream's last
		// ID) voids it rather than break its order.
		last, ok := c.tailLast(stream, sv)
		if ok && !last.Less(id) {
			sv.tailVoid, sv.adds = true, nil
			return
		}
		sv.adds = append(sv.adds, TailEntry{ID: id, Fields: copyFields(fv), Tail: tail})
	case codec.OpSetMeta, codec.OpXNodeSet, codec.OpXNodeDel, codec.OpGroupSet, codec.OpGroupDel, codec.OpConsumerSet, codec.OpConsumerDel,
		codec.OpPELSet, codec.OpPELDel, codec.OpTTLDel, codec.OpHSet, codec.OpHDel, codec.OpSAdd, codec.OpSRem,
		codec.OpLSet, codec.OpLDel, codec.OpZAdd, codec.OpZRem, codec.OpZRanks,
		codec.OpIDMPSet, codec.OpIDMPDel, codec.OpIDMPState, codec.OpIDMPClear:
		// No stream entry is removed: metadata, nodes' summaries, groups
		// and the other types' elements.
	case codec.OpXTrim:
		// A trim removes entries at or below its largest ID (all of them,
		// or some listed): the tail keeps the entries above it.
		sv := c.tailed(e.DB, e.Key)
		if sv == nil {
			return
		}
		for _, a := range e.Args {
			id, err := codec.DecodeIDArg(a)
			if err != nil {
				sv.tailVoid = true
				return
			}
			if !sv.trimmed || sv.trimTo.Less(id) {
				sv.trimTo, sv.trimmed = id, true
			}
		}
	case codec.OpXDel, codec.OpDelKey:
		if sv := c.tailed(e.DB, e.Key); sv != nil {
			sv.tailVoid = true
		}
	default: // FLUSHDB, FLUSHALL, COPY, SWAPDB and any op added later
		c.tailsVoid = true
	}
}

// tailed returns the staged level of stream (db, key) if the stream has a
// committed tail or staged adds (creating the level), and nil when it has
// no tail: the deletion of a key without one costs no allocation.
func (c *groupCache) tailed(db uint8, key []byte) *streamVals {
	if len(c.committed)+len(c.staged) == 0 {
		return nil
	}
	var sb [96]byte
	stream := appendStreamOf(sb[:0], db, key)
	sv := c.staged[string(stream)]
	if sv != nil && len(sv.adds) > 0 {
		return sv
	}
	if cv := c.committed[string(stream)]; cv == nil || cv.tail == nil {
		return nil
	}
	return c.stagedOf(stream)
}

// tailLast returns the last entry ID the tail of (db, key) holds with its
// staged adds sv; ok is false when it holds none.
func (c *groupCache) tailLast(stream []byte, sv *streamVals) (codec.ID, bool) {
	if n := len(sv.adds); n > 0 {
		return sv.adds[n-1].ID, true
	}
	if sv.void || c.flushed || c.tailsVoid {
		return codec.ID{}, false
	}
	if cv := c.committed[string(stream)]; cv != nil && cv.tail != nil && len(cv.tail.entries) > cv.tail.head {
		return cv.tail.entries[len(cv.tail.entries)-1].ID, true
	}
	return codec.ID{}, false
}

// stagedOf returns the staged level of stream (db|keylen|key), creating
// it.
func (c *groupCache) stagedOf(stream []byte) *streamVals {
	sv := c.staged[string(stream)]
	if sv == nil {
		sv = &streamVals{}
		c.staged[string(stream)] = sv
	}
	return sv
}

// copyFields copies fv into one allocation.
func copyFields(fv [][]byte) [][]byte {
	n := 0
	for _, f := range fv {
		n += len(f)
	}
	buf := make([]byte, 0, n)
	out := make([][]byte, len(fv))
	for i, f := range fv {
		buf = append(buf, f...)
		out[i] = buf[len(buf)-len(f) : len(buf) : len(buf)]
	}
	return out
}

func tailEntrySize(te TailEntry) int {
	n := tailEntryCost
	for _, f := range te.Fields {
		n += len(f) + tailEntryCost
	}
	return n
}

// eachTail calls fn for the entries of the stream (the db|keylen|key of
// its Pebble keys) with IDs at or above start, in order, from the tail
// cache: the committed tail, then this group's adds. ok is false, and fn
// is not called, when the cache does not hold every such entry.
func (c *groupCache) eachTail(stream []byte, start codec.ID, fn func(TailEntry) (bool, error)) (ok bool, err error) {
	if c.flushed || c.tailsVoid {
		return false, nil
	}
	sv := c.staged[string(stream)]
	var adds []TailEntry
	if sv != nil {
		if sv.tailVoid || sv.void {
			return false, nil
		}
		adds = sv.adds
	}
	var t *streamTail
	if cv := c.committed[string(stream)]; cv != nil {
		t = cv.tail
	}
	var from codec.ID
	switch {
	case t != nil:
		from = t.from
	case len(adds) > 0:
		from = adds[0].ID
	default:
		return false, nil
	}
	if sv != nil && sv.trimmed {
		next, ok := sv.trimTo.Next()
		if !ok {
			return false, nil // trimmed up to the largest ID: let Pebble answer
		}
		if from.Less(next) {
			from = next
		}
	}
	if start.Less(from) {
		return false, nil
	}
	var committed []TailEntry
	if t != nil {
		committed = tailFrom(t.entries[t.head:], start)
	}
	for _, part := range [2][]TailEntry{committed, tailFrom(adds, start)} {
		for _, te := range part {
			if more, err := fn(te); err != nil || !more {
				return true, err
			}
		}
	}
	return true, nil
}

// commitTail folds a stream's staged tail into its committed one.
func (c *groupCache) commitTail(stream string, sv *streamVals) {
	cur := c.committed[stream]
	if sv.tailVoid {
		if cur != nil {
			c.dropTail(stream, cur)
		}
		return
	}
	if sv.trimmed && cur != nil && cur.tail != nil {
		c.trimTail(cur.tail, sv.trimTo)
	}
	adds := sv.adds
	if sv.trimmed {
		if next, ok := sv.trimTo.Next(); ok {
			adds = tailFrom(adds, next)
		} else {
			adds = nil // trimmed up to the largest ID: nothing lies above it
		}
	}
	if len(adds) == 0 {
		return
	}
	if cur == nil {
		cur = &streamVals{}
		c.committed[stream] = cur
	}
	t := cur.tail
	if t == nil {
		t = &streamTail{from: adds[0].ID}
		cur.tail = t
	}
	for _, te := range adds {
		n := tailEntrySize(te)
		if n > tailMaxBytes {
			c.dropTail(stream, cur)
			return
		}
		t.entries = append(t.entries, te)
		t.bytes += n
		c.tailBytes += n
	}
	for t.bytes > tailMaxBytes {
		c.dropHead(t)
		t.from = t.entries[t.head].ID
	}
	// Move the live entries down once the dropped ones are half the
	// slice: amortized O(1) a drop, and appends reuse the space.
	if t.head > 0 && t.head >= len(t.entries)/2 {
		n := copy(t.entries, t.entries[t.head:])
		clear(t.entries[n:])
		t.entries, t.head = t.entries[:n], 0
	}
}

// tailFrom returns the entries of es (in ID order) at or above id.
func tailFrom(es []TailEntry, id codec.ID) []TailEntry {
	i, _ := slices.BinarySearchFunc(es, id, func(te TailEntry, id codec.ID) int { return te.ID.Compare(id) })
	return es[i:]
}

// dropHead drops t's oldest entry (its start is the caller's to move).
func (c *groupCache) dropHead(t *streamTail) {
	n := tailEntrySize(t.entries[t.head])
	t.bytes -= n
	c.tailBytes -= n
	t.entries[t.head] = TailEntry{}
	t.head++
}

// trimTail drops t's entries at or below id, and moves its start above
// id: a trim that listed some IDs may have left others below it, which the
// tail no longer claims to hold.
func (c *groupCache) trimTail(t *streamTail, id codec.ID) {
	for t.head < len(t.entries) && !id.Less(t.entries[t.head].ID) {
		c.dropHead(t)
	}
	if next, ok := id.Next(); ok && t.from.Less(next) {
		t.from = next
	}
	if t.head == len(t.entries) {
		t.entries, t.head = t.entries[:0], 0
	}
}

// dropTail forgets the committed tail of stream, whose committed values
// are sv, and sv itself when it holds nothing else: streams that were only
// appended to leave no entry behind.
func (c *groupCache) dropTail(stream string, sv *streamVals) {
	if sv.tail != nil {
		c.tailBytes -= sv.tail.bytes
		sv.tail = nil
	}
	if sv.size() == 0 {
		delete(c.committed, stream)
	}
}

// dropTails forgets every committed tail.
func (c *groupCache) dropTails() {
	for stream, sv := range c.committed {
		c.dropTail(stream, sv)
	}
	c.tailBytes = 0
}

func (c *groupCache) stageKey(k, val []byte, exists bool) {
	stream, suffix, ok := splitGroupKey(k)
	if ok {
		sv := c.staged[string(stream)]
		if sv == nil {
			sv = &streamVals{}
			c.staged[string(stream)] = sv
		}
		sv.tagMap(k[0], true)[string(suffix)] = cachedVal{val: val, exists: exists}
	}
}

// dropNodes forgets every committed node key (past groupCacheMax of
// them), keeping the group values and tails.
func (c *groupCache) dropNodes() {
	for stream, sv := range c.committed {
		sv.n = nil
		if sv.size() == 0 && sv.tail == nil {
			delete(c.committed, stream)
		}
	}
	c.nodes = 0
}

// commitNodeDels forgets the committed node keys of stream (whose
// committed values are cur) in ranges, a group's range deletions
// (nodeDels).
func (c *groupCache) commitNodeDels(stream string, cur *streamVals, ranges [][2]string) {
	for k := range cur.n {
		for _, r := range ranges {
			if k >= r[0] && k <= r[1] {
				delete(cur.n, k)
				c.nodes--
				break
			}
		}
	}
	if cur.size() == 0 && cur.tail == nil {
		delete(c.committed, stream)
	}
}

// commit folds the staged level into the committed one: the group is
// applied.
func (c *groupCache) commit() {
	if c.flushed {
		clear(c.committed)
		clear(c.heads)
		c.entries, c.nodes = 0, 0
		c.tailBytes = 0
	}
	if c.tailsVoid {
		c.dropTails()
	}
	for stream, sv := range c.staged {
		cur := c.committed[stream]
		if sv.void && cur != nil {
			c.entries -= len(cur.g) + len(cur.c) + len(cur.p)
			c.nodes -= len(cur.n)
			cur.g, cur.c, cur.p, cur.n = nil, nil, nil, nil
			c.dropTail(stream, cur) // and the entry, now empty
			cur = nil
		}
		if cur != nil && len(sv.nodeDels) > 0 {
			c.commitNodeDels(stream, cur, sv.nodeDels)
			cur = c.committed[stream]
		}
		if !c.tailsVoid {
			c.commitTail(stream, sv)
			cur = c.committed[stream]
		}
		if sv.size() == 0 {
			continue // nothing to keep: no empty entry
		}
		if cur == nil {
			cur = &streamVals{}
			c.committed[stream] = cur
		}
		for _, tm := range [...]struct {
			tag byte
			m   map[string]cachedVal
		}{{byte(codec.TagGroup), sv.g}, {byte(codec.TagConsumer), sv.c}, {byte(codec.TagPEL), sv.p}, {byte(codec.TagStreamNode), sv.n}} {
			if len(tm.m) == 0 {
				continue
			}
			dst, n := cur.tagMap(tm.tag, true), c.counter(tm.tag)
			for k, e := range tm.m {
				_, had := dst[k]
				switch {
				case e.exists:
					if !had {
						*n++
					}
					dst[k] = e
				case had: // deleted: forgotten (a miss reads Pebble)
					delete(dst, k)
					*n--
				}
			}
		}
	}
	c.begin()
	if c.entries > groupCacheMax {
		clear(c.committed)
		c.entries, c.nodes, c.tailBytes = 0, 0, 0
	}
	if c.nodes > groupCacheMax {
		c.dropNodes()
	}
	if c.tailBytes > tailsMaxBytes {
		c.dropTails()
	}
}
