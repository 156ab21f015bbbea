package broker

import (
	"net"
	"testing"
	"time"
)

func init() {
	conformanceCases = append(conformanceCases, confCase{name: "shutdown errors", steps: []confStep{
		cc("SHUTDOWN", "FOO"),
		cc("SHUTDOWN", "ABORT"),
		cc("SHUTDOWN", "NOSAVE", "SAVE"),
		cc("SHUTDOWN", "ABORT", "NOW"),
		cc("MULTI"),
		cc("SHUTDOWN"),
		cc("EXEC"),
	}})
}

// TestShutdown: SHUTDOWN closes the caller's connection without a reply,
// stops the server and calls Options.OnShutdown.
func TestShutdown(t *testing.T) {
	called := make(chan struct{})
	ts := newTestServer(t, func(o *Options) { o.OnShutdown = func() { close(called) } })
	c := confDial(t, ts.addr)
	if r, err := c.do("SHUTDOWN", "NOSAVE"); err == nil {
		t.Fatalf("SHUTDOWN replied %v", r)
	}
	select {
	case <-called:
	case <-time.After(10 * time.Second):
		t.Fatal("OnShutdown not called")
	}
	// Close waits for the close SHUTDOWN began (the program's SIGTERM path
	// calls it too), then the store is closed.
	ts.Close()
	if _, err := ts.store.Write(nil); err == nil {
		t.Fatal("the store still takes writes after Close returned")
	}
	if nc, err := net.DialTimeout("tcp", ts.addr, time.Second); err == nil {
		nc.Close()
		t.Fatal("a connection was accepted after SHUTDOWN")
	}
}
