package groups

import (
	"cmp"
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
// is delivered. Errors: ErrNoGroup, materialize.ErrWrongType.
// https://redis.io/docs/latest/commands/xreadgroup/
func (s *Session) ReadNew(key []byte, a ReadArgs) ([]streams.Entry, error) {
	m, edit, err := s.lookup(key, a.Group)
	if err != nil {
		return nil, err
	}
	entries, err := streams.After(s.v, s.db, key, edit.g.LastDeliveredID, a.Count)
	if err != nil {
		return nil, err
	}
	entries = a.Bytes.Cut(entries)
	now := s.v.NowMs()
	// active-time (Redis 7.2) moves only when entries enter the PEL.
	if err := edit.touch(a.Consumer, now, len(entries) > 0 && !a.NoAck); err != nil {
		return nil, err
	}
	return entries, s.deliverNew(m, edit, entries, a, now)
}

// deliverNew records the delivery of new entries (after last-delivered-id)
// to a.Consumer: into the PEL unless NoAck, and last-delivered-id and
// entries-read moved past them.
func (s *Session) deliverNew(m codec.Meta, edit *pelEdit, entries []streams.Entry, a ReadArgs, now int64) error {
	if len(entries) == 0 {
		return nil
	}
	for _, e := range entries {
		if a.NoAck {
			continue
		}
		prev, pending, err := edit.entry(e.ID)
		if err != nil {
			return err
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
	for _, e := range entries {
		advance(m.Stream, &edit.g, e.ID)
	}
	edit.gDirty = true
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
// new entries as ReadNew delivers them, together at most a.Count. Pending
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
	var entries []streams.Entry
	if rest := a.Count - claimed; a.Count <= 0 || rest > 0 {
		if entries, err = streams.After(s.v, s.db, key, edit.g.LastDeliveredID, max(rest, 0)); err != nil {
			return nil, err
		}
		entries = a.Bytes.Cut(entries)
	}
	if err := edit.touch(a.Consumer, now, claimed > 0 || (len(entries) > 0 && !a.NoAck)); err != nil {
		return nil, err
	}
	if err := s.deliverNew(m, edit, entries, a, now); err != nil {
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
		pe.Consumer, pe.DeliveryTimeMs, pe.DeliveryCount, pe.NackSeq = a.Consumer, now, redelivered(prev.DeliveryCount), 0
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
	err := s.v.Iterate(lower, codec.PrefixEnd(p), false, func(k, _ []byte) (bool, error) {
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
// that is not yet idle minIdle ms becomes so: when a blocked XREADGROUP
// CLAIM, which found nothing to claim, may find something; false when no
// such entry is pending. (Entries already idle enough but not claimed are
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
	err = v.Iterate(codec.PELTimeKey(db, key, group, from, codec.ID{}), codec.PrefixEnd(p), false, func(k, _ []byte) (bool, error) {
		pos, err := decodeTimeKey(k[len(p):])
		if err != nil {
			return false, err
		}
		pe, pending, err := pelEntry(v, db, key, group, pos.ID)
		if err != nil || !pending || max(pe.IndexTime(), 0) != pos.Time {
			return err == nil, err // a stale key
		}
		at, found = pos.Time+minIdle, true
		return false, nil
	})
	return at, found, err
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
		err := s.v.Iterate(lower, upper, false, func(k, _ []byte) (bool, error) {
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
