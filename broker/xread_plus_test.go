package broker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestXReadPlus: the + ID of XREAD (Redis 7.4) reads the last entry of a
// stream. The Debian redis-server (7.0) rejects it, so the expected replies
// come from https://redis.io/docs/latest/commands/xread/ ("The special +
// ID": "+ means the last entry in the stream") and from Redis's change that
// added it (redis/redis#13117: the read starts just below the stream's last
// ID, so a deleted last entry reads as nothing, and a missing key reads from
// 0-0; a stream whose last ID is 0-0 is refused with "the stream last
// element ID is 0-0"). XREADGROUP refuses + with 7.4's error.
func TestXReadPlus(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	ctx := context.Background()
	// Block: -1 leaves BLOCK out (go-redis sends BLOCK 0 for 0).
	for _, id := range []string{"1-0", "1-1", "2-0"} {
		if err := c.XAdd(ctx, &redis.XAddArgs{Stream: "s", ID: id, Values: []any{"f", id}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	c.XAdd(ctx, &redis.XAddArgs{Stream: "t", ID: "1-0", Values: []any{"f", "t"}}) // last ID 1-0: + reads after 0-MAX

	got, err := c.XRead(ctx, &redis.XReadArgs{Streams: []string{"s", "t", "+", "+"}, Count: 10, Block: -1}).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Stream != "s" || len(got[0].Messages) != 1 || got[0].Messages[0].ID != "2-0" ||
		got[1].Stream != "t" || len(got[1].Messages) != 1 || got[1].Messages[0].ID != "1-0" {
		t.Fatalf("XREAD STREAMS s t + + = %+v, want s's 2-0 and t's 1-0", got)
	}

	// A deleted last entry: the read starts at the last ID, which is gone.
	c.XDel(ctx, "s", "2-0")
	if err := c.XRead(ctx, &redis.XReadArgs{Streams: []string{"s", "+"}, Block: -1}).Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("XREAD after deleting the last entry: %v, want nil", err)
	}

	// Never added to: Redis's error. A missing key reads from 0-0.
	c.XGroupCreateMkStream(ctx, "empty", "g", "$")
	if err := c.XRead(ctx, &redis.XReadArgs{Streams: []string{"empty", "+"}, Block: -1}).Err(); err == nil || err.Error() != "ERR the stream last element ID is 0-0" {
		t.Fatalf("XREAD on a stream never added to: %v", err)
	}
	if err := c.XRead(ctx, &redis.XReadArgs{Streams: []string{"nokey", "+"}, Block: -1}).Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("XREAD on a missing key: %v, want nil", err)
	}

	// Blocking on a missing key with +: the first entry added is served.
	done := make(chan []redis.XStream, 1)
	go func() {
		r, _ := ts.client(t).XRead(ctx, &redis.XReadArgs{Streams: []string{"later", "+"}, Block: 5 * time.Second}).Result()
		done <- r
	}()
	waitBlocked(t, c, 1)
	c.XAdd(ctx, &redis.XAddArgs{Stream: "later", ID: "7-0", Values: []any{"f", "v"}})
	if r := <-done; len(r) != 1 || len(r[0].Messages) != 1 || r[0].Messages[0].ID != "7-0" {
		t.Fatalf("blocked XREAD + = %+v, want later's 7-0", r)
	}

	c.XGroupCreate(ctx, "s", "g", "0")
	err = c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "c", Streams: []string{"s", "+"}, Block: -1}).Err()
	if want := "ERR The + ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The + ID would just return an empty result set."; err == nil || err.Error() != want {
		t.Fatalf("XREADGROUP with +: %v", err)
	}
}
