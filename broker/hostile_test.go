package broker

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// dialRaw opens a plain TCP connection to addr, closed at the end of the test.
func dialRaw(t testing.TB, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { nc.Close() })
	return nc, bufio.NewReader(nc)
}

func rawSend(t testing.TB, nc net.Conn, s string) {
	t.Helper()
	nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(nc, s); err != nil {
		t.Fatalf("write: %v", err)
	}
}

// rawLine reads one reply line (without its CR LF) within timeout.
func rawLine(t testing.TB, nc net.Conn, br *bufio.Reader, timeout time.Duration) string {
	t.Helper()
	nc.SetReadDeadline(time.Now().Add(timeout))
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("read reply line: %v (got %q)", err, line)
	}
	return strings.TrimSuffix(line, "\r\n")
}

// rawExpectClosed checks that the server closes the connection: the next
// read ends with EOF (or a reset) instead of data or a timeout.
func rawExpectClosed(t testing.TB, nc net.Conn, br *bufio.Reader) {
	t.Helper()
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, err := br.ReadByte()
	if err == nil {
		rest, _ := br.Peek(br.Buffered())
		t.Fatalf("connection still open: read %q%q", b, rest)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection not closed within 5s")
	}
}

// expectProtocolError sends payload on a fresh connection and expects an
// error reply starting with wantPrefix, then a closed connection.
func expectProtocolError(t *testing.T, ts *testServer, payload, wantPrefix string) {
	t.Helper()
	nc, br := dialRaw(t, ts.addr)
	// Write concurrently: the server may stop reading (and close) before
	// a large payload is fully written.
	go func() {
		nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(nc, payload)
	}()
	if l := rawLine(t, nc, br, 5*time.Second); !strings.HasPrefix(l, wantPrefix) {
		t.Fatalf("reply to %q = %q, want prefix %q", trunc(payload), l, wantPrefix)
	}
	rawExpectClosed(t, nc, br)
	// The server keeps serving other clients.
	nc2, br2 := dialRaw(t, ts.addr)
	rawSend(t, nc2, "PING\r\n")
	if l := rawLine(t, nc2, br2, 5*time.Second); l != "+PONG" {
		t.Fatalf("PING after %q = %q", trunc(payload), l)
	}
}

func trunc(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

func TestHostileProtocolErrors(t *testing.T) {
	ts := newTestServer(t, func(o *Options) { o.Limits.MaxBulkLen = 1024 })
	c := ts.client(t)
	for i := 0; i < 5; i++ {
		mustDo(t, c, "XADD", "s", "*", "f", "v")
	}
	mustStr(t, c, "OK", "SET", "k", "before")

	cases := []struct {
		name, payload, want string
	}{
		{"huge bulk length", "*1\r\n$9223372036854775800\r\n", "-ERR Protocol error: invalid bulk length"},
		{"overflowing bulk length", "*1\r\n$99999999999999999999999\r\n", "-ERR Protocol error: invalid bulk length"},
		{"negative bulk length", "*1\r\n$-5\r\n", "-ERR Protocol error: invalid bulk length"},
		{"huge multibulk", "*1000000000000\r\n", "-ERR Protocol error: invalid multibulk length"},
		{"garbage multibulk", "*abc\r\n", "-ERR Protocol error: invalid multibulk length"},
		{"plus sign multibulk", "*+1\r\n", "-ERR Protocol error: invalid multibulk length"},
		{"bulk over MaxBulkLen", "*2\r\n$4\r\nECHO\r\n$1025\r\n", "-ERR Protocol error: invalid bulk length"},
		{"missing dollar", "*1\r\nPING\r\n", "-ERR Protocol error: expected '$', got 'P'"},
		{"bad bulk terminator", "*1\r\n$4\r\nPINGxx", "-ERR Protocol error"},
		{"unbalanced quotes", "ECHO \"abc\r\n", "-ERR Protocol error: unbalanced quotes in request"},
		{"too big inline", strings.Repeat("A", 70<<10), "-ERR Protocol error: too big inline request"},
		{"too big header line", "*1\r\n$" + strings.Repeat("1", 70<<10), "-ERR Protocol error: too big bulk count string"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { expectProtocolError(t, ts, tc.payload, tc.want) })
	}

	// At the limit, a bulk is accepted.
	big := strings.Repeat("x", 1024)
	mustStr(t, c, big, "ECHO", big)

	// Replies to requests before a protocol error are sent first.
	nc, br := dialRaw(t, ts.addr)
	rawSend(t, nc, "PING\r\n*1\r\n$4\r\nECHO\r\n*abc\r\nPING\r\n")
	if l := rawLine(t, nc, br, 5*time.Second); l != "+PONG" {
		t.Fatalf("first reply = %q", l)
	}
	if l := rawLine(t, nc, br, 5*time.Second); l != "-ERR wrong number of arguments for 'echo' command" {
		t.Fatalf("second reply = %q", l)
	}
	if l := rawLine(t, nc, br, 5*time.Second); l != "-ERR Protocol error: invalid multibulk length" {
		t.Fatalf("third reply = %q", l)
	}
	rawExpectClosed(t, nc, br)

	// A client that declares a large bulk and disappears mid-way.
	nc, _ = dialRaw(t, ts.addr)
	rawSend(t, nc, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1000\r\npartial")
	nc.Close()

	// A fresh client works and the data is intact.
	fresh := ts.client(t)
	mustStr(t, fresh, "PONG", "PING")
	mustInt(t, fresh, 5, "XLEN", "s")
	mustStr(t, fresh, "before", "GET", "k")
}

func TestHostileCommandErrors(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	mustErr(t, c, "ERR unknown command 'FOO', with args beginning with: 'a' 'b' ", "FOO", "a", "b")
	mustErr(t, c, "ERR unknown command 'foo', with args beginning with: ", "foo")
	mustErr(t, c, "ERR wrong number of arguments for 'xadd' command", "XADD", "s")
	mustErr(t, c, "ERR wrong number of arguments for 'xadd' command", "xAdD", "s", "*", "f")
	mustErr(t, c, "ERR wrong number of arguments for 'get' command", "GET")
	mustErr(t, c, "ERR wrong number of arguments for 'get' command", "GET", "a", "b")
	mustErr(t, c, "ERR wrong number of arguments for 'xreadgroup' command", "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s")
	// A very long unknown command name is still answered.
	long := strings.Repeat("Z", 300)
	_, err := do(t, c, long, "x")
	if err == nil || !strings.HasPrefix(err.Error(), "ERR unknown command 'ZZZ") {
		t.Fatalf("long unknown command: %v", err)
	}
	// Commands are case-insensitive.
	mustStr(t, c, "PONG", "pInG")
	// Errors do not close the connection.
	mustStr(t, c, "OK", "SET", "k", "v")
	mustStr(t, c, "v", "GET", "k")

	// Unknown command over raw TCP: exact wire line, connection stays open.
	nc, br := dialRaw(t, ts.addr)
	rawSend(t, nc, "*3\r\n$3\r\nFOO\r\n$1\r\na\r\n$1\r\nb\r\nPING\r\n")
	if l := rawLine(t, nc, br, 5*time.Second); l != "-ERR unknown command 'FOO', with args beginning with: 'a' 'b' " {
		t.Fatalf("unknown command reply = %q", l)
	}
	if l := rawLine(t, nc, br, 5*time.Second); l != "+PONG" {
		t.Fatalf("PING after unknown command = %q", l)
	}
	// Inline commands with quoting.
	rawSend(t, nc, "ECHO \"a b\\x41\\n\"\r\n\r\nECHO 'it\\'s'\r\n")
	if l := rawLine(t, nc, br, 5*time.Second); l != "$5" {
		t.Fatalf("inline ECHO header = %q", l)
	}
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 7)
	if _, err := io.ReadFull(br, buf); err != nil || string(buf) != "a bA\n\r\n" {
		t.Fatalf("inline ECHO body = %q, %v", buf, err)
	}
	if l := rawLine(t, nc, br, 5*time.Second); l != "$4" {
		t.Fatalf("inline ECHO 2 header = %q", l)
	}
	if l := rawLine(t, nc, br, 5*time.Second); l != "it's" {
		t.Fatalf("inline ECHO 2 body = %q", l)
	}
}

func TestHostileLargePipeline(t *testing.T) {
	ts := newTestServer(t)
	nc, br := dialRaw(t, ts.addr)
	const n = 1000
	var req bytes.Buffer
	for i := 0; i < n; i++ {
		if i%2 == 0 {
			req.WriteString("PING\r\n")
		} else {
			req.WriteString("*1\r\n$4\r\nPING\r\n")
		}
	}
	done := make(chan error, 1)
	go func() {
		nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
		_, err := nc.Write(req.Bytes())
		done <- err
	}()
	for i := 0; i < n; i++ {
		if l := rawLine(t, nc, br, 10*time.Second); l != "+PONG" {
			t.Fatalf("reply %d = %q", i, l)
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("write: %v", err)
	}
	// Nothing more was sent.
	nc.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if b, err := br.ReadByte(); err == nil {
		t.Fatalf("extra reply byte %q", b)
	}

	// A pipeline of writes through go-redis: all applied, in order.
	c := ts.client(t)
	var cmds bytes.Buffer
	for i := 0; i < n; i++ {
		cmds.WriteString("*5\r\n$4\r\nXADD\r\n$1\r\np\r\n$1\r\n*\r\n$1\r\nf\r\n$1\r\nv\r\n")
	}
	nc2, br2 := dialRaw(t, ts.addr)
	go func() {
		nc2.SetWriteDeadline(time.Now().Add(10 * time.Second))
		nc2.Write(cmds.Bytes())
	}()
	for i := 0; i < n; i++ {
		if l := rawLine(t, nc2, br2, 10*time.Second); !strings.HasPrefix(l, "$") {
			t.Fatalf("XADD reply %d header = %q", i, l)
		}
		rawLine(t, nc2, br2, 10*time.Second)
	}
	mustInt(t, c, n, "XLEN", "p")
}

func TestHostileConfiguredLimits(t *testing.T) {
	ts := newTestServer(t, func(o *Options) {
		o.Limits.MaxMultibulk = 5
		o.Limits.MaxQueryBuffer = 200
		o.Limits.MaxInline = 100
	})
	c := ts.client(t)
	mustDo(t, c, "XADD", "s", "1-0", "f", "v")
	t.Run("multibulk", func(t *testing.T) {
		expectProtocolError(t, ts, "*6\r\n", "-ERR Protocol error: invalid multibulk length")
	})
	t.Run("query buffer", func(t *testing.T) {
		expectProtocolError(t, ts, "*2\r\n$4\r\nECHO\r\n$300\r\n", "-ERR Protocol error: query buffer limit exceeded")
	})
	t.Run("inline", func(t *testing.T) {
		expectProtocolError(t, ts, "ECHO "+strings.Repeat("x", 150)+"\r\n", "-ERR Protocol error: too big inline request")
	})
	mustStr(t, c, strings.Repeat("y", 100), "ECHO", strings.Repeat("y", 100))
	mustInt(t, c, 1, "XLEN", "s")
}
