package groups

import (
	"cmp"
	"math"
	"slices"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/streams"
)

// Session is one decision's XREADGROUP reads. Reads that name the same key
// and group share one pelEdit, so a later read sees what an earlier one
// delivered, as in Redis, where `XREADGROUP ... STREAMS s s > 0` returns the
// entries the '>' read just delivered again in the history read, with
// delivery count 2. Finish returns every event, once, at the end.
type Session struct {
	v     *materialize.View
	db    uint8
	edits map[sessionKey]*pelEdit
	order []*pelEdit // first-touch order: deterministic events

	parked    int   // entries the session's '>' reads parked (delayed delivery)
	parkedDue int64 // the earliest due time among them
}

type sessionKey struct{ key, group string }

// NewSession starts the reads of one decision against v in database db.
func NewSession(v *materialize.View, db uint8) *Session {
	return &Session{v: v, db: db}
}

// lookup returns the stream's metadata and the group's edit, started on
// first use. Errors: ErrNoGroup, materialize.ErrWrongType.
func (s *Session) lookup(key, group []byte) (codec.Meta, *pelEdit, error) {
	if e, ok := s.edits[sessionKey{string(key), string(group)}]; ok {
		m, _, err := streams.Meta(s.v, s.db, key)
		return m, e, err // XREADGROUP changes no stream metadata
	}
	m, g, err := Lookup(s.v, s.db, key, group)
	if err != nil {
		return m, nil, err
	}
	e := newPELEdit(s.v, s.db, key, group, g)
	if s.edits == nil {
		s.edits = map[sessionKey]*pelEdit{}
	}
	s.edits[sessionKey{string(key), string(group)}] = e
	s.order = append(s.order, e)
	return m, e, nil
}

// ReadNew delivers entries after the group's last-delivered-id to the
// consumer (XREADGROUP with '>'): they enter the PEL (unless NoAck) with
// delivery count 1, and last-delivered-id moves to the last one. The
// consumer is created if needed and its seen-time updated even when nothing
// is delivered. Entries not yet due (delayed delivery) are passed and
// parked (Parked): they take no COUNT. Errors: ErrNoGroup,
// materialize.ErrWrongType.
// https://redis.io/docs/latest/commands/xreadgroup/
func (s *Session) ReadNew(key []byte, a ReadArgs) ([]streams.Entry, error) {
	m, edit, err := s.lookup(key, a.Group)
	if err != nil {
		return nil, err
	}
	now := s.v.NowMs()
	entries, parked, err := s.takeNew(edit, key, a, a.Count, now)
	if err != nil {
		return nil, err
	}
	// active-time (Redis 7.2) moves only when entries enter the PEL.
	if err := edit.touch(a.Consumer, now, len(entries) > 0 && !a.NoAck); err != nil {
		return nil, err
	}
	return entries, s.deliverNew(m, edit, entries, parked, a, now)
}

// ParkMax bounds the entries not yet due that one '>' read of one stream
// parks: the read stops after that many (last-delivered-id at the last),
// so that a stream of many delayed entries costs a read no more than that.
var ParkMax = 1000

// takeNew walks the entries after the group's last-delivered-id, as the
// edit leaves it, for a '>' read: up to count (<= 0: all) entries due at
// now that fit a.Bytes are returned, to deliver; entries not yet due are
// parked on the way (at most ParkMax), and their IDs returned in parked.
// last-delivered-id moves over both.
func (s *Session) takeNew(edit *pelEdit, key []byte, a ReadArgs, count int, now int64) (entries []streams.Entry, parked []codec.ID, err error) {
	err = streams.Each(s.v, s.db, key, edit.g.LastDeliveredID, func(e streams.Entry) (bool, error) {
		if !e.Due(now) {
			if err := s.park(edit, e); err != nil {
				return false, err
			}
			parked = append(parked, e.ID)
			return len(parked) < ParkMax, nil
		}
		if !a.Bytes.Fits(e) {
			return false, nil
		}
		entries = append(entries, e)
		return count <= 0 || len(entries) < count, nil
	})
	return entries, parked, err
}

// park puts e, not yet due, into the group's PEL unowned at its due time
// (delayed delivery): claims take it once due. An entry already pending (a
// group moved back by XGROUP SETID) is left as it is.
func (s *Session) park(edit *pelEdit, e streams.Entry) error {
	if _, pending, err := edit.entry(e.ID); err != nil || pending {
		return err
	}
	// Parked entries count in the group's Nacked (unowned entries), whose
	// invariant wants a NACK sequence above every one in use.
	edit.g.NackNext = max(edit.g.NackNext, 1)
	if err := edit.set(e.ID, codec.PELEntry{DeliveryTimeMs: e.DueMs, Parked: true}, nil); err != nil {
		return err
	}
	if s.parked == 0 || e.DueMs < s.parkedDue {
		s.parkedDue = e.DueMs
	}
	s.parked++
	return nil
}

// Parked returns how many entries the session's reads parked (delayed
// delivery) and the earliest due time among them (0 when none).
func (s *Session) Parked() (n int, firstDueMs int64) { return s.parked, s.parkedDue }

// deliverNew records the delivery of new entries (after last-delivered-id)
// to a.Consumer: into the PEL unless NoAck, and last-delivered-id and
// entries-read moved past every entry passed: the delivered ones and the
// parked ones (ascending, as entries), in ID order.
func (s *Session) deliverNew(m codec.Meta, edit *pelEdit, entries []streams.Entry, parked []codec.ID, a ReadArgs, now int64) error {
	if len(entries) == 0 && len(parked) == 0 {
		return nil
	}
	// An entry past last-delivered-id is pending already only if the PEL
	// may hold such entries (Group.PELBounded): otherwise no lookup.
	last, bounded := edit.g.LastDeliveredID, edit.g.PELBounded
	for i, j := 0, 0; i < len(entries) || j < len(parked); {
		if j == len(parked) || (i < len(entries) && entries[i].ID.Less(parked[j])) {
			advance(m.Stream, &edit.g, entries[i].ID)
			i++
		} else {
			advance(m.Stream, &edit.g, parked[j])
			j++
		}
	}
	edit.gDirty = true
	for _, e := range entries {
		if a.NoAck {
			continue
		}
		var prev codec.PELEntry
		pending := false
		if _, staged := edit.staged[e.ID]; staged || !bounded || !last.Less(e.ID) {
			var err error
			if prev, pending, err = edit.entry(e.ID); err != nil {
				return err
			}
		}
		pe := codec.PELEntry{DeliveryTimeMs: now, DeliveryCount: 1, Consumer: a.Consumer}
		var was *codec.PELEntry
		if pending {
			was = &prev
		}
		if err := edit.set(e.ID, pe, was); err != nil {
			return err
		}
	}
	return nil
}

// Delivered is one entry of an XREADGROUP CLAIM reply: IdleMs is how long
// ago the entry was last delivered and Deliveries how many times it had
// been, before this read (both 0 for a new entry).
type Delivered struct {
	streams.Entry
	IdleMs     int64
	Deliveries uint64
}

// ReadClaim is XREADGROUP '>' with CLAIM min-idle-time (Redis 8.4): first
// the group's pending entries idle at least a.MinIdleMs, whoever owns
// them, oldest delivery first (ties in ID order), claimed for a.Consumer
// (delivery count + 1, delivered now; NOACK does not apply to them), then
// new entries as ReadNew delivers them, together at most a.Count. A parked
// entry (delayed delivery) is idle from its due time on, so it is claimed
// once it has been due a.MinIdleMs, with delivery count 0 before. Pending
// entries deleted from the stream are not returned and are removed from
// the PEL, as XAUTOCLAIM does (Redis 8.4 leaves them, so they keep taking
// COUNT from every CLAIM read and never clear); they do not count against
// a.Count. Claims do not move last-delivered-id. Errors: ErrNoGroup,
// materialize.ErrWrongType.
// https://redis.io/docs/latest/commands/xreadgroup/
func (s *Session) ReadClaim(key []byte, a ReadArgs) ([]Delivered, error) {
	m, edit, err := s.lookup(key, a.Group)
	if err != nil {
		return nil, err
	}
	now := s.v.NowMs()
	var out []Delivered
	// Deleted entries do not take COUNT: read on past them (each walk
	// removes what it found deleted, so the rounds end).
	for want := a.Count; ; {
		idle, err := s.idlePending(edit, a.MinIdleMs, want, now)
		if err != nil {
			return nil, err
		}
		dropped, err := s.claimIdle(edit, key, idle, a, now, &out)
		if err != nil {
			return nil, err
		}
		if dropped == 0 || a.Count <= 0 || len(idle) < want || (a.Bytes != nil && a.Bytes.Full) {
			break
		}
		want = dropped
	}
	claimed := len(out)
	var (
		entries []streams.Entry
		parked  []codec.ID
	)
	if rest := a.Count - claimed; a.Count <= 0 || rest > 0 {
		if entries, parked, err = s.takeNew(edit, key, a, max(rest, 0), now); err != nil {
			return nil, err
		}
	}
	if err := edit.touch(a.Consumer, now, claimed > 0 || (len(entries) > 0 && !a.NoAck)); err != nil {
		return nil, err
	}
	if err := s.deliverNew(m, edit, entries, parked, a, now); err != nil {
		return nil, err
	}
	for _, e := range entries {
		out = append(out, Delivered{Entry: e})
	}
	return out, nil
}

// claimIdle claims the idle entries for a.Consumer, appending them to out,
// and removes from the PEL those whose stream entry is gone; it returns
// how many it removed. It stops when MAXSIZE's budget is spent.
func (s *Session) claimIdle(edit *pelEdit, key []byte, idle []idleEntry, a ReadArgs, now int64, out *[]Delivered) (int, error) {
	dropped := 0
	for _, p := range idle {
		e, found, err := streams.Get(s.v, s.db, key, p.id)
		if err != nil {
			return 0, err
		}
		if !found {
			if err := edit.del(p.id, p.pe); err != nil {
				return 0, err
			}
			dropped++
			continue
		}
		if edit.deadLetters(p.pe) {
			if err := edit.deadLetter(p.id, e.Fields, p.pe); err != nil {
				return 0, err
			}
			dropped++ // does not take COUNT either
			continue
		}
		if !a.Bytes.Fits(e) {
			break
		}
		prev := p.pe
		pe := prev
		pe.Consumer, pe.DeliveryTimeMs, pe.DeliveryCount, pe.NackSeq, pe.Parked = a.Consumer, now, redelivered(prev.DeliveryCount), 0, false
		if err := edit.set(p.id, pe, &prev); err != nil {
			return 0, err
		}
		*out = append(*out, Delivered{Entry: e, IdleMs: max(now-prev.DeliveryTimeMs, 0), Deliveries: prev.DeliveryCount})
	}
	return dropped, nil
}

type idleEntry struct {
	id codec.ID
	pe codec.PELEntry
}

// idlePending returns up to count (<= 0: all) of the group's pending
// entries idle at least minIdle ms at now, oldest delivery first, as the
// edit leaves them. It walks the W index (codec.PELTimeKey) from its start
// and stops at the first entry delivered too recently; an index key whose
// entry has since moved is skipped. Groups created before the index
// (TimeIndexed unset) are scanned whole instead.
func (s *Session) idlePending(edit *pelEdit, minIdle int64, count int, now int64) ([]idleEntry, error) {
	if edit.g.PEL.Count == 0 {
		return nil, nil
	}
	var out []idleEntry
	if !edit.g.TimeIndexed {
		ids, err := pendingIDs(s.v, codec.GroupPrefix(codec.TagPEL, s.db, edit.key, edit.group), edit.g.PEL, codec.ID{}, codec.MaxID)
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			pe, pending, err := edit.entry(id)
			if err != nil {
				return nil, err
			}
			if pending && now-pe.IndexTime() >= minIdle {
				pe.Consumer = append([]byte(nil), pe.Consumer...)
				out = append(out, idleEntry{id, pe})
			}
		}
		slices.SortFunc(out, func(a, b idleEntry) int {
			if a.pe.IndexTime() != b.pe.IndexTime() {
				return cmp.Compare(a.pe.IndexTime(), b.pe.IndexTime())
			}
			return a.id.Compare(b.id)
		})
		if count > 0 && len(out) > count {
			out = out[:count]
		}
		return out, nil
	}
	p := codec.GroupPrefix(codec.TagPELTime, s.db, edit.key, edit.group)
	// From the group's first W key: a lower bound even mid-decision (the
	// edit moves it down when it adds a smaller key).
	lower := codec.PELTimeKey(s.db, edit.key, edit.group, edit.g.TimeFirst.Time, edit.g.TimeFirst.ID)
	err := s.v.IterateNoValues(lower, codec.PrefixEnd(p), false, func(k []byte) (bool, error) {
		pos, err := decodeTimeKey(k[len(p):])
		if err != nil {
			return false, err
		}
		if now-pos.Time < minIdle {
			return false, nil
		}
		pe, pending, err := edit.entry(pos.ID)
		if err != nil || !pending || max(pe.IndexTime(), 0) != pos.Time {
			return err == nil, err // acknowledged or re-delivered since: a stale key
		}
		pe.Consumer = append([]byte(nil), pe.Consumer...)
		out = append(out, idleEntry{pos.ID, pe})
		return count <= 0 || len(out) < count, nil
	})
	return out, err
}

// NextClaimable returns when (Unix ms) the group's first pending entry
// that is not yet idle minIdle ms becomes so (a parked entry: minIdle ms
// after its due time): when a blocked XREADGROUP CLAIM, which found
// nothing to claim, may find something; false when no such entry is
// pending. (Entries already idle enough but not claimed are
// ones whose stream entry is gone: they never wake a reader.)
func NextClaimable(v *materialize.View, db uint8, key, group []byte, minIdle int64) (int64, bool, error) {
	_, g, err := Lookup(v, db, key, group)
	if err != nil || g.PEL.Count == 0 || !g.TimeIndexed {
		return 0, false, err
	}
	now := v.NowMs()
	if minIdle > now {
		return 0, false, nil // nothing delivered since the epoch is idle enough yet: never, in practice
	}
	from := max(g.TimeFirst.Time, now-minIdle+1)
	p := codec.GroupPrefix(codec.TagPELTime, db, key, group)
	var at int64
	found := false
	err = v.IterateNoValues(codec.PELTimeKey(db, key, group, from, codec.ID{}), codec.PrefixEnd(p), false, func(k []byte) (bool, error) {
		pos, err := decodeTimeKey(k[len(p):])
		if err != nil {
			return false, err
		}
		pe, pending, err := pelEntry(v, db, key, group, pos.ID)
		if err != nil || !pending || max(pe.IndexTime(), 0) != pos.Time {
			return err == nil, err // a stale key
		}
		at, found = addSat(pos.Time, minIdle), true // a parked entry's due time may be far
		return false, nil
	})
	return at, found, err
}

// addSat returns a+b for b >= 0, math.MaxInt64 when that overflows.
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// ReadHistory returns the consumer's own pending entries with ID > after, up
// to Count (XREADGROUP with an explicit ID). Each returned entry's delivery
// count is incremented and its delivery time set to now, as Redis does;
// entries deleted from the stream come back with nil Fields and keep their
// delivery count and time. Errors: ErrNoGroup, materialize.ErrWrongType.
func (s *Session) ReadHistory(key []byte, a ReadArgs, after codec.ID) ([]streams.Entry, error) {
	_, edit, err := s.lookup(key, a.Group)
	if err != nil {
		return nil, err
	}
	now := s.v.NowMs()
	if err := edit.touch(a.Consumer, now, false); err != nil {
		return nil, err
	}
	ids, err := s.pendingAfter(edit, a.Consumer, after, a.Count)
	if err != nil {
		return nil, err
	}
	out := make([]streams.Entry, 0, len(ids))
	for _, id := range ids {
		e, found, err := streams.Get(s.v, s.db, key, id)
		if err != nil {
			return nil, err
		}
		if !found {
			// Deleted since delivery: reported with nil fields and, as in
			// Redis, not counted as delivered again.
			if !a.Bytes.Fits(streams.Entry{ID: id}) {
				break
			}
			out = append(out, streams.Entry{ID: id})
			continue
		}
		if !a.Bytes.Fits(e) {
			break
		}
		out = append(out, e)
		pe, ok, err := edit.entry(id)
		if err != nil {
			return nil, err
		}
		if ok {
			prev := pe
			pe.DeliveryTimeMs = now
			pe.DeliveryCount = redelivered(pe.DeliveryCount)
			edit.update(id, pe, prev)
		}
	}
	return out, nil
}

// pendingAfter returns up to count (<= 0: all) of the consumer's pending IDs
// above after, in order, as the edit leaves them: the stored ones it did not
// remove, merged with the ones it added.
func (s *Session) pendingAfter(edit *pelEdit, consumer []byte, after codec.ID, count int) ([]codec.ID, error) {
	start, ok := after.Next()
	if !ok {
		return nil, nil
	}
	ce, err := edit.consumer(consumer)
	if err != nil {
		return nil, err
	}
	var ids []codec.ID
	p := codec.ConsumerPELPrefix(s.db, edit.key, edit.group, consumer)
	if lower, upper, ok := pendingBounds(p, ce.c.PEL, start, codec.MaxID); ok {
		err := s.v.IterateNoValues(lower, upper, false, func(k []byte) (bool, error) {
			id, err := codec.DecodeID(k[len(p):])
			if err != nil {
				return false, err
			}
			if ce.delta.removed[id] || ce.delta.added[id] {
				return true, nil // gone, or listed below with the additions
			}
			ids = append(ids, id)
			return count <= 0 || len(ids) < count, nil
		})
		if err != nil {
			return nil, err
		}
	}
	if len(ce.delta.added) == 0 {
		return ids, nil
	}
	for id := range ce.delta.added {
		if !id.Less(start) {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b codec.ID) int { return a.Compare(b) })
	if count > 0 && len(ids) > count {
		ids = ids[:count]
	}
	return ids, nil
}

// Finish settles every edit's PEL stats and returns the session's events:
// each group's in first-touch order, PEL events first, then the consumers'
// and the group's new values.
func (s *Session) Finish() ([]codec.Event, error) {
	var events []codec.Event
	for _, e := range s.order {
		evs, err := e.finish()
		if err != nil {
			return nil, err
		}
		events = append(events, evs...)
	}
	return events, nil
}
