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
