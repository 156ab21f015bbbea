package broker

import (
	"context"
	"slices"
	"testing"
	"time"
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

// TestXInfoNewerFields checks the XINFO fields Redis added after 7.0, which
// the differential tests cannot compare (confNewerFields):
//   - XINFO CONSUMERS' inactive: ms since the consumer last got entries
//     into its PEL, -1 if never (7.2,
//     https://redis.io/docs/latest/commands/xinfo-consumers/);
//   - XINFO STREAM FULL's active-time per consumer: Unix ms of that moment,
//     -1 if never (7.2, https://redis.io/docs/latest/commands/xinfo-stream/).
//
// A NOACK read and a read that finds nothing are attempts (seen-time), not
// successes (active-time).
func TestXInfoNewerFields(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		mustDo(t, c, "XADD", "s", "*", "f", i)
	}
	mustDo(t, c, "XGROUP", "CREATE", "s", "g", "0")
	mustDo(t, c, "XGROUP", "CREATECONSUMER", "s", "g", "created")
	before := time.Now().UnixMilli()
	mustDo(t, c, "XREADGROUP", "GROUP", "g", "reader", "COUNT", "2", "STREAMS", "s", ">")
	mustDo(t, c, "XREADGROUP", "GROUP", "g", "noack", "NOACK", "STREAMS", "s", ">")
	mustDo(t, c, "XREADGROUP", "GROUP", "g", "empty", "STREAMS", "s", ">")
	after := time.Now().UnixMilli()

	// The raw reply: Redis 7.2's four fields, in its order.
	raw := mustDo(t, c, "XINFO", "CONSUMERS", "s", "g").([]any)
	if len(raw) != 4 {
		t.Fatalf("XINFO CONSUMERS: %d consumers, want 4: %v", len(raw), raw)
	}
	var names []string
	for _, r := range raw {
		m := r.([]any)
		if len(m) != 8 || m[0] != "name" || m[2] != "pending" || m[4] != "idle" || m[6] != "inactive" {
			t.Fatalf("XINFO CONSUMERS entry %v: want name, pending, idle, inactive", m)
		}
		names = append(names, m[1].(string))
	}
	if !slices.Equal(names, []string{"created", "empty", "noack", "reader"}) {
		t.Fatalf("consumers %v", names)
	}

	cs, err := c.XInfoConsumers(ctx, "s", "g").Result()
	if err != nil {
		t.Fatalf("XInfoConsumers: %v", err)
	}
	maxAge := time.Duration(time.Now().UnixMilli()-before) * time.Millisecond
	for _, ci := range cs {
		never := ci.Name != "reader"
		switch {
		case never && ci.Inactive != -time.Millisecond:
			t.Errorf("%s: inactive %v, want -1 (never got entries)", ci.Name, ci.Inactive)
		case !never && (ci.Inactive < 0 || ci.Inactive > maxAge):
			t.Errorf("%s: inactive %v, want 0..%v", ci.Name, ci.Inactive, maxAge)
		}
		if ci.Idle < 0 || ci.Idle > maxAge+time.Second {
			t.Errorf("%s: idle %v", ci.Name, ci.Idle)
		}
	}

	full, err := c.XInfoStreamFull(ctx, "s", 0).Result()
	if err != nil {
		t.Fatalf("XInfoStreamFull: %v", err)
	}
	for _, ci := range full.Groups[0].Consumers {
		active := ci.ActiveTime.UnixMilli()
		switch {
		case ci.Name == "reader" && (active < before || active > after):
			t.Errorf("reader: active-time %d, want %d..%d", active, before, after)
		case ci.Name != "reader" && active != -1:
			t.Errorf("%s: active-time %d, want -1", ci.Name, active)
		}
		if seen := ci.SeenTime.UnixMilli(); ci.Name != "created" && (seen < before || seen > after) {
			t.Errorf("%s: seen-time %d, want %d..%d", ci.Name, seen, before, after)
		}
	}
}
