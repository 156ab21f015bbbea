package broker

import (
	"strconv"
	"testing"
)

// BenchmarkStreamLength measures reads of a fixed size against streams of
// 1,000 and 1,000,000 entries (with a group whose 1,000 oldest entries are
// pending, and 100,000 trimmed first so that the live range starts past
// deleted history): the cost must not grow with the stream. Each command
// returns 10 entries. CLAIM claims the group's 10 longest-idle entries
// (which then become the most recent), and ACKs nothing.
func BenchmarkStreamLength(b *testing.B) {
	for _, n := range []int{1_000, 1_000_000} {
		ts := newTestServer(b)
		c := dialBench(b, ts.addr)
		const trimmed = 100_000
		total := n + trimmed
		for i := 0; i < total; {
			k := min(1000, total-i)
			for j := 0; j < k; j++ {
				c.queue("XADD", "s", strconv.Itoa(i+j+1)+"-0", "field", "value-value-value")
			}
			c.flush(b, k)
			i += k
		}
		c.queue("XTRIM", "s", "MINID", strconv.Itoa(trimmed+1)+"-0")
		c.queue("XGROUP", "CREATE", "s", "g", strconv.Itoa(trimmed)+"-0")
		c.queue("XREADGROUP", "GROUP", "g", "c1", "COUNT", "1000", "STREAMS", "s", ">")
		c.flush(b, 3)
		mid := strconv.Itoa(trimmed+n/2) + "-0"
		cases := []struct {
			name string
			args []string
		}{
			{"XRANGE", []string{"XRANGE", "s", "-", "+", "COUNT", "10"}},
			{"XREVRANGE", []string{"XREVRANGE", "s", "+", "-", "COUNT", "10"}},
			{"XRANGE-mid", []string{"XRANGE", "s", mid, "+", "COUNT", "10"}},
			{"XREAD", []string{"XREAD", "COUNT", "10", "STREAMS", "s", mid}},
			{"XREADGROUP-CLAIM", []string{"XREADGROUP", "GROUP", "g", "c2", "COUNT", "10", "CLAIM", "0", "STREAMS", "s", ">"}},
		}
		for _, cs := range cases {
			b.Run(cs.name+"/"+strconv.Itoa(n), func(b *testing.B) {
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i += 100 {
					for j := 0; j < 100; j++ {
						c.queue(cs.args...)
					}
					c.flush(b, 100)
				}
			})
		}
	}
}
