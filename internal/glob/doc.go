// Package glob is Redis's glob-style pattern matching, as used by KEYS and
// SCAN MATCH (and, in Redis, by SSCAN/HSCAN/ZSCAN MATCH, PSUBSCRIBE, CONFIG
// GET, CLIENT KILL and ACL key patterns). It is a leaf package: standard
// library only, so that the broker and the per-type domain packages can all
// use one matcher.
//
// Match has Redis 7.0's semantics (src/util.c stringmatchlen) byte for byte,
// but runs in O(len(pattern) × len(subject)) time and constant extra memory,
// whatever the pattern, where Redis's recursive matcher took exponential
// time on some patterns before 7.0.9 (CVE-2022-36021). See Match for the two
// places where the result differs from some Redis build.
package glob
