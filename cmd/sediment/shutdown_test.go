package main

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestShutdownCommand: SHUTDOWN ends the process as SIGTERM does, with
// exit status 0, and what was written is there after a restart.
func TestShutdownCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a child server")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	port := freePort(t)
	child := startChild(t, bin, dir, port)
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port), MaxRetries: -1})
	defer c.Close()
	if err := c.Set(ctx, "kept", "yes", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, "SHUTDOWN", "NOW").Err(); err == nil {
		t.Fatal("SHUTDOWN replied; Redis closes the connection instead")
	}
	done := make(chan error, 1)
	go func() { done <- child.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("sediment exited with %v after SHUTDOWN, want status 0", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("sediment still running 10 s after SHUTDOWN")
	}
	startChild(t, bin, dir, port)
	if v, err := c.Get(ctx, "kept").Result(); err != nil || v != "yes" {
		t.Fatalf("after the restart kept = %q, %v", v, err)
	}
}
