package feed

import (
	"bytes"
	"fmt"
	"math"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/internal/glob"
	"github.com/sediment-dev/sediment/materialize"
)

// SnapshotMax is the most events one snapshot page holds.
const SnapshotMax = 10000

// A snapshot event of a collection carries up to snapshotChunk elements
// (hash fields, set or sorted-set members, list elements), fewer when
// their bytes reach snapshotChunkBytes: events stay well within NATS's
// max_payload, and a large key spans several.
const (
	snapshotChunk      = 128
	snapshotChunkBytes = 64 << 10
)

// snapshotExamine bounds the keys one page looks at, per event it may
// hold: a filter that matches few keys makes short pages, not an
// unbounded walk (SCAN's COUNT bounds its work the same way).
const snapshotExamine = 10

// SnapshotFilter selects the keys of a snapshot: Match, when not nil, is a
// glob pattern on the key; Type the key's type (string, hash, set, zset,
// list, stream; "" for every type); DB the logical db as of the
// snapshot's sequence (-1: every db).
type SnapshotFilter struct {
	Match []byte
	Type  string
	DB    int
}

// SnapshotPos is a place in a snapshot: the start (the zero value), between
// two of its events, or its end (Done). Page returns the place after the
// events it returned; a place may be used again (Page from it returns the
// same events, given the same bounds).
type SnapshotPos struct {
	meta  []byte // the metadata key (T) of the key being read, or of the last key read whole; nil: the start
	stage uint8  // the stage of that key to read next (stDone: the key was read whole)
	sub   []byte // the sub-key the stage goes on from (nil: its start)
	index uint64 // the next event's index in the snapshot
	done  bool
}

// Done reports whether the snapshot has no events after p.
func (p SnapshotPos) Done() bool { return p.done }

// Index returns the number of events before p.
func (p SnapshotPos) Index() uint64 { return p.index }

// The stages of one key's events, in order; each type has some of them.
const (
	stElems     uint8 = iota // hash fields, set members, sorted-set members, list elements, stream entries
	stGroups                 // a stream's consumer groups
	stConsumers              // their consumers
	stPEL                    // their pending entries
	stIDMP                   // a stream's idempotent-production records
	stIDMPState              // and their settings and counters
	stNodes                  // a stream's node keys
	stRanks                  // a sorted set's rank blocks
	stMeta                   // the key's metadata: always last, as in a write's record
	stDone
)

// Snapshot reads the keys of a pinned state (materialize.PinnedState) as
// change-feed events (docs/change-feed.md, "Snapshot, then changes"): for
// each key, the events that make its value from nothing, in the payload
// format the feed publishes, marked "snapshot". Applied in order, then
// followed by every change-log record after Seq, they give the state after
// the last of those records.
//
// A Snapshot holds no state between pages beyond its pinned state: a page
// reads from a SnapshotPos. It is safe for concurrent use while its
// pinned state is open.
type Snapshot struct {
	st     *materialize.PinnedState
	prefix string
	f      SnapshotFilter
}

// NewSnapshot returns a Snapshot of st's keys that pass f, with subjects
// under prefix (DefaultPrefix if empty: the payloads hold none, but the
// same encoder makes them).
func NewSnapshot(st *materialize.PinnedState, prefix string, f SnapshotFilter) *Snapshot {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return &Snapshot{st: st, prefix: prefix, f: f}
}

// Seq returns the sequence of the state the snapshot reads: the events of
// the change-log records after it are the changes that follow it.
func (s *Snapshot) Seq() uint64 { return s.st.Seq() }

// Page returns the snapshot's events from pos on, at most count of them
// (1..SnapshotMax), and the place after them. maxBytes, when above 0,
// bounds the payloads' total size plus one byte each: the page ends before
// an event that would not fit, unless it is the page's first, which then
// comes whole, or truncated (Message.Truncated) with truncate. A page also
// ends after it looked at 10×count keys, so a page may hold no event and
// still not be the end (next.Done tells).
func (s *Snapshot) Page(pos SnapshotPos, count, maxBytes int, truncate bool) (next SnapshotPos, payloads [][]byte, err error) {
	if pos.done {
		return pos, nil, nil
	}
	count = min(max(count, 1), SnapshotMax)
	p := &pager{s: s, v: s.st.View(), count: count, maxBytes: maxBytes, truncate: truncate, next: pos,
		examineMax: snapshotExamine * count, storageDB: -1}
	if s.f.DB >= 0 {
		if s.f.DB > 255 {
			return SnapshotPos{done: true, index: pos.index}, nil, nil
		}
		p.storageDB = int(s.st.StorageDB(uint8(s.f.DB)))
	}
	if err := p.run(pos); err != nil {
		return pos, nil, err
	}
	return p.next, p.out, nil
}

// pager makes one page.
type pager struct {
	s          *Snapshot
	v          *materialize.View
	count      int
	maxBytes   int
	truncate   bool
	storageDB  int // -1: every db
	examineMax int
	examined   int

	out  [][]byte
	size int
	next SnapshotPos // the place after the last event taken
	meta []byte      // the current key's T key (a copy)
	err  error       // why emit refused an event, when not for room

	// The current stream's idempotent-production settings and the last
	// producer read (stIDMP).
	idmpDuration int64
	pid, pidVal  []byte
}

func (p *pager) run(pos SnapshotPos) error {
	lower := []byte{byte(codec.TagMeta)}
	if pos.meta != nil {
		lower = pos.meta
		if pos.stage >= stDone {
			lower = append(bytes.Clone(pos.meta), 0)
		}
	}
	stopped := false
	err := p.v.IterateKeys(lower, []byte{byte(codec.TagMeta) + 1}, func(k, val []byte) (bool, error) {
		stage, sub := stElems, []byte(nil)
		if pos.meta != nil && pos.stage < stDone && bytes.Equal(k, pos.meta) {
			stage, sub = pos.stage, pos.sub
		} else if p.examined >= p.examineMax {
			stopped = true
			return false, nil
		}
		p.examined++
		more, err := p.key(k, val, stage, sub)
		if err != nil || !more {
			stopped = true
			return false, err
		}
		p.next = SnapshotPos{meta: bytes.Clone(k), stage: stDone, index: p.next.index}
		return true, nil
	})
	if err == nil {
		err = p.err
	}
	if err == nil && !stopped {
		p.next = SnapshotPos{done: true, index: p.next.index}
	}
	return err
}

// key emits the events of the key whose metadata key is k and value val,
// from stage and sub on, when the filter takes it. It returns false when
// the page is full.
func (p *pager) key(k, val []byte, stage uint8, sub []byte) (bool, error) {
	dk, err := codec.DecodeKey(k)
	if err != nil {
		return false, err
	}
	db, key := dk.DB, dk.Key
	if p.storageDB >= 0 && int(db) != p.storageDB {
		return true, nil
	}
	f := p.s.f
	if f.Match != nil && !glob.Match(f.Match, key) {
		return true, nil
	}
	m, err := codec.DecodeMeta(val)
	if err != nil {
		return false, fmt.Errorf("feed: snapshot of %q: %w", key, err)
	}
	if f.Type != "" && m.Type.String() != f.Type {
		return true, nil
	}
	p.meta = nil // made at the key's first event
	p.pid, p.pidVal, p.idmpDuration = nil, nil, -1
	for ; stage < stDone; stage, sub = stage+1, nil {
		more := true
		switch {
		case stage == stElems:
			more, err = p.elements(db, key, m, sub)
		case m.Type != codec.TypeStream && stage < stRanks:
		case stage == stGroups:
			more, err = p.each(stGroups, from(sub, codec.KeyPrefix(codec.TagGroup, db, key)), db, key, codec.TagGroup, true,
				func(suffix, val []byte) (codec.Event, error) {
					group, _, err := codec.SplitName(suffix)
					return codec.Event{Op: codec.OpGroupSet, DB: db, Key: key, Args: [][]byte{group, val}}, err
				})
		case stage == stConsumers:
			more, err = p.each(stConsumers, from(sub, codec.KeyPrefix(codec.TagConsumer, db, key)), db, key, codec.TagConsumer, true,
				func(suffix, val []byte) (codec.Event, error) {
					group, rest, err := codec.SplitName(suffix)
					if err != nil {
						return codec.Event{}, err
					}
					consumer, _, err := codec.SplitName(rest)
					return codec.Event{Op: codec.OpConsumerSet, DB: db, Key: key, Args: [][]byte{group, consumer, val}}, err
				})
		case stage == stPEL:
			more, err = p.pel(db, key, sub)
		case stage == stIDMP:
			more, err = p.idmp(db, key, sub)
		case stage == stIDMPState:
			var b []byte
			var ok bool
			if b, ok, err = p.v.Get(codec.IDMPStateKey(db, key)); err == nil && ok {
				more = p.emit(codec.Event{Op: codec.OpIDMPState, DB: db, Key: key, Args: [][]byte{b}}, k, stage+1, nil)
			}
		case stage == stNodes:
			s := m.Stream
			if s.Legacy || s.Nodes <= s.Tail.Count {
				break // no node keys
			}
			var start []byte
			if start, err = headNodeKey(p.v, db, key, s); err == nil {
				more, err = p.each(stNodes, from(sub, start), db, key, codec.TagStreamNode, false,
					func(suffix, val []byte) (codec.Event, error) {
						return codec.Event{Op: codec.OpXNodeSet, DB: db, Key: key, Args: [][]byte{suffix, val}}, nil
					})
			}
		case stage == stRanks:
			if m.Type == codec.TypeZSet && m.Ranked {
				more = p.emit(codec.ZRanksEvent(db, key, true, m.Floor), k, stage+1, nil)
			}
		case stage == stMeta:
			// The stored metadata as is, but for a value kept in the
			// change log (an event carries the value); no previous TTL to
			// remove.
			ev := codec.Event{Op: codec.OpSetMeta, DB: db, Key: key, Args: [][]byte{val, codec.Int64Arg(0)}}
			if !m.Ref.IsZero() {
				var full codec.Meta
				if full, err = p.v.LoadValue(m); err != nil {
					break
				}
				ev = codec.SetMetaEvent(db, key, full, 0)
			}
			more = p.emit(ev, k, stDone, nil)
		}
		if err != nil || !more {
			return false, err
		}
	}
	return true, nil
}

// headNodeKey returns the key of a stream's first node key (the head), so
// that the walk of the node keys never steps over the deleted ones below
// it: named by s.HeadFirst, or, in metadata written before that was kept,
// found by a reverse seek from s.HeadLast down to a node key ending
// there (nodes made after an XSETID may start inside the head's range;
// docs/key-format.md §5.2). The prefix's start when none is found.
func headNodeKey(v *materialize.View, db uint8, key []byte, s codec.StreamMeta) ([]byte, error) {
	if !s.HeadFirst.IsZero() {
		return codec.StreamNodeKey(db, key, s.HeadFirst), nil
	}
	p := codec.KeyPrefix(codec.TagStreamNode, db, key)
	upper := codec.PrefixEnd(p)
	if next, ok := s.HeadLast.Next(); ok {
		upper = codec.StreamNodeKey(db, key, next)
	}
	start := p
	err := v.Iterate(p, upper, true, func(k, val []byte) (bool, error) {
		first, err := codec.DecodeID(k[len(p):])
		if err != nil {
			return false, err
		}
		n, err := codec.DecodeStreamNode(first, val)
		if err != nil {
			return false, err
		}
		if n.Last != s.HeadLast {
			return true, nil
		}
		start = bytes.Clone(k)
		return false, nil
	})
	return start, err
}

// from returns the lower bound of a stage: sub, where the stage goes on
// from, or else its start.
func from(sub, start []byte) []byte {
	if sub != nil {
		return sub
	}
	return start
}

// emit offers the page event e of the key whose T key is k, after which
// the key goes on at stage and sub. It returns false, taking nothing, when
// the page is full (or e cannot be encoded: p.err).
func (p *pager) emit(e codec.Event, k []byte, stage uint8, sub []byte) bool {
	if len(p.out) >= p.count {
		return false
	}
	b, err := p.encode(e, false)
	if err != nil {
		p.err = err
		return false
	}
	if p.maxBytes > 0 && p.size+len(b)+1 > p.maxBytes {
		if len(p.out) > 0 {
			return false
		}
		if p.truncate {
			if b, err = p.encode(e, true); err != nil {
				p.err = err
				return false
			}
		}
	}
	p.out = append(p.out, b)
	p.size += len(b) + 1
	if p.meta == nil {
		p.meta = bytes.Clone(k)
	}
	p.next = SnapshotPos{meta: p.meta, stage: stage, sub: sub, index: p.next.index + 1}
	return true
}

// encode returns e's payload as a snapshot event: the feed's message for
// an event of a record at the snapshot's sequence, marked snapshot, with
// its index in the snapshot as i, n 0 and no ULID.
func (p *pager) encode(e codec.Event, truncated bool) ([]byte, error) {
	st := p.s.st
	r := codec.Record{Seq: st.Seq(), TimeMs: st.TimeMs(), Events: []codec.Event{e}}
	m, _, err := messageOf(p.s.prefix, r, 0, st.LogicalDB)
	if err != nil {
		return nil, err
	}
	m.I, m.N, m.ULID, m.Snapshot = int(p.next.index), 0, "", true
	if truncated {
		m.Args, m.Truncated = []string{}, true
		if m.Meta != nil {
			m.Meta.Value64 = ""
		}
	}
	return m.appendJSON(make([]byte, 0, 192+len(e.Key)+4*argsLen(e)/3)), nil
}

// elements emits a collection's elements or a stream's entries.
func (p *pager) elements(db uint8, key []byte, m codec.Meta, sub []byte) (bool, error) {
	k := codec.MetaKey(db, key)
	switch m.Type {
	case codec.TypeHash, codec.TypeSet:
		tag, op := codec.TagHash, codec.OpHSet
		if m.Type == codec.TypeSet {
			tag, op = codec.TagSet, codec.OpSAdd
		}
		prefix := codec.KeyPrefix(tag, db, key)
		return p.chunked(k, from(sub, prefix), codec.PrefixEnd(prefix), nil,
			func(kk, val []byte, args [][]byte) [][]byte {
				if tag == codec.TagSet {
					return append(args, bytes.Clone(kk[len(prefix):]))
				}
				return append(args, bytes.Clone(kk[len(prefix):]), bytes.Clone(val))
			},
			func(_ []byte, args [][]byte) codec.Event { return codec.ElementsEvent(op, db, key, args) })
	case codec.TypeZSet:
		// The score index from the floor (past the tombstones of members
		// removed from the low end), so members come in score order.
		prefix := codec.KeyPrefix(codec.TagZScore, db, key)
		var bad error
		more, err := p.chunked(k, from(sub, append(bytes.Clone(prefix), m.Floor...)), codec.PrefixEnd(prefix), nil,
			func(kk, _ []byte, args [][]byte) [][]byte {
				score, member, err := codec.DecodeZScoreSuffix(kk[len(prefix):])
				if err != nil {
					bad = err
				}
				return append(args, bytes.Clone(member), codec.ScoreArg(score), nil)
			},
			func(_ []byte, args [][]byte) codec.Event { return codec.ZAddEvent(db, key, false, args) })
		if err == nil {
			err = bad
		}
		return more, err
	case codec.TypeList:
		prefix := codec.KeyPrefix(codec.TagList, db, key)
		last := int64(0)
		pos := func(kk []byte) int64 {
			n, _ := codec.DecodeListPos(kk[len(prefix):])
			return n
		}
		return p.chunked(k, from(sub, codec.ListKey(db, key, m.Head)), codec.PrefixEnd(prefix),
			func(kk []byte) bool { return pos(kk) != last+1 }, // positions are dense; a gap starts an event
			func(kk, val []byte, args [][]byte) [][]byte {
				last = pos(kk)
				return append(args, bytes.Clone(val))
			},
			func(first []byte, args [][]byte) codec.Event { return codec.ListSetEvent(db, key, pos(first), args) })
	case codec.TypeStream:
		if m.Stream.Length == 0 {
			return true, nil
		}
		start := codec.StreamEntryKey(db, key, m.Stream.FirstID)
		return p.each(stElems, from(sub, start), db, key, codec.TagStreamEntry, false,
			func(suffix, val []byte) (codec.Event, error) {
				id, err := codec.DecodeID(suffix)
				if err != nil {
					return codec.Event{}, err
				}
				// Without a trace trailer, as the feed sends XADD's; with
				// the due time of a delayed entry (its delay tail).
				fv, tail, err := codec.DecodeEntryTail(val)
				if err != nil {
					return codec.Event{}, err
				}
				e := codec.XAddEvent(db, key, id, fv)
				if tail.DueMs != 0 {
					e = codec.XAddWithDelay(e, tail.DueMs)
				}
				return e, nil
			})
	}
	return true, nil
}

// chunked walks the keys in [lower, upper) and emits them as events of up
// to snapshotChunk elements: add appends a key's arguments, mk makes the
// event of the arguments gathered from the key first on; split, when set,
// tells whether a key must start a new event. k is the T key.
func (p *pager) chunked(k, lower, upper []byte, split func(kk []byte) bool,
	add func(kk, val []byte, args [][]byte) [][]byte, mk func(first []byte, args [][]byte) codec.Event) (bool, error) {
	var first []byte
	var args [][]byte
	n, size := 0, 0
	full := false
	err := p.v.Iterate(lower, upper, false, func(kk, val []byte) (bool, error) {
		if n > 0 && (n >= snapshotChunk || size >= snapshotChunkBytes || (split != nil && split(kk))) {
			// The next page, if this event does not fit, starts at first
			// again and gathers the same elements.
			if !p.emit(mk(first, args), k, stElems, bytes.Clone(kk)) {
				full = true
				return false, nil
			}
			args, n, size = nil, 0, 0
		}
		if n == 0 {
			first = bytes.Clone(kk)
		}
		args = add(kk, val, args)
		n, size = n+1, size+len(kk)+len(val)
		return true, nil
	})
	if err != nil || full {
		return false, err
	}
	if n > 0 && !p.emit(mk(first, args), k, stElems+1, nil) {
		return false, nil
	}
	return true, nil
}

// each walks the keys of tag for (db, key) from lower on and emits one
// event per key, made by mk from the key's suffix and value (valid only
// during the call). seek: the keys are rewritten often (groups,
// consumers), so each step seeks (View.IterateKeys).
func (p *pager) each(stage uint8, lower []byte, db uint8, key []byte, tag codec.Tag, seek bool,
	mk func(suffix, val []byte) (codec.Event, error)) (bool, error) {
	prefix := codec.KeyPrefix(tag, db, key)
	return p.eachIn(stage, lower, codec.PrefixEnd(prefix), len(prefix), codec.MetaKey(db, key), seek, mk)
}

func (p *pager) eachIn(stage uint8, lower, upper []byte, skip int, k []byte, seek bool,
	mk func(suffix, val []byte) (codec.Event, error)) (bool, error) {
	full := false
	fn := func(kk, val []byte) (bool, error) {
		e, err := mk(kk[skip:], val)
		if err != nil {
			return false, err
		}
		if !p.emit(e, k, stage, append(bytes.Clone(kk), 0)) {
			full = true
			return false, nil
		}
		return true, nil
	}
	var err error
	if seek {
		err = p.v.IterateKeys(lower, upper, fn)
	} else {
		err = p.v.Iterate(lower, upper, false, fn)
	}
	if err == nil {
		err = p.err
	}
	return !full && err == nil, err
}

// pel emits the pending entries of a stream's groups, group by group,
// each from its first pending ID (past the deletions acknowledged entries
// left), from sub (a P key) on.
func (p *pager) pel(db uint8, key, sub []byte) (bool, error) {
	k := codec.MetaKey(db, key)
	gprefix := codec.KeyPrefix(codec.TagGroup, db, key)
	lower := gprefix
	var resumeGroup []byte
	if sub != nil {
		dk, err := codec.DecodeKey(sub)
		if err != nil {
			return false, err
		}
		if resumeGroup, _, err = codec.SplitName(dk.Suffix); err != nil {
			return false, err
		}
		lower = codec.GroupKey(db, key, resumeGroup)
	}
	more := true
	err := p.v.IterateKeys(lower, codec.PrefixEnd(gprefix), func(gk, gval []byte) (bool, error) {
		group, _, err := codec.SplitName(gk[len(gprefix):])
		if err != nil {
			return false, err
		}
		g, err := codec.DecodeGroup(gval)
		if err != nil {
			return false, err
		}
		if g.PEL.Count == 0 && !g.PELUnknown {
			return true, nil
		}
		group = bytes.Clone(group)
		prefix := codec.GroupPrefix(codec.TagPEL, db, key, group)
		start := prefix
		if !g.PELUnknown {
			start = codec.PELKey(db, key, group, g.PEL.First)
		}
		if resumeGroup != nil && bytes.Equal(group, resumeGroup) && bytes.Compare(sub, start) > 0 {
			start = sub
		}
		more, err = p.eachIn(stPEL, start, codec.PrefixEnd(prefix), len(prefix), k, false,
			func(suffix, val []byte) (codec.Event, error) {
				id, err := codec.DecodeID(suffix)
				if err != nil {
					return codec.Event{}, err
				}
				return codec.Event{Op: codec.OpPELSet, DB: db, Key: key, Args: [][]byte{group, codec.IDArg(id), val}}, nil
			})
		return more && err == nil, err
	})
	return more && err == nil, err
}

// idmp emits a stream's idempotent-production records (Redis 8.6's XADD
// IDMP), producer by producer in entry-ID order: each with its deadline
// (the entry ID's time plus the stream's duration, as the stream set it)
// and the producer's count and first ID as of the snapshot.
func (p *pager) idmp(db uint8, key, sub []byte) (bool, error) {
	if p.idmpDuration < 0 {
		p.idmpDuration = 0
		b, ok, err := p.v.Get(codec.IDMPStateKey(db, key))
		if err != nil || !ok {
			return err == nil, err // no records without the state
		}
		st, err := codec.DecodeIDMPState(b)
		if err != nil {
			return false, err
		}
		p.idmpDuration = int64(st.DurationS) * 1000
	}
	return p.each(stIDMP, from(sub, codec.KeyPrefix(codec.TagIDMPByID, db, key)), db, key, codec.TagIDMPByID, false,
		func(suffix, iid []byte) (codec.Event, error) {
			pid, rest, err := codec.SplitName(suffix)
			if err != nil {
				return codec.Event{}, err
			}
			id, err := codec.DecodeID(rest)
			if err != nil {
				return codec.Event{}, err
			}
			if !bytes.Equal(pid, p.pid) || p.pidVal == nil {
				p.pid = bytes.Clone(pid)
				b, ok, err := p.v.Get(codec.IDMPProducerKey(db, key, pid))
				if err != nil {
					return codec.Event{}, err
				}
				if !ok {
					return codec.Event{}, fmt.Errorf("feed: snapshot of %q: IDMP producer %q has records but no count: %w", key, pid, codec.ErrCorrupt)
				}
				p.pidVal = b
			}
			deadline := int64(min(id.Ms, math.MaxInt64/2)) + p.idmpDuration // as streams computes it
			return codec.Event{Op: codec.OpIDMPSet, DB: db, Key: key,
				Args: [][]byte{pid, iid, codec.IDArg(id), codec.Int64Arg(deadline), p.pidVal}}, nil
		})
}
