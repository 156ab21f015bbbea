package broker

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
)

// TestBlockedConsumersCostFlatInW blocks W workers on one consumer group
// (XREADGROUP ... BLOCK 0 STREAMS s >, re-issued after each delivery), adds
// entries one at a time once every worker is blocked again, and checks that
// every entry is delivered exactly once and that the storage work per
// delivered entry (the store's iterator stats) is the same with 64 workers
// as with 2: the writer serves the first worker in line and makes one more
// attempt for the group, however many wait.
func TestBlockedConsumersCostFlatInW(t *testing.T) {
	const entries = 60
	per := map[int]materialize.IterStats{}
	for _, w := range []int{2, 64} {
		ts := newTestServer(t)
		admin := ts.client(t)
		mustDo(t, admin, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
		ctx, cancel := context.WithCancel(context.Background())
		var (
			mu      sync.Mutex
			got     = map[string]int{}
			wg      sync.WaitGroup
			workers []*redis.Client
		)
		for i := range w {
			c := redis.NewClient(&redis.Options{Addr: ts.addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1, PoolSize: 1})
			workers = append(workers, c)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					r, err := c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: fmt.Sprint("c", i), Streams: []string{"s", ">"}, Count: 1, Block: 0}).Result()
					if err != nil {
						return
					}
					mu.Lock()
					for _, m := range r[0].Messages {
						got[m.ID]++
					}
					mu.Unlock()
				}
			}()
		}
		var before materialize.IterStats
		for i := range entries {
			waitBlocked(t, admin, int64(w))
			if i == 0 {
				before = ts.store.IterStats()
			}
			mustDo(t, admin, "XADD", "s", "*", "f", "v")
		}
		waitBlocked(t, admin, int64(w))
		per[w] = ts.store.IterStats().Sub(before)
		cancel()
		for _, c := range workers {
			c.Close() // ends the blocked reads
		}
		wg.Wait()
		mu.Lock()
		if len(got) != entries {
			t.Errorf("W=%d: %d distinct entries delivered, want %d", w, len(got), entries)
		}
		for id, n := range got {
			if n != 1 {
				t.Errorf("W=%d: entry %s delivered %d times", w, id, n)
			}
		}
		mu.Unlock()
	}
	few, many := per[2], per[64]
	t.Logf("storage work for %d entries: W=2 %+v; W=64 %+v", entries, few, many)
	for _, f := range []struct {
		name      string
		few, many uint64
	}{
		{"point lookups", few.Gets, many.Gets},
		{"iterators", few.Iterators, many.Iterators},
		{"seeks", few.Seeks, many.Seeks},
		{"points", few.Points, many.Points},
	} {
		if f.many > f.few+f.few/10+2 {
			t.Errorf("%s for %d entries: %d with 64 workers, %d with 2", f.name, entries, f.many, f.few)
		}
	}
}

// TestConsumerLeftBeforeServe: a queued client whose connection ended is
// dropped by the writer without a result, and its wait returns at once
// instead of waiting for a result that never comes.
func TestConsumerLeftBeforeServe(t *testing.T) {
	c := newConsumers(func(string, ...any) {})
	ctx, cancel := context.WithCancel(context.Background())
	w := &consumerWaiter{keys: []waitKey{{0, "s"}}, queue: waitQueue{group: "g"}, ctx: ctx, res: make(chan waitResult, 1),
		deliver: func(*materialize.View, []byte) ([]codec.Event, bool) {
			t.Error("a client that left was served")
			return nil, false
		}}
	c.queue(w)
	cancel()
	store, err := materialize.Open(materialize.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	c.ready(store.View(), []codec.Event{codec.XAddEvent(0, []byte("s"), codec.ID{Ms: 1}, nil)}, func(materialize.Served) {
		t.Error("a client that left was recorded as served")
	})
	done := make(chan bool)
	go func() { _, ok := c.wait(w, 0); done <- ok }()
	select {
	case ok := <-done:
		if ok {
			t.Error("wait reported a result for a client that was never served")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("wait never returned for a client dropped by the writer")
	}
	if c.n.Load() != 0 {
		t.Errorf("%d waiters still counted", c.n.Load())
	}
}
