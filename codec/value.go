package codec

import (
	"cmp"
	"encoding/binary"
	"math"
)

// Type is a Redis data type as stored in metadata.
type Type byte

// The data types. Their values are part of the on-disk format.
const (
	TypeNone   Type = 0
	TypeString Type = 's'
	TypeStream Type = 'x'
	TypeHash   Type = 'h'
	TypeSet    Type = 'S'
	TypeList   Type = 'l'
	TypeZSet   Type = 'z'
)

// String returns the name TYPE replies with ("string", "stream", "hash",
// "set", "none").
func (t Type) String() string {
	switch t {
	case TypeString:
		return "string"
	case TypeStream:
		return "stream"
	case TypeHash:
		return "hash"
	case TypeSet:
		return "set"
	case TypeList:
		return "list"
	case TypeZSet:
		return "zset"
	}
	return "none"
}

// SubTags returns the tags of a key of type t's sub-keys (besides its
// metadata), which deleting the key range-deletes.
func (t Type) SubTags() []Tag {
	switch t {
	case TypeStream:
		return StreamTags
	case TypeHash:
		return hashTags
	case TypeSet:
		return setTags
	case TypeList:
		return listTags
	case TypeZSet:
		return zsetTags
	}
	return nil
}

var (
	hashTags = []Tag{TagHash}
	setTags  = []Tag{TagSet}
	listTags = []Tag{TagList}
	zsetTags = []Tag{TagZMember, TagZScore, TagZBlock}
)

// metaVersion is the first byte of every metadata value but a stream's in
// the varint form, whose first byte is metaVersionStream.
const (
	metaVersion       = 1
	metaVersionStream = 2
	// metaVersionSplit marks the header of an OpSetMeta event in the split
	// form (EventMeta): never a stored value. A binary from before it
	// rejects such an event rather than storing the header alone.
	metaVersionSplit = 3
	// metaVersionRef marks a string whose value is kept in the change log
	// (Meta.Ref), never in an event.
	metaVersionRef = 4
)

// ValueRef locates a string value kept only in the change log: its bytes
// inside the frame of the record that set it (docs/key-format.md, "Values
// in the change log"). Its encoding, after a metadata value's 10-byte
// header of version metaVersionRef, is valueRefLen bytes, big-endian:
//
//	| segment (8) | offset (8) | length (4) | CRC-32C of the value (4) |
//
// segment is the first sequence of the segment file (its name, never 0);
// offset is the value's first byte in that file. A read takes exactly the
// value and checks its CRC.
type ValueRef struct {
	Segment uint64
	Offset  int64
	Len     uint32
	CRC     uint32
}

const valueRefLen = 24

// IsZero reports whether r locates nothing: the value is inline.
func (r ValueRef) IsZero() bool { return r.Segment == 0 }

// Meta is the metadata value stored under a T key. One exists per live user
// key; WRONGTYPE is decided from Type.
//
//	+---------+------+-----------------+------------------+
//	| ver (1) | type | expire-at (8)   | type-specific ... |
//	+---------+------+-----------------+------------------+
//
// expire-at is Unix milliseconds, big-endian, 0 for no TTL. For a string the
// rest is the value. For a stream it is StreamMeta: in the varint form
// (ver 2, about 60 bytes), or in a legacy form (ver 1, 64 or 72 bytes). For
// a hash or a set it is the element count (8 bytes, big-endian): HLEN, SCARD. For
// a list it is the element count (8 bytes: LLEN) and the head, the position
// of the first element (i64): element i is at ListKey position head + i.
// For a sorted set it is the member count (8 bytes: ZCARD), a flags byte
// (bit 0 set when the set keeps rank blocks: Ranked), then the floor (up to
// ZFloorMax bytes: Floor).
type Meta struct {
	Type       Type
	ExpireAtMs int64  // 0: no TTL
	Value      []byte // TypeString: the value
	// Ref, for TypeString, locates the value in the change log when it is
	// not stored inline; Value is then nil until a View reads it. Only
	// stored metadata has one: never an event.
	Ref    ValueRef
	Stream StreamMeta // TypeStream
	Count  uint64     // TypeHash, TypeSet, TypeList, TypeZSet: fields, members or elements (never 0: an empty one is deleted)
	Head   int64      // TypeList: the position of the first element (ListKey)
	Ranked bool       // TypeZSet: the set keeps rank blocks (TagZBlock)
	// Floor, for TypeZSet, is at or below every member's score-index
	// suffix (score(8)|member, truncated to ZFloorMax bytes): reads of the
	// score index start there, not at its prefix, so they never step over
	// the tombstones of members popped or re-scored from the low end.
	Floor []byte
}

// StreamMeta is a stream's metadata. Its encoding (ver 2, the varint form)
// is, integers and both halves of each ID as uvarints:
//
//	+--------+---------+----------+----------------+---------------+
//	| length | last-id | first-id | max-deleted-id | entries-added |
//	+--------+---------+----------+----------------+---------------+
//	+-------+-----------+-----------+-----------+--------------+------------+-------------------+
//	| nodes | flags (1) | head-last | head-live | [head-first] | tail-first | tail (StreamNode) |
//	+-------+-----------+-----------+-----------+--------------+------------+-------------------+
//
// About 60 bytes for today's IDs (streamMetaMaxLen at most). The second
// row is the node state (package streams, streams/nodes.go): the node
// count, the head summary and the tail node (a StreamNode value); the
// other nodes are node keys (TagStreamNode). flags bit 0 is HeadMigrated,
// bit 1 says head-first follows; the other bits are zero. Two older forms still decode (ver 1), with
// Legacy set: 72 bytes (length u64, the three IDs of 16 bytes,
// entries-added u64, node-origin u64) and 64 (without node-origin).
type StreamMeta struct {
	Length       uint64 // XLEN
	LastID       ID     // top item ever added (0-0 for a new stream)
	FirstID      ID     // first live entry (0-0 when empty)
	MaxDeletedID ID     // largest ID removed by XDEL (trimming leaves it, as in Redis)
	EntriesAdded uint64 // entries ever added

	// Legacy: the metadata was written before node state was kept (the
	// 64- and 72-byte forms), which AppendMeta writes back (in the 72-byte
	// form) until package streams migrates the stream. The fields below it
	// are then zero.
	Legacy bool
	// NodeOrigin (Legacy only) is entries-added when the stream last went
	// from empty to one entry: such streams placed Redis's radix-tree node
	// boundaries every stream-node-max-entries entries from there; the
	// migration uses it.
	NodeOrigin uint64

	// Nodes is the number of Redis nodes (XINFO's radix-tree-keys): the
	// counts of the node keys and of the tail.
	Nodes uint64
	// HeadLast, HeadLive and HeadMigrated describe the first node key (the
	// head: its Last, Live and Count > 1) when the stream has node keys
	// (Nodes > Tail.Count), and are zero otherwise. With them an XADD
	// decides whether a '~' trim removes the head without reading it; in
	// metadata without HeadFirst, a reverse seek from HeadLast, walking
	// down to the node ending there, finds its key.
	HeadLast     ID
	HeadLive     uint64
	HeadMigrated bool
	// HeadFirst is the head's first ID, the suffix of its key: zero in
	// metadata written before it was kept, where the head is the node key
	// a reverse seek from HeadLast finds ending at HeadLast. After an
	// XSETID below deleted entries a later node may end at the same ID
	// (docs/key-format.md §5.2a), so HeadLast alone does not name the head.
	HeadFirst ID
	// Tail is the last node, where XADD appends (Count 0: none).
	Tail StreamNode
}

// The lengths of StreamMeta's forms: streamMetaOriginLen with
// node-origin, before node state was kept; streamMetaLegacyLen before
// node-origin was kept; streamMetaMaxLen the longest varint form.
const (
	streamMetaLegacyLen = 8 + 3*IDLen + 8
	streamMetaOriginLen = streamMetaLegacyLen + 8
	streamMetaMaxLen    = 16*binary.MaxVarintLen64 + 1 + StreamNodeMaxLen - 2*binary.MaxVarintLen64 // with head-first; the tail has no next ID
)

// appendStreamMeta appends s in the varint form.
func appendStreamMeta(b []byte, s StreamMeta) []byte {
	b = binary.AppendUvarint(b, s.Length)
	b = appendUvarintID(b, s.LastID)
	b = appendUvarintID(b, s.FirstID)
	b = appendUvarintID(b, s.MaxDeletedID)
	b = binary.AppendUvarint(b, s.EntriesAdded)
	b = binary.AppendUvarint(b, s.Nodes)
	var flags byte
	if s.HeadMigrated {
		flags |= 1
	}
	if !s.HeadFirst.IsZero() {
		flags |= 2
	}
	b = append(b, flags)
	b = appendUvarintID(b, s.HeadLast)
	b = binary.AppendUvarint(b, s.HeadLive)
	if !s.HeadFirst.IsZero() {
		b = appendUvarintID(b, s.HeadFirst)
	}
	b = appendUvarintID(b, s.Tail.First)
	t := s.Tail
	t.Next, t.Inner = ID{}, "" // the tail has no next node, nor inner IDs
	return AppendStreamNode(b, t)
}

// streamMetaLen returns the length of appendStreamMeta's encoding of s.
func streamMetaLen(s StreamMeta) int {
	return uvarintLen(s.Length) + uvarintIDLen(s.LastID) + uvarintIDLen(s.FirstID) +
		uvarintIDLen(s.MaxDeletedID) + uvarintLen(s.EntriesAdded) + uvarintLen(s.Nodes) + 1 +
		uvarintIDLen(s.HeadLast) + uvarintLen(s.HeadLive) + headFirstLen(s.HeadFirst) + uvarintIDLen(s.Tail.First) + streamNodeLen(s.Tail) - nextLen(s.Tail.Next) - len(s.Tail.Inner)
}

// headFirstLen is the length of StreamMeta.HeadFirst's encoding (0: absent).
func headFirstLen(id ID) int {
	if id.IsZero() {
		return 0
	}
	return uvarintIDLen(id)
}

// decodeStreamMeta decodes the varint form of a stream's metadata. A Meta
// without a tail has an all-zero tail.
func decodeStreamMeta(b []byte) (StreamMeta, error) {
	r := uvarints{b: b}
	var s StreamMeta
	s.Length = r.u64()
	s.LastID = r.id()
	s.FirstID = r.id()
	s.MaxDeletedID = r.id()
	s.EntriesAdded = r.u64()
	s.Nodes = r.u64()
	flags := r.byte()
	s.HeadLast = r.id()
	s.HeadLive = r.u64()
	if flags&2 != 0 {
		s.HeadFirst = r.id()
	}
	t := r.streamNode(r.id())
	switch {
	case r.err != nil:
	case len(r.b) != 0:
		r.fail("stream meta with %d bytes left over", len(r.b))
	case flags&^3 != 0:
		r.fail("stream meta flags %#x", flags)
	case flags&2 != 0 && (s.HeadFirst.IsZero() || s.HeadLast.Less(s.HeadFirst)):
		r.fail("stream meta head first ID %s (last %s)", s.HeadFirst, s.HeadLast)
	case !t.Next.IsZero() || t.Inner != "":
		r.fail("stream meta with a tail's next ID %s or inner IDs", t.Next)
	case t.Count == 0 && t != (StreamNode{}):
		r.fail("stream meta without a tail node but tail fields")
	case s.Nodes < t.Count:
		r.fail("stream meta of %d nodes with a tail of %d", s.Nodes, t.Count)
	}
	if r.err != nil {
		return StreamMeta{}, r.err
	}
	s.HeadMigrated = flags&1 != 0
	s.Tail = t
	return s, nil
}

// MetaLen returns the length of m's encoding.
func MetaLen(m Meta) int {
	switch m.Type {
	case TypeString:
		if !m.Ref.IsZero() {
			return 10 + valueRefLen
		}
		return 10 + len(m.Value)
	case TypeStream:
		if m.Stream.Legacy {
			return 10 + streamMetaOriginLen
		}
		return 10 + streamMetaLen(m.Stream)
	case TypeHash, TypeSet:
		return 18
	case TypeList:
		return 26
	case TypeZSet:
		return 19 + len(m.Floor)
	}
	return 10
}

// AppendMeta appends the encoding of m to b.
func AppendMeta(b []byte, m Meta) []byte {
	ver := byte(metaVersion)
	switch {
	case m.Type == TypeStream && !m.Stream.Legacy:
		ver = metaVersionStream
	case m.Type == TypeString && !m.Ref.IsZero():
		ver = metaVersionRef
	}
	b = append(b, ver, byte(m.Type))
	b = binary.BigEndian.AppendUint64(b, uint64(m.ExpireAtMs))
	switch m.Type {
	case TypeString:
		if ver == metaVersionRef {
			r := m.Ref
			b = binary.BigEndian.AppendUint64(b, r.Segment)
			b = binary.BigEndian.AppendUint64(b, uint64(r.Offset))
			b = binary.BigEndian.AppendUint32(b, r.Len)
			b = binary.BigEndian.AppendUint32(b, r.CRC)
			break
		}
		b = append(b, m.Value...)
	case TypeStream:
		s := m.Stream
		if !s.Legacy {
			b = appendStreamMeta(b, s)
			break
		}
		b = binary.BigEndian.AppendUint64(b, s.Length)
		b = AppendID(b, s.LastID)
		b = AppendID(b, s.FirstID)
		b = AppendID(b, s.MaxDeletedID)
		b = binary.BigEndian.AppendUint64(b, s.EntriesAdded)
		b = binary.BigEndian.AppendUint64(b, s.NodeOrigin)
	case TypeHash, TypeSet:
		b = binary.BigEndian.AppendUint64(b, m.Count)
	case TypeList:
		b = binary.BigEndian.AppendUint64(b, m.Count)
		b = binary.BigEndian.AppendUint64(b, uint64(m.Head))
	case TypeZSet:
		b = binary.BigEndian.AppendUint64(b, m.Count)
		var flags byte
		if m.Ranked {
			flags |= 1
		}
		b = append(b, flags)
		b = append(b, m.Floor...)
	}
	return b
}

// MetaExpireAt returns the expire-at (Unix ms, 0: no TTL) of the metadata
// value b, reading its 10-byte header only: for the paths that need the
// TTL alone (the TTL index), where DecodeMeta would decode a stream's
// node state for nothing; it also reads the header of an OpSetMeta event in
// the split form (EventMeta). ErrCorrupt for a header DecodeMeta rejects
// otherwise.
func MetaExpireAt(b []byte) (int64, error) {
	if len(b) < 10 || (b[0] != metaVersion && (b[0] != metaVersionStream || Type(b[1]) != TypeStream) &&
		(b[0] != metaVersionSplit || Type(b[1]) != TypeString || len(b) != 10) &&
		(b[0] != metaVersionRef || Type(b[1]) != TypeString || len(b) != 10+valueRefLen)) {
		return 0, corruptf("meta of %d bytes", len(b))
	}
	return int64(binary.BigEndian.Uint64(b[2:])), nil
}

// DecodeMeta decodes a metadata value. Value aliases b (with no capacity
// past its end).
func DecodeMeta(b []byte) (Meta, error) {
	exp, err := MetaExpireAt(b)
	if err != nil {
		return Meta{}, err
	}
	if b[0] == metaVersionSplit {
		return Meta{}, corruptf("split set-meta header as a metadata value")
	}
	m := Meta{Type: Type(b[1]), ExpireAtMs: exp}
	rest := b[10:]
	switch m.Type {
	case TypeString:
		if b[0] == metaVersionRef {
			m.Ref = ValueRef{Segment: binary.BigEndian.Uint64(rest), Offset: int64(binary.BigEndian.Uint64(rest[8:])),
				Len: binary.BigEndian.Uint32(rest[16:]), CRC: binary.BigEndian.Uint32(rest[20:])}
			if m.Ref.IsZero() || m.Ref.Offset < 0 || m.Ref.Len == 0 {
				return Meta{}, corruptf("value reference %+v", m.Ref)
			}
			break
		}
		m.Value = rest[:len(rest):len(rest)] // an append copies: b stays intact
	case TypeStream:
		if b[0] == metaVersionStream {
			s, err := decodeStreamMeta(rest)
			if err != nil {
				return Meta{}, err
			}
			m.Stream = s
			break
		}
		if len(rest) != streamMetaOriginLen && len(rest) != streamMetaLegacyLen {
			return Meta{}, corruptf("stream meta of %d bytes", len(rest))
		}
		s := &m.Stream
		s.Legacy = true
		s.Length = binary.BigEndian.Uint64(rest)
		s.LastID, _ = DecodeID(rest[8:])
		s.FirstID, _ = DecodeID(rest[24:])
		s.MaxDeletedID, _ = DecodeID(rest[40:])
		s.EntriesAdded = binary.BigEndian.Uint64(rest[56:])
		if len(rest) == streamMetaOriginLen {
			s.NodeOrigin = binary.BigEndian.Uint64(rest[64:])
		}
	case TypeHash, TypeSet:
		if len(rest) != 8 {
			return Meta{}, corruptf("%s meta of %d bytes", m.Type, len(rest))
		}
		m.Count = binary.BigEndian.Uint64(rest)
	case TypeList:
		if len(rest) != 16 {
			return Meta{}, corruptf("list meta of %d bytes", len(rest))
		}
		m.Count = binary.BigEndian.Uint64(rest)
		m.Head = int64(binary.BigEndian.Uint64(rest[8:]))
	case TypeZSet:
		if len(rest) < 9 || len(rest) > 9+ZFloorMax {
			return Meta{}, corruptf("zset meta of %d bytes", len(rest))
		}
		m.Count = binary.BigEndian.Uint64(rest)
		m.Ranked = rest[8]&1 != 0
		if len(rest) > 9 {
			m.Floor = rest[9:len(rest):len(rest)] // an append copies: b stays intact
		}
	default:
		return Meta{}, corruptf("meta type %q", b[1])
	}
	return m, nil
}

// AppendFields appends a stream entry's field/value list:
//
//	| count (4) | len (4) | bytes | len (4) | bytes | ...
//
// count is the number of byte strings (fields plus values).
func AppendFields(b []byte, fv [][]byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(fv)))
	for _, f := range fv {
		b = AppendName(b, f)
	}
	return b
}

// FieldsLen returns the length of AppendFields' output for fv.
func FieldsLen(fv [][]byte) int {
	n := 4
	for _, f := range fv {
		n += 4 + len(f)
	}
	return n
}

// DecodeFields decodes AppendFields' output, skipping a trace trailer
// after it (DecodeEntry). The returned slices alias b.
func DecodeFields(b []byte) ([][]byte, error) {
	fv, _, err := DecodeEntry(b)
	return fv, err
}

// DecodeEntry decodes an X key's value: AppendFields' output, optionally
// followed by a trace trailer (AppendTraceTrailer), returned as t (zero
// when there is none), and a delay tail (DecodeEntryTail, which returns
// it too). The returned slices alias b.
func DecodeEntry(b []byte) (fv [][]byte, t TraceContext, err error) {
	fv, tail, err := DecodeEntryTail(b)
	return fv, tail.Trace, err
}

// PELStats summarises one pending entries list (a group's PEL, or the part
// of it one consumer owns) so that no read has to count it or seek for its
// start: Count is the number of pending entries and First the smallest
// pending ID (0-0 when Count is 0). Every write that changes a PEL writes the
// new PELStats in the same batch (package groups keeps them).
//
//	| count (u64, 8) | first (ID, 16) |
type PELStats struct {
	Count uint64
	First ID
}

const pelStatsLen = 8 + IDLen

func appendPELStats(b []byte, s PELStats) []byte {
	b = binary.BigEndian.AppendUint64(b, s.Count)
	return AppendID(b, s.First)
}

func decodePELStats(b []byte) PELStats {
	id, _ := DecodeID(b[8:])
	return PELStats{binary.BigEndian.Uint64(b), id}
}

// Group is a consumer group's value under a G key.
//
//	| last-delivered-id (16) | entries-read (8, int64, -1 unknown) | PEL stats (24) | flags (1) |
//	[ | NackNext (8) | Nacked (8) | TimeFirst: time (8) | ID (16) | ]      the tail, when any is set
//	[ | runs | ]                                                 with groupFlagRuns: PELNext, TimeNext
//	[ | MaxDeliveries (8) | DeadLettered (8) | DeadLetterKey (name) | ]
//
// The runs are varint-coded in ascending order, each element as a delta
// from the one before it (the first from PEL.First or TimeFirst):
//
//	| n (uvarint) | n × (ms delta (uvarint) | seq: delta if ms equal, else raw (uvarint)) |
//	| n (uvarint) | n × (time delta (uvarint) | ID as above, from the previous ID if the time is equal, else from zero) |
//
// Values written before PEL stats were kept are 24 bytes long; they decode
// with PELUnknown set, and the reader recounts (groups.LoadGroup). Values
// written before the flags byte are 48 bytes long and decode with no flag.
type Group struct {
	LastDeliveredID ID
	EntriesRead     int64 // -1 when unknown, as Redis's SCG_INVALID_ENTRIES_READ
	PEL             PELStats
	PELUnknown      bool // decoded from the legacy layout: PEL must be recounted
	// TimeIndexed: every pending entry has its W key (PELTimeKey), so the
	// PEL can be read in delivery-time order. Groups created before that
	// index was kept lack it; it is never set afterwards.
	TimeIndexed bool
	// PELBounded: no pending ID is above LastDeliveredID, so an entry a
	// `>` read delivers past it cannot be pending already and needs no
	// lookup. Set at creation and whenever the PEL empties; cleared when
	// an entry past last-delivered-id enters the PEL (XCLAIM or XNACK
	// FORCE) or XGROUP SETID moves last-delivered-id back over pending
	// entries. Values written before it was kept decode without it.
	PELBounded bool
	// NackNext is the NACK sequence the next XNACK'd entry gets; Nacked
	// counts the entries in the NACK zone (XINFO's nacked-count).
	NackNext, Nacked uint64
	// TimeFirst is the group's first W key (PELTimeKey's time and ID),
	// kept with every PEL change so that a reader of the delivery-time
	// order seeks past the deletions that claims and acknowledgements leave
	// at the index's start; meaningful only while PEL.Count > 0 and
	// TimeIndexed.
	TimeFirst PELTimePos
	// PELNext and TimeNext are runs: the pending IDs after PEL.First and
	// the W keys after TimeFirst (times below 0 as 0, as the keys hold
	// them), in order, as far as they are known: every pending ID up to
	// PELNext's last is in PELNext, and every W key up to TimeNext's last
	// is in TimeNext; at most PELRunMax each. When the first pending entry
	// is acknowledged or claimed, the next first comes from the run
	// instead of a seek over the PEL's deletions (package groups keeps
	// them). Values written before the runs were kept decode without
	// them: the next first is found by a seek.
	PELNext  []ID
	TimeNext []PELTimePos
	// Dead letters (a Sediment extension, docs/rfcs/
	// 20261126_dead_letters_delayed_delivery.md): an entry delivered
	// MaxDeliveries times (0: off) is moved to the stream DeadLetterKey by
	// the next claim; DeadLettered counts the entries moved.
	MaxDeliveries, DeadLettered uint64
	DeadLetterKey               string
}

// PELTimePos is a place in the W index: an entry's IndexTime and its ID.
type PELTimePos struct {
	Time int64
	ID   ID
}

// Less orders positions as their W keys sort (times below 0 as 0).
func (p PELTimePos) Less(o PELTimePos) bool { return p.Compare(o) < 0 }

// Compare returns -1, 0 or +1 as p sorts before, with or after o (as
// their W keys sort: times below 0 as 0).
func (p PELTimePos) Compare(o PELTimePos) int {
	if c := cmp.Compare(max(p.Time, 0), max(o.Time, 0)); c != 0 {
		return c
	}
	return p.ID.Compare(o.ID)
}

// groupTailLen is the optional tail of a Group value: NackNext, Nacked,
// TimeFirst's time and ID, written when any is set.
const groupTailLen = 8 + 8 + 8 + IDLen

// groupFlagTimeIndexed and groupFlagPELBounded are Group.TimeIndexed and
// Group.PELBounded in the flags byte.
const (
	groupFlagTimeIndexed = 1
	groupFlagPELBounded  = 2
	groupFlagRuns        = 4
)

// PELRunMax is the most elements Group.PELNext and Group.TimeNext hold.
const PELRunMax = 8

// appendIDDelta appends id as a delta from prev (id not below prev).
func appendIDDelta(b []byte, prev, id ID) []byte {
	if id.Ms == prev.Ms {
		return binary.AppendUvarint(binary.AppendUvarint(b, 0), id.Seq-prev.Seq)
	}
	return binary.AppendUvarint(binary.AppendUvarint(b, id.Ms-prev.Ms), id.Seq)
}

// readIDDelta reads an ID written by appendIDDelta from prev.
func readIDDelta(b []byte, prev ID) (ID, []byte, bool) {
	dms, n := binary.Uvarint(b)
	if n <= 0 {
		return ID{}, nil, false
	}
	seq, m := binary.Uvarint(b[n:])
	if m <= 0 {
		return ID{}, nil, false
	}
	if dms == 0 {
		seq += prev.Seq
	}
	return ID{Ms: prev.Ms + dms, Seq: seq}, b[n+m:], true
}

func appendRuns(b []byte, g Group) []byte {
	b = binary.AppendUvarint(b, uint64(len(g.PELNext)))
	prev := g.PEL.First
	for _, id := range g.PELNext {
		b = appendIDDelta(b, prev, id)
		prev = id
	}
	b = binary.AppendUvarint(b, uint64(len(g.TimeNext)))
	p := PELTimePos{Time: max(g.TimeFirst.Time, 0), ID: g.TimeFirst.ID}
	for _, q := range g.TimeNext {
		b = binary.AppendUvarint(b, uint64(q.Time-p.Time))
		if q.Time != p.Time {
			p.ID = ID{}
		}
		b = appendIDDelta(b, p.ID, q.ID)
		p = q
	}
	return b
}

// errGroupRuns is made once: a group value decodes on every group read.
var errGroupRuns = corruptf("group runs")

// decodeRuns reads the runs into g (whose PEL.First and TimeFirst are set)
// and returns what follows them. Each run must ascend.
func decodeRuns(b []byte, g *Group) ([]byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > PELRunMax {
		return nil, errGroupRuns
	}
	b = b[k:]
	prev := g.PEL.First
	if n > 0 {
		g.PELNext = make([]ID, n)
	}
	for i := range g.PELNext {
		id, rest, ok := readIDDelta(b, prev)
		if !ok || !prev.Less(id) {
			return nil, errGroupRuns
		}
		g.PELNext[i], prev, b = id, id, rest
	}
	n, k = binary.Uvarint(b)
	if k <= 0 || n > PELRunMax {
		return nil, errGroupRuns
	}
	b = b[k:]
	if n > 0 {
		g.TimeNext = make([]PELTimePos, n)
	}
	p := PELTimePos{Time: max(g.TimeFirst.Time, 0), ID: g.TimeFirst.ID}
	for i := range g.TimeNext {
		dt, k := binary.Uvarint(b)
		if k <= 0 || dt > math.MaxInt64-uint64(p.Time) {
			return nil, errGroupRuns
		}
		q := PELTimePos{Time: p.Time + int64(dt)}
		from := p.ID
		if dt != 0 {
			from = ID{}
		}
		id, rest, ok := readIDDelta(b[k:], from)
		if !ok {
			return nil, errGroupRuns
		}
		q.ID = id
		if !p.Less(q) {
			return nil, errGroupRuns
		}
		g.TimeNext[i], p, b = q, q, rest
	}
	return b, nil
}

const groupLegacyLen = IDLen + 8

// AppendGroup appends the encoding of g (PELUnknown is not encoded).
func AppendGroup(b []byte, g Group) []byte {
	b = AppendID(b, g.LastDeliveredID)
	b = binary.BigEndian.AppendUint64(b, uint64(g.EntriesRead))
	b = appendPELStats(b, g.PEL)
	var flags byte
	if g.TimeIndexed {
		flags |= groupFlagTimeIndexed
	}
	if g.PELBounded {
		flags |= groupFlagPELBounded
	}
	runs := len(g.PELNext)+len(g.TimeNext) > 0
	if runs {
		flags |= groupFlagRuns
	}
	b = append(b, flags)
	dead := g.MaxDeliveries != 0 || g.DeadLettered != 0
	if runs || dead || g.NackNext != 0 || g.Nacked != 0 || g.TimeFirst != (PELTimePos{}) {
		b = binary.BigEndian.AppendUint64(b, g.NackNext)
		b = binary.BigEndian.AppendUint64(b, g.Nacked)
		b = binary.BigEndian.AppendUint64(b, uint64(g.TimeFirst.Time))
		b = AppendID(b, g.TimeFirst.ID)
	}
	if runs {
		b = appendRuns(b, g)
	}
	if dead {
		b = binary.BigEndian.AppendUint64(b, g.MaxDeliveries)
		b = binary.BigEndian.AppendUint64(b, g.DeadLettered)
		b = AppendName(b, []byte(g.DeadLetterKey))
	}
	return b
}

// DecodeGroup decodes a Group value (49 bytes, or 89 and more; 48 or 24
// for the legacy layouts).
func DecodeGroup(b []byte) (Group, error) {
	full := groupLegacyLen + pelStatsLen + 1
	if len(b) != groupLegacyLen && len(b) != groupLegacyLen+pelStatsLen && len(b) != full && len(b) < full+groupTailLen {
		return Group{}, corruptf("group of %d bytes", len(b))
	}
	id, _ := DecodeID(b)
	g := Group{LastDeliveredID: id, EntriesRead: int64(binary.BigEndian.Uint64(b[IDLen:]))}
	if len(b) == groupLegacyLen {
		g.PELUnknown = true
	} else {
		g.PEL = decodePELStats(b[groupLegacyLen:])
	}
	if len(b) < full {
		return g, nil
	}
	flags := b[full-1]
	g.TimeIndexed = flags&groupFlagTimeIndexed != 0
	g.PELBounded = flags&groupFlagPELBounded != 0
	if len(b) == full {
		if flags&groupFlagRuns != 0 {
			return Group{}, corruptf("group runs without a tail")
		}
		return g, nil
	}
	t := b[full:]
	g.NackNext, g.Nacked = binary.BigEndian.Uint64(t), binary.BigEndian.Uint64(t[8:])
	g.TimeFirst.Time = int64(binary.BigEndian.Uint64(t[16:]))
	g.TimeFirst.ID, _ = DecodeID(t[24:])
	d := t[groupTailLen:]
	if flags&groupFlagRuns != 0 {
		var err error
		if d, err = decodeRuns(d, &g); err != nil {
			return Group{}, err
		}
	}
	if len(d) > 0 {
		if len(d) < 16 {
			return Group{}, corruptf("group dead-letter fields of %d bytes", len(d))
		}
		g.MaxDeliveries, g.DeadLettered = binary.BigEndian.Uint64(d), binary.BigEndian.Uint64(d[8:])
		name, rest, err := SplitName(d[16:])
		if err != nil || len(rest) != 0 || (g.MaxDeliveries == 0 && g.DeadLettered == 0) {
			return Group{}, corruptf("group dead-letter fields")
		}
		g.DeadLetterKey = string(name)
	}
	if len(b) == full+groupTailLen && g.NackNext == 0 && g.Nacked == 0 && g.TimeFirst == (PELTimePos{}) {
		return Group{}, corruptf("group with an empty tail")
	}
	return g, nil
}

// Consumer is a consumer's value under a C key, times in Unix ms.
//
//	| seen-time (8) | active-time (8, -1 never) | PEL stats (24) |
//
// PEL counts the consumer's own pending entries. Legacy values are 16 bytes
// and decode with PELUnknown set, as for Group.
type Consumer struct {
	SeenTimeMs   int64 // last attempted interaction (read, claim)
	ActiveTimeMs int64 // last successful interaction; -1 never
	PEL          PELStats
	PELUnknown   bool
}

const consumerLegacyLen = 16

// AppendConsumer appends the encoding of c (PELUnknown is not encoded).
func AppendConsumer(b []byte, c Consumer) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(c.SeenTimeMs))
	b = binary.BigEndian.AppendUint64(b, uint64(c.ActiveTimeMs))
	return appendPELStats(b, c.PEL)
}

// DecodeConsumer decodes a Consumer value (40 bytes, or 16 for the legacy
// layout).
func DecodeConsumer(b []byte) (Consumer, error) {
	if len(b) != consumerLegacyLen && len(b) != consumerLegacyLen+pelStatsLen {
		return Consumer{}, corruptf("consumer of %d bytes", len(b))
	}
	c := Consumer{SeenTimeMs: int64(binary.BigEndian.Uint64(b)), ActiveTimeMs: int64(binary.BigEndian.Uint64(b[8:]))}
	if len(b) == consumerLegacyLen {
		c.PELUnknown = true
	} else {
		c.PEL = decodePELStats(b[consumerLegacyLen:])
	}
	return c, nil
}

// PELEntry is a pending entry's value under a P key: who owns it, when it was
// last delivered (Unix ms) and how many times.
//
//	| delivery-time (8) | delivery-count (8) | consumer-len (4) | consumer | [nack-seq (8) | 'D' (1)] |
//
// An entry released by XNACK (Redis 8.8) has no owner (an empty consumer)
// and a NackSeq: its place in the group's NACK zone, first in first out,
// ahead of every delivered entry in the delivery-time index (IndexTime).
//
// A parked entry (delayed delivery, a Sediment extension: an entry not yet
// due that a '>' read passed) has no owner either, its due time as
// delivery time (so it is idle from then on, and its W key sorts there),
// and the one byte 'D' instead of a NACK sequence.
type PELEntry struct {
	DeliveryTimeMs int64
	DeliveryCount  uint64
	Consumer       []byte
	NackSeq        uint64 // 0: owned by Consumer (or Parked)
	Parked         bool   // unowned until due at DeliveryTimeMs; NackSeq is 0 and Consumer empty
}

// Nacked reports whether the entry is unowned: released by XNACK (in the
// NACK zone) or parked by delayed delivery. Unowned entries have no Q key
// and the group's Nacked counts them.
func (e PELEntry) Nacked() bool { return e.NackSeq > 0 || e.Parked }

// IndexTime is the entry's place in the delivery-time index (W keys): its
// NACK sequence when NACKed (small numbers, below any real delivery time),
// else its delivery time (for a parked entry, its due time).
func (e PELEntry) IndexTime() int64 {
	if e.NackSeq > 0 {
		return int64(min(e.NackSeq, 1<<62))
	}
	return e.DeliveryTimeMs
}

// pelParkedMark follows a parked entry's empty consumer.
const pelParkedMark = 'D'

// pelEntryLen is a PEL entry's encoded length without its consumer's name.
const pelEntryLen = 8 + 8 + 4

// AppendPELEntry appends the encoding of e.
func AppendPELEntry(b []byte, e PELEntry) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(e.DeliveryTimeMs))
	b = binary.BigEndian.AppendUint64(b, e.DeliveryCount)
	b = AppendName(b, e.Consumer)
	switch {
	case e.NackSeq > 0:
		b = binary.BigEndian.AppendUint64(b, e.NackSeq)
	case e.Parked:
		b = append(b, pelParkedMark)
	}
	return b
}

// DecodePELEntry decodes a PEL value. Consumer aliases b.
func DecodePELEntry(b []byte) (PELEntry, error) {
	if len(b) < 20 {
		return PELEntry{}, corruptf("PEL entry of %d bytes", len(b))
	}
	name, rest, err := SplitName(b[16:])
	if err != nil {
		return PELEntry{}, err
	}
	e := PELEntry{DeliveryTimeMs: int64(binary.BigEndian.Uint64(b)), DeliveryCount: binary.BigEndian.Uint64(b[8:]), Consumer: name}
	switch len(rest) {
	case 0:
	case 8:
		if e.NackSeq = binary.BigEndian.Uint64(rest); e.NackSeq == 0 {
			return PELEntry{}, corruptf("PEL entry with a zero NACK sequence")
		}
	case 1:
		if rest[0] != pelParkedMark || len(name) != 0 {
			return PELEntry{}, corruptf("PEL entry with a bad parked mark")
		}
		e.Parked = true
	default:
		return PELEntry{}, corruptf("%d trailing bytes after PEL entry", len(rest))
	}
	return e, nil
}
