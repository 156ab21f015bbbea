// Package testclock is a controllable clock for tests: a Clock's Now is the
// Options.Now of materialize (and broker) under test, moved by hand in Unix
// milliseconds. Safe for concurrent use.
package testclock

import (
	"sync"
	"time"
)

// Clock is a settable clock with millisecond resolution.
type Clock struct {
	mu sync.Mutex
	ms int64
}

// New returns a Clock reading ms (Unix milliseconds).
func New(ms int64) *Clock { return &Clock{ms: ms} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.UnixMilli(c.ms)
}

// Ms returns the clock's reading in Unix milliseconds.
func (c *Clock) Ms() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ms
}

// Set sets the clock to ms (Unix milliseconds); it may go backwards.
func (c *Clock) Set(ms int64) {
	c.mu.Lock()
	c.ms = ms
	c.mu.Unlock()
}

// Advance moves the clock by ms milliseconds.
func (c *Clock) Advance(ms int64) {
	c.mu.Lock()
	c.ms += ms
	c.mu.Unlock()
}
