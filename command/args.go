package command

import "github.com/sediment-dev/sediment/internal/num"

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
