// Package lcs computes what Redis 7.0's LCS command replies: the longest
// common subsequence of two strings, its length, and (IDX mode) the ranges
// where the two strings match. It is a leaf package: standard library only,
// no RESP, no storage. The command layer looks the keys up, parses the
// options, calls Compute and renders the Result.
//
// Redis's answer is one particular common subsequence out of possibly many,
// chosen by how src/t_string.c (lcsCommand) walks its dynamic-programming
// table back; Compute builds the same table and walks it the same way, so
// LCS, Len and Matches agree with Redis byte for byte. The differential test
// (redis_test.go) checks that against a real redis-server.
//
// Cost, as in Redis: O(len(a) × len(b)) time, and one table of
// (len(a)+1) × (len(b)+1) uint32 values, 4 bytes each, allocated per call.
// Options.MaxTable bounds that table the way proto-max-bulk-len does in
// Redis; the default, 512 MiB, allows two strings of up to 11,584 bytes.
package lcs
