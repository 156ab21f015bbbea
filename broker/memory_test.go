package broker

import (
	"fmt"
	"net"
	osexec "os/exec"
	"strings"
	"testing"
)

// TestMemoryUsage: MEMORY USAGE grows with what a key stores, samples a
// collection's first elements (SAMPLES 0: all), and MEMORY STATS reports
// the figures INFO memory does.
func TestMemoryUsage(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	usage := func(args ...any) int64 {
		t.Helper()
		return mustDo(t, c, append([]any{"MEMORY", "USAGE"}, args...)...).(int64)
	}
	mustDo(t, c, "SET", "small", "x")
	mustDo(t, c, "SET", "big", strings.Repeat("x", 10000))
	if s, b := usage("small"), usage("big"); s <= 1 || b < 10000 {
		t.Fatalf("small %d, big %d", s, b)
	}
	for i := 0; i < 1000; i++ {
		mustDo(t, c, "HSET", "h", fmt.Sprintf("field:%03d", i), "value")
		mustDo(t, c, "ZADD", "z", i, fmt.Sprintf("member:%d", i))
		mustDo(t, c, "XADD", "s", "*", "f", "v")
	}
	// Fields of one size: the sample's estimate is the exact count.
	h5, hAll := usage("h"), usage("h", "SAMPLES", 0)
	if h5 != hAll || hAll < int64(1000*len("field:000value")) {
		t.Fatalf("hash: samples 5 %d, all %d", h5, hAll)
	}
	if z := usage("z", "SAMPLES", 0); z < int64(2*1000*len("member:0")) {
		t.Fatalf("zset %d: members and their score index", z)
	}
	if s := usage("s"); s < 1000*16 {
		t.Fatalf("stream %d: below its entries' IDs alone", s)
	}
	if v := mustDo(t, c, "MEMORY", "USAGE", "nosuch"); v != nil {
		t.Fatalf("missing key: %v", v)
	}
	stats := mustDo(t, c, "MEMORY", "STATS").([]any)
	m := map[string]any{}
	for i := 0; i+1 < len(stats); i += 2 {
		m[stats[i].(string)] = stats[i+1]
	}
	if m["keys.count"] != int64(5) || m["total.allocated"].(int64) <= 0 || m["peak.allocated"].(int64) < m["total.allocated"].(int64) {
		t.Fatalf("MEMORY STATS: %v", m)
	}
}

// TestRedisCliScans runs the operator tools that scan the keyspace and
// size its keys: redis-cli --bigkeys (TYPE, and STRLEN, HLEN, XLEN ...)
// and --memkeys (MEMORY USAGE), as an operator would.
func TestRedisCliScans(t *testing.T) {
	cli, err := osexec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli not installed (.ci/run installs redis-tools)")
	}
	ts := newTestServer(t)
	c := ts.client(t)
	mustDo(t, c, "SET", "small", "x")
	mustDo(t, c, "SET", "large", strings.Repeat("x", 5000))
	mustDo(t, c, "HSET", "h", "a", "1", "b", "2")
	mustDo(t, c, "XADD", "s", "*", "f", "v")
	host, port, _ := net.SplitHostPort(ts.addr)
	for _, mode := range []string{"--bigkeys", "--memkeys"} {
		out, err := osexec.Command(cli, "-h", host, "-p", port, mode).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli %s: %v\n%s", mode, err, out)
		}
		for _, want := range []string{`Biggest string found '"large"'`, `Biggest   hash found '"h"'`, `Biggest stream found '"s"'`, "2 strings with"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("redis-cli %s lacks %q:\n%s", mode, want, out)
			}
		}
	}
}
