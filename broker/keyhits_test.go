package broker

import (
	"strings"
	"testing"
)

// TestKeyspaceHitsLikeRedis runs reads of existing and missing keys of
// each type on both servers and compares INFO's keyspace_hits and
// keyspace_misses after each command (Redis counts lookupKeyRead's
// results; writes' lookups count neither).
func TestKeyspaceHitsLikeRedis(t *testing.T) {
	redisAddr := confStartRedis(t)
	ts := newTestServer(t)
	rc, sc := confDial(t, redisAddr), confDial(t, ts.addr)
	counts := func(c *confConn) string {
		t.Helper()
		r, err := c.do("INFO", "stats")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, l := range strings.Split(r.str, "\r\n") {
			if strings.HasPrefix(l, "keyspace_") {
				out = append(out, l)
			}
		}
		return strings.Join(out, " ")
	}
	steps := [][]string{
		{"FLUSHALL"}, {"CONFIG", "RESETSTAT"},
		{"SET", "s", "v"}, {"HSET", "h", "f", "v"}, {"SADD", "set", "m"}, {"ZADD", "z", "1", "m"},
		{"RPUSH", "l", "a", "b"}, {"XADD", "x", "1-1", "f", "v"},
		{"GET", "s"}, {"GET", "nos"}, {"STRLEN", "s"}, {"GETRANGE", "s", "0", "1"},
		{"MGET", "s", "nos", "s"},
		{"HGET", "h", "f"}, {"HGET", "noh", "f"}, {"HGETALL", "h"}, {"HLEN", "noh"}, {"HEXISTS", "h", "g"},
		{"SMEMBERS", "set"}, {"SISMEMBER", "noset", "m"}, {"SCARD", "set"},
		{"ZSCORE", "z", "m"}, {"ZRANGE", "z", "0", "-1"}, {"ZCARD", "noz"},
		{"LRANGE", "l", "0", "-1"}, {"LLEN", "nol"}, {"LINDEX", "l", "0"},
		{"XRANGE", "x", "-", "+"}, {"XLEN", "nox"}, {"XREAD", "STREAMS", "x", "0"},
		{"EXISTS", "s", "nos"}, {"TYPE", "s"}, {"TYPE", "nos"}, {"TTL", "s"}, {"PTTL", "nos"},
		{"GET", "h"}, // wrong type: a hit, then the error
		{"INCR", "n"}, {"DEL", "s"}, {"GET", "s"},
	}
	for _, step := range steps {
		rw, _ := rc.do(step...)
		sw, _ := sc.do(step...)
		if rw.kind != sw.kind {
			t.Fatalf("%v: redis %v, sediment %v", step, rw, sw)
		}
		if want, got := counts(rc), counts(sc); want != got {
			t.Errorf("after %v: redis %s, sediment %s", step, want, got)
		}
	}
}
