package broker

import (
	"context"
	"testing"
)

// TestXInfoStreamParsesInGoRedis: go-redis (like ioredis and node-redis)
// parses every field of XINFO STREAM's reply and fails on a missing one;
// radix-tree-keys and radix-tree-nodes were missing.
func TestXInfoStreamParsesInGoRedis(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	ctx := context.Background()
	var first, last string
	for i := 0; i < 250; i++ {
		id := mustDo(t, c, "XADD", "s", "*", "f", i).(string)
		if i == 0 {
			first = id
		}
		last = id
	}
	mustDo(t, c, "XGROUP", "CREATE", "s", "g", "0")
	info, err := c.XInfoStream(ctx, "s").Result()
	if err != nil {
		t.Fatalf("XInfoStream: %v", err)
	}
	if info.Length != 250 || info.RadixTreeKeys != 3 || info.Groups != 1 ||
		info.FirstEntry.ID != first || info.LastEntry.ID != last || info.LastGeneratedID != last || info.EntriesAdded != 250 {
		t.Fatalf("XInfoStream = %+v", info)
	}
}

// TestXInfoStreamFullParsesInGoRedis: XINFO STREAM FULL as go-redis reads
// it (XInfoStreamFull), with a group, its PEL and two consumers.
func TestXInfoStreamFullParsesInGoRedis(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	ctx := context.Background()
	for i := 0; i < 5; i++ {
		mustDo(t, c, "XADD", "s", "*", "f", i)
	}
	mustDo(t, c, "XGROUP", "CREATE", "s", "g", "0")
	mustDo(t, c, "XREADGROUP", "GROUP", "g", "c1", "COUNT", "3", "STREAMS", "s", ">")
	mustDo(t, c, "XGROUP", "CREATECONSUMER", "s", "g", "c2")
	full, err := c.XInfoStreamFull(ctx, "s", 2).Result()
	if err != nil {
		t.Fatalf("XInfoStreamFull: %v", err)
	}
	if full.Length != 5 || len(full.Entries) != 2 || len(full.Groups) != 1 {
		t.Fatalf("XInfoStreamFull = %+v", full)
	}
	g := full.Groups[0]
	if g.Name != "g" || g.PelCount != 3 || len(g.Pending) != 2 || len(g.Consumers) != 2 ||
		g.Consumers[0].Name != "c1" || g.Consumers[0].PelCount != 3 || len(g.Consumers[0].Pending) != 2 ||
		g.Consumers[1].Name != "c2" || g.Consumers[1].PelCount != 0 || g.Pending[0].Consumer != "c1" ||
		g.Pending[0].DeliveryCount != 1 || g.Consumers[0].SeenTime.IsZero() {
		t.Fatalf("XInfoStreamFull group = %+v", g)
	}
}
