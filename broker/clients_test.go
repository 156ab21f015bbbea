package broker

import (
	"bufio"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rawPing sends PING on nc and returns the reply line.
func rawPing(t *testing.T, nc net.Conn, br *bufio.Reader) string {
	t.Helper()
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := nc.Write([]byte("PING\r\n")); err != nil {
		return "write: " + err.Error()
	}
	line, err := br.ReadString('\n')
	if err != nil {
		return "read: " + err.Error()
	}
	return strings.TrimRight(line, "\r\n")
}

// TestMaxClients: beyond maxclients a connection is told Redis's error and
// closed; once a client leaves, a new one is served.
func TestMaxClients(t *testing.T) {
	ts := newTestServer(t, func(o *Options) { o.MaxClients = 3 })
	var conns []net.Conn
	for i := 0; i < 3; i++ {
		nc, br := dialRaw(t, ts.addr)
		if got := rawPing(t, nc, br); got != "+PONG" {
			t.Fatalf("client %d: PING = %q", i, got)
		}
		conns = append(conns, nc)
	}
	extra, br := dialRaw(t, ts.addr)
	extra.SetDeadline(time.Now().Add(5 * time.Second))
	got, err := io.ReadAll(br)
	if err != nil || string(got) != "-ERR max number of clients reached\r\n" {
		t.Fatalf("the fourth client read %q, %v; want Redis's error, then the close", got, err)
	}
	again, br2 := dialRaw(t, ts.addr) // refused too, before it sends anything
	again.SetDeadline(time.Now().Add(5 * time.Second))
	if got, err := io.ReadAll(br2); err != nil || string(got) != "-ERR max number of clients reached\r\n" {
		t.Fatalf("the fifth client read %q, %v", got, err)
	}
	conns[0].Close()
	deadline := time.Now().Add(5 * time.Second)
	for tries := 0; ; tries++ {
		nc, br := dialRaw(t, ts.addr)
		if got := rawPing(t, nc, br); got == "+PONG" {
			nc.Write([]byte("INFO stats\r\n"))
			body := readBulkReply(t, br)
			// Two refusals above, and one per retry of this loop.
			i := strings.Index(body, "rejected_connections:")
			n := -1
			if i >= 0 {
				n, _ = strconv.Atoi(strings.TrimSpace(strings.SplitN(body[i+len("rejected_connections:"):], "\n", 2)[0]))
			}
			if n < 2 || n > 2+tries {
				t.Fatalf("INFO stats after %d refusals: rejected_connections %d\n%s", 2+tries, n, body)
			}
			return
		}
		nc.Close()
		if time.Now().After(deadline) {
			t.Fatal("no client served 5 s after one of three left")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// readBulkReply reads one bulk string reply.
func readBulkReply(t *testing.T, br *bufio.Reader) string {
	t.Helper()
	head, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(head, "$") {
		t.Fatalf("bulk reply header %q, %v", head, err)
	}
	var n int
	for _, c := range strings.TrimSpace(head[1:]) {
		n = n*10 + int(c-'0')
	}
	buf := make([]byte, n+2)
	if _, err := io.ReadFull(br, buf); err != nil {
		t.Fatal(err)
	}
	return string(buf[:n])
}

// TestShutdownWithClientNotReading: a client that sends requests but never
// reads their replies fills the socket buffers and blocks the server's
// write; a shutdown still completes (Redis closes such clients too).
func TestShutdownWithClientNotReading(t *testing.T) {
	if d := shutdownNotReading(t, 0); d > 10*time.Second {
		t.Fatalf("shutdown took %v", d)
	}
	// The grace is Options.ShutdownGrace (--shutdown-grace): a longer one
	// waits longer than the default 2 s.
	if d := shutdownNotReading(t, 3*time.Second); d < 2500*time.Millisecond {
		t.Fatalf("shutdown with a 3 s grace took %v", d)
	}
}

// shutdownNotReading closes a server while a client that does not read
// holds its write, and returns how long Close took.
func shutdownNotReading(t *testing.T, grace time.Duration) time.Duration {
	ts := newTestServer(t, func(o *Options) { o.ShutdownGrace = grace })
	c := ts.client(t)
	big := strings.Repeat("v", 1<<20)
	if err := c.Set(t.Context(), "big", big, 0).Err(); err != nil {
		t.Fatal(err)
	}
	nc, _ := dialRaw(t, ts.addr)
	req := []byte(strings.Repeat("GET big\r\n", 64)) // 64 MiB of replies
	if _, err := nc.Write(req); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the server is now blocked writing
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- ts.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
		t.Logf("shutdown (grace %v) took %v", grace, time.Since(start).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Fatal("shutdown still waiting 10 s after it began: a client that does not read holds it")
	}
	return time.Since(start)
}

// TestBlockedReadWithoutWakeups: a blocking XREAD whose wake subject cannot
// be subscribed to (the NATS connection is gone) replies an error at once
// instead of waiting forever for a wake that cannot come.
func TestBlockedReadWithoutWakeups(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	ts.wake.nc.Close()
	done := make(chan error, 1)
	go func() {
		done <- c.Do(t.Context(), "XREAD", "BLOCK", "0", "STREAMS", "s", "$").Err()
	}()
	select {
	case err := <-done:
		if err == nil || !strings.HasPrefix(err.Error(), "ERR blocking wait failed: cannot subscribe to wake-ups: ") {
			t.Fatalf("XREAD BLOCK 0 without NATS: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("XREAD BLOCK 0 without NATS still waiting after 5 s")
	}
	// The connection still serves.
	if err := c.Ping(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
}
