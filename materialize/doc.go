// Package materialize is the only importer of Pebble. It owns the Store:
// opening and closing the database, the read View that domain packages
// (streams, groups) decide against, and Write, the single write path that
// applies change events and their change-log record in one atomic batch.
//
// Writes go through one writer goroutine: a write's decide function reads a
// View of an indexed batch over the committed state, so it sees every earlier
// write, including those earlier in its own commit group; the writes queued
// together commit in one Pebble batch (group commit). The group's
// change-log records are first written to the change-log files, the
// store's write-ahead log (Pebble's own WAL is off; changelog.go), without
// an fsync; durability follows the SyncPolicy (Redis's appendfsync):
// Always callers call WaitDurable before replying, which coalesces
// concurrent callers into one fsync; EverySec syncs in the background once
// a second; No syncs only before Pebble flushes. Open replays the records
// Pebble had not made durable.
//
// Reads never take the writer lock.
//
// materialize must not import broker, streams, groups or any RESP code.
package materialize
