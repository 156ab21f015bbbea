package broker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestGoRedisRESP3 uses go-redis in its default mode, which opens every
// connection with HELLO 3 (and CLIENT SETINFO), through its typed API: each
// call parses a RESP3 reply kind (maps, sets, doubles, nulls, verbatim
// strings, nested pairs), including replies to pipelines, to EXEC and to
// blocked commands woken by another client.
func TestGoRedisRESP3(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: ts.addr, MaxRetries: -1, ReadTimeout: 10 * time.Second})
	t.Cleanup(func() { c.Close() })

	info, err := c.ClientInfo(ctx).Result()
	if err != nil {
		t.Fatalf("CLIENT INFO: %v", err)
	}
	if info.Resp != 3 {
		t.Fatalf("CLIENT INFO resp = %d, want 3 (go-redis did not switch to RESP3)", info.Resp)
	}
	raw, err := c.Do(ctx, "CLIENT", "INFO").Result()
	if err != nil || !strings.Contains(raw.(string), "resp=3") {
		t.Fatalf("CLIENT INFO = %v, %v", raw, err)
	}

	if err := c.HSet(ctx, "h", "f", "v", "g", "w").Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := c.HGetAll(ctx, "h").Result(); err != nil || len(got) != 2 || got["f"] != "v" || got["g"] != "w" {
		t.Fatalf("HGETALL = %v, %v", got, err)
	}
	if v, err := c.Do(ctx, "HGETALL", "h").Result(); err != nil {
		t.Fatal(err)
	} else if m, ok := v.(map[any]any); !ok || m["f"] != "v" {
		t.Fatalf("HGETALL through Do = %#v, want a map", v)
	}
	c.SAdd(ctx, "s", "a", "b")
	if got, err := c.SMembers(ctx, "s").Result(); err != nil || len(got) != 2 {
		t.Fatalf("SMEMBERS = %v, %v", got, err)
	}

	c.ZAdd(ctx, "z", redis.Z{Score: 1.5, Member: "a"}, redis.Z{Score: 2, Member: "b"})
	if got, err := c.ZRangeWithScores(ctx, "z", 0, -1).Result(); err != nil || len(got) != 2 || got[0].Score != 1.5 || got[1].Member != "b" {
		t.Fatalf("ZRANGE WITHSCORES = %v, %v", got, err)
	}
	if v, err := c.Do(ctx, "ZSCORE", "z", "a").Result(); err != nil || v != 1.5 {
		t.Fatalf("ZSCORE through Do = %#v, %v, want the double 1.5", v, err)
	}
	if _, err := c.Get(ctx, "nosuch").Result(); err != redis.Nil {
		t.Fatalf("GET missing: %v, want redis.Nil", err)
	}
	if got, err := c.ConfigGet(ctx, "maxclients").Result(); err != nil || got["maxclients"] == "" {
		t.Fatalf("CONFIG GET = %v, %v", got, err)
	}
	if got, err := c.Info(ctx, "server").Result(); err != nil || !strings.Contains(got, "redis_version:") {
		t.Fatalf("INFO = %q, %v", got, err)
	}

	// MULTI/EXEC in a pipeline: each reply in its RESP3 kind.
	var hgetall *redis.MapStringStringCmd
	var zscore *redis.FloatCmd
	if _, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		hgetall = p.HGetAll(ctx, "h")
		zscore = p.ZScore(ctx, "z", "b")
		p.Incr(ctx, "n")
		return nil
	}); err != nil {
		t.Fatalf("EXEC: %v", err)
	}
	if hgetall.Val()["g"] != "w" || zscore.Val() != 2 {
		t.Fatalf("inside EXEC: HGETALL %v, ZSCORE %v", hgetall.Val(), zscore.Val())
	}

	// Streams: XREAD's reply is a map by stream key in RESP3.
	c.XAdd(ctx, &redis.XAddArgs{Stream: "st", ID: "1-1", Values: []string{"f", "v"}})
	got, err := c.XRead(ctx, &redis.XReadArgs{Streams: []string{"st", "0"}, Block: -1}).Result()
	if err != nil || len(got) != 1 || got[0].Stream != "st" || got[0].Messages[0].ID != "1-1" {
		t.Fatalf("XREAD = %v, %v", got, err)
	}
	if _, err := c.XRead(ctx, &redis.XReadArgs{Streams: []string{"st", "$"}, Block: 10 * time.Millisecond}).Result(); err != redis.Nil {
		t.Fatalf("XREAD BLOCK timeout: %v, want redis.Nil", err)
	}
	c.XGroupCreate(ctx, "st", "g", "0")
	woken := make(chan []redis.XStream, 1)
	reader := redis.NewClient(&redis.Options{Addr: ts.addr, MaxRetries: -1, ReadTimeout: 10 * time.Second})
	t.Cleanup(func() { reader.Close() })
	if _, err := c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "c", Streams: []string{"st", ">"}, Block: -1}).Result(); err != nil {
		t.Fatalf("XREADGROUP: %v", err)
	}
	go func() {
		r, err := reader.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "c2", Streams: []string{"st", ">"}, Block: 5 * time.Second}).Result()
		if err != nil {
			t.Errorf("blocked XREADGROUP: %v", err)
		}
		woken <- r
	}()
	waitBlocked(t, c, 1)
	c.XAdd(ctx, &redis.XAddArgs{Stream: "st", ID: "2-1", Values: []string{"k", "x"}})
	if r := <-woken; len(r) != 1 || len(r[0].Messages) != 1 || r[0].Messages[0].ID != "2-1" {
		t.Fatalf("woken XREADGROUP = %v", r)
	}
	if si, err := c.XInfoStream(ctx, "st").Result(); err != nil || si.Length != 2 || si.Groups != 1 {
		t.Fatalf("XINFO STREAM = %+v, %v", si, err)
	}
	if gi, err := c.XInfoGroups(ctx, "st").Result(); err != nil || len(gi) != 1 || gi[0].Pending != 2 {
		t.Fatalf("XINFO GROUPS = %+v, %v", gi, err)
	}

	// A blocked BLPOP served by another client's push.
	popped := make(chan []string, 1)
	go func() {
		r, err := reader.BLPop(ctx, 5*time.Second, "q").Result()
		if err != nil {
			t.Errorf("BLPOP: %v", err)
		}
		popped <- r
	}()
	waitBlocked(t, c, 1)
	c.RPush(ctx, "q", "job")
	if r := <-popped; len(r) != 2 || r[0] != "q" || r[1] != "job" {
		t.Fatalf("BLPOP = %v", r)
	}
	if v, err := reader.Do(ctx, "BLPOP", "q", "0.01").Result(); err != redis.Nil {
		t.Fatalf("BLPOP timeout: %v, %v, want redis.Nil", v, err)
	}
}
