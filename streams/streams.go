package streams

import (
	"errors"
	"fmt"
	"math"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
)

// Errors returned by this package. Callers map them to Redis's wire text.
var (
	// ErrIDTooSmall: an explicit XADD ID is not greater than the stream's top item.
	ErrIDTooSmall = errors.New("streams: ID is equal or smaller than the top item")
	// ErrIDZero: XADD was given 0-0.
	ErrIDZero = errors.New("streams: ID must be greater than 0-0")
	// ErrExhausted: the stream's last ID is the maximum ID.
	ErrExhausted = errors.New("streams: last possible ID exhausted")
	// ErrSeqOverflow: "ms-*" with ms equal to the top item's, whose
	// sequence is already the maximum (Redis replies EDOM's text).
	ErrSeqOverflow = errors.New("streams: sequence overflow")
)

// DefaultNodeMaxEntries is Redis's stream-node-max-entries default: the
// most entries a stream node holds (streams/nodes.go), and the node size
// of the entry-count model of streams written before node keys.
const DefaultNodeMaxEntries = 100

// nodeSize returns the node size n stands for: 0 is the default.
func nodeSize(n uint64) uint64 {
	if n == 0 {
		return DefaultNodeMaxEntries
	}
	return n
}

// ceilDiv is ⌈a/b⌉ without overflow.
func ceilDiv(a, b uint64) uint64 {
	q := a / b
	if a%b != 0 {
		q++
	}
	return q
}

// RadixTreeKeys returns XINFO STREAM's radix-tree-keys for a stream: its
// node count (streams/nodes.go). For a stream whose metadata predates node
// state (not yet migrated) it is the entry-count model's figure
// (legacyRadixTreeKeys, n entries a node, 0 for the default).
func RadixTreeKeys(s codec.StreamMeta, n uint64) uint64 {
	if !s.Legacy {
		return s.Nodes
	}
	return legacyRadixTreeKeys(s, n)
}

// legacyRadixTreeKeys is radix-tree-keys in the entry-count model of
// streams written before node keys: the nodes of n entries each,
// numbered from the node origin, that the live entries span. After an XDEL
// inside the live range the live entries are taken to be the last Length
// added, so the figure is an estimate.
func legacyRadixTreeKeys(s codec.StreamMeta, n uint64) uint64 {
	if s.Length == 0 || s.EntriesAdded < s.NodeOrigin {
		return 0
	}
	n = nodeSize(n)
	end := s.EntriesAdded - s.NodeOrigin // entries added since the origin
	start := end - min(s.Length, end)
	return ceilDiv(end, n) - start/n
}

// RadixTreeNodes returns XINFO STREAM's radix-tree-nodes: Redis counts the
// rax's inner nodes too, which depend on the IDs' bytes. Sediment reports
// 1 for no key, 2 for one, and 2 per key plus 2 above that: Redis 7.0 gave
// exactly that for 2 and 3 keys and 24 for 10 keys, 102 for 50 (entries
// added by one client, IDs from the clock).
func RadixTreeNodes(s codec.StreamMeta, n uint64) uint64 {
	switch k := RadixTreeKeys(s, n); k {
	case 0, 1:
		return k + 1
	default:
		return 2*k + 2
	}
}

// Entry is one stream entry. Fields holds field, value, field, value...; it
// is nil for a pending entry that has since been deleted (XREADGROUP history
// replies such entries with a null field list).
type Entry struct {
	ID     codec.ID
	Fields [][]byte
	// Trace is the trace context of the XADD that added it, when that
	// command was traced (docs/telemetry.md); zero otherwise.
	Trace codec.TraceContext
	// DueMs is the entry's due time (Unix ms) when it was added with
	// DELAY or DELIVERAT (delayed delivery); 0 otherwise.
	DueMs int64
}

// Due reports whether e may be delivered at nowMs: it is not delayed, or
// its due time has come.
func (e Entry) Due(nowMs int64) bool { return e.DueMs <= nowMs }

// Meta returns the stream metadata of key, false if key does not exist, and
// materialize.ErrWrongType if key holds another type.
func Meta(v *materialize.View, db uint8, key []byte) (codec.Meta, bool, error) {
	m, ok, err := v.Meta(db, key)
	if err != nil || !ok {
		return m, false, err
	}
	if m.Type != codec.TypeStream {
		return m, false, materialize.ErrWrongType
	}
	return m, true, nil
}

// metaForWrite is Meta for a write decision: expired keys come back absent
// together with the event that removes them.
func metaForWrite(v *materialize.View, db uint8, key []byte) (codec.Meta, bool, []codec.Event, error) {
	m, ok, evs, err := v.MetaForWrite(db, key)
	if err != nil || !ok {
		return m, false, evs, err
	}
	if m.Type != codec.TypeStream {
		return m, false, nil, materialize.ErrWrongType
	}
	return m, true, nil, nil
}

// MetaForWrite is metaForWrite exported for package groups.
func MetaForWrite(v *materialize.View, db uint8, key []byte) (codec.Meta, bool, []codec.Event, error) {
	return metaForWrite(v, db, key)
}

// NewStreamMeta returns the metadata of a new, empty stream.
func NewStreamMeta() codec.Meta { return codec.Meta{Type: codec.TypeStream} }

// Len returns the number of entries in key (XLEN); 0 when key is absent.
// https://redis.io/docs/latest/commands/xlen/
func Len(v *materialize.View, db uint8, key []byte) (uint64, error) {
	m, _, err := Meta(v, db, key)
	return m.Stream.Length, err
}

// Range returns up to count entries (count <= 0: all) with start <= ID <=
// end, ascending, or descending when reverse is set (XRANGE, XREVRANGE).
// It returns nil when start > end. An absent key is an empty range.
// https://redis.io/docs/latest/commands/xrange/
func Range(v *materialize.View, db uint8, key []byte, start, end codec.ID, count int, reverse bool) ([]Entry, error) {
	m, ok, err := Meta(v, db, key)
	if err != nil || !ok {
		return nil, err
	}
	return RangeOf(v, db, key, m, start, end, count, reverse)
}

// RangeOf is Range of the stream whose metadata m the caller has read
// (Meta): one lookup of the key, not two.
func RangeOf(v *materialize.View, db uint8, key []byte, m codec.Meta, start, end codec.ID, count int, reverse bool) ([]Entry, error) {
	var out []Entry
	err := EachInRange(v, db, key, m, start, end, count, reverse, func(e Entry) (bool, error) {
		out = append(out, e.clone())
		return true, nil
	})
	return out, err
}

// EachInRange calls fn for the entries of RangeOf's range, in its order,
// at most count (<= 0: all), until fn returns false or an error
// (returned), without copying them: e's fields are valid only during the
// call (they alias the store's buffers; Entry.clone keeps them). XRANGE
// renders each entry as it comes: collecting them as Entry values cost an
// allocation and the collector's work per entry (docs/perf.md, "Stream
// entries in one buffer each, and XRANGE without them").
func EachInRange(v *materialize.View, db uint8, key []byte, m codec.Meta, start, end codec.ID, count int, reverse bool, fn func(e Entry) (bool, error)) error {
	p, lower, upper, ok := liveBounds(db, key, m.Stream, start, end)
	if !ok {
		return nil
	}
	var fv [][]byte
	n := 0
	return v.Iterate(lower, upper, reverse, func(k, val []byte) (bool, error) {
		id, err := codec.DecodeID(k[len(p):])
		if err != nil {
			return false, err
		}
		var tail codec.EntryTail
		if fv, tail, err = codec.DecodeEntryInto(fv, val); err != nil {
			return false, err
		}
		more, err := fn(Entry{id, fv, tail.Trace, tail.DueMs})
		n++
		return more && (count <= 0 || n < count), err
	})
}

// liveBounds returns the entry-key prefix of key and the iterator bounds of
// the entries with start <= ID <= end, clipped to the stream's live range
// [first ID, last ID]: no iterator ever starts below the first entry, where
// trimmed and deleted history lies (docs/architecture.md, "Bounded cost").
// ok is false when the range holds no entry.
func liveBounds(db uint8, key []byte, s codec.StreamMeta, start, end codec.ID) (p, lower, upper []byte, ok bool) {
	if s.Length == 0 {
		return nil, nil, nil, false
	}
	if start.Less(s.FirstID) {
		start = s.FirstID
	}
	if s.LastID.Less(end) {
		end = s.LastID
	}
	if end.Less(start) {
		return nil, nil, nil, false
	}
	p = codec.KeyPrefix(codec.TagStreamEntry, db, key)
	lower = codec.AppendID(p[:len(p):len(p)], start)
	upper = codec.PrefixEnd(p)
	if next, ok := end.Next(); ok {
		upper = codec.AppendID(p[:len(p):len(p)], next)
	}
	return p, lower, upper, true
}

// After returns up to count entries (count <= 0: all) with ID > after, in
// order: the XREAD and XREADGROUP '>' read.
func After(v *materialize.View, db uint8, key []byte, after codec.ID, count int) ([]Entry, error) {
	start, ok := after.Next()
	if !ok {
		return nil, nil
	}
	return Range(v, db, key, start, codec.MaxID, count, false)
}

// Get returns the entry id of key, and false if it does not exist.
func Get(v *materialize.View, db uint8, key []byte, id codec.ID) (Entry, bool, error) {
	val, ok, err := v.Get(codec.StreamEntryKey(db, key, id))
	if err != nil || !ok {
		return Entry{}, false, err
	}
	fv, tail, err := codec.DecodeEntryTail(val)
	return Entry{id, fv, tail.Trace, tail.DueMs}, err == nil, err
}

// clone returns e with its fields copied, all into one buffer: an
// allocation per field and value cost XRANGE COUNT 100 about a tenth of
// its CPU (docs/perf.md, "Stream entries in one buffer each, and XRANGE
// without them").
func (e Entry) clone() Entry {
	n := 0
	for _, f := range e.Fields {
		n += len(f)
	}
	buf := make([]byte, 0, n)
	fv := make([][]byte, len(e.Fields))
	for i, f := range e.Fields {
		at := len(buf)
		buf = append(buf, f...)
		fv[i] = buf[at:len(buf):len(buf)]
	}
	e.Fields = fv
	return e
}

// firstAfter returns the first entry ID >= from of the stream s, skipping
// IDs in skip; ok is false if there is none.
func firstAfter(v *materialize.View, db uint8, key []byte, s codec.StreamMeta, from codec.ID, skip map[codec.ID]bool) (codec.ID, bool, error) {
	p, lower, upper, ok := liveBounds(db, key, s, from, codec.MaxID)
	if !ok {
		return codec.ID{}, false, nil
	}
	var found codec.ID
	ok = false
	err := v.IterateNoValues(lower, upper, false, func(k []byte) (bool, error) {
		id, err := codec.DecodeID(k[len(p):])
		if err != nil {
			return false, err
		}
		if skip[id] {
			return true, nil
		}
		found, ok = id, true
		return false, nil
	})
	return found, ok, err
}

// Del removes the given entries (XDEL) and returns how many existed.
// https://redis.io/docs/latest/commands/xdel/
func Del(v *materialize.View, db uint8, key []byte, ids []codec.ID) (int, []codec.Event, error) {
	m, ok, evs, err := metaForWrite(v, db, key)
	if err != nil || !ok {
		return 0, evs, err
	}
	d := NewDeleter(v, db, key, m)
	n := 0
	for _, id := range ids {
		found, err := d.Delete(id)
		if err != nil {
			return 0, nil, err
		}
		if found {
			n++
		}
	}
	if n == 0 {
		return 0, nil, nil
	}
	evs, err = d.Finish()
	return n, evs, err
}

// Deleter removes entries of one stream by ID within one decision (XDEL,
// XDELEX, XACKDEL), as Redis's streamDeleteItem: each removed entry raises
// max-deleted-entry-id, and the first entry ID moves on when the first
// entry goes.
type Deleter struct {
	v    *materialize.View
	db   uint8
	key  []byte
	m    codec.Meta
	gone map[codec.ID]bool
	del  []codec.ID
}

// NewDeleter starts deletions from the stream key whose metadata is m.
func NewDeleter(v *materialize.View, db uint8, key []byte, m codec.Meta) *Deleter {
	return &Deleter{v: v, db: db, key: key, m: m}
}

// Delete removes the entry id and reports whether it existed (an ID
// removed earlier in the decision no longer exists).
func (d *Deleter) Delete(id codec.ID) (bool, error) {
	if d.gone[id] {
		return false, nil
	}
	has, err := d.v.Has(codec.StreamEntryKey(d.db, d.key, id))
	if err != nil || !has {
		return false, err
	}
	if d.gone == nil {
		d.gone = map[codec.ID]bool{}
	}
	d.gone[id] = true
	d.del = append(d.del, id)
	return true, nil
}

// Finish returns the events of the deletions: none when nothing existed.
func (d *Deleter) Finish() ([]codec.Event, error) {
	if len(d.del) == 0 {
		return nil, nil
	}
	s := &d.m.Stream
	ed := newNodeEditor(d.v, d.db, d.key, s, DefaultNodeMaxEntries)
	for _, id := range d.del {
		if err := ed.deleteID(id); err != nil {
			return nil, err
		}
	}
	if d.gone[s.FirstID] {
		first, ok, err := firstAfter(d.v, d.db, d.key, *s, s.FirstID, d.gone)
		if err != nil {
			return nil, err
		}
		if !ok {
			first = codec.ID{}
		}
		s.FirstID = first
	}
	s.Length -= uint64(len(d.del))
	for _, id := range d.del {
		if s.MaxDeletedID.Less(id) {
			s.MaxDeletedID = id
		}
	}
	evs := append([]codec.Event{codec.XDelEvent(d.db, d.key, d.del)}, ed.events()...)
	return append(evs, codec.SetMetaEvent(d.db, d.key, d.m, d.m.ExpireAtMs)), nil
}

// RefPolicy is what a deletion does about the consumer groups' references
// to the entries it removes (Redis 8.2's KEEPREF | DELREF | ACKED on XADD,
// XTRIM, XDELEX and XACKDEL).
// https://redis.io/docs/latest/commands/xdelex/
type RefPolicy uint8

// The reference policies.
const (
	// KeepRef deletes entries and leaves every PEL alone (XDEL's way).
	KeepRef RefPolicy = iota
	// DelRef deletes entries and removes them from every group's PEL.
	DelRef
	// Acked deletes only entries no group still needs (Refs.Referenced).
	Acked
)

// Refs are the consumer groups of one stream as one decision sees and
// changes them; package groups implements it (groups.Refs).
type Refs interface {
	// Referenced reports whether a group may still need id: the stream has
	// groups and id is above the smallest last-delivered-id among them, or
	// id is in some group's PEL (Redis's streamEntryIsReferenced).
	Referenced(id codec.ID) (bool, error)
	// ReleaseRange removes the IDs in [first, last] from every group's PEL.
	ReleaseRange(first, last codec.ID) error
}

// TrimStrategy selects XTRIM/XADD trimming by length or by minimum ID.
type TrimStrategy int

// The trimming strategies.
const (
	TrimMaxLen TrimStrategy = iota + 1
	TrimMinID
)

// Trim describes MAXLEN/MINID [=|~] threshold [LIMIT count].
type Trim struct {
	Strategy TrimStrategy
	Approx   bool     // '~'
	MaxLen   uint64   // TrimMaxLen
	MinID    codec.ID // TrimMinID
	Limit    int64    // max entries removed; 0 = no limit. Only with Approx.
	Policy   RefPolicy
	// Refs answers Policy's questions; required unless Policy is KeepRef.
	Refs Refs
	// NodeSize is stream-node-max-entries (0: the default, 100): the
	// default LIMIT of '~' trims is 100 times it (ApproxLimit), and a
	// stream written before node keys migrates with nodes of that many
	// entries. The nodes themselves are the stream's (streams/nodes.go).
	NodeSize uint64
}

// DefaultApproxLimit is the LIMIT Redis applies to '~' trimming when none is
// given: 100 * stream-node-max-entries (with its default).
const DefaultApproxLimit = 100 * DefaultNodeMaxEntries

// ApproxLimit is that LIMIT for node size n (0: the default; MaxUint64,
// no entry bound: no limit, 0).
func ApproxLimit(n uint64) int64 {
	n = nodeSize(n)
	if n > math.MaxInt64/100 {
		return 0
	}
	return int64(100 * n)
}

// PointTrimMax is the largest trim applied as point deletions of each
// removed entry; larger trims are one range deletion from the stream's old
// first entry. docs/key-format.md ("How deletions apply") gives the
// measurements behind the choice.
var PointTrimMax uint64 = 64

// trimPlan is what a trim removes: n entries, from the old first entry
// through last, leaving first as the new first entry (0-0 when the stream
// empties). ids lists the removed entries when n <= PointTrimMax, or when
// an ACKED trim kept some entries between oldFirst and last.
type trimPlan struct {
	n              uint64
	oldFirst, last codec.ID
	first          codec.ID
	ids            []codec.ID
	// nodes: the trim changed the stream's nodes (also when n is 0:
	// nodes without live entries removed).
	nodes bool
}

// planTrim decides which oldest entries t removes from a stream whose
// nodes ed edits (the stream's metadata is ed.s), whose entries are in
// Pebble except pending (IDs being added in this same decision, after
// every stored entry; the metadata already counts them), and makes the
// matching node edits in ed.
//
// Exact trims remove entries one by one, as Redis's streamTrim does inside
// a node. Approximate ('~') trims remove whole nodes only, as Redis does:
// a node is removed while the stream keeps at least MaxLen entries without
// it (MAXLEN) or its last entry is below MinID (MINID), and while the
// removed count stays within Limit. The nodes are Redis's as
// streams/nodes.go models them, stream-node-max-bytes included
// (planTrimNodes).
//
// A DelRef trim removes what a KeepRef trim removes, and then the removed
// range from every PEL. An Acked trim is planTrimAcked.
func planTrim(ed *nodeEditor, pending []codec.ID, t Trim) (trimPlan, error) {
	s := ed.s
	if t.Strategy != TrimMaxLen && t.Strategy != TrimMinID {
		return trimPlan{}, fmt.Errorf("streams: bad trim strategy %d", t.Strategy)
	}
	if t.Strategy == TrimMaxLen && s.Length <= t.MaxLen {
		return trimPlan{}, nil
	}
	if t.Policy == Acked {
		return planTrimAcked(ed, pending, t)
	}
	pl, err := planTrimNodes(ed, pending, t)
	if err == nil && t.Policy == DelRef && pl.n > 0 {
		err = t.Refs.ReleaseRange(pl.oldFirst, pl.last)
	}
	return pl, err
}

// walkLive calls visit for every live entry of the stream in ID order: the
// stored ones from m's first ID, then pending (IDs added in this decision,
// after every stored entry; m counts them), until visit returns false.
func walkLive(v *materialize.View, db uint8, key []byte, s codec.StreamMeta, pending []codec.ID, visit func(codec.ID) bool) error {
	return walkLiveFrom(v, db, key, s, pending, codec.ID{}, visit)
}

// planTrimAcked plans an ACKED trim as Redis 8.2's streamTrim does (with
// the fix of redis/redis#14623 for '~'): entries are walked node by node
// in the stream's nodes (nodeEditor.sizes), and an entry some group may still
// need (Refs.Referenced) is skipped, not a reason to stop. A node is
// eligible when it lies wholly within the trim (MAXLEN: the stream keeps
// at least MaxLen entries without it; MINID: its last entry is below
// MinID). The walk stops at the first entry the trim no longer reaches,
// after the first node that is not eligible, and, for '~', before a node
// that is not eligible or would pass LIMIT. So MINID removes exactly the
// unreferenced entries below MinID; MAXLEN removes the oldest unreferenced
// entries until the length is MaxLen, looking no further than the first
// node that is not wholly trimmed.
//
// The nodes are updated as XDEL would for the entries removed: Redis
// 8.2's node-level bookkeeping for ACKED is not modelled further.
func planTrimAcked(ed *nodeEditor, pending []codec.ID, t Trim) (trimPlan, error) {
	s := *ed.s
	var (
		pl       trimPlan
		kept     bool // an entry was skipped: the removed IDs are sparse
		firstSet bool
		stopped  bool
		nodeIDs  []codec.ID
		rerr     error
	)
	next := ed.sizes()
	size, rerr := next()
	if rerr != nil {
		return trimPlan{}, rerr
	}
	keep := func(id codec.ID) {
		if !firstSet {
			pl.first, firstSet = id, true
		}
	}
	// node decides on one node's entries; it returns false to stop.
	node := func(ids []codec.ID) bool {
		left := s.Length - pl.n
		eligible := false
		switch t.Strategy {
		case TrimMaxLen:
			eligible = left >= t.MaxLen+uint64(len(ids))
		case TrimMinID:
			eligible = ids[len(ids)-1].Less(t.MinID)
		}
		if t.Approx && (!eligible || (t.Limit > 0 && pl.n+uint64(len(ids)) > uint64(t.Limit))) {
			keep(ids[0])
			return false
		}
		for i, id := range ids {
			if (t.Strategy == TrimMaxLen && s.Length-pl.n <= t.MaxLen) || (t.Strategy == TrimMinID && !id.Less(t.MinID)) {
				keep(ids[i])
				return false
			}
			ref, err := t.Refs.Referenced(id)
			if err != nil {
				rerr = err
				return false
			}
			if ref {
				kept = true
				keep(id)
				continue
			}
			if pl.n == 0 {
				pl.oldFirst = id
			}
			pl.n, pl.last = pl.n+1, id
			pl.ids = append(pl.ids, id)
		}
		return eligible
	}
	err := walkLive(ed.v, ed.db, ed.key, s, pending, func(id codec.ID) bool {
		if stopped {
			return false
		}
		nodeIDs = append(nodeIDs, id)
		if uint64(len(nodeIDs)) < size {
			return true
		}
		ok := node(nodeIDs)
		nodeIDs, stopped = nodeIDs[:0], !ok
		if ok && rerr == nil {
			size, rerr = next()
		}
		return ok && rerr == nil
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		return trimPlan{}, err
	}
	if !stopped && len(nodeIDs) > 0 {
		node(nodeIDs) // the tail node, partly filled
	}
	if rerr != nil {
		return trimPlan{}, rerr
	}
	if pl.n == 0 {
		return trimPlan{}, nil
	}
	if !firstSet && pl.n < s.Length {
		// The walk stops only where it keeps an entry.
		return trimPlan{}, fmt.Errorf("streams: ACKED trim kept no first entry of %d: %w", s.Length-pl.n, codec.ErrCorrupt)
	}
	for _, id := range pl.ids {
		if err := ed.deleteID(id); err != nil {
			return trimPlan{}, err
		}
	}
	pl.nodes = true
	if !kept && pl.n > PointTrimMax {
		pl.ids = nil // contiguous: one range deletion
	}
	return pl, nil
}

// setEntriesAdded sets s's entries-added to n (XSETID ENTRIESADDED). For
// a stream not yet migrated (Legacy) it moves the node origin with it, so
// that the first live entry keeps its place in its node of the
// entry-count model (Redis's nodes do not change), as far as the new count
// allows; a migrated stream's nodes do not depend on entries-added.
func setEntriesAdded(s *codec.StreamMeta, n, size uint64) {
	if !s.Legacy {
		s.EntriesAdded = n
		return
	}
	pos := nodePos(*s, size)
	s.EntriesAdded = n
	if n < s.Length+pos {
		s.NodeOrigin = 0
		return
	}
	s.NodeOrigin = n - s.Length - pos
}

// nodePos is the first live entry's position in its node, in Redis's
// numbering: entries are added to nodes of n from the node origin on, and
// trims leave the first node's removed entries counted in it.
func nodePos(s codec.StreamMeta, n uint64) uint64 {
	if s.EntriesAdded < s.Length+s.NodeOrigin {
		return 0 // not reachable but by a corrupt or hand-set value
	}
	return (s.EntriesAdded - s.Length - s.NodeOrigin) % n
}

// applyTrim updates m for the trim pl and returns its event.
func applyTrim(db uint8, key []byte, m *codec.Meta, pl trimPlan) codec.Event {
	m.Stream.Length -= pl.n
	m.Stream.FirstID = pl.first
	return codec.XTrimEvent(db, key, pl.oldFirst, pl.last, pl.ids)
}

// TrimStream trims key (XTRIM) and returns how many entries it removed.
// https://redis.io/docs/latest/commands/xtrim/
func TrimStream(v *materialize.View, db uint8, key []byte, t Trim) (uint64, []codec.Event, error) {
	m, ok, evs, err := metaForWrite(v, db, key)
	if err != nil || !ok {
		return 0, evs, err
	}
	ed := newNodeEditor(v, db, key, &m.Stream, t.NodeSize)
	pl, err := planTrim(ed, nil, t)
	if err != nil || (pl.n == 0 && !pl.nodes) {
		return 0, nil, err
	}
	evs = nil
	if pl.n > 0 {
		evs = append(evs, applyTrim(db, key, &m, pl))
	}
	evs = append(evs, ed.events()...)
	return pl.n, append(evs, codec.SetMetaEvent(db, key, m, m.ExpireAtMs)), nil
}

// SetIDArgs are XSETID's options.
type SetIDArgs struct {
	EntriesAdded int64    // -1: unchanged
	MaxDeletedID codec.ID // zero: unchanged
	NodeSize     uint64   // stream-node-max-entries (0: the default)
}

// Errors of SetID, in Redis 7.0's order of checks.
var (
	// ErrSetIDBelowTop: the ID is smaller than the last entry's.
	ErrSetIDBelowTop = errors.New("streams: XSETID below the top item")
	// ErrSetIDEntriesAdded: entries-added is smaller than the length.
	ErrSetIDEntriesAdded = errors.New("streams: XSETID entries-added below the length")
)

// SetID sets the stream's last ID and, optionally, entries-added and
// max-deleted-entry-id (XSETID), checked as Redis 7.0's xsetidCommand does.
// It returns false when key does not exist. Errors: ErrSetIDBelowTop,
// ErrSetIDEntriesAdded, materialize.ErrWrongType. (Redis 7.0 does not compare
// the ID with the stream's current max-deleted-entry-id.)
// https://redis.io/docs/latest/commands/xsetid/
func SetID(v *materialize.View, db uint8, key []byte, id codec.ID, a SetIDArgs) (bool, []codec.Event, error) {
	m, ok, _, err := metaForWrite(v, db, key)
	if err != nil || !ok {
		return false, nil, err
	}
	s := &m.Stream
	if s.Length > 0 {
		last, err := Range(v, db, key, codec.ID{}, codec.MaxID, 1, true)
		if err != nil {
			return true, nil, err
		}
		if len(last) > 0 && id.Less(last[0].ID) {
			return true, nil, ErrSetIDBelowTop
		}
		if a.EntriesAdded != -1 && s.Length > uint64(a.EntriesAdded) {
			return true, nil, ErrSetIDEntriesAdded
		}
	}
	s.LastID = id
	evs, err := dropNodesBelow(v, db, key, s, id, nodeSize(a.NodeSize))
	if err != nil {
		return true, nil, err
	}
	if a.EntriesAdded != -1 {
		setEntriesAdded(s, uint64(a.EntriesAdded), nodeSize(a.NodeSize))
	}
	if !a.MaxDeletedID.IsZero() {
		s.MaxDeletedID = a.MaxDeletedID
	}
	return true, append(evs, codec.SetMetaEvent(db, key, m, m.ExpireAtMs)), nil
}

// dropNodesBelow removes the nodes of an empty stream when XSETID sets a
// last ID below the last node's first ID. On a stream of length 0 Redis
// 7.0 takes any ID, and an exact MINID trim can leave a node without live
// entries (its deleted entries stay, as in Redis): the next XADD would
// then append an entry below the node's first ID, or open a node below
// it, which node keys (keyed and ordered by first ID) cannot hold. Redis
// appends such an entry to the node it kept; here the node goes and the
// XADD opens a new one: XINFO STREAM's radix-tree-keys is 0 until then,
// where Redis's is 1, and the new node does not count the old deleted
// entries toward stream-node-max-entries. No entry is lost: the nodes
// hold none. n is stream-node-max-entries (migrate).
func dropNodesBelow(v *materialize.View, db uint8, key []byte, s *codec.StreamMeta, id codec.ID, n uint64) ([]codec.Event, error) {
	if s.Length != 0 || (s.Nodes == 0 && !s.Legacy) {
		return nil, nil
	}
	ed := newNodeEditor(v, db, key, s, n)
	last := ed.tail
	if last == nil && ed.hasKeys() {
		var err error
		if last, err = ed.keyAtOrBefore(codec.MaxID); err != nil {
			return nil, err
		}
	}
	if last == nil || !id.Less(last.n.First) {
		return ed.events(), nil
	}
	// On an empty stream that node is the only one: an exact MINID trim
	// leaves one node without live entries (a migrated record left so
	// goes whole), any other goes when its last live entry does.
	if !last.tail {
		last.gone = true // a point deletion (events)
	}
	ed.tail = nil
	s.Nodes = 0
	ed.setHead(nil)
	return ed.events(), nil
}
