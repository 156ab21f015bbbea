package codec

import "encoding/binary"

// TagStreamNode is the tag of a stream's node keys: one per closed
// (non-tail) node of the stream, keyed by the node's first ID.
//
//	N|slot|db|keylen|key|first ID (16) → StreamNode value (57 bytes)
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
}

// StreamNodeLen is the length of a StreamNode value:
//
//	+--------------+-----------+----------+-------------+----------+------------+-----------+
//	| last ID (16) | count (8) | live (8) | deleted (8) | body (8) | digest (8) | flags (1) |
//	+--------------+-----------+----------+-------------+----------+------------+-----------+
//
// Integers are big-endian; flags bit 0 is MasterKnown, the other bits are
// zero.
const StreamNodeLen = IDLen + 5*8 + 1

// AppendStreamNode appends the value encoding of n (without n.First) to b.
func AppendStreamNode(b []byte, n StreamNode) []byte {
	b = AppendID(b, n.Last)
	b = binary.BigEndian.AppendUint64(b, n.Count)
	b = binary.BigEndian.AppendUint64(b, n.Live)
	b = binary.BigEndian.AppendUint64(b, n.Deleted)
	b = binary.BigEndian.AppendUint64(b, n.Body)
	b = binary.BigEndian.AppendUint64(b, n.MasterDigest)
	var flags byte
	if n.MasterKnown {
		flags |= 1
	}
	return append(b, flags)
}

// DecodeStreamNode decodes the value b of the node key whose first ID is
// first. It rejects a count of 0, a last ID below first, and unknown flags.
func DecodeStreamNode(first ID, b []byte) (StreamNode, error) {
	n, err := decodeStreamNode(first, b)
	if err == nil && n.Count == 0 {
		err = corruptf("stream node %s of count 0", first)
	}
	return n, err
}

func decodeStreamNode(first ID, b []byte) (StreamNode, error) {
	if len(b) != StreamNodeLen || b[StreamNodeLen-1]&^1 != 0 {
		return StreamNode{}, corruptf("stream node value of %d bytes", len(b))
	}
	n := StreamNode{First: first}
	n.Last, _ = DecodeID(b)
	n.Count = binary.BigEndian.Uint64(b[16:])
	n.Live = binary.BigEndian.Uint64(b[24:])
	n.Deleted = binary.BigEndian.Uint64(b[32:])
	n.Body = binary.BigEndian.Uint64(b[40:])
	n.MasterDigest = binary.BigEndian.Uint64(b[48:])
	n.MasterKnown = b[56]&1 != 0
	if n.Last.Less(n.First) {
		return StreamNode{}, corruptf("stream node %s with last ID %s", first, n.Last)
	}
	return n, nil
}

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
