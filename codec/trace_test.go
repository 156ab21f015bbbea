package codec

import (
	"bytes"
	"testing"
)

func TestTraceTrailer(t *testing.T) {
	tc := TraceContext{Flags: 1}
	for i := range tc.TraceID {
		tc.TraceID[i] = byte(i + 1)
	}
	for i := range tc.SpanID {
		tc.SpanID[i] = byte(0xa0 + i)
	}
	if got := tc.String(); got != "00-0102030405060708090a0b0c0d0e0f10-a0a1a2a3a4a5a6a7-01" {
		t.Errorf("String = %s", got)
	}
	fv := [][]byte{[]byte("f"), []byte("v"), {}, []byte("\x00")}
	val := AppendTraceTrailer(AppendFields(nil, fv), tc)
	if len(val) != FieldsLen(fv)+TraceTrailerLen {
		t.Fatalf("value of %d bytes", len(val))
	}
	got, gotTC, err := DecodeEntry(val)
	if err != nil || gotTC != tc || len(got) != 4 || !bytes.Equal(got[3], []byte("\x00")) {
		t.Fatalf("DecodeEntry = %q %v %v", got, gotTC, err)
	}
	if got, err := DecodeFields(val); err != nil || len(got) != 4 {
		t.Fatalf("DecodeFields skips the trailer: %q %v", got, err)
	}
	// Without a trailer: the zero context.
	if _, gotTC, err := DecodeEntry(AppendFields(nil, fv)); err != nil || !gotTC.IsZero() {
		t.Fatalf("no trailer: %v %v", gotTC, err)
	}
	// Corrupt trailers.
	bad := map[string][]byte{
		"wrong mark":  append(AppendFields(nil, fv), append([]byte{'X'}, val[len(val)-TraceTrailerLen+1:]...)...),
		"short":       val[:len(val)-1],
		"long":        append(append([]byte(nil), val...), 0),
		"zero":        AppendTraceTrailer(AppendFields(nil, fv), TraceContext{}),
		"bytes after": append(AppendFields(nil, fv), 1, 2, 3),
	}
	for name, b := range bad {
		if _, _, err := DecodeEntry(b); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}

	// An OpXAdd event's arguments: an odd count after the ID ends with the trailer.
	e := XAddEvent(0, []byte("s"), ID{Ms: 1}, fv)
	te := XAddWithTrace(e, tc)
	if len(e.Args) != 5 || len(te.Args) != 6 {
		t.Fatalf("args %d, traced %d", len(e.Args), len(te.Args))
	}
	if f, tr, err := XAddFields(te.Args[1:]); err != nil || len(f) != 4 || len(tr) != TraceTrailerLen {
		t.Fatalf("XAddFields(traced) = %q %x %v", f, tr, err)
	}
	if f, tr, err := XAddFields(e.Args[1:]); err != nil || len(f) != 4 || tr != nil {
		t.Fatalf("XAddFields(plain) = %q %x %v", f, tr, err)
	}
	if _, _, err := XAddFields(append(e.Args[1:len(e.Args):len(e.Args)], []byte("odd"))); err == nil {
		t.Errorf("an odd argument that is not a trailer was taken")
	}
}
