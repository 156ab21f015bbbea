package groups_test

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/sediment-dev/sediment/internal/testclock"
	"github.com/sediment-dev/sediment/materialize"
)

// BenchmarkDelayedHistory measures one cycle of the churn workload
// "delayed-park-claim-ack" (a delayed and an ordinary XADD to a capped
// stream, an XREADGROUP CLAIM 0 that parks the delayed entry, takes the
// ordinary one and claims the delayed ones come due, an XACK of all: four
// decisions) on a store on disk, after 10,000 cycles of history and after
// SEDIMENT_DELAY_HISTORY cycles (default 100,000; docs/perf.md used
// 1,000,000). Each cycle parks, claims and acknowledges one delayed entry,
// so the history is that many delayed entries that came due and were
// delivered; the cost per cycle must not grow with it. The setup runs
// pipelined outside the timer (and the compactions it started are let
// finish); the measured cycles run pipelined too (Submit, waited for every
// 512 cycles), as the churn test runs them. Besides time, it reports the
// Pebble seeks and internal steps per cycle and the LSM's read
// amplification: history walked would show in the steps.
func BenchmarkDelayedHistory(b *testing.B) {
	long := 100_000
	if v, err := strconv.Atoi(os.Getenv("SEDIMENT_DELAY_HISTORY")); err == nil && v > 0 {
		long = v
	}
	var w churnWorkload
	for _, x := range churnWorkloads() {
		if x.name == "delayed-park-claim-ack" {
			w = x
		}
	}
	for _, history := range []int{10_000, long} {
		b.Run("after-"+strconv.Itoa(history), func(b *testing.B) {
			s, c := openOnDisk(b)
			if _, err := s.Write(w.setup); err != nil {
				b.Fatal(err)
			}
			done := 0
			run := func(n int) {
				var pend []*materialize.Pending
				for i := range n {
					c.Advance(1)
					for _, d := range w.cycle(done + i) {
						pend = append(pend, s.Submit(d))
					}
					if len(pend) >= 4*512 || i == n-1 {
						for _, p := range pend {
							if _, err := p.Wait(); err != nil {
								b.Fatalf("cycle %d: %v", done+i, err)
							}
						}
						pend = pend[:0]
					}
				}
				done += n
			}
			run(history)
			// Let the compactions the history started finish, so that
			// the measured cycles do not share the CPUs with them.
			for prev, deadline := int64(-1), time.Now().Add(time.Minute); time.Now().Before(deadline); {
				n := s.StorageStats().Compactions
				if n == prev {
					break
				}
				prev = n
				time.Sleep(2 * time.Second)
			}
			readAmp := s.StorageStats().ReadAmp
			before := s.IterStats()
			b.ReportAllocs()
			b.ResetTimer()
			run(b.N)
			b.StopTimer()
			st := s.IterStats().Sub(before)
			b.ReportMetric(float64(st.Seeks)/float64(b.N), "seeks/cycle")
			b.ReportMetric(float64(st.InternalSteps)/float64(b.N), "internal-steps/cycle")
			b.ReportMetric(float64(readAmp), "read-amp")
		})
	}
}

// openOnDisk opens a store in a temporary directory with a test clock.
func openOnDisk(b *testing.B) (*materialize.Store, *testClock) {
	b.Helper()
	c := testclock.New(t0)
	s, err := materialize.Open(materialize.Options{Dir: b.TempDir(), Now: c.Now})
	if err != nil {
		b.Fatalf("Open: %v", err)
	}
	b.Cleanup(func() { s.Close() })
	return s, c
}
