// Package num parses and formats numbers exactly as Redis does, for the
// command layer (arguments) and the type packages (stored values).
package num

import "math"

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
