package ratelog

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestLimited: the first line is logged, the next ones within the interval
// are not, and the line after the interval tells how many were dropped.
func TestLimited(t *testing.T) {
	var buf bytes.Buffer
	lg := slog.New(slog.NewTextHandler(&buf, nil))
	l := New(50 * time.Millisecond)
	for range 5 {
		l.Warn(lg, "disk full", "n", 1)
	}
	if got := strings.Count(buf.String(), "disk full"); got != 1 {
		t.Fatalf("%d lines within the interval, want 1:\n%s", got, buf.String())
	}
	time.Sleep(60 * time.Millisecond)
	l.Warn(lg, "disk full", "n", 2)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[1], "suppressed=4") {
		t.Fatalf("after the interval: %q, want a second line with suppressed=4", lines)
	}
}
