// Package broker is Sediment's RESP edge: it accepts connections, parses
// requests with a hardened reader (Reader, which enforces Redis's protocol
// limits before anything is allocated), dispatches them through the command
// table (table.go), runs each command's decision through materialize.Store,
// writes replies with redcon's Writer and wakes blocked readers through NATS.
//
// Connection model: each connection has a reader goroutine, which parses
// every request already buffered into one batch (a pipeline), and an
// executor goroutine, which runs the batch, waits for durability when
// appendfsync is always, and flushes all its replies at once. A blocking
// command flushes earlier replies first and waits in the executor; the
// reader keeps reading, so a client that disconnects while blocked is
// noticed at once and consumes nothing.
//
// Wire error strings live only in errors.go. broker never touches Pebble
// keys: it calls the domain packages (streams, groups) and materialize.
package broker
