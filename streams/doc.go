// Package streams holds Redis stream semantics over a materialize.View:
// entry ID allocation, XADD, XRANGE/XREVRANGE, XREAD, XDEL and XTRIM
// decisions. Each write returns its result plus the change events that
// materialize applies; reads return Go values. Consumer groups live in
// package groups. streams never sees RESP and never imports Pebble.
//
// Source: https://redis.io/docs/latest/develop/data-types/streams/ and the
// command pages linked from each function.
package streams
