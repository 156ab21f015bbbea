package broker

import (
	"context"
	"fmt"
	"testing"

	"github.com/sediment-dev/sediment/codec"
)

// TestScanPagesOneSlot: with every key in one hash slot (a hash tag), SCAN
// still returns about COUNT keys a call, and a full iteration returns each
// key present throughout at least once, also with keys added and removed
// along the way.
func TestScanPagesOneSlot(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	ctx := context.Background()
	const n = 1000
	for i := range n {
		mustDo(t, c, "SET", fmt.Sprintf("{user}:%04d", i), "v")
	}
	seen := map[string]int{}
	cur, calls := uint64(0), 0
	for {
		keys, next, err := c.Scan(ctx, cur, "", 10).Result()
		if err != nil {
			t.Fatal(err)
		}
		calls++
		if len(keys) > 20 {
			t.Fatalf("call %d returned %d keys at COUNT 10", calls, len(keys))
		}
		for _, k := range keys {
			seen[k]++
		}
		if calls == 30 { // churn mid-scan: keys that come and go may or may not show
			mustDo(t, c, "DEL", "{user}:0999")
			mustDo(t, c, "SET", "{user}:new", "v")
		}
		if cur = next; cur == 0 {
			break
		}
		if calls > 10*n {
			t.Fatal("the scan does not end")
		}
	}
	for i := range n - 1 {
		if seen[fmt.Sprintf("{user}:%04d", i)] == 0 {
			t.Fatalf("key %d never returned", i)
		}
	}
	if calls < n/20 {
		t.Errorf("%d calls for %d keys at COUNT 10: pages are not bounded", calls, n)
	}
}

// TestScanForgottenPosition: a cursor naming a position the server no
// longer remembers resumes at its slot's start: repeats, no misses.
func TestScanForgottenPosition(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	ctx := context.Background()
	for i := range 50 {
		mustDo(t, c, "SET", fmt.Sprintf("{t}:%02d", i), "v")
	}
	slot := uint64(codec.Slot([]byte("{t}")))
	forgotten := uint64(codec.NumSlots) + 1_000_000*codec.NumSlots + slot
	seen := map[string]bool{}
	cur := forgotten
	for range 100 {
		keys, next, err := c.Scan(ctx, cur, "", 10).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			seen[k] = true
		}
		if cur = next; cur == 0 {
			break
		}
	}
	if cur != 0 || len(seen) != 50 {
		t.Fatalf("scan from a forgotten position: ended %v, saw %d of 50 keys", cur == 0, len(seen))
	}
}
