package broker

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestSmokeXAddXReadGroup(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	ctx := context.Background()
	id := mustDo(t, c, "XADD", "s", "1-1", "f", "v")
	if id != "1-1" {
		t.Fatalf("XADD = %v", id)
	}
	mustDo(t, c, "XGROUP", "CREATE", "s", "g", "0")
	res, err := c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "c", Streams: []string{"s", ">"}}).Result()
	if err != nil || len(res) != 1 || len(res[0].Messages) != 1 || res[0].Messages[0].ID != "1-1" {
		t.Fatalf("XREADGROUP = %v, %v", res, err)
	}
	// Blocked reader woken by a second client's XADD.
	got := make(chan string, 1)
	go func() {
		r, err := c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "c", Streams: []string{"s", ">"}, Block: 5 * time.Second}).Result()
		if err != nil || len(r) == 0 {
			got <- "err"
			return
		}
		got <- r[0].Messages[0].ID
	}()
	time.Sleep(100 * time.Millisecond)
	c2 := ts.client(t)
	mustDo(t, c2, "XADD", "s", "2-1", "f", "v")
	select {
	case id := <-got:
		if id != "2-1" {
			t.Fatalf("woken with %v", id)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("blocked XREADGROUP not woken")
	}
}
