// Package materialize is the only importer of Pebble. It owns the Store:
// opening and closing the database, the read View that domain packages
// (streams, groups) decide against, and Write, the single write path that
// applies change events and their change-log record in one atomic batch.
//
// Writes are serialized by one writer lock: a write's decide function reads
// the committed state, which includes every earlier write, and its events
// commit before the next write decides. Commits go to the WAL without an
// fsync; durability follows the SyncPolicy (Redis's appendfsync): Always
// callers call WaitDurable before replying, which coalesces concurrent
// callers into one fdatasync; EverySec syncs in the background once a
// second; No leaves syncing to Pebble and the OS.
//
// Reads never take the writer lock.
//
// materialize must not import broker, streams, groups or any RESP code.
package materialize
