// Package reply renders command replies. A command builds its reply with
// protocol-neutral calls (Array, Map, Bulk, Int, Double, Null, ...) and the
// Writer renders them for the connection's protocol. Only RESP2 exists
// today, rendered exactly as Redis 7.0 renders each kind for a RESP2
// client: maps flatten to arrays of 2n elements, sets to arrays, doubles to
// bulk strings, booleans to integers; the null bulk string and the null
// array are separate calls because Redis chooses per command.
//
// https://redis.io/docs/latest/develop/reference/protocol-spec/
package reply

import (
	"math"
	"strconv"
)

// Sink takes the bytes a Writer renders: the connection's output buffer
// (redcon's Writer satisfies it) or an EXEC's reply buffer. WriteRaw
// appends b, which it must not retain.
type Sink interface {
	WriteRaw(b []byte)
}

// Writer renders replies into a Sink. The zero Writer is not usable; make
// one with New. Copies of a Writer share its scratch buffer: use them from
// one goroutine.
type Writer struct {
	sink Sink
	buf  *[]byte // scratch: each call renders here, then appends it to sink
}

// New returns a Writer rendering RESP2 into sink.
func New(sink Sink) Writer { return Writer{sink: sink, buf: new([]byte)} }

// NewScratch is New with the caller's scratch buffer, reused across
// Writers (a connection's commands run one at a time) so that a reply costs
// no allocation once the buffer has grown.
func NewScratch(sink Sink, scratch *[]byte) Writer { return Writer{sink: sink, buf: scratch} }

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
func (w Writer) Map(n int) { w.Array(2 * n) }

// Set starts a set of n members (RESP2: an array).
func (w Writer) Set(n int) { w.Array(n) }

// largeBulk is the size from which Bulk hands a value to the sink as it
// is, after its header, instead of rendering it into the scratch buffer
// first: one copy of a large value (a GET of a 100 KB string), not two.
const largeBulk = 4 << 10

var crlf = []byte("\r\n")

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

// Bool writes a boolean (RESP2: the integer 1 or 0).
func (w Writer) Bool(v bool) {
	if v {
		w.Int(1)
	} else {
		w.Int(0)
	}
}

// Double writes a double (RESP2: a bulk string in Redis's %.17g form, with
// inf and -inf spelled so; Redis never replies NaN).
func (w Writer) Double(f float64) {
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

// NullBulk writes the null bulk string ($-1, Redis's usual nil).
func (w Writer) NullBulk() { w.put(func(b []byte) []byte { return append(b, "$-1\r\n"...) }) }

// NullArray writes the null array (*-1), the nil of some commands (XREAD's
// timeout, EXEC aborted by WATCH).
func (w Writer) NullArray() { w.put(func(b []byte) []byte { return append(b, "*-1\r\n"...) }) }

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

// Verbatim writes a verbatim string of format f ("txt", "mkd"; RESP2: a
// bulk string).
func (w Writer) Verbatim(f string, s []byte) { w.Bulk(s) }

// BigNumber writes a big number given in decimal (RESP2: a bulk string).
func (w Writer) BigNumber(s string) { w.BulkString(s) }
