package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestCrashAppendfsyncAlways runs sediment as a child process with
// --appendfsync always, has 8 clients write concurrently, kills the child
// with SIGKILL mid-load, restarts it on the same --dir and checks that every
// acknowledged XADD survived: under always, no reply precedes its fsync.
func TestCrashAppendfsyncAlways(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a child server")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	port := freePort(t)
	child := startChild(t, bin, dir, port)

	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port), MaxRetries: -1, PoolSize: 8})
	defer c.Close()
	var (
		mu    sync.Mutex
		acked = map[string]bool{} // stream ID -> acknowledged
		wg    sync.WaitGroup
	)
	ctx := context.Background()
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				id, err := c.XAdd(ctx, &redis.XAddArgs{Stream: "crash", Values: []any{"w", w, "i", i}}).Result()
				if err != nil {
					return // the server died
				}
				mu.Lock()
				acked[id] = true
				mu.Unlock()
			}
		}(w)
	}
	time.Sleep(700 * time.Millisecond)
	child.Process.Signal(syscall.SIGKILL)
	child.Wait()
	wg.Wait()
	c.Close()
	if len(acked) == 0 {
		t.Fatal("no XADD was acknowledged before the kill")
	}

	startChild(t, bin, dir, port)
	c2 := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port)})
	defer c2.Close()
	entries, err := c2.XRange(ctx, "crash", "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	have := make(map[string]bool, len(entries))
	for _, e := range entries {
		have[e.ID] = true
	}
	lost := 0
	for id := range acked {
		if !have[id] {
			lost++
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged entries lost after SIGKILL", lost, len(acked))
	}
	t.Logf("%d acknowledged entries, all present after SIGKILL and restart (%d stored)", len(acked), len(entries))
}

// buildBinary builds the sediment binary into a temp dir and returns its
// path.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sediment")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startChild starts sediment on dir and port and waits until it answers PING.
func startChild(t *testing.T, bin, dir string, port int) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, "--dir", dir, "--port", strconv.Itoa(port), "--appendfsync", "always", "--log-level", "warn", "--nats-listen", "off")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	c := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port), MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if c.Ping(context.Background()).Err() == nil {
			return cmd
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("child server did not answer PING")
	return nil
}
