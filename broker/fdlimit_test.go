package broker

import (
	"strings"
	"testing"
)

// TestFitMaxClients: maxclients is kept when the open-files limit leaves
// room for it and the reserved descriptors, reduced with Redis's warning
// when not, and refused when not one client fits.
func TestFitMaxClients(t *testing.T) {
	for _, tc := range []struct {
		max   int
		limit uint64
		want  int
		warn  bool
		err   bool
	}{
		{10000, 0, 10000, false, false},
		{10000, 1 << 20, 10000, false, false},
		{10000, 10160, 10000, false, false},
		{10000, 10159, 9999, true, false},
		{10000, 1024, 864, true, false},
		{10000, 161, 1, true, false},
		{10000, 160, 0, false, true},
	} {
		got, warning, err := fitMaxClients(tc.max, tc.limit)
		if (err != nil) != tc.err || (warning != "") != tc.warn || (err == nil && got != tc.want) {
			t.Errorf("fitMaxClients(%d, %d) = %d, %q, %v", tc.max, tc.limit, got, warning, err)
		}
		if tc.warn && !strings.Contains(warning, "maxclients has been reduced to") {
			t.Errorf("warning %q lacks Redis's words", warning)
		}
	}
}
