package codec

import "encoding/binary"

// TagStreamNode is the tag of a stream's node keys: one per closed
// (non-tail) node of the stream, keyed by the node's first ID.
//
//	N|slot|db|keylen|key|first ID (16) → StreamNode value (varints, ~20 bytes)
//
// The tail node, where XADD appends, has no key: its state is in the
// stream's Meta (StreamMeta.Tail), so an XADD writes no node key unless it
// opens a new node, and then one, the old tail's.
const TagStreamNode Tag = 'N'

// StreamNodeKey returns N|slot|db|key|first: the node key of the node of
// key whose first entry (master ID) is first.
func StreamNodeKey(db uint8, key []byte, first ID) []byte {
	return AppendID(newKey(TagStreamNode, db, key, IDLen), first)
}

// StreamNode is one node of a stream as Sediment models Redis 7.0's
// radix-tree nodes (a listpack of entries under a master entry; package
// streams, streams/nodes.go): a node key's value, or the tail node kept in
// the stream's Meta.
type StreamNode struct {
	// First and Last are the IDs of the first and last entries added to
	// the node, deleted ones included (Redis's master ID, and the ID
	// lpGetEdgeStreamID reads for MINID). First is the node key's suffix,
	// not part of the value.
	First, Last ID
	// Count is the number of Redis nodes the node stands for: 1, or more
	// for the one record a stream written before node keys were kept is
	// migrated into (streams, "Migration"). 0 only in a Meta without a
	// tail node, whose other fields are then zero.
	Count uint64
	// Live is the node's master count (entries not deleted); Deleted the
	// entries marked deleted inside it.
	Live, Deleted uint64
	// Body is the listpack's size in bytes without its header, end byte,
	// and the master entry's count and deleted elements (whose sizes follow
	// Live and Deleted). 0 means unknown (a migrated record): such a node
	// is taken as full.
	Body uint64
	// MasterKnown tells that MasterDigest is the digest of the node's
	// master fields (MasterDigest), the fields of the first entry added to
	// it: an entry with the same fields is stored with SAMEFIELDS.
	MasterKnown  bool
	MasterDigest uint64
	// Next is the first ID of the node that followed this one when it
	// was closed (the entry that opened the next node; zero: unknown, as
	// for nodes closed before it was kept, and always in a Meta's tail).
	// Nodes are only ever made at the tail, above every existing node, so
	// while the node key Next exists it is the node key after this one:
	// a trim finds the next node with a point lookup instead of a seek.
	Next ID
	// Inner lists, encoded (AppendInnerIDs), the IDs of the node's
	// entries between First and Last when it closed clean (no entry
	// deleted) with 3 to InnerIDsMax of them, and the writer knew them
	// (its cache of each stream's newest entries): a trim that removes
	// the node whole then deletes its entries one by one without reading
	// their IDs from Pebble. Empty otherwise, and always in a Meta's tail.
	// A node with it has Count 1, no deleted entry and Live = 2 + the
	// IDs listed: a write that deletes entries in the node drops it.
	Inner string
}

// InnerIDsMax is the most entries a node whose inner IDs are listed
// (StreamNode.Inner) may hold: the largest trim applied as point
// deletions (streams.PointTrimMax).
const InnerIDsMax = 64

// A StreamNode value is, integers as uvarints:
//
//	+-------------------+-------+------+---------+------+------------+-----------+-------------------+
//	| last ID (ms, seq) | count | live | deleted | body | digest (8) | flags (1) | [next ID (ms, seq)] |
//	+-------------------+-------+------+---------+------+------------+-----------+-------------------+
//
// digest is MasterDigest, big-endian; flags bit 0 is MasterKnown, bit 1
// tells that the next ID (StreamNode.Next, above the last ID) follows, bit
// 2 that the inner IDs (StreamNode.Inner) follow it, the other bits are
// zero. Inner IDs are a uvarint count (1 to InnerIDsMax-2), then each ID
// after the one before (the first after First) as the uvarint difference
// of the ms, then the seq as a uvarint: whole when the ms differ, less the
// previous seq plus one when they are equal. A node of 100 entries of
// today's IDs takes about 30 bytes (StreamNodeMaxLen at most, plus its
// inner IDs).
const StreamNodeMaxLen = 8*binary.MaxVarintLen64 + 8 + 1

const (
	nodeMasterKnown = 1 << iota
	nodeHasNext
	nodeHasInner
)

// AppendInnerIDs appends the inner-ID encoding (StreamNode.Inner) of ids,
// each above the one before, the first above first. It does not check
// their order.
func AppendInnerIDs(b []byte, first ID, ids []ID) []byte {
	b = binary.AppendUvarint(b, uint64(len(ids)))
	prev := first
	for _, id := range ids {
		if id.Ms != prev.Ms {
			b = binary.AppendUvarint(binary.AppendUvarint(b, id.Ms-prev.Ms), id.Seq)
		} else {
			b = binary.AppendUvarint(binary.AppendUvarint(b, 0), id.Seq-prev.Seq-1)
		}
		prev = id
	}
	return b
}

// InnerIDs decodes n.Inner into b's array: the IDs of n's entries
// between its first and last, or none.
func (n StreamNode) InnerIDs(b []ID) ([]ID, error) {
	if n.Inner == "" {
		return b[:0], nil
	}
	r := uvarints{b: []byte(n.Inner)}
	ids := r.innerIDs(b[:0], n.First, n.Last)
	if r.err == nil && len(r.b) != 0 {
		r.fail("stream node inner IDs with %d bytes left over", len(r.b))
	}
	return ids, r.err
}

// innerIDs decodes a count and that many inner IDs, each above the one
// before (the first above first), all below last.
func (r *uvarints) innerIDs(b []ID, first, last ID) []ID {
	count := r.u64()
	if r.err == nil && (count == 0 || count > InnerIDsMax-2) {
		r.fail("stream node with %d inner IDs", count)
	}
	prev := first
	for i := uint64(0); i < count && r.err == nil; i++ {
		dms, seq := r.u64(), r.u64()
		id := ID{Ms: prev.Ms + dms, Seq: seq}
		if dms == 0 {
			id.Seq = prev.Seq + 1 + seq
		}
		if r.err == nil && (id.Ms < prev.Ms || (dms == 0 && id.Seq <= prev.Seq) || !id.Less(last)) {
			r.fail("stream node inner ID %s after %s, below %s", id, prev, last)
		}
		b = append(b, id)
		prev = id
	}
	return b
}

// AppendStreamNode appends the value encoding of n (without n.First) to b.
func AppendStreamNode(b []byte, n StreamNode) []byte {
	b = appendUvarintID(b, n.Last)
	b = binary.AppendUvarint(b, n.Count)
	b = binary.AppendUvarint(b, n.Live)
	b = binary.AppendUvarint(b, n.Deleted)
	b = binary.AppendUvarint(b, n.Body)
	b = binary.BigEndian.AppendUint64(b, n.MasterDigest)
	var flags byte
	if n.MasterKnown {
		flags |= nodeMasterKnown
	}
	if !n.Next.IsZero() {
		flags |= nodeHasNext
	}
	if n.Inner != "" {
		flags |= nodeHasInner
	}
	b = append(b, flags)
	if !n.Next.IsZero() {
		b = appendUvarintID(b, n.Next)
	}
	return append(b, n.Inner...)
}

// streamNodeLen returns the length of AppendStreamNode's encoding of n.
func streamNodeLen(n StreamNode) int {
	return uvarintIDLen(n.Last) + uvarintLen(n.Count) + uvarintLen(n.Live) +
		uvarintLen(n.Deleted) + uvarintLen(n.Body) + 8 + 1 + nextLen(n.Next) + len(n.Inner)
}

func nextLen(next ID) int {
	if next.IsZero() {
		return 0
	}
	return uvarintIDLen(next)
}

// DecodeStreamNode decodes the value b of the node key whose first ID is
// first. It rejects a count of 0, a last ID below first, a next ID not
// above the last, unknown flags and bytes left over.
func DecodeStreamNode(first ID, b []byte) (StreamNode, error) {
	r := uvarints{b: b}
	n := r.streamNode(first)
	if r.err == nil && len(r.b) != 0 {
		r.fail("stream node value with %d bytes left over", len(r.b))
	}
	if r.err == nil && n.Count == 0 {
		r.fail("stream node %s of count 0", first)
	}
	return n, r.err
}

// streamNode decodes a StreamNode value whose first ID is first.
func (r *uvarints) streamNode(first ID) StreamNode {
	n := StreamNode{First: first}
	n.Last = r.id()
	n.Count = r.u64()
	n.Live = r.u64()
	n.Deleted = r.u64()
	n.Body = r.u64()
	n.MasterDigest = r.fixed64()
	flags := r.byte()
	if flags&nodeHasNext != 0 {
		n.Next = r.id()
	}
	if flags&nodeHasInner != 0 && r.err == nil {
		inner := r.b
		var buf [InnerIDsMax]ID
		ids := r.innerIDs(buf[:0], first, n.Last)
		n.Inner = string(inner[:len(inner)-len(r.b)])
		if r.err == nil && (uint64(len(ids)+2) != n.Live || n.Deleted != 0 || n.Count != 1) {
			r.fail("stream node of %d live and %d deleted entries (count %d) with %d inner IDs", n.Live, n.Deleted, n.Count, len(ids))
		}
	}
	if r.err != nil {
		return StreamNode{}
	}
	n.MasterKnown = flags&nodeMasterKnown != 0
	switch {
	case flags&^(nodeMasterKnown|nodeHasNext|nodeHasInner) != 0:
		r.fail("stream node flags %#x", flags)
	case n.Last.Less(n.First):
		r.fail("stream node %s with last ID %s", first, n.Last)
	case flags&nodeHasNext != 0 && !n.Last.Less(n.Next):
		r.fail("stream node %s..%s with next ID %s", first, n.Last, n.Next)
	}
	return n
}

// uvarints reads the varint forms (a StreamNode value, a stream's Meta):
// the first error sticks, and every read after it returns zero. It takes
// only minimal uvarints, so each value has one encoding.
type uvarints struct {
	b   []byte
	err error
}

func (r *uvarints) fail(format string, args ...any) {
	if r.err == nil {
		r.err = corruptf(format, args...)
	}
}

func (r *uvarints) u64() uint64 {
	if r.err != nil {
		return 0
	}
	v, k := binary.Uvarint(r.b)
	if k <= 0 || (k > 1 && r.b[k-1] == 0) { // a last byte of 0 adds nothing
		r.fail("truncated, overflowing or non-minimal uvarint")
		return 0
	}
	r.b = r.b[k:]
	return v
}

func (r *uvarints) id() ID { return ID{Ms: r.u64(), Seq: r.u64()} }

func (r *uvarints) fixed64() uint64 {
	if r.err == nil && len(r.b) < 8 {
		r.fail("truncated value")
	}
	if r.err != nil {
		return 0
	}
	v := binary.BigEndian.Uint64(r.b)
	r.b = r.b[8:]
	return v
}

func (r *uvarints) byte() byte {
	if r.err == nil && len(r.b) < 1 {
		r.fail("truncated value")
	}
	if r.err != nil {
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// appendUvarintID appends id as two uvarints, ms then seq.
func appendUvarintID(b []byte, id ID) []byte {
	return binary.AppendUvarint(binary.AppendUvarint(b, id.Ms), id.Seq)
}

func uvarintIDLen(id ID) int { return uvarintLen(id.Ms) + uvarintLen(id.Seq) }

// MasterDigest returns the digest of a master entry's fields (the fields
// of fv, field, value, field, value...): FNV-1a 64 over the field count
// and each field's length and bytes (big-endian u32s).
func MasterDigest(fv [][]byte) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	var n [4]byte
	mix := func(b []byte) {
		for _, c := range b {
			h = (h ^ uint64(c)) * prime
		}
	}
	binary.BigEndian.PutUint32(n[:], uint32(len(fv)/2))
	mix(n[:])
	for i := 0; i < len(fv); i += 2 {
		binary.BigEndian.PutUint32(n[:], uint32(len(fv[i])))
		mix(n[:])
		mix(fv[i])
	}
	return h
}
