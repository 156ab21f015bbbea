package main

import "testing"

func TestParse(t *testing.T) {
	req := "*2\r\n$3\r\nGET\r\n$5\r\nk:123\r\n"
	for _, tc := range []struct {
		in            string
		used, replies int
	}{
		{req, len(req), 1},
		{req + req + req[:7], 2 * len(req), 2},
		{req[:len(req)-1], 0, 0},
		{"", 0, 0},
	} {
		used, out := parse([]byte(tc.in), nil)
		if used != tc.used || len(out) != tc.replies*len(nullBulk) {
			t.Errorf("parse(%q) = %d bytes used, %q; want %d, %d replies", tc.in, used, out, tc.used, tc.replies)
		}
	}
}
