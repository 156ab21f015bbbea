package groups

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/streams"
)

// pelEdit stages one decision's changes to a group's PEL and keeps the
// PELStats of the group and of each consumer in step with them, so that no
// later read counts a PEL or seeks from the start of its prefix (where
// acknowledged entries leave deletions behind until compaction).
//
// Every PEL change of a decision goes through one pelEdit: set and del emit
// the PEL events at once; finish emits the group's and the touched
// consumers' new values after them. The view does not see the edit's own
// events (they apply after the decision), so the edit remembers what it
// removed and added for the one read it does: finding a new first pending
// ID when the old one left, by seeking from the old one.
type pelEdit struct {
	v          *materialize.View
	db         uint8
	key, group []byte

	g      codec.Group
	gDirty bool
	gEdit  pelDelta

	consumers map[string]*consumerEdit
	order     []string // consumer names in first-touch order: deterministic events
	events    []codec.Event

	// staged is the PEL entries this edit wrote (nil: acknowledged or
	// dropped), so that an ID named twice, or a stream read twice in one
	// decision, sees the first change (entry).
	staged map[codec.ID]*codec.PELEntry

	// The W keys (delivery-time index) the edit added and removed, and
	// whether the group's first W key (Group.TimeFirst) left.
	wAdded, wRemoved map[codec.PELTimePos]bool
	wStale           bool
	wEmptied         bool             // it left with nothing after it: no seek
	timeFirst0       codec.PELTimePos // TimeFirst when the edit began

	// The group's runs (codec.Group.PELNext, TimeNext) as the edit leaves
	// them; finish writes them back. pelNextIn and timeNextIn are the runs
	// when the edit began: a change to them alone rewrites the group.
	pRun       run[codec.ID]
	tRun       run[codec.PELTimePos]
	pelNextIn  []codec.ID
	timeNextIn []codec.PELTimePos

	dead [][][]byte // the dead-letter entries' fields, added by finish
}

// deadLetters reports whether a claim must move the pending entry pe to
// the group's dead-letter stream instead of delivering it: dead letters
// are on and pe was delivered MaxDeliveries times.
func (e *pelEdit) deadLetters(pe codec.PELEntry) bool {
	return e.g.MaxDeliveries > 0 && pe.DeliveryCount >= e.g.MaxDeliveries
}

// deadLetter removes id (pending as prev, its stream entry entry, nil
// fields when deleted) from the PEL and queues its dead-letter entry: the
// source, the delivery history, then the entry's fields.
func (e *pelEdit) deadLetter(id codec.ID, fields [][]byte, prev codec.PELEntry) error {
	if err := e.del(id, prev); err != nil {
		return err
	}
	fv := [][]byte{
		[]byte("dl-stream"), e.key, []byte("dl-group"), e.group, []byte("dl-id"), []byte(id.String()),
		[]byte("dl-deliveries"), []byte(strconv.FormatUint(prev.DeliveryCount, 10)), []byte("dl-consumer"), prev.Consumer,
	}
	e.dead = append(e.dead, append(fv, fields...))
	e.g.DeadLettered++
	e.gDirty = true
	return nil
}

// pelDelta is what one edit did to one PEL (the group's or a consumer's):
// IDs it removed from it and IDs it added to it.
type pelDelta struct {
	removed map[codec.ID]bool
	added   map[codec.ID]bool
	stale   bool // the first pending ID left: seek for the new one
	// r is the group's PELNext run (nil for a consumer's PEL, which keeps
	// none); emptied: the first left with nothing after it, so the new
	// first is the least ID added since, and no seek is needed.
	r       *run[codec.ID]
	emptied bool
}

type consumerEdit struct {
	name    []byte
	c       codec.Consumer
	exists  bool
	dirty   bool
	dropped bool // deleted by DELCONSUMER: no value is written back
	delta   pelDelta
}

// newPELEdit starts an edit of group, whose current value (from Lookup) is g.
func newPELEdit(v *materialize.View, db uint8, key, group []byte, g codec.Group) *pelEdit {
	e := &pelEdit{v: v, db: db, key: key, group: group, g: g, consumers: map[string]*consumerEdit{}, timeFirst0: g.TimeFirst,
		pelNextIn: g.PELNext, timeNextIn: g.TimeNext}
	e.pRun.init(g.PELNext, g.PEL.Count, codec.ID.Compare, !g.PELUnknown)
	e.tRun.init(g.TimeNext, g.PEL.Count, codec.PELTimePos.Compare, !g.PELUnknown && g.TimeIndexed)
	e.gEdit.r = &e.pRun
	return e
}

// timePos is id's place in the W index: its W key's time (below 0 as 0)
// and ID.
func timePos(id codec.ID, pe codec.PELEntry) codec.PELTimePos {
	return codec.PELTimePos{Time: max(pe.IndexTime(), 0), ID: id}
}

// wAdd records a W key written; empty tells whether the PEL was empty
// before it.
func (e *pelEdit) wAdd(p codec.PELTimePos, empty bool) {
	if e.wAdded == nil {
		e.wAdded, e.wRemoved = map[codec.PELTimePos]bool{}, map[codec.PELTimePos]bool{}
	}
	e.wAdded[p] = true
	delete(e.wRemoved, p)
	switch {
	case empty || p.Less(e.g.TimeFirst):
		switch {
		case empty:
			e.tRun.empty()
		case e.wStale:
			e.tRun.forget()
		default:
			e.tRun.displaced(e.g.TimeFirst)
		}
		e.g.TimeFirst, e.wStale, e.wEmptied = p, false, false
	case !e.wStale:
		e.tRun.add(p)
	}
}

// wRemove records a W key deleted.
func (e *pelEdit) wRemove(p codec.PELTimePos) {
	if e.wAdded == nil {
		e.wAdded, e.wRemoved = map[codec.PELTimePos]bool{}, map[codec.PELTimePos]bool{}
	}
	e.wRemoved[p] = true
	delete(e.wAdded, p)
	switch {
	case e.wStale:
	case p == e.g.TimeFirst:
		if next, ok := e.tRun.pop(); ok {
			e.g.TimeFirst = next
			return
		}
		e.wStale, e.wEmptied = true, e.tRun.complete
		e.tRun.forget()
	default:
		e.tRun.remove(p)
	}
}

// settleTime finds Group.TimeFirst again when the first W key left: the
// smallest of the keys this edit added and the first stored key at or
// above the old first that this edit did not remove.
func (e *pelEdit) settleTime() error {
	if !e.wStale {
		return nil
	}
	e.wStale = false
	emptied := e.wEmptied
	e.wEmptied = false
	if e.g.PEL.Count == 0 {
		e.g.TimeFirst = codec.PELTimePos{}
		e.tRun.forget()
		return nil
	}
	added := sortedKeys(e.wAdded, codec.PELTimePos.Compare)
	if emptied {
		// Nothing was left after the first: the index is what the edit
		// added since.
		if len(added) == 0 {
			return fmt.Errorf("groups: delivery-time index of %q emptied with %d pending: %w", e.group, e.g.PEL.Count, codec.ErrCorrupt)
		}
		e.g.TimeFirst = added[0]
		e.tRun.refill(added[1:], true)
		return nil
	}
	pre := codec.GroupPrefix(codec.TagPELTime, e.db, e.key, e.group)
	upper, want := codec.PrefixEnd(pre), 1+codec.PELRunMax
	if !e.tRun.on {
		want = 1
		if len(added) > 0 {
			upper = codec.PELTimeKey(e.db, e.key, e.group, added[0].Time, added[0].ID)
		}
	}
	var stored []codec.PELTimePos
	lower := codec.PELTimeKey(e.db, e.key, e.group, e.g.TimeFirst.Time, e.g.TimeFirst.ID)
	err := e.v.IterateNoValues(lower, upper, false, func(k []byte) (bool, error) {
		p, err := decodeTimeKey(k[len(pre):])
		if err != nil || e.wRemoved[p] {
			return err == nil, err
		}
		stored = append(stored, p)
		return len(stored) < want, nil
	})
	if err != nil {
		return err
	}
	keys, complete := mergeRun(stored, added, len(stored) < want, codec.PELTimePos.Compare)
	if len(keys) == 0 {
		e.g.TimeFirst = codec.PELTimePos{} // the index lacks keys (a group from before it): readers scan from its start
		e.tRun.forget()
		return nil
	}
	e.g.TimeFirst = keys[0]
	e.tRun.refill(keys[1:], complete)
	return nil
}

// sortedKeys returns the keys of m in the order cmp gives.
func sortedKeys[T comparable](m map[T]bool, cmp func(a, b T) int) []T {
	if len(m) == 0 {
		return nil
	}
	return slices.SortedFunc(maps.Keys(m), cmp)
}

// mergeRun merges the keys a seek found (stored, in order) with the keys
// the edit added (added, in order) into the index's first keys: every key
// up to the last stored one, and every added key too when the seek reached
// the index's end (exhausted), which makes the result complete. A key in
// both (removed and added again by the edit) appears once.
func mergeRun[T comparable](stored, added []T, exhausted bool, cmp func(a, b T) int) (keys []T, complete bool) {
	keys = make([]T, 0, len(stored)+len(added))
	i, j := 0, 0
	for i < len(stored) || j < len(added) {
		switch {
		case j == len(added) || i < len(stored) && cmp(stored[i], added[j]) < 0:
			keys = append(keys, stored[i])
			i++
		case i == len(stored):
			if !exhausted {
				return keys, false
			}
			keys = append(keys, added[j])
			j++
		default:
			if stored[i] == added[j] {
				i++
			}
			keys = append(keys, added[j])
			j++
		}
	}
	return keys, exhausted
}

// decodeTimeKey decodes the time and ID after a W key's group prefix.
func decodeTimeKey(b []byte) (codec.PELTimePos, error) {
	if len(b) != 8+codec.IDLen {
		return codec.PELTimePos{}, codec.ErrCorrupt
	}
	id, err := codec.DecodeID(b[8:])
	return codec.PELTimePos{Time: int64(binary.BigEndian.Uint64(b)), ID: id}, err
}

// entry returns id's PEL entry as this edit left it: staged by the edit, or
// else stored. pending is false when id is not in the PEL.
func (e *pelEdit) entry(id codec.ID) (pe codec.PELEntry, pending bool, err error) {
	if cur, ok := e.staged[id]; ok {
		if cur == nil {
			return codec.PELEntry{}, false, nil
		}
		return *cur, true, nil
	}
	return pelEntry(e.v, e.db, e.key, e.group, id)
}

func (e *pelEdit) stage(id codec.ID, pe *codec.PELEntry) {
	if e.staged == nil {
		e.staged = map[codec.ID]*codec.PELEntry{}
	}
	e.staged[id] = pe
}

// consumer returns the consumer's staged state, loading it on first use.
func (e *pelEdit) consumer(name []byte) (*consumerEdit, error) {
	if ce, ok := e.consumers[string(name)]; ok {
		return ce, nil
	}
	c, ok, err := loadConsumer(e.v, e.db, e.key, e.group, name)
	if err != nil {
		return nil, err
	}
	if !ok {
		c = codec.Consumer{ActiveTimeMs: -1}
	}
	ce := &consumerEdit{name: append([]byte(nil), name...), c: c, exists: ok}
	e.consumers[string(name)] = ce
	e.order = append(e.order, string(name))
	return ce, nil
}

// touch stamps the consumer's seen-time (and active-time when delivered is
// set), creating the consumer if needed.
func (e *pelEdit) touch(name []byte, now int64, delivered bool) error {
	ce, err := e.consumer(name)
	if err != nil {
		return err
	}
	ce.c.SeenTimeMs = now
	if delivered {
		ce.c.ActiveTimeMs = now
	}
	ce.dirty = true
	return nil
}

// set records a delivery of id to pe.Consumer. prev is id's entry when
// it was pending (nil when not): its owner (a consumer name may be empty)
// and delivery time.
//
// A NACKed entry (Redis 8.8) has no owner: it is in no consumer's PEL, and
// the group counts it in Nacked.
func (e *pelEdit) set(id codec.ID, pe codec.PELEntry, prev *codec.PELEntry) error {
	e.stage(id, &pe)
	e.events = append(e.events, codec.PELSetEvent(e.db, e.key, e.group, id, pe, prev))
	if prev != nil {
		e.wRemove(timePos(id, *prev))
	}
	e.wAdd(timePos(id, pe), e.g.PEL.Count == 0)
	if prev == nil {
		e.gDirty = true
		e.gEdit.add(&e.g.PEL, id)
		if e.g.LastDeliveredID.Less(id) {
			e.g.PELBounded = false
		}
	}
	if prev != nil && prev.Nacked() {
		e.g.Nacked--
		e.gDirty = true
	}
	if pe.Nacked() {
		e.g.Nacked++
		e.gDirty = true
	}
	prevOwned := prev != nil && !prev.Nacked()
	if prevOwned && !pe.Nacked() && bytes.Equal(prev.Consumer, pe.Consumer) {
		return nil
	}
	if prevOwned {
		if err := e.removeFromConsumer(prev.Consumer, id); err != nil {
			return err
		}
	}
	if pe.Nacked() {
		return nil
	}
	ce, err := e.consumer(pe.Consumer)
	if err != nil {
		return err
	}
	ce.dirty = true
	ce.delta.add(&ce.c.PEL, id)
	return nil
}

// update rewrites a pending entry kept by the same consumer (a history
// re-delivery), which was prev: the PEL's membership does not change.
func (e *pelEdit) update(id codec.ID, pe, prev codec.PELEntry) {
	e.stage(id, &pe)
	e.events = append(e.events, codec.PELSetEvent(e.db, e.key, e.group, id, pe, &prev))
	e.wRemove(timePos(id, prev))
	e.wAdd(timePos(id, pe), false)
}

// del acknowledges id, whose pending entry is prev.
func (e *pelEdit) del(id codec.ID, prev codec.PELEntry) error {
	e.stage(id, nil)
	e.events = append(e.events, codec.PELDelEvent(e.db, e.key, e.group, id, prev))
	e.wRemove(timePos(id, prev))
	e.gDirty = true
	if err := e.gEdit.remove(&e.g.PEL, id); err != nil {
		return err
	}
	if prev.Nacked() {
		e.g.Nacked--
		return nil
	}
	return e.removeFromConsumer(prev.Consumer, id)
}

func (e *pelEdit) removeFromConsumer(owner []byte, id codec.ID) error {
	ce, err := e.consumer(owner)
	if err != nil {
		return err
	}
	ce.dirty = true
	return ce.delta.remove(&ce.c.PEL, id)
}

// drop marks the consumer deleted: finish writes no value for it (its
// pending entries must have been removed with del before).
func (e *pelEdit) drop(name []byte) error {
	ce, err := e.consumer(name)
	if err != nil {
		return err
	}
	ce.dropped = true
	return nil
}

func (d *pelDelta) add(s *codec.PELStats, id codec.ID) {
	if d.added == nil {
		d.added = map[codec.ID]bool{}
	}
	d.added[id] = true
	delete(d.removed, id)
	switch {
	case s.Count == 0 || id.Less(s.First):
		if d.r != nil {
			switch {
			case s.Count == 0:
				d.r.empty()
			case d.stale:
				d.r.forget()
			default:
				d.r.displaced(s.First)
			}
		}
		s.First = id
		d.stale, d.emptied = false, false
	case d.r != nil && !d.stale:
		d.r.add(id)
	}
	s.Count++
}

func (d *pelDelta) remove(s *codec.PELStats, id codec.ID) error {
	if s.Count == 0 {
		return fmt.Errorf("groups: PEL count below zero removing %v: %w", id, codec.ErrCorrupt)
	}
	if d.removed == nil {
		d.removed = map[codec.ID]bool{}
	}
	d.removed[id] = true
	delete(d.added, id)
	s.Count--
	switch {
	case d.stale:
	case id == s.First:
		if d.r != nil {
			if next, ok := d.r.pop(); ok {
				s.First = next
				return nil
			}
			d.emptied = d.r.complete
			d.r.forget()
		}
		d.stale = true
	case d.r != nil:
		d.r.remove(id)
	}
	return nil
}

// settle finds s.First again if the first pending ID left: the smallest of
// the IDs this edit added and the first stored ID at or above the old first
// (in the range under p) that this edit did not remove.
func (d *pelDelta) settle(v *materialize.View, s *codec.PELStats, p []byte) error {
	if !d.stale {
		return nil
	}
	d.stale = false
	emptied := d.emptied
	d.emptied = false
	if s.Count == 0 {
		s.First = codec.ID{}
		if d.r != nil {
			d.r.forget()
		}
		return nil
	}
	added := sortedKeys(d.added, codec.ID.Compare)
	if emptied {
		if len(added) == 0 {
			return codec.ErrCorrupt // Count says an entry is pending and none is
		}
		s.First = added[0]
		d.r.refill(added[1:], true)
		return nil
	}
	upper, want := codec.PrefixEnd(p), 1
	if d.r != nil && d.r.on {
		want = 1 + codec.PELRunMax
	} else if len(added) > 0 {
		upper = codec.AppendID(p[:len(p):len(p)], added[0])
	}
	var stored []codec.ID
	err := v.IterateNoValues(codec.AppendID(p[:len(p):len(p)], s.First), upper, false, func(k []byte) (bool, error) {
		id, err := codec.DecodeID(k[len(p):])
		if err != nil {
			return false, err
		}
		if d.removed[id] {
			return true, nil
		}
		stored = append(stored, id)
		return len(stored) < want, nil
	})
	if err != nil {
		return err
	}
	keys, complete := mergeRun(stored, added, len(stored) < want, codec.ID.Compare)
	if len(keys) == 0 {
		return codec.ErrCorrupt // Count says an entry is pending and none is
	}
	s.First = keys[0]
	if d.r != nil {
		d.r.refill(keys[1:], complete)
	}
	return nil
}

// finish settles the stats and returns every event of the edit: the PEL
// events in the order they were made, then the consumers' and the group's
// new values.
func (e *pelEdit) finish() ([]codec.Event, error) {
	for _, name := range e.order {
		ce := e.consumers[name]
		if ce.dropped || !ce.dirty {
			continue
		}
		if err := ce.delta.settle(e.v, &ce.c.PEL, codec.ConsumerPELPrefix(e.db, e.key, e.group, ce.name)); err != nil {
			return nil, err
		}
		e.events = append(e.events, codec.ConsumerSetEvent(e.db, e.key, e.group, ce.name, ce.c))
	}
	if err := e.settleTime(); err != nil {
		return nil, err
	}
	if e.g.TimeFirst != e.timeFirst0 || !slices.Equal(e.tRun.items, e.timeNextIn) {
		e.gDirty = true
	}
	if len(e.dead) > 0 {
		_, evs, err := streams.AddAll(e.v, e.db, []byte(e.g.DeadLetterKey), e.dead)
		if err != nil {
			return nil, err
		}
		e.events = append(e.events, evs...)
		e.dead = nil
	}
	if e.gDirty {
		if e.g.PEL.Count == 0 {
			// Nothing pending: nothing lies past last-delivered-id, and
			// every pending entry has its W key, so a group created
			// before the W index becomes indexed here.
			e.g.PELBounded, e.g.TimeIndexed = true, true
		}
		if err := e.gEdit.settle(e.v, &e.g.PEL, codec.GroupPrefix(codec.TagPEL, e.db, e.key, e.group)); err != nil {
			return nil, err
		}
	}
	if e.gDirty || !slices.Equal(e.pRun.items, e.pelNextIn) {
		// (The runs' slices are the edit's own: init copied them.)
		e.g.PELNext, e.g.TimeNext = e.pRun.items, nil
		if e.g.TimeIndexed && e.g.PEL.Count > 0 {
			e.g.TimeNext = e.tRun.items
		}
		e.events = append(e.events, codec.GroupSetEvent(e.db, e.key, e.group, e.g))
	}
	return e.events, nil
}

// setGroup replaces the group's value but keeps its PEL stats (the caller
// changes last-delivered-id or entries-read).
func (e *pelEdit) setGroup(g codec.Group) {
	bounded := e.g.PELBounded && (!g.LastDeliveredID.Less(e.g.LastDeliveredID) || e.g.PEL.Count == 0)
	g.PEL, g.PELUnknown, g.NackNext, g.Nacked, g.TimeFirst = e.g.PEL, false, e.g.NackNext, e.g.Nacked, e.g.TimeFirst
	g.PELBounded = bounded
	e.g, e.gDirty = g, true
}

// loadGroup reads the group's value; a value in the legacy layout gets its
// PEL stats recounted (once: the group's next write stores them).
func loadGroup(v *materialize.View, db uint8, key, group []byte) (codec.Group, bool, error) {
	b, ok, err := v.Get(codec.GroupKey(db, key, group))
	if err != nil || !ok {
		return codec.Group{}, false, err
	}
	g, err := codec.DecodeGroup(b)
	if err == nil {
		err = fillGroupPEL(v, db, key, group, &g)
	}
	return g, err == nil, err
}

// loadConsumer reads a consumer's value, recounting legacy PEL stats.
func loadConsumer(v *materialize.View, db uint8, key, group, consumer []byte) (codec.Consumer, bool, error) {
	b, ok, err := v.Get(codec.ConsumerKey(db, key, group, consumer))
	if err != nil || !ok {
		return codec.Consumer{}, false, err
	}
	c, err := codec.DecodeConsumer(b)
	if err == nil {
		err = fillConsumerPEL(v, db, key, group, consumer, &c)
	}
	return c, err == nil, err
}

// fillGroupPEL recounts g's PEL stats when g was decoded from the legacy
// layout (PELUnknown).
func fillGroupPEL(v *materialize.View, db uint8, key, group []byte, g *codec.Group) error {
	if !g.PELUnknown {
		return nil
	}
	s, err := recount(v, codec.GroupPrefix(codec.TagPEL, db, key, group), nil)
	g.PEL, g.PELUnknown = s, err != nil
	return err
}

// fillConsumerPEL recounts c's PEL stats when c was decoded from the legacy
// layout. Versions before the stats could leave a stale Q key behind for a
// consumer named "" (OpPELSet's previous owner was ambiguous), so only the
// IDs whose P entry the consumer owns count.
func fillConsumerPEL(v *materialize.View, db uint8, key, group, consumer []byte, c *codec.Consumer) error {
	if !c.PELUnknown {
		return nil
	}
	owned := func(id codec.ID) (bool, error) {
		pe, ok, err := pelEntry(v, db, key, group, id)
		return ok && bytes.Equal(pe.Consumer, consumer), err
	}
	s, err := recount(v, codec.ConsumerPELPrefix(db, key, group, consumer), owned)
	c.PEL, c.PELUnknown = s, err != nil
	return err
}

// recount computes the PELStats of the PEL range under p by a full scan:
// only for values written before the stats were kept. keep, when set,
// tells which IDs count.
func recount(v *materialize.View, p []byte, keep func(codec.ID) (bool, error)) (codec.PELStats, error) {
	var s codec.PELStats
	err := v.IterateNoValues(p, codec.PrefixEnd(p), false, func(k []byte) (bool, error) {
		id, err := codec.DecodeID(k[len(p):])
		if err != nil {
			return false, err
		}
		if keep != nil {
			if ok, err := keep(id); err != nil || !ok {
				return err == nil, err
			}
		}
		if s.Count == 0 {
			s.First = id
		}
		s.Count++
		return true, nil
	})
	return s, err
}

// pendingIDs returns the IDs in [start, end] of the PEL range under p
// whose stats are s, as stored (not as an edit leaves them).
func pendingIDs(v *materialize.View, p []byte, s codec.PELStats, start, end codec.ID) ([]codec.ID, error) {
	lower, upper, ok := pendingBounds(p, s, start, end)
	if !ok {
		return nil, nil
	}
	var ids []codec.ID
	err := v.IterateNoValues(lower, upper, false, func(k []byte) (bool, error) {
		id, err := codec.DecodeID(k[len(p):])
		if err != nil {
			return false, err
		}
		ids = append(ids, id)
		return true, nil
	})
	return ids, err
}

// pendingBounds returns the iterator bounds of the IDs in [start, end] of
// the PEL range under p whose stats are s, clipped below at s.First. ok is
// false when the range holds nothing.
func pendingBounds(p []byte, s codec.PELStats, start, end codec.ID) (lower, upper []byte, ok bool) {
	if s.Count == 0 || end.Less(start) || end.Less(s.First) {
		return nil, nil, false
	}
	if start.Less(s.First) {
		start = s.First
	}
	lower = codec.AppendID(p[:len(p):len(p)], start)
	upper = codec.PrefixEnd(p)
	if next, ok := end.Next(); ok {
		upper = codec.AppendID(p[:len(p):len(p)], next)
	}
	return lower, upper, true
}
