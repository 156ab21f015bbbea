package broker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// changeLogSeq reads INFO persistence's changelog_last_seq.
func changeLogSeq(t testing.TB, c *redis.Client) int64 {
	t.Helper()
	info, err := c.Info(context.Background(), "persistence").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, "changelog_last_seq:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no changelog_last_seq in INFO persistence")
	return 0
}

// TestTxPipelined: go-redis sends MULTI, the commands and EXEC in one
// pipeline; each command sees the ones before it, the replies come back per
// command, and the writes are one change-log record.
func TestTxPipelined(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	ctx := context.Background()
	mustDo(t, c, "SET", "n", "1")
	before := changeLogSeq(t, c)
	var get *redis.StringCmd
	var xlen *redis.IntCmd
	var bad *redis.StringCmd
	cmds, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "a", "x\x00y", 0)
		p.XAdd(ctx, &redis.XAddArgs{Stream: "s", ID: "1-0", Values: []string{"f", "v"}})
		p.XAdd(ctx, &redis.XAddArgs{Stream: "s", ID: "2-0", Values: []string{"f", "v"}})
		bad = p.XAdd(ctx, &redis.XAddArgs{Stream: "s", ID: "1-0", Values: []string{"f", "v"}})
		get = p.Get(ctx, "a")
		xlen = p.XLen(ctx, "s")
		p.Del(ctx, "n")
		return nil
	})
	if err == nil || bad.Err() == nil || !strings.Contains(bad.Err().Error(), "equal or smaller") {
		t.Fatalf("TxPipelined: %v (bad XADD: %v)", err, bad.Err())
	}
	if len(cmds) != 7 || get.Val() != "x\x00y" || xlen.Val() != 2 {
		t.Fatalf("replies: %d cmds, GET %q, XLEN %d", len(cmds), get.Val(), xlen.Val())
	}
	if after := changeLogSeq(t, c); after != before+1 {
		t.Errorf("change log went from %d to %d: want one record for the EXEC", before, after)
	}
	if n := mustDo(t, c, "EXISTS", "n"); n != int64(0) {
		t.Errorf("EXISTS n = %v after the EXEC deleted it", n)
	}
}

// TestWatchRetryLoop: 8 clients each add 1 to a counter 40 times with the
// optimistic-locking loop of go-redis's docs (WATCH, GET, MULTI/SET/EXEC,
// retry on TxFailedErr); no increment is lost.
func TestWatchRetryLoop(t *testing.T) {
	ts := newTestServer(t)
	const clients, each = 8, 40
	ctx := context.Background()
	mustDo(t, ts.client(t), "SET", "counter", "0")
	var wg sync.WaitGroup
	var mu sync.Mutex
	retries := 0
	errs := make(chan error, clients)
	for range clients {
		c := ts.client(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				for {
					err := c.Watch(ctx, func(tx *redis.Tx) error {
						n, err := tx.Get(ctx, "counter").Int()
						if err != nil {
							return err
						}
						_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
							p.Set(ctx, "counter", n+1, 0)
							return nil
						})
						return err
					}, "counter")
					if errors.Is(err, redis.TxFailedErr) {
						mu.Lock()
						retries++
						mu.Unlock()
						continue
					}
					if err != nil {
						errs <- err
						return
					}
					break
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := mustDo(t, ts.client(t), "GET", "counter"); got != fmt.Sprint(clients*each) {
		t.Fatalf("counter = %v, want %d (retries %d)", got, clients*each, retries)
	}
	t.Logf("%d retries", retries)
}

// TestWatchTouchedByOtherClient: a write by another connection between
// WATCH and EXEC aborts the EXEC (null array); one to another key does not.
func TestWatchTouchedByOtherClient(t *testing.T) {
	ts := newTestServer(t)
	c1, c2 := ts.client(t), ts.client(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		other []any
		abort bool
	}{
		{"set", []any{"SET", "a", "other"}, true},
		{"other key", []any{"SET", "b", "other"}, false},
		{"xadd", []any{"XADD", "a2", "*", "f", "v"}, false},
		{"del", []any{"DEL", "a"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mustDo(t, c1, "SET", "a", "0")
			err := c1.Watch(ctx, func(tx *redis.Tx) error {
				mustDo(t, c2, tc.other...)
				_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.Set(ctx, "a", "mine", 0)
					return nil
				})
				return err
			}, "a")
			if tc.abort != errors.Is(err, redis.TxFailedErr) || (!tc.abort && err != nil) {
				t.Fatalf("EXEC: %v, want abort %v", err, tc.abort)
			}
			if got, _ := do(t, c1, "GET", "a"); (got == "mine") == tc.abort {
				t.Errorf("a = %v after EXEC (abort %v)", got, tc.abort)
			}
		})
	}
}

// TestWatchExpiry: a key live at WATCH whose TTL passes before EXEC makes
// EXEC abort, as in Redis; one already past its TTL at WATCH does not.
func TestWatchExpiry(t *testing.T) {
	clk := newFakeClock()
	ts := newTestServer(t, withClock(clk))
	c := ts.client(t)
	ctx := context.Background()
	mustDo(t, c, "SET", "a", "v", "PX", "1000")
	err := c.Watch(ctx, func(tx *redis.Tx) error {
		clk.Advance(2 * time.Second)
		_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, "b", "1", 0)
			return nil
		})
		return err
	}, "a")
	if !errors.Is(err, redis.TxFailedErr) {
		t.Fatalf("EXEC after the watched key expired: %v, want abort", err)
	}
	if n := mustDo(t, c, "EXISTS", "b"); n != int64(0) {
		t.Errorf("the aborted EXEC wrote b")
	}
}

// TestExecWakesBlockedReaders: an EXEC's XADD serves a blocked XREADGROUP
// (writer) and wakes a blocked XREAD (NATS) like a plain XADD.
func TestExecWakesBlockedReaders(t *testing.T) {
	ts := newTestServer(t)
	admin := ts.client(t)
	ctx := context.Background()
	mustDo(t, admin, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
	group := goRead(xreadGroupBlock(ts.client(t), "g", "c", 10*time.Second, "s", ">"))
	plain := goRead(xreadBlock(ts.client(t), 10*time.Second, "s", "$"))
	waitBlocked(t, admin, 2)
	if _, err := admin.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.XAdd(ctx, &redis.XAddArgs{Stream: "s", ID: "1-0", Values: []string{"f", "v"}})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for name, ch := range map[string]<-chan readResult{"XREADGROUP": group, "XREAD": plain} {
		r := awaitRead(t, ch)
		if r.err != nil || len(r.res) != 1 || len(r.res[0].Messages) != 1 || r.res[0].Messages[0].ID != "1-0" {
			t.Errorf("%s woken by EXEC: %v, %v", name, r.res, r.err)
		}
	}
}
