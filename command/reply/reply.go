// Package reply renders command replies. A command builds its reply with
// protocol-neutral calls (Array, Map, Bulk, Int, Double, Null, ...) and the
// Writer renders them for the connection's protocol, RESP2 or RESP3,
// exactly as Redis 7.0 renders each kind:
//
//	call          RESP2                      RESP3
//	Map(n)        *2n (flattened)            %n
//	Set(n)        *n                         ~n
//	Double(f)     $len %.17g                 ,%.17g
//	Bool(v)       :1 / :0                    #t / #f
//	NullBulk()    $-1                        _
//	NullArray()   *-1                        _
//	Verbatim      $len text                  =len fmt:text
//	BigNumber     $len digits                (digits
//	Pairs(n)      *2n, Pair() writes nothing *n, Pair() writes *2
//	ArrayMap(n)   *n, Entry() writes *2      %n, Entry() writes nothing
//	Push(n)       *n                         >n
//
// Pairs is the shape of ZRANGE WITHSCORES and HRANDFIELD WITHVALUES
// (flat in RESP2, an array of pairs in RESP3); ArrayMap the shape of
// XREAD (an array of [key, value] pairs in RESP2, a map in RESP3).
//
// https://redis.io/docs/latest/develop/reference/protocol-spec/
package reply

import (
	"math"
	"slices"
	"strconv"
	"sync"
)

// Sink takes the bytes a Writer renders: the connection's output buffer
// (redcon's Writer satisfies it) or an EXEC's reply buffer. WriteRaw
// appends b, which it must not retain.
type Sink interface {
	WriteRaw(b []byte)
}

// Reserver is a Sink that lends room at its end to be filled in place: a
// value read from storage straight into the output buffer (BulkFill).
type Reserver interface {
	Sink
	// Reserve appends n bytes and returns them, to be filled before the
	// next write.
	Reserve(n int) []byte
	// Unreserve takes back the last n bytes appended (a fill that failed).
	Unreserve(n int)
}

// RefSink is a Sink that can keep a slice instead of copying it: WriteRef
// appends b, which never changes, and the sink may refer to it until it
// has sent it (the connection's output buffer writes it with writev).
type RefSink interface {
	Sink
	WriteRef(b []byte)
}

// Writer renders replies into a Sink. The zero Writer is not usable; make
// one with New. Copies of a Writer share its scratch buffer: use them from
// one goroutine.
type Writer struct {
	sink  Sink
	buf   *[]byte // scratch: each call renders here, then appends it to sink
	resp3 bool
}

// Protocol versions, as HELLO names them.
const (
	RESP2 = 2
	RESP3 = 3
)

// New returns a Writer rendering RESP2 into sink.
func New(sink Sink) Writer { return Writer{sink: sink, buf: new([]byte)} }

// NewScratch returns a Writer rendering protocol proto (RESP2 or RESP3)
// into sink with the caller's scratch buffer, reused across Writers (a
// connection's commands run one at a time) so that a reply costs no
// allocation once the buffer has grown.
func NewScratch(sink Sink, scratch *[]byte, proto int) Writer {
	return Writer{sink: sink, buf: scratch, resp3: proto == RESP3}
}

// RESP3 reports whether w renders RESP3, for the few replies whose
// contents (not only their types) differ by protocol.
func (w Writer) RESP3() bool { return w.resp3 }

// put renders one element with f and appends it to the sink: O(element),
// whatever the sink already holds.
func (w Writer) put(f func(b []byte) []byte) {
	b := f((*w.buf)[:0])
	*w.buf = b
	w.sink.WriteRaw(b)
}

func appendHeader(b []byte, c byte, n int) []byte {
	b = append(b, c)
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}

// Array starts an array of n elements.
func (w Writer) Array(n int) { w.put(func(b []byte) []byte { return appendHeader(b, '*', n) }) }

// Map starts a map of n key/value pairs (RESP2: an array of 2n elements).
func (w Writer) Map(n int) {
	if w.resp3 {
		w.put(func(b []byte) []byte { return appendHeader(b, '%', n) })
		return
	}
	w.Array(2 * n)
}

// Set starts a set of n members (RESP2: an array).
func (w Writer) Set(n int) {
	if w.resp3 {
		w.put(func(b []byte) []byte { return appendHeader(b, '~', n) })
		return
	}
	w.Array(n)
}

// Push starts a push frame of n elements (pub/sub messages, invalidations;
// RESP2: an array).
func (w Writer) Push(n int) {
	if w.resp3 {
		w.put(func(b []byte) []byte { return appendHeader(b, '>', n) })
		return
	}
	w.Array(n)
}

// Pairs starts an array of n pairs, each begun with Pair: RESP2 flattens
// them into one array of 2n elements, RESP3 sends n arrays of two (Redis's
// ZRANGE WITHSCORES, ZPOPMIN with a count, HRANDFIELD WITHVALUES).
func (w Writer) Pairs(n int) {
	if w.resp3 {
		w.Array(n)
		return
	}
	w.Array(2 * n)
}

// Pair begins one pair of a Pairs reply.
func (w Writer) Pair() {
	if w.resp3 {
		w.Array(2)
	}
}

// ArrayMap starts a map of n entries, each begun with Entry, that RESP2
// renders as an array of n [key, value] arrays (Redis's XREAD and
// XREADGROUP replies).
func (w Writer) ArrayMap(n int) {
	if w.resp3 {
		w.Map(n)
		return
	}
	w.Array(n)
}

// Entry begins one key/value entry of an ArrayMap reply.
func (w Writer) Entry() {
	if !w.resp3 {
		w.Array(2)
	}
}

// largeBulk is the size from which Bulk hands a value to the sink as it
// is, after its header, instead of rendering it into the scratch buffer
// first: one copy of a large value (a GET of a 100 KB string), not two.
const largeBulk = 4 << 10

var crlf = []byte("\r\n")

// Held holds replies rendered before the header that counts them can be
// written (XRANGE's entries, ZRANGE's members: the count is known once
// the store's iterator ends). Hold returns one from a pool, Release gives
// it back. Growing such a buffer from nothing for each XRANGE COUNT 100
// was a sixth of its CPU.
type Held struct{ b, scratch []byte }

// heldKept is the largest Held buffer the pool keeps.
const heldKept = 64 << 10

var heldPool = sync.Pool{New: func() any { return &Held{b: make([]byte, 0, 4096)} }}

// Hold returns an empty Held and a Writer of w's protocol rendering into
// it.
func Hold(w Writer) (*Held, Writer) {
	h := heldPool.Get().(*Held)
	return h, Writer{sink: h, buf: &h.scratch, resp3: w.resp3}
}

// WriteRaw is Sink's: h keeps a copy of b.
func (h *Held) WriteRaw(b []byte) { h.b = append(h.b, b...) }

// WriteTo writes what h holds to w, as it is: w must render the protocol
// of the Writer h was held for (Hold).
func (h *Held) WriteTo(w Writer) { w.sink.WriteRaw(h.b) }

// Release gives h back to the pool (unless it grew past heldKept); h and
// its Writer must not be used after.
func (h *Held) Release() {
	if cap(h.b) <= heldKept {
		h.b = h.b[:0]
		heldPool.Put(h)
	}
}

// BulkShared is Bulk for s that never changes (a string value the
// metadata cache shares): a RefSink keeps a large s as it is, without a
// copy; other sinks copy it as Bulk does.
func (w Writer) BulkShared(s []byte) {
	rs, ok := w.sink.(RefSink)
	if !ok || len(s) < largeBulk {
		w.Bulk(s)
		return
	}
	w.put(func(b []byte) []byte { return appendHeader(b, '$', len(s)) })
	rs.WriteRef(s)
	w.sink.WriteRaw(crlf)
}

// BulkFill writes a bulk string of n bytes that fill writes into dst (of
// n bytes): straight into a Reserver's buffer, else through the scratch
// buffer. When fill fails nothing of the reply stays and its error is
// returned.
func (w Writer) BulkFill(n int, fill func(dst []byte) error) error {
	rs, ok := w.sink.(Reserver)
	if !ok {
		b := appendHeader((*w.buf)[:0], '$', n)
		at := len(b)
		b = slices.Grow(b, n+2)[:at+n]
		*w.buf = b
		if err := fill(b[at:]); err != nil {
			return err
		}
		w.sink.WriteRaw(append(b, '\r', '\n'))
		return nil
	}
	var hb [24]byte
	h := appendHeader(hb[:0], '$', n)
	b := rs.Reserve(len(h) + n + 2)
	copy(b, h)
	if err := fill(b[len(h) : len(h)+n]); err != nil {
		rs.Unreserve(len(b))
		return err
	}
	copy(b[len(h)+n:], crlf)
	return nil
}

// Bulk writes a bulk string.
func (w Writer) Bulk(s []byte) {
	if len(s) >= largeBulk {
		w.put(func(b []byte) []byte { return appendHeader(b, '$', len(s)) })
		w.sink.WriteRaw(s)
		w.sink.WriteRaw(crlf)
		return
	}
	w.put(func(b []byte) []byte {
		b = appendHeader(b, '$', len(s))
		b = append(b, s...)
		return append(b, '\r', '\n')
	})
}

// BulkString writes a bulk string.
func (w Writer) BulkString(s string) {
	w.put(func(b []byte) []byte {
		b = appendHeader(b, '$', len(s))
		b = append(b, s...)
		return append(b, '\r', '\n')
	})
}

// Simple writes a simple string ("+OK"). s must not hold CR or LF.
func (w Writer) Simple(s string) {
	w.put(func(b []byte) []byte {
		b = append(b, '+')
		b = append(b, s...)
		return append(b, '\r', '\n')
	})
}

// OK writes the simple string OK.
func (w Writer) OK() { w.Simple("OK") }

// Int writes an integer.
func (w Writer) Int(n int64) {
	w.put(func(b []byte) []byte {
		b = append(b, ':')
		b = strconv.AppendInt(b, n, 10)
		return append(b, '\r', '\n')
	})
}

// Uint writes an unsigned integer (a counter kept as uint64: XPENDING's
// delivery counts, XINFO's lengths).
func (w Writer) Uint(n uint64) {
	w.put(func(b []byte) []byte {
		b = append(b, ':')
		b = strconv.AppendUint(b, n, 10)
		return append(b, '\r', '\n')
	})
}

// IntBool writes v as the integer 1 or 0 in both protocols: the reply of
// SETNX, EXPIRE, SISMEMBER, HEXISTS and the other yes/no commands, which
// Redis 7.0 sends as integers even in RESP3.
func (w Writer) IntBool(v bool) {
	if v {
		w.Int(1)
	} else {
		w.Int(0)
	}
}

// Bool writes a boolean (RESP2: the integer 1 or 0). Redis 7.0's commands
// reply integers where RESP3 could have a boolean: use IntBool for them.
func (w Writer) Bool(v bool) {
	if w.resp3 {
		w.put(func(b []byte) []byte {
			if v {
				return append(b, "#t\r\n"...)
			}
			return append(b, "#f\r\n"...)
		})
		return
	}
	if v {
		w.Int(1)
	} else {
		w.Int(0)
	}
}

// Double writes a double (RESP2: a bulk string in Redis's %.17g form, with
// inf and -inf spelled so; Redis never replies NaN).
func (w Writer) Double(f float64) {
	if w.resp3 {
		w.put(func(b []byte) []byte {
			b = append(b, ',')
			b = AppendDouble(b, f)
			return append(b, '\r', '\n')
		})
		return
	}
	var buf [32]byte
	w.Bulk(AppendDouble(buf[:0], f))
}

// AppendDouble appends f as Redis 7.0 prints a double reply or a stored
// score (addReplyDouble, "%.17g"): "inf", "-inf", integers without a
// fraction, otherwise 17 significant digits.
func AppendDouble(b []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(b, "inf"...)
	case math.IsInf(f, -1):
		return append(b, "-inf"...)
	}
	return strconv.AppendFloat(b, f, 'g', 17, 64)
}

// NullBulk writes the null bulk string ($-1, Redis's usual nil; RESP3: _).
func (w Writer) NullBulk() {
	if w.resp3 {
		w.put(func(b []byte) []byte { return append(b, "_\r\n"...) })
		return
	}
	w.put(func(b []byte) []byte { return append(b, "$-1\r\n"...) })
}

// NullArray writes the null array (*-1), the nil of some commands (XREAD's
// timeout, EXEC aborted by WATCH; RESP3: _).
func (w Writer) NullArray() {
	if w.resp3 {
		w.put(func(b []byte) []byte { return append(b, "_\r\n"...) })
		return
	}
	w.put(func(b []byte) []byte { return append(b, "*-1\r\n"...) })
}

// Error writes an error reply; msg is the text after '-' ("ERR ...",
// "WRONGTYPE ..."). CR and LF in msg become spaces, as Redis does.
func (w Writer) Error(msg string) {
	w.put(func(b []byte) []byte {
		b = append(b, '-')
		for i := 0; i < len(msg); i++ {
			c := msg[i]
			if c == '\r' || c == '\n' {
				c = ' '
			}
			b = append(b, c)
		}
		return append(b, '\r', '\n')
	})
}

// Verbatim writes a verbatim string of format f, three bytes ("txt",
// "mkd"; RESP2: a bulk string of s alone).
func (w Writer) Verbatim(f string, s []byte) {
	if !w.resp3 {
		w.Bulk(s)
		return
	}
	w.put(func(b []byte) []byte {
		b = appendHeader(b, '=', len(f)+1+len(s))
		b = append(b, f...)
		b = append(b, ':')
		b = append(b, s...)
		return append(b, '\r', '\n')
	})
}

// BigNumber writes a big number given in decimal (RESP2: a bulk string).
func (w Writer) BigNumber(s string) {
	if !w.resp3 {
		w.BulkString(s)
		return
	}
	w.put(func(b []byte) []byte {
		b = append(b, '(')
		b = append(b, s...)
		return append(b, '\r', '\n')
	})
}
