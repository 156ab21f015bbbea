package streams

import (
	"fmt"
	"math"
	"slices"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
)

// A stream's nodes model Redis 7.0's radix-tree nodes: which entries share
// a listpack, how many of them are live and deleted, and each node's
// listpack size. XADD appends to the tail node or opens a new one exactly
// as streamAppendItem does (nodeEditor.append); trims remove whole nodes
// from the head and mark entries deleted inside the first node left
// (planTrimNodes, nodetrim.go); XDEL marks entries deleted and drops a
// node left without live entries (nodeEditor.deleteID).
//
// Storage (docs/key-format.md §3.2a and §5.2): the tail node is in the
// stream's Meta (codec.StreamMeta.Tail), with the node count and a summary
// of the head node; every other node is a node key (codec.TagStreamNode)
// keyed by its first ID, written by OpXNodeSet and removed by OpXNodeDel.
// An XADD that stays in the tail writes no node key and reads none; one
// that opens a node writes the old tail's key. Design:
// docs/rfcs/20261127_stream_node_keys.md.

// nodeParams are stream-node-max-bytes and stream-node-max-entries as
// streamAppendItem reads them: bytes 0 or above 1 GiB mean 1 GiB, entries
// 0 means no entry limit. The zero Config (no setting given: the server's
// always has an IDMP duration of at least 1) means DefaultConfig.
func nodeParams(c Config) (maxBytes, maxEntries uint64) {
	if c == (Config{}) {
		c = DefaultConfig
	}
	maxBytes = lpMaxSize
	if c.NodeMaxBytes > 0 && c.NodeMaxBytes <= lpMaxSize {
		maxBytes = uint64(c.NodeMaxBytes)
	}
	if c.NodeMaxEntries > 0 {
		maxEntries = uint64(c.NodeMaxEntries)
	}
	return maxBytes, maxEntries
}

// nodeRef is one node as a decision edits it: the tail, or a node key read
// from the view or made in this decision.
type nodeRef struct {
	n      codec.StreamNode
	tail   bool // the Meta's tail node (no key)
	stored bool // its key exists in the view
	gone   bool // its key is removed in this decision
	ranged bool // ... by a trim's range deletion (nodeEditor.ranges)
	dirty  bool // its key is written in this decision
}

// nodeEditor edits the nodes of one stream within one decision. The
// stream's metadata s holds the tail, the node count and the head summary;
// the node keys read or changed are in keys until events turns them into
// OpXNodeSet and OpXNodeDel events.
type nodeEditor struct {
	v    *materialize.View
	db   uint8
	key  []byte
	s    *codec.StreamMeta
	tail *nodeRef              // nil: no tail node
	keys map[codec.ID]*nodeRef // nil until a node key is read or made
	last *nodeRef              // the node key deleteID found last
	// ranges are the [from, to] first-ID ranges of node keys trims removed.
	ranges [][2]codec.ID
	// added are the IDs appended in this decision (append), which the
	// writer's cache of the stream's newest entries does not hold yet.
	added []codec.ID
}

// newNodeEditor starts editing the nodes of the stream key whose metadata
// is s. A stream written before node state was kept is migrated first
// (migrate, with stream-node-max-entries n).
func newNodeEditor(v *materialize.View, db uint8, key []byte, s *codec.StreamMeta, n uint64) *nodeEditor {
	migrate(s, n)
	return &nodeEditor{v: v, db: db, key: key, s: s, tail: tailRef(s)}
}

// tailRef returns a nodeRef of s's tail node, nil when it has none.
func tailRef(s *codec.StreamMeta) *nodeRef {
	if s.Tail.Count == 0 {
		return nil
	}
	return &nodeRef{n: s.Tail, tail: true}
}

// migrate gives a stream written before node state was kept (s.Legacy)
// its node state: its live entries become one node record, the tail,
// standing for the nodes the entry-count model gave them
// (legacyRadixTreeKeys with stream-node-max-entries n), of unknown size,
// so that the next XADD opens a new node (and writes the record as a node
// key). Trims take the record in pieces of ⌈live/count⌉ entries.
func migrate(s *codec.StreamMeta, n uint64) {
	if !s.Legacy {
		return
	}
	count := max(legacyRadixTreeKeys(*s, n), 1)
	s.Legacy, s.NodeOrigin = false, 0
	if s.Length == 0 {
		return
	}
	s.Nodes = count
	s.Tail = codec.StreamNode{First: s.FirstID, Last: maxID(s.LastID, s.FirstID), Count: count, Live: s.Length}
}

// hasKeys reports whether the stream has node keys besides its tail.
func (ed *nodeEditor) hasKeys() bool { return ed.s.Nodes > ed.tailCount() }

func (ed *nodeEditor) tailCount() uint64 {
	if ed.tail == nil {
		return 0
	}
	return ed.tail.n.Count
}

// isHead reports whether r is the head node key: by its first ID, or, in
// metadata written before the head's first ID was kept, by its last.
func (ed *nodeEditor) isHead(r *nodeRef) bool {
	if r.tail || !ed.hasKeys() {
		return false
	}
	if f := ed.s.HeadFirst; !f.IsZero() {
		return r.n.First == f
	}
	return r.n.Last == ed.s.HeadLast
}

// setHead makes r the head node key (nil: there is none).
func (ed *nodeEditor) setHead(r *nodeRef) {
	s := ed.s
	if r == nil || r.tail {
		s.HeadLast, s.HeadLive, s.HeadMigrated, s.HeadFirst = codec.ID{}, 0, false, codec.ID{}
		return
	}
	s.HeadLast, s.HeadLive, s.HeadMigrated, s.HeadFirst = r.n.Last, r.n.Live, r.n.Count > 1, r.n.First
	ed.v.NoteStreamHead(ed.db, ed.key, r.n.First)
}

// changed records that r's counts changed.
func (ed *nodeEditor) changed(r *nodeRef) {
	if r.tail {
		return
	}
	r.dirty = true
	if ed.isHead(r) {
		ed.setHead(r)
	}
}

// ref returns the nodeRef of the node key first whose value is val, read
// from the view: the one of keys when the decision has it already.
func (ed *nodeEditor) ref(first codec.ID, val []byte) (*nodeRef, error) {
	if r := ed.keys[first]; r != nil {
		return r, nil
	}
	n, err := codec.DecodeStreamNode(first, val)
	if err != nil {
		return nil, err
	}
	r := &nodeRef{n: n, stored: true}
	ed.put(first, r)
	return r, nil
}

// put records the node key first in keys.
func (ed *nodeEditor) put(first codec.ID, r *nodeRef) {
	if ed.keys == nil {
		ed.keys = map[codec.ID]*nodeRef{}
	}
	ed.keys[first] = r
}

// keyAtOrBefore returns the node key with the greatest first ID at or
// below id that the decision has not removed, or nil: a reverse seek from
// id. Callers pass IDs at or above the head's first ID, so the seek meets
// no deleted node keys below the head.
func (ed *nodeEditor) keyAtOrBefore(id codec.ID) (*nodeRef, error) {
	var best *nodeRef
	for f, r := range ed.keys {
		if !r.gone && !id.Less(f) && (best == nil || best.n.First.Less(f)) {
			best = r
		}
	}
	p := codec.KeyPrefix(codec.TagStreamNode, ed.db, ed.key)
	lower, upper := p, codec.PrefixEnd(p)
	if best != nil {
		next, _ := best.n.First.Next()
		lower = codec.AppendID(p[:len(p):len(p)], next)
	}
	if next, ok := id.Next(); ok {
		upper = codec.AppendID(p[:len(p):len(p)], next)
	}
	return ed.seek(p, lower, upper, true, best)
}

// keyAfter returns the first node key with a first ID above id that the
// decision has not removed, or nil: a forward seek, bounded by the tail.
func (ed *nodeEditor) keyAfter(id codec.ID) (*nodeRef, error) {
	var best *nodeRef
	for f, r := range ed.keys {
		if !r.gone && id.Less(f) && (best == nil || f.Less(best.n.First)) {
			best = r
		}
	}
	next, ok := id.Next()
	if !ok {
		return nil, nil
	}
	p := codec.KeyPrefix(codec.TagStreamNode, ed.db, ed.key)
	lower, upper := codec.AppendID(p[:len(p):len(p)], next), codec.PrefixEnd(p)
	switch {
	case best != nil:
		upper = codec.AppendID(p[:len(p):len(p)], best.n.First)
	case ed.tail != nil:
		upper = codec.AppendID(p[:len(p):len(p)], ed.tail.n.First)
	}
	return ed.seek(p, lower, upper, false, best)
}

// seek returns the first node key in [lower, upper) (the last when
// reverse) that the decision has not removed, or else, when there is
// none, best; p is the stream's node-key prefix.
func (ed *nodeEditor) seek(p, lower, upper []byte, reverse bool, best *nodeRef) (*nodeRef, error) {
	var found *nodeRef
	err := ed.v.Iterate(lower, upper, reverse, func(k, val []byte) (bool, error) {
		first, err := codec.DecodeID(k[len(p):])
		if err != nil {
			return false, err
		}
		r, err := ed.ref(first, val)
		if err != nil || r.gone {
			return err == nil, err
		}
		found = r
		return false, nil
	})
	if err != nil || found != nil {
		return found, err
	}
	return best, nil
}

// first returns the stream's first node: the head node key, or the tail
// when there is none; nil for a stream without nodes.
func (ed *nodeEditor) first() (*nodeRef, error) {
	if !ed.hasKeys() {
		return ed.tail, nil
	}
	if f := ed.s.HeadFirst; !f.IsZero() {
		// A point lookup (which the writer's group cache answers).
		r, err := ed.keyAt(f)
		if err == nil && (r == nil || r.n.Last != ed.s.HeadLast) {
			err = fmt.Errorf("streams: %q: no head node key %s ending at %s: %w", ed.key, f, ed.s.HeadLast, codec.ErrCorrupt)
		}
		return r, err
	}
	// Metadata written before the head's first ID was kept.
	if r, err := ed.hintedHead(); err != nil || r != nil {
		return r, err
	}
	r, err := ed.keyAtOrBefore(ed.s.HeadLast)
	// Nodes made after an XSETID that lowered the last ID may start
	// inside the head's range (deleteID): the head is below them.
	for err == nil && r != nil && r.n.Last != ed.s.HeadLast {
		prev, ok := r.n.First.Prev()
		if !ok {
			r = nil
			break
		}
		r, err = ed.keyAtOrBefore(prev)
	}
	if err == nil && r == nil {
		err = fmt.Errorf("streams: %q: no node key ends at the head's last ID %s: %w", ed.key, ed.s.HeadLast, codec.ErrCorrupt)
	}
	if err == nil {
		ed.v.NoteStreamHead(ed.db, ed.key, r.n.First)
	}
	return r, err
}

// hintedHead returns the head node key named by the writer's hint
// (View.StreamHeadHint) when the key exists, the decision has not removed
// it and it ends at the head's last ID: the node first's walk down from
// keyAtOrBefore(HeadLast) would find, unless a node made after an XSETID
// ends at that ID too (metadata with the head's first ID does not use the
// hint: first). A point lookup
// reads the key's newest version at once, where the reverse seek walked
// every version the memtable holds (an exact MAXLEN rewrites the head on
// each XADD). nil when the hint does not hold.
func (ed *nodeEditor) hintedHead() (*nodeRef, error) {
	first, ok := ed.v.StreamHeadHint(ed.db, ed.key)
	if !ok {
		return nil, nil
	}
	r, err := ed.keyAt(first)
	if err != nil || r == nil || r.n.Last != ed.s.HeadLast {
		return nil, err
	}
	return r, nil
}

// keyAt returns the node key whose first ID is first, nil when it does not
// exist or the decision has removed it: a point lookup (which the writer's
// group cache answers for node keys it has seen written or read).
func (ed *nodeEditor) keyAt(first codec.ID) (*nodeRef, error) {
	if r := ed.keys[first]; r != nil {
		if r.gone {
			return nil, nil
		}
		return r, nil
	}
	val, found, err := ed.v.Get(codec.StreamNodeKey(ed.db, ed.key, first))
	if err != nil || !found {
		return nil, err
	}
	return ed.ref(first, val)
}

// keyAfterNode is keyAfter(r.n.First) for the node key r: when r knows
// the node that followed it (StreamNode.Next), a point lookup of that
// node key, which is then the next one (nodes are only made at the tail,
// so none can have come between them since); when it is the tail, there
// is no node key after r. Otherwise, or when that node is gone, the seek.
func (ed *nodeEditor) keyAfterNode(r *nodeRef) (*nodeRef, error) {
	if next := r.n.Next; !next.IsZero() {
		if ed.tail != nil && ed.tail.n.First == next {
			return nil, nil
		}
		k, err := ed.keyAt(next)
		if err != nil || k != nil {
			return k, err
		}
	}
	return ed.keyAfter(r.n.First)
}

// after returns the node after r (the tail after the last node key), or
// nil after the tail.
func (ed *nodeEditor) after(r *nodeRef) (*nodeRef, error) {
	if r.tail {
		return nil, nil
	}
	next, err := ed.keyAfterNode(r)
	if err != nil || next != nil {
		return next, err
	}
	return ed.tail, nil
}

// sizes returns an iterator over the live sizes of the stream's nodes,
// head first, skipping nodes without live entries: a migrated record's
// pieces (⌈live/count⌉ each, as planTrimNodes takes them) count as nodes.
// Past the last node it returns math.MaxUint64.
func (ed *nodeEditor) sizes() func() (uint64, error) {
	var (
		cur         *nodeRef
		started     bool
		count, live uint64
	)
	return func() (uint64, error) {
		for {
			if count == 0 {
				var err error
				switch {
				case !started:
					started = true
					cur, err = ed.first()
				case cur != nil:
					cur, err = ed.after(cur)
				}
				if err != nil {
					return 0, err
				}
				if cur == nil {
					return math.MaxUint64, nil
				}
				count, live = cur.n.Count, cur.n.Live
			}
			sub := ceilDiv(live, count)
			count, live = count-1, live-sub
			if sub > 0 {
				return sub, nil
			}
		}
	}
}

// append records the entry id with fields fv appended to the stream, as
// streamAppendItem: it goes into the tail node unless the tail's listpack
// bytes plus the entry's field and value lengths reach maxBytes, or the
// tail holds maxEntries entries (live and deleted; 0: no limit);
// otherwise the tail becomes a node key and a new tail starts with fv's
// fields as its master entry. A tail of unknown size (a migrated record)
// is taken as full.
func (ed *nodeEditor) append(id codec.ID, fv [][]byte, c Config) {
	maxBytes, maxEntries := nodeParams(c)
	if t := ed.tail; t != nil {
		r := &t.n
		full := r.Count != 1 || r.Body == 0 ||
			lpNodeBytes(r.Body, r.Live, r.Deleted)+fieldsLen(fv) >= maxBytes ||
			(maxEntries > 0 && r.Live+r.Deleted >= maxEntries)
		if !full {
			same := r.MasterKnown && codec.MasterDigest(fv) == r.MasterDigest
			r.Body += lpEntry(fv, id, r.First, same)
			r.Live++
			r.Last = id
			ed.added = append(ed.added, id)
			return
		}
		// The entry opening the next node; none when id is not above the
		// tail's last entry (XSETID may lower the last ID below deleted
		// entries: Redis 7.0 checks it against the top live entry only).
		if ed.tail.n.Next = (codec.ID{}); ed.tail.n.Last.Less(id) {
			ed.tail.n.Next = id
		}
		ed.tail.n.Inner = ed.innerIDs(ed.tail.n)
		ed.closeTail()
	}
	ed.added = append(ed.added, id)
	ed.tail = &nodeRef{tail: true, n: codec.StreamNode{
		First: id, Last: id, Count: 1, Live: 1,
		Body:        lpMasterBody(fv) + lpEntry(fv, id, id, true),
		MasterKnown: true, MasterDigest: codec.MasterDigest(fv),
	}}
	ed.s.Nodes++
}

// innerIDs returns the encoded IDs of n's entries between its first and
// last (codec.StreamNode.Inner) for the tail n about to close, when it is
// clean and holds 3 to codec.InnerIDsMax entries and their IDs are known
// without reading Pebble: the writer's cache of the stream's newest entries
// (View.StreamTail), then the entries appended in this decision. Else "".
func (ed *nodeEditor) innerIDs(n codec.StreamNode) string {
	if n.Count != 1 || n.Deleted != 0 || n.Live < 3 || n.Live > codec.InnerIDsMax {
		return ""
	}
	var buf [codec.InnerIDsMax]codec.ID
	ids := buf[:0]
	ok, err := ed.v.StreamTail(ed.db, ed.key, n.First, func(te materialize.TailEntry) (bool, error) {
		if n.Last.Less(te.ID) || len(ids) == len(buf) {
			return false, nil
		}
		ids = append(ids, te.ID)
		return true, nil
	})
	if err != nil || (!ok && (len(ed.added) == 0 || ed.added[0] != n.First)) {
		return ""
	}
	for _, id := range ed.added {
		if !id.Less(n.First) && !n.Last.Less(id) && (len(ids) == 0 || ids[len(ids)-1].Less(id)) && len(ids) < len(buf) {
			ids = append(ids, id)
		}
	}
	if uint64(len(ids)) != n.Live || ids[0] != n.First || ids[len(ids)-1] != n.Last {
		return ""
	}
	return string(codec.AppendInnerIDs(nil, n.First, ids[1:len(ids)-1]))
}

// closeTail turns the tail into a node key.
func (ed *nodeEditor) closeTail() {
	head := !ed.hasKeys()
	n := ed.tail.n
	r := ed.keys[n.First] // the key of a node promoted to tail in this decision
	if r == nil {
		r = &nodeRef{}
		ed.put(n.First, r)
	}
	r.n, r.gone, r.dirty = n, false, true
	ed.tail = nil
	if head {
		ed.setHead(r)
	}
}

// drop removes the node r (the tail or a node key).
func (ed *nodeEditor) drop(r *nodeRef) error {
	if r.tail {
		return ed.dropTail()
	}
	head := ed.isHead(r)
	r.gone = true
	ed.s.Nodes -= r.n.Count
	if !head {
		return nil
	}
	next, err := ed.keyAfterNode(r)
	ed.setHead(next)
	return err
}

// dropTail removes the tail node. As in Redis, the node before it becomes
// the tail (its key goes, its state moves into the metadata), unless it
// is a migrated record: then the stream has no tail until the next XADD
// opens one (such a record is taken as full anyway).
func (ed *nodeEditor) dropTail() error {
	old := ed.tail
	ed.tail = nil
	ed.s.Nodes -= old.n.Count
	if !ed.hasKeys() {
		return nil
	}
	p, err := ed.keyAtOrBefore(old.n.First)
	if err == nil && p == nil {
		err = fmt.Errorf("streams: %q: %d nodes but no node key before the tail: %w", ed.key, ed.s.Nodes, codec.ErrCorrupt)
	}
	if err != nil {
		return err
	}
	if p.n.Count != 1 {
		// p stays a node key, the last, and names the removed tail as its
		// next node: nodes made from now on may start below that ID
		// (after an XSETID that lowers the last ID), so it names none.
		if !p.n.Next.IsZero() {
			p.n.Next, p.dirty = codec.ID{}, true
		}
		return nil
	}
	p.gone = true
	ed.tail = &nodeRef{n: p.n, tail: true}
	if !ed.hasKeys() {
		ed.setHead(nil)
	}
	return nil
}

// deleteID records the deletion of the live entry id (XDEL, XDELEX,
// XACKDEL, an ACKED trim), as streamIteratorRemoveEntry: it is marked
// deleted in its node, and a node whose last live entry goes is removed.
// It finds the node with at most one seek: the tail is in the metadata,
// and the node key found last is tried first when id is below the node
// that followed it (StreamNode.Next).
//
// As in Redis, an entry is in the node of the greatest first ID at or
// below it, whose range may reach past the entry: XSETID may lower the
// last ID below deleted entries at the top of the last node (Redis 7.0
// checks it against the top live entry only), and the next node then
// starts inside that node's range. A node closed that way has no next
// ID, so only a node with one is taken without a seek.
func (ed *nodeEditor) deleteID(id codec.ID) error {
	var r *nodeRef
	switch {
	case ed.tail != nil && !id.Less(ed.tail.n.First):
		r = ed.tail
	case ed.last != nil && !ed.last.gone && !id.Less(ed.last.n.First) && !ed.last.n.Last.Less(id) && id.Less(ed.last.n.Next):
		r = ed.last
	default:
		var err error
		if r, err = ed.keyAtOrBefore(id); err != nil {
			return err
		}
		if r == nil || r.n.Last.Less(id) {
			return fmt.Errorf("streams: %q: entry %s is in no node: %w", ed.key, id, codec.ErrCorrupt)
		}
		ed.last = r
	}
	if r.n.Live <= 1 {
		return ed.drop(r)
	}
	r.n.Live--
	if r.n.Count == 1 {
		r.n.Deleted++
	}
	ed.changed(r)
	return nil
}

// events returns the node keys' events and writes the tail back into the
// metadata: the trims' range deletions, then point deletions, then the
// keys written, each in ID order.
func (ed *nodeEditor) events() []codec.Event {
	if ed.tail != nil {
		ed.s.Tail = ed.tail.n
		// The tail has no next node nor inner IDs (a node key promoted to
		// tail kept its own).
		ed.s.Tail.Next, ed.s.Tail.Inner = codec.ID{}, ""
	} else {
		ed.s.Tail = codec.StreamNode{}
	}
	var evs []codec.Event
	for _, r := range ed.ranges {
		evs = append(evs, codec.XNodeDelEvent(ed.db, ed.key, r[0], r[1]))
	}
	firsts := make([]codec.ID, 0, len(ed.keys))
	for f := range ed.keys {
		firsts = append(firsts, f)
	}
	slices.SortFunc(firsts, func(a, b codec.ID) int { return a.Compare(b) })
	for _, f := range firsts {
		if r := ed.keys[f]; r.gone && r.stored && !r.ranged {
			evs = append(evs, codec.XNodeDelEvent(ed.db, ed.key, f, f))
		}
	}
	for _, f := range firsts {
		if r := ed.keys[f]; !r.gone && r.dirty {
			if r.n.Deleted != 0 || r.n.Count != 1 {
				// Entries deleted in it: no longer its live entries. (Live
				// changes only with Deleted in a node of count 1; a tail
				// that grows again gets its list anew when it closes.)
				r.n.Inner = ""
			}
			evs = append(evs, codec.XNodeSetEvent(ed.db, ed.key, r.n))
		}
	}
	return evs
}

// maxID is the larger of a and b.
func maxID(a, b codec.ID) codec.ID {
	if a.Less(b) {
		return b
	}
	return a
}
