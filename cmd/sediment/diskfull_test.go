package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestDiskFull runs the server on a 48 MiB tmpfs and fills it, as the
// faults issue's report did (XADDs of 4 KB under appendfsync always, from
// four clients): the process never stops, writes are refused with MISCONF
// (first at the reserve, then, with the reserve off, at the real ENOSPC),
// reads are served, writes resume by themselves once the filesystem grows,
// and after a restart every acknowledged entry is there. Then it starts on
// a filesystem below the reserve (reads served, writes refused) and on a
// full one (served the same way, or a clean exit naming the cause).
//
// It needs root to mount the tmpfs, and skips without it.
func TestDiskFull(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a filesystem")
	}
	mnt := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs (needs root): %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	remount := func(size string) {
		t.Helper()
		if out, err := exec.Command("mount", "-o", "remount,size="+size, mnt).CombinedOutput(); err != nil {
			t.Fatalf("remount: %v %s", err, out)
		}
	}
	bin := buildBinary(t)
	dir := filepath.Join(mnt, "data")
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	ctx := context.Background()

	child := startDiskChild(t, bin, dir, port, "8")
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, PoolSize: 8})
	defer c.Close()

	var mu sync.Mutex
	acked := map[string]bool{}
	// fill runs four writers until each has had 20 refusals in a row, and
	// returns the refusals' texts.
	fill := func() map[string]int {
		refusals := map[string]int{}
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				val := bytes.Repeat([]byte{byte('a' + w)}, 4000)
				for inARow := 0; inARow < 20; {
					id, err := c.XAdd(ctx, &redis.XAddArgs{Stream: "s", Values: []any{"w", w, "v", val}}).Result()
					mu.Lock()
					if err == nil {
						acked[id], inARow = true, 0
					} else {
						refusals[err.Error()]++
						inARow++
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		return refusals
	}
	// checkRefusals: every refusal is MISCONF for no space left, naming
	// one of where (the change log, or the data files when a memtable
	// flush met the full filesystem first), and contains want.
	checkRefusals := func(refusals map[string]int, want string, where ...string) {
		t.Helper()
		for msg := range refusals {
			ok := false
			for _, w := range where {
				ok = ok || strings.HasPrefix(msg, "MISCONF Errors writing to the "+w+": no space left on device")
			}
			if !ok || !strings.Contains(msg, want) {
				t.Fatalf("refusal %q, want MISCONF for %v ... %q (all: %v)", msg, where, want, refusals)
			}
		}
		if n, err := c.XLen(ctx, "s").Result(); err != nil || n != int64(len(acked)) {
			t.Fatalf("XLEN during the fault = %d, %v; want the %d acknowledged", n, err, len(acked))
		}
		if err := c.Ping(ctx).Err(); err == nil || !strings.HasPrefix(err.Error(), "MISCONF") {
			t.Fatalf("PING during the fault: %v, want MISCONF", err)
		}
	}

	// At the reserve (8 MiB of the 48).
	checkRefusals(fill(), "below the reserve of 8 MiB", "change log")
	atReserve := len(acked)
	// The reserve off: the change log fills the filesystem.
	if err := c.ConfigSet(ctx, "min-free-disk", "0").Err(); err != nil {
		t.Fatal(err)
	}
	checkRefusals(fill(), "device", "change log", "data files")
	if len(acked) <= atReserve {
		t.Fatalf("no write accepted after the reserve was lowered (%d)", len(acked))
	}
	if child.exited() {
		t.Fatal("the server stopped on a full filesystem")
	}
	// Room again: writes resume without a restart.
	remount("96m")
	deadline := time.Now().Add(5 * time.Second)
	for {
		id, err := c.XAdd(ctx, &redis.XAddArgs{Stream: "s", Values: []any{"after", "room"}}).Result()
		if err == nil {
			acked[id] = true
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("writes not resumed 5 s after the filesystem grew: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("%d entries acknowledged (%d at the reserve)", len(acked), atReserve)
	child.stop(t)

	// Every acknowledged entry after a restart.
	child = startDiskChild(t, bin, dir, port, "0")
	ids, err := c.XRange(ctx, "s", "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != len(acked) {
		t.Fatalf("%d entries after the restart, %d acknowledged", len(ids), len(acked))
	}
	for _, m := range ids {
		if !acked[m.ID] {
			t.Fatalf("entry %s after the restart was never acknowledged", m.ID)
		}
	}
	child.stop(t)

	// Start-up below the reserve: reads served, writes refused.
	filler := filepath.Join(mnt, "filler")
	fillTo(t, filler, mnt, 4<<20)
	child = startDiskChild(t, bin, dir, port, "8")
	if n, err := c.XLen(ctx, "s").Result(); err != nil || n != int64(len(acked)) {
		t.Fatalf("XLEN after a start below the reserve = %d, %v", n, err)
	}
	if err := c.Set(ctx, "k", "v", 0).Err(); err == nil || !strings.Contains(err.Error(), "below the reserve of 8 MiB") {
		t.Fatalf("SET after a start below the reserve: %v", err)
	}
	child.stop(t)

	// Start-up on a full filesystem: served as above, or a clean exit
	// that names the cause; never a hang.
	fillTo(t, filler, mnt, 0)
	cmd, stderr := spawnDiskChild(t, bin, dir, port, "8")
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline = time.Now().Add(20 * time.Second)
	for {
		select {
		case err := <-exited:
			if !strings.Contains(stderr.String(), "no space left on device") || strings.Contains(stderr.String(), "goroutine ") {
				t.Fatalf("exit on a full filesystem (%v) without a clear message:\n%s", err, stderr.String())
			}
			t.Logf("start-up on a full filesystem: exited (%v):\n%s", err, stderr.String())
			return
		default:
		}
		if n, err := c.XLen(ctx, "s").Result(); err == nil {
			if n != int64(len(acked)) {
				t.Fatalf("XLEN on a full filesystem = %d, want %d", n, len(acked))
			}
			if err := c.Set(ctx, "k", "v", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "MISCONF") {
				t.Fatalf("SET on a full filesystem: %v", err)
			}
			t.Log("start-up on a full filesystem: serves reads, refuses writes")
			cmd.Process.Signal(syscall.SIGTERM)
			<-exited
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("start-up on a full filesystem neither serves nor exits after 20 s:\n%s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// fillTo grows (or shrinks) the file at path so that the filesystem at mnt
// has about free bytes left.
func fillTo(t *testing.T, path, mnt string, free int64) {
	t.Helper()
	os.Remove(path)
	var st syscall.Statfs_t
	if err := syscall.Statfs(mnt, &st); err != nil {
		t.Fatal(err)
	}
	n := int64(st.Bavail)*st.Bsize - free
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for n > 0 {
		k, err := f.Write(buf[:min(int64(len(buf)), n)])
		n -= int64(k)
		if err != nil {
			break // full: as much as it takes
		}
	}
}

type diskChild struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func (d *diskChild) exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM and waits for the exit (at most 10 s).
func (d *diskChild) stop(t *testing.T) {
	t.Helper()
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not stop within 10 s of SIGTERM")
	}
}

func spawnDiskChild(t *testing.T, bin, dir string, port int, minFreeMB string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "--dir", dir, "--port", strconv.Itoa(port), "--appendfsync", "always",
		"--log-level", "warn", "--nats-listen", "off", "--min-free-disk", minFreeMB)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd, &stderr
}

// startDiskChild starts the server and waits until it answers (PONG, or
// MISCONF when it starts below the reserve).
func startDiskChild(t *testing.T, bin, dir string, port int, minFreeMB string) *diskChild {
	t.Helper()
	cmd, stderr := spawnDiskChild(t, bin, dir, port, minFreeMB)
	d := &diskChild{cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(d.done) }()
	c := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port), MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if d.exited() {
			t.Fatalf("the server exited while starting:\n%s", stderr.String())
		}
		if err := c.Ping(context.Background()).Err(); err == nil || strings.HasPrefix(err.Error(), "MISCONF") {
			return d
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the server did not answer within 20 s:\n%s", stderr.String())
	return nil
}
