package groups

import (
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
	now := s.v.NowMs()
	// active-time (Redis 7.2) moves only when entries enter the PEL.
	if err := edit.touch(a.Consumer, now, len(entries) > 0 && !a.NoAck); err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, nil
	}
	for _, e := range entries {
		if a.NoAck {
			continue
		}
		prev, pending, err := edit.entry(e.ID)
		if err != nil {
			return nil, err
		}
		pe := codec.PELEntry{DeliveryTimeMs: now, DeliveryCount: 1, Consumer: a.Consumer}
		if err := edit.set(e.ID, pe, pending, prev.Consumer); err != nil {
			return nil, err
		}
	}
	for _, e := range entries {
		advance(m.Stream, &edit.g, e.ID)
	}
	edit.gDirty = true
	return entries, nil
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
			out = append(out, streams.Entry{ID: id})
			continue
		}
		out = append(out, e)
		pe, ok, err := edit.entry(id)
		if err != nil {
			return nil, err
		}
		if ok {
			pe.DeliveryTimeMs = now
			pe.DeliveryCount++
			edit.update(id, pe)
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
