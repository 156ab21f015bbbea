package command

import (
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

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

// TimeoutArg parses a blocking command's timeout in seconds, a float
// (BLPOP ... timeout, and every blocking pop), as Redis's getTimeoutFromObjectOrReply does: the
// milliseconds are truncated toward zero (so 0.0001 waits forever, like
// 0), a negative count (or one that does not fit an int64, whose x87
// conversion Redis sees as negative) is ErrTimeoutNegative, text that is
// not a float ErrTimeoutNotFloat. 0 means no timeout.
func TimeoutArg(b []byte, nowMs int64) (time.Duration, error) {
	if len(b) == 0 || b[0] == ' ' || (b[0] >= '\t' && b[0] <= '\r') {
		return 0, ErrTimeoutNotFloat
	}
	s := string(b)
	if t := strings.TrimLeft(s, "+-"); len(t) > 1 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X') && !strings.ContainsAny(t, "pP") {
		s += "p0" // strtold's hex form; Go wants the binary exponent
	}
	f, err := strconv.ParseFloat(s, 64)
	if (err != nil && !isRangeErr(err)) || math.IsNaN(f) {
		return 0, ErrTimeoutNotFloat
	}
	ms := f * 1000
	if !(ms > -(1<<63) && ms < 1<<63) {
		return 0, ErrTimeoutNegative
	}
	t := int64(ms)
	switch {
	case t < 0:
		return 0, ErrTimeoutNegative
	case t > math.MaxInt64-nowMs:
		return 0, ErrTimeoutRange
	}
	return time.Duration(t) * time.Millisecond, nil
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}
