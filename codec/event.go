package codec

import (
	"encoding/binary"
)

// Op names a change event's effect. Values are part of the change-log format.
type Op byte

// The change-event operations. Each is an effect with every decision already
// made (resolved IDs, absolute deadlines, delivery times), so applying the
// same events to the same state always gives the same result. Args lists the
// operands in order; IDs are 16-byte encoded, integers 8-byte big-endian.
const (
	// OpSetMeta writes a key's metadata. Args: meta value, previous expire-at
	// (int64; its TTL index entry is removed when non-zero).
	OpSetMeta Op = 'm'
	// OpDelKey removes a key and all its sub-keys. Args: type (1 byte),
	// previous expire-at (int64), then optionally the reason (1 byte,
	// ReasonExpired; empty: none) and the sub-key tags whose ranges it
	// removes (TagsArg; records written before it existed: the type's
	// SubTags). An empty type removes the metadata alone: the events
	// before it removed every sub-key (DelMetaEvent).
	OpDelKey Op = 'd'
	// OpXAdd adds a stream entry. Args: ID, then field, value, field,
	// value..., then optionally the entry's tail (EntryTail: the trace
	// trailer of the XADD's span, AppendTraceTrailer, and/or the delay
	// tail of a delayed entry, AppendDelayTail, in that order), written
	// after the fields as it is: an odd count after the ID.
	OpXAdd Op = 'a'
	// OpXDel removes stream entries. Args: one ID per entry.
	OpXDel Op = 'x'
	// OpXTrim removes the oldest entries. Args: first ID, last ID, then
	// optionally every removed ID. With IDs listed, exactly those entries
	// are point-deleted; without, every entry in [first, last] is removed
	// by one range deletion. (Records written before first was recorded
	// hold the last ID alone and remove every entry up to it.)
	OpXTrim Op = 't'
	// OpXNodeSet writes a stream's node key (StreamNodeKey): a node closed
	// by XADD (the tail it closed) or changed by a trim or a deletion.
	// Args: the node's first ID, its StreamNode value.
	OpXNodeSet Op = 'o'
	// OpXNodeDel removes a stream's node keys whose first IDs lie in
	// [from, to]. Args: from, to (IDs). One point deletion when from ==
	// to, else one range deletion (a trim's run of nodes from the head).
	OpXNodeDel Op = 'O'
	// OpGroupSet creates or updates a consumer group. Args: group, Group value.
	OpGroupSet Op = 'g'
	// OpGroupDel removes a group with its consumers and PEL. Args: group.
	OpGroupDel Op = 'G'
	// OpConsumerSet creates or updates a consumer. Args: group, consumer,
	// Consumer value.
	OpConsumerSet Op = 'c'
	// OpConsumerDel removes a consumer and its per-consumer PEL index (its
	// group PEL entries are removed by OpPELDel events before it). Args:
	// group, consumer.
	OpConsumerDel Op = 'C'
	// OpPELSet records a delivery. Args: group, ID, PELEntry value, then the
	// previous owner only when the entry was pending (a consumer name may be
	// empty, so presence, not emptiness, tells). Records written before
	// this rule always hold a fourth argument, empty when not pending; read
	// as "previous owner", that only deletes a Q key that does not exist.
	OpPELSet Op = 'p'
	// OpPELDel acknowledges a pending entry. Args: group, ID, owner.
	OpPELDel Op = 'P'
	// OpTTLDel removes a stale TTL index entry (its key no longer carries
	// that deadline). Args: deadline (int64).
	OpTTLDel Op = 'e'
	// OpFlushDB drops one db. Key is empty. Args: the slots (2 bytes each)
	// holding its keys at decision time.
	OpFlushDB Op = 'f'
	// OpFlushAll drops every db. Key is empty, no args.
	OpFlushAll Op = 'F'
	// OpHSet writes hash fields. Args: field, value, field, value, ...
	OpHSet Op = 'h'
	// OpHDel removes hash fields. Args: the fields.
	OpHDel Op = 'H'
	// OpSAdd adds set members. Args: the members.
	OpSAdd Op = 's'
	// OpSRem removes set members. Args: the members.
	OpSRem Op = 'S'
	// OpCopyKey copies the sub-keys (not the metadata) of the key of the
	// given type in the source db to Key in DB: each sub-key is rewritten
	// under the new key's prefix with its suffix and value unchanged
	// (entries, groups, consumers, PEL; fields; members). Args: type (1
	// byte), source db (1 byte), source key, then the sub-key tags copied
	// (TagsArg; records written before it existed: the type's SubTags).
	// The destination's metadata
	// is a separate OpSetMeta; applying reads the state, so replaying the
	// same log over the same state gives the same keys.
	OpCopyKey Op = 'k'
	// OpSwapDB swaps two databases (SWAPDB): the logical dbs DB and
	// Args[0] (1 byte) exchange their storage dbs in the db map (TagDBMap).
	// Key is empty. No data key moves: events and keys carry storage dbs,
	// and a reader of the change log tracks the map by applying these
	// events in order (docs/key-format.md, "Databases").
	OpSwapDB Op = 'w'
	// OpLSet writes list elements at consecutive positions (ListKey): Args:
	// the first position (int64), then the elements in position order. A
	// push, LSET, and the elements LINSERT or LREM shift are all one run.
	// The list's new head and count are a separate OpSetMeta.
	OpLSet Op = 'l'
	// OpLDel removes the list elements at positions first..last inclusive.
	// Args: first, last (int64). The elements left stay where they are
	// (an OpLSet rewrites any that shift).
	OpLDel Op = 'L'
	// OpZAdd adds sorted-set members or changes their scores. Args: ranked
	// (1 byte: 1 when the set keeps rank blocks, which applying updates),
	// then per member: member, score, previous score (scores as ScoreArg;
	// the previous one empty for a new member, so its old score-index key
	// is known without a read). The count is a separate OpSetMeta.
	OpZAdd Op = 'z'
	// OpZRem removes sorted-set members. Args: ranked (1 byte), then per
	// member: member, score (ScoreArg).
	OpZRem Op = 'Z'
	// OpZRanks builds (Args[0] = 1) a sorted set's rank blocks from its
	// score index, or drops them (0). Derived data: applying reads the
	// state, so replaying the same log over the same state gives the same
	// blocks.
	OpZRanks Op = 'r'
	// OpIDMPSet records an idempotent ID (Redis 8.6's XADD IDMP): Args:
	// pid, iid, stream ID, deadline (i64 ms), the producer's O value after
	// (count and first ID); writes the U, V, M and O keys (codec/idmp.go).
	OpIDMPSet Op = 'n'
	// OpIDMPDel removes one (evicted or expired), same Args; the count 0
	// removes the producer's O key.
	OpIDMPDel Op = 'N'
	// OpIDMPState sets a stream's IDMP settings and counters (J). Args:
	// the IDMPState value.
	OpIDMPState Op = 'q'
	// OpIDMPClear removes every producer's records of a stream (O, U, V
	// keys; the M keys are left stale for the sweep). No Args.
	OpIDMPClear Op = 'Q'
)

// Event is one change event: an operation on one user key of one db.
//
// Encoding (all lengths unsigned varints):
//
//	| op (1) | db (1) | keylen | key | nargs | (len | arg)* |
type Event struct {
	Op   Op
	DB   uint8
	Key  []byte
	Args [][]byte
}

// AppendEvent appends the encoding of e to b.
func AppendEvent(b []byte, e Event) []byte {
	b = append(b, byte(e.Op), e.DB)
	b = binary.AppendUvarint(b, uint64(len(e.Key)))
	b = append(b, e.Key...)
	b = binary.AppendUvarint(b, uint64(len(e.Args)))
	for _, a := range e.Args {
		b = binary.AppendUvarint(b, uint64(len(a)))
		b = append(b, a...)
	}
	return b
}

// DecodeEvent decodes one event from the front of b and returns the rest.
// Key and Args alias b.
func DecodeEvent(b []byte) (Event, []byte, error) {
	if len(b) < 2 {
		return Event{}, nil, corruptf("event of %d bytes", len(b))
	}
	e := Event{Op: Op(b[0]), DB: b[1]}
	var err error
	b = b[2:]
	if e.Key, b, err = splitUvarintBytes(b); err != nil {
		return Event{}, nil, err
	}
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return Event{}, nil, corruptf("event arg count")
	}
	b = b[k:]
	e.Args = make([][]byte, n)
	for i := range e.Args {
		if e.Args[i], b, err = splitUvarintBytes(b); err != nil {
			return Event{}, nil, err
		}
	}
	return e, b, nil
}

func splitUvarintBytes(b []byte) ([]byte, []byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, nil, corruptf("length prefix past end")
	}
	end := k + int(n)
	return b[k:end:end], b[end:], nil
}

// Int64Arg encodes v as an 8-byte big-endian event argument.
func Int64Arg(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

// DecodeInt64Arg decodes Int64Arg's output.
func DecodeInt64Arg(b []byte) (int64, error) {
	if len(b) != 8 {
		return 0, corruptf("int64 arg of %d bytes", len(b))
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}

// IDArg encodes id as a 16-byte event argument.
func IDArg(id ID) []byte { return AppendID(make([]byte, 0, IDLen), id) }

// DecodeIDArg decodes IDArg's output.
func DecodeIDArg(b []byte) (ID, error) {
	if len(b) != IDLen {
		return ID{}, corruptf("ID arg of %d bytes", len(b))
	}
	return DecodeID(b)
}

// The first byte of every change-log record: recordVersion, or
// recordTraced for a record followed by its command's trace trailer.
const (
	recordVersion = 1
	recordTraced  = 2
)

// Record is one change-log record: the events of one command (or one
// MULTI/EXEC), committed atomically under one sequence number.
//
//	| ver (1) | ulid (16) | time-ms (8) | nevents (uvarint) | (len (uvarint) | Event)* | [trace trailer (26)] |
//
// ver is 1, or 2 when the trace trailer (AppendTraceTrailer) follows the
// events. The sequence number is the record's key (ChangeLogKey), not
// part of the value.
type Record struct {
	Seq    uint64
	ULID   [16]byte
	TimeMs int64 // Unix ms at which the command was decided (its commit group's decision time)
	Events []Event
	// Trace is the trace context of the command that wrote the record
	// when it was sampled (docs/telemetry.md); zero: none. The change feed
	// sends it as the events' traceparent header.
	Trace TraceContext
}

// AppendRecord appends the value encoding of r (without Seq) to b.
func AppendRecord(b []byte, r Record) []byte {
	if r.Trace.IsZero() {
		b = append(b, recordVersion)
	} else {
		b = append(b, recordTraced)
	}
	b = append(b, r.ULID[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(r.TimeMs))
	b = binary.AppendUvarint(b, uint64(len(r.Events)))
	for _, e := range r.Events {
		b = binary.AppendUvarint(b, uint64(EventLen(e)))
		b = AppendEvent(b, e) // straight into b: each argument copied once
	}
	if !r.Trace.IsZero() {
		b = AppendTraceTrailer(b, r.Trace)
	}
	return b
}

// SplitValueOffsets calls fn for each event of events in the split
// OpSetMeta form (IsSplitSetMeta), with its index and the offset at which
// its value (the last argument) begins in AppendRecord's encoding of a
// record of these events: the change log keeps large values there
// (ValueRef).
func SplitValueOffsets(events []Event, fn func(i, off int)) {
	off := recordHeaderLen + uvarintLen(uint64(len(events)))
	for i, e := range events {
		n := EventLen(e)
		off += uvarintLen(uint64(n)) + n
		if e.Op == OpSetMeta && IsSplitSetMeta(e) && len(e.Args) == 3 {
			fn(i, off-len(e.Args[2]))
		}
	}
}

// recordHeaderLen is the length of a record's fixed header: version (1),
// ULID (16), decision time (8).
const recordHeaderLen = 25

// EventLen returns the length of AppendEvent's encoding of e.
func EventLen(e Event) int {
	n := 2 + uvarintLen(uint64(len(e.Key))) + len(e.Key) + uvarintLen(uint64(len(e.Args)))
	for _, a := range e.Args {
		n += uvarintLen(uint64(len(a))) + len(a)
	}
	return n
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

// DecodeRecord decodes a record value; seq comes from its key. Events alias b.
func DecodeRecord(seq uint64, b []byte) (Record, error) {
	if len(b) < 26 || (b[0] != recordVersion && b[0] != recordTraced) {
		return Record{}, corruptf("record of %d bytes", len(b))
	}
	traced := b[0] == recordTraced
	r := Record{Seq: seq, TimeMs: int64(binary.BigEndian.Uint64(b[17:]))}
	copy(r.ULID[:], b[1:17])
	b = b[25:]
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return Record{}, corruptf("record event count")
	}
	b = b[k:]
	r.Events = make([]Event, n)
	for i := range r.Events {
		eb, rest, err := splitUvarintBytes(b)
		if err != nil {
			return Record{}, err
		}
		e, tail, err := DecodeEvent(eb)
		if err != nil {
			return Record{}, err
		}
		if len(tail) != 0 {
			return Record{}, corruptf("%d trailing bytes in event", len(tail))
		}
		r.Events[i], b = e, rest
	}
	if traced {
		t, err := DecodeTraceTrailer(b)
		if err != nil {
			return Record{}, err
		}
		r.Trace, b = t, nil
	}
	if len(b) != 0 {
		return Record{}, corruptf("%d trailing bytes in record", len(b))
	}
	return r, nil
}
