package codec

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
)

// newRand returns a deterministic source so failures reproduce.
func newRand() *rand.Rand { return rand.New(rand.NewPCG(0x5ed1, 0x3e47)) }

func sign(x int) int { return cmp.Compare(x, 0) }

// binaryNames are user keys, group and consumer names that exercise binary
// safety: NUL, the 0x1F unit separator, hash-tag braces, 0xFF and lengths
// that need more than one length byte.
var binaryNames = [][]byte{
	{},
	[]byte("k"),
	{0},
	{0, 0},
	[]byte("a\x00b"),
	{0x1f},
	[]byte("a\x1fb\x1f"),
	[]byte("{"),
	[]byte("}"),
	[]byte("{}"),
	[]byte("{a}\x00"),
	[]byte("{\x00}x"),
	[]byte("{user1000}.following"),
	{0xff, 0xff},
	[]byte("\xff{\x00\x1f}\xfe"),
	bytes.Repeat([]byte{0, 0x1f, '{'}, 100),
}

// ---------------------------------------------------------------- CRC16 / Slot

// crc16Bitwise is an independent bit-at-a-time CRC16-XMODEM.
func crc16Bitwise(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc ^= uint16(c) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

func TestCRC16(t *testing.T) {
	if got := CRC16([]byte("123456789")); got != 0x31C3 {
		t.Errorf("CRC16(123456789) = %#04x, want 0x31c3", got)
	}
	if got := CRC16(nil); got != 0 {
		t.Errorf("CRC16(nil) = %#04x, want 0", got)
	}
	r := newRand()
	for range 1000 {
		b := make([]byte, r.IntN(200))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		if got, want := CRC16(b), crc16Bitwise(b); got != want {
			t.Fatalf("CRC16(%x) = %#04x, bitwise reference %#04x", b, got, want)
		}
	}
}

func slotOf(s string) uint16 { return Slot([]byte(s)) }

func TestSlotKnownValues(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want uint16
	}{
		{"foo", 12182},
		{"bar", 5061},
		{"", 0},
		{"123456789", 0x31C3 & (NumSlots - 1)},
	} {
		if got := slotOf(tc.key); got != tc.want {
			t.Errorf("Slot(%q) = %d, want %d", tc.key, got, tc.want)
		}
	}
}

func TestSlotHashTags(t *testing.T) {
	same := func(a, b string) {
		t.Helper()
		if sa, sb := slotOf(a), slotOf(b); sa != sb {
			t.Errorf("Slot(%q) = %d, Slot(%q) = %d; want equal", a, sa, b, sb)
		}
	}
	whole := func(k string) {
		t.Helper()
		if got, want := slotOf(k), CRC16([]byte(k))&(NumSlots-1); got != want {
			t.Errorf("Slot(%q) = %d, want whole-key hash %d", k, got, want)
		}
	}
	same("{user1000}.following", "{user1000}.followers")
	same("{user1000}.following", "user1000")
	same("foo{bar}{zap}", "bar")
	same("foo{{bar}}zap", "{bar")
	same("{a}", "a")
	same("x{a}y{b}", "a")
	same("{a}{", "a")
	same("}{a}", "a")
	same("{\x00}", "\x00")

	whole("foo{}{bar}") // empty first tag: whole key, not "bar"
	if slotOf("foo{}{bar}") == slotOf("bar") {
		t.Errorf("Slot(foo{}{bar}) hashed the second tag")
	}
	whole("{}")
	whole("{")
	whole("}")
	whole("}{")
	whole("foo{bar")
	whole("foo}bar{")
	whole("plain")
}

func TestSlotRangeAndPurity(t *testing.T) {
	r := newRand()
	for range 2000 {
		b := make([]byte, r.IntN(24))
		for i := range b {
			b[i] = "ab{}\x00\xff"[r.IntN(6)]
		}
		orig := bytes.Clone(b)
		if s := Slot(b); s >= NumSlots {
			t.Fatalf("Slot(%q) = %d out of range", b, s)
		}
		if !bytes.Equal(b, orig) {
			t.Fatalf("Slot modified its input")
		}
	}
}

// ---------------------------------------------------------------- ID

func TestParseID(t *testing.T) {
	const max = math.MaxUint64
	ok := []struct {
		in         string
		missingSeq uint64
		allowStar  bool
		want       ID
		seqGiven   bool
		seqStar    bool
	}{
		{"1-2", 0, false, ID{1, 2}, true, false},
		{"0-0", 0, false, ID{}, true, false},
		{"5", 0, false, ID{5, 0}, false, false},
		{"5", max, false, ID{5, max}, false, false},
		{"5", 7, true, ID{5, 7}, false, false},
		{"5-*", 0, true, ID{5, 0}, false, true},
		{"5-*", max, true, ID{5, 0}, false, true},
		{"1-2", 0, true, ID{1, 2}, true, false},
		{"007-01", 0, false, ID{7, 1}, true, false},
		{"18446744073709551615-18446744073709551615", 0, false, MaxID, true, false},
		{"18446744073709551615", 0, false, ID{max, 0}, false, false},
		{"1700000000000-0", 0, false, ID{1700000000000, 0}, true, false},
	}
	for _, tc := range ok {
		id, given, star, err := ParseID([]byte(tc.in), tc.missingSeq, tc.allowStar)
		if err != nil || id != tc.want || given != tc.seqGiven || star != tc.seqStar {
			t.Errorf("ParseID(%q, %d, %v) = %v, %v, %v, %v; want %v, %v, %v, nil",
				tc.in, tc.missingSeq, tc.allowStar, id, given, star, err, tc.want, tc.seqGiven, tc.seqStar)
		}
	}
	bad := []string{
		"", "-", "1-", "-1", "a-1", "1-a", "1-2-3", "1--2",
		"18446744073709551616-0", "0-18446744073709551616", "18446744073709551616",
		"99999999999999999999", "184467440737095516150-0",
		"+1-1", "1-+1", " 1-1", "1-1 ", "1 -1", "0x1-0", "1.0-0", "1e3-0",
		"*", "*-1", "1-**", "1-*1", "\x00", "1\x00-1", "١-1",
	}
	for _, in := range bad {
		for _, star := range []bool{false, true} {
			id, given, isStar, err := ParseID([]byte(in), 0, star)
			if !errors.Is(err, ErrInvalidID) {
				t.Errorf("ParseID(%q, allowStar=%v) err = %v, want ErrInvalidID", in, star, err)
			}
			if id != (ID{}) || given || isStar {
				t.Errorf("ParseID(%q) failed but returned %v, %v, %v", in, id, given, isStar)
			}
		}
	}
	// "ms-*" is only accepted with allowStar.
	if _, _, _, err := ParseID([]byte("5-*"), 0, false); !errors.Is(err, ErrInvalidID) {
		t.Errorf("ParseID(5-*, allowStar=false) err = %v, want ErrInvalidID", err)
	}
}

func TestIDNextPrev(t *testing.T) {
	const max = math.MaxUint64
	next := []struct {
		in, want ID
		ok       bool
	}{
		{ID{0, 0}, ID{0, 1}, true},
		{ID{1, 2}, ID{1, 3}, true},
		{ID{1, max}, ID{2, 0}, true},
		{ID{max, 5}, ID{max, 6}, true},
		{ID{max, max - 1}, MaxID, true},
		{MaxID, MaxID, false},
	}
	for _, tc := range next {
		if got, ok := tc.in.Next(); got != tc.want || ok != tc.ok {
			t.Errorf("%v.Next() = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	prev := []struct {
		in, want ID
		ok       bool
	}{
		{ID{0, 0}, ID{0, 0}, false},
		{ID{0, 1}, ID{0, 0}, true},
		{ID{1, 3}, ID{1, 2}, true},
		{ID{2, 0}, ID{1, max}, true},
		{ID{max, 0}, ID{max - 1, max}, true},
		{MaxID, ID{max, max - 1}, true},
	}
	for _, tc := range prev {
		if got, ok := tc.in.Prev(); got != tc.want || ok != tc.ok {
			t.Errorf("%v.Prev() = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	r := newRand()
	for range 5000 {
		id := randID(r)
		if n, ok := id.Next(); ok {
			if !id.Less(n) {
				t.Fatalf("%v.Next() = %v, not greater", id, n)
			}
			if p, ok := n.Prev(); !ok || p != id {
				t.Fatalf("%v.Next().Prev() = %v, %v", id, p, ok)
			}
		}
		if p, ok := id.Prev(); ok {
			if !p.Less(id) {
				t.Fatalf("%v.Prev() = %v, not smaller", id, p)
			}
			if n, ok := p.Next(); !ok || n != id {
				t.Fatalf("%v.Prev().Next() = %v, %v", id, n, ok)
			}
		}
	}
}

func TestIDCompare(t *testing.T) {
	ids := []ID{{0, 0}, {0, 1}, {0, math.MaxUint64}, {1, 0}, {1, 1}, {math.MaxUint64, 0}, MaxID}
	for i, a := range ids {
		for j, b := range ids {
			want := cmp.Compare(i, j)
			if got := a.Compare(b); got != want {
				t.Errorf("%v.Compare(%v) = %d, want %d", a, b, got, want)
			}
			if got := a.Less(b); got != (want < 0) {
				t.Errorf("%v.Less(%v) = %v", a, b, got)
			}
		}
	}
	if !(ID{}).IsZero() || (ID{0, 1}).IsZero() || (ID{1, 0}).IsZero() {
		t.Errorf("IsZero wrong")
	}
}

func TestIDText(t *testing.T) {
	for _, tc := range []struct {
		id   ID
		want string
	}{
		{ID{}, "0-0"},
		{ID{1, 2}, "1-2"},
		{ID{1700000000000, 0}, "1700000000000-0"},
		{MaxID, "18446744073709551615-18446744073709551615"},
	} {
		if got := tc.id.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
		if got := string(tc.id.AppendText([]byte("id:"))); got != "id:"+tc.want {
			t.Errorf("AppendText = %q, want %q", got, "id:"+tc.want)
		}
		id, given, star, err := ParseID([]byte(tc.want), 0, false)
		if err != nil || id != tc.id || !given || star {
			t.Errorf("ParseID(%q) = %v, %v, %v, %v", tc.want, id, given, star, err)
		}
	}
}

func TestIDBinary(t *testing.T) {
	b := AppendID([]byte("p"), ID{0x0102030405060708, 0x090a0b0c0d0e0f10})
	want := []byte("p\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10")
	if !bytes.Equal(b, want) {
		t.Fatalf("AppendID = %x, want %x", b, want)
	}
	id, err := DecodeID(append(b[1:], 0xaa)) // extra bytes are ignored
	if err != nil || id != (ID{0x0102030405060708, 0x090a0b0c0d0e0f10}) {
		t.Errorf("DecodeID = %v, %v", id, err)
	}
	for n := range IDLen {
		if _, err := DecodeID(b[1 : 1+n]); !errors.Is(err, ErrCorrupt) {
			t.Errorf("DecodeID(%d bytes) err = %v, want ErrCorrupt", n, err)
		}
	}
	if got := IDArg(MaxID); len(got) != IDLen || cap(got) != IDLen {
		t.Errorf("IDArg len/cap = %d/%d", len(got), cap(got))
	}
}

// ---------------------------------------------------------------- ordering

var edgeUints = []uint64{0, 1, 2, math.MaxUint32, math.MaxUint32 + 1, math.MaxInt64, math.MaxInt64 + 1, math.MaxUint64 - 1, math.MaxUint64}

func randUint(r *rand.Rand) uint64 {
	switch r.IntN(4) {
	case 0:
		return edgeUints[r.IntN(len(edgeUints))]
	case 1:
		return r.Uint64N(4)
	case 2:
		return 1700000000000 + r.Uint64N(4)
	default:
		return r.Uint64()
	}
}

func randID(r *rand.Rand) ID { return ID{randUint(r), randUint(r)} }

func TestIDByteOrderMatchesIDOrder(t *testing.T) {
	r := newRand()
	for range 20000 {
		a, b := randID(r), randID(r)
		if r.IntN(4) == 0 {
			b.Ms = a.Ms // exercise the Seq half
		}
		ea, eb := AppendID(nil, a), AppendID(nil, b)
		if got, want := sign(bytes.Compare(ea, eb)), a.Compare(b); got != want {
			t.Fatalf("byte order of %v vs %v = %d, ID order %d", a, b, got, want)
		}
	}
}

func TestSubKeyOrderIsIDOrder(t *testing.T) {
	r := newRand()
	key, group, consumer := []byte("s\x00{t}"), []byte("g\xff"), []byte("c\x1f")
	builders := map[string]func(ID) []byte{
		"StreamEntryKey": func(id ID) []byte { return StreamEntryKey(3, key, id) },
		"PELKey":         func(id ID) []byte { return PELKey(3, key, group, id) },
		"ConsumerPELKey": func(id ID) []byte { return ConsumerPELKey(3, key, group, consumer, id) },
	}
	for name, build := range builders {
		for range 5000 {
			a, b := randID(r), randID(r)
			if got, want := sign(bytes.Compare(build(a), build(b))), a.Compare(b); got != want {
				t.Fatalf("%s: byte order of %v vs %v = %d, ID order %d", name, a, b, got, want)
			}
		}
	}
}

func TestTTLKeyOrderIsDeadlineOrder(t *testing.T) {
	r := newRand()
	// Keys sharing a hash tag share a slot; db and key must not affect the
	// order when deadlines differ.
	randKey := func() []byte { return fmt.Appendf(nil, "{tag}%x", r.Uint64()) }
	slot := slotOf("tag")
	deadlines := []int64{0, 1, 255, 256, 1700000000000, math.MaxInt64 - 1, math.MaxInt64}
	randDeadline := func() int64 {
		if r.IntN(3) == 0 {
			return deadlines[r.IntN(len(deadlines))]
		}
		return r.Int64()
	}
	for range 10000 {
		ka, kb := randKey(), randKey()
		da, db := randDeadline(), randDeadline()
		a := TTLKey(uint8(r.Uint32()), ka, da)
		b := TTLKey(uint8(r.Uint32()), kb, db)
		if !bytes.HasPrefix(a, SlotPrefix(TagTTL, slot)) || !bytes.HasPrefix(b, SlotPrefix(TagTTL, slot)) {
			t.Fatalf("TTL keys lack slot prefix")
		}
		if da == db {
			continue
		}
		if got, want := sign(bytes.Compare(a, b)), cmp.Compare(da, db); got != want {
			t.Fatalf("TTL byte order of deadlines %d vs %d = %d", da, db, got)
		}
	}
}

func TestChangeLogKeyOrderIsSeqOrder(t *testing.T) {
	r := newRand()
	for range 10000 {
		a, b := randUint(r), randUint(r)
		if got, want := sign(bytes.Compare(ChangeLogKey(a), ChangeLogKey(b))), cmp.Compare(a, b); got != want {
			t.Fatalf("change-log byte order of %d vs %d = %d", a, b, got)
		}
	}
}

// ---------------------------------------------------------------- values

func TestMetaStringRoundTrip(t *testing.T) {
	values := [][]byte{nil, []byte("hello"), {0}, []byte("a\x00b\xff\x1f"), bytes.Repeat([]byte{0, 0xff}, 5000)}
	expires := []int64{0, 1, 1700000060000, -1, math.MaxInt64, math.MinInt64}
	for _, v := range values {
		for _, exp := range expires {
			m := Meta{Type: TypeString, ExpireAtMs: exp, Value: v}
			enc := AppendMeta(nil, m)
			if len(enc) != 10+len(v) || enc[0] != metaVersion || enc[1] != 's' ||
				int64(binary.BigEndian.Uint64(enc[2:])) != exp || !bytes.Equal(enc[10:], v) {
				t.Fatalf("AppendMeta(%+v) = %x: unexpected layout", m, enc)
			}
			got, err := DecodeMeta(enc)
			if err != nil {
				t.Fatalf("DecodeMeta: %v", err)
			}
			if got.Type != TypeString || got.ExpireAtMs != exp || !bytes.Equal(got.Value, v) || got.Stream != (StreamMeta{}) {
				t.Fatalf("DecodeMeta(AppendMeta(%+v)) = %+v", m, got)
			}
		}
	}
}

func TestMetaStreamRoundTrip(t *testing.T) {
	head := StreamMeta{
		Length:       0x0102030405060708,
		LastID:       ID{0x1112131415161718, 0x191a1b1c1d1e1f20},
		FirstID:      ID{0x2122232425262728, 0x292a2b2c2d2e2f30},
		MaxDeletedID: ID{0x3132333435363738, 0x393a3b3c3d3e3f40},
		EntriesAdded: 0x4142434445464748,
	}
	full := head
	full.Nodes, full.HeadMigrated = 0x5152535455565758, true
	full.HeadLast, full.HeadLive = ID{0x6162636465666768, 0x696a6b6c6d6e6f70}, 0x7172737475767778
	full.HeadFirst = ID{0x6162636465666768, 0x11}
	full.Tail = StreamNode{First: ID{0x8182838485868788, 1}, Last: ID{0x8182838485868788, 2}, Count: 3, Live: 4, Deleted: 5, Body: 6,
		MasterKnown: true, MasterDigest: 0x9192939495969798}
	metas := []Meta{
		{Type: TypeStream},
		{Type: TypeStream, ExpireAtMs: 1700000060000, Stream: head},
		{Type: TypeStream, ExpireAtMs: 1700000060000, Stream: full},
		{Type: TypeStream, ExpireAtMs: -1, Stream: StreamMeta{Length: math.MaxUint64, LastID: MaxID, FirstID: MaxID, MaxDeletedID: MaxID,
			EntriesAdded: math.MaxUint64, Nodes: math.MaxUint64, HeadLast: MaxID, HeadLive: math.MaxUint64, HeadFirst: MaxID,
			Tail: StreamNode{First: MaxID, Last: MaxID, Count: math.MaxUint64, Live: math.MaxUint64, Deleted: math.MaxUint64, Body: math.MaxUint64, MasterDigest: math.MaxUint64}}},
	}
	for _, m := range metas {
		enc := AppendMeta([]byte("prefix"), m)
		if !bytes.HasPrefix(enc, []byte("prefix")) {
			t.Fatalf("AppendMeta dropped the prefix")
		}
		enc = enc[len("prefix"):]
		if len(enc) != MetaLen(m) || len(enc) > 10+streamMetaMaxLen {
			t.Fatalf("stream meta is %d bytes (MetaLen %d, max %d)", len(enc), MetaLen(m), 10+streamMetaMaxLen)
		}
		s := m.Stream
		want := []byte{metaVersionStream, 'x'}
		want = binary.BigEndian.AppendUint64(want, uint64(m.ExpireAtMs))
		u := func(v uint64) { want = binary.AppendUvarint(want, v) }
		id := func(v ID) { u(v.Ms); u(v.Seq) }
		u(s.Length)
		id(s.LastID)
		id(s.FirstID)
		id(s.MaxDeletedID)
		u(s.EntriesAdded)
		u(s.Nodes)
		flags := byte(0)
		if s.HeadMigrated {
			flags = 1
		}
		if !s.HeadFirst.IsZero() {
			flags |= 2
		}
		want = append(want, flags)
		id(s.HeadLast)
		u(s.HeadLive)
		if !s.HeadFirst.IsZero() {
			id(s.HeadFirst)
		}
		id(s.Tail.First)
		want = AppendStreamNode(want, s.Tail)
		if !bytes.Equal(enc, want) {
			t.Fatalf("AppendMeta = %x, want %x", enc, want)
		}
		got, err := DecodeMeta(enc)
		if err != nil || got.Type != TypeStream || got.ExpireAtMs != m.ExpireAtMs || got.Stream != m.Stream || got.Value != nil {
			t.Fatalf("DecodeMeta(AppendMeta(%+v)) = %+v, %v", m, got, err)
		}
		// Every truncation, and a byte left over.
		for n := 10; n <= len(enc)+1; n++ {
			if n == len(enc) {
				continue
			}
			b := append(append([]byte(nil), enc...), 0)[:n]
			if _, err := DecodeMeta(b); err == nil {
				t.Fatalf("DecodeMeta accepted a stream meta of %d bytes", n)
			}
		}
	}
	// A head first ID above the head's last ID does not decode.
	badHead := full
	badHead.HeadFirst = ID{full.HeadLast.Ms + 1, 0}
	if _, err := DecodeMeta(AppendMeta(nil, Meta{Type: TypeStream, Stream: badHead})); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("DecodeMeta of a head first ID above its last = %v, want ErrCorrupt", err)
	}
	// A tail's next ID is never encoded (the tail has no next node), and a
	// Meta whose tail carries one does not decode.
	withNext := full
	withNext.Tail.Next = ID{full.Tail.Last.Ms + 1, 0}
	encNext := AppendMeta(nil, Meta{Type: TypeStream, Stream: withNext})
	if !bytes.Equal(encNext, AppendMeta(nil, Meta{Type: TypeStream, Stream: full})) || MetaLen(Meta{Type: TypeStream, Stream: withNext}) != len(encNext) {
		t.Fatalf("AppendMeta encoded a tail's next ID: %x", encNext)
	}
	cut := len(encNext) - streamNodeLen(full.Tail)
	bad := append(encNext[:cut:cut], AppendStreamNode(nil, withNext.Tail)...)
	if _, err := DecodeMeta(bad); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("DecodeMeta of a tail with a next ID = %v, want ErrCorrupt", err)
	}
	// A typical stream: 64-byte entries under today's IDs, 5 nodes, the
	// tail's fields known. The varint form is what keeps XADD's record
	// small (docs/rfcs/20261127_stream_node_keys.md, "Costs").
	typical := StreamMeta{Length: 1000, LastID: ID{1764250000123, 7}, FirstID: ID{1764249990000, 0}, EntriesAdded: 250000, Nodes: 10,
		HeadLast: ID{1764249991000, 3}, HeadLive: 100,
		Tail: StreamNode{First: ID{1764250000000, 0}, Last: ID{1764250000123, 7}, Count: 1, Live: 57, Body: 3900, MasterKnown: true, MasterDigest: 0x9192939495969798}}
	if n := MetaLen(Meta{Type: TypeStream, Stream: typical}); n > 80 {
		t.Errorf("a typical stream's Meta is %d bytes, want at most 80", n)
	}
	// The legacy forms: 82 bytes with node-origin, 74 without (origin 0).
	legacy := head
	legacy.Legacy, legacy.NodeOrigin = true, 0x494a4b4c4d4e4f50
	enc := AppendMeta(nil, Meta{Type: TypeStream, Stream: legacy})
	if len(enc) != 82 || MetaLen(Meta{Type: TypeStream, Stream: legacy}) != 82 ||
		binary.BigEndian.Uint64(enc[74:]) != legacy.NodeOrigin {
		t.Fatalf("legacy AppendMeta = %x", enc)
	}
	if got, err := DecodeMeta(enc); err != nil || got.Stream != legacy {
		t.Fatalf("DecodeMeta(legacy %x) = %+v, %v", enc, got, err)
	}
	legacy.NodeOrigin = 0
	if got, err := DecodeMeta(enc[:74]); err != nil || got.Stream != legacy {
		t.Fatalf("DecodeMeta(legacy %x) = %+v, %v", enc[:74], got, err)
	}
	// Corrupt node state: unknown flags (the Meta's, the byte after
	// nodes; the tail's, the last byte), tail fields without a tail, a
	// tail whose last ID is below its first, fewer nodes than the tail
	// stands for, a version 2 Meta of another type.
	flagsAt := 10 + uvarintLen(full.Length) + uvarintIDLen(full.LastID) + uvarintIDLen(full.FirstID) +
		uvarintIDLen(full.MaxDeletedID) + uvarintLen(full.EntriesAdded) + uvarintLen(full.Nodes)
	for at, flags := range map[int]byte{flagsAt: 3, MetaLen(Meta{Type: TypeStream, Stream: full}) - 1: 1} {
		b := AppendMeta(nil, Meta{Type: TypeStream, Stream: full})
		if b[at] != flags {
			t.Fatalf("byte %d of %x is %#x, not a flags byte of %#x", at, b, b[at], flags)
		}
		b[at] |= 4
		if _, err := DecodeMeta(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("DecodeMeta(flags %#x at %d) = %v, want ErrCorrupt", b[at], at, err)
		}
	}
	if b := AppendMeta(nil, Meta{Type: TypeHash, Count: 1}); true {
		b[0] = metaVersionStream
		if _, err := DecodeMeta(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("DecodeMeta(hash meta of version 2) = %v, want ErrCorrupt", err)
		}
	}
	b := AppendMeta(nil, Meta{Type: TypeStream, Stream: StreamMeta{Nodes: 1, Tail: StreamNode{First: ID{0, 9}, Count: 1}}})
	if _, err := DecodeMeta(b); !errors.Is(err, ErrCorrupt) {
		t.Errorf("DecodeMeta(tail 0-9..0-0) = %v, want ErrCorrupt", err)
	}
	b = AppendMeta(nil, Meta{Type: TypeStream, Stream: StreamMeta{Nodes: 1, Tail: StreamNode{Count: 2}}})
	if _, err := DecodeMeta(b); !errors.Is(err, ErrCorrupt) {
		t.Errorf("DecodeMeta(1 node, tail of 2) = %v, want ErrCorrupt", err)
	}
	b = AppendMeta(nil, Meta{Type: TypeStream, Stream: StreamMeta{Tail: StreamNode{Live: 1}}})
	if _, err := DecodeMeta(b); !errors.Is(err, ErrCorrupt) {
		t.Errorf("DecodeMeta(tail count 0, live 1) = %v, want ErrCorrupt", err)
	}
}

func TestMetaCountRoundTrip(t *testing.T) {
	for _, m := range []Meta{{Type: TypeHash, Count: 1}, {Type: TypeSet, ExpireAtMs: 1700000060000, Count: math.MaxUint64}} {
		enc := AppendMeta(nil, m)
		if len(enc) != 18 {
			t.Fatalf("%s meta is %d bytes, want 18", m.Type, len(enc))
		}
		got, err := DecodeMeta(enc)
		if err != nil || got.Type != m.Type || got.Count != m.Count || got.ExpireAtMs != m.ExpireAtMs {
			t.Fatalf("DecodeMeta(AppendMeta(%+v)) = %+v, %v", m, got, err)
		}
		for _, n := range []int{10, 17, 19} {
			b := append(append([]byte(nil), enc...), 0)[:n]
			if _, err := DecodeMeta(b); err == nil {
				t.Fatalf("DecodeMeta accepted a %s meta of %d bytes", m.Type, n)
			}
		}
	}
	if tags := TypeHash.SubTags(); len(tags) != 1 || tags[0] != TagHash {
		t.Errorf("hash sub-tags %q", tags)
	}
	if tags := TypeSet.SubTags(); len(tags) != 1 || tags[0] != TagSet {
		t.Errorf("set sub-tags %q", tags)
	}
}

func TestMetaListRoundTrip(t *testing.T) {
	for _, m := range []Meta{{Type: TypeList, Count: 1}, {Type: TypeList, ExpireAtMs: 1700000060000, Count: 7, Head: -5}, {Type: TypeList, Count: 1, Head: math.MinInt64}} {
		enc := AppendMeta(nil, m)
		if len(enc) != 26 || len(enc) != MetaLen(m) {
			t.Fatalf("list meta is %d bytes, want 26 (MetaLen %d)", len(enc), MetaLen(m))
		}
		got, err := DecodeMeta(enc)
		if err != nil || got.Type != m.Type || got.Count != m.Count || got.Head != m.Head || got.ExpireAtMs != m.ExpireAtMs {
			t.Fatalf("DecodeMeta(AppendMeta(%+v)) = %+v, %v", m, got, err)
		}
		for _, n := range []int{18, 25, 27} {
			b := append(append([]byte(nil), enc...), 0)[:n]
			if _, err := DecodeMeta(b); err == nil {
				t.Fatalf("DecodeMeta accepted a list meta of %d bytes", n)
			}
		}
	}
	if tags := TypeList.SubTags(); len(tags) != 1 || tags[0] != TagList {
		t.Errorf("list sub-tags %q", tags)
	}
}

// TestListKeyOrderIsPositionOrder checks that list element keys sort by
// position across the sign boundary, and that positions round-trip.
func TestListKeyOrderIsPositionOrder(t *testing.T) {
	pos := []int64{math.MinInt64, -1 << 40, -2, -1, 0, 1, 2, 1 << 40, math.MaxInt64}
	for i, p := range pos {
		k := ListKey(3, []byte("q\x00"), p)
		d, err := DecodeKey(k)
		if err != nil || d.Tag != TagList || string(d.Key) != "q\x00" {
			t.Fatalf("DecodeKey(ListKey(%d)) = %+v, %v", p, d, err)
		}
		if got, err := DecodeListPos(d.Suffix); err != nil || got != p {
			t.Fatalf("DecodeListPos = %d, %v; want %d", got, err, p)
		}
		if i > 0 && bytes.Compare(ListKey(3, []byte("q\x00"), pos[i-1]), k) >= 0 {
			t.Fatalf("ListKey(%d) does not sort before ListKey(%d)", pos[i-1], p)
		}
	}
	if _, err := DecodeListPos([]byte{1, 2, 3}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("DecodeListPos of 3 bytes: %v", err)
	}
}

func TestTypeString(t *testing.T) {
	for ty, want := range map[Type]string{TypeString: "string", TypeStream: "stream", TypeHash: "hash", TypeSet: "set", TypeList: "list", TypeZSet: "zset", TypeNone: "none", 'q': "none"} {
		if got := ty.String(); got != want {
			t.Errorf("Type(%q).String() = %q, want %q", byte(ty), got, want)
		}
	}
}

func TestGroupRoundTrip(t *testing.T) {
	for _, g := range []Group{
		{},
		{LastDeliveredID: ID{1, 2}, EntriesRead: -1},
		{LastDeliveredID: ID{1700000000000, 5}, EntriesRead: 42, PEL: PELStats{3, ID{1700000000000, 1}}},
		{LastDeliveredID: MaxID, EntriesRead: math.MaxInt64, PEL: PELStats{math.MaxUint64, MaxID}, TimeIndexed: true},
		{LastDeliveredID: ID{0, 1}, EntriesRead: math.MinInt64},
		{LastDeliveredID: ID{0, 1}, TimeIndexed: true, NackNext: 7, Nacked: 3},
		{LastDeliveredID: ID{9, 0}, PEL: PELStats{1, ID{3, 0}}, TimeIndexed: true, PELBounded: true},
		{PELBounded: true, NackNext: 1, Nacked: 1},
		{TimeIndexed: true, TimeFirst: PELTimePos{1700000000000, ID{5, 6}}},
		{TimeIndexed: true, MaxDeliveries: 3, DeadLettered: 2, DeadLetterKey: "dlq\x00"},
		// Runs: IDs in the same and later milliseconds, times equal and later.
		{PEL: PELStats{4, ID{5, 1}}, PELNext: []ID{{5, 2}, {5, 9}, {1700000000000, 0}}},
		{PEL: PELStats{2, ID{0, 0}}, PELNext: []ID{{0, 1}}, TimeIndexed: true,
			TimeFirst: PELTimePos{100, ID{0, 0}}, TimeNext: []PELTimePos{{100, ID{0, 1}}}},
		{PEL: PELStats{9, ID{1, 1}}, TimeIndexed: true, TimeFirst: PELTimePos{-5, ID{9, 9}},
			TimeNext:      []PELTimePos{{0, ID{10, 0}}, {7, ID{1, 1}}, {7, ID{1, 2}}, {math.MaxInt64, MaxID}},
			MaxDeliveries: 2, DeadLetterKey: "d"},
	} {
		enc := AppendGroup(nil, g)
		runs := len(g.PELNext)+len(g.TimeNext) > 0
		want := map[bool]int{false: 49, true: 89}[runs || g.NackNext != 0 || g.Nacked != 0 || g.TimeFirst != (PELTimePos{}) || g.MaxDeliveries != 0]
		if g.MaxDeliveries != 0 {
			want += 16 + 4 + len(g.DeadLetterKey)
		}
		if (len(enc) != want) != runs {
			t.Fatalf("AppendGroup is %d bytes, want %d (runs %v)", len(enc), want, runs)
		}
		got, err := DecodeGroup(enc)
		if err != nil || !reflect.DeepEqual(got, g) {
			t.Errorf("DecodeGroup(AppendGroup(%+v)) = %+v, %v", g, got, err)
		}
		for n := len(enc) - 1; runs && g.MaxDeliveries == 0 && n >= 89; n-- { // (a cut at the dead-letter fields leaves a valid value)
			if _, err := DecodeGroup(enc[:n]); !errors.Is(err, ErrCorrupt) {
				t.Errorf("DecodeGroup of %d of %d bytes = %v, want ErrCorrupt", n, len(enc), err)
			}
		}
	}
	// docs/key-format.md's example of the runs.
	ex := Group{PEL: PELStats{3, ID{1700000000000, 0}}, PELNext: []ID{{1700000000000, 1}, {1700000000003, 0}}}
	if got := appendRuns(nil, ex); !bytes.Equal(got, []byte{2, 0, 1, 3, 0, 0}) {
		t.Errorf("runs of the documented example = % x", got)
	}
	// A run that does not ascend is corrupt.
	for _, g := range []Group{
		{PEL: PELStats{3, ID{5, 5}}, PELNext: []ID{{5, 5}}},
		{PEL: PELStats{3, ID{5, 5}}, PELNext: []ID{{5, 6}, {5, 6}}},
		{TimeFirst: PELTimePos{3, ID{5, 5}}, TimeNext: []PELTimePos{{3, ID{5, 5}}}},
	} {
		if got, err := DecodeGroup(AppendGroup(nil, g)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("DecodeGroup of unordered runs %+v = %+v, %v, want ErrCorrupt", g, got, err)
		}
	}
	if enc := AppendGroup(nil, Group{EntriesRead: -1}); !bytes.Equal(enc[16:24], bytes.Repeat([]byte{0xff}, 8)) {
		t.Errorf("EntriesRead -1 encoded as %x", enc[16:24])
	}
	// The legacy 24-byte layout decodes with PELUnknown set.
	legacy := AppendGroup(nil, Group{LastDeliveredID: ID{7, 8}, EntriesRead: 5})[:24]
	if got, err := DecodeGroup(legacy); err != nil || !reflect.DeepEqual(got, Group{LastDeliveredID: ID{7, 8}, EntriesRead: 5, PELUnknown: true}) {
		t.Errorf("DecodeGroup(legacy) = %+v, %v", got, err)
	}
	// The 48-byte layout (before the flags byte) decodes unindexed.
	flagless := AppendGroup(nil, Group{LastDeliveredID: ID{7, 8}, EntriesRead: 5, TimeIndexed: true})[:48]
	if got, err := DecodeGroup(flagless); err != nil || !reflect.DeepEqual(got, Group{LastDeliveredID: ID{7, 8}, EntriesRead: 5}) {
		t.Errorf("DecodeGroup(48 bytes) = %+v, %v", got, err)
	}
	for _, n := range []int{0, 23, 25, 47, 50} {
		if _, err := DecodeGroup(make([]byte, n)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("DecodeGroup(%d bytes) = %v, want ErrCorrupt", n, err)
		}
	}
}

func TestConsumerRoundTrip(t *testing.T) {
	for _, c := range []Consumer{
		{},
		{SeenTimeMs: 1700000000500, ActiveTimeMs: -1},
		{math.MinInt64, math.MaxInt64, PELStats{1, ID{2, 3}}, false},
		{-1, 0, PELStats{math.MaxUint64, MaxID}, false},
	} {
		enc := AppendConsumer(nil, c)
		if len(enc) != 40 {
			t.Fatalf("AppendConsumer is %d bytes", len(enc))
		}
		if got, err := DecodeConsumer(enc); err != nil || got != c {
			t.Errorf("DecodeConsumer(AppendConsumer(%+v)) = %+v, %v", c, got, err)
		}
	}
	legacy := AppendConsumer(nil, Consumer{SeenTimeMs: 9, ActiveTimeMs: -1})[:16]
	if got, err := DecodeConsumer(legacy); err != nil || got != (Consumer{9, -1, PELStats{}, true}) {
		t.Errorf("DecodeConsumer(legacy) = %+v, %v", got, err)
	}
	for _, n := range []int{0, 15, 17, 39, 41} {
		if _, err := DecodeConsumer(make([]byte, n)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("DecodeConsumer(%d bytes) = %v, want ErrCorrupt", n, err)
		}
	}
}

func TestPELEntryRoundTrip(t *testing.T) {
	for _, name := range binaryNames {
		for _, e := range []PELEntry{
			{0, 0, name, 0, false},
			{1700000000500, 1, name, 0, false},
			{-1, math.MaxUint64, name, 0, false},
			{math.MaxInt64, 7, name, 0, false},
			{0, 3, nil, 42, false},           // NACKed: no owner, a place in the NACK zone
			{1700000000500, 0, nil, 0, true}, // parked (delayed delivery): no owner, its due time
		} {
			enc := AppendPELEntry(nil, e)
			want := 20 + len(e.Consumer)
			switch {
			case e.NackSeq > 0:
				want += 8
			case e.Parked:
				want++
			}
			if len(enc) != want {
				t.Fatalf("AppendPELEntry is %d bytes, want %d", len(enc), want)
			}
			got, err := DecodePELEntry(enc)
			if err != nil || got.DeliveryTimeMs != e.DeliveryTimeMs || got.DeliveryCount != e.DeliveryCount || !bytes.Equal(got.Consumer, e.Consumer) || got.NackSeq != e.NackSeq || got.Parked != e.Parked {
				t.Fatalf("DecodePELEntry(AppendPELEntry(%+v)) = %+v, %v", e, got, err)
			}
		}
	}
}

func TestFieldsRoundTrip(t *testing.T) {
	many := make([][]byte, 1000)
	for i := range many {
		many[i] = fmt.Appendf(nil, "f\x00%d", i)
	}
	cases := [][][]byte{
		nil,
		{},
		{{}},
		{{}, {}},
		{[]byte("item"), []byte("book")},
		binaryNames,
		many,
	}
	for _, fv := range cases {
		enc := AppendFields(nil, fv)
		size := 4
		for _, f := range fv {
			size += 4 + len(f)
		}
		if len(enc) != size || binary.BigEndian.Uint32(enc) != uint32(len(fv)) {
			t.Fatalf("AppendFields(%d items) = %d bytes, want %d", len(fv), len(enc), size)
		}
		if n := FieldsLen(fv); n != size {
			t.Fatalf("FieldsLen(%d items) = %d, want %d", len(fv), n, size)
		}
		got, err := DecodeFields(enc)
		if err != nil {
			t.Fatalf("DecodeFields: %v", err)
		}
		if len(got) != len(fv) {
			t.Fatalf("DecodeFields returned %d items, want %d", len(got), len(fv))
		}
		for i := range fv {
			if !bytes.Equal(got[i], fv[i]) {
				t.Fatalf("item %d = %q, want %q", i, got[i], fv[i])
			}
		}
		if re := AppendFields(nil, got); !bytes.Equal(re, enc) {
			t.Fatalf("re-encoding differs")
		}
	}
}

func TestSplitName(t *testing.T) {
	for _, name := range binaryNames {
		enc := AppendName(nil, name)
		enc = append(enc, "rest"...)
		got, rest, err := SplitName(enc)
		if err != nil || !bytes.Equal(got, name) || string(rest) != "rest" {
			t.Fatalf("SplitName(%x) = %q, %q, %v", enc, got, rest, err)
		}
	}
}

// ---------------------------------------------------------------- events

func eventsEqual(a, b Event) bool {
	if a.Op != b.Op || a.DB != b.DB || !bytes.Equal(a.Key, b.Key) || len(a.Args) != len(b.Args) {
		return false
	}
	for i := range a.Args {
		if !bytes.Equal(a.Args[i], b.Args[i]) {
			return false
		}
	}
	return true
}

func recordsEqual(a, b Record) bool {
	if a.Seq != b.Seq || a.ULID != b.ULID || a.TimeMs != b.TimeMs || a.Trace != b.Trace || len(a.Events) != len(b.Events) {
		return false
	}
	for i := range a.Events {
		if !eventsEqual(a.Events[i], b.Events[i]) {
			return false
		}
	}
	return true
}

func manyArgs(n int) [][]byte {
	args := make([][]byte, n)
	for i := range args {
		args[i] = bytes.Repeat([]byte{byte(i)}, i%300)
	}
	return args
}

func sampleEvents() []Event {
	return []Event{
		{Op: OpXAdd, DB: 0, Key: []byte("orders"), Args: [][]byte{IDArg(ID{1700000000000, 0}), []byte("item"), []byte("book")}},
		{Op: OpDelKey, DB: 255, Key: []byte("\x00k\x1f{x}\xff"), Args: [][]byte{{byte(TypeStream)}, Int64Arg(0)}},
		{Op: OpFlushAll},
		{Op: OpFlushAll, Args: [][]byte{}},
		{Op: OpXDel, DB: 1, Key: bytes.Repeat([]byte{0}, 200), Args: [][]byte{{}, {}, {0}}},
		{Op: OpPELSet, DB: 2, Key: []byte("s"), Args: manyArgs(400)},
		{Op: Op(0xff), DB: 9, Key: []byte{}, Args: [][]byte{bytes.Repeat([]byte("x"), 20000)}},
	}
}

func TestEventRoundTrip(t *testing.T) {
	for _, e := range sampleEvents() {
		enc := AppendEvent([]byte("pre"), e)
		if !bytes.HasPrefix(enc, []byte("pre")) {
			t.Fatalf("AppendEvent dropped the prefix")
		}
		enc = enc[3:]
		if enc[0] != byte(e.Op) || enc[1] != e.DB {
			t.Fatalf("event header %x", enc[:2])
		}
		got, rest, err := DecodeEvent(append(enc, "tail"...))
		if err != nil || !eventsEqual(got, e) || string(rest) != "tail" {
			t.Fatalf("DecodeEvent(AppendEvent(%v)) = %v, %q, %v", e.Op, got, rest, err)
		}
		if re := AppendEvent(nil, got); !bytes.Equal(re, enc) {
			t.Fatalf("re-encoding differs")
		}
	}
}

func TestEventArgHelpers(t *testing.T) {
	for _, v := range []int64{0, -1, 1700000000000, math.MinInt64, math.MaxInt64} {
		a := Int64Arg(v)
		if got, err := DecodeInt64Arg(a); err != nil || got != v || len(a) != 8 {
			t.Errorf("Int64Arg round trip of %d = %d, %v", v, got, err)
		}
	}
	for _, id := range []ID{{}, {1, 2}, MaxID} {
		if got, err := DecodeIDArg(IDArg(id)); err != nil || got != id {
			t.Errorf("IDArg round trip of %v = %v, %v", id, got, err)
		}
	}
	for _, n := range []int{0, 7, 9, 16} {
		if _, err := DecodeInt64Arg(make([]byte, n)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("DecodeInt64Arg(%d bytes) err = %v", n, err)
		}
	}
	for _, n := range []int{0, 8, 15, 17} {
		if _, err := DecodeIDArg(make([]byte, n)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("DecodeIDArg(%d bytes) err = %v", n, err)
		}
	}
}

// opEvents builds one event of every op with its documented arguments.
func opEvents() []Event {
	key := []byte("orders")
	group, consumer := []byte("g1"), []byte("alice")
	id := ID{1700000000000, 0}
	return []Event{
		{OpSetMeta, 0, key, [][]byte{AppendMeta(nil, Meta{Type: TypeString, ExpireAtMs: 5, Value: []byte("v")}), Int64Arg(0)}},
		{OpDelKey, 0, key, [][]byte{{byte(TypeStream)}, Int64Arg(1700000060000)}},
		{OpXAdd, 0, key, [][]byte{IDArg(id), []byte("item"), []byte("book")}},
		{OpXDel, 0, key, [][]byte{IDArg(id), IDArg(ID{1700000000000, 1})}},
		{OpXTrim, 0, key, [][]byte{IDArg(id), IDArg(id)}},
		{OpXTrim, 0, key, [][]byte{IDArg(ID{1, 0}), IDArg(id), IDArg(ID{1, 0}), IDArg(id)}},
		{OpXNodeSet, 0, key, [][]byte{IDArg(id), AppendStreamNode(nil, StreamNode{Last: id, Count: 1, Live: 1, Body: 18})}},
		{OpXNodeDel, 0, key, [][]byte{IDArg(ID{1, 0}), IDArg(id)}},
		{OpGroupSet, 0, key, [][]byte{group, AppendGroup(nil, Group{LastDeliveredID: id, EntriesRead: -1})}},
		{OpGroupDel, 0, key, [][]byte{group}},
		{OpConsumerSet, 0, key, [][]byte{group, consumer, AppendConsumer(nil, Consumer{SeenTimeMs: 1, ActiveTimeMs: -1})}},
		{OpPELSet, 0, key, [][]byte{group, IDArg(id), AppendPELEntry(nil, PELEntry{DeliveryTimeMs: 1, DeliveryCount: 1, Consumer: consumer}), {}}},
		{OpPELDel, 0, key, [][]byte{group, IDArg(id), consumer}},
		{OpTTLDel, 0, key, [][]byte{Int64Arg(1700000060000)}},
		{OpFlushDB, 3, nil, [][]byte{{0x00, 0x69, 0x3f, 0xff}}},
		{OpFlushAll, 0, nil, nil},
	}
}

// TestEventConstructors checks that ops.go builds exactly the documented
// arguments of each op.
func TestEventConstructors(t *testing.T) {
	key, group, consumer := []byte("orders\x00"), []byte("g\x1f"), []byte("{c}")
	id := ID{1700000000000, 3}
	m := Meta{Type: TypeString, ExpireAtMs: 9, Value: []byte("v")}
	g := Group{LastDeliveredID: id, EntriesRead: -1}
	c := Consumer{SeenTimeMs: 5, ActiveTimeMs: -1}
	pe := PELEntry{DeliveryTimeMs: 7, DeliveryCount: 2, Consumer: consumer}
	node := StreamNode{First: ID{1, 0}, Last: id, Count: 1, Live: 2, Deleted: 1, Body: 40, MasterKnown: true, MasterDigest: 5}
	b := func(s ...[]byte) [][]byte { return s }
	for _, tc := range []struct {
		got, want Event
	}{
		{SetMetaEvent(1, key, m, 4), Event{OpSetMeta, 1, key, b(AppendMeta(nil, m), Int64Arg(4))}},
		{DelKeyEvent(1, key, TypeStream, 0), Event{OpDelKey, 1, key, b([]byte{'x'}, Int64Arg(0), []byte{}, []byte("XGCPQWJOUVN"))}},
		{DelKeyEvent(1, key, TypeString, 0), Event{OpDelKey, 1, key, b([]byte{'s'}, Int64Arg(0), []byte{}, []byte{})}},
		{ExpiredKeyEvent(1, key, TypeHash, 5), Event{OpDelKey, 1, key, b([]byte{'h'}, Int64Arg(5), []byte{ReasonExpired}, []byte{'H'})}},
		{CopyKeyEvent(1, key, TypeSet, 2, group), Event{OpCopyKey, 1, key, b([]byte{'S'}, []byte{2}, group, []byte{'S'})}},
		{XAddEvent(1, key, id, b([]byte("f"), []byte("v"))), Event{OpXAdd, 1, key, b(IDArg(id), []byte("f"), []byte("v"))}},
		{XAddEvent(1, key, id, nil), Event{OpXAdd, 1, key, b(IDArg(id))}},
		{XDelEvent(1, key, []ID{id, MaxID}), Event{OpXDel, 1, key, b(IDArg(id), IDArg(MaxID))}},
		{XTrimEvent(1, key, ID{1, 0}, id, nil), Event{OpXTrim, 1, key, b(IDArg(ID{1, 0}), IDArg(id))}},
		{XTrimEvent(1, key, ID{1, 0}, id, []ID{{1, 0}, id}), Event{OpXTrim, 1, key, b(IDArg(ID{1, 0}), IDArg(id), IDArg(ID{1, 0}), IDArg(id))}},
		{XNodeSetEvent(1, key, node), Event{OpXNodeSet, 1, key, b(IDArg(node.First), AppendStreamNode(nil, node))}},
		{XNodeDelEvent(1, key, ID{1, 0}, id), Event{OpXNodeDel, 1, key, b(IDArg(ID{1, 0}), IDArg(id))}},
		{GroupSetEvent(1, key, group, g), Event{OpGroupSet, 1, key, b(group, AppendGroup(nil, g))}},
		{GroupDelEvent(1, key, group), Event{OpGroupDel, 1, key, b(group)}},
		{ConsumerSetEvent(1, key, group, consumer, c), Event{OpConsumerSet, 1, key, b(group, consumer, AppendConsumer(nil, c))}},
		{PELSetEvent(1, key, group, id, pe, nil), Event{OpPELSet, 1, key, b(group, IDArg(id), AppendPELEntry(nil, pe))}},
		{PELSetEvent(1, key, group, id, pe, &PELEntry{DeliveryTimeMs: 7}), Event{OpPELSet, 1, key, b(group, IDArg(id), AppendPELEntry(nil, pe), []byte{}, Int64Arg(7))}},
		{PELSetEvent(1, key, group, id, pe, &PELEntry{DeliveryTimeMs: 8, Consumer: consumer}), Event{OpPELSet, 1, key, b(group, IDArg(id), AppendPELEntry(nil, pe), consumer, Int64Arg(8))}},
		{PELDelEvent(1, key, group, id, PELEntry{DeliveryTimeMs: 9, Consumer: consumer}), Event{OpPELDel, 1, key, b(group, IDArg(id), consumer, Int64Arg(9))}},
		{TTLDelEvent(1, key, 1700000060000), Event{OpTTLDel, 1, key, b(Int64Arg(1700000060000))}},
		{FlushDBEvent(2, []uint16{0, 105, 16383}), Event{OpFlushDB, 2, nil, b([]byte{0, 0, 0, 0x69, 0x3f, 0xff})}},
		{FlushDBEvent(2, nil), Event{OpFlushDB, 2, nil, b([]byte{})}},
		{FlushAllEvent(), Event{Op: OpFlushAll}},
		{SwapDBEvent(3, 7), Event{OpSwapDB, 3, nil, b([]byte{7})}},
	} {
		if !eventsEqual(tc.got, tc.want) {
			t.Errorf("op %q: built %+v, want %+v", byte(tc.want.Op), tc.got, tc.want)
		}
		got, rest, err := DecodeEvent(AppendEvent(nil, tc.got))
		if err != nil || len(rest) != 0 || !eventsEqual(got, tc.want) {
			t.Errorf("op %q: round trip %+v, %v", byte(tc.want.Op), got, err)
		}
	}
}

func TestRecordRoundTrip(t *testing.T) {
	var ulid [16]byte
	for i := range ulid {
		ulid[i] = byte(0xf0 + i)
	}
	records := []Record{
		{Seq: 0},
		{Seq: 1, ULID: ulid, TimeMs: 1700000000000, Events: opEvents()},
		{Seq: math.MaxUint64, ULID: ulid, TimeMs: -1, Events: sampleEvents()},
		{Seq: 42, TimeMs: math.MaxInt64, Events: []Event{{Op: OpFlushAll}}},
		{Seq: 7, ULID: ulid, TimeMs: 5, Events: sampleEvents(), Trace: TraceContext{TraceID: [16]byte{1}, SpanID: [8]byte{2}, Flags: 1}},
	}
	for _, r := range records {
		enc := AppendRecord([]byte("pre"), r)
		enc = enc[3:]
		ver := byte(recordVersion)
		if !r.Trace.IsZero() {
			ver = recordTraced
			if !bytes.Equal(enc[len(enc)-TraceTrailerLen:], AppendTraceTrailer(nil, r.Trace)) {
				t.Fatalf("traced record does not end with its trace trailer: %x", enc)
			}
		}
		if enc[0] != ver || !bytes.Equal(enc[1:17], r.ULID[:]) || int64(binary.BigEndian.Uint64(enc[17:])) != r.TimeMs {
			t.Fatalf("record header %x", enc[:25])
		}
		got, err := DecodeRecord(r.Seq, enc)
		if err != nil || !recordsEqual(got, r) {
			t.Fatalf("DecodeRecord(AppendRecord(seq %d)) = %+v, %v", r.Seq, got, err)
		}
		if re := AppendRecord(nil, got); !bytes.Equal(re, enc) {
			t.Fatalf("re-encoding differs")
		}
	}
}

func TestOpArgsDecode(t *testing.T) {
	// The args documented per op decode with the package's own decoders.
	for _, e := range opEvents() {
		e2, _, err := DecodeEvent(AppendEvent(nil, e))
		if err != nil {
			t.Fatal(err)
		}
		a := e2.Args
		switch e2.Op {
		case OpSetMeta:
			_, err = DecodeMeta(a[0])
			if err == nil {
				_, err = DecodeInt64Arg(a[1])
			}
		case OpDelKey:
			if len(a[0]) != 1 || Type(a[0][0]) != TypeStream {
				err = fmt.Errorf("type arg %x", a[0])
			} else {
				_, err = DecodeInt64Arg(a[1])
			}
		case OpXAdd, OpXDel, OpXTrim:
			_, err = DecodeIDArg(a[0])
		case OpXNodeSet:
			var first ID
			if first, err = DecodeIDArg(a[0]); err == nil {
				_, err = DecodeStreamNode(first, a[1])
			}
		case OpXNodeDel:
			if _, err = DecodeIDArg(a[0]); err == nil {
				_, err = DecodeIDArg(a[1])
			}
		case OpGroupSet:
			_, err = DecodeGroup(a[1])
		case OpConsumerSet:
			_, err = DecodeConsumer(a[2])
		case OpPELSet:
			if _, err = DecodeIDArg(a[1]); err == nil {
				_, err = DecodePELEntry(a[2])
			}
		case OpPELDel:
			_, err = DecodeIDArg(a[1])
		case OpFlushDB:
			// One argument packing every slot, 2 bytes each (FlushDBEvent).
			if len(a) != 1 || len(a[0]) != 4 || binary.BigEndian.Uint16(a[0]) != 105 || binary.BigEndian.Uint16(a[0][2:]) != 16383 {
				err = fmt.Errorf("slots arg %x", a)
			}
		case OpTTLDel:
			_, err = DecodeInt64Arg(a[0])
		}
		if err != nil {
			t.Errorf("op %q: %v", byte(e2.Op), err)
		}
	}
}

// ---------------------------------------------------------------- keys

func TestKeyHeaderLayout(t *testing.T) {
	k := StreamEntryKey(7, []byte("orders"), ID{1700000000000, 1})
	want := []byte{'X'}
	want = binary.BigEndian.AppendUint16(want, slotOf("orders"))
	want = append(want, 7, 0, 0, 0, 6)
	want = append(want, "orders"...)
	want = append(want, 0, 0, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x00, 0, 0, 0, 0, 0, 0, 0, 1)
	if !bytes.Equal(k, want) {
		t.Fatalf("StreamEntryKey = % x\nwant             % x", k, want)
	}
	if !bytes.Equal(MetaKey(0, []byte("k")), KeyPrefix(TagMeta, 0, []byte("k"))) {
		t.Errorf("MetaKey != KeyPrefix(TagMeta)")
	}
	if got := ChangeLogKey(0x0102030405060708); !bytes.Equal(got, []byte("L\x01\x02\x03\x04\x05\x06\x07\x08")) {
		t.Errorf("ChangeLogKey = %x", got)
	}
	tk := TTLKey(9, []byte("ab"), 0x0102030405060708)
	wantTTL := []byte{'E'}
	wantTTL = binary.BigEndian.AppendUint16(wantTTL, slotOf("ab"))
	wantTTL = append(wantTTL, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 0, 0, 2, 'a', 'b')
	if !bytes.Equal(tk, wantTTL) {
		t.Errorf("TTLKey = %x, want %x", tk, wantTTL)
	}
}

// TestDocExamples pins the hex examples of docs/key-format.md.
func TestDocExamples(t *testing.T) {
	orders := []byte("orders")
	id := ID{1700000000000, 0}
	var ulid [16]byte
	for i := range ulid {
		ulid[i] = byte(i)
	}
	hex := func(b []byte) string { return fmt.Sprintf("% x", b) }
	for _, tc := range []struct {
		name string
		got  []byte
		want string
	}{
		{"stream entry key", StreamEntryKey(0, orders, id),
			"58 00 69 00 00 00 00 06 6f 72 64 65 72 73 00 00 01 8b cf e5 68 00 00 00 00 00 00 00 00 00"},
		{"group key", GroupKey(0, orders, []byte("g1")),
			"47 00 69 00 00 00 00 06 6f 72 64 65 72 73 00 00 00 02 67 31"},
		{"TTL key", TTLKey(0, orders, 1700000060000),
			"45 00 69 00 00 01 8b cf e6 52 60 00 00 00 00 06 6f 72 64 65 72 73"},
		{"string meta", AppendMeta(nil, Meta{Type: TypeString, ExpireAtMs: 1700000060000, Value: []byte("hi")}),
			"01 73 00 00 01 8b cf e6 52 60 68 69"},
		{"stream node key", StreamNodeKey(0, orders, id),
			"4e 00 69 00 00 00 00 06 6f 72 64 65 72 73 00 00 01 8b cf e5 68 00 00 00 00 00 00 00 00 00"},
		{"stream node value", AppendStreamNode(nil, StreamNode{First: id, Last: ID{1700000000099, 0}, Count: 1, Live: 98, Deleted: 2, Body: 1745,
			MasterKnown: true, MasterDigest: MasterDigest([][]byte{[]byte("f"), []byte("v")})}),
			"e3 d0 95 ff bc 31 00 01 62 02 d1 0d 09 71 e2 07 36 a1 e6 69 01"},
		{"stream meta", AppendMeta(nil, Meta{Type: TypeStream, Stream: StreamMeta{Length: 1, LastID: id, FirstID: id, EntriesAdded: 1,
			Nodes: 1, Tail: StreamNode{First: id, Last: id, Count: 1, Live: 1, Body: 18,
				MasterKnown: true, MasterDigest: MasterDigest([][]byte{[]byte("f"), []byte("v")})}}}),
			"02 78 00 00 00 00 00 00 00 00 01 80 d0 95 ff bc 31 00 80 d0 95 ff bc 31 00 00 00 01 01 00 00 00 00 " +
				"80 d0 95 ff bc 31 00 80 d0 95 ff bc 31 00 01 01 00 12 09 71 e2 07 36 a1 e6 69 01"},
		{"hash meta", AppendMeta(nil, Meta{Type: TypeHash, Count: 2}),
			"01 68 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 02"},
		{"hash field key", ElementKey(TagHash, 0, orders, []byte("f1")),
			"48 00 69 00 00 00 00 06 6f 72 64 65 72 73 66 31"},
		{"set member key", ElementKey(TagSet, 0, orders, []byte("m")),
			"53 00 69 00 00 00 00 06 6f 72 64 65 72 73 6d"},
		{"hset event", AppendEvent(nil, ElementsEvent(OpHSet, 0, orders, [][]byte{[]byte("f1"), []byte("v")})),
			"68 00 06 6f 72 64 65 72 73 02 02 66 31 01 76"},
		{"fields", AppendFields(nil, [][]byte{[]byte("item"), []byte("book")}),
			"00 00 00 02 00 00 00 04 69 74 65 6d 00 00 00 04 62 6f 6f 6b"},
		{"xadd event", AppendEvent(nil, XAddEvent(0, orders, id, [][]byte{[]byte("item"), []byte("book")})),
			"61 00 06 6f 72 64 65 72 73 03 10 00 00 01 8b cf e5 68 00 00 00 00 00 00 00 00 00 04 69 74 65 6d 04 62 6f 6f 6b"},
		{"delayed entry", AppendDelayTail(AppendFields(nil, [][]byte{[]byte("item"), []byte("book")}), 1700000000500),
			"00 00 00 02 00 00 00 04 69 74 65 6d 00 00 00 04 62 6f 6f 6b 44 00 00 01 8b cf e5 69 f4"},
		{"parked PEL entry", AppendPELEntry(nil, PELEntry{DeliveryTimeMs: 1700000000500, Parked: true}),
			"00 00 01 8b cf e5 69 f4 00 00 00 00 00 00 00 00 00 00 00 00 44"},
		{"flushdb slots", FlushDBEvent(0, []uint16{0, 105, 16383}).Args[0], "00 00 00 69 3f ff"},
		{"record", AppendRecord(nil, Record{ULID: ulid, TimeMs: 1700000000000, Events: []Event{XTrimEvent(0, []byte("s"), ID{4, 0}, ID{5, 0}, nil)}}),
			"01 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f 00 00 01 8b cf e5 68 00 01 27 " +
				"74 00 01 73 02 10 00 00 00 00 00 00 00 04 00 00 00 00 00 00 00 00 " +
				"10 00 00 00 00 00 00 00 05 00 00 00 00 00 00 00 00"},
		{"group", AppendGroup(nil, Group{LastDeliveredID: ID{5, 0}, EntriesRead: 5, PEL: PELStats{2, ID{4, 0}}, TimeIndexed: true, PELBounded: true}),
			"00 00 00 00 00 00 00 05 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 05 " +
				"00 00 00 00 00 00 00 02 00 00 00 00 00 00 00 04 00 00 00 00 00 00 00 00 03"},
	} {
		if got := hex(tc.got); got != tc.want {
			t.Errorf("%s: docs/key-format.md example is stale\ngot  %s\nwant %s", tc.name, got, tc.want)
		}
	}
	if CRC16(orders) != 0x0069 || Slot(orders) != 105 {
		t.Errorf("CRC16/Slot of orders = %#04x/%d", CRC16(orders), Slot(orders))
	}
}

func TestDecodeKeyRoundTrip(t *testing.T) {
	ids := []ID{{}, {1700000000000, 0}, MaxID}
	for _, db := range []uint8{0, 15, 255} {
		for _, key := range binaryNames {
			check := func(name string, k []byte, tag Tag) []byte {
				t.Helper()
				d, err := DecodeKey(k)
				if err != nil {
					t.Fatalf("%s: DecodeKey(%x): %v", name, k, err)
				}
				if d.Tag != tag || d.Slot != Slot(key) || d.DB != db || !bytes.Equal(d.Key, key) {
					t.Fatalf("%s: DecodeKey = %+v", name, d)
				}
				for _, p := range [][]byte{SlotPrefix(tag, d.Slot), SlotDBPrefix(tag, d.Slot, db), KeyPrefix(tag, db, key)} {
					if !bytes.HasPrefix(k, p) {
						t.Fatalf("%s: %x lacks prefix %x", name, k, p)
					}
				}
				return d.Suffix
			}
			if s := check("MetaKey", MetaKey(db, key), TagMeta); len(s) != 0 {
				t.Fatalf("MetaKey suffix %x", s)
			}
			for _, id := range ids {
				s := check("StreamEntryKey", StreamEntryKey(db, key, id), TagStreamEntry)
				if got, err := DecodeIDArg(s); err != nil || got != id {
					t.Fatalf("StreamEntryKey suffix %x", s)
				}
			}
			for _, group := range binaryNames {
				s := check("GroupKey", GroupKey(db, key, group), TagGroup)
				if g, rest, err := SplitName(s); err != nil || !bytes.Equal(g, group) || len(rest) != 0 {
					t.Fatalf("GroupKey suffix %x", s)
				}
				for _, id := range ids {
					pk := PELKey(db, key, group, id)
					if !bytes.HasPrefix(pk, GroupPrefix(TagPEL, db, key, group)) {
						t.Fatalf("PELKey lacks GroupPrefix")
					}
					s := check("PELKey", pk, TagPEL)
					g, rest, err := SplitName(s)
					if err != nil || !bytes.Equal(g, group) {
						t.Fatalf("PELKey suffix %x", s)
					}
					if got, err := DecodeIDArg(rest); err != nil || got != id {
						t.Fatalf("PELKey ID %x", rest)
					}
				}
				for _, consumer := range binaryNames[:8] {
					ck := ConsumerKey(db, key, group, consumer)
					if !bytes.HasPrefix(ck, GroupPrefix(TagConsumer, db, key, group)) {
						t.Fatalf("ConsumerKey lacks GroupPrefix")
					}
					s := check("ConsumerKey", ck, TagConsumer)
					g, rest, err := SplitName(s)
					if err != nil || !bytes.Equal(g, group) {
						t.Fatalf("ConsumerKey suffix %x", s)
					}
					c, rest, err := SplitName(rest)
					if err != nil || !bytes.Equal(c, consumer) || len(rest) != 0 {
						t.Fatalf("ConsumerKey consumer %x", rest)
					}
					for _, id := range ids {
						qk := ConsumerPELKey(db, key, group, consumer, id)
						if !bytes.HasPrefix(qk, ConsumerPELPrefix(db, key, group, consumer)) ||
							!bytes.HasPrefix(qk, GroupPrefix(TagConsumerPEL, db, key, group)) {
							t.Fatalf("ConsumerPELKey lacks its prefixes")
						}
						s := check("ConsumerPELKey", qk, TagConsumerPEL)
						g, rest, err := SplitName(s)
						if err != nil || !bytes.Equal(g, group) {
							t.Fatalf("ConsumerPELKey group %x", s)
						}
						c, rest, err := SplitName(rest)
						if err != nil || !bytes.Equal(c, consumer) {
							t.Fatalf("ConsumerPELKey consumer %x", s)
						}
						if got, err := DecodeIDArg(rest); err != nil || got != id {
							t.Fatalf("ConsumerPELKey ID %x", rest)
						}
					}
				}
			}
		}
	}
}

func TestDecodeTTLAndChangeLogKey(t *testing.T) {
	for _, db := range []uint8{0, 255} {
		for _, key := range binaryNames {
			for _, dl := range []int64{0, 1, 1700000060000, math.MaxInt64, -1, math.MinInt64} {
				k := TTLKey(db, key, dl)
				slot, gotDL, gotDB, gotKey, err := DecodeTTLKey(k)
				if err != nil || slot != Slot(key) || gotDL != dl || gotDB != db || !bytes.Equal(gotKey, key) {
					t.Fatalf("DecodeTTLKey(TTLKey(%d, %q, %d)) = %d, %d, %d, %q, %v", db, key, dl, slot, gotDL, gotDB, gotKey, err)
				}
				if !bytes.HasPrefix(k, SlotPrefix(TagTTL, Slot(key))) {
					t.Fatalf("TTLKey lacks its slot prefix")
				}
			}
		}
	}
	for _, seq := range []uint64{0, 1, 1 << 32, math.MaxUint64} {
		if got, err := DecodeChangeLogKey(ChangeLogKey(seq)); err != nil || got != seq {
			t.Errorf("DecodeChangeLogKey(ChangeLogKey(%d)) = %d, %v", seq, got, err)
		}
	}
}

func TestDecodeKeyRejects(t *testing.T) {
	good := StreamEntryKey(0, []byte("orders"), ID{1, 1})
	badSlot := bytes.Clone(good)
	badSlot[2] ^= 1
	hugeLen := bytes.Clone(good)
	copy(hugeLen[4:8], []byte{0xff, 0xff, 0xff, 0xff})
	pastEnd := MetaKey(0, []byte("orders"))
	pastEnd[7]++
	for name, k := range map[string][]byte{
		"nil":      nil,
		"7 bytes":  good[:7],
		"bad slot": badSlot,
		"huge len": hugeLen,
		"past end": pastEnd,
	} {
		if _, err := DecodeKey(k); !errors.Is(err, ErrCorrupt) {
			t.Errorf("DecodeKey(%s) err = %v, want ErrCorrupt", name, err)
		}
	}
	ttl := TTLKey(0, []byte("k"), 5)
	for name, k := range map[string][]byte{
		"nil":       nil,
		"15 bytes":  ttl[:15],
		"wrong tag": append([]byte{'X'}, ttl[1:]...),
		"short key": ttl[:len(ttl)-1],
		"long key":  append(bytes.Clone(ttl), 'x'),
	} {
		if _, _, _, _, err := DecodeTTLKey(k); !errors.Is(err, ErrCorrupt) {
			t.Errorf("DecodeTTLKey(%s) err = %v, want ErrCorrupt", name, err)
		}
	}
	cl := ChangeLogKey(7)
	for name, k := range map[string][]byte{
		"nil":       nil,
		"8 bytes":   cl[:8],
		"10 bytes":  append(bytes.Clone(cl), 0),
		"wrong tag": append([]byte{'E'}, cl[1:]...),
	} {
		if _, err := DecodeChangeLogKey(k); !errors.Is(err, ErrCorrupt) {
			t.Errorf("DecodeChangeLogKey(%s) err = %v, want ErrCorrupt", name, err)
		}
	}
}

// ---------------------------------------------------------------- prefixes

func TestKeyPrefixIsNotSharedByLongerKeys(t *testing.T) {
	pairs := [][2]string{
		{"a", "a\x00b"},
		{"a", "ab"},
		{"", "a"},
		{"", "\x00"},
		{"a\x00", "a\x00\x00"},
		{"{x}", "{x}y"}, // same slot: only the length keeps them apart
		{"{x}", "{x}\x00"},
		{"o", "orders"},
	}
	id := ID{1700000000000, 0}
	g, c := []byte("g"), []byte("c")
	for _, p := range pairs {
		short, long := []byte(p[0]), []byte(p[1])
		for _, db := range []uint8{0, 1} {
			subKeys := map[Tag]func(key []byte) []byte{
				TagMeta:        func(k []byte) []byte { return MetaKey(db, k) },
				TagStreamEntry: func(k []byte) []byte { return StreamEntryKey(db, k, id) },
				TagGroup:       func(k []byte) []byte { return GroupKey(db, k, g) },
				TagConsumer:    func(k []byte) []byte { return ConsumerKey(db, k, g, c) },
				TagPEL:         func(k []byte) []byte { return PELKey(db, k, g, id) },
				TagConsumerPEL: func(k []byte) []byte { return ConsumerPELKey(db, k, g, c, id) },
			}
			for tag, build := range subKeys {
				prefix := KeyPrefix(tag, db, short)
				end := PrefixEnd(prefix)
				if bytes.HasPrefix(build(long), prefix) {
					t.Errorf("%c key of %q has KeyPrefix of %q", tag, long, short)
				}
				if lk := build(long); bytes.Compare(lk, prefix) >= 0 && bytes.Compare(lk, end) < 0 {
					t.Errorf("%c key of %q falls in the range of %q", tag, long, short)
				}
				if !bytes.HasPrefix(build(short), prefix) {
					t.Errorf("%c key of %q lacks its own KeyPrefix", tag, short)
				}
				if bytes.HasPrefix(build(short), KeyPrefix(tag, db^1, short)) {
					t.Errorf("%c key of db %d has the prefix of db %d", tag, db, db^1)
				}
			}
			// The same holds one level down for group and consumer names.
			key := []byte("s")
			for _, tag := range []Tag{TagConsumer, TagPEL, TagConsumerPEL} {
				gp := GroupPrefix(tag, db, key, short)
				for _, k := range [][]byte{ConsumerKey(db, key, long, c), PELKey(db, key, long, id), ConsumerPELKey(db, key, long, c, id)} {
					if bytes.HasPrefix(k, gp) {
						t.Errorf("key %x of group %q has GroupPrefix of %q", k, long, short)
					}
				}
			}
			if bytes.HasPrefix(GroupKey(db, key, long), GroupKey(db, key, short)) {
				t.Errorf("GroupKey(%q) is a prefix of GroupKey(%q)", short, long)
			}
			if bytes.HasPrefix(ConsumerPELKey(db, key, g, long, id), ConsumerPELPrefix(db, key, g, short)) {
				t.Errorf("ConsumerPELKey of consumer %q has the prefix of %q", long, short)
			}
			if bytes.HasPrefix(ConsumerKey(db, key, g, long), ConsumerKey(db, key, g, short)) {
				t.Errorf("ConsumerKey(%q) is a prefix of ConsumerKey(%q)", short, long)
			}
		}
	}
	if !bytes.HasPrefix(StreamEntryKey(0, []byte("a"), id), KeyPrefix(TagStreamEntry, 0, []byte("a"))) ||
		bytes.HasPrefix(StreamEntryKey(0, []byte("ab"), id), KeyPrefix(TagStreamEntry, 0, []byte("a"))) {
		t.Errorf("stream entry prefix property violated")
	}
}

func TestPrefixEnd(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []byte
	}{
		{"ab", []byte("ac")},
		{"a\xff", []byte("b")},
		{"a\xff\xff", []byte("b")},
		{"\x00", []byte("\x01")},
		{"\xfe\xff", []byte("\xff")},
		{"\xff\xff", nil},
		{"\xff", nil},
		{"", nil},
	} {
		in := []byte(tc.in)
		got := PrefixEnd(in)
		if !bytes.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
			t.Errorf("PrefixEnd(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if string(in) != tc.in {
			t.Errorf("PrefixEnd modified its input")
		}
	}
}

func TestPrefixEndBoundsEveryKeyWithPrefix(t *testing.T) {
	r := newRand()
	alphabet := []byte{0, 1, 'a', 0xfe, 0xff}
	randBytes := func(max int) []byte {
		b := make([]byte, r.IntN(max+1))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return b
	}
	for range 20000 {
		p := randBytes(4)
		end := PrefixEnd(p)
		k := append(bytes.Clone(p), randBytes(4)...)
		if end != nil && bytes.Compare(k, end) >= 0 {
			t.Fatalf("key %x with prefix %x is not below PrefixEnd %x", k, p, end)
		}
		if end != nil && bytes.HasPrefix(end, p) {
			t.Fatalf("PrefixEnd(%x) = %x has the prefix", p, end)
		}
		// Minimality: every key in [p, end) has prefix p.
		o := randBytes(6)
		if bytes.Compare(o, p) >= 0 && (end == nil || bytes.Compare(o, end) < 0) && !bytes.HasPrefix(o, p) {
			t.Fatalf("key %x lies in [%x, %x) without the prefix", o, p, end)
		}
	}
	// Real key ranges: every sub-key of a user key lies in [KeyPrefix, PrefixEnd).
	for _, key := range binaryNames {
		prefix := KeyPrefix(TagStreamEntry, 0, key)
		end := PrefixEnd(prefix)
		for _, id := range []ID{{}, {1, 1}, MaxID} {
			k := StreamEntryKey(0, key, id)
			if bytes.Compare(k, prefix) < 0 || (end != nil && bytes.Compare(k, end) >= 0) {
				t.Fatalf("stream key %x outside [%x, %x)", k, prefix, end)
			}
		}
	}
	// A key of only 0xff bytes carries into the length field: the range ends
	// where keys one byte longer begin, so it stays exact.
	short := []byte{0xff, 0xff, 0xff}
	prefix := KeyPrefix(TagStreamEntry, 0, short)
	end := PrefixEnd(prefix)
	if len(end) != keyHeaderLen || end[keyHeaderLen-1] != 4 || !bytes.Equal(end[:keyHeaderLen-1], prefix[:keyHeaderLen-1]) {
		t.Errorf("PrefixEnd(%x) = %x", prefix, end)
	}
	if k := StreamEntryKey(0, short, MaxID); bytes.Compare(k, end) >= 0 {
		t.Errorf("own key %x not below %x", k, end)
	}
	// A 4-byte key in the same slot and db sorts at or after end.
	long := append([]byte{byte(TagStreamEntry)}, prefix[1:4]...)
	long = AppendName(long, []byte{0, 0, 0, 0})
	if bytes.Compare(long, end) < 0 {
		t.Errorf("longer key %x inside [%x, %x)", long, prefix, end)
	}
}

// ---------------------------------------------------------------- corruption

type decoder struct {
	name string
	fn   func([]byte) error
	// valid inputs; strict means every strict prefix of one is invalid and
	// so is any extension by one byte.
	valid         [][]byte
	strictPrefix  bool
	strictTrailer bool
}

func decoders() []decoder {
	var fieldsIn, pelIn, keysIn, ttlIn, eventsIn, recordsIn [][]byte
	fieldsIn = append(fieldsIn, AppendFields(nil, nil), AppendFields(nil, binaryNames))
	for _, name := range binaryNames[:6] {
		pelIn = append(pelIn, AppendPELEntry(nil, PELEntry{DeliveryTimeMs: 1, DeliveryCount: 2, Consumer: name}))
		keysIn = append(keysIn, MetaKey(0, name), ConsumerPELKey(3, name, []byte("g"), []byte("c"), ID{1, 2}))
		ttlIn = append(ttlIn, TTLKey(2, name, 1700000000000))
	}
	for _, e := range opEvents() {
		eventsIn = append(eventsIn, AppendEvent(nil, e))
	}
	recordsIn = append(recordsIn,
		AppendRecord(nil, Record{}),
		AppendRecord(nil, Record{TimeMs: 5, Events: opEvents()}),
		AppendRecord(nil, Record{Events: []Event{{Op: OpFlushAll}}}),
		AppendRecord(nil, Record{Events: []Event{{Op: OpFlushAll}}, Trace: TraceContext{TraceID: [16]byte{9}, Flags: 1}}),
	)
	return []decoder{
		{"DecodeKey", func(b []byte) error { _, err := DecodeKey(b); return err }, keysIn, false, false},
		{"DecodeTTLKey", func(b []byte) error { _, _, _, _, err := DecodeTTLKey(b); return err }, ttlIn, true, true},
		{"DecodeChangeLogKey", func(b []byte) error { _, err := DecodeChangeLogKey(b); return err }, [][]byte{ChangeLogKey(9)}, true, true},
		{"DecodeID", func(b []byte) error { _, err := DecodeID(b); return err }, [][]byte{AppendID(nil, MaxID)}, true, false},
		{"DecodeIDArg", func(b []byte) error { _, err := DecodeIDArg(b); return err }, [][]byte{IDArg(MaxID)}, true, true},
		{"DecodeInt64Arg", func(b []byte) error { _, err := DecodeInt64Arg(b); return err }, [][]byte{Int64Arg(-1)}, true, true},
		{"SplitName", func(b []byte) error { _, _, err := SplitName(b); return err }, [][]byte{AppendName(nil, []byte("name"))}, true, false},
		{"DecodeMeta(string)", func(b []byte) error { _, err := DecodeMeta(b); return err },
			[][]byte{AppendMeta(nil, Meta{Type: TypeString, Value: []byte("v\x00")})}, false, false},
		{"DecodeMeta(stream)", func(b []byte) error { _, err := DecodeMeta(b); return err },
			[][]byte{AppendMeta(nil, Meta{Type: TypeStream, ExpireAtMs: 9, Stream: StreamMeta{Length: 1, LastID: ID{2, 3}, FirstID: ID{4, 5}, MaxDeletedID: ID{6, 7}, EntriesAdded: 8,
				Nodes: 2, HeadLast: ID{2, 1}, HeadLive: 1, Tail: StreamNode{First: ID{2, 2}, Last: ID{2, 3}, Count: 1, Live: 1, Body: 9}}})}, false, true}, // the 74- and 82-byte legacy prefixes are valid
		{"DecodeStreamNode", func(b []byte) error { _, err := DecodeStreamNode(ID{1, 2}, b); return err },
			[][]byte{AppendStreamNode(nil, StreamNode{Last: ID{3, 4}, Count: 1, Live: 5, Deleted: 6, Body: 7, MasterKnown: true, MasterDigest: 8})}, true, true},
		{"DecodeFields", func(b []byte) error { _, err := DecodeFields(b); return err }, fieldsIn, true, true},
		{"DecodeGroup", func(b []byte) error { _, err := DecodeGroup(b); return err }, [][]byte{AppendGroup(nil, Group{LastDeliveredID: ID{1, 2}, EntriesRead: -1})}, false, true},  // the 24-byte legacy prefix is valid
		{"DecodeConsumer", func(b []byte) error { _, err := DecodeConsumer(b); return err }, [][]byte{AppendConsumer(nil, Consumer{SeenTimeMs: 1, ActiveTimeMs: -1})}, false, true}, // the 16-byte legacy prefix is valid
		{"DecodePELEntry", func(b []byte) error { _, err := DecodePELEntry(b); return err }, pelIn, true, true},
		{"DecodeEvent", func(b []byte) error { _, _, err := DecodeEvent(b); return err }, eventsIn, true, false},
		{"DecodeRecord", func(b []byte) error { _, err := DecodeRecord(1, b); return err }, recordsIn, true, true},
	}
}

// call runs fn, turning a panic into a test failure.
func call(t *testing.T, name string, fn func([]byte) error, b []byte) (err error) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("%s(%x) panicked: %v", name, b, p)
		}
	}()
	err = fn(b)
	if err != nil && !errors.Is(err, ErrCorrupt) {
		t.Fatalf("%s(%x) err = %v, not ErrCorrupt", name, b, err)
	}
	return err
}

func TestDecodersRejectTruncatedInput(t *testing.T) {
	for _, d := range decoders() {
		t.Run(d.name, func(t *testing.T) {
			if err := call(t, d.name, d.fn, nil); err == nil {
				t.Errorf("%s(nil) succeeded", d.name)
			}
			for _, v := range d.valid {
				if err := call(t, d.name, d.fn, v); err != nil {
					t.Fatalf("%s(valid %x): %v", d.name, v, err)
				}
				for n := range len(v) {
					// Copy so a read past len would be caught by the race
					// detector / bounds checks rather than hitting v's tail.
					err := call(t, d.name, d.fn, bytes.Clone(v[:n]))
					if d.strictPrefix && err == nil {
						t.Errorf("%s accepted a %d-byte prefix of %x", d.name, n, v)
					}
				}
				err := call(t, d.name, d.fn, append(bytes.Clone(v), 0))
				if d.strictTrailer && err == nil {
					t.Errorf("%s accepted %x with a trailing byte", d.name, v)
				}
			}
		})
	}
}

func TestDecodersSurviveGarbledInput(t *testing.T) {
	r := newRand()
	for _, d := range decoders() {
		for _, v := range d.valid {
			for range 3000 {
				b := bytes.Clone(v)
				for range 1 + r.IntN(4) {
					if len(b) == 0 {
						break
					}
					switch r.IntN(4) {
					case 0:
						b[r.IntN(len(b))] = byte(r.Uint32())
					case 1:
						b[r.IntN(len(b))] ^= 1 << r.IntN(8)
					case 2:
						b[r.IntN(len(b))] = []byte{0, 0x7f, 0x80, 0xff}[r.IntN(4)]
					default:
						b = b[:r.IntN(len(b))]
					}
				}
				call(t, d.name, d.fn, b)
			}
		}
	}
}

func TestDecodersRejectHostileLengths(t *testing.T) {
	maxVarint := binary.AppendUvarint(nil, math.MaxUint64)
	overflowVarint := bytes.Repeat([]byte{0xff}, 11)
	recHeader := AppendRecord(nil, Record{})[:25]
	cases := []struct {
		name string
		fn   func([]byte) error
		in   []byte
	}{
		{"SplitName huge", func(b []byte) error { _, _, err := SplitName(b); return err }, []byte{0xff, 0xff, 0xff, 0xff, 'x'}},
		{"DecodeFields huge count", func(b []byte) error { _, err := DecodeFields(b); return err }, []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}},
		{"DecodeFields item past end", func(b []byte) error { _, err := DecodeFields(b); return err }, []byte{0, 0, 0, 1, 0, 0, 0, 5, 'x'}},
		{"DecodeFields 2 items 1 present", func(b []byte) error { _, err := DecodeFields(b); return err }, []byte{0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0}},
		{"DecodeMeta version 0", func(b []byte) error { _, err := DecodeMeta(b); return err }, append([]byte{0, 's'}, make([]byte, 8)...)},
		{"DecodeMeta version 2", func(b []byte) error { _, err := DecodeMeta(b); return err }, append([]byte{2, 's'}, make([]byte, 8)...)},
		{"DecodeMeta type none", func(b []byte) error { _, err := DecodeMeta(b); return err }, AppendMeta(nil, Meta{})},
		{"DecodeMeta type z", func(b []byte) error { _, err := DecodeMeta(b); return err }, append([]byte{1, 'z'}, make([]byte, 8)...)},
		{"DecodeMeta stream 73", func(b []byte) error { _, err := DecodeMeta(b); return err }, append([]byte{1, 'x'}, make([]byte, 8+63)...)},
		{"DecodePELEntry huge name", func(b []byte) error { _, err := DecodePELEntry(b); return err }, append(make([]byte, 16), 0xff, 0xff, 0xff, 0xff)},
		{"DecodeEvent max key len", func(b []byte) error { _, _, err := DecodeEvent(b); return err }, append([]byte{'a', 0}, maxVarint...)},
		{"DecodeEvent overflowing varint", func(b []byte) error { _, _, err := DecodeEvent(b); return err }, append([]byte{'a', 0}, overflowVarint...)},
		{"DecodeEvent huge nargs", func(b []byte) error { _, _, err := DecodeEvent(b); return err }, append([]byte{'a', 0, 0}, maxVarint...)},
		{"DecodeEvent nargs > bytes", func(b []byte) error { _, _, err := DecodeEvent(b); return err }, []byte{'a', 0, 0, 5, 0, 0}},
		{"DecodeRecord version 0", func(b []byte) error { _, err := DecodeRecord(0, b); return err }, append([]byte{0}, make([]byte, 25)...)},
		{"DecodeRecord huge count", func(b []byte) error { _, err := DecodeRecord(0, b); return err }, append(bytes.Clone(recHeader), maxVarint...)},
		{"DecodeRecord overflowing count", func(b []byte) error { _, err := DecodeRecord(0, b); return err }, append(bytes.Clone(recHeader), overflowVarint...)},
		{"DecodeRecord empty event", func(b []byte) error { _, err := DecodeRecord(0, b); return err }, append(bytes.Clone(recHeader), 1, 0)},
		{"DecodeRecord event with slack", func(b []byte) error { _, err := DecodeRecord(0, b); return err },
			append(append(bytes.Clone(recHeader), 1, 5), AppendEvent(nil, Event{Op: OpFlushAll})...)},
		{"DecodeRecord event len past end", func(b []byte) error { _, err := DecodeRecord(0, b); return err }, append(bytes.Clone(recHeader), 1, 0x7f, 'F', 0, 0, 0)},
		{"DecodeRecord trailing", func(b []byte) error { _, err := DecodeRecord(0, b); return err }, append(AppendRecord(nil, Record{}), 0)},
	}
	for _, tc := range cases {
		if err := call(t, tc.name, tc.fn, tc.in); err == nil {
			t.Errorf("%s: accepted %x", tc.name, tc.in)
		}
	}
}

// ---------------------------------------------------------------- benchmarks

func BenchmarkStreamEntryKey(b *testing.B) {
	b.ReportAllocs()
	key := []byte("orders:{eu}:2024")
	for i := 0; b.Loop(); i++ {
		_ = StreamEntryKey(0, key, ID{1700000000000 + uint64(i), 0})
	}
}

func BenchmarkAppendMeta(b *testing.B) {
	b.ReportAllocs()
	m := Meta{Type: TypeStream, ExpireAtMs: 1700000060000, Stream: StreamMeta{
		Length: 10, LastID: ID{1700000000000, 9}, FirstID: ID{1700000000000, 0}, EntriesAdded: 10,
	}}
	buf := make([]byte, 0, 128)
	for b.Loop() {
		buf = AppendMeta(buf[:0], m)
	}
}

func BenchmarkDecodeRecord(b *testing.B) {
	b.ReportAllocs()
	rec := Record{Seq: 1, TimeMs: 1700000000000, Events: opEvents()}
	enc := AppendRecord(nil, rec)
	b.SetBytes(int64(len(enc)))
	for b.Loop() {
		if _, err := DecodeRecord(1, enc); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSetMetaEventSplit: a string value longer than SplitValueMin travels
// as the event's third argument, aliased; EventMeta gives back the Meta
// (which applying stores with AppendMeta), and the split header is never a
// metadata value (an older binary's DecodeMeta rejects the event).
func TestSetMetaEventSplit(t *testing.T) {
	for _, n := range []int{0, SplitValueMin, SplitValueMin + 1, 100_000} {
		val := bytes.Repeat([]byte{'v'}, n)
		m := Meta{Type: TypeString, ExpireAtMs: 1700000060000, Value: val}
		e := SetMetaEvent(3, []byte("k"), m, 1700000000000)
		split := n > SplitValueMin
		if IsSplitSetMeta(e) != split || (split && (len(e.Args) != 3 || &e.Args[2][0] != &val[0])) {
			t.Fatalf("%d bytes: split %v, args %d", n, IsSplitSetMeta(e), len(e.Args))
		}
		got, err := EventMeta(e)
		if err != nil || got.Type != TypeString || got.ExpireAtMs != m.ExpireAtMs || !bytes.Equal(got.Value, val) {
			t.Fatalf("%d bytes: EventMeta = %+v, %v", n, got, err)
		}
		if exp, err := MetaExpireAt(e.Args[0]); err != nil || exp != m.ExpireAtMs {
			t.Fatalf("%d bytes: MetaExpireAt = %d, %v", n, exp, err)
		}
		if prev, err := DecodeInt64Arg(e.Args[1]); err != nil || prev != 1700000000000 {
			t.Fatalf("%d bytes: previous expire-at %d, %v", n, prev, err)
		}
		if split {
			if _, err := DecodeMeta(e.Args[0]); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("DecodeMeta(split header) = %v, want ErrCorrupt", err)
			}
			// Round trip through a record, as the change log keeps it.
			rec, err := DecodeRecord(1, AppendRecord(nil, Record{TimeMs: 1, Events: []Event{e}}))
			if err != nil {
				t.Fatal(err)
			}
			if got, err := EventMeta(rec.Events[0]); err != nil || !bytes.Equal(got.Value, val) {
				t.Fatalf("EventMeta after a record round trip: %d bytes, %v", len(got.Value), err)
			}
		}
	}
	bad := SetMetaEvent(0, []byte("k"), Meta{Type: TypeString, Value: bytes.Repeat([]byte{'v'}, 300)}, 0)
	for name, e := range map[string]Event{
		"no value":   {Op: OpSetMeta, Args: bad.Args[:2]},
		"not string": {Op: OpSetMeta, Args: [][]byte{append([]byte{metaVersionSplit, byte(TypeHash)}, bad.Args[0][2:]...), bad.Args[1], bad.Args[2]}},
		"long":       {Op: OpSetMeta, Args: [][]byte{append(bytes.Clone(bad.Args[0]), 0), bad.Args[1], bad.Args[2]}},
	} {
		if _, err := EventMeta(e); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: EventMeta = %v, want ErrCorrupt", name, err)
		}
	}
}

// BenchmarkCRC16 hashes user keys of typical lengths (the slot of every
// compound key is computed from its user key).
func BenchmarkCRC16(b *testing.B) {
	for _, n := range []int{8, 24, 64} {
		key := make([]byte, n)
		for i := range key {
			key[i] = byte('a' + i%26)
		}
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				CRC16(key)
			}
		})
	}
}
