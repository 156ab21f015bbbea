package codec

import (
	"bytes"
	"testing"
)

func TestValueRefMetaRoundTrip(t *testing.T) {
	m := Meta{Type: TypeString, ExpireAtMs: 1700000000123,
		Ref: ValueRef{Segment: 1 << 40, Offset: 64 << 20, Len: 100_000, CRC: 0xdeadbeef}}
	b := AppendMeta(nil, m)
	if len(b) != MetaLen(m) || len(b) != 10+valueRefLen {
		t.Fatalf("encoded %d bytes, MetaLen %d", len(b), MetaLen(m))
	}
	got, err := DecodeMeta(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Type != TypeString || got.ExpireAtMs != m.ExpireAtMs || got.Ref != m.Ref || got.Value != nil {
		t.Fatalf("decoded %+v, want %+v", got, m)
	}
	if exp, err := MetaExpireAt(b); err != nil || exp != m.ExpireAtMs {
		t.Fatalf("MetaExpireAt = %d, %v", exp, err)
	}
	// A negative offset, an empty value, a zero reference and a truncated
	// one are corrupt.
	for _, bad := range []ValueRef{{Segment: 1, Offset: -1, Len: 3}, {Segment: 1, Offset: 8}} {
		if _, err := DecodeMeta(AppendMeta(nil, Meta{Type: TypeString, Ref: bad})); err == nil {
			t.Errorf("reference %+v decoded", bad)
		}
	}
	zero := append([]byte{metaVersionRef, byte(TypeString)}, make([]byte, 8+valueRefLen)...)
	if _, err := DecodeMeta(zero); err == nil {
		t.Error("a zero reference decoded")
	}
	if _, err := DecodeMeta(b[:len(b)-1]); err == nil {
		t.Error("a truncated reference decoded")
	}
	// An event never carries a reference.
	e := Event{Op: OpSetMeta, Key: []byte("k"), Args: [][]byte{b, Int64Arg(0)}}
	if _, err := EventMeta(e); err == nil {
		t.Error("EventMeta accepted a value reference")
	}
}

// TestSplitValueOffsets: the offsets name each split value's bytes in the
// record's encoding, after events of other kinds and short values.
func TestSplitValueOffsets(t *testing.T) {
	big := func(c byte, n int) []byte { return bytes.Repeat([]byte{c}, n) }
	events := []Event{
		SetMetaEvent(0, []byte("small"), Meta{Type: TypeString, Value: []byte("v")}, 0),
		SetMetaEvent(3, []byte("a"), Meta{Type: TypeString, Value: big('a', 300), ExpireAtMs: 5}, 0),
		DelKeyEvent(1, []byte("gone"), TypeHash, 0),
		SetMetaEvent(2, []byte("b\x00key"), Meta{Type: TypeString, Value: big('b', 70_000)}, 9),
	}
	for _, r := range []Record{{Events: events}, {Events: events, Trace: TraceContext{TraceID: [16]byte{1}, SpanID: [8]byte{2}, Flags: 1}}} {
		enc := AppendRecord([]byte("prefix"), r)[len("prefix"):]
		var seen []int
		SplitValueOffsets(r.Events, func(i, off int) {
			seen = append(seen, i)
			v := r.Events[i].Args[2]
			if !bytes.Equal(enc[off:off+len(v)], v) {
				t.Errorf("event %d: offset %d does not hold its value", i, off)
			}
		})
		if len(seen) != 2 || seen[0] != 1 || seen[1] != 3 {
			t.Fatalf("offsets for events %v, want [1 3]", seen)
		}
	}
}

func TestValueRefKeyRoundTrip(t *testing.T) {
	seg, off, err := DecodeValueRefKey(ValueRefKey(1<<40, 64<<20+17))
	if err != nil || seg != 1<<40 || off != 64<<20+17 {
		t.Fatalf("decoded %d, %d, %v", seg, off, err)
	}
	for _, bad := range [][]byte{ValueRefKey(1, 2)[:16], append([]byte{'T'}, ValueRefKey(1, 2)[1:]...)} {
		if _, _, err := DecodeValueRefKey(bad); err == nil {
			t.Errorf("R key %q decoded", bad)
		}
	}
}
