package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sediment-dev/sediment/broker"
	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
)

// checkRun runs `sediment check` with args and returns its exit status,
// standard output and standard error.
func checkRun(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := runCheck(args, func(string) string { return "" }, &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestCheckCommand: `sediment check` refuses a directory a server holds
// (2), passes a clean store (0) and reports a corrupted one (1) with the
// key and both counts, listing at most --max-errors violations; a
// directory without a store and bad flags are errors (2).
func TestCheckCommand(t *testing.T) {
	dir := t.TempDir()
	srv, err := broker.New(broker.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	c := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), Protocol: 2, DisableIdentity: true})
	ctx := context.Background()
	for _, args := range [][]any{
		{"SET", "s", "v", "EX", 1000},
		{"HSET", "h", "f1", "v", "f2", "v"},
		{"SADD", "set", "a", "b"},
		{"ZADD", "z", 1, "a", 2, "b"},
		{"RPUSH", "l", "a", "b", "c"},
		{"LINSERT", "l", "BEFORE", "b", "x"},
		{"XADD", "st", "1-1", "f", "v"},
		{"XADD", "st", "2-1", "f", "v"},
		{"XGROUP", "CREATE", "st", "g", "0"},
		{"XREADGROUP", "GROUP", "g", "c", "COUNT", 1, "STREAMS", "st", ">"},
	} {
		if err := c.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	code, out, errOut := checkRun("--dir", dir)
	if code != 2 || !strings.Contains(errOut, "in use") || out != "" {
		t.Fatalf("check of a running server's directory: exit %d\n%s%s", code, out, errOut)
	}
	c.Close()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}

	code, out, errOut = checkRun("--dir", dir)
	if code != 0 || errOut != "" {
		t.Fatalf("clean store: exit %d\n%s%s", code, out, errOut)
	}
	outputHas(t, out,
		"keys: 6 (1 string, 1 hash, 1 set, 1 zset, 1 list, 1 stream), 1 with a TTL\n",
		"elements: 2 hash fields, 2 set members, 2 zset members, 4 list elements, 2 stream entries\n",
		"consumer groups: 1 groups, 1 consumers, 1 pending entries\n",
		"\nviolations: 0\n",
	)

	// Corrupt it through the public write path: fields written without
	// their metadata's count, and a set member without metadata.
	s, err := materialize.Open(materialize.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(func(*materialize.View) ([]codec.Event, error) {
		return []codec.Event{
			{Op: codec.OpHSet, Key: []byte("h"), Args: [][]byte{[]byte("f3"), []byte("v")}},
			{Op: codec.OpSAdd, Key: []byte("no\x00meta"), Args: [][]byte{[]byte("m")}},
		}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = checkRun("--dir", dir)
	if code != 1 || errOut != "" {
		t.Fatalf("corrupted store: exit %d\n%s%s", code, out, errOut)
	}
	outputHas(t, out,
		"violation: db 0 key \"h\": hash field count: stored 2, counted 3\n",
		"violation: db 0 key \"no\\x00meta\": sub-keys without metadata: stored no metadata, counted 1 S keys",
		"\nviolations: 2\n",
	)
	code, out, _ = checkRun("--dir", dir, "--max-errors", "1")
	if code != 1 || strings.Count(out, "violation: ") != 1 || !strings.Contains(out, "violations: 2 (1 listed: --max-errors)\n") {
		t.Fatalf("--max-errors 1: exit %d\n%s", code, out)
	}

	for _, args := range [][]string{
		{"--dir", filepath.Join(dir, "missing")},
		{"--dir", t.TempDir()},
		{"--max-errors", "x"},
		{"--max-errors", "0", "--dir", dir},
		{"--dir", dir, "extra"},
	} {
		if code, out, errOut := checkRun(args...); code != 2 || out != "" || errOut == "" {
			t.Errorf("check %q: exit %d, want 2\n%s%s", args, code, out, errOut)
		}
	}
	var env bytes.Buffer
	if code := runCheck(nil, func(k string) string {
		if k == "SEDIMENT_DIR" {
			return dir
		}
		return ""
	}, &env, &env); code != 1 {
		t.Errorf("SEDIMENT_DIR: exit %d\n%s", code, env.String())
	}
}

// TestCheckAfterCrash: a server killed with SIGKILL while clients write
// every type leaves a directory whose check (after the replay Open does)
// finds no violation; while the server runs, the binary's check refuses
// its directory (Pebble's lock, another process) with status 2.
func TestCheckAfterCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a child server")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	port := freePort(t)
	child := startChild(t, bin, dir, port)

	cmd := exec.Command(bin, "check", "--dir", dir)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "in use") {
		t.Fatalf("check of a running server's directory: %v\n%s", err, out)
	}

	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port), MaxRetries: -1, PoolSize: 8})
	defer c.Close()
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := func(p string, i int) string { return fmt.Sprintf("%s%d", p, i%5) }
			for i := 0; ; i++ {
				var err error
				switch w {
				case 0:
					err = c.HSet(ctx, k("h", i), fmt.Sprint("f", i%40), i).Err()
				case 1:
					err = c.ZAdd(ctx, k("z", i), redis.Z{Score: float64(i % 97), Member: fmt.Sprint("m", i%3000)}).Err()
				case 2:
					if i%3 == 2 {
						err = c.LPop(ctx, k("l", i)).Err()
					} else {
						err = c.RPush(ctx, k("l", i), i, i+1).Err()
					}
				case 3:
					err = c.XAdd(ctx, &redis.XAddArgs{Stream: "st", MaxLen: 200, Values: []any{"i", i}}).Err()
				case 4:
					c.XGroupCreateMkStream(ctx, "st", "g", "0")
					var res []redis.XStream
					res, err = c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: k("c", i), Streams: []string{"st", ">"}, Count: 5, Block: -1}).Result()
					for _, s := range res {
						if len(s.Messages) > 0 && i%2 == 0 {
							c.XAck(ctx, "st", "g", s.Messages[0].ID)
						}
					}
				case 5:
					err = c.Set(ctx, k("s", i), i, time.Duration(1+i%50)*time.Second).Err()
				}
				if err != nil && err != redis.Nil {
					return // the server died
				}
			}
		}()
	}
	time.Sleep(time.Second)
	child.Process.Signal(syscall.SIGKILL)
	child.Wait()
	wg.Wait()

	cmd = exec.Command(bin, "check", "--dir", dir)
	out, err = cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "\nviolations: 0\n") {
		t.Fatalf("check after SIGKILL: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// outputHas fails the test for each of wants that out lacks.
func outputHas(t *testing.T, out string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
