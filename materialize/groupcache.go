package materialize

import (
	"bytes"
	"encoding/binary"

	"github.com/sediment-dev/sediment/codec"
)

// groupCache is the writer's cache of consumer-group values: the group
// (G), consumer (C) and PEL entry (P) keys, by Pebble key. Every
// XREADGROUP and XACK reads its group and consumer, and an XACK the PEL
// entry its XREADGROUP wrote a moment before; each of those was a Pebble
// point lookup (a walk of the memtable skiplist with a cache miss per
// level). The cache answers them from memory.
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
type groupCache struct {
	committed map[string]*streamVals // by stream: db|keylen|key of the Pebble key
	entries   int                    // values in committed
	staged    map[string]*streamVals
	flushed   bool // a FLUSHDB/FLUSHALL is staged: the committed level is void
}

// streamVals are one stream's cached values, by the Pebble key's suffix
// after the stream (the group name, then a consumer name or an ID), one
// map per tag.
type streamVals struct {
	g, c, p map[string]cachedVal
	// void (staged level only): the group deleted or replaced the stream's
	// group keys, so its committed values no longer hold.
	void bool
}

type cachedVal struct {
	val    []byte // shared: never modified (an event argument or a copy)
	exists bool
}

// groupTags are the tags of the keys the cache holds, as in a tag list
// (codec.TagsArg).
var groupTags = string([]byte{byte(codec.TagGroup), byte(codec.TagConsumer), byte(codec.TagPEL)})

// groupCacheMax bounds the committed level (a PEL entry is about 150
// bytes with its key and the maps' overhead: some 10 MiB in all).
const groupCacheMax = 1 << 16

func newGroupCache() *groupCache {
	return &groupCache{committed: map[string]*streamVals{}, staged: map[string]*streamVals{}}
}

// splitGroupKey returns the stream part (db|keylen|key) and the suffix of
// k, a Pebble key tag|slot|db|keylen|key|suffix; ok is false for a tag the
// cache does not hold or a malformed key.
func splitGroupKey(k []byte) (stream, suffix []byte, ok bool) {
	if !groupCached(k) || len(k) < 8 {
		return nil, nil, false
	}
	end := 8 + uint64(binary.BigEndian.Uint32(k[4:8]))
	if uint64(len(k)) < end {
		return nil, nil, false
	}
	return k[3:end], k[end:], true
}

// groupCached reports whether k is a key the group cache holds: a group,
// consumer or PEL-entry key (other keys, large values among them, are
// neither looked up in it nor copied into it).
func groupCached(k []byte) bool {
	if len(k) == 0 {
		return false
	}
	switch codec.Tag(k[0]) {
	case codec.TagGroup, codec.TagConsumer, codec.TagPEL:
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
		if _, ok := sv.tagMap(k[0], false)[string(suffix)]; ok || sv.void {
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
		c.entries++
	}
	m[string(suffix)] = cachedVal{val: val, exists: exists}
}

// begin starts a commit group: nothing staged.
func (c *groupCache) begin() {
	clear(c.staged)
	c.flushed = false
}

// stage records the effect of an event the writer staged.
func (c *groupCache) stage(e codec.Event) {
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
		stream := codec.AppendKeyPrefix(nil, codec.TagGroup, e.DB, e.Key)[3:]
		c.staged[string(stream)] = &streamVals{void: true}
	case codec.OpGroupSet:
		if len(e.Args) >= 2 {
			c.stageKey(codec.GroupKey(e.DB, e.Key, e.Args[0]), e.Args[1], true)
		}
	case codec.OpConsumerSet:
		if len(e.Args) >= 3 {
			c.stageKey(codec.ConsumerKey(e.DB, e.Key, e.Args[0], e.Args[1]), e.Args[2], true)
		}
	case codec.OpConsumerDel:
		if len(e.Args) >= 2 {
			c.stageKey(codec.ConsumerKey(e.DB, e.Key, e.Args[0], e.Args[1]), nil, false)
		}
	case codec.OpPELSet, codec.OpPELDel:
		if len(e.Args) < 3 {
			return
		}
		id, err := codec.DecodeIDArg(e.Args[1])
		if err != nil {
			return // applyEvent refused the event: the group fails
		}
		k := codec.PELKey(e.DB, e.Key, e.Args[0], id)
		if e.Op == codec.OpPELSet {
			c.stageKey(k, e.Args[2], true)
		} else {
			c.stageKey(k, nil, false)
		}
	}
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

// commit folds the staged level into the committed one: the group is
// applied.
func (c *groupCache) commit() {
	if c.flushed {
		clear(c.committed)
		c.entries = 0
	}
	for stream, sv := range c.staged {
		cur := c.committed[stream]
		if sv.void && cur != nil {
			c.entries -= len(cur.g) + len(cur.c) + len(cur.p)
			delete(c.committed, stream)
			cur = nil
		}
		if len(sv.g)+len(sv.c)+len(sv.p) == 0 {
			continue // nothing to keep: no empty entry
		}
		if cur == nil {
			cur = &streamVals{}
			c.committed[stream] = cur
		}
		for _, tm := range [...]struct {
			tag byte
			m   map[string]cachedVal
		}{{byte(codec.TagGroup), sv.g}, {byte(codec.TagConsumer), sv.c}, {byte(codec.TagPEL), sv.p}} {
			if len(tm.m) == 0 {
				continue
			}
			dst := cur.tagMap(tm.tag, true)
			for k, e := range tm.m {
				_, had := dst[k]
				switch {
				case e.exists:
					if !had {
						c.entries++
					}
					dst[k] = e
				case had: // deleted: forgotten (a miss reads Pebble)
					delete(dst, k)
					c.entries--
				}
			}
		}
	}
	c.begin()
	if c.entries > groupCacheMax {
		clear(c.committed)
		c.entries = 0
	}
}
