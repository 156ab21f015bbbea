package rstring

import "testing"

// TestRange pins GETRANGE's index rules (t_string.c getrangeCommand).
func TestRange(t *testing.T) {
	s := []byte("Hello World")
	for _, tc := range []struct {
		start, end int64
		want       string
	}{
		{0, 4, "Hello"}, {-5, -1, "World"}, {-1, -5, ""}, {5, 3, ""},
		{-100, 100, "Hello World"}, {0, -100, "H"}, {100, 200, ""}, {3, 3, "l"},
		{-9223372036854775808, -1, "Hello World"}, {0, 9223372036854775807, "Hello World"},
	} {
		if got := string(Range(s, tc.start, tc.end)); got != tc.want {
			t.Errorf("Range(%d, %d) = %q, want %q", tc.start, tc.end, got, tc.want)
		}
	}
	if got := Range(nil, 0, -1); len(got) != 0 {
		t.Errorf("Range of an empty string = %q", got)
	}
}
