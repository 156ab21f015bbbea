//go:build linux

package broker

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// newLoopTestServer is newTestServer with event loops, whatever
// SEDIMENT_TEST_EVENT_LOOPS says.
func newLoopTestServer(t *testing.T, mods ...func(*Options)) *testServer {
	t.Helper()
	return newTestServer(t, append([]func(*Options){func(o *Options) { o.EventLoops = 0 }}, mods...)...)
}

// loopState reports where the connection with the given client ID is
// served: "loop", "goroutine" (handed off, or never in a loop) or "gone".
func loopState(ts *testServer, id int64) string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for c := range ts.conns {
		if c.id != id {
			continue
		}
		if lc, ok := c.nc.(*loopConn); ok && lc.handed() == nil {
			return "loop"
		}
		return "goroutine"
	}
	return "gone"
}

// rawClientID asks a raw connection for its CLIENT ID.
func rawClientID(t *testing.T, nc net.Conn, br *bufio.Reader) int64 {
	t.Helper()
	rawSend(t, nc, "CLIENT ID\r\n")
	line := rawLine(t, nc, br, 5*time.Second)
	id, err := strconv.ParseInt(strings.TrimPrefix(line, ":"), 10, 64)
	if err != nil {
		t.Fatalf("CLIENT ID: %q", line)
	}
	return id
}

// TestLoopKeepsPlainClients: a client of reads and writes stays in its
// event loop, and one with event loops turned off is never in one.
func TestLoopKeepsPlainClients(t *testing.T) {
	for _, loops := range []int{0, -1} {
		ts := newTestServer(t, func(o *Options) { o.EventLoops = loops })
		nc, br := dialRaw(t, ts.addr)
		id := rawClientID(t, nc, br)
		rawSend(t, nc, "SET k v\r\nGET k\r\nINCR n\r\nMULTI\r\nINCR n\r\nEXEC\r\n")
		for _, want := range []string{"+OK", "$1", "v", ":1", "+OK", "+QUEUED", "*1", ":2"} {
			if got := rawLine(t, nc, br, 5*time.Second); got != want {
				t.Fatalf("EventLoops %d: got %q, want %q", loops, got, want)
			}
		}
		want := "loop"
		if loops < 0 {
			want = "goroutine"
		}
		if got := loopState(ts, id); got != want {
			t.Fatalf("EventLoops %d: the client is served by a %s, want %s", loops, got, want)
		}
		info := infoFields(mustDo(t, ts.client(t), "INFO", "everything").(string))
		wantLoops, wantIn := strconv.Itoa(runtime.GOMAXPROCS(0)), "2" // the raw client and INFO's
		if loops < 0 {
			wantLoops, wantIn = "0", "0"
		}
		if info["sediment_event_loops"] != wantLoops || info["sediment_loop_clients"] != wantIn {
			t.Fatalf("EventLoops %d: INFO sediment_event_loops %q, sediment_loop_clients %q; want %s and %s",
				loops, info["sediment_event_loops"], info["sediment_loop_clients"], wantLoops, wantIn)
		}
	}
}

// TestLoopHandOffKeepsOrder: a blocking command behind pipelined writes
// moves the connection to a goroutine of its own; the writes before it
// reply first, it blocks, and a push wakes it.
func TestLoopHandOffKeepsOrder(t *testing.T) {
	ts := newLoopTestServer(t)
	nc, br := dialRaw(t, ts.addr)
	id := rawClientID(t, nc, br)
	rawSend(t, nc, "SET a 1\r\nRPUSH q x\r\nBLPOP q 0\r\nBLPOP q 0\r\nGET a\r\n")
	for _, want := range []string{"+OK", ":1", "*2", "$1", "q", "$1", "x"} {
		if got := rawLine(t, nc, br, 5*time.Second); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	if got := loopState(ts, id); got != "goroutine" {
		t.Fatalf("after BLPOP the client is served by a %s", got)
	}
	mustDo(t, ts.client(t), "RPUSH", "q", "y")
	for _, want := range []string{"*2", "$1", "q", "$1", "y", "$1", "1"} {
		if got := rawLine(t, nc, br, 5*time.Second); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
}

// TestLoopPartialRequests: requests that arrive a few bytes at a time,
// with requests Redis skips (*0, blank lines) among them, run once each
// and in order.
func TestLoopPartialRequests(t *testing.T) {
	ts := newLoopTestServer(t)
	nc, br := dialRaw(t, ts.addr)
	var b strings.Builder
	const n = 50
	for i := range n {
		fmt.Fprintf(&b, "*3\r\n$5\r\nRPUSH\r\n$1\r\nl\r\n$%d\r\n%d\r\n", len(strconv.Itoa(i)), i)
		if i%7 == 0 {
			b.WriteString("*0\r\n\r\n \r\n")
		}
	}
	b.WriteString("LLEN l\r\n")
	msg := b.String()
	go func() {
		for i := 0; i < len(msg); i += 5 {
			nc.Write([]byte(msg[i:min(i+5, len(msg))]))
			if i%50 == 0 {
				time.Sleep(time.Millisecond)
			}
		}
	}()
	for i := range n {
		if got := rawLine(t, nc, br, 5*time.Second); got != ":"+strconv.Itoa(i+1) {
			t.Fatalf("RPUSH %d replied %q", i, got)
		}
	}
	if got := rawLine(t, nc, br, 5*time.Second); got != ":"+strconv.Itoa(n) {
		t.Fatalf("LLEN %q", got)
	}
}

// TestLoopLargeValues: a request larger than the loop's read buffer, and
// replies the socket does not take at once (a client that reads late),
// hand the connection off without losing a byte.
func TestLoopLargeValues(t *testing.T) {
	ts := newLoopTestServer(t)
	ctx := context.Background()
	c := ts.client(t)
	big := strings.Repeat("0123456789", 30_000) // 300 KB
	if err := c.Set(ctx, "big", big, 0).Err(); err != nil {
		t.Fatal(err)
	}
	nc, br := dialRaw(t, ts.addr)
	id := rawClientID(t, nc, br)
	const gets = 100 // 30 MB of replies, far past the socket's buffers
	rawSend(t, nc, strings.Repeat("GET big\r\n", gets)+"PING\r\n")
	time.Sleep(200 * time.Millisecond) // the loop writes until the socket is full
	for i := range gets {
		if got := rawLine(t, nc, br, 10*time.Second); got != "$"+strconv.Itoa(len(big)) {
			t.Fatalf("GET %d: %q", i, got)
		}
		v := make([]byte, len(big)+2)
		if _, err := io.ReadFull(br, v); err != nil || string(v[:len(big)]) != big {
			t.Fatalf("GET %d: value differs (%v)", i, err)
		}
	}
	if got := rawLine(t, nc, br, 5*time.Second); got != "+PONG" {
		t.Fatalf("PING %q", got)
	}
	if got := loopState(ts, id); got != "goroutine" {
		t.Fatalf("after replies the socket could not take, the client is served by a %s", got)
	}
}

// TestLoopClose: CLIENT KILL and the idle timeout close a client in a
// loop, and a protocol error gets its one reply before the close.
func TestLoopClose(t *testing.T) {
	ts := newLoopTestServer(t)
	admin := ts.client(t)

	nc, br := dialRaw(t, ts.addr)
	id := rawClientID(t, nc, br)
	if got := loopState(ts, id); got != "loop" {
		t.Fatalf("the client is served by a %s", got)
	}
	if n := mustDo(t, admin, "CLIENT", "KILL", "ID", id); n != int64(1) {
		t.Fatalf("CLIENT KILL: %v", n)
	}
	rawExpectClosed(t, nc, br)

	nc, br = dialRaw(t, ts.addr)
	rawSend(t, nc, "SET x 1\r\n*1\r\n$x\r\nGET x\r\n")
	for _, want := range []string{"+OK", "-ERR Protocol error: invalid bulk length"} {
		if got := rawLine(t, nc, br, 5*time.Second); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	rawExpectClosed(t, nc, br)

	mustDo(t, admin, "CONFIG", "SET", "timeout", "1")
	nc, br = dialRaw(t, ts.addr)
	id = rawClientID(t, nc, br)
	if got := loopState(ts, id); got != "loop" {
		t.Fatalf("the client is served by a %s", got)
	}
	rawExpectClosed(t, nc, br)
}

// TestLoopPushesToIdleClient: invalidations redirected to a RESP3 client
// that waits in its loop reach it (it leaves the loop for them), and its
// requests keep working.
func TestLoopPushesToIdleClient(t *testing.T) {
	ts := newLoopTestServer(t)
	ctx := context.Background()
	nc, br := dialRaw(t, ts.addr)
	id := rawClientID(t, nc, br)
	rawSend(t, nc, "HELLO 3\r\n")
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := br.ReadString('\n'); err != nil { // the map's header; the rest is read below
		t.Fatal(err)
	}
	rawSend(t, nc, "PING\r\n")
	for { // skip the rest of HELLO's map
		if l := rawLine(t, nc, br, 5*time.Second); l == "+PONG" {
			break
		}
	}
	tracker := redis.NewClient(&redis.Options{Addr: ts.addr, Protocol: 2, DisableIdentity: true, PoolSize: 1})
	defer tracker.Close()
	conn := tracker.Conn()
	defer conn.Close()
	if err := conn.Do(ctx, "CLIENT", "TRACKING", "ON", "REDIRECT", id).Err(); err != nil {
		t.Fatal(err)
	}
	conn.Get(ctx, "watched")
	mustDo(t, ts.client(t), "SET", "watched", "1")
	for _, want := range []string{">2", "$10", "invalidate", "*1", "$7", "watched"} {
		if got := rawLine(t, nc, br, 5*time.Second); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	rawSend(t, nc, "GET watched\r\n")
	for _, want := range []string{"$1", "1"} {
		if got := rawLine(t, nc, br, 5*time.Second); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
}

// TestLoopPipelinedClients: many clients pipelining writes and reads at
// once through the loops see every write, in order, with its reply.
func TestLoopPipelinedClients(t *testing.T) {
	ts := newLoopTestServer(t)
	ctx := context.Background()
	const clients, rounds, depth = 20, 20, 16
	errs := make(chan error, clients)
	for i := range clients {
		c := ts.client(t)
		go func() {
			key := fmt.Sprintf("n%d", i)
			for r := range rounds {
				cmds, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
					for range depth {
						p.Incr(ctx, key)
					}
					p.Get(ctx, key)
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
				for d := range depth {
					if got, want := cmds[d].(*redis.IntCmd).Val(), int64(r*depth+d+1); got != want {
						errs <- fmt.Errorf("client %d round %d: INCR replied %d, want %d", i, r, got, want)
						return
					}
				}
				if got, want := cmds[depth].(*redis.StringCmd).Val(), strconv.Itoa((r+1)*depth); got != want {
					errs <- fmt.Errorf("client %d round %d: GET after the INCRs %q, want %q", i, r, got, want)
					return
				}
			}
			errs <- nil
		}()
	}
	for range clients {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestLoopReadAfterWrite: a pipeline alternating writes and reads of the
// same key, far longer than one read of the socket, replies in order and
// each read sees the write before it (the read is held in the loop until
// that write has ended, and the socket is not watched meanwhile).
func TestLoopReadAfterWrite(t *testing.T) {
	ts := newLoopTestServer(t)
	nc, br := dialRaw(t, ts.addr)
	const n = 3000
	go func() {
		var b strings.Builder
		for range n {
			b.WriteString("INCR x\r\nGET x\r\n")
		}
		nc.Write([]byte(b.String()))
	}()
	for i := 1; i <= n; i++ {
		v := strconv.Itoa(i)
		for _, want := range []string{":" + v, "$" + strconv.Itoa(len(v)), v} {
			if got := rawLine(t, nc, br, 10*time.Second); got != want {
				t.Fatalf("pair %d: got %q, want %q", i, got, want)
			}
		}
	}
}

// TestLoopQuietClientNotIdle: a client that connects and says nothing
// for less than the timeout is not closed as idle (its connection's
// activity time starts when it connects).
func TestLoopQuietClientNotIdle(t *testing.T) {
	ts := newLoopTestServer(t, func(o *Options) { o.Timeout = 3 * time.Second })
	nc, br := dialRaw(t, ts.addr)
	time.Sleep(1500 * time.Millisecond) // past the reaper's first checks (Timeout/4 apart)
	rawSend(t, nc, "PING\r\n")
	if got := rawLine(t, nc, br, 5*time.Second); got != "+PONG" {
		t.Fatalf("PING after 1.5 s of quiet under a 3 s timeout: %q", got)
	}
}
