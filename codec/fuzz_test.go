package codec

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"testing"
)

// mustCorrupt fails unless err is nil or wraps ErrCorrupt.
func mustCorrupt(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil && !errors.Is(err, ErrCorrupt) {
		t.Fatalf("%s: error %v does not wrap ErrCorrupt", what, err)
	}
}

// FuzzDecodeKey decodes arbitrary bytes as every kind of key. Successful
// decodes of user-key compound keys and change-log keys are canonical, so
// they must re-encode to the input.
func FuzzDecodeKey(f *testing.F) {
	id := ID{1700000000000, 7}
	for _, key := range [][]byte{nil, []byte("orders"), []byte("a\x00b"), []byte("{x}\x1f"), {0xff}} {
		f.Add(MetaKey(0, key))
		f.Add(StreamEntryKey(1, key, id))
		f.Add(GroupKey(2, key, []byte("g\x00")))
		f.Add(ConsumerKey(3, key, []byte("g"), []byte("c\x1f")))
		f.Add(PELKey(4, key, []byte("g"), id))
		f.Add(ConsumerPELKey(255, key, []byte("{g}"), []byte("c"), MaxID))
		f.Add(TTLKey(5, key, 1700000060000))
	}
	f.Add(ChangeLogKey(42))
	f.Add([]byte{})
	f.Add([]byte("X\x00\x00\x00\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, k []byte) {
		in := bytes.Clone(k)

		d, err := DecodeKey(k)
		mustCorrupt(t, "DecodeKey", err)
		if err == nil {
			if d.Slot != Slot(d.Key) {
				t.Fatalf("DecodeKey accepted slot %d for key %q", d.Slot, d.Key)
			}
			re := append(AppendKeyPrefix(nil, d.Tag, d.DB, d.Key), d.Suffix...)
			if !bytes.Equal(re, in) {
				t.Fatalf("DecodeKey(%x) re-encodes to %x", in, re)
			}
			// Walk the suffix as the tag says; it must not panic.
			s := d.Suffix
			switch d.Tag {
			case TagStreamEntry:
				_, err = DecodeIDArg(s)
				mustCorrupt(t, "entry ID", err)
			case TagGroup, TagConsumer, TagPEL, TagConsumerPEL:
				var name []byte
				name, s, err = SplitName(s)
				mustCorrupt(t, "group", err)
				if err == nil && !bytes.HasPrefix(in, GroupPrefix(d.Tag, d.DB, d.Key, name)) {
					t.Fatalf("GroupPrefix mismatch")
				}
				if err == nil && (d.Tag == TagConsumer || d.Tag == TagConsumerPEL) {
					_, s, err = SplitName(s)
					mustCorrupt(t, "consumer", err)
				}
				if err == nil && (d.Tag == TagPEL || d.Tag == TagConsumerPEL) {
					_, err = DecodeIDArg(s)
					mustCorrupt(t, "PEL ID", err)
				}
			}
		}

		slot, dl, db, key, err := DecodeTTLKey(k)
		mustCorrupt(t, "DecodeTTLKey", err)
		// DecodeTTLKey does not check the slot; the encoding is canonical
		// when it matches.
		if err == nil && slot == Slot(key) {
			if re := TTLKey(db, key, dl); !bytes.Equal(re, in) {
				t.Fatalf("DecodeTTLKey(%x) re-encodes to %x", in, re)
			}
		}

		seq, err := DecodeChangeLogKey(k)
		mustCorrupt(t, "DecodeChangeLogKey", err)
		if err == nil && !bytes.Equal(ChangeLogKey(seq), in) {
			t.Fatalf("DecodeChangeLogKey(%x) re-encodes differently", in)
		}

		if !bytes.Equal(k, in) {
			t.Fatalf("a decoder modified its input")
		}
	})
}

// FuzzID checks ParseID against a reference parser and round-trips IDs.
func FuzzID(f *testing.F) {
	for _, s := range []string{
		"1-2", "5", "5-*", "0-0", "", "-", "1-", "a-1", "1-2-3", "+1-1", " 1-1",
		"18446744073709551615-18446744073709551615", "18446744073709551616-0",
		"000000000000000000001-0", "1-*", "*", "007-01",
	} {
		f.Add([]byte(s), uint64(0), false)
		f.Add([]byte(s), uint64(math.MaxUint64), true)
	}
	f.Fuzz(func(t *testing.T, s []byte, missingSeq uint64, allowStar bool) {
		id, seqGiven, seqStar, err := ParseID(s, missingSeq, allowStar)

		// Reference: digits only, at most 20 of them, fitting a uint64.
		num := func(p []byte) (uint64, bool) {
			if len(p) == 0 || len(p) > 20 {
				return 0, false
			}
			for _, c := range p {
				if c < '0' || c > '9' {
					return 0, false
				}
			}
			n, err := strconv.ParseUint(string(p), 10, 64)
			return n, err == nil
		}
		var want ID
		var wantGiven, wantStar, wantOK bool
		if i := bytes.IndexByte(s, '-'); i < 0 {
			want.Ms, wantOK = num(s)
			want.Seq = missingSeq
		} else if ms, ok := num(s[:i]); ok {
			want.Ms = ms
			rest := s[i+1:]
			if allowStar && string(rest) == "*" {
				wantOK, wantStar = true, true
			} else if want.Seq, wantOK = num(rest); wantOK {
				wantGiven = true
			}
		}
		if !wantOK {
			if !errors.Is(err, ErrInvalidID) || id != (ID{}) || seqGiven || seqStar {
				t.Fatalf("ParseID(%q) = %v, %v, %v, %v; want ErrInvalidID", s, id, seqGiven, seqStar, err)
			}
			return
		}
		if err != nil || id != want || seqGiven != wantGiven || seqStar != wantStar {
			t.Fatalf("ParseID(%q, %d, %v) = %v, %v, %v, %v; want %v, %v, %v",
				s, missingSeq, allowStar, id, seqGiven, seqStar, err, want, wantGiven, wantStar)
		}
		if seqGiven {
			id2, given2, star2, err := ParseID([]byte(id.String()), missingSeq, allowStar)
			if err != nil || id2 != id || !given2 || star2 {
				t.Fatalf("ParseID(%q) = %v, %v, %v, %v; want %v", id.String(), id2, given2, star2, err, id)
			}
		}
		// Binary form round-trips and orders like the ID.
		enc := AppendID(nil, id)
		if got, err := DecodeID(enc); err != nil || got != id {
			t.Fatalf("DecodeID(AppendID(%v)) = %v, %v", id, got, err)
		}
		if n, ok := id.Next(); ok && bytes.Compare(enc, AppendID(nil, n)) >= 0 {
			t.Fatalf("%v encodes at or after its successor", id)
		}
	})
}

// FuzzDecodeRecord decodes arbitrary record values. Varints may be
// non-minimal on input, so the check is that the re-encoding decodes to the
// same record and is itself a fixed point.
func FuzzDecodeRecord(f *testing.F) {
	var ulid [16]byte
	copy(ulid[:], "0123456789abcdef")
	f.Add(uint64(0), AppendRecord(nil, Record{}))
	f.Add(uint64(1), AppendRecord(nil, Record{ULID: ulid, TimeMs: 1700000000000, Events: opEvents()}))
	f.Add(uint64(2), AppendRecord(nil, Record{Events: []Event{{Op: OpFlushAll}, {Op: OpXAdd, Key: []byte("\x00"), Args: [][]byte{{}}}}}))
	f.Add(uint64(3), []byte{1})
	f.Add(uint64(4), append(AppendRecord(nil, Record{})[:25], 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01))
	f.Fuzz(func(t *testing.T, seq uint64, b []byte) {
		in := bytes.Clone(b)
		r, err := DecodeRecord(seq, b)
		mustCorrupt(t, "DecodeRecord", err)
		if !bytes.Equal(b, in) {
			t.Fatalf("DecodeRecord modified its input")
		}
		if err != nil {
			return
		}
		if r.Seq != seq {
			t.Fatalf("Seq = %d, want %d", r.Seq, seq)
		}
		enc := AppendRecord(nil, r)
		if len(enc) > len(in) {
			t.Fatalf("re-encoding (%d bytes) longer than the input (%d)", len(enc), len(in))
		}
		r2, err := DecodeRecord(seq, enc)
		if err != nil || !recordsEqual(r, r2) {
			t.Fatalf("re-encoded record decodes to %+v, %v", r2, err)
		}
		if enc2 := AppendRecord(nil, r2); !bytes.Equal(enc, enc2) {
			t.Fatalf("record encoding is not stable")
		}
	})
}

// FuzzDecodeMeta decodes arbitrary metadata values; the format is canonical.
// It also covers the other fixed-layout values, which are canonical too.
func FuzzDecodeMeta(f *testing.F) {
	f.Add(AppendMeta(nil, Meta{Type: TypeString, Value: []byte("v\x00")}))
	f.Add(AppendMeta(nil, Meta{Type: TypeString, ExpireAtMs: -1}))
	f.Add(AppendMeta(nil, Meta{Type: TypeStream, ExpireAtMs: 5, Stream: StreamMeta{Length: 1, LastID: ID{2, 3}, FirstID: ID{4, 5}, MaxDeletedID: ID{6, 7}, EntriesAdded: 8,
		Nodes: 2, HeadLast: ID{2, 1}, HeadLive: 1, HeadMigrated: true, Tail: StreamNode{First: ID{2, 2}, Last: ID{2, 3}, Count: 1, Live: 1, Body: 9, MasterKnown: true}}}))
	f.Add(AppendMeta(nil, Meta{Type: TypeStream, ExpireAtMs: 5, Stream: StreamMeta{Length: 1, LastID: ID{2, 3}, FirstID: ID{4, 5}, MaxDeletedID: ID{6, 7}, EntriesAdded: 8, Legacy: true, NodeOrigin: 9}}))
	f.Add(AppendMeta(nil, Meta{Type: TypeStream, ExpireAtMs: 5, Stream: StreamMeta{Length: 1, LastID: ID{2, 3}, FirstID: ID{4, 5}, MaxDeletedID: ID{6, 7}, EntriesAdded: 8, Legacy: true}})[:74])
	f.Add(AppendStreamNode(nil, StreamNode{Last: ID{3, 4}, Count: 1, Live: 5, Deleted: 6, Body: 7, MasterKnown: true, MasterDigest: 8}))
	f.Add(AppendMeta(nil, Meta{}))
	f.Add(AppendMeta(nil, Meta{Type: TypeHash, Count: 3}))
	f.Add(AppendMeta(nil, Meta{Type: TypeSet, ExpireAtMs: 7, Count: 1}))
	f.Add(AppendMeta(nil, Meta{Type: TypeList, Count: 2, Head: -3}))
	f.Add(AppendMeta(nil, Meta{Type: TypeZSet, Count: 4, Ranked: true, Floor: []byte{1, 2}}))
	f.Add(AppendGroup(nil, Group{LastDeliveredID: ID{7, 8}, EntriesRead: 5, PEL: PELStats{1, ID{7, 8}}})[:48])
	f.Add(AppendGroup(nil, Group{TimeIndexed: true, PELBounded: true}))
	f.Add(AppendGroup(nil, Group{LastDeliveredID: ID{1, 2}, EntriesRead: -1}))
	f.Add(AppendConsumer(nil, Consumer{SeenTimeMs: 1, ActiveTimeMs: -1}))
	f.Add(AppendPELEntry(nil, PELEntry{DeliveryTimeMs: 1, DeliveryCount: 2, Consumer: []byte("alice\x00")}))
	f.Add(AppendPELEntry(nil, PELEntry{DeliveryCount: 2, NackSeq: 9}))
	f.Add(AppendGroup(nil, Group{TimeIndexed: true, NackNext: 3, Nacked: 1}))
	f.Add(AppendFields(nil, [][]byte{[]byte("f"), {}, {0}}))
	f.Add(AppendDelayTail(AppendFields(nil, [][]byte{[]byte("f"), {}}), 1700000000500))
	f.Add(AppendEntryTail(AppendFields(nil, [][]byte{[]byte("field"), {}}), EntryTail{Trace: TraceContext{TraceID: [16]byte{1}, Flags: 1}, DueMs: 7}))
	f.Add(AppendPELEntry(nil, PELEntry{DeliveryTimeMs: 1700000000500, Parked: true}))
	f.Fuzz(func(t *testing.T, b []byte) {
		in := bytes.Clone(b)
		canonical := func(what string, re []byte) {
			t.Helper()
			if !bytes.Equal(re, in) {
				t.Fatalf("%s(%x) re-encodes to %x", what, in, re)
			}
		}
		if m, err := DecodeMeta(b); err == nil {
			switch m.Type {
			case TypeString, TypeStream, TypeHash, TypeSet, TypeList, TypeZSet:
			default:
				t.Fatalf("DecodeMeta accepted type %q", byte(m.Type))
			}
			re := AppendMeta(nil, m)
			if m.Type == TypeZSet && len(re) > 18 && len(b) > 18 && re[18] == b[18]&1 {
				re[18] = b[18] // flag bits it does not know are read as clear
			}
			if m.Type == TypeStream && len(b) == 10+streamMetaLegacyLen {
				if m.Stream.NodeOrigin != 0 {
					t.Fatalf("legacy stream meta %x decoded node-origin %d", b, m.Stream.NodeOrigin)
				}
				re = re[:len(re)-8] // the legacy layout has no node-origin
			}
			canonical("DecodeMeta", re)
		} else {
			mustCorrupt(t, "DecodeMeta", err)
		}
		if g, err := DecodeGroup(b); err == nil {
			re := AppendGroup(nil, g)
			full := groupLegacyLen + pelStatsLen + 1
			switch {
			case g.PELUnknown:
				re = re[:groupLegacyLen] // the legacy layout has no PEL stats
			case len(b) == full-1:
				re = re[:len(b)] // the layout before the flags byte (a zero one is added)
			case re[full-1] != b[full-1]&(groupFlagTimeIndexed|groupFlagPELBounded):
				t.Fatalf("DecodeGroup(%x): flags %#x re-encoded as %#x", in, b[full-1], re[full-1])
			default:
				re[full-1] = b[full-1] // flags it does not know are read as clear
			}
			canonical("DecodeGroup", re)
		} else {
			mustCorrupt(t, "DecodeGroup", err)
		}
		if c, err := DecodeConsumer(b); err == nil {
			re := AppendConsumer(nil, c)
			if c.PELUnknown {
				re = re[:len(re)-pelStatsLen] // the legacy layout has no PEL stats
			}
			canonical("DecodeConsumer", re)
		} else {
			mustCorrupt(t, "DecodeConsumer", err)
		}
		if n, err := DecodeStreamNode(ID{}, b); err == nil {
			canonical("DecodeStreamNode", AppendStreamNode(nil, n))
		} else {
			mustCorrupt(t, "DecodeStreamNode", err)
		}
		if e, err := DecodePELEntry(b); err == nil {
			canonical("DecodePELEntry", AppendPELEntry(nil, e))
		} else {
			mustCorrupt(t, "DecodePELEntry", err)
		}
		if fv, tail, err := DecodeEntryTail(b); err == nil {
			canonical("DecodeEntryTail", AppendEntryTail(AppendFields(nil, fv), tail))
		} else {
			mustCorrupt(t, "DecodeEntryTail", err)
		}
		if v, err := DecodeInt64Arg(b); err == nil {
			canonical("DecodeInt64Arg", Int64Arg(v))
		} else {
			mustCorrupt(t, "DecodeInt64Arg", err)
		}
		if id, err := DecodeIDArg(b); err == nil {
			canonical("DecodeIDArg", IDArg(id))
		} else {
			mustCorrupt(t, "DecodeIDArg", err)
		}
		if !bytes.Equal(b, in) {
			t.Fatalf("a decoder modified its input")
		}
	})
}

// FuzzEventRoundTrip checks that decode never panics, that encode(decode(b))
// is stable, and that an event built from the fuzz input survives
// decode(encode(e)).
func FuzzEventRoundTrip(f *testing.F) {
	for _, e := range opEvents() {
		f.Add(AppendEvent(nil, e), byte(e.Op), e.DB, uint8(len(e.Args)))
	}
	f.Add([]byte{'F', 0, 0, 0}, byte('F'), uint8(0), uint8(0))
	f.Add([]byte{'a', 0, 0x80, 0x00, 0}, byte('a'), uint8(1), uint8(3)) // non-minimal varint
	f.Add([]byte{}, byte(0), uint8(255), uint8(255))
	f.Fuzz(func(t *testing.T, b []byte, op byte, db uint8, nargs uint8) {
		in := bytes.Clone(b)
		e, rest, err := DecodeEvent(b)
		mustCorrupt(t, "DecodeEvent", err)
		if !bytes.Equal(b, in) {
			t.Fatalf("DecodeEvent modified its input")
		}
		if err == nil {
			consumed := len(in) - len(rest)
			if !bytes.Equal(rest, in[consumed:]) {
				t.Fatalf("rest is not the input's tail")
			}
			enc := AppendEvent(nil, e)
			if len(enc) > consumed {
				t.Fatalf("re-encoding (%d bytes) longer than the consumed input (%d)", len(enc), consumed)
			}
			e2, rest2, err := DecodeEvent(enc)
			if err != nil || len(rest2) != 0 || !eventsEqual(e, e2) {
				t.Fatalf("re-encoded event decodes to %+v, %q, %v", e2, rest2, err)
			}
			if enc2 := AppendEvent(nil, e2); !bytes.Equal(enc, enc2) {
				t.Fatalf("event encoding is not stable")
			}
		}

		// Build an event from the input: key is the first third, the rest
		// is cut into nargs pieces.
		built := Event{Op: Op(op), DB: db, Key: in[:len(in)/3]}
		tail := in[len(in)/3:]
		for i := range int(nargs) {
			n := len(tail) / (int(nargs) - i)
			built.Args = append(built.Args, tail[:n])
			tail = tail[n:]
		}
		enc := AppendEvent(nil, built)
		got, rest, err := DecodeEvent(append(enc, in...))
		if err != nil || !eventsEqual(got, built) || !bytes.Equal(rest, in) {
			t.Fatalf("DecodeEvent(AppendEvent(%+v)) = %+v, %v", built, got, err)
		}
		rec := Record{Seq: 1, TimeMs: int64(db), Events: []Event{built, built}}
		r2, err := DecodeRecord(1, AppendRecord(nil, rec))
		if err != nil || !recordsEqual(rec, r2) {
			t.Fatalf("record of built events does not round-trip: %v", err)
		}
	})
}
