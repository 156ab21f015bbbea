// Package codec owns every byte layout Sediment writes to Pebble: compound
// keys, metadata values, stream IDs, consumer-group and PEL records, change
// events and change-log records. It is pure: no I/O, standard library only.
//
// Every user-key compound key has the shape
//
//	+-----+----------+----+------------+---------+--------+
//	| tag | slot (2) | db | keylen (4) | key ... | suffix |
//	+-----+----------+----+------------+---------+--------+
//
// where tag is one readable byte ('T' metadata, 'X' stream entry, 'N'
// stream node, 'G' group, 'C' consumer, 'P' PEL by group, 'Q' PEL by
// consumer, and the others of docs/key-format.md), slot is the Redis
// Cluster hash slot of the user key (CRC16-XMODEM mod 16384, honouring
// {hash tags}) in big-endian, db is the SELECT index and keylen is the
// big-endian uint32 length of the user key. The length prefix makes keys
// binary-safe: any byte, '\0' included, may appear in a key, group or
// consumer name. All sub-keys of one user key and tag share one prefix, so a
// bounded iterator scans them and one range deletion drops them.
//
// The TTL index ('E') and the change log ('L') are the two indexes ordered by
// something other than the user key: E by slot then deadline, L by sequence.
//
// Decoders never panic: malformed input yields an error for which
// errors.Is(err, ErrCorrupt) holds. docs/key-format.md is the full
// byte-by-byte specification; a change to any layout is an RFC in docs/rfcs.
package codec
