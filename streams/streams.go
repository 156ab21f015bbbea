package streams

import (
	"errors"
	"fmt"

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

// NodeMaxEntries is Redis's stream-node-max-entries default. Sediment has no
// radix-tree nodes; approximate (~) trimming removes entries in multiples of
// it, which is what Redis does for streams whose nodes are full.
const NodeMaxEntries = 100

// Entry is one stream entry. Fields holds field, value, field, value...; it
// is nil for a pending entry that has since been deleted (XREADGROUP history
// replies such entries with a null field list).
type Entry struct {
	ID     codec.ID
	Fields [][]byte
}

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
	if _, ok, err := Meta(v, db, key); err != nil || !ok {
		return nil, err
	}
	if end.Less(start) {
		return nil, nil
	}
	p := codec.KeyPrefix(codec.TagStreamEntry, db, key)
	lower := codec.AppendID(p[:len(p):len(p)], start)
	upper := codec.PrefixEnd(p)
	if next, ok := end.Next(); ok {
		upper = codec.AppendID(p[:len(p):len(p)], next)
	}
	var out []Entry
	err := v.Iterate(lower, upper, reverse, func(k, val []byte) (bool, error) {
		e, err := decodeEntry(len(p), k, val)
		if err != nil {
			return false, err
		}
		out = append(out, e)
		return count <= 0 || len(out) < count, nil
	})
	return out, err
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
	fv, err := codec.DecodeFields(val)
	return Entry{id, fv}, err == nil, err
}

func decodeEntry(prefixLen int, k, val []byte) (Entry, error) {
	id, err := codec.DecodeID(k[prefixLen:])
	if err != nil {
		return Entry{}, err
	}
	fv, err := codec.DecodeFields(val)
	if err != nil {
		return Entry{}, err
	}
	// Copy: k and val are only valid during the iteration callback.
	for i := range fv {
		fv[i] = append([]byte(nil), fv[i]...)
	}
	return Entry{id, fv}, nil
}

// firstAfter returns the first entry ID > after (or >= after when
// inclusive), skipping IDs in skip; ok is false if there is none.
func firstAfter(v *materialize.View, db uint8, key []byte, from codec.ID, skip map[codec.ID]bool) (codec.ID, bool, error) {
	p := codec.KeyPrefix(codec.TagStreamEntry, db, key)
	var (
		found codec.ID
		ok    bool
	)
	err := v.Iterate(codec.AppendID(p[:len(p):len(p)], from), codec.PrefixEnd(p), false, func(k, _ []byte) (bool, error) {
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
	gone := make(map[codec.ID]bool, len(ids))
	var del []codec.ID
	for _, id := range ids {
		if gone[id] {
			continue
		}
		has, err := v.Has(codec.StreamEntryKey(db, key, id))
		if err != nil {
			return 0, nil, err
		}
		if has {
			gone[id] = true
			del = append(del, id)
		}
	}
	if len(del) == 0 {
		return 0, nil, nil
	}
	s := &m.Stream
	s.Length -= uint64(len(del))
	for _, id := range del {
		if s.MaxDeletedID.Less(id) {
			s.MaxDeletedID = id
		}
	}
	if gone[s.FirstID] {
		first, ok, err := firstAfter(v, db, key, s.FirstID, gone)
		if err != nil {
			return 0, nil, err
		}
		if !ok {
			first = codec.ID{}
		}
		s.FirstID = first
	}
	return len(del), []codec.Event{codec.XDelEvent(db, key, del), codec.SetMetaEvent(db, key, m, m.ExpireAtMs)}, nil
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
}

// DefaultApproxLimit is the LIMIT Redis applies to '~' trimming when none is
// given: 100 * stream-node-max-entries.
const DefaultApproxLimit = 100 * NodeMaxEntries

// planTrim decides which oldest entries t removes from a stream with
// metadata m, whose entries are in Pebble except pending (IDs being added
// in this same decision, after every stored entry). It returns the count,
// the last removed ID and the new first ID (zero when the stream empties).
func planTrim(v *materialize.View, db uint8, key []byte, m codec.Meta, pending []codec.ID, t Trim) (n uint64, last, first codec.ID, err error) {
	length := m.Stream.Length
	var max uint64 // how many to remove at most, before walking
	switch t.Strategy {
	case TrimMaxLen:
		if length <= t.MaxLen {
			return 0, last, first, nil
		}
		max = length - t.MaxLen
	case TrimMinID:
		max = length
	default:
		return 0, last, first, fmt.Errorf("streams: bad trim strategy %d", t.Strategy)
	}
	if t.Approx {
		if max < length { // removing everything takes the partial tail block too
			max -= max % NodeMaxEntries
		}
		if t.Limit > 0 && uint64(t.Limit) < max {
			max = uint64(t.Limit) - uint64(t.Limit)%NodeMaxEntries
		}
		if max == 0 {
			return 0, last, first, nil
		}
	}
	keep := func(id codec.ID) bool { return t.Strategy == TrimMinID && !id.Less(t.MinID) }
	p := codec.KeyPrefix(codec.TagStreamEntry, db, key)
	stopped := false
	err = v.Iterate(p, codec.PrefixEnd(p), false, func(k, _ []byte) (bool, error) {
		id, err := codec.DecodeID(k[len(p):])
		if err != nil {
			return false, err
		}
		if n == max || keep(id) {
			first, stopped = id, true
			return false, nil
		}
		n, last = n+1, id
		return true, nil
	})
	if err == nil && !stopped {
		first = codec.ID{}
		for _, id := range pending {
			if n == max || keep(id) {
				first = id
				break
			}
			n, last = n+1, id
		}
	}
	if err != nil || !t.Approx || n%NodeMaxEntries == 0 || n == length {
		return n, last, first, err
	}
	// MINID ~ stopped inside a block: remove whole blocks only, as Redis
	// removes whole nodes.
	whole := n - n%NodeMaxEntries
	if whole == 0 {
		return 0, codec.ID{}, codec.ID{}, nil
	}
	return planTrim(v, db, key, m, pending, Trim{Strategy: TrimMaxLen, Approx: true, MaxLen: length - whole})
}

// applyTrim updates m for a trim of n entries and returns the trim event.
func applyTrim(db uint8, key []byte, m *codec.Meta, n uint64, last, first codec.ID) codec.Event {
	m.Stream.Length -= n
	m.Stream.FirstID = first
	return codec.XTrimEvent(db, key, last)
}

// TrimStream trims key (XTRIM) and returns how many entries it removed.
// https://redis.io/docs/latest/commands/xtrim/
func TrimStream(v *materialize.View, db uint8, key []byte, t Trim) (uint64, []codec.Event, error) {
	m, ok, evs, err := metaForWrite(v, db, key)
	if err != nil || !ok {
		return 0, evs, err
	}
	n, last, first, err := planTrim(v, db, key, m, nil, t)
	if err != nil || n == 0 {
		return 0, nil, err
	}
	e := applyTrim(db, key, &m, n, last, first)
	return n, []codec.Event{e, codec.SetMetaEvent(db, key, m, m.ExpireAtMs)}, nil
}

// SetIDArgs are XSETID's options.
type SetIDArgs struct {
	EntriesAdded int64    // -1: unchanged
	MaxDeletedID codec.ID // zero: unchanged
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
	if a.EntriesAdded != -1 {
		s.EntriesAdded = uint64(a.EntriesAdded)
	}
	if !a.MaxDeletedID.IsZero() {
		s.MaxDeletedID = a.MaxDeletedID
	}
	return true, []codec.Event{codec.SetMetaEvent(db, key, m, m.ExpireAtMs)}, nil
}
