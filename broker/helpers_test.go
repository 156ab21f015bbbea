package broker

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// testServer is a real Sediment server on a random loopback port, with its
// Pebble data in a temp dir and an embedded NATS server.
type testServer struct {
	*Server
	dir  string
	addr string
}

// testEventLoops is the test servers' Options.EventLoops:
// SEDIMENT_TEST_EVENT_LOOPS when set (make test runs the package once
// more with -1, a goroutine per connection, the path of TLS clients and
// of clients that left their loop), else 0 (the default: loops).
var testEventLoops = func() int {
	n, _ := strconv.Atoi(os.Getenv("SEDIMENT_TEST_EVENT_LOOPS"))
	return n
}()

// newTestServer starts a server and stops it at the end of the test.
func newTestServer(t testing.TB, mods ...func(*Options)) *testServer {
	t.Helper()
	return startTestServer(t, t.TempDir(), mods...)
}

// startTestServer starts a server on dir (which may hold an earlier server's data).
func startTestServer(t testing.TB, dir string, mods ...func(*Options)) *testServer {
	t.Helper()
	return startTestServerOn(t, dir, "127.0.0.1:0", mods...)
}

// newTestServerOn is newTestServer listening on listen.
func newTestServerOn(t testing.TB, listen string, mods ...func(*Options)) *testServer {
	t.Helper()
	return startTestServerOn(t, t.TempDir(), listen, mods...)
}

func startTestServerOn(t testing.TB, dir, listen string, mods ...func(*Options)) *testServer {
	t.Helper()
	opts := Options{Dir: dir, EventLoops: testEventLoops}
	for _, m := range mods {
		m(&opts)
	}
	s, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	ts := &testServer{Server: s, dir: dir, addr: ln.Addr().String()}
	t.Cleanup(func() {
		s.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ts
}

// client returns a go-redis client of ts, closed at the end of the test.
func (ts *testServer) client(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: ts.addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1, ReadTimeout: 10 * time.Second})
	t.Cleanup(func() { c.Close() })
	return c
}

// do runs a raw command and fails the test on a transport error; a Redis
// error reply is returned as the error.
func do(t testing.TB, c *redis.Client, args ...any) (any, error) {
	t.Helper()
	v, err := c.Do(context.Background(), args...).Result()
	if err != nil && err != redis.Nil {
		if _, ok := err.(redis.Error); !ok {
			t.Fatalf("%v: transport error: %v", args, err)
		}
	}
	return v, err
}

// mustDo runs a command that must succeed and returns its reply.
func mustDo(t testing.TB, c *redis.Client, args ...any) any {
	t.Helper()
	v, err := do(t, c, args...)
	if err != nil && err != redis.Nil {
		t.Fatalf("%v: %v", args, err)
	}
	return v
}

// streamWithGroup adds the entries 1-0..n-0 (field f, value i) to stream
// s and creates group g on it from 0: the set-up of the consumer-group
// tests.
func streamWithGroup(t testing.TB, c *redis.Client, n int) {
	t.Helper()
	for i := 1; i <= n; i++ {
		mustDo(t, c, "XADD", "s", fmt.Sprintf("%d-0", i), "f", i)
	}
	mustDo(t, c, "XGROUP", "CREATE", "s", "g", "0")
}

// mustErr runs a command that must fail with exactly want.
func mustErr(t testing.TB, c *redis.Client, want string, args ...any) {
	t.Helper()
	_, err := do(t, c, args...)
	if err == nil || err.Error() != want {
		t.Fatalf("%v: error %v, want %q", args, err, want)
	}
}
