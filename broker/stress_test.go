package broker

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestConsumerGroupStress runs producers and blocking consumers of one group
// concurrently and checks the consumer-group contract end to end: every
// entry added is delivered exactly once across the consumers, and once all
// are acknowledged the PEL is empty.
func TestConsumerGroupStress(t *testing.T) {
	const (
		producers   = 4
		perProducer = 250
		consumers   = 4
		total       = producers * perProducer
	)
	ts := newTestServer(t)
	admin := ts.client(t)
	mustDo(t, admin, "XGROUP", "CREATE", "jobs", "workers", "$", "MKSTREAM")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	var (
		mu        sync.Mutex
		delivered = map[string]string{} // entry ID -> consumer
		dups      []string
		wg        sync.WaitGroup
		done      = make(chan struct{})
	)
	for i := 0; i < consumers; i++ {
		c := ts.client(t)
		name := fmt.Sprintf("c%d", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				res, err := c.XReadGroup(ctx, &redis.XReadGroupArgs{
					Group: "workers", Consumer: name, Streams: []string{"jobs", ">"}, Count: 10, Block: 50 * time.Millisecond,
				}).Result()
				if err == redis.Nil {
					continue
				}
				if err != nil {
					t.Errorf("%s: XREADGROUP: %v", name, err)
					return
				}
				var ids []string
				mu.Lock()
				for _, m := range res[0].Messages {
					if prev, ok := delivered[m.ID]; ok {
						dups = append(dups, m.ID+" to "+prev+" and "+name)
					}
					delivered[m.ID] = name
					ids = append(ids, m.ID)
				}
				mu.Unlock()
				if err := c.XAck(ctx, "jobs", "workers", ids...).Err(); err != nil {
					t.Errorf("%s: XACK: %v", name, err)
					return
				}
			}
		}()
	}
	var pwg sync.WaitGroup
	for p := 0; p < producers; p++ {
		c := ts.client(t)
		pwg.Add(1)
		go func(p int) {
			defer pwg.Done()
			for i := 0; i < perProducer; i++ {
				if err := c.XAdd(ctx, &redis.XAddArgs{Stream: "jobs", Values: []any{"p", p, "i", i}}).Err(); err != nil {
					t.Errorf("XADD: %v", err)
					return
				}
			}
		}(p)
	}
	pwg.Wait()
	for {
		mu.Lock()
		n := len(delivered)
		mu.Unlock()
		if n >= total || ctx.Err() != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(done)
	wg.Wait()
	if len(dups) > 0 {
		t.Fatalf("%d entries delivered twice, e.g. %s", len(dups), dups[0])
	}
	if len(delivered) != total {
		t.Fatalf("delivered %d of %d entries", len(delivered), total)
	}
	if n := mustDo(t, admin, "XLEN", "jobs"); n != int64(total) {
		t.Fatalf("XLEN = %v, want %d", n, total)
	}
	sum := mustDo(t, admin, "XPENDING", "jobs", "workers").([]any)
	if sum[0] != int64(0) {
		t.Fatalf("PEL not empty after all acks: %v", sum)
	}
}
