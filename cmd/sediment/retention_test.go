package main

import (
	"math"
	"testing"
	"time"
)

func TestParseRetention(t *testing.T) {
	for _, tc := range []struct {
		in    string
		count uint64
		age   time.Duration
		err   bool
	}{
		{"1048576", 1 << 20, 0, false},
		{"1000", 1000, 0, false},
		{"168h", 1 << 20, 168 * time.Hour, false},
		{"5000,24h", 5000, 24 * time.Hour, false},
		{"0,1h", math.MaxUint64, time.Hour, false},
		{"x", 0, 0, true},
		{"-5", 0, 0, true},
		{"1h,-1h", 0, 0, true},
	} {
		count, age, err := parseRetention(tc.in)
		if (err != nil) != tc.err || !tc.err && (count != tc.count || age != tc.age) {
			t.Errorf("parseRetention(%q) = %d, %v, %v", tc.in, count, age, err)
		}
	}
}
