// Package groups holds consumer-group semantics over a materialize.View:
// XGROUP CREATE/SETID/DESTROY/CREATECONSUMER/DELCONSUMER, XREADGROUP
// delivery ('>' and history), XACK, XPENDING, XCLAIM and XAUTOCLAIM. State
// lives under the G (group), C (consumer), P (PEL by group) and Q (PEL by
// consumer) compound keys of codec, plus W (PEL by delivery time, for
// CLAIM and the NACK zone); entries not yet due (delayed delivery) that a
// '>' read passes are parked there, unowned. Every change is returned as
// change events for materialize to apply. groups never sees RESP or network I/O.
//
// Source: https://redis.io/docs/latest/develop/data-types/streams/#consumer-groups
package groups
