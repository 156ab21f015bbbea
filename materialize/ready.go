package materialize

import "github.com/sediment-dev/sediment/codec"

// Served is the write a ReadyFunc decided for one blocked client: its
// events (nil when nothing is recorded, e.g. the client is told an error)
// and Done, which the writer calls once the commit group holding the write
// is durable in Pebble's memtable: with the write's sequence number (0 when
// Events is nil) and nil, or with 0 and the commit's error.
type Served struct {
	Events []codec.Event
	Done   func(seq uint64, err error)
}

// ReadyFunc serves blocked clients right after a write that may have made
// their keys ready, before any later write is decided (Redis's serving
// order for consuming commands, docs/architecture.md "Blocking"). The writer
// goroutine calls it after each write's events are staged, with a view that
// sees them. For each client it serves, it calls record, which stages the
// Served write at once as its own change-log record (when it has events) in
// the same commit group, so the next client's decision sees it.
//
// It runs on the writer goroutine: it must not call Write, Submit or Wait,
// and must not block. Locks it takes are ordered after the writer (no code
// may call into the write path while holding them).
type ReadyFunc func(v *View, events []codec.Event, record func(Served))

// SetReady installs fn (nil removes it). Set it before the first write that
// may need it; safe for concurrent use.
func (s *Store) SetReady(fn ReadyFunc) {
	if fn == nil {
		s.ready.Store(nil)
		return
	}
	s.ready.Store(&fn)
}
