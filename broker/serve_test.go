package broker

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

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
