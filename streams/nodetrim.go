package streams

import (
	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
)

// Trims over the stream's nodes (streams/nodes.go): which nodes a KEEPREF
// or DELREF trim removes whole, where it stops and what it marks deleted,
// and the node edits that follow.

// quickKeep reports whether the trim tr certainly removes nothing, from
// the metadata alone (the head summary, or the tail when the stream has
// no node keys): what spares a capped XADD any read.
func (ed *nodeEditor) quickKeep(tr Trim) bool {
	s := ed.s
	live, last, migrated := s.HeadLive, s.HeadLast, s.HeadMigrated
	if !ed.hasKeys() {
		if ed.tail == nil {
			return true
		}
		live, last, migrated = ed.tail.n.Live, ed.tail.n.Last, ed.tail.n.Count > 1
	}
	if migrated {
		return false
	}
	switch tr.Strategy {
	case TrimMaxLen:
		if !tr.Approx {
			return false // an exact trim marks entries in the head
		}
		return s.Length-live < tr.MaxLen || (tr.Limit > 0 && live > uint64(tr.Limit))
	case TrimMinID:
		if !last.Less(tr.MinID) { // the head stays
			return tr.Approx || s.Length == 0 || !s.FirstID.Less(tr.MinID)
		}
		return tr.Approx && tr.Limit > 0 && live > uint64(tr.Limit)
	}
	return false
}

// planTrimNodes plans a KEEPREF (or DELREF) trim as Redis 7.0's
// streamTrim: from the first node, a node is removed whole while the trim
// reaches past it (MAXLEN: the stream keeps at least MaxLen entries
// without its live ones; MINID: the last entry added to it is below
// MinID) and, with a LIMIT, the live entries removed stay within it; at
// the first node that is not removed, '~' stops, and an exact trim marks
// its entries deleted up to the threshold. A migrated record is taken in
// pieces of ⌈live/count⌉ entries. The removed entries are always the
// stream's first n live ones; the plan's node edits are made in ed.
//
// Cost: nothing read when the head stays (quickKeep); else one seek per
// node removed plus one, and a walk of at most one node's entries (the
// entries marked, or the IDs of a trim of at most PointTrimMax entries).
func planTrimNodes(ed *nodeEditor, pending []codec.ID, tr Trim) (trimPlan, error) {
	if ed.quickKeep(tr) {
		return trimPlan{}, nil
	}
	s := ed.s
	walk := func(from codec.ID, visit func(codec.ID) bool) error {
		return walkLiveFrom(ed.v, ed.db, ed.key, *s, pending, from, visit)
	}
	var (
		n       uint64 // live entries removed
		removed []*nodeRef
		stop    *nodeRef // the first node kept (nil: none)
		// pieces of a migrated record removed (from stop), and their
		// live entries
		pieces, piecesLive uint64
		marked             uint64
	)
	cur, err := ed.first()
	if err != nil {
		return trimPlan{}, err
	}
	reaches := func(live uint64, last func() (codec.ID, error)) (bool, error) {
		if tr.Approx && tr.Limit > 0 && n+live > uint64(tr.Limit) {
			return false, nil
		}
		if tr.Strategy == TrimMaxLen {
			return s.Length-n-live >= tr.MaxLen, nil
		}
		l, err := last()
		return l.Less(tr.MinID), err
	}
	for ; cur != nil && stop == nil; cur, err = ed.after(cur) {
		if err != nil {
			return trimPlan{}, err
		}
		r := cur.n
		// A migrated record's pieces, while more than one is left.
		var pieceFrom codec.ID // MINID: where the next piece starts
		for r.Count-pieces > 1 && r.Live-piecesLive > 0 && stop == nil {
			sub := ceilDiv(r.Live-piecesLive, r.Count-pieces)
			ok := !(tr.Strategy == TrimMaxLen && s.Length-n <= tr.MaxLen)
			if ok {
				if ok, err = reaches(sub, func() (codec.ID, error) { // the piece's last live entry
					if pieceFrom.IsZero() {
						pieceFrom = maxID(r.First, s.FirstID)
					}
					var last codec.ID
					var seen uint64
					err := walk(pieceFrom, func(id codec.ID) bool {
						seen++
						last = id
						return seen < sub
					})
					pieceFrom, _ = last.Next()
					return last, err
				}); err != nil {
					return trimPlan{}, err
				}
			}
			if !ok {
				stop = cur
				break
			}
			n += sub
			pieces++
			piecesLive += sub
		}
		if stop != nil {
			break
		}
		if tr.Strategy == TrimMaxLen && s.Length-n <= tr.MaxLen {
			stop = cur
			break
		}
		ok, err := reaches(r.Live-piecesLive, func() (codec.ID, error) { return r.Last, nil })
		if err != nil {
			return trimPlan{}, err
		}
		if !ok {
			stop = cur
			break
		}
		n += r.Live - piecesLive
		removed = append(removed, cur)
		pieces, piecesLive = 0, 0
	}
	if err != nil {
		return trimPlan{}, err
	}
	// An exact trim marks entries deleted in the node where it stopped.
	if !tr.Approx && stop != nil && !(tr.Strategy == TrimMaxLen && s.Length-n <= tr.MaxLen) {
		switch tr.Strategy {
		case TrimMaxLen:
			marked = s.Length - n - tr.MaxLen
		case TrimMinID:
			// The node's entries left, after the pieces removed from it.
			left := stop.n.Live - piecesLive
			var seen uint64
			if err := walk(maxID(stop.n.First, s.FirstID), func(id codec.ID) bool {
				if seen++; seen <= piecesLive {
					return true
				}
				if seen > piecesLive+left || !id.Less(tr.MinID) {
					return false
				}
				marked++
				return true
			}); err != nil {
				return trimPlan{}, err
			}
		}
		n += marked
	}
	if n == 0 && len(removed) == 0 {
		return trimPlan{}, nil
	}
	pl := trimPlan{n: n, oldFirst: s.FirstID, nodes: true}
	if n > 0 {
		if !cleanTrimEnds(s, &pl, removed, stop, piecesLive+marked) {
			if err := findTrimEnds(ed, pending, &pl, stop, piecesLive+marked); err != nil {
				return trimPlan{}, err
			}
		}
	} else {
		pl.first = s.FirstID
	}
	return pl, ed.applyTrim(removed, stop, pieces, piecesLive, marked, pl.first)
}

// cleanTrimEnds is findTrimEnds without reading entries, for a trim that
// removes whole nodes without deleted entries (of one or two entries each
// when the trim lists its IDs) and keeps the node after them whole (inStop
// 0) and clean: their first and last IDs are then the removed entries,
// and the kept node's first ID is the stream's new first entry. Large
// entries (each a node of its own past stream-node-max-bytes) trim this
// way. It reports false, changing nothing, when the trim is not of that
// shape.
func cleanTrimEnds(s *codec.StreamMeta, pl *trimPlan, removed []*nodeRef, stop *nodeRef, inStop uint64) bool {
	clean := func(r *nodeRef) bool { return r.n.Count == 1 && r.n.Deleted == 0 && r.n.Live > 0 }
	if inStop != 0 || len(removed) == 0 || removed[0].n.First != s.FirstID || (stop != nil && !clean(stop)) {
		return false
	}
	var n uint64
	list := pl.n <= PointTrimMax
	var ids []codec.ID
	for _, r := range removed {
		if !clean(r) {
			return false
		}
		if list {
			var ok bool
			if ids, ok = appendNodeIDs(ids, r.n); !ok {
				return false
			}
		}
		n += r.n.Live
	}
	if n != pl.n {
		return false
	}
	pl.ids, pl.last = ids, removed[len(removed)-1].n.Last
	pl.first = codec.ID{} // emptied
	if stop != nil {
		pl.first = stop.n.First
	}
	return true
}

// appendNodeIDs appends the IDs of the clean node n's entries, known
// without reading: its first and last, and its inner IDs (StreamNode.Inner)
// for more than two. ok is false when they are not known, and for a
// migrated record (Body 0), whose last ID is the stream's last when it was
// migrated, which may be no entry's (an entry deleted, or XSETID).
func appendNodeIDs(ids []codec.ID, n codec.StreamNode) ([]codec.ID, bool) {
	switch {
	case n.Body == 0:
		return ids, false
	case n.Live == 1 && n.First == n.Last:
		return append(ids, n.First), true
	case n.Live == 2 && n.First != n.Last:
		return append(ids, n.First, n.Last), true
	case n.Live < 3 || n.Inner == "":
		return ids, false
	}
	var buf [codec.InnerIDsMax]codec.ID
	inner, err := n.InnerIDs(buf[:0])
	if err != nil || uint64(len(inner))+2 != n.Live {
		return ids, false
	}
	ids = append(append(ids, n.First), inner...)
	return append(ids, n.Last), true
}

// findTrimEnds sets pl's last removed entry, new first entry and, for a
// trim of at most PointTrimMax entries, removed IDs: a walk of the removed
// entries when few, else from the start of the node stop where the trim
// ended (inStop: the entries removed inside it), or a reverse seek for
// the last entry before it.
func findTrimEnds(ed *nodeEditor, pending []codec.ID, pl *trimPlan, stop *nodeRef, inStop uint64) error {
	s := ed.s
	from, skip := s.FirstID, pl.n
	if pl.n > PointTrimMax {
		from, skip = codec.MaxID, 0
		if stop != nil {
			from, skip = maxID(stop.n.First, s.FirstID), inStop
		}
	}
	var seen uint64
	err := walkLiveFrom(ed.v, ed.db, ed.key, *s, pending, from, func(id codec.ID) bool {
		seen++
		if seen <= skip {
			pl.last = id
			if pl.n <= PointTrimMax {
				pl.ids = append(pl.ids, id)
			}
			return true
		}
		pl.first = id
		return false
	})
	if err != nil {
		return err
	}
	if seen <= skip {
		pl.first = codec.ID{} // emptied
	}
	if skip == 0 {
		last, err := lastLiveBefore(ed.v, ed.db, ed.key, *s, pending, from)
		if err != nil {
			return err
		}
		pl.last = last
	}
	return nil
}

// applyTrim makes a trim's node edits: the nodes removed whole, then in
// stop, the pieces of a migrated record removed (the record then starts
// at first, the stream's new first entry) and the entries marked deleted.
func (ed *nodeEditor) applyTrim(removed []*nodeRef, stop *nodeRef, pieces, piecesLive, marked uint64, first codec.ID) error {
	s := ed.s
	var from, to codec.ID
	for _, r := range removed {
		s.Nodes -= r.n.Count
		if r.tail {
			ed.tail = nil
			continue
		}
		r.gone = true
		if r.stored {
			if from.IsZero() {
				from = r.n.First
			}
			to, r.ranged = r.n.First, true
		}
	}
	if !from.IsZero() {
		ed.ranges = append(ed.ranges, [2]codec.ID{from, to})
	}
	if stop != nil && (pieces > 0 || marked > 0) {
		n := &stop.n
		n.Count -= pieces
		s.Nodes -= pieces
		n.Live -= piecesLive + marked
		if n.Count == 1 {
			n.Deleted += marked
		}
		switch {
		case n.Count > 1 && n.Live == 0:
			// A migrated record left without live entries goes whole.
			s.Nodes -= n.Count
			if stop.tail {
				ed.tail = nil
				stop = nil
				break
			}
			stop.gone = true
			next, err := ed.keyAfter(n.First)
			if err != nil {
				return err
			}
			stop = next
			if stop == nil {
				stop = ed.tail
			}
		case pieces > 0 && n.Live == 0:
			// Marked down to no live entry (an exact MINID trim), the
			// rest of the record holds only deleted entries, and first
			// is in the node after it: it keeps its first ID, as a
			// node of Redis keeps its master entry.
			stop.dirty = !stop.tail
		case pieces > 0 && stop.tail:
			n.First = first
		case pieces > 0:
			// The record's key moves to its new first entry.
			stop.gone = true
			moved := ed.keys[first]
			if moved == nil {
				moved = &nodeRef{}
				ed.put(first, moved)
			}
			moved.n, moved.gone, moved.dirty = *n, false, true
			moved.n.First = first
			stop = moved
		default:
			stop.dirty = !stop.tail
		}
	}
	if stop != nil && !stop.tail {
		ed.setHead(stop)
	} else {
		ed.setHead(nil)
	}
	return nil
}

// storedPart returns the metadata s as it stands without pending, the IDs
// added in this decision (after every stored entry; s counts them): what
// the view's stored entries match.
func storedPart(s codec.StreamMeta, pending []codec.ID) codec.StreamMeta {
	if len(pending) > 0 {
		s.Length -= uint64(len(pending))
		s.LastID = pending[0]
		if prev, ok := pending[0].Prev(); ok {
			s.LastID = prev
		}
	}
	return s
}

// walkLiveFrom is walkLive from the first live entry >= from.
func walkLiveFrom(v *materialize.View, db uint8, key []byte, s codec.StreamMeta, pending []codec.ID, from codec.ID, visit func(codec.ID) bool) error {
	stored := storedPart(s, pending)
	stopped := false
	if p, lower, upper, ok := liveBounds(db, key, stored, from, codec.MaxID); ok {
		err := v.IterateNoValues(lower, upper, false, func(k []byte) (bool, error) {
			id, err := codec.DecodeID(k[len(p):])
			if err != nil {
				return false, err
			}
			stopped = !visit(id)
			return !stopped, nil
		})
		if err != nil || stopped {
			return err
		}
	}
	for _, id := range pending {
		if id.Less(from) {
			continue
		}
		if !visit(id) {
			return nil
		}
	}
	return nil
}

// lastLiveBefore returns the last live entry below before (the stream's
// last entry for MaxID).
func lastLiveBefore(v *materialize.View, db uint8, key []byte, s codec.StreamMeta, pending []codec.ID, before codec.ID) (codec.ID, error) {
	for i := len(pending) - 1; i >= 0; i-- {
		if pending[i].Less(before) || before == codec.MaxID {
			return pending[i], nil
		}
	}
	stored := storedPart(s, pending)
	end := codec.MaxID
	if before != codec.MaxID {
		var ok bool
		if end, ok = before.Prev(); !ok {
			return codec.ID{}, nil
		}
	}
	var last codec.ID
	p, lower, upper, ok := liveBounds(db, key, stored, codec.ID{}, end)
	if !ok {
		return last, nil
	}
	err := v.IterateNoValues(lower, upper, true, func(k []byte) (bool, error) {
		id, err := codec.DecodeID(k[len(p):])
		last = id
		return false, err
	})
	return last, err
}
