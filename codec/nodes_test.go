package codec

import (
	"bytes"
	"errors"
	"math"
	"testing"
)

func TestStreamNodeRoundTrip(t *testing.T) {
	for _, n := range []StreamNode{
		{First: ID{1700000000000, 0}, Last: ID{1700000000005, 3}, Count: 1, Live: 7, Deleted: 1, Body: 317, MasterKnown: true, MasterDigest: 0x0102030405060708},
		{First: ID{1700000000005, 4}, Last: ID{1700000000100, 0}, Count: 3, Live: 250},
		{First: ID{1, 1}, Last: ID{1, 1}, Count: 1, Deleted: 2, Body: 40},
		{First: MaxID, Last: MaxID, Count: math.MaxUint64, Live: math.MaxUint64, Deleted: math.MaxUint64, Body: math.MaxUint64, MasterDigest: math.MaxUint64},
		{First: ID{1700000000000, 0}, Last: ID{1700000000005, 3}, Count: 1, Live: 7, Body: 317, MasterKnown: true, Next: ID{1700000000005, 4}},
		{First: ID{1, 1}, Last: ID{1, 1}, Count: 1, Live: 1, Body: 40, Next: ID{math.MaxUint64, math.MaxUint64}},
	} {
		enc := AppendStreamNode([]byte("pre"), n)
		if !bytes.HasPrefix(enc, []byte("pre")) || len(enc) != 3+streamNodeLen(n) || len(enc) > 3+StreamNodeMaxLen {
			t.Fatalf("AppendStreamNode(%+v) = %x", n, enc)
		}
		got, err := DecodeStreamNode(n.First, enc[3:])
		if err != nil || got != n {
			t.Fatalf("DecodeStreamNode(AppendStreamNode(%+v)) = %+v, %v", n, got, err)
		}
	}
	good := StreamNode{First: ID{1, 5}, Last: ID{1, 6}, Count: 1}
	for name, bad := range map[string][]byte{
		"short":         AppendStreamNode(nil, good)[:streamNodeLen(good)-1],
		"no digest":     AppendStreamNode(nil, good)[:streamNodeLen(good)-9],
		"overlong":      append(bytes.Repeat([]byte{0x80}, 10), AppendStreamNode(nil, good)...),
		"non-minimal":   append([]byte{0x81, 0x00}, AppendStreamNode(nil, good)[1:]...), // last ms 1 as two bytes
		"long":          append(AppendStreamNode(nil, good), 0),
		"count 0":       AppendStreamNode(nil, StreamNode{First: good.First, Last: good.Last}),
		"last below":    AppendStreamNode(nil, StreamNode{Last: ID{1, 4}, Count: 1}),
		"unknown flags": append(AppendStreamNode(nil, good)[:streamNodeLen(good)-1], 4),
		"no next ID":    append(AppendStreamNode(nil, good)[:streamNodeLen(good)-1], 2),
		"next at last":  AppendStreamNode(nil, StreamNode{First: good.First, Last: good.Last, Count: 1, Next: good.Last}),
		"next below":    AppendStreamNode(nil, StreamNode{First: good.First, Last: good.Last, Count: 1, Next: ID{1, 5}}),
		"zero next":     append(append(AppendStreamNode(nil, good)[:streamNodeLen(good)-1], 2), 0, 0),
		"empty":         nil,
	} {
		if _, err := DecodeStreamNode(good.First, bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: DecodeStreamNode(%x) = %v, want ErrCorrupt", name, bad, err)
		}
	}
}

// TestStreamNodeKeyOrder: node keys of one stream sort by first ID, under
// the stream's own prefix.
func TestStreamNodeKeyOrder(t *testing.T) {
	key := []byte("s\x00")
	ids := []ID{{0, 1}, {1, 0}, {1, 1}, {1 << 32, 0}, MaxID}
	p := KeyPrefix(TagStreamNode, 3, key)
	for i, id := range ids {
		k := StreamNodeKey(3, key, id)
		d, err := DecodeKey(k)
		if err != nil || d.Tag != TagStreamNode || d.DB != 3 || !bytes.Equal(d.Key, key) || !bytes.Equal(d.Suffix, AppendID(nil, id)) {
			t.Fatalf("DecodeKey(StreamNodeKey(%v)) = %+v, %v", id, d, err)
		}
		if !bytes.HasPrefix(k, p) || bytes.Compare(k, PrefixEnd(p)) >= 0 {
			t.Fatalf("node key %x outside its prefix", k)
		}
		if i > 0 && bytes.Compare(StreamNodeKey(3, key, ids[i-1]), k) >= 0 {
			t.Fatalf("node keys of %v and %v out of order", ids[i-1], id)
		}
	}
}

func TestMasterDigest(t *testing.T) {
	f := func(s ...string) [][]byte {
		var out [][]byte
		for _, x := range s {
			out = append(out, []byte(x))
		}
		return out
	}
	// Only the fields count, in order, with their lengths.
	if MasterDigest(f("a", "1", "b", "2")) != MasterDigest(f("a", "x", "b", "y")) {
		t.Errorf("digest depends on values")
	}
	for _, other := range [][][]byte{f("b", "1", "a", "2"), f("ab", "1"), f("a", "1"), f("a", "1", "b", "2", "c", "3")} {
		if MasterDigest(f("a", "1", "b", "2")) == MasterDigest(other) {
			t.Errorf("digest of %q equals [a b]'s", other)
		}
	}
}

// TestStreamNodeInnerIDs: a node lists the IDs between its first and last
// entry (Inner) in one canonical encoding, which decodes back; lists that
// are out of order, outside the node, of a node with deleted entries or
// of another length than its live entries less two do not decode.
func TestStreamNodeInnerIDs(t *testing.T) {
	first, last := ID{1700000000000, 5}, ID{1700000000300, 0}
	inner := []ID{{1700000000000, 6}, {1700000000000, 900}, {1700000000007, 0}, {1700000000299, 1 << 40}}
	n := StreamNode{First: first, Last: last, Count: 1, Live: uint64(len(inner) + 2), Body: 300, Next: ID{1700000000300, 1},
		Inner: string(AppendInnerIDs(nil, first, inner))}
	enc := AppendStreamNode(nil, n)
	got, err := DecodeStreamNode(first, enc)
	if err != nil || got != n || len(enc) != streamNodeLen(n) {
		t.Fatalf("DecodeStreamNode = %+v, %v; want %+v", got, err, n)
	}
	ids, err := got.InnerIDs(nil)
	if err != nil || len(ids) != len(inner) {
		t.Fatalf("InnerIDs = %v, %v", ids, err)
	}
	for i := range ids {
		if ids[i] != inner[i] {
			t.Fatalf("InnerIDs = %v, want %v", ids, inner)
		}
	}
	bad := func(name string, m StreamNode, ids []ID) {
		t.Helper()
		m.Inner = string(AppendInnerIDs(nil, m.First, ids))
		if _, err := DecodeStreamNode(m.First, AppendStreamNode(nil, m)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: DecodeStreamNode = %v, want ErrCorrupt", name, err)
		}
	}
	bad("none", n, nil)
	bad("at first", n, append([]ID{first}, inner[1:]...))
	bad("repeated", n, []ID{inner[0], inner[0], inner[2], inner[3]})
	bad("at last", n, append(inner[:3:3], last))
	bad("above last", n, append(inner[:3:3], ID{1700000000301, 0}))
	short := n
	short.Live--
	bad("more than live less two", short, inner)
	deleted := n
	deleted.Deleted = 1
	bad("deleted entries", deleted, inner)
	many := make([]ID, InnerIDsMax-1)
	for i := range many {
		many[i] = ID{first.Ms, first.Seq + 1 + uint64(i)}
	}
	big := n
	big.Live = uint64(len(many) + 2)
	bad("more than InnerIDsMax entries", big, many)
	if _, err := DecodeStreamNode(first, append(AppendStreamNode(nil, StreamNode{First: first, Last: last, Count: 1, Live: 2})[:streamNodeLen(StreamNode{First: first, Last: last, Count: 1, Live: 2})-1], 8)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("flags bit 3: %v, want ErrCorrupt", err)
	}
	// A Meta's tail never has inner IDs.
	s := StreamMeta{Length: n.Live, LastID: last, FirstID: first, EntriesAdded: n.Live, Nodes: 1, Tail: n}
	encMeta := AppendMeta(nil, Meta{Type: TypeStream, Stream: s})
	m, err := DecodeMeta(encMeta)
	if err != nil || m.Stream.Tail.Inner != "" || m.Stream.Tail.Next != (ID{}) || MetaLen(Meta{Type: TypeStream, Stream: s}) != len(encMeta) {
		t.Fatalf("a Meta's tail with inner IDs: %+v, %v", m.Stream.Tail, err)
	}
}
