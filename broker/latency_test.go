package broker

import (
	"context"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The LATENCY command and the latency CONFIG parameters, compared with
// redis-server (the monitor off, as both start): replies, texts and errors.
func init() {
	conformanceCases = append(conformanceCases, confCase{name: "latency", steps: []confStep{
		cc("LATENCY", "HELP"),
		cc("LATENCY", "LATEST"),
		cc("LATENCY", "HISTORY", "command"),
		cc("LATENCY", "RESET"),
		cc("LATENCY", "RESET", "command", "nosuch"),
		cc("LATENCY", "DOCTOR"),
		cc("LATENCY", "GRAPH", "command"),
		cc("LATENCY", "FOO"),
		cc("LATENCY"),
		cc("LATENCY", "HISTORY"),
		cc("LATENCY", "GRAPH"),
		cc("LATENCY", "LATEST", "x"),
		cc("LATENCY", "HISTOGRAM", "nosuch"),
		{args: []string{"CONFIG", "GET", "latency*"}, sorted: true},
		cc("CONFIG", "SET", "latency-monitor-threshold", "-1"),
		cc("CONFIG", "SET", "latency-monitor-threshold", "abc"),
		cc("CONFIG", "SET", "latency-tracking", "maybe"),
		cc("CONFIG", "SET", "latency-tracking-info-percentiles", "101"),
		cc("CONFIG", "SET", "latency-tracking-info-percentiles", "99.9 50 50"),
		cc("CONFIG", "GET", "latency-tracking-info-percentiles"),
		cc("CONFIG", "SET", "latency-tracking-info-percentiles", ""),
		cc("CONFIG", "GET", "latency-tracking-info-percentiles"),
		cc("CONFIG", "SET", "latency-monitor-threshold", "1000000"),
		cc("LATENCY", "DOCTOR"),
		cc("CONFIG", "SET", "latency-monitor-threshold", "0"),
		cc("CONFIG", "RESETSTAT"),
		cc("SET", "k", "v"),
		cc("SET", "k", "v"),
		// The buckets depend on each server's timing: the shape is compared.
		{args: []string{"LATENCY", "HISTOGRAM", "set"}, skip: true},
		cc("CONFIG", "SET", "latency-tracking-info-percentiles", "50 99 99.9"),
	}}, confCase{name: "memory", steps: []confStep{
		cc("MEMORY", "HELP"),
		cc("MEMORY", "USAGE", "nosuch"),
		cc("SET", "a", "b"),
		cc("MEMORY", "USAGE", "a", "SAMPLES", "x"),
		cc("MEMORY", "USAGE", "a", "foo"),
		cc("MEMORY", "USAGE", "a", "SAMPLES", "-1"),
		cc("MEMORY", "USAGE", "a", "SAMPLES"),
		cc("MEMORY", "USAGE", "a", "SAMPLES", "5", "x"),
		cc("MEMORY", "USAGE"),
		cc("MEMORY", "FOO"),
		cc("MEMORY", "PURGE"),
		cc("MEMORY", "DOCTOR", "x"),
		// Sizes, texts and figures are Sediment's own: their types are compared.
		{args: []string{"MEMORY", "USAGE", "a"}, skip: true},
		{args: []string{"MEMORY", "DOCTOR"}, skip: true},
		{args: []string{"MEMORY", "MALLOC-STATS"}, skip: true},
	}}, confCase{name: "client no-evict", steps: []confStep{
		cc("CLIENT", "NO-EVICT", "maybe"),
		cc("CLIENT", "NO-EVICT"),
		cc("CLIENT", "NO-EVICT", "on", "x"),
		cc("CLIENT", "NO-EVICT", "ON"),
		cc("CLIENT", "NO-EVICT", "off"),
	}}, confCase{name: "config help rewrite", steps: []confStep{
		cc("CONFIG", "HELP"),
		cc("CONFIG", "HELP", "x"),
		cc("CONFIG", "REWRITE"),
		cc("CONFIG", "REWRITE", "x"),
		cc("CONFIG", "FOO"),
		cc("config", "help"),
	}})
}

func TestLatencyBuckets(t *testing.T) {
	if latBucket(0) != 0 || latBucket(1023) != 0 || latBucket(1024) != 1 || latBucket(1<<30) != latBuckets-1 || latBucket(1<<62) != latBuckets-1 {
		t.Fatalf("edges: %d %d %d %d", latBucket(0), latBucket(1023), latBucket(1024), latBucket(1<<30))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		ns := r.Uint64N(1 << 31)
		b := latBucket(ns)
		if b > 0 && float64(ns) < latUpper(b-1) || float64(ns) >= latUpper(b) {
			t.Fatalf("%d ns in bucket %d [%v, %v)", ns, b, latUpper(b-1), latUpper(b))
		}
		if b > 0 && b < latBuckets-1 && latUpper(b)-latUpper(b-1) > latUpper(b-1)/8+1 {
			t.Fatalf("bucket %d wider than 1/8 of its start: [%v, %v)", b, latUpper(b-1), latUpper(b))
		}
	}
	// Percentiles: 90 calls of 2 µs and 10 of 100 µs.
	var counts [latBuckets]uint64
	counts[latBucket(2000)] = 90
	counts[latBucket(100000)] = 10
	p50, p99 := percentileUs(counts, 100, 50), percentileUs(counts, 100, 99)
	if p50 < 2 || p50 > 2*1.125 || p99 < 100 || p99 > 100*1.125 {
		t.Fatalf("p50 %v, p99 %v", p50, p99)
	}
	if p := percentileUs(counts, 100, 0); p != p50 {
		t.Fatalf("p0 %v, want the first bucket's %v", p, p50)
	}
}

// TestLatencyHistogramAndStats checks LATENCY HISTOGRAM's shape, INFO
// latencystats, CONFIG RESETSTAT and latency-tracking no, and the latency
// monitor's samples (LATEST, HISTORY, DOCTOR, GRAPH, RESET).
func TestLatencyHistogramAndStats(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	ctx := context.Background()
	mustDo(t, c, "CONFIG", "RESETSTAT")
	for range 50 {
		mustDo(t, c, "SET", "k", "v")
	}
	mustDo(t, c, "CLIENT", "ID")
	h := mustDo(t, c, "LATENCY", "HISTOGRAM", "set", "client", "nosuch").([]any)
	if len(h) != 4 || h[0] != "set" || h[2] != "client|id" {
		t.Fatalf("LATENCY HISTOGRAM set client: %v", h)
	}
	// A subcommand by its full name; one never called has no histogram.
	if h := mustDo(t, c, "LATENCY", "HISTOGRAM", "client|id", "client|kill").([]any); len(h) != 2 || h[0] != "client|id" {
		t.Fatalf("LATENCY HISTOGRAM client|id client|kill: %v", h)
	}
	set := h[1].([]any)
	if set[0] != "calls" || set[1] != int64(50) || set[2] != "histogram_usec" {
		t.Fatalf("set's histogram: %v", set)
	}
	buckets := set[3].([]any)
	prevKey, prevCum := int64(0), int64(0)
	for i := 0; i < len(buckets); i += 2 {
		k, n := buckets[i].(int64), buckets[i+1].(int64)
		if k <= prevKey || n <= prevCum || !regexp.MustCompile(`^(1|2|4|8|16|33|66|131|262|524|1049|2097|4194|8389|16777|33554|67109|134218|268435|536871|1073742)$`).MatchString(strconv.FormatInt(k, 10)) {
			t.Fatalf("bucket %d: %d after %d: %d", k, n, prevKey, prevCum)
		}
		prevKey, prevCum = k, n
	}
	if prevCum != 50 {
		t.Fatalf("the last cumulative count is %d, want 50", prevCum)
	}

	info := c.Info(ctx, "latencystats").Val()
	line := regexp.MustCompile(`(?m)^latency_percentiles_usec_set:p50=([0-9.]+),p99=([0-9.]+),p99\.9=([0-9.]+)\r$`).FindStringSubmatch(info)
	if line == nil {
		t.Fatalf("INFO latencystats:\n%s", info)
	}
	p50, _ := strconv.ParseFloat(line[1], 64)
	p999, _ := strconv.ParseFloat(line[3], 64)
	if p50 <= 0 || p999 < p50 {
		t.Fatalf("p50 %v, p99.9 %v", p50, p999)
	}
	if !strings.Contains(info, "latency_percentiles_usec_client|id:") {
		t.Fatalf("no client|id line:\n%s", info)
	}
	if strings.Contains(c.Info(ctx).Val(), "latency_percentiles") {
		t.Fatalf("latencystats in the default INFO")
	}
	// Off: nothing recorded, nothing shown.
	mustDo(t, c, "CONFIG", "SET", "latency-tracking", "no")
	mustDo(t, c, "SET", "k", "v")
	if strings.Contains(c.Info(ctx, "latencystats").Val(), "latency_percentiles") {
		t.Fatalf("latencystats with latency-tracking no")
	}
	mustDo(t, c, "CONFIG", "SET", "latency-tracking", "yes")
	if h := mustDo(t, c, "LATENCY", "HISTOGRAM", "set").([]any); h[1].([]any)[1] != int64(50) {
		t.Fatalf("a call was recorded with latency-tracking no: %v", h)
	}
	mustDo(t, c, "CONFIG", "RESETSTAT")
	if h := mustDo(t, c, "LATENCY", "HISTOGRAM", "set").([]any); len(h) != 0 {
		t.Fatalf("after RESETSTAT: %v", h)
	}

	// The monitor: samples of commands at or above the threshold.
	mustDo(t, c, "CONFIG", "SET", "latency-monitor-threshold", "5")
	get, keys := lookup([]byte("get")), lookup([]byte("keys")) // fast, not fast
	ts.ran(get, nil, 4*time.Millisecond, false, false)         // below
	ts.ran(get, nil, 7*time.Millisecond, false, false)
	ts.ran(get, nil, 6*time.Millisecond, false, false) // the same second: the larger stays
	ts.ran(keys, nil, 9*time.Millisecond, false, false)
	latest := mustDo(t, c, "LATENCY", "LATEST").([]any)
	if len(latest) != 2 {
		t.Fatalf("LATEST: %v", latest)
	}
	cmd, fast := latest[0].([]any), latest[1].([]any)
	if cmd[0] != "command" || cmd[2] != int64(9) || cmd[3] != int64(9) || fast[0] != "fast-command" || fast[2] != int64(7) || fast[3] != int64(7) {
		t.Fatalf("LATEST: %v", latest)
	}
	if hist := mustDo(t, c, "LATENCY", "HISTORY", "fast-command").([]any); len(hist) != 1 || hist[0].([]any)[1] != int64(7) {
		t.Fatalf("HISTORY fast-command: %v", hist)
	}
	if d := mustDo(t, c, "LATENCY", "DOCTOR").(string); !strings.Contains(d, "fast-command: 1 latency spikes (average 7ms). Worst all time event 7ms.") {
		t.Fatalf("DOCTOR: %q", d)
	}
	if g := mustDo(t, c, "LATENCY", "GRAPH", "command").(string); !strings.HasPrefix(g, "command - high 9 ms, low 9 ms (all time high 9 ms)\n") {
		t.Fatalf("GRAPH: %q", g)
	}
	if n := mustDo(t, c, "LATENCY", "RESET", "command", "nosuch"); n != int64(1) {
		t.Fatalf("RESET command nosuch: %v", n)
	}
	if n := mustDo(t, c, "LATENCY", "RESET"); n != int64(1) {
		t.Fatalf("RESET: %v", n)
	}
	mustDo(t, c, "CONFIG", "SET", "latency-monitor-threshold", "0")
}

// BenchmarkLatencyRecord is what every command pays for its latency
// histogram (latency-tracking yes), from all cores at once on one command.
func BenchmarkLatencyRecord(b *testing.B) {
	s := &Server{}
	s.cmdstats.tracking.Store(true)
	st := new(cmdStat)
	b.RunParallel(func(pb *testing.PB) {
		d := time.Duration(1500)
		for pb.Next() {
			s.recordLatency(st, d, false)
			d += 7
		}
	})
}
