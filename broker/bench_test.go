package broker

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/sediment-dev/sediment/internal/proccpu"
)

// benchConn is a raw RESP connection that writes pipelines and counts replies.
type benchConn struct {
	nc  net.Conn
	rd  *bufio.Reader
	buf bytes.Buffer
}

func dialBench(b *testing.B, addr string) *benchConn {
	b.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { nc.Close() })
	return &benchConn{nc: nc, rd: bufio.NewReaderSize(nc, 64<<10)}
}

func (c *benchConn) queue(args ...string) {
	fmt.Fprintf(&c.buf, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&c.buf, "$%d\r\n%s\r\n", len(a), a)
	}
}

// flush sends the queued commands and reads n replies, failing on an error reply.
func (c *benchConn) flush(b *testing.B, n int) {
	if _, err := c.nc.Write(c.buf.Bytes()); err != nil {
		b.Fatal(err)
	}
	c.buf.Reset()
	for i := 0; i < n; i++ {
		if err := c.skipReply(); err != nil {
			b.Fatal(err)
		}
	}
}

// skipReply reads one reply of any shape.
func (c *benchConn) skipReply() error {
	line, err := c.rd.ReadSlice('\n')
	if err != nil {
		return err
	}
	switch line[0] {
	case '-':
		return fmt.Errorf("error reply: %s", bytes.TrimSpace(line))
	case '$':
		n, _ := strconv.Atoi(string(bytes.TrimSpace(line[1:])))
		if n >= 0 {
			_, err = c.rd.Discard(n + 2)
		}
		return err
	case '*':
		n, _ := strconv.Atoi(string(bytes.TrimSpace(line[1:])))
		for i := 0; i < n; i++ {
			if err := c.skipReply(); err != nil {
				return err
			}
		}
	}
	return nil
}

// BenchmarkXAddPipeline measures XADD through the whole server (RESP,
// writer, Pebble on disk, appendfsync everysec) in pipelines of 100.
func BenchmarkXAddPipeline(b *testing.B) {
	ts := newTestServer(b)
	c := dialBench(b, ts.addr)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; {
		n := min(100, b.N-i)
		for j := 0; j < n; j++ {
			c.queue("XADD", "bench", "*", "field", "value-value-value")
		}
		c.flush(b, n)
		i += n
	}
}

// BenchmarkXReadGroupAck measures the consumer-group cycle of one entry:
// XREADGROUP COUNT 1 '>' (delivery into the PEL) then XACK, pipelined by 50
// entries, after the entries were added outside the timer.
func BenchmarkXReadGroupAck(b *testing.B) {
	ts := newTestServer(b)
	c := dialBench(b, ts.addr)
	c.queue("XGROUP", "CREATE", "bench", "g", "0", "MKSTREAM")
	c.flush(b, 1)
	for i := 0; i < b.N; {
		n := min(1000, b.N-i)
		for j := 0; j < n; j++ {
			c.queue("XADD", "bench", strconv.Itoa(i+j+1)+"-1", "field", "value")
		}
		c.flush(b, n)
		i += n
	}
	b.ReportAllocs()
	st0 := ts.store.IterStats()
	b.ResetTimer()
	for i := 0; i < b.N; {
		n := min(50, b.N-i)
		for j := 0; j < n; j++ {
			c.queue("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "bench", ">")
			c.queue("XACK", "bench", "g", strconv.Itoa(i+j+1)+"-1")
		}
		c.flush(b, 2*n)
		i += n
	}
	b.StopTimer()
	// Pebble point lookups per cycle, and those the group cache answered.
	st := ts.store.IterStats().Sub(st0)
	b.ReportMetric(float64(st.Gets)/float64(b.N), "gets/op")
	b.ReportMetric(float64(st.GroupHits)/float64(b.N), "cached/op")
}

// BenchmarkCommands measures one command through the whole server (RESP,
// dispatch, runtime, writer, Pebble on disk, appendfsync everysec) in
// pipelines of 100, with allocations per command (b.N rounded up to whole
// pipelines; the client side allocates next to nothing per command). Keys
// cycle over 10,000 names so that writes hit existing keys and the
// metadata cache, as redis-benchmark -r 10000 does; the -new and -absent
// cases name a new key every time, and ZADD cycles over 100,000 members of
// one sorted set.
func BenchmarkCommands(b *testing.B) {
	cmds := []struct {
		name  string
		args  func(i int) []string
		fresh bool // every command names a key never written (absent-key lookups)
	}{
		{"SET", func(i int) []string { return []string{"SET", "k:" + strconv.Itoa(i%10000), "value-value-value"} }, false},
		{"GET", func(i int) []string { return []string{"GET", "k:" + strconv.Itoa(i%10000)} }, false},
		{"INCR", func(i int) []string { return []string{"INCR", "n:" + strconv.Itoa(i%10000)} }, false},
		{"HSET", func(i int) []string { return []string{"HSET", "h", "f:" + strconv.Itoa(i%10000), "value"} }, false},
		{"HGET", func(i int) []string { return []string{"HGET", "h", "f:" + strconv.Itoa(i%10000)} }, false},
		{"SADD", func(i int) []string { return []string{"SADD", "s", "m:" + strconv.Itoa(i%10000)} }, false},
		{"XADD", func(i int) []string { return []string{"XADD", "x", "MAXLEN", "~", "1000", "*", "field", "value"} }, false},
		// Idempotent production (Redis 8.6): a new idempotent ID each time
		// (recorded, the oldest of the producer evicted at 100), and
		// duplicates only (after the warm-up's 10,000, ids cycle over 100).
		{"XADD-IDMP", func(i int) []string {
			return []string{"XADD", "xi", "IDMP", "p", "r:" + strconv.Itoa(i), "MAXLEN", "~", "1000", "*", "field", "value"}
		}, true},
		{"XADD-IDMP-dup", func(i int) []string {
			return []string{"XADD", "xd", "IDMP", "p", "r:" + strconv.Itoa(i%100), "MAXLEN", "~", "1000", "*", "field", "value"}
		}, false},
		// A leaderboard: members re-scored at random in a set of 100,000
		// (ranked: rank blocks kept).
		{"ZADD", func(i int) []string {
			return []string{"ZADD", "z", strconv.Itoa(i * 7919 % 1000003 % 5000), "m:" + strconv.Itoa(i*104729%100000)}
		}, true},
		{"SET-new", func(i int) []string { return []string{"SET", "new:" + strconv.Itoa(i), "value-value-value"} }, true},
		{"GET-absent", func(i int) []string { return []string{"GET", "absent:" + strconv.Itoa(i)} }, true},
	}
	ts := newTestServer(b)
	for _, cmd := range cmds {
		b.Run(cmd.name, func(b *testing.B) {
			c := dialBench(b, ts.addr)
			// The pipelines are encoded before the timer starts, so that
			// the allocations counted are the server's.
			nb := 100
			if cmd.fresh {
				nb = (b.N + 10000 + 99) / 100 // the warm-up's keys, then b.N new ones
			}
			batches := make([][]byte, nb)
			for i := range batches {
				for j := 0; j < 100; j++ {
					c.queue(cmd.args(i*100 + j)...)
				}
				batches[i] = bytes.Clone(c.buf.Bytes())
				c.buf.Reset()
			}
			send := func(batch []byte, n int) {
				c.buf.Write(batch)
				c.flush(b, n)
			}
			warm := batches
			if cmd.fresh {
				warm, batches = batches[:100], batches[100:]
			}
			for _, batch := range warm { // warm: keys exist, metadata cached
				send(batch, 100)
			}
			b.ReportAllocs()
			cpu0 := proccpu.Self()
			b.ResetTimer()
			for i := 0; i < b.N; i += 100 {
				send(batches[(i/100)%len(batches)], 100)
			}
			b.StopTimer()
			b.ReportMetric(float64(proccpu.Self()-cpu0)/float64(b.N), "cpu-ns/op") // client and server
		})
	}
}

// BenchmarkLargeValues measures writes and reads of large values through
// the whole server, as BenchmarkCommands does, in pipelines of 10 over 100
// keys, with values of 100 B, 10 KB and 100 KB. value-B/op is the bytes the
// server allocated per command divided by the value size: a write must
// keep one copy of its value (the request's argument, which the decision,
// the change-log record and the batch read in place), so it should stay
// near 1 at every size, and a GET near 0.
func BenchmarkLargeValues(b *testing.B) {
	ts := newTestServer(b)
	for _, size := range []int{100, 10_000, 100_000} {
		val := strings.Repeat("v", size)
		cmds := []struct {
			name string
			args func(i int) []string
		}{
			{"SET", func(i int) []string { return []string{"SET", "k:" + strconv.Itoa(i%100), val} }},
			{"HSET", func(i int) []string { return []string{"HSET", "h", "f:" + strconv.Itoa(i%100), val} }},
			{"XADD", func(i int) []string { return []string{"XADD", "x", "MAXLEN", "~", "100", "*", "f", val} }},
			{"GET", func(i int) []string { return []string{"GET", "k:" + strconv.Itoa(i%100)} }},
		}
		for _, cmd := range cmds {
			b.Run(fmt.Sprintf("%s/%d", cmd.name, size), func(b *testing.B) {
				const depth = 10
				c := dialBench(b, ts.addr)
				batches := make([][]byte, 100/depth)
				for i := range batches {
					for j := 0; j < depth; j++ {
						c.queue(cmd.args(i*depth + j)...)
					}
					batches[i] = bytes.Clone(c.buf.Bytes())
					c.buf.Reset()
				}
				send := func(batch []byte) {
					c.buf.Write(batch)
					c.flush(b, depth)
				}
				for i := 0; i < 100; i++ { // GET's keys hold values of size
					c.queue("SET", "k:"+strconv.Itoa(i), val)
				}
				c.flush(b, 100)
				for _, batch := range batches { // warm: keys exist
					send(batch)
				}
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				before := ms.TotalAlloc
				b.ReportAllocs()
				b.ResetTimer()
				n := 0
				for ; n < b.N; n += depth {
					send(batches[(n/depth)%len(batches)])
				}
				b.StopTimer()
				runtime.ReadMemStats(&ms)
				b.ReportMetric(float64(ms.TotalAlloc-before)/float64(n)/float64(size), "value-B/op")
			})
		}
	}
}
