package streams

import (
	"math"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
)

// IDSpec is the ID argument of XADD: "*", "ms-*" or an explicit "ms-seq".
type IDSpec struct {
	Auto    bool     // "*": ms from the clock, seq allocated
	SeqAuto bool     // "ms-*": ms given, seq allocated
	ID      codec.ID // the given ms (and seq unless SeqAuto)
}

// AddArgs are XADD's options.
type AddArgs struct {
	ID         IDSpec
	NoMkStream bool
	Trim       *Trim // nil: no trimming
	IDMP       *IDMP // nil: no idempotency check (IDMP requires an Auto ID)
	// Delay, when not nil, delays the entry's delivery (XADD DELAY or
	// DELIVERAT, a Sediment extension; requires an Auto ID).
	Delay  *Delay
	Config Config
}

// Delay is XADD's DELAY ms or DELIVERAT unix-ms (a Sediment extension,
// docs/streams.md "Delayed delivery"): the entry is added now, with its
// ID, and XRANGE, XLEN and XINFO see it at once; XREAD and XREADGROUP '>'
// do not deliver it before its due time.
type Delay struct {
	Ms int64 // >= 0: milliseconds after the decision time, or Unix ms with At
	At bool  // DELIVERAT: Ms is the due time itself
}

// DueMs returns the due time (Unix ms) of an entry added at nowMs: 0 when
// it is due at once (DELAY 0, a DELIVERAT not after nowMs), so the entry
// is an ordinary one.
func (d *Delay) DueMs(nowMs int64) int64 {
	if d == nil {
		return 0
	}
	due := d.Ms
	if !d.At {
		due = nowMs + d.Ms
		if due < nowMs { // overflow: never due, in practice
			due = math.MaxInt64
		}
	}
	if due <= nowMs {
		return 0
	}
	return due
}

// nextID resolves spec against the stream's top item, following Redis's
// streamAppendItem: "*" uses max(now, last.ms); "ms-*" continues last's
// sequence when ms equals last.ms.
func nextID(spec IDSpec, last codec.ID, nowMs int64) (codec.ID, error) {
	switch {
	case spec.Auto:
		ms := uint64(nowMs)
		if ms > last.Ms {
			return codec.ID{Ms: ms}, nil
		}
		next, ok := last.Next()
		if !ok {
			return codec.ID{}, ErrExhausted
		}
		return next, nil
	case spec.SeqAuto:
		ms := spec.ID.Ms
		switch {
		case ms > last.Ms:
			return codec.ID{Ms: ms}, nil
		case ms < last.Ms:
			return codec.ID{}, ErrIDTooSmall
		case last.Seq == math.MaxUint64:
			return codec.ID{}, ErrSeqOverflow
		}
		id := codec.ID{Ms: ms, Seq: last.Seq + 1}
		if id.IsZero() {
			return codec.ID{}, ErrIDZero
		}
		return id, nil
	}
	if spec.ID.IsZero() {
		return codec.ID{}, ErrIDZero
	}
	if !last.Less(spec.ID) {
		return codec.ID{}, ErrIDTooSmall
	}
	return spec.ID, nil
}

// Add appends an entry with fields fv (field, value, ...) to key (XADD),
// creating the stream unless NoMkStream, then trims it. With a Delay the
// entry's value carries its due time (its OpXAdd's tail, XAddWithDelay). It returns the new
// entry's ID and false (and no events) when NoMkStream found no stream.
// With IDMP (Redis 8.6), a producer's idempotent ID it recorded before
// (and that has not expired or been evicted) adds nothing and returns the
// ID of the entry it added then, even if that entry is gone since;
// otherwise the new entry's ID is recorded.
// Errors: ErrIDZero, ErrIDTooSmall, ErrExhausted, ErrSeqOverflow,
// materialize.ErrWrongType.
// https://redis.io/docs/latest/commands/xadd/
func Add(v *materialize.View, db uint8, key []byte, fv [][]byte, a AddArgs) (codec.ID, bool, []codec.Event, error) {
	m, ok, events, err := metaForWrite(v, db, key)
	if err != nil {
		return codec.ID{}, false, nil, err
	}
	if !ok {
		if a.NoMkStream {
			return codec.ID{}, false, nil, nil
		}
		m = NewStreamMeta()
	}
	var (
		ie  *idmpEdit
		iid []byte
	)
	if a.IDMP != nil {
		iid = a.IDMP.IID
		if a.IDMP.Auto {
			iid = AutoIID(fv)
		}
		ie = newIDMPEdit(v, db, key, a.Config)
		if !ok {
			ie.fresh() // a new stream: an expired one's records go with it
		} else {
			if err := ie.load(); err != nil {
				return codec.ID{}, false, nil, err
			}
			if err := ie.expireHead(a.IDMP.PID, v.NowMs()); err != nil {
				return codec.ID{}, false, nil, err
			}
			id, dup, err := ie.lookup(a.IDMP.PID, iid)
			if err != nil {
				return codec.ID{}, false, nil, err
			}
			if dup {
				ie.st.Duplicates++
				ie.dirty = true
				return id, true, append(events, ie.finish()...), nil
			}
		}
	}
	if m.Stream.LastID == codec.MaxID {
		return codec.ID{}, false, nil, ErrExhausted
	}
	id, err := nextID(a.ID, m.Stream.LastID, v.NowMs())
	if err != nil {
		return codec.ID{}, false, nil, err
	}
	prevExpire := m.ExpireAtMs
	s := &m.Stream
	nodeSize := a.Config.NodeSize()
	if a.Trim != nil {
		nodeSize = a.Trim.NodeSize
	}
	ed := newNodeEditor(v, db, key, s, nodeSize)
	ed.append(id, fv, a.Config)
	add := codec.XAddEvent(db, key, id, fv)
	if due := a.Delay.DueMs(v.NowMs()); due > 0 {
		add = codec.XAddWithDelay(add, due)
	}
	events = append(events, add)
	if s.Length == 0 {
		s.FirstID = id
	}
	s.Length++
	s.LastID = id
	s.EntriesAdded++
	if a.Trim != nil {
		// planTrim counts the new entry among m's length but finds it in pending.
		pl, err := planTrim(ed, []codec.ID{id}, *a.Trim)
		if err != nil {
			return codec.ID{}, false, nil, err
		}
		if pl.n > 0 {
			events = append(events, applyTrim(db, key, &m, pl))
		}
	}
	events = append(events, ed.events()...)
	if ie != nil {
		if err := ie.add(a.IDMP.PID, iid, id); err != nil {
			return codec.ID{}, false, nil, err
		}
		events = append(events, ie.finish()...)
	}
	events = append(events, codec.SetMetaEvent(db, key, m, prevExpire))
	return id, true, events, nil
}

// AddAll appends entries with fields fvs[i] to key, in order, with IDs
// from the clock ("*"), creating the stream if needed: several XADDs to one
// key within one decision (a claim moving entries to a dead-letter
// stream). Its nodes follow the default stream-node-max-* (DefaultConfig),
// not the server's. Errors: ErrExhausted, materialize.ErrWrongType.
func AddAll(v *materialize.View, db uint8, key []byte, fvs [][][]byte) ([]codec.ID, []codec.Event, error) {
	m, ok, events, err := metaForWrite(v, db, key)
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		m = NewStreamMeta()
	}
	prevExpire := m.ExpireAtMs
	s := &m.Stream
	ed := newNodeEditor(v, db, key, s, DefaultNodeMaxEntries)
	ids := make([]codec.ID, 0, len(fvs))
	for _, fv := range fvs {
		if s.LastID == codec.MaxID {
			return nil, nil, ErrExhausted
		}
		id, err := nextID(IDSpec{Auto: true}, s.LastID, v.NowMs())
		if err != nil {
			return nil, nil, err
		}
		events = append(events, codec.XAddEvent(db, key, id, fv))
		if s.Length == 0 {
			s.FirstID = id
		}
		s.Length++
		s.LastID = id
		s.EntriesAdded++
		ed.append(id, fv, DefaultConfig)
		ids = append(ids, id)
	}
	events = append(events, ed.events()...)
	return ids, append(events, codec.SetMetaEvent(db, key, m, prevExpire)), nil
}
