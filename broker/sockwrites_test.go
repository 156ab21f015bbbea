package broker

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// writeCounter is a listener whose connections count their Write calls
// (each a write system call), all of them and those of 0 bytes.
type writeCounter struct {
	net.Listener
	mu    sync.Mutex
	conns []*countedConn // in the order accepted
}

func (l *writeCounter) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	c := &countedConn{Conn: nc}
	l.mu.Lock()
	l.conns = append(l.conns, c)
	l.mu.Unlock()
	return c, nil
}

// conn returns the i-th connection accepted.
func (l *writeCounter) conn(t *testing.T, i int) *countedConn {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if i >= len(l.conns) {
		t.Fatalf("%d connections accepted, want more than %d", len(l.conns), i)
	}
	return l.conns[i]
}

type countedConn struct {
	net.Conn
	writes, empty atomic.Int64
}

func (c *countedConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	if len(b) == 0 {
		c.empty.Add(1)
	}
	return c.Conn.Write(b)
}

// TestBlockedReadsWriteOnlyTheirReplies checks the socket writes of
// blocking commands: a client that blocks and is served (XREADGROUP,
// XREAD, BLPOP) or times out costs one write, its reply, and no write of
// 0 bytes (the flush before a command blocks has nothing to send).
func TestBlockedReadsWriteOnlyTheirReplies(t *testing.T) {
	s, err := New(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	wc := &writeCounter{Listener: ln}
	done := make(chan error, 1)
	go func() { done <- s.Serve(wc) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	newClient := func() *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), Protocol: 2, DisableIdentity: true, MaxRetries: -1, PoolSize: 1, ReadTimeout: 10 * time.Second})
		t.Cleanup(func() { c.Close() })
		return c
	}
	reader, writer := newClient(), newClient()
	mustDo(t, reader, "PING") // the first connection accepted
	mustDo(t, writer, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
	rc := wc.conn(t, 0)

	blocked := []struct {
		name    string
		block   []any
		serve   []any
		timeout bool
	}{
		{name: "XREADGROUP", block: []any{"XREADGROUP", "GROUP", "g", "c", "BLOCK", 5000, "STREAMS", "s", ">"}, serve: []any{"XADD", "s", "*", "f", "v"}},
		{name: "XREAD", block: []any{"XREAD", "BLOCK", 5000, "STREAMS", "s", "$"}, serve: []any{"XADD", "s", "*", "f", "v"}},
		{name: "BLPOP", block: []any{"BLPOP", "l", 5}, serve: []any{"RPUSH", "l", "x"}},
		{name: "BLPOP timeout", block: []any{"BLPOP", "none", 0.05}, timeout: true},
	}
	for _, b := range blocked {
		before, emptyBefore := rc.writes.Load(), rc.empty.Load()
		var wg sync.WaitGroup
		wg.Add(1)
		var v any
		var berr error
		go func() {
			defer wg.Done()
			v, berr = reader.Do(t.Context(), b.block...).Result()
		}()
		if !b.timeout {
			waitBlocked(t, writer, 1)
			mustDo(t, writer, b.serve...)
		}
		wg.Wait()
		switch {
		case b.timeout && berr != redis.Nil:
			t.Fatalf("%s: got %v, %v; want a nil reply", b.name, v, berr)
		case !b.timeout && berr != nil:
			t.Fatalf("%s: %v", b.name, berr)
		}
		if got := rc.writes.Load() - before; got != 1 {
			t.Errorf("%s: %d socket writes, want 1 (the reply)", b.name, got)
		}
		if got := rc.empty.Load() - emptyBefore; got != 0 {
			t.Errorf("%s: %d socket writes of 0 bytes", b.name, got)
		}
	}
}
