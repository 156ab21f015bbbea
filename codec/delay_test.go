package codec

import (
	"bytes"
	"errors"
	"testing"
)

// TestEntryTail: an X value's tail after its fields is empty, a trace
// trailer, a delay tail, or both in that order; each round-trips, the
// fields come back unchanged, and anything else is corrupt.
func TestEntryTail(t *testing.T) {
	fv := [][]byte{[]byte("f\x00"), {}, []byte("v"), {0xff}}
	tc := TraceContext{TraceID: [16]byte{1, 2}, SpanID: [8]byte{3}, Flags: 1}
	for _, tail := range []EntryTail{{}, {Trace: tc}, {DueMs: 1700000000500}, {Trace: tc, DueMs: 1}} {
		enc := AppendEntryTail(AppendFields(nil, fv), tail)
		want := FieldsLen(fv)
		if !tail.Trace.IsZero() {
			want += TraceTrailerLen
		}
		if tail.DueMs != 0 {
			want += DelayTailLen
		}
		if len(enc) != want {
			t.Fatalf("%+v: %d bytes, want %d", tail, len(enc), want)
		}
		got, gotTail, err := DecodeEntryTail(enc)
		if err != nil || gotTail != tail || len(got) != len(fv) {
			t.Fatalf("DecodeEntryTail(%+v) = %q, %+v, %v", tail, got, gotTail, err)
		}
		for i := range fv {
			if !bytes.Equal(got[i], fv[i]) {
				t.Fatalf("field %d = %q", i, got[i])
			}
		}
		// DecodeEntry (and DecodeFields) accept every tail.
		if got, gotTC, err := DecodeEntry(enc); err != nil || gotTC != tail.Trace || len(got) != len(fv) {
			t.Fatalf("DecodeEntry(%+v) = %q, %+v, %v", tail, got, gotTC, err)
		}
	}
	base := AppendFields(nil, fv)
	bad := map[string][]byte{
		"delay before trace": AppendTraceTrailer(AppendDelayTail(bytes.Clone(base), 5), tc),
		"two delay tails":    AppendDelayTail(AppendDelayTail(bytes.Clone(base), 5), 6),
		"due 0":              AppendDelayTail(bytes.Clone(base), 0),
		"negative due":       AppendDelayTail(bytes.Clone(base), -1),
		"short delay tail":   AppendDelayTail(bytes.Clone(base), 5)[:len(base)+DelayTailLen-1],
		"wrong mark":         append(bytes.Clone(base), 'E', 0, 0, 0, 0, 0, 0, 0, 1),
		"zero trace":         AppendDelayTail(append(bytes.Clone(base), append([]byte{'T'}, make([]byte, 25)...)...), 5),
	}
	for name, b := range bad {
		if _, _, err := DecodeEntryTail(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: DecodeEntryTail err = %v, want ErrCorrupt", name, err)
		}
		if _, _, err := DecodeEntry(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: DecodeEntry err = %v, want ErrCorrupt", name, err)
		}
	}
}

// TestXAddTail: a delayed XADD's event ends with its delay tail; a trace
// added to it goes before (XAddWithTrace, in either order of building);
// XAddFields returns the tail as the entry's value ends, and
// XAddWithoutTrace takes the trace out and leaves the delay. The events
// round-trip through the change-log encoding.
func TestXAddTail(t *testing.T) {
	fv := [][]byte{[]byte("f"), []byte("v"), []byte("g"), {}}
	tc := TraceContext{TraceID: [16]byte{9}, SpanID: [8]byte{8}, Flags: 1}
	base := XAddEvent(0, []byte("s"), ID{1, 0}, fv)
	delayed := XAddWithDelay(base, 1700000000500)
	if len(base.Args) != 5 || len(delayed.Args) != 6 {
		t.Fatalf("XAddWithDelay changed its input or added %d args", len(delayed.Args)-len(base.Args))
	}
	for name, tc0 := range map[string]struct {
		e    Event
		want EntryTail
	}{
		"plain":         {base, EntryTail{}},
		"delayed":       {delayed, EntryTail{DueMs: 1700000000500}},
		"traced":        {XAddWithTrace(base, tc), EntryTail{Trace: tc}},
		"delay+trace":   {XAddWithTrace(delayed, tc), EntryTail{Trace: tc, DueMs: 1700000000500}},
		"encoded again": {mustRoundTrip(t, XAddWithTrace(delayed, tc)), EntryTail{Trace: tc, DueMs: 1700000000500}},
	} {
		e := tc0.e
		f, tail, err := XAddFields(e.Args[1:])
		if err != nil || len(f) != len(fv) {
			t.Fatalf("%s: XAddFields = %q, %x, %v", name, f, tail, err)
		}
		// Applying writes the fields and the tail: the X value.
		val := append(AppendFields(nil, f), tail...)
		if _, got, err := DecodeEntryTail(val); err != nil || got != tc0.want {
			t.Fatalf("%s: the entry's tail %+v, %v; want %+v", name, got, err, tc0.want)
		}
		stripped, trace := XAddWithoutTrace(e)
		if trace != tc0.want.Trace {
			t.Fatalf("%s: XAddWithoutTrace trace %v", name, trace)
		}
		_, tail, err = XAddFields(stripped.Args[1:])
		if err != nil {
			t.Fatalf("%s: stripped: %v", name, err)
		}
		if _, got, _ := DecodeEntryTail(append(AppendFields(nil, fv), tail...)); got != (EntryTail{DueMs: tc0.want.DueMs}) {
			t.Fatalf("%s: stripped tail %+v", name, got)
		}
	}
	for name, tail := range map[string][]byte{
		"empty":        {},
		"a value":      []byte("odd"),
		"delay twice":  AppendDelayTail(AppendDelayTail(nil, 5), 5),
		"delay, trace": AppendTraceTrailer(AppendDelayTail(nil, 5), tc),
		"due 0":        AppendDelayTail(nil, 0),
	} {
		if _, _, err := XAddFields(append(base.Args[1:len(base.Args):len(base.Args)], tail)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("XAddFields with tail %s: err %v, want ErrCorrupt", name, err)
		}
	}
}

func mustRoundTrip(t *testing.T, e Event) Event {
	t.Helper()
	got, rest, err := DecodeEvent(AppendEvent(nil, e))
	if err != nil || len(rest) != 0 {
		t.Fatalf("DecodeEvent: %v, %x", err, rest)
	}
	return got
}

// TestParkedPELEntry: a parked entry is unowned (Nacked, no Q key), sorts
// in the W index at its due time, and its mark is allowed only after an
// empty consumer.
func TestParkedPELEntry(t *testing.T) {
	pe := PELEntry{DeliveryTimeMs: 1700000000500, Parked: true}
	if !pe.Nacked() || pe.IndexTime() != 1700000000500 {
		t.Fatalf("parked entry: Nacked %v, IndexTime %d", pe.Nacked(), pe.IndexTime())
	}
	enc := AppendPELEntry(nil, pe)
	if enc[len(enc)-1] != 'D' || len(enc) != pelEntryLen+1 {
		t.Fatalf("AppendPELEntry = %x", enc)
	}
	owned := AppendPELEntry(nil, PELEntry{DeliveryTimeMs: 1, Consumer: []byte("c")})
	for name, b := range map[string][]byte{
		"mark after a consumer": append(bytes.Clone(owned), 'D'),
		"wrong mark":            append(enc[:len(enc)-1:len(enc)-1], 'E'),
	} {
		if _, err := DecodePELEntry(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: err = %v, want ErrCorrupt", name, err)
		}
	}
}

// TestDecodeEntryInto: fields decode into the caller's slice when it has
// room, into a new one otherwise, and an entry without fields decodes to
// an empty slice, never nil (nil fields mean an entry deleted while
// pending to the repliers).
func TestDecodeEntryInto(t *testing.T) {
	two := AppendFields(nil, [][]byte{[]byte("f"), []byte("v")})
	reuse := make([][]byte, 0, 4)
	fv, _, err := DecodeEntryInto(reuse, two)
	if err != nil || len(fv) != 2 || string(fv[0]) != "f" || string(fv[1]) != "v" || &fv[0] != &reuse[:1][0] {
		t.Fatalf("into a slice with room: %q, %v (reused: %v)", fv, err, err == nil && len(fv) > 0 && &fv[0] == &reuse[:1][0])
	}
	if fv, _, err = DecodeEntryInto(make([][]byte, 0, 1), two); err != nil || len(fv) != 2 {
		t.Fatalf("into a slice without room: %q, %v", fv, err)
	}
	none := AppendFields(nil, nil)
	for _, dst := range [][][]byte{nil, reuse} {
		if fv, _, err := DecodeEntryInto(dst, none); err != nil || fv == nil || len(fv) != 0 {
			t.Fatalf("no fields into %v: %q (nil %v), %v", dst == nil, fv, fv == nil, err)
		}
	}
}
