// Package num parses and formats numbers exactly as Redis does, for the
// command layer (arguments) and the type packages (stored values).
package num

import (
	"math"
	"strconv"
	"strings"
)

// ParseInt parses a signed 64-bit decimal the way Redis's string2ll does:
// an optional '-', then "0" or digits without a leading zero, no spaces,
// no '+', no overflow ("-0", "01", "+1", " 1" and "" are invalid).
func ParseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 { // len("-9223372036854775808") == 20
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := false
	if b[0] == '-' {
		neg = true
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	if b[0] < '1' || b[0] > '9' {
		return 0, false
	}
	v, ok := digits(b)
	if !ok {
		return 0, false
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return int64(-v), true // wraps correctly for v == 1<<63
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}

// ParseCursor parses a SCAN-family cursor as Redis 7.0 does (strtoul on
// the text up to its first NUL byte): an optional sign, digits, no
// overflow; an empty text is 0 and "-n" wraps to 2^64-n. ok is false for
// anything else (Redis's "ERR invalid cursor").
func ParseCursor(b []byte) (uint64, bool) {
	for i, c := range b {
		if c == 0 {
			b = b[:i]
			break
		}
	}
	if len(b) == 0 {
		return 0, true
	}
	neg := b[0] == '-'
	if b[0] == '+' || b[0] == '-' {
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, false
	}
	n, ok := digits(b)
	if !ok {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}

// digits parses b, all decimal digits, as a uint64; false on any other
// byte or on overflow.
func digits(b []byte) (uint64, bool) {
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (math.MaxUint64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// ParseDouble parses a double the way Redis 7.0's getDoubleFromObject does
// (strtod over the whole text): decimal or hexadecimal floats ("0x1p3",
// "0x10"), "inf"/"infinity" in any case with an optional sign; no leading
// or trailing space, no '_' (Go's digit separator, which strtod rejects),
// no NaN. A value that overflows to ±inf or underflows to zero is invalid,
// as strtod's ERANGE makes it for Redis; a subnormal result is valid.
func ParseDouble(b []byte) (float64, bool) {
	if len(b) == 0 || isCSpace(b[0]) || isCSpace(b[len(b)-1]) {
		return 0, false
	}
	s := string(b)
	body := strings.TrimLeft(s, "+-")
	if len(s)-len(body) > 1 || strings.ContainsRune(s, '_') {
		return 0, false
	}
	hex := len(body) > 1 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X')
	if hex && !strings.ContainsAny(body, "pP") {
		s += "p0" // strtod's hex form; Go wants the binary exponent
	}
	f, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil || math.IsNaN(f):
		return 0, false
	case f == 0 && nonZeroMantissa(body, hex):
		return 0, false // underflow: strtod's ERANGE with a zero result
	}
	return f, true
}

// nonZeroMantissa reports whether the mantissa of a float's text (without
// sign) has a non-zero digit.
func nonZeroMantissa(body string, hex bool) bool {
	if hex {
		body = body[2:]
	}
	for _, c := range body {
		switch {
		case c >= '1' && c <= '9', hex && (c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'):
			return true
		case c == '0' || c == '.':
		default:
			return false // the exponent
		}
	}
	return false
}

func isCSpace(c byte) bool { return c == ' ' || (c >= '\t' && c <= '\r') }

// ParseStrtod parses a double the way a bare strtod over the whole text
// does, as Redis 7.0's score ranges (zslParseRange) and its lexicographic
// callers read them: leading space is skipped, an empty text is 0, a value
// out of range is ±inf or 0; trailing bytes, a text of spaces only, and
// NaN are invalid.
func ParseStrtod(b []byte) (float64, bool) {
	if len(b) == 0 {
		return 0, true // no conversion: strtod's end pointer is the (empty) start
	}
	i := 0
	for i < len(b) && isCSpace(b[i]) {
		i++
	}
	if f, ok := ParseDouble(b[i:]); ok {
		return f, true
	}
	s := string(b[i:])
	if s == "" || strings.ContainsRune(s, '_') || isCSpace(s[len(s)-1]) {
		return 0, false
	}
	body := strings.TrimLeft(s, "+-")
	if len(s)-len(body) > 1 {
		return 0, false
	}
	if len(body) > 1 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X') && !strings.ContainsAny(body, "pP") {
		s += "p0"
	}
	f, err := strconv.ParseFloat(s, 64)
	if ne, ok := err.(*strconv.NumError); (err != nil && !(ok && ne.Err == strconv.ErrRange)) || math.IsNaN(f) {
		return 0, false
	}
	return f, true // out of range: ±inf, or 0 for an underflow
}
