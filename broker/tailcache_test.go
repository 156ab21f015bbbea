package broker

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestTailCacheReads: XREADGROUP `>` reads of entries just added are
// answered by the writer's tail cache (INFO stats sediment_tail_cache_hits
// counts them), and return exactly the entries, after plain reads, a
// blocked read woken by an XADD, an XDEL of an unread entry, and a DEL and
// re-creation of the stream.
func TestTailCacheReads(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	ctx := context.Background()
	hits := func() int {
		n, err := strconv.Atoi(infoField(t, c, "stats", "sediment_tail_cache_hits"))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	read := func(group, consumer string, block time.Duration) []redis.XMessage {
		t.Helper()
		res, err := c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: group, Consumer: consumer, Streams: []string{"s", ">"}, Count: 10, Block: block}).Result()
		if err == redis.Nil {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		return res[0].Messages
	}
	ids := func(ms []redis.XMessage) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.ID+"="+m.Values["f"].(string))
		}
		return out
	}
	expect := func(got []redis.XMessage, want ...string) {
		t.Helper()
		if g := ids(got); !slices.Equal(g, want) {
			t.Fatalf("read %v, want %v", g, want)
		}
	}
	add := func(id, v string) {
		t.Helper()
		if err := c.XAdd(ctx, &redis.XAddArgs{Stream: "s", ID: id, Values: []any{"f", v}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	mustDo(t, c, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
	h0 := hits()
	add("1-1", "a")
	add("1-2", "b")
	add("1-3", "c")
	expect(read("g", "c1", -1), "1-1=a", "1-2=b", "1-3=c")
	if hits() == h0 {
		t.Errorf("the read of new entries did not use the tail cache")
	}
	// A blocked read, woken by the XADD: served in the XADD's commit.
	done := make(chan []redis.XMessage)
	go func() {
		res, err := ts.client(t).XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "c2", Streams: []string{"s", ">"}, Count: 10, Block: 5 * time.Second}).Result()
		if err != nil {
			t.Error(err)
		}
		var ms []redis.XMessage
		if len(res) > 0 {
			ms = res[0].Messages
		}
		done <- ms
	}()
	for blocked := "0"; blocked == "0"; blocked = infoField(t, c, "clients", "blocked_clients") {
		time.Sleep(5 * time.Millisecond)
	}
	add("2-1", "d")
	expect(<-done, "2-1=d")
	// An unread entry deleted before the read.
	add("3-1", "e")
	add("3-2", "f")
	mustDo(t, c, "XDEL", "s", "3-1")
	expect(read("g", "c1", -1), "3-2=f")
	// The stream deleted and created again: its new entries only.
	mustDo(t, c, "DEL", "s")
	mustDo(t, c, "XGROUP", "CREATE", "s", "g", "0", "MKSTREAM")
	add("1-1", "x")
	expect(read("g", "c1", -1), "1-1=x")
	expect(read("g", "c1", -1))
}
