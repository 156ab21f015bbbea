package broker

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestIdleTimeout: with Options.Timeout (Redis's timeout), a client that
// sends nothing for longer is disconnected; one that keeps sending is not,
// nor is one waiting in a blocking command for longer than the timeout.
// CONFIG GET timeout reports it in seconds.
func TestIdleTimeout(t *testing.T) {
	const timeout = 300 * time.Millisecond
	ts := newTestServer(t, func(o *Options) { o.Timeout = timeout })

	dial := func() (net.Conn, *bufio.Reader) {
		nc, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		return nc, bufio.NewReader(nc)
	}
	ping := func(nc net.Conn, rd *bufio.Reader) error {
		if _, err := nc.Write([]byte("PING\r\n")); err != nil {
			return err
		}
		nc.SetReadDeadline(time.Now().Add(2 * time.Second))
		line, err := rd.ReadString('\n')
		if err == nil && line != "+PONG\r\n" {
			t.Fatalf("PING replied %q", line)
		}
		return err
	}

	idle, idleRd := dial()
	if err := ping(idle, idleRd); err != nil {
		t.Fatal(err)
	}
	busy, busyRd := dial()
	ctx := context.Background()
	blocked := make(chan error, 1)
	go func() {
		c := ts.client(t)
		err := c.XRead(ctx, &redis.XReadArgs{Streams: []string{"s", "$"}, Block: 4 * timeout}).Err()
		if errors.Is(err, redis.Nil) {
			err = nil // the BLOCK timed out: the connection outlived the idle timeout
		}
		blocked <- err
	}()
	for end := time.Now().Add(4 * timeout); time.Now().Before(end); time.Sleep(timeout / 3) {
		if err := ping(busy, busyRd); err != nil {
			t.Fatalf("a client sending every %v was disconnected: %v", timeout/3, err)
		}
	}
	if err := <-blocked; err != nil {
		t.Fatalf("a client blocked for longer than the timeout: %v", err)
	}
	idle.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := idleRd.ReadByte(); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("an idle client was not disconnected after %v: read %v", 4*timeout, err)
	}

	got, err := ts.client(t).ConfigGet(ctx, "timeout").Result()
	if err != nil || got["timeout"] != "0" { // 300 ms: 0 whole seconds
		t.Fatalf("CONFIG GET timeout = %v, %v", got, err)
	}
}
