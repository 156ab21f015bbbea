package broker

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"
)

// The PEL benchmarks check the promise of docs/rfcs/20261123_pel_stats.md:
// the commands that report on a consumer group as a whole (the XPENDING
// summary, XINFO GROUPS, XINFO CONSUMERS) and the first page of the
// extended XPENDING cost O(consumers), not O(PEL), and do not step over
// the point tombstones that acknowledged entries leave behind until
// compaction drops them.

const (
	pelKey       = "pel"
	pelConsumers = 4    // consumers the PEL is spread over
	pelDepth     = 100  // commands per round trip while measuring
	pelKept      = 10   // entries left pending by the churn cases
	pelAddBatch  = 1000 // XADDs, and XACKs, per round trip while filling
)

// pelCommands are the measured commands, each one call on group g of pelKey.
var pelCommands = []struct {
	name string
	args []string
}{
	{"XPENDING", []string{"XPENDING", pelKey, "g"}},
	{"XINFO-GROUPS", []string{"XINFO", "GROUPS", pelKey}},
	{"XINFO-CONSUMERS", []string{"XINFO", "CONSUMERS", pelKey, "g"}},
	{"XPENDING-range10", []string{"XPENDING", pelKey, "g", "-", "+", "10"}},
}

// BenchmarkPELSummary measures each of pelCommands against a PEL of 1k,
// 100k and 1M pending entries over four consumers, and against a PEL of 10
// entries left after 1M deliveries of which all others were acknowledged:
// keep-first keeps IDs 1..10, so the acknowledged tombstones lie above the
// PEL (where the summary's reverse seek for the largest pending ID starts),
// and keep-last keeps the 10 largest IDs, so they lie below it (where a
// walk from the start of the PEL would begin).
//
// Each case is set up once, outside the timer, on its own server (Pebble on
// disk, as BenchmarkXReadGroupAck). ns/op is the server's cost per command
// with pelDepth commands per round trip, so that the loopback round trip
// does not hide a walk; isteps/op and points/op are Pebble's internal
// iterator steps and visited internal points per command
// (materialize.IterStats), which grow with what a read steps over rather
// than with the machine. A command that is flat has the same isteps/op at
// 1k as at 1M and in the churn cases. keep-first is the case the RFC lists
// as not flat yet: the summary's reverse seek steps over the acknowledged
// entries above the largest pending one until compaction drops them. The
// 1M cases are skipped under -short; setup times are logged (-v).
func BenchmarkPELSummary(b *testing.B) {
	for _, n := range []int{1_000, 100_000, 1_000_000} {
		b.Run("pending="+pelCount(n), func(b *testing.B) {
			if n >= 1_000_000 && testing.Short() {
				b.Skip("1M pending entries: skipped under -short")
			}
			ts := newTestServer(b)
			fillPEL(b, ts, n)
			checkPEL(b, ts, n, 1, n)
			benchPELCommands(b, ts)
		})
	}
	const churn = 1_000_000
	cases := []struct {
		name           string
		ackFrom, ackTo int // acknowledged IDs, inclusive
		wantLo, wantHi int // the smallest and largest pending IDs left
	}{
		{"keep-first", pelKept + 1, churn, 1, pelKept},
		{"keep-last", 1, churn - pelKept, churn - pelKept + 1, churn},
	}
	b.Run("acked="+pelCount(churn-pelKept), func(b *testing.B) {
		if testing.Short() {
			b.Skip("1M delivered entries: skipped under -short")
		}
		for _, c := range cases {
			b.Run(fmt.Sprintf("%s=%d", c.name, pelKept), func(b *testing.B) {
				ts := newTestServer(b)
				fillPEL(b, ts, churn)
				ackPEL(b, ts, c.ackFrom, c.ackTo)
				checkPEL(b, ts, pelKept, c.wantLo, c.wantHi)
				benchPELCommands(b, ts)
			})
		}
	})
}

// benchPELCommands runs one sub-benchmark per command of pelCommands on
// ts, as set up by the caller.
func benchPELCommands(b *testing.B, ts *testServer) {
	for _, cmd := range pelCommands {
		b.Run(cmd.name, func(b *testing.B) {
			c := dialBench(b, ts.addr)
			b.ReportAllocs()
			before := ts.store.IterStats()
			b.ResetTimer()
			for i := 0; i < b.N; {
				n := min(pelDepth, b.N-i)
				for range n {
					c.queue(cmd.args...)
				}
				c.flush(b, n)
				i += n
			}
			b.StopTimer()
			d := ts.store.IterStats().Sub(before)
			b.ReportMetric(float64(d.InternalSteps)/float64(b.N), "isteps/op")
			b.ReportMetric(float64(d.Points)/float64(b.N), "points/op")
		})
	}
}

// fillPEL adds n entries with IDs 1-1 .. n-1 to pelKey and delivers all of
// them to group g with XREADGROUP ... COUNT 10000 '>', one call per
// consumer c0..c3 in turn (smaller counts when n is small, so that every
// consumer gets a share). It logs how long adding and delivering took.
func fillPEL(b *testing.B, ts *testServer, n int) {
	b.Helper()
	c := dialBench(b, ts.addr)
	c.queue("XGROUP", "CREATE", pelKey, "g", "0", "MKSTREAM")
	c.flush(b, 1)
	start := time.Now()
	for i := 0; i < n; {
		m := min(pelAddBatch, n-i)
		for j := range m {
			c.queue("XADD", pelKey, strconv.Itoa(i+j+1)+"-1", "f", "v")
		}
		c.flush(b, m)
		i += m
	}
	added := time.Since(start)
	count := min(10_000, (n+pelConsumers-1)/pelConsumers)
	start = time.Now()
	for i, calls := 0, (n+count-1)/count; i < calls; i++ {
		c.queue("XREADGROUP", "GROUP", "g", "c"+strconv.Itoa(i%pelConsumers), "COUNT", strconv.Itoa(count), "STREAMS", pelKey, ">")
		c.flush(b, 1)
	}
	b.Logf("%s entries: XADD %v, XREADGROUP %v", pelCount(n), added.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

// ackPEL acknowledges the IDs from-1 .. to-1 with one XACK per ID,
// pelAddBatch per round trip, as consumers that acknowledge each entry
// when they are done with it. It logs how long that took.
func ackPEL(b *testing.B, ts *testServer, from, to int) {
	b.Helper()
	c := dialBench(b, ts.addr)
	start := time.Now()
	for i := from; i <= to; {
		m := min(pelAddBatch, to-i+1)
		for j := range m {
			c.queue("XACK", pelKey, "g", strconv.Itoa(i+j)+"-1")
		}
		c.flush(b, m)
		i += m
	}
	b.Logf("XACK of %s entries: %v", pelCount(to-from+1), time.Since(start).Round(time.Millisecond))
}

// checkPEL fails unless the XPENDING summary and XINFO GROUPS report count
// pending entries with IDs lo-1 .. hi-1 over all four consumers, so that a
// fast result is not a wrong one.
func checkPEL(b *testing.B, ts *testServer, count, lo, hi int) {
	b.Helper()
	ctx := context.Background()
	rc := ts.client(b)
	p, err := rc.XPending(ctx, pelKey, "g").Result()
	if err != nil {
		b.Fatalf("XPENDING: %v", err)
	}
	if p.Count != int64(count) || p.Lower != strconv.Itoa(lo)+"-1" || p.Higher != strconv.Itoa(hi)+"-1" {
		b.Fatalf("XPENDING summary %d %s %s, want %d %d-1 %d-1", p.Count, p.Lower, p.Higher, count, lo, hi)
	}
	var sum int64
	for _, n := range p.Consumers {
		sum += n
	}
	if sum != int64(count) {
		b.Fatalf("XPENDING consumers %v sum to %d, want %d", p.Consumers, sum, count)
	}
	gs, err := rc.XInfoGroups(ctx, pelKey).Result()
	if err != nil {
		b.Fatalf("XINFO GROUPS: %v", err)
	}
	if len(gs) != 1 || gs[0].Pending != int64(count) || gs[0].Consumers != pelConsumers {
		b.Fatalf("XINFO GROUPS %+v, want one group with %d pending over %d consumers", gs, count, pelConsumers)
	}
}

// pelCount names n in sub-benchmark names: 1k, 100k, 1M.
func pelCount(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return strconv.Itoa(n/1_000_000) + "M"
	case n >= 1_000 && n%1_000 == 0:
		return strconv.Itoa(n/1_000) + "k"
	}
	return strconv.Itoa(n)
}
