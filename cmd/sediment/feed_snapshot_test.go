package main

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sediment-dev/sediment/broker"
	"github.com/sediment-dev/sediment/feed"
)

// TestFeedSnapshot: `sediment feed --snapshot --type hash`, started while
// two clients write hashes and strings, prints a snapshot of the hashes
// at one sequence S first (every line "S snap"), then exactly the hash
// events of the records after S, each once and in order: the lines
// CHANGES FROM S+1 TYPE hash gives, formatted the same way.
func TestFeedSnapshot(t *testing.T) {
	natsPort := freePort(t)
	srv, err := broker.New(broker.Options{Dir: t.TempDir(), NATSListen: "127.0.0.1:" + strconv.Itoa(natsPort),
		NATSFeedPassword: "fp"})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), Protocol: 2, DisableIdentity: true})
	defer c.Close()
	for i := range 50 {
		c.HSet(ctx, fmt.Sprintf("h:%d", i), "f", i, "g", "x")
	}

	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := range 2 {
		wc := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), Protocol: 2, DisableIdentity: true})
		defer wc.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				k := fmt.Sprintf("h:%d", (i*7+w)%60)
				switch i % 4 {
				case 0:
					wc.HSet(ctx, k, "f", i)
				case 1:
					wc.HDel(ctx, k, "g")
				case 2:
					wc.Set(ctx, fmt.Sprintf("s:%d", i%10), i, 0)
				default:
					wc.Del(ctx, k)
				}
			}
		}()
	}
	time.Sleep(100 * time.Millisecond)

	var out syncBuffer
	done := make(chan struct{})
	ended := make(chan error, 1)
	go func() {
		ended <- runFeed([]string{"--nats-url", "nats://127.0.0.1:" + strconv.Itoa(natsPort), "--user", "feed", "--snapshot", "--type", "hash"},
			func(k string) string {
				if k == "SEDIMENT_NATS_FEED_PASSWORD" {
					return "fp"
				}
				return ""
			}, &out, done)
	}()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(out.String(), " snap "); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no snapshot after 10 s: %q", out.String())
		}
	}
	time.Sleep(200 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	c.HSet(ctx, "marker", "f", "end")
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(out.String(), `"marker"`); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no live event after 10 s: %q", out.String())
		}
	}
	close(done)
	if err := <-ended; err != nil {
		t.Fatal(err)
	}

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var seq uint64
	var snap, live []string
	for _, l := range lines {
		f := strings.Fields(l)
		if f[1] == "snap" {
			if len(live) > 0 {
				t.Fatalf("a snapshot line after a live one: %s", l)
			}
			n, _ := strconv.ParseUint(f[0], 10, 64)
			if seq != 0 && n != seq {
				t.Fatalf("snapshot lines at %d and %d", seq, n)
			}
			seq = n
			snap = append(snap, l)
			continue
		}
		live = append(live, l)
	}
	if len(snap) < 40 {
		t.Fatalf("%d snapshot lines:\n%s", len(snap), out.String())
	}
	var want []string
	last := int64(seq + 1)
	for {
		v, err := c.Do(ctx, "CHANGES", "FROM", last, "COUNT", 10000, "TYPE", "hash").Slice()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range v[1].([]any) {
			m, err := feed.Decode([]byte(p.(string)))
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, formatEvent(m))
		}
		if v[0].(int64) == last {
			break
		}
		last = v[0].(int64)
	}
	if strings.Join(live, "\n") != strings.Join(want, "\n") {
		t.Fatalf("after the snapshot at %d, sediment feed printed %d lines, CHANGES FROM %d has %d:\n%s\n---\n%s",
			seq, len(live), seq+1, len(want), strings.Join(live, "\n"), strings.Join(want, "\n"))
	}
	t.Logf("snapshot at %d: %d lines; then %d live lines", seq, len(snap), len(live))
}
