// Package ratelog logs errors that repeat (on every write while a disk is
// full, in a library's retry loop) at a bounded rate.
package ratelog

import (
	"log/slog"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// Limited logs one line per interval at most, adding to it how many lines
// were suppressed since the one before ("suppressed" attribute). The zero
// value is not usable; make one with New. Safe for concurrent use.
type Limited struct {
	sometimes  rate.Sometimes
	suppressed atomic.Int64
}

// New returns a Limited that logs at most once per every.
func New(every time.Duration) *Limited {
	return &Limited{sometimes: rate.Sometimes{Interval: every}}
}

// Warn logs msg with args at level Warn on lg, unless a line was logged
// through l less than the interval ago.
func (l *Limited) Warn(lg *slog.Logger, msg string, args ...any) {
	ran := false
	l.sometimes.Do(func() {
		ran = true
		if n := l.suppressed.Swap(0); n > 0 {
			args = append(args, "suppressed", n)
		}
		lg.Warn(msg, args...)
	})
	if !ran {
		l.suppressed.Add(1)
	}
}
