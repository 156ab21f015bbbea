package broker

import "testing"

// BenchmarkDelayXAdd measures XADD with and without DELAY through the
// whole server (RESP, writer, Pebble on disk, everysec) in pipelines of
// 100, MAXLEN ~ 1000 as BenchmarkCommands's XADD. A delayed XADD's entry
// and event carry a 9-byte delay tail (docs/perf.md, "Delayed delivery").
func BenchmarkDelayXAdd(b *testing.B) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"plain", []string{"XADD", "s", "MAXLEN", "~", "1000", "*", "field", "value-value-value"}},
		{"DELAY", []string{"XADD", "s", "DELAY", "3600000", "MAXLEN", "~", "1000", "*", "field", "value-value-value"}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ts := newTestServer(b)
			c := dialBench(b, ts.addr)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; {
				n := min(100, b.N-i)
				for j := 0; j < n; j++ {
					c.queue(tc.args...)
				}
				c.flush(b, n)
				i += n
			}
		})
	}
}

// BenchmarkDelayXReadGroup measures XREADGROUP COUNT 10 '>' (pipelined by
// 100) over a stream where no entry, or one entry in 100, is delayed (by
// an hour: every read that meets one parks it in the PEL). The entries are
// added outside the timer, 10 per read.
func BenchmarkDelayXReadGroup(b *testing.B) {
	for _, tc := range []struct {
		name  string
		every int // one delayed entry in every; 0: none
	}{{"none-delayed", 0}, {"1-in-100-delayed", 100}} {
		b.Run(tc.name, func(b *testing.B) {
			ts := newTestServer(b)
			c := dialBench(b, ts.addr)
			c.queue("XGROUP", "CREATE", "s", "g", "0", "MKSTREAM")
			c.flush(b, 1)
			total := 10*b.N + 100
			for i := 0; i < total; {
				n := min(1000, total-i)
				for j := 0; j < n; j++ {
					if tc.every > 0 && (i+j)%tc.every == tc.every/2 {
						c.queue("XADD", "s", "DELAY", "3600000", "*", "field", "value-value-value")
					} else {
						c.queue("XADD", "s", "*", "field", "value-value-value")
					}
				}
				c.flush(b, n)
				i += n
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; {
				n := min(100, b.N-i)
				for j := 0; j < n; j++ {
					c.queue("XREADGROUP", "GROUP", "g", "c", "COUNT", "10", "STREAMS", "s", ">")
				}
				c.flush(b, n)
				i += n
			}
		})
	}
}
