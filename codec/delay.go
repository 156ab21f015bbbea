package codec

import "encoding/binary"

// Delayed delivery (a Sediment extension, docs/rfcs/
// 20261126_dead_letters_delayed_delivery.md): an entry added by XADD with
// DELAY or DELIVERAT carries its due time in a tail of its X value, after
// the fields and the optional trace trailer:
//
//	| 'D' (0x44) | due (i64 Unix ms, 8) |
//
// XREAD does not return it (nor anything after it) before that time; a
// group's '>' read that passes it parks it in the group's PEL (PELEntry's
// Parked), whence claims take it once due. The entry's OpXAdd event carries
// the tail as its last argument (XAddWithDelay), as it carries a trace
// trailer, and applying writes it after the fields as it is.

// delayMark opens a delay tail.
const delayMark = 'D'

// DelayTailLen is the length of a delay tail.
const DelayTailLen = 1 + 8

// AppendDelayTail appends the delay tail of an entry due at dueMs.
func AppendDelayTail(b []byte, dueMs int64) []byte {
	b = append(b, delayMark)
	return binary.BigEndian.AppendUint64(b, uint64(dueMs))
}

// EntryTail is what an X value holds after its fields: the trace context
// of the XADD that added it (zero: none) and its due time (0: not
// delayed).
type EntryTail struct {
	Trace TraceContext
	DueMs int64
}

// AppendEntryTail appends t's encoding (nothing for the zero tail): the
// trace trailer first, then the delay tail, the order in which the XADD's
// events write them.
func AppendEntryTail(b []byte, t EntryTail) []byte {
	if !t.Trace.IsZero() {
		b = AppendTraceTrailer(b, t.Trace)
	}
	if t.DueMs != 0 {
		b = AppendDelayTail(b, t.DueMs)
	}
	return b
}

// decodeEntryTail decodes the bytes after an X value's fields: empty, a
// trace trailer, a delay tail, or both in that order.
func decodeEntryTail(b []byte) (EntryTail, error) {
	var t EntryTail
	if len(b) >= TraceTrailerLen && b[0] == traceMark {
		tc, err := DecodeTraceTrailer(b[:TraceTrailerLen])
		if err != nil {
			return EntryTail{}, err
		}
		t.Trace, b = tc, b[TraceTrailerLen:]
	}
	switch {
	case len(b) == 0:
	case len(b) == DelayTailLen && b[0] == delayMark:
		if t.DueMs = int64(binary.BigEndian.Uint64(b[1:])); t.DueMs <= 0 {
			return EntryTail{}, corruptf("delay tail due at %d", t.DueMs)
		}
	default:
		return EntryTail{}, corruptf("%d trailing bytes after fields", len(b))
	}
	return t, nil
}

// DecodeEntryTail decodes an X value: AppendFields' output followed by an
// optional tail (EntryTail). The returned slices alias b.
func DecodeEntryTail(b []byte) ([][]byte, EntryTail, error) {
	return DecodeEntryInto(nil, b)
}

// DecodeEntryInto is DecodeEntryTail decoding the fields into fv's
// storage when it has room for them (else into a new slice), for a
// reader that uses each entry's fields before it decodes the next. The
// fields are never nil, even when there are none (a nil slice of fields
// means an entry deleted while pending to the repliers); on an error
// they are.
func DecodeEntryInto(fv [][]byte, b []byte) ([][]byte, EntryTail, error) {
	if len(b) < 4 {
		return nil, EntryTail{}, corruptf("fields of %d bytes", len(b))
	}
	n := binary.BigEndian.Uint32(b)
	b = b[4:]
	if uint64(n) > uint64(len(b)/4) {
		return nil, EntryTail{}, corruptf("field count %d past end", n)
	}
	if fv == nil || cap(fv) < int(n) {
		fv = make([][]byte, n)
	}
	fv = fv[:n]
	var err error
	for i := range fv {
		if fv[i], b, err = SplitName(b); err != nil {
			return nil, EntryTail{}, err
		}
	}
	t, err := decodeEntryTail(b)
	if err != nil {
		return nil, EntryTail{}, err
	}
	return fv, t, nil
}

// XAddWithDelay returns e, an OpXAdd event without a tail (XAddEvent), as
// the event of an entry due at dueMs (> 0): its last argument is the delay
// tail (a new Args slice; e's is not changed). A trace added later
// (XAddWithTrace) goes before it.
func XAddWithDelay(e Event, dueMs int64) Event {
	args := make([][]byte, len(e.Args), len(e.Args)+1)
	copy(args, e.Args)
	e.Args = append(args, AppendDelayTail(make([]byte, 0, DelayTailLen), dueMs))
	return e
}

// XAddWithoutTrace returns e, an OpXAdd event, without the trace trailer of
// its tail, and that trace context (zero when it has none): the event as
// the change feed publishes it, the trace going in a message header. A
// delay tail stays as the event's last argument. e's Args are not changed;
// an event whose tail does not decode is returned as it is.
func XAddWithoutTrace(e Event) (Event, TraceContext) {
	if e.Op != OpXAdd || len(e.Args) < 2 {
		return e, TraceContext{}
	}
	_, tail, err := XAddFields(e.Args[1:])
	if err != nil || len(tail) == 0 {
		return e, TraceContext{}
	}
	t, err := decodeEntryTail(tail)
	if err != nil || t.Trace.IsZero() {
		return e, TraceContext{}
	}
	args := append([][]byte(nil), e.Args[:len(e.Args)-1]...)
	if t.DueMs != 0 {
		args = append(args, AppendDelayTail(nil, t.DueMs))
	}
	e.Args = args
	return e, t.Trace
}
