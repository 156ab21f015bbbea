package command

import (
	"math/big"

	"github.com/sediment-dev/sediment/internal/ldouble"
	"github.com/sediment-dev/sediment/internal/num"
)

// ParseInt parses a signed 64-bit decimal the way Redis's string2ll does
// (num.ParseInt).
func ParseInt(b []byte) (int64, bool) { return num.ParseInt(b) }

// IntArg parses an integer argument, or returns ErrNotInteger.
func IntArg(b []byte) (int64, error) {
	n, ok := ParseInt(b)
	if !ok {
		return 0, ErrNotInteger
	}
	return n, nil
}

// EqualFold reports whether b equals the ASCII upper-case word s, ignoring
// case.
func EqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

// Lower returns b in ASCII lower case, as Redis prints command names in
// its errors.
func Lower(b []byte) string {
	out := []byte(string(b))
	for i, c := range out {
		if 'A' <= c && c <= 'Z' {
			out[i] = c + 'a' - 'A'
		}
	}
	return string(out)
}

// IncrFloat adds incr to the stored value cur (found: the value exists; a
// missing one is 0) with Redis's long double arithmetic and returns the
// new value's text (INCRBYFLOAT, HINCRBYFLOAT). notFloat is the error for
// a stored value that is not a number; a sum that overflows is
// ErrIncrNaN.
func IncrFloat(cur []byte, found bool, incr *big.Float, notFloat error) ([]byte, error) {
	val := new(big.Float)
	if found {
		var ok bool
		if val, ok = ldouble.Parse(cur); !ok {
			return nil, notFloat
		}
	}
	sum, inf := ldouble.Add(val, incr)
	if inf {
		return nil, ErrIncrNaN
	}
	return ldouble.Format(sum), nil
}
