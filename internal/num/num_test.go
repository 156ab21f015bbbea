package num

import (
	"strconv"
	"testing"
)

// TestParseInt pins string2ll's rules.
func TestParseInt(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "-1": -1, "9223372036854775807": 9223372036854775807, "-9223372036854775808": -9223372036854775808} {
		if got, ok := ParseInt([]byte(in)); !ok || got != want {
			t.Errorf("ParseInt(%q) = %d, %v", in, got, ok)
		}
	}
	for _, in := range []string{"", "-", "-0", "01", "+1", " 1", "1 ", "9223372036854775808", "-9223372036854775809", "1x", "99999999999999999999"} {
		if got, ok := ParseInt([]byte(in)); ok {
			t.Errorf("ParseInt(%q) = %d, want invalid", in, got)
		}
	}
}

// TestParseCursor pins strtoul's rules as Redis's SCAN applies them.
func TestParseCursor(t *testing.T) {
	for in, want := range map[string]uint64{"": 0, "0": 0, "+7": 7, "-1": 18446744073709551615, "007": 7, "7\x00x": 7, "18446744073709551615": 18446744073709551615} {
		if got, ok := ParseCursor([]byte(in)); !ok || got != want {
			t.Errorf("ParseCursor(%q) = %d, %v, want %d", in, got, ok, want)
		}
	}
	for _, in := range []string{"+", "-", "x", " 1", "18446744073709551616", "1.5"} {
		if got, ok := ParseCursor([]byte(in)); ok {
			t.Errorf("ParseCursor(%q) = %d, want invalid", in, got)
		}
	}
	if n, _ := ParseCursor([]byte(strconv.FormatUint(1<<63, 10))); n != 1<<63 {
		t.Errorf("ParseCursor(2^63) = %d", n)
	}
}
