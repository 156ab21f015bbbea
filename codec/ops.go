package codec

import "encoding/binary"

// Constructors for change events, one per Op. They copy nothing: the event
// aliases the slices passed in until it is encoded.

// SetMetaEvent builds an OpSetMeta event writing m for key; prevExpireAtMs
// is the expire-at of the metadata it replaces (0 for none). A string
// value longer than SplitValueMin travels as a third argument after a
// split header (EventMeta), aliased, not copied.
func SetMetaEvent(db uint8, key []byte, m Meta, prevExpireAtMs int64) Event {
	if m.Type == TypeString && len(m.Value) > SplitValueMin {
		b := make([]byte, 0, 10+8)
		b = append(b, metaVersionSplit, byte(TypeString))
		b = binary.BigEndian.AppendUint64(b, uint64(m.ExpireAtMs))
		b = binary.BigEndian.AppendUint64(b, uint64(prevExpireAtMs))
		return Event{Op: OpSetMeta, DB: db, Key: key, Args: [][]byte{b[:10:10], b[10:], m.Value}}
	}
	// One buffer for both arguments, each capped at its end.
	b := AppendMeta(make([]byte, 0, MetaLen(m)+8), m)
	n := len(b)
	b = binary.BigEndian.AppendUint64(b, uint64(prevExpireAtMs))
	return Event{Op: OpSetMeta, DB: db, Key: key, Args: [][]byte{b[:n:n], b[n:]}}
}

// SplitValueMin is the longest string value an OpSetMeta event carries
// inside its metadata argument; a longer one is its third argument, so
// that building the event copies nothing (the value is copied once, into
// the change log, and once, into the store).
const SplitValueMin = 256

// EventMeta returns the metadata an OpSetMeta event writes: its first
// argument decoded, or, in the split form (a 10-byte header of version
// metaVersionSplit, a string's), that header with the third argument as
// the value (aliased). ErrCorrupt for anything else.
func EventMeta(e Event) (Meta, error) {
	if len(e.Args) == 0 {
		return Meta{}, corruptf("set-meta event without arguments")
	}
	h := e.Args[0]
	if !IsSplitSetMeta(e) {
		if len(h) > 0 && h[0] == metaVersionRef {
			return Meta{}, corruptf("set-meta event with a value reference")
		}
		return DecodeMeta(h)
	}
	if len(h) != 10 || Type(h[1]) != TypeString || len(e.Args) < 3 {
		return Meta{}, corruptf("split set-meta event: header of %d bytes, %d args", len(h), len(e.Args))
	}
	v := e.Args[2]
	return Meta{Type: TypeString, ExpireAtMs: int64(binary.BigEndian.Uint64(h[2:])), Value: v[:len(v):len(v)]}, nil
}

// IsSplitSetMeta reports whether the OpSetMeta event e is in the split
// form (EventMeta): its first argument begins with the split header's
// version.
func IsSplitSetMeta(e Event) bool {
	return len(e.Args) > 0 && len(e.Args[0]) > 0 && e.Args[0][0] == metaVersionSplit
}

// DelKeyEvent builds an OpDelKey event removing key of type t.
func DelKeyEvent(db uint8, key []byte, t Type, prevExpireAtMs int64) Event {
	return Event{Op: OpDelKey, DB: db, Key: key, Args: [][]byte{{byte(t)}, Int64Arg(prevExpireAtMs), nil, TagsArg(t)}}
}

// TagsArg returns the sub-key tags of a key of type t (SubTags), one byte
// each: the argument by which OpDelKey and OpCopyKey name the ranges they
// remove or copy, so a record means the same to any later version of the
// code, whatever tags a type gains. The slice is shared by every event of
// the type: it must not be modified.
func TagsArg(t Type) []byte { return typeTags[t] }

// typeTags holds TagsArg's slice of each type, made once.
var typeTags = func() (m [256][]byte) {
	for t := range m {
		for _, tag := range Type(t).SubTags() {
			m[t] = append(m[t], byte(tag))
		}
		if m[t] == nil {
			m[t] = []byte{}
		}
	}
	return m
}()

// EventTags returns the sub-key tags an OpDelKey or OpCopyKey event names,
// one byte each (its TagsArg argument, at index tagsAt: the fourth of
// both), or for a record written before that argument existed the tags of
// the event's type as this version knows them (TagsArg). The slice is the
// event's or TagsArg's: it must not be modified.
func EventTags(e Event, tagsAt int) []byte {
	if len(e.Args) > tagsAt {
		return e.Args[tagsAt]
	}
	if len(e.Args) > 0 && len(e.Args[0]) == 1 {
		return TagsArg(Type(e.Args[0][0]))
	}
	return nil
}

// ReasonExpired is OpDelKey's optional third argument (one byte) when the
// key goes because its TTL passed, by active or lazy expiry: the change
// feed names the reason. A deletion without it (DEL, an overwrite by
// another type, RENAME's source, EXPIRE with a time already passed, as
// Redis's "del" keyspace event) carries two arguments.
const ReasonExpired = 'e'

// ExpiredKeyEvent builds the OpDelKey event of a key of type t whose TTL
// (expireAtMs, Unix ms) passed.
func ExpiredKeyEvent(db uint8, key []byte, t Type, expireAtMs int64) Event {
	return Event{Op: OpDelKey, DB: db, Key: key, Args: [][]byte{{byte(t)}, Int64Arg(expireAtMs), {ReasonExpired}, TagsArg(t)}}
}

// DelReason returns an OpDelKey event's reason byte (ReasonExpired), or 0
// for a plain deletion.
func DelReason(e Event) byte {
	if e.Op == OpDelKey && len(e.Args) > 2 && len(e.Args[2]) == 1 {
		return e.Args[2][0]
	}
	return 0
}

// DelMetaEvent builds an OpDelKey event that removes only key's metadata
// (and TTL index entry): for a collection whose last elements the events
// before it deleted one by one, so no range deletion covers keys that a
// re-created key will write again (a queue that empties on every pop).
func DelMetaEvent(db uint8, key []byte, prevExpireAtMs int64) Event {
	return Event{Op: OpDelKey, DB: db, Key: key, Args: [][]byte{nil, Int64Arg(prevExpireAtMs)}}
}

// XAddEvent builds an OpXAdd event; fv is field, value, field, value...
func XAddEvent(db uint8, key []byte, id ID, fv [][]byte) Event {
	args := make([][]byte, 0, 1+len(fv))
	args = append(args, IDArg(id))
	args = append(args, fv...)
	return Event{Op: OpXAdd, DB: db, Key: key, Args: args}
}

// XDelEvent builds an OpXDel event removing the entries ids.
func XDelEvent(db uint8, key []byte, ids []ID) Event {
	args := make([][]byte, len(ids))
	for i, id := range ids {
		args[i] = IDArg(id)
	}
	return Event{Op: OpXDel, DB: db, Key: key, Args: args}
}

// XTrimEvent builds an OpXTrim event removing the stream's entries from
// first to last, both included: first is the stream's first entry before the
// trim and last the last entry removed. ids, when not nil, lists every
// removed entry, and the trim applies as one point deletion each; otherwise
// it applies as one range deletion over [first, last].
func XTrimEvent(db uint8, key []byte, first, last ID, ids []ID) Event {
	args := make([][]byte, 0, 2+len(ids))
	args = append(args, IDArg(first), IDArg(last))
	for _, id := range ids {
		args = append(args, IDArg(id))
	}
	return Event{Op: OpXTrim, DB: db, Key: key, Args: args}
}

// XNodeSetEvent builds an OpXNodeSet event writing the node key of n.
func XNodeSetEvent(db uint8, key []byte, n StreamNode) Event {
	b := AppendID(make([]byte, 0, IDLen+streamNodeLen(n)), n.First)
	b = AppendStreamNode(b, n)
	return Event{Op: OpXNodeSet, DB: db, Key: key, Args: [][]byte{b[:IDLen:IDLen], b[IDLen:]}}
}

// XNodeDelEvent builds an OpXNodeDel event removing the node keys of key
// whose first IDs are in [from, to].
func XNodeDelEvent(db uint8, key []byte, from, to ID) Event {
	return Event{Op: OpXNodeDel, DB: db, Key: key, Args: [][]byte{IDArg(from), IDArg(to)}}
}

// GroupSetEvent builds an OpGroupSet event.
func GroupSetEvent(db uint8, key, group []byte, g Group) Event {
	return Event{Op: OpGroupSet, DB: db, Key: key, Args: [][]byte{group, AppendGroup(make([]byte, 0, groupLegacyLen+pelStatsLen+1+groupTailLen), g)}}
}

// GroupDelEvent builds an OpGroupDel event.
func GroupDelEvent(db uint8, key, group []byte) Event {
	return Event{Op: OpGroupDel, DB: db, Key: key, Args: [][]byte{group}}
}

// ConsumerSetEvent builds an OpConsumerSet event.
func ConsumerSetEvent(db uint8, key, group, consumer []byte, c Consumer) Event {
	return Event{Op: OpConsumerSet, DB: db, Key: key, Args: [][]byte{group, consumer, AppendConsumer(make([]byte, 0, consumerLegacyLen+pelStatsLen), c)}}
}

// ConsumerDelEvent builds an OpConsumerDel event.
func ConsumerDelEvent(db uint8, key, group, consumer []byte) Event {
	return Event{Op: OpConsumerDel, DB: db, Key: key, Args: [][]byte{group, consumer}}
}

// PELSetEvent builds an OpPELSet event; prev is nil when id was not
// pending, else its entry before (owner and delivery time; the owner may
// be empty, a consumer named "").
func PELSetEvent(db uint8, key, group []byte, id ID, e PELEntry, prev *PELEntry) Event {
	args := [][]byte{group, IDArg(id), AppendPELEntry(make([]byte, 0, pelEntryLen+len(e.Consumer)), e)}
	if prev != nil {
		owner := prev.Consumer
		if owner == nil {
			owner = []byte{}
		}
		args = append(args, owner, Int64Arg(prev.IndexTime()))
	}
	return Event{Op: OpPELSet, DB: db, Key: key, Args: args}
}

// PELDelEvent builds an OpPELDel event acknowledging id, whose entry was
// prev (its owner and delivery time).
func PELDelEvent(db uint8, key, group []byte, id ID, prev PELEntry) Event {
	return Event{Op: OpPELDel, DB: db, Key: key, Args: [][]byte{group, IDArg(id), prev.Consumer, Int64Arg(prev.IndexTime())}}
}

// TTLDelEvent builds an OpTTLDel event removing the TTL index entry of key at deadlineMs.
func TTLDelEvent(db uint8, key []byte, deadlineMs int64) Event {
	return Event{Op: OpTTLDel, DB: db, Key: key, Args: [][]byte{Int64Arg(deadlineMs)}}
}

// FlushDBEvent builds an OpFlushDB event for the given populated slots.
func FlushDBEvent(db uint8, slots []uint16) Event {
	b := make([]byte, 0, 2*len(slots))
	for _, s := range slots {
		b = append(b, byte(s>>8), byte(s))
	}
	return Event{Op: OpFlushDB, DB: db, Args: [][]byte{b}}
}

// SwapDBEvent builds an OpSwapDB event swapping the logical dbs a and b.
func SwapDBEvent(a, b uint8) Event { return Event{Op: OpSwapDB, DB: a, Args: [][]byte{{b}}} }

// FlushAllEvent builds an OpFlushAll event.
func FlushAllEvent() Event { return Event{Op: OpFlushAll} }

// ElementsEvent builds an event of op (OpHSet, OpHDel, OpSAdd, OpSRem)
// whose arguments are elems: field/value pairs for OpHSet, fields or
// members otherwise.
func ElementsEvent(op Op, db uint8, key []byte, elems [][]byte) Event {
	return Event{Op: op, DB: db, Key: key, Args: elems}
}

// CopyKeyEvent builds an OpCopyKey event copying the sub-keys of (srcDB,
// src), of type t, to (db, dst).
func CopyKeyEvent(db uint8, dst []byte, t Type, srcDB uint8, src []byte) Event {
	return Event{Op: OpCopyKey, DB: db, Key: dst, Args: [][]byte{{byte(t)}, {srcDB}, src, TagsArg(t)}}
}

// ListSetEvent builds an OpLSet event writing elems at positions first,
// first+1, ...
func ListSetEvent(db uint8, key []byte, first int64, elems [][]byte) Event {
	args := make([][]byte, 0, 1+len(elems))
	return Event{Op: OpLSet, DB: db, Key: key, Args: append(append(args, Int64Arg(first)), elems...)}
}

// ListDelEvent builds an OpLDel event removing the list elements at
// positions first..last.
func ListDelEvent(db uint8, key []byte, first, last int64) Event {
	return Event{Op: OpLDel, DB: db, Key: key, Args: [][]byte{Int64Arg(first), Int64Arg(last)}}
}
