package broker

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestClaimCreatesConsumer: since Redis 7.2, XINFO CONSUMERS' idle is the
// time since the consumer's last attempted interaction, an XCLAIM or
// XAUTOCLAIM that claims nothing included, and inactive the time since
// one that claimed (or read) something; an attempt creates the consumer.
// Redis 7.0 (the differential tests' redis-server) created it only on a
// claim. https://redis.io/docs/latest/commands/xinfo-consumers/
func TestClaimCreatesConsumer(t *testing.T) {
	c := newTestServer(t).client(t)
	mustDo(t, c, "XADD", "s", "1-0", "f", "v")
	mustDo(t, c, "XGROUP", "CREATE", "s", "g", "0")
	mustDo(t, c, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
	consumers := func() string {
		var out []string
		for _, ci := range mustDo(t, c, "XINFO", "CONSUMERS", "s", "g").([]any) {
			f := ci.([]any)
			inactive := "active"
			if f[7].(int64) == -1 {
				inactive = "never active"
			}
			out = append(out, fmt.Sprintf("%s pending=%v idle<1s=%v %s", f[1], f[3], f[5].(int64) < 1000, inactive))
		}
		return strings.Join(out, "; ")
	}
	// Nothing idle an hour: nothing claimed, but bob and carol exist now,
	// seen now, never active (inactive -1).
	if got := mustDo(t, c, "XCLAIM", "s", "g", "bob", "3600000", "1-0"); fmt.Sprint(got) != "[]" {
		t.Fatalf("XCLAIM = %v", got)
	}
	if got := mustDo(t, c, "XAUTOCLAIM", "s", "g", "carol", "3600000", "0"); fmt.Sprint(got) != "[0-0 [] []]" {
		t.Fatalf("XAUTOCLAIM = %v", got)
	}
	if got := consumers(); got != "alice pending=1 idle<1s=true active; bob pending=0 idle<1s=true never active; carol pending=0 idle<1s=true never active" {
		t.Fatalf("XINFO CONSUMERS: %s", got)
	}
	// An error creates nothing.
	if _, err := c.Do(context.Background(), "XCLAIM", "s", "g", "dave", "0", "1-0", "IDLE", "x").Result(); err == nil {
		t.Fatal("XCLAIM IDLE x: no error")
	}
	if strings.Contains(consumers(), "dave") {
		t.Fatalf("a failed XCLAIM created dave: %s", consumers())
	}
	// A later attempt that claims nothing moves bob's seen-time (idle).
	time.Sleep(30 * time.Millisecond)
	mustDo(t, c, "XCLAIM", "s", "g", "bob", "3600000", "1-0")
	for _, ci := range mustDo(t, c, "XINFO", "CONSUMERS", "s", "g").([]any) {
		f := ci.([]any)
		if f[1] == "bob" && f[5].(int64) >= 30 {
			t.Fatalf("bob's idle after a second attempt: %v", f[5])
		}
		if f[1] == "carol" && f[5].(int64) < 30 {
			t.Fatalf("carol's idle without an attempt: %v", f[5])
		}
	}
	// An entry released by XNACK is claimable whatever the min-idle-time
	// (Redis 8.8 tests the owner first), even one above the current time.
	mustDo(t, c, "XNACK", "s", "g", "FAIL", "IDS", "1", "1-0")
	huge := fmt.Sprint(time.Now().UnixMilli() * 2)
	if got := fmt.Sprint(mustDo(t, c, "XCLAIM", "s", "g", "bob", huge, "1-0", "JUSTID")); got != "[1-0]" {
		t.Fatalf("XCLAIM of a NACKed entry with min-idle-time %s = %s", huge, got)
	}
}
