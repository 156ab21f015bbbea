// Package broker is Sediment's RESP edge: it accepts connections, parses
// requests with a hardened reader (Reader, which enforces Redis's protocol
// limits before anything is allocated), dispatches them through the command
// table (table.go), runs each command's decision through materialize.Store,
// writes replies with redcon's Writer and wakes blocked readers through NATS.
//
// Connection model: one goroutine per connection reads a request, runs it
// and buffers its reply; when no further request is buffered (the end of a
// pipeline), it waits for durability if appendfsync is always and flushes
// all replies at once. A blocking command flushes earlier replies first and
// waits in that goroutine while a watcher polls the socket without consuming
// input, so a client that disconnects while blocked is noticed at once and
// consumes nothing.
//
// Wire error strings live only in errors.go. broker never touches Pebble
// keys: it calls the domain packages (streams, groups) and materialize.
package broker
