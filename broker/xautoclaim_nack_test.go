package broker

import (
	"fmt"
	"strings"
	"testing"
)

// TestXAutoClaimNacked: XAUTOCLAIM and the NACK zone (Redis 8.8). The
// XAUTOCLAIM page says entries released by XNACK "are immediately
// claimable since their delivery time is set to 0, satisfying any minimum
// idle time requirement", and that the command scans the PEL from start
// (by ID); the XNACK page's priority of the NACK zone "during claim
// operations" is the PEL's time-ordered list, which XREADGROUP CLAIM reads
// (release order, TestXNack) and XAUTOCLAIM does not. So XAUTOCLAIM takes
// NACKed entries at once, in ID order from start, with its reply shape
// [next start, claimed, deleted].
// https://redis.io/docs/latest/commands/xautoclaim/
// https://redis.io/docs/latest/commands/xnack/
// https://redis.io/docs/latest/commands/xreadgroup/
func TestXAutoClaimNacked(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	streamWithGroup(t, c, 5)
	mustDo(t, c, "XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s", ">")
	pending := func(id string) string {
		t.Helper()
		return fmt.Sprint(mustDo(t, c, "XPENDING", "s", "g", id, id, "1"))
	}

	// Released 4 then 2; nothing else is idle an hour. XAUTOCLAIM: ID order.
	mustDo(t, c, "XNACK", "s", "g", "FAIL", "IDS", "2", "4-0", "2-0")
	if got := fmt.Sprint(mustDo(t, c, "XAUTOCLAIM", "s", "g", "c2", "3600000", "0")); got != "[0-0 [[2-0 [f 2]] [4-0 [f 4]]] []]" {
		t.Fatalf("XAUTOCLAIM after XNACK 4, 2: %s", got)
	}
	if got := pending("2-0"); !strings.HasPrefix(got, "[[2-0 c2 ") || !strings.HasSuffix(got, " 2]]") {
		t.Fatalf("2-0 after XAUTOCLAIM: %s; want c2's, delivered twice", got)
	}
	// XREADGROUP CLAIM, by contrast, serves the zone in release order.
	mustDo(t, c, "XNACK", "s", "g", "FAIL", "IDS", "2", "4-0", "2-0")
	if got := fmt.Sprint(mustDo(t, c, "XREADGROUP", "GROUP", "g", "c3", "COUNT", "2", "CLAIM", "3600000", "STREAMS", "s", ">")); !strings.HasPrefix(got, "[[s [[4-0 [f 4] ") || !strings.Contains(got, "] [2-0 [f 2] ") {
		t.Fatalf("XREADGROUP CLAIM after XNACK 4, 2: %s", got)
	}

	// JUSTID: the ID only, the delivery count left.
	mustDo(t, c, "XNACK", "s", "g", "FAIL", "IDS", "1", "3-0")
	if got := fmt.Sprint(mustDo(t, c, "XAUTOCLAIM", "s", "g", "c2", "3600000", "0", "JUSTID")); got != "[0-0 [3-0] []]" {
		t.Fatalf("XAUTOCLAIM JUSTID: %s", got)
	}
	if got := pending("3-0"); !strings.HasPrefix(got, "[[3-0 c2 ") || !strings.HasSuffix(got, " 1]]") {
		t.Fatalf("3-0 after XAUTOCLAIM JUSTID: %s; want c2's, count 1", got)
	}

	// Below start: left in the zone, unowned.
	mustDo(t, c, "XNACK", "s", "g", "FAIL", "IDS", "1", "1-0")
	if got := fmt.Sprint(mustDo(t, c, "XAUTOCLAIM", "s", "g", "c2", "3600000", "2-0")); got != "[0-0 [] []]" {
		t.Fatalf("XAUTOCLAIM from 2-0: %s", got)
	}
	if got := pending("1-0"); !strings.HasPrefix(got, "[[1-0  -1 ") {
		t.Fatalf("1-0 after XAUTOCLAIM from 2-0: %s; want unowned, idle -1", got)
	}

	// COUNT 1 takes 1-0 (first by ID) and returns the cursor; the next call
	// drops the NACKed 5-0, deleted from the stream, and lists it.
	mustDo(t, c, "XNACK", "s", "g", "FAIL", "IDS", "1", "5-0")
	mustDo(t, c, "XDEL", "s", "5-0")
	if got := fmt.Sprint(mustDo(t, c, "XAUTOCLAIM", "s", "g", "c4", "3600000", "0", "COUNT", "1")); got != "[2-0 [[1-0 [f 1]]] []]" {
		t.Fatalf("XAUTOCLAIM COUNT 1: %s", got)
	}
	if got := fmt.Sprint(mustDo(t, c, "XAUTOCLAIM", "s", "g", "c4", "3600000", "2-0")); got != "[0-0 [] [5-0]]" {
		t.Fatalf("XAUTOCLAIM of a deleted NACKed entry: %s", got)
	}
	if got := fmt.Sprint(mustDo(t, c, "XPENDING", "s", "g")); got != "[4 1-0 4-0 [[c2 1] [c3 2] [c4 1]]]" {
		t.Fatalf("XPENDING summary: %s", got)
	}
}
