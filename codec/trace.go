package codec

import "fmt"

// TraceContext is the W3C trace context of the command that added a stream
// entry (its XADD span: docs/telemetry.md, "A message's path"), stored
// with the entry so that the reads that deliver it can link to that span.
// The zero value is none.
type TraceContext struct {
	TraceID [16]byte
	SpanID  [8]byte
	Flags   byte // W3C trace flags: bit 0 sampled
}

// IsZero reports whether t is none.
func (t TraceContext) IsZero() bool { return t == TraceContext{} }

// traceMark opens a trace trailer.
const traceMark = 'T'

// TraceTrailerLen is the length of a trace trailer:
//
//	| 'T' (0x54) | trace ID (16) | span ID (8) | flags (1) |
//
// It follows the fields of an X key's value (key-format.md §5.3) and is
// the last argument of an OpXAdd event whose field count is odd.
const TraceTrailerLen = 1 + 16 + 8 + 1

// AppendTraceTrailer appends t's trace trailer.
func AppendTraceTrailer(b []byte, t TraceContext) []byte {
	b = append(b, traceMark)
	b = append(b, t.TraceID[:]...)
	b = append(b, t.SpanID[:]...)
	return append(b, t.Flags)
}

// DecodeTraceTrailer decodes AppendTraceTrailer's output.
func DecodeTraceTrailer(b []byte) (TraceContext, error) {
	var t TraceContext
	if len(b) != TraceTrailerLen || b[0] != traceMark {
		return t, corruptf("trace trailer of %d bytes", len(b))
	}
	copy(t.TraceID[:], b[1:17])
	copy(t.SpanID[:], b[17:25])
	t.Flags = b[25]
	if t.IsZero() {
		return t, corruptf("zero trace trailer")
	}
	return t, nil
}

// String is the W3C traceparent form, version 00.
func (t TraceContext) String() string {
	return fmt.Sprintf("00-%x-%x-%02x", t.TraceID, t.SpanID, t.Flags)
}

// XAddWithTrace returns e, an OpXAdd event, with t's trace trailer at the
// front of its tail (a new Args slice; e's is not changed): as its last
// argument, or before the delay tail already there (XAddWithDelay).
func XAddWithTrace(e Event, t TraceContext) Event {
	if len(e.Args) > 1 && len(e.Args)%2 == 0 { // a tail after the ID and the pairs
		args := make([][]byte, len(e.Args))
		copy(args, e.Args)
		tail := args[len(args)-1]
		args[len(args)-1] = append(AppendTraceTrailer(make([]byte, 0, TraceTrailerLen+len(tail)), t), tail...)
		e.Args = args
		return e
	}
	args := make([][]byte, len(e.Args), len(e.Args)+1)
	copy(args, e.Args)
	e.Args = append(args, AppendTraceTrailer(make([]byte, 0, TraceTrailerLen), t))
	return e
}

// XAddFields splits an OpXAdd event's arguments after its ID into the
// entry's field, value, ... list and its tail (nil when there is none):
// an odd count of them ends with the tail, which must decode as an
// EntryTail (a trace trailer, a delay tail, or both) and is written after
// the fields as it is.
func XAddFields(args [][]byte) (fv [][]byte, tail []byte, err error) {
	if len(args)%2 == 0 {
		return args, nil, nil
	}
	tail = args[len(args)-1]
	if t, err := decodeEntryTail(tail); err != nil || t == (EntryTail{}) {
		if err == nil {
			err = corruptf("empty entry tail")
		}
		return nil, nil, err
	}
	return args[:len(args)-1], tail, nil
}

// XAddEntry splits an OpXAdd event's arguments after the ID into the
// entry's fields and its decoded tail (trace context, due time), as the X
// value holds them. Errors: ErrCorrupt, as XAddFields.
func XAddEntry(args [][]byte) (fv [][]byte, t EntryTail, err error) {
	fv, tail, err := XAddFields(args)
	if err != nil || tail == nil {
		return fv, EntryTail{}, err
	}
	t, err = decodeEntryTail(tail)
	return fv, t, err
}
