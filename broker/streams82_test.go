package broker

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// scriptStep is one command of a scripted test and its expected reply,
// written as fmt.Sprint prints go-redis's RESP2 value ("[1 -1]", "6",
// "OK"), or an error reply's full text.
type scriptStep struct {
	args []any
	want string
}

func st(want string, args ...any) scriptStep { return scriptStep{args, want} }

// runScript runs steps in order on a fresh server, failing on the first
// reply that differs.
func runScript(t *testing.T, steps []scriptStep) {
	t.Helper()
	ts := newTestServer(t)
	c := ts.client(t)
	for i, s := range steps {
		v, err := do(t, c, s.args...)
		got := fmt.Sprint(v)
		if err != nil {
			got = err.Error()
		}
		if s.want != "*" && got != s.want {
			t.Fatalf("step %d %v: got %q, want %q", i, s.args, got, s.want)
		}
	}
}

// addN returns steps adding entries 1-0 .. n-0 to key.
func addN(key string, n int) []scriptStep {
	var out []scriptStep
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("%d-0", i)
		out = append(out, st(id, "XADD", key, id, "f", i))
	}
	return out
}

func script(parts ...[]scriptStep) []scriptStep {
	var out []scriptStep
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// The expected replies below follow the redis.io pages of XDELEX, XACKDEL,
// XADD and XTRIM (Redis 8.2) and the cases of Redis's own test suite
// (tests/unit/type/stream.tcl, stream-cgroups.tcl) that they describe;
// redis-server 7.0, which the differential tests run, has none of them.
// https://redis.io/docs/latest/commands/xdelex/
// https://redis.io/docs/latest/commands/xackdel/

func TestXDelExErrors(t *testing.T) {
	runScript(t, script(addN("s", 2), []scriptStep{
		st("ERR wrong number of arguments for 'xdelex' command", "XDELEX", "s", "IDS", "1"),
		st("[-1 -1]", "XDELEX", "nokey", "IDS", "2", "1-1", "2-2"),
		st("[-1]", "XDELEX", "nokey", "IDS", "1", "garbage"), // a missing key checks no ID
		st("ERR Number of IDs must be a positive integer", "XDELEX", "s", "IDS", "abc", "1-0"),
		st("ERR Number of IDs must be a positive integer", "XDELEX", "s", "IDS", "0", "1-0"),
		st("ERR Number of IDs must be a positive integer", "XDELEX", "s", "IDS", "-5", "1-0"),
		st("ERR The `numids` parameter must match the number of arguments", "XDELEX", "s", "IDS", "3", "1-1", "2-2"),
		st("ERR The `numids` parameter must match the number of arguments", "XDELEX", "s", "IDS", "9223372036854775807", "1-1"),
		st("ERR Number of IDs must be a positive integer", "XDELEX", "s", "IDS", "9223372036854775808", "1-1"),
		st("ERR Number of IDs must be a positive integer", "XDELEX", "s", "IDS", "+1", "1-1"),
		st("ERR Number of IDs must be a positive integer", "XDELEX", "s", "IDS", "1.0", "1-1"),
		st("ERR syntax error", "XDELEX", "s", "IDS", "1", "1-1", "2-2"),
		st("ERR syntax error", "XDELEX", "s", "KEEPREF", "DELREF", "IDS", "1", "1-0"),
		st("ERR syntax error", "XDELEX", "s", "ACKED", "ACKED", "IDS", "1", "1-0"),
		st("ERR syntax error", "XDELEX", "s", "FOO", "IDS", "1", "1-0"),
		st("ERR Invalid stream ID specified as stream command argument", "XDELEX", "s", "IDS", "2", "1-0", "x"),
		st("ERR Invalid stream ID specified as stream command argument", "XDELEX", "s", "IDS", "1", "+"),
		st("2", "XLEN", "s"), // nothing deleted by a failed call
		st("OK", "SET", "str", "v"),
		st("WRONGTYPE Operation against a key holding the wrong kind of value", "XDELEX", "str", "IDS", "1", "1-0"),
		st("WRONGTYPE Operation against a key holding the wrong kind of value", "XDELEX", "str", "BAD", "x", "y"),
		st("ERR wrong number of arguments for 'xackdel' command", "XACKDEL", "s", "g", "IDS", "1"),
		st("[-1 -1]", "XACKDEL", "s", "nogroup", "IDS", "2", "1-0", "2-0"),
		st("[-1 -1]", "XACKDEL", "nokey", "g", "IDS", "2", "1-0", "x"),
		st("ERR syntax error", "XACKDEL", "s", "g", "IDS", "1", "1-0", "KEEPREF", "KEEPREF"),
	}))
}

func TestXDelExPolicies(t *testing.T) {
	runScript(t, script(addN("s", 5), []scriptStep{
		// IDS may come before the policy; duplicates are not found twice.
		st("[1 -1 -1]", "XDELEX", "s", "IDS", "3", "1-0", "1-0", "9-0", "KEEPREF"),
		st("4", "XLEN", "s"),
		// No groups: ACKED deletes (nothing references the entry).
		st("[1]", "XDELEX", "s", "ACKED", "IDS", "1", "2-0"),
		// Groups at 3-0 and 4-0: ACKED keeps what a group may still read,
		// even an ID that is not in the stream.
		st("OK", "XGROUP", "CREATE", "s", "g1", "3-0"),
		st("OK", "XGROUP", "CREATE", "s", "g2", "4-0"),
		st("[2 2]", "XDELEX", "s", "ACKED", "IDS", "2", "4-0", "9-0"),
		st("[1]", "XDELEX", "s", "ACKED", "IDS", "1", "3-0"),
		st("1", "XGROUP", "DESTROY", "s", "g1"),
		st("[1 -1]", "XDELEX", "s", "ACKED", "IDS", "2", "4-0", "2-0"),
		st("1", "XLEN", "s"),
		// max-deleted-entry-id moves with XDELEX, as with XDEL.
		st("[length 1 radix-tree-keys 1 radix-tree-nodes 2 last-generated-id 5-0 max-deleted-entry-id 4-0 entries-added 5 recorded-first-entry-id 5-0 idmp-duration 100 idmp-maxsize 100 pids-tracked 0 iids-tracked 0 iids-added 0 iids-duplicates 0 groups 1 first-entry [5-0 [f 5]] last-entry [5-0 [f 5]]]", "XINFO", "STREAM", "s"),
	}))
}

// TestXDelExAckedPending: an entry pending in any group is referenced;
// XACK releases it (the example of the XDELEX page).
func TestXDelExAckedPending(t *testing.T) {
	runScript(t, script(addN("s", 1), []scriptStep{
		st("OK", "XGROUP", "CREATE", "s", "grp", "0"),
		st("[[s [[1-0 [f 1]]]]]", "XREADGROUP", "GROUP", "grp", "c1", "COUNT", "10", "STREAMS", "s", ">"),
		st("[2]", "XDELEX", "s", "ACKED", "IDS", "1", "1-0"),
		st("1", "XLEN", "s"),
		st("1", "XACK", "s", "grp", "1-0"),
		st("[1]", "XDELEX", "s", "ACKED", "IDS", "1", "1-0"),
		st("0", "XLEN", "s"),
	}))
}

// TestXDelExDelRef: DELREF removes the IDs from every group's PEL, also
// for an ID no longer in the stream.
func TestXDelExDelRef(t *testing.T) {
	runScript(t, script(addN("s", 3), []scriptStep{
		st("OK", "XGROUP", "CREATE", "s", "g1", "0"),
		st("OK", "XGROUP", "CREATE", "s", "g2", "0"),
		st("*", "XREADGROUP", "GROUP", "g1", "c1", "STREAMS", "s", ">"),
		st("*", "XREADGROUP", "GROUP", "g2", "c2", "STREAMS", "s", ">"),
		st("1", "XDEL", "s", "2-0"),
		st("[1 -1]", "XDELEX", "s", "DELREF", "IDS", "2", "1-0", "2-0"),
		st("[1 3-0 3-0 [[c1 1]]]", "XPENDING", "s", "g1"),
		st("[1 3-0 3-0 [[c2 1]]]", "XPENDING", "s", "g2"),
	}))
}

func TestXAckDel(t *testing.T) {
	runScript(t, script(addN("s", 2), []scriptStep{
		st("OK", "XGROUP", "CREATE", "s", "g1", "0"),
		st("OK", "XGROUP", "CREATE", "s", "g2", "0"),
		st("*", "XREADGROUP", "GROUP", "g1", "c1", "STREAMS", "s", ">"),
		st("*", "XREADGROUP", "GROUP", "g2", "c2", "STREAMS", "s", ">"),
		// KEEPREF: acknowledged in g1 and deleted; g2 still has them pending.
		st("[1 1]", "XACKDEL", "s", "g1", "KEEPREF", "IDS", "2", "1-0", "2-0"),
		st("0", "XLEN", "s"),
		st("[0 <nil> <nil> <nil>]", "XPENDING", "s", "g1"),
		st("[2 1-0 2-0 [[c2 2]]]", "XPENDING", "s", "g2"),
		// Pending in g2 but gone from the stream: still 1.
		st("[1 -1]", "XACKDEL", "s", "g2", "IDS", "2", "1-0", "1-0"),
		st("[1 2-0 2-0 [[c2 1]]]", "XPENDING", "s", "g2"),
		// Not pending: -1 and nothing happens, even with DELREF.
		st("3-0", "XADD", "s", "3-0", "f", "3"),
		st("[-1]", "XACKDEL", "s", "g2", "DELREF", "IDS", "1", "3-0"),
		st("1", "XLEN", "s"),
	}))
}

func TestXAckDelAckedAndDelRef(t *testing.T) {
	runScript(t, script(addN("s", 2), []scriptStep{
		st("OK", "XGROUP", "CREATE", "s", "g1", "0"),
		st("OK", "XGROUP", "CREATE", "s", "g2", "0"),
		st("*", "XREADGROUP", "GROUP", "g1", "c1", "STREAMS", "s", ">"),
		st("*", "XREADGROUP", "GROUP", "g2", "c2", "COUNT", "1", "STREAMS", "s", ">"),
		// g2 has 1-0 pending and has not read 2-0: both kept, acknowledged in g1.
		st("[2 2]", "XACKDEL", "s", "g1", "ACKED", "IDS", "2", "1-0", "2-0"),
		st("[0 <nil> <nil> <nil>]", "XPENDING", "s", "g1"),
		st("2", "XLEN", "s"),
		// The last group to let go deletes.
		st("[1]", "XACKDEL", "s", "g2", "ACKED", "IDS", "1", "1-0"),
		st("1", "XLEN", "s"),
		// DELREF: acknowledged in g2, removed from g1's PEL too, deleted.
		st("*", "XREADGROUP", "GROUP", "g1", "c1", "STREAMS", "s", "0"),
		st("OK", "XGROUP", "SETID", "s", "g1", "0"),
		st("*", "XREADGROUP", "GROUP", "g1", "c1", "STREAMS", "s", ">"),
		st("*", "XREADGROUP", "GROUP", "g2", "c2", "STREAMS", "s", ">"),
		st("[1 2-0 2-0 [[c1 1]]]", "XPENDING", "s", "g1"),
		st("[1]", "XACKDEL", "s", "g2", "DELREF", "IDS", "1", "2-0"),
		st("[0 <nil> <nil> <nil>]", "XPENDING", "s", "g1"),
		st("[0 <nil> <nil> <nil>]", "XPENDING", "s", "g2"),
		st("0", "XLEN", "s"),
		st("[-1]", "XACKDEL", "s", "g2", "DELREF", "IDS", "1", "2-0"),
	}))
}

// TestTrimPolicies: KEEPREF | DELREF | ACKED on XADD and XTRIM (the cases
// of Redis's "XADD with MAXLEN option and ACKED option" test and the
// XTRIM page).
// https://redis.io/docs/latest/commands/xtrim/
func TestTrimPolicies(t *testing.T) {
	runScript(t, script(addN("s", 5), []scriptStep{
		st("OK", "XGROUP", "CREATE", "s", "g", "0"),
		// Nothing read: every entry is still to be delivered.
		st("6-0", "XADD", "s", "MAXLEN", "=", "1", "ACKED", "6-0", "f", "6"),
		st("6", "XLEN", "s"),
		st("*", "XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">"),
		st("1", "XACK", "s", "g", "1-0"),
		st("7-0", "XADD", "s", "ACKED", "MAXLEN", "=", "1", "7-0", "f", "7"),
		st("6", "XLEN", "s"),
		st("[[2-0 [f 2]]]", "XRANGE", "s", "-", "+", "COUNT", "1"),
		// Read everything, acknowledge all but 3-0: ACKED skips it and goes on.
		st("*", "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"),
		st("5", "XACK", "s", "g", "2-0", "4-0", "5-0", "6-0", "7-0"),
		st("5", "XTRIM", "s", "MAXLEN", "1", "ACKED"),
		st("[[3-0 [f 3]]]", "XRANGE", "s", "-", "+"),
		// Trims never move max-deleted-entry-id.
		st("[length 1 radix-tree-keys 1 radix-tree-nodes 2 last-generated-id 7-0 max-deleted-entry-id 0-0 entries-added 7 recorded-first-entry-id 3-0 idmp-duration 100 idmp-maxsize 100 pids-tracked 0 iids-tracked 0 iids-added 0 iids-duplicates 0 groups 1 first-entry [3-0 [f 3]] last-entry [3-0 [f 3]]]", "XINFO", "STREAM", "s"),
		// DELREF: trimmed entries leave every PEL.
		st("8-0", "XADD", "s", "MAXLEN", "=", "1", "DELREF", "8-0", "f", "8"),
		st("1", "XLEN", "s"),
		st("[0 <nil> <nil> <nil>]", "XPENDING", "s", "g"),
		// KEEPREF (the default) leaves them.
		st("*", "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"),
		st("9-0", "XADD", "s", "KEEPREF", "MAXLEN", "1", "9-0", "f", "9"),
		st("[1 8-0 8-0 [[c 1]]]", "XPENDING", "s", "g"),
		// A policy without MAXLEN or MINID: accepted, does nothing.
		st("10-0", "XADD", "s", "ACKED", "10-0", "f", "10"),
		// Only one policy: a second is XTRIM's syntax error and XADD's ID.
		st("ERR syntax error", "XTRIM", "s", "MAXLEN", "1", "ACKED", "DELREF"),
		st("ERR syntax error", "XTRIM", "s", "ACKED", "KEEPREF"),
		st("ERR Invalid stream ID specified as stream command argument", "XADD", "s", "ACKED", "DELREF", "f", "v"),
		st("2", "XLEN", "s"),
	}))
}

// TestTrimAckedNodes: ACKED trims walk Redis's nodes (100 entries): MINID
// removes every unreferenced entry below the ID; MAXLEN looks no further
// than the first node it cannot remove whole; '~' stops before such a node
// (redis/redis#14623's behaviour).
func TestTrimAckedNodes(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	streamWithGroup(t, c, 300)
	mustDo(t, c, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
	// Acknowledge everything but 1-0..10-0 and 150-0.
	for i := 11; i <= 300; i++ {
		if i != 150 {
			mustDo(t, c, "XACK", "s", "g", fmt.Sprintf("%d-0", i))
		}
	}
	check := func(args []any, want int64, wantLen int64) {
		t.Helper()
		if got := mustDo(t, c, args...).(int64); got != want {
			t.Fatalf("%v = %d, want %d", args, got, want)
		}
		if got := mustDo(t, c, "XLEN", "s").(int64); got != wantLen {
			t.Fatalf("after %v: XLEN %d, want %d", args, got, wantLen)
		}
	}
	// MAXLEN 250: the first node (1-0..100-0) cannot go whole (300-100 <
	// 250), so only it is walked: 50 of its 90 acknowledged entries go.
	check([]any{"XTRIM", "s", "MAXLEN", "=", "250", "ACKED"}, 50, 250)
	// '~' 100: the first node (50 live entries) and the second can go
	// whole, less what is pending (1-0..10-0, 150-0); the third cannot.
	check([]any{"XTRIM", "s", "MAXLEN", "~", "100", "ACKED"}, 139, 111)
	// MINID exact: every unreferenced entry below the ID.
	check([]any{"XTRIM", "s", "MINID", "250-0", "ACKED"}, 49, 62)
	got := fmt.Sprint(mustDo(t, c, "XRANGE", "s", "-", "+", "COUNT", "12"))
	if !strings.HasPrefix(got, "[[1-0 [f 1]] [2-0 [f 2]]") || !strings.Contains(got, "[10-0 [f 10]] [150-0 [f 150]] [250-0 [f 250]]") {
		t.Fatalf("XRANGE after the trims: %s", got)
	}
}

// TestXDelExNotifications: XDELEX and XACKDEL notify xdel only when they
// deleted an entry.
func TestXDelExNotifications(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	ctx := context.Background()
	mustDo(t, c, "CONFIG", "SET", "notify-keyspace-events", "Et")
	sub := c.Subscribe(ctx, "__keyevent@0__:xdel")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	mustDo(t, c, "XADD", "s", "1-0", "f", "v")
	mustDo(t, c, "XADD", "s", "2-0", "f", "v")
	mustDo(t, c, "XGROUP", "CREATE", "s", "g", "1-0")
	mustDo(t, c, "XDELEX", "s", "ACKED", "IDS", "1", "2-0") // kept: no event
	mustDo(t, c, "XACKDEL", "s", "g", "IDS", "1", "1-0")    // not pending: no event
	mustDo(t, c, "XDELEX", "s", "IDS", "2", "1-0", "9-0")   // deleted
	mustDo(t, c, "XADD", "s", "3-0", "f", "v")
	mustDo(t, c, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
	mustDo(t, c, "XACKDEL", "s", "g", "IDS", "1", "3-0") // deleted
	for i := 0; i < 2; i++ {
		m, err := sub.ReceiveTimeout(ctx, 2*time.Second)
		if err != nil {
			t.Fatalf("notification %d: %v", i, err)
		}
		if msg, ok := m.(*redis.Message); !ok || msg.Payload != "s" {
			t.Fatalf("notification %d: %v", i, m)
		}
	}
	if m, err := sub.ReceiveTimeout(ctx, 200*time.Millisecond); err == nil {
		t.Fatalf("a third notification: %v", m)
	}
}

// TestXReadGroupClaim: XREADGROUP CLAIM min-idle-time (Redis 8.4): idle
// pending entries of any consumer first, oldest delivery first, each with
// its idle time and previous delivery count, then new entries with 0 and
// 0, together at most COUNT.
// https://redis.io/docs/latest/commands/xreadgroup/
func TestXReadGroupClaim(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	ctx := context.Background()
	streamWithGroup(t, c, 3)
	mustDo(t, c, "XREADGROUP", "GROUP", "g", "c1", "COUNT", "1", "STREAMS", "s", ">") // 1-0 first
	time.Sleep(5 * time.Millisecond)
	mustDo(t, c, "XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s", ">") // then 2-0, 3-0
	// Nothing idle for 10 minutes, nothing new: the null reply.
	if v, err := do(t, c, "XREADGROUP", "GROUP", "g", "c2", "CLAIM", "600000", "STREAMS", "s", ">"); err != redis.Nil {
		t.Fatalf("CLAIM with nothing idle = %v, %v", v, err)
	}
	time.Sleep(60 * time.Millisecond)
	mustDo(t, c, "XADD", "s", "4-0", "f", "4")
	mustDo(t, c, "XADD", "s", "5-0", "f", "5")
	// COUNT 4: the three idle entries (oldest delivery first), then one new.
	res, err := c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "c2", Streams: []string{"s", ">"}, Count: 4, Claim: 50 * time.Millisecond}).Result()
	if err != nil {
		t.Fatalf("XReadGroup CLAIM: %v", err)
	}
	msgs := res[0].Messages
	var ids []string
	for i, m := range msgs {
		ids = append(ids, m.ID)
		switch {
		case i < 3 && (m.MillisElapsedFromDelivery < 50 || m.DeliveredCount != 1):
			t.Errorf("claimed %s: idle %d, count %d; want >= 50 and 1", m.ID, m.MillisElapsedFromDelivery, m.DeliveredCount)
		case i == 3 && (m.MillisElapsedFromDelivery != 0 || m.DeliveredCount != 0):
			t.Errorf("new %s: idle %d, count %d; want 0 and 0", m.ID, m.MillisElapsedFromDelivery, m.DeliveredCount)
		}
	}
	if fmt.Sprint(ids) != "[1-0 2-0 3-0 4-0]" || fmt.Sprint(msgs[0].Values) != "map[f:1]" {
		t.Fatalf("CLAIM read %v (%v)", ids, msgs)
	}
	// The claimed entries are c2's now, delivered twice; 4-0 once.
	pend := mustDo(t, c, "XPENDING", "s", "g", "-", "+", "10")
	if got := fmt.Sprint(pend); !strings.Contains(got, "[1-0 c2 ") || !strings.Contains(got, "[4-0 c2 ") ||
		!strings.HasSuffix(got, " 1]]") || strings.Count(got, " 2]") != 3 {
		t.Fatalf("XPENDING after the claim: %s", got)
	}
	// The raw reply: four elements per entry. (Each claim below comes a
	// few ms after the one before: the order is by delivery time.)
	time.Sleep(3 * time.Millisecond)
	raw := fmt.Sprint(mustDo(t, c, "XREADGROUP", "GROUP", "g", "c3", "CLAIM", "0", "COUNT", "1", "STREAMS", "s", ">"))
	if !strings.HasPrefix(raw, "[[s [[1-0 [f 1] ") || !strings.HasSuffix(raw, " 2]]]]") {
		t.Fatalf("raw CLAIM reply %s", raw)
	}
	// NOACK applies to the new entries only. (Oldest delivery first: 2-0
	// and 3-0, claimed by c2 before c3 took 1-0.)
	time.Sleep(3 * time.Millisecond)
	mustDo(t, c, "XREADGROUP", "GROUP", "g", "c4", "NOACK", "CLAIM", "0", "COUNT", "2", "STREAMS", "s", ">")
	if got := fmt.Sprint(mustDo(t, c, "XPENDING", "s", "g")); !strings.HasPrefix(got, "[4 1-0 4-0 ") {
		t.Fatalf("XPENDING after NOACK CLAIM: %s", got)
	}
	// An explicit ID reads history: CLAIM is ignored, entries have two elements.
	if got := fmt.Sprint(mustDo(t, c, "XREADGROUP", "GROUP", "g", "c4", "CLAIM", "0", "STREAMS", "s", "0")); got != "[[s [[2-0 [f 2]] [3-0 [f 3]]]]]" {
		t.Fatalf("history with CLAIM: %s", got)
	}
	// A pending entry deleted from the stream is not returned, and leaves
	// the PEL (as XAUTOCLAIM does; Redis 8.4 keeps it).
	mustDo(t, c, "XDEL", "s", "1-0")
	got := fmt.Sprint(mustDo(t, c, "XREADGROUP", "GROUP", "g", "c5", "CLAIM", "0", "STREAMS", "s", ">"))
	if strings.Contains(got, "1-0") || !strings.Contains(got, "[2-0 [f 2] ") {
		t.Fatalf("CLAIM after XDEL: %s", got)
	}
	if got := fmt.Sprint(mustDo(t, c, "XPENDING", "s", "g")); got != "[4 2-0 5-0 [[c5 4]]]" {
		t.Fatalf("XPENDING after XDEL and CLAIM: %s", got)
	}
	// Nor does it take COUNT: with the oldest pending entry deleted, a
	// CLAIM read of one still returns the next.
	time.Sleep(3 * time.Millisecond)
	mustDo(t, c, "XDEL", "s", "2-0") // c5 claimed 2-0, 3-0, 4-0, 5-0 in that order
	if got := fmt.Sprint(mustDo(t, c, "XREADGROUP", "GROUP", "g", "c6", "COUNT", "1", "CLAIM", "0", "STREAMS", "s", ">")); !strings.HasPrefix(got, "[[s [[3-0 ") {
		t.Fatalf("CLAIM COUNT 1 after deleting the oldest: %s", got)
	}
}

func TestXReadGroupClaimErrors(t *testing.T) {
	runScript(t, script(addN("s", 1), []scriptStep{
		st("OK", "XGROUP", "CREATE", "s", "g", "0"),
		st("ERR The CLAIM option is only supported by XREADGROUP. You called XREAD instead.", "XREAD", "CLAIM", "10", "STREAMS", "s", "0"),
		st("ERR min-idle-time must be a positive integer", "XREADGROUP", "GROUP", "g", "c", "CLAIM", "-1", "STREAMS", "s", ">"),
		st("ERR min-idle-time is not an integer or out of range", "XREADGROUP", "GROUP", "g", "c", "CLAIM", "x", "STREAMS", "s", ">"),
		st("ERR min-idle-time is not an integer or out of range", "XREADGROUP", "GROUP", "g", "c", "CLAIM", "STREAMS", "s", ">"),
		st("ERR syntax error", "XREADGROUP", "GROUP", "g", "CLAIM", "50", "c", "STREAMS", "s", ">"),
		st("ERR min-idle-time is not an integer or out of range", "XREADGROUP", "GROUP", "g", "c", "CLAIM", "5.5", "STREAMS", "s", ">"),
		// Before GROUP, repeated (the last counts), and huge: accepted.
		st("[[s [[1-0 [f 1] 0 0]]]]", "XREADGROUP", "CLAIM", "50", "GROUP", "g", "c", "CLAIM", "9223372036854775807", "STREAMS", "s", ">"),
		st("redis: nil", "XREADGROUP", "GROUP", "g", "c", "CLAIM", "9223372036854775807", "STREAMS", "s", ">"),
		st("NOGROUP No such key 's' or consumer group 'nog' in XREADGROUP with GROUP option", "XREADGROUP", "GROUP", "nog", "c", "CLAIM", "0", "STREAMS", "s", ">"),
	}))
}

// TestXReadGroupClaimBlock: a blocked CLAIM read is served when a pending
// entry becomes idle enough, and times out when none does in time.
func TestXReadGroupClaimBlock(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	mustDo(t, c, "XADD", "s", "1-0", "f", "1")
	mustDo(t, c, "XGROUP", "CREATE", "s", "g", "0")
	mustDo(t, c, "XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s", ">")
	got := fmt.Sprint(mustDo(t, c, "XREADGROUP", "GROUP", "g", "c2", "BLOCK", "10000", "CLAIM", "200", "STREAMS", "s", ">"))
	if !strings.HasPrefix(got, "[[s [[1-0 [f 1] ") || !strings.HasSuffix(got, " 1]]]]") {
		t.Fatalf("blocked CLAIM read: %s", got)
	}
	if v, err := do(t, c, "XREADGROUP", "GROUP", "g", "c3", "BLOCK", "100", "CLAIM", "60000", "STREAMS", "s", ">"); err != redis.Nil {
		t.Fatalf("blocked CLAIM with nothing claimable in time = %v, %v", v, err)
	}
	// A new entry serves a blocked CLAIM read before anything is idle.
	done := make(chan string, 1)
	go func() {
		c2 := ts.client(t)
		v, _ := c2.Do(context.Background(), "XREADGROUP", "GROUP", "g", "c4", "BLOCK", "10000", "CLAIM", "60000", "STREAMS", "s", ">").Result()
		done <- fmt.Sprint(v)
	}()
	waitBlocked(t, c, 1)
	mustDo(t, c, "XADD", "s", "2-0", "f", "2")
	if got := <-done; got != "[[s [[2-0 [f 2] 0 0]]]]" {
		t.Fatalf("blocked CLAIM read served by XADD: %s", got)
	}
	// An XNACK (Redis 8.8) serves it too: the released entry is claimable.
	go func() {
		c2 := ts.client(t)
		v, _ := c2.Do(context.Background(), "XREADGROUP", "GROUP", "g", "c5", "BLOCK", "10000", "CLAIM", "60000", "STREAMS", "s", ">").Result()
		done <- fmt.Sprint(v)
	}()
	waitBlocked(t, c, 1)
	mustDo(t, c, "XNACK", "s", "g", "SILENT", "IDS", "1", "2-0")
	if got := <-done; !strings.HasPrefix(got, "[[s [[2-0 [f 2] ") || !strings.HasSuffix(got, " 0]]]]") {
		t.Fatalf("blocked CLAIM read served by XNACK: %s", got)
	}
}

// TestTrimPolicyOnExpiredStream: an XADD that replaces an expired stream
// trims the new stream, which has no consumer groups; the old one's groups
// must neither keep its entry (ACKED) nor come back (DELREF).
func TestTrimPolicyOnExpiredStream(t *testing.T) {
	for _, policy := range []string{"DELREF", "ACKED"} {
		ts := newTestServer(t)
		c := ts.client(t)
		for i := 1; i <= 3; i++ {
			mustDo(t, c, "XADD", "s", fmt.Sprintf("%d-0", i), "f", "v")
		}
		mustDo(t, c, "XGROUP", "CREATE", "s", "g", "0")
		mustDo(t, c, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
		mustDo(t, c, "PEXPIRE", "s", "1")
		time.Sleep(5 * time.Millisecond)
		mustDo(t, c, "XADD", "s", policy, "MAXLEN", "0", "6-0", "f", "v")
		if n := mustDo(t, c, "XLEN", "s"); n != int64(0) {
			t.Errorf("%s: XLEN %v, want 0", policy, n)
		}
		if g := fmt.Sprint(mustDo(t, c, "XINFO", "GROUPS", "s")); g != "[]" {
			t.Errorf("%s: the expired stream's groups came back: %s", policy, g)
		}
	}
}
