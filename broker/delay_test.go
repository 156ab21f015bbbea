package broker

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/telemetry"
)

// Delayed delivery (XADD DELAY / DELIVERAT, a Sediment extension:
// docs/streams.md "Delayed delivery"). Delays are short (100-300 ms) and
// only lower bounds on wall-clock time are asserted tightly: the machine
// may be loaded.

// addDelayed runs XADD key DELAY ms * f v and returns the ID and the time
// just before the command was sent (the entry is due no earlier than that
// plus ms, less the clock's millisecond rounding).
func addDelayed(t *testing.T, c *redis.Client, key string, ms int, v string) (string, time.Time) {
	t.Helper()
	sent := time.Now()
	return mustDo(t, c, "XADD", key, "DELAY", ms, "*", "f", v).(string), sent
}

// notBefore fails unless at is at least d after since (1 ms for rounding).
func notBefore(t *testing.T, what string, since, at time.Time, d time.Duration) {
	t.Helper()
	if got := at.Sub(since); got < d-time.Millisecond {
		t.Fatalf("%s after %v, before its due time (%v)", what, got, d)
	}
}

func streamIDs(res []redis.XStream) []string {
	var out []string
	for _, s := range res {
		for _, m := range s.Messages {
			out = append(out, s.Stream+":"+m.ID)
		}
	}
	return out
}

func xread(t *testing.T, c *redis.Client, args ...any) []string {
	t.Helper()
	v, err := do(t, c, append([]any{"XREAD"}, args...)...)
	if err == redis.Nil {
		return nil
	}
	if err != nil {
		t.Fatalf("XREAD %v: %v", args, err)
	}
	var out []string
	for _, s := range v.([]any) {
		kv := s.([]any)
		for _, e := range kv[1].([]any) {
			out = append(out, kv[0].(string)+":"+e.([]any)[0].(string))
		}
	}
	return out
}

// TestXAddDelayErrors: DELAY and DELIVERAT need an auto ID and a
// non-negative integer, once; they combine with the other options; every
// limit value either adds a delayed (or, for 0, an ordinary) entry or gets
// the option's error.
func TestXAddDelayErrors(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	for _, tc := range []struct {
		want string
		args []any
	}{
		{"ERR DELAY/DELIVERAT can be used only with auto-generated IDs", []any{"XADD", "s", "DELAY", 5, "1-1", "f", "v"}},
		{"ERR DELAY/DELIVERAT can be used only with auto-generated IDs", []any{"XADD", "s", "DELIVERAT", 5, "1-*", "f", "v"}},
		{"ERR IDMP/IDMPAUTO can be used only with auto-generated IDs", []any{"XADD", "s", "IDMP", "p", "i", "DELAY", 5, "1-1", "f", "v"}},
		{"ERR DELAY/DELIVERAT specified multiple times", []any{"XADD", "s", "DELAY", 5, "DELIVERAT", 5, "*", "f", "v"}},
		{"ERR DELAY/DELIVERAT specified multiple times", []any{"XADD", "s", "DELAY", 5, "DELAY", 5, "*", "f", "v"}},
		{"ERR DELAY must be a non-negative integer", []any{"XADD", "s", "DELAY", -1, "*", "f", "v"}},
		{"ERR DELAY must be a non-negative integer", []any{"XADD", "s", "delay", "1.5", "*", "f", "v"}},
		{"ERR DELIVERAT must be a non-negative integer", []any{"XADD", "s", "DELIVERAT", "x", "*", "f", "v"}},
		{"ERR DELIVERAT must be a non-negative integer", []any{"XADD", "s", "DELIVERAT", "-9223372036854775808", "*", "f", "v"}},
		{"ERR wrong number of arguments for 'xadd' command", []any{"XADD", "s", "DELAY", 5, "*", "f"}},
		{"ERR Invalid stream ID specified as stream command argument", []any{"XADD", "s", "DELAY", 5, "f"}},
	} {
		mustErr(t, c, tc.want, tc.args...)
	}
	if n := mustDo(t, c, "EXISTS", "s").(int64); n != 0 {
		t.Fatal("a refused XADD created the stream")
	}
	// The other options apply as without DELAY.
	if v := mustDo(t, c, "XADD", "nokey", "NOMKSTREAM", "DELAY", 100, "*", "f", "v"); v != nil {
		t.Fatalf("NOMKSTREAM: %v", v)
	}
	first := mustDo(t, c, "XADD", "s", "IDMP", "p", "i1", "DELAY", 100000, "MAXLEN", 5, "*", "f", "v").(string)
	if again := mustDo(t, c, "XADD", "s", "IDMP", "p", "i1", "DELAY", 5, "*", "f", "v").(string); again != first {
		t.Fatalf("IDMP duplicate with DELAY: %s, want %s", again, first)
	}
	mustDo(t, c, "XADD", "s", "KEEPREF", "DELIVERAT", 1, "MINID", "0", "*", "f", "past") // due already: ordinary
	for i := 0; i < 6; i++ {
		mustDo(t, c, "XADD", "s", "DELAY", 100000, "MAXLEN", "=", 3, "*", "f", i)
	}
	if n := mustDo(t, c, "XLEN", "s").(int64); n != 3 {
		t.Fatalf("XLEN after MAXLEN 3: %d", n)
	}
	// Limit values: an ID or the option's error, nothing else.
	for _, opt := range []string{"DELAY", "DELIVERAT"} {
		for _, v := range append(limitValues, "00", "1e3") {
			got, err := do(t, c, "XADD", "lim", opt, v, "*", "f", "v")
			switch {
			case err != nil && err.Error() == "ERR "+opt+" must be a non-negative integer":
			case err == nil && strings.Contains(got.(string), "-"):
			default:
				t.Errorf("XADD lim %s %q: %v, %v", opt, v, got, err)
			}
		}
	}
}

// TestDelayedXRangeAndXRead: a delayed entry is seen at once by XRANGE,
// XREVRANGE, XLEN and XINFO; XREAD returns neither it nor anything after it
// before its due time (head-of-line), reads from past it are not held, and
// at its due time XREAD returns everything. XREAD + does not return a last
// entry that is not due.
func TestDelayedXRangeAndXRead(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	e1 := mustDo(t, c, "XADD", "s", "*", "f", "1").(string)
	e2, sent := addDelayed(t, c, "s", 300, "2")
	e3 := mustDo(t, c, "XADD", "s", "*", "f", "3").(string)
	if got := fmt.Sprint(mustDo(t, c, "XRANGE", "s", "-", "+")); got != fmt.Sprintf("[[%s [f 1]] [%s [f 2]] [%s [f 3]]]", e1, e2, e3) {
		t.Fatalf("XRANGE: %s", got)
	}
	if got := fmt.Sprint(mustDo(t, c, "XREVRANGE", "s", "+", "-", "COUNT", 2)); got != fmt.Sprintf("[[%s [f 3]] [%s [f 2]]]", e3, e2) {
		t.Fatalf("XREVRANGE: %s", got)
	}
	if n := mustDo(t, c, "XLEN", "s").(int64); n != 3 {
		t.Fatalf("XLEN %d", n)
	}
	if info := fmt.Sprint(mustDo(t, c, "XINFO", "STREAM", "s")); !strings.Contains(info, "length 3") || !strings.Contains(info, "last-generated-id "+e3) {
		t.Fatalf("XINFO STREAM: %s", info)
	}
	if got := xread(t, c, "STREAMS", "s", "0"); strings.Join(got, " ") != "s:"+e1 {
		if time.Since(sent) < 300*time.Millisecond {
			t.Fatalf("XREAD before due: %v", got)
		}
	}
	if got := xread(t, c, "STREAMS", "s", e2); strings.Join(got, " ") != "s:"+e3 {
		t.Fatalf("XREAD after the delayed entry: %v", got)
	}
	if got := xread(t, c, "COUNT", 1, "STREAMS", "s", "0"); strings.Join(got, " ") != "s:"+e1 {
		t.Fatalf("XREAD COUNT 1: %v", got)
	}
	// XREAD + (the last entry) with a last entry not due: nothing.
	l, lsent := addDelayed(t, c, "last", 300, "x")
	if got := xread(t, c, "STREAMS", "last", "+"); got != nil && time.Since(lsent) < 300*time.Millisecond {
		t.Fatalf("XREAD + before due: %v", got)
	}
	for time.Since(sent) < 300*time.Millisecond || time.Since(lsent) < 300*time.Millisecond {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(5 * time.Millisecond)
	if got := xread(t, c, "STREAMS", "s", "0"); strings.Join(got, " ") != fmt.Sprintf("s:%s s:%s s:%s", e1, e2, e3) {
		t.Fatalf("XREAD at due: %v", got)
	}
	if got := xread(t, c, "STREAMS", "last", "+"); strings.Join(got, " ") != "last:"+l {
		t.Fatalf("XREAD + at due: %v", got)
	}
}

// TestDelayedXReadBlock: a blocked XREAD wakes at the due time of the
// entry that holds it: one added while it waits, one there before it
// blocked, and an earlier one added after a later one.
func TestDelayedXReadBlock(t *testing.T) {
	ts := newTestServer(t)
	admin := ts.client(t)
	mustDo(t, admin, "XADD", "s", "*", "f", "0")

	// Added while the reader waits.
	ch := goRead(xreadBlock(ts.client(t), 10*time.Second, "s", "$"))
	waitBlocked(t, admin, 1)
	id, sent := addDelayed(t, admin, "s", 150, "1")
	r := awaitRead(t, ch)
	notBefore(t, "XREAD BLOCK returned the delayed entry", sent, time.Now(), 150*time.Millisecond)
	oneEntry(t, r, "s", id)

	// There before it blocked: the read waits for it.
	id2, sent := addDelayed(t, admin, "s", 150, "2")
	start := time.Now()
	ch = goRead(xreadBlock(ts.client(t), 10*time.Second, "s", id))
	r = awaitRead(t, ch)
	notBefore(t, "XREAD BLOCK returned the held entry", sent, time.Now(), 150*time.Millisecond)
	oneEntry(t, r, "s", id2)
	if time.Since(start) > 4*time.Second {
		t.Fatalf("woken after %v", time.Since(start))
	}

	// A later entry holds the reader; an earlier one added behind it
	// cannot overtake it (head-of-line), and the reader wakes at the
	// first one's due time with both once both are due.
	late, lsent := addDelayed(t, admin, "s", 800, "late")
	ch = goRead(xreadBlock(ts.client(t), 10*time.Second, "s", id2))
	waitBlocked(t, admin, 1)
	early, _ := addDelayed(t, admin, "s", 50, "early")
	r = awaitRead(t, ch)
	notBefore(t, "XREAD BLOCK returned", lsent, time.Now(), 800*time.Millisecond)
	if got := strings.Join(streamIDs(r.res), " "); got != "s:"+late+" s:"+early {
		t.Fatalf("XREAD BLOCK after both due: %v, %v", got, r.err)
	}

	// A BLOCK timeout before the due time times out.
	addDelayed(t, admin, "t", 5000, "x")
	if got, err := do(t, admin, "XREAD", "BLOCK", 100, "STREAMS", "t", "0"); err != redis.Nil {
		t.Fatalf("XREAD BLOCK 100 before due: %v, %v", got, err)
	}
}

// TestDelayedXReadGroup: a '>' read delivers the entries after a delayed
// one at once and parks the delayed one: XPENDING lists it with no consumer
// (idle -1, delivery count 0), last-delivered-id and entries-read move past
// it, CLAIM takes it only once due (idle counted from the due time), and
// with dead letters on it is delivered, not dead-lettered, by that claim.
func TestDelayedXReadGroup(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	mustDo(t, c, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
	mustDo(t, c, "XGROUP", "DEADLETTER", "s", "g", "dlq", "MAXDELIVERIES", "1")
	e1 := mustDo(t, c, "XADD", "s", "*", "f", "1").(string)
	e2, sent := addDelayed(t, c, "s", 300, "2")
	e3 := mustDo(t, c, "XADD", "s", "*", "f", "3").(string)
	got := fmt.Sprint(mustDo(t, c, "XREADGROUP", "GROUP", "g", "alice", "COUNT", 10, "STREAMS", "s", ">"))
	if got != fmt.Sprintf("[[s [[%s [f 1]] [%s [f 3]]]]]", e1, e3) {
		t.Fatalf("XREADGROUP >: %s", got)
	}
	pend := fmt.Sprint(mustDo(t, c, "XPENDING", "s", "g", "-", "+", 10))
	if !strings.Contains(pend, fmt.Sprintf("[%s  -1 0]", e2)) {
		if time.Since(sent) < 300*time.Millisecond {
			t.Fatalf("XPENDING: %s", pend)
		}
	}
	if s := fmt.Sprint(mustDo(t, c, "XPENDING", "s", "g")); s != fmt.Sprintf("[3 %s %s [[alice 2]]]", e1, e3) {
		t.Fatalf("XPENDING summary: %s", s)
	}
	mustDo(t, c, "XACK", "s", "g", e1, e3) // else the claims below dead-letter them (delivered once)
	groupsInfo := fmt.Sprint(mustDo(t, c, "XINFO", "GROUPS", "s"))
	if !strings.Contains(groupsInfo, "last-delivered-id "+e3) || !strings.Contains(groupsInfo, "entries-read 3") || !strings.Contains(groupsInfo, "lag 0") {
		t.Fatalf("XINFO GROUPS: %s", groupsInfo)
	}
	claim := func() string {
		return fmt.Sprint(mustDo(t, c, "XREADGROUP", "GROUP", "g", "bob", "CLAIM", 0, "STREAMS", "s", ">"))
	}
	if got := claim(); got != "<nil>" && time.Since(sent) < 300*time.Millisecond {
		t.Fatalf("CLAIM 0 before due: %s", got)
	}
	if got := fmt.Sprint(mustDo(t, c, "XCLAIM", "s", "g", "bob", 0, e2)); got != "[]" && time.Since(sent) < 300*time.Millisecond {
		t.Fatalf("XCLAIM 0 before due: %s", got)
	}
	for time.Since(sent) < 310*time.Millisecond {
		time.Sleep(20 * time.Millisecond)
	}
	got = claim()
	if !strings.HasPrefix(got, fmt.Sprintf("[[s [[%s [f 2] ", e2)) || !strings.HasSuffix(got, " 0]]]]") {
		t.Fatalf("CLAIM 0 at due: %s", got)
	}
	pend = fmt.Sprint(mustDo(t, c, "XPENDING", "s", "g", "-", "+", 10))
	if !strings.Contains(pend, fmt.Sprintf("[%s bob ", e2)) || !strings.HasSuffix(pend, " 1]]") {
		t.Fatalf("XPENDING after the claim: %s", pend)
	}
	if n := mustDo(t, c, "XLEN", "dlq").(int64); n != 0 {
		t.Fatalf("dead-lettered %d", n)
	}
}

// TestDelayedXReadGroupBlock: a blocked XREADGROUP CLAIM wakes when a
// delayed entry becomes claimable: one added while it waits (parked by the
// reader's own wake), and one parked by another reader before it blocked;
// with a min-idle-time, that long after the due time. A blocked '>' reader
// without CLAIM parks the entry and waits on; the next entry wakes it.
func TestDelayedXReadGroupBlock(t *testing.T) {
	ts := newTestServer(t)
	admin := ts.client(t)
	mustDo(t, admin, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
	claimBlock := func(c *redis.Client, minIdle int) func() ([]redis.XStream, error) {
		return func() ([]redis.XStream, error) {
			v, err := c.Do(context.Background(), "XREADGROUP", "GROUP", "g", "bob", "BLOCK", 10000, "CLAIM", minIdle, "STREAMS", "s", ">").Result()
			if err != nil {
				return nil, err
			}
			var out []redis.XStream
			for _, s := range v.([]any) {
				kv := s.([]any)
				xs := redis.XStream{Stream: kv[0].(string)}
				for _, e := range kv[1].([]any) {
					xs.Messages = append(xs.Messages, redis.XMessage{ID: e.([]any)[0].(string)})
				}
				out = append(out, xs)
			}
			return out, nil
		}
	}

	ch := goRead(claimBlock(ts.client(t), 0))
	waitBlocked(t, admin, 1)
	id, sent := addDelayed(t, admin, "s", 150, "1")
	r := awaitRead(t, ch)
	notBefore(t, "blocked CLAIM 0 got the entry", sent, time.Now(), 150*time.Millisecond)
	oneEntry(t, r, "s", id)
	mustDo(t, admin, "XACK", "s", "g", id)

	// Parked by a non-blocking reader first; then a CLAIM 100 reader blocks.
	id2, sent := addDelayed(t, admin, "s", 100, "2")
	if got := fmt.Sprint(mustDo(t, admin, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")); got != "<nil>" && time.Since(sent) < 100*time.Millisecond {
		t.Fatalf("'>' before due: %s", got)
	}
	ch = goRead(claimBlock(ts.client(t), 100))
	r = awaitRead(t, ch)
	notBefore(t, "blocked CLAIM 100 got the entry", sent, time.Now(), 200*time.Millisecond)
	oneEntry(t, r, "s", id2)

	// A blocked '>' reader parks the entry and goes on waiting.
	ch = goRead(xreadGroupBlock(ts.client(t), "g", "carol", 10*time.Second, "s", ">"))
	waitBlocked(t, admin, 1)
	id3, _ := addDelayed(t, admin, "s", 100000, "3")
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(fmt.Sprint(mustDo(t, admin, "XPENDING", "s", "g", "-", "+", 10)), "["+id3+"  -1 0]") {
		if time.Now().After(deadline) {
			t.Fatalf("the blocked reader did not park %s: %v", id3, mustDo(t, admin, "XPENDING", "s", "g", "-", "+", 10))
		}
		time.Sleep(10 * time.Millisecond)
	}
	assertStillBlocked(t, ch)
	if n := blockedClients(t, admin); n != 1 {
		t.Fatalf("blocked clients %d", n)
	}
	id4 := mustDo(t, admin, "XADD", "s", "*", "f", "4").(string)
	oneEntry(t, awaitRead(t, ch), "s", id4)

	// An entry due at the end of time: a CLAIM reader parks it once and
	// times out (no timer at an overflowed time, no loop of decisions).
	mustDo(t, admin, "XADD", "far", "DELIVERAT", "9223372036854775807", "*", "f", "x")
	mustDo(t, admin, "XGROUP", "CREATE", "far", "g", "0")
	seq := ts.store.LastSeq()
	if v, err := do(t, admin, "XREADGROUP", "GROUP", "g", "c", "BLOCK", 200, "CLAIM", 1000, "STREAMS", "far", ">"); err != redis.Nil {
		t.Fatalf("XREADGROUP CLAIM over an entry due at the end of time: %v, %v", v, err)
	}
	if n := ts.store.LastSeq() - seq; n > 2 {
		t.Fatalf("the blocked read wrote %d records", n)
	}
	if got := fmt.Sprint(mustDo(t, admin, "XPENDING", "far", "g")); !strings.HasPrefix(got, "[1 ") {
		t.Fatalf("XPENDING far: %s", got)
	}
}

// TestDelayedKeyspace: DEL, RENAME, COPY, MOVE and FLUSHDB carry or drop
// the delays with the entries (and the parked PEL entries with the group):
// a renamed or copied stream's delayed entry stays hidden until due, and a
// stream deleted and created again holds no trace of them.
func TestDelayedKeyspace(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	mustDo(t, c, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
	id, sent := addDelayed(t, c, "s", 400, "1")
	mustDo(t, c, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">") // parks it
	mustDo(t, c, "RENAME", "s", "r")
	mustDo(t, c, "COPY", "r", "cp")
	mustDo(t, c, "COPY", "r", "mv")
	mustDo(t, c, "MOVE", "mv", 1)
	for _, k := range []string{"r", "cp"} {
		if got := xread(t, c, "STREAMS", k, "0"); got != nil && time.Since(sent) < 400*time.Millisecond {
			t.Fatalf("XREAD %s before due: %v", k, got)
		}
		if got := fmt.Sprint(mustDo(t, c, "XPENDING", k, "g", "-", "+", 10)); !strings.Contains(got, "["+id+"  ") {
			t.Fatalf("XPENDING %s: %s", k, got)
		}
	}
	// Deleted, flushed: created again, an entry is read at once.
	mustDo(t, c, "XADD", "d", "DELAY", 100000, "*", "f", "x")
	mustDo(t, c, "DEL", "d")
	mustDo(t, c, "XADD", "d", "*", "f", "y")
	if got := xread(t, c, "STREAMS", "d", "0"); len(got) != 1 {
		t.Fatalf("XREAD of a re-created stream: %v", got)
	}
	c1 := dbClient(t, ts, 1)
	if got := fmt.Sprint(mustDo(t, c1, "XRANGE", "mv", "-", "+")); !strings.Contains(got, id) {
		t.Fatalf("XRANGE of the moved copy: %s", got)
	}
	c2 := dbClient(t, ts, 2)
	mustDo(t, c2, "XADD", "f", "DELAY", 100000, "*", "f", "x")
	mustDo(t, c2, "FLUSHDB")
	mustDo(t, c2, "XADD", "f", "*", "f", "y")
	if got := xread(t, c2, "STREAMS", "f", "0"); len(got) != 1 {
		t.Fatalf("XREAD after FLUSHDB: %v", got)
	}
	for time.Since(sent) < 410*time.Millisecond {
		time.Sleep(20 * time.Millisecond)
	}
	for _, k := range []string{"r", "cp"} {
		if got := xread(t, c, "STREAMS", k, "0"); strings.Join(got, "") != k+":"+id {
			t.Fatalf("XREAD %s at due: %v", k, got)
		}
	}
	if got := xread(t, c1, "STREAMS", "mv", "0"); strings.Join(got, "") != "mv:"+id {
		t.Fatalf("XREAD mv at due: %v", got)
	}
}

// TestDelayedRebuild: a store rebuilt from a snapshot plus the change log
// of a workload of delayed XADDs, parking reads, claims, XNACK, trims,
// RENAME/COPY and a MULTI holds every key and value of the live store.
func TestDelayedRebuild(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	mustDo(t, c, "XADD", "s0", "*", "f", "before")
	snap, err := ts.store.TakeSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		mustDo(t, c, "XGROUP", "CREATE", "s"+strconv.Itoa(i), "g", "0", "MKSTREAM")
	}
	for i := 0; i < 120; i++ {
		k := "s" + strconv.Itoa(i%3)
		switch i % 6 {
		case 0, 1:
			mustDo(t, c, "XADD", k, "DELAY", 20+i%5*30, "*", "f", i)
		case 2:
			mustDo(t, c, "XADD", k, "DELIVERAT", time.Now().Add(40*time.Millisecond).UnixMilli(), "MAXLEN", "~", 30, "*", "f", i)
		case 3:
			mustDo(t, c, "XREADGROUP", "GROUP", "g", "c"+strconv.Itoa(i%2), "COUNT", 2, "STREAMS", k, ">")
		case 4:
			mustDo(t, c, "XREADGROUP", "GROUP", "g", "c2", "COUNT", 3, "CLAIM", 10, "STREAMS", k, ">")
		case 5:
			mustDo(t, c, "XADD", k, "*", "f", i)
			if i%12 == 5 {
				mustDo(t, c, "XAUTOCLAIM", k, "g", "c3", 0, "0", "COUNT", 2)
			}
		}
		if i%20 == 19 {
			if ids, err := c.XRangeN(ctx, k, "-", "+", 2).Result(); err == nil && len(ids) > 0 {
				mustDo(t, c, "XNACK", k, "g", "FAIL", "IDS", 1, ids[0].ID)
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	if _, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "XADD", "s0", "DELAY", 50, "*", "tx", "1")
		p.Do(ctx, "XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s0", ">")
		return nil
	}); err != nil && err != redis.Nil {
		t.Fatal(err)
	}
	mustDo(t, c, "COPY", "s1", "s1copy")
	mustDo(t, c, "RENAME", "s2", "s2new")
	time.Sleep(200 * time.Millisecond)
	for _, k := range []string{"s0", "s1", "s1copy", "s2new"} {
		mustDo(t, c, "XREADGROUP", "GROUP", "g", "c4", "CLAIM", 0, "STREAMS", k, ">")
		mustDo(t, c, "XADD", k, "DELAY", 100000, "*", "f", "parked")
		mustDo(t, c, "XREADGROUP", "GROUP", "g", "c5", "STREAMS", k, ">")
	}
	last := quiesce(t, ts)

	to := filepath.Join(t.TempDir(), "rebuilt")
	info, err := materialize.Rebuild(snap.Path, ts.dir, to, materialize.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Last != last {
		t.Fatalf("rebuilt up to record %d, the live store is at %d", info.Last, last)
	}
	rs, err := materialize.Open(materialize.Options{Dir: to})
	if err != nil {
		t.Fatal(err)
	}
	sameStores(t, ts.store, rs)
	if err := rs.Close(); err != nil {
		t.Fatal(err)
	}
	live := dumpStore(t, ts.store)
	delayed, parked := 0, 0
	for k, v := range live {
		switch {
		case k[0] == 'X' && len(v) > 9 && v[len(v)-9] == 'D':
			delayed++
		case k[0] == 'P' && v[len(v)-1] == 'D' && len(v) == 21:
			parked++
		}
	}
	if delayed == 0 || parked < 4 {
		t.Fatalf("%d delayed entries, %d parked PEL entries in the store: the test covers too little", delayed, parked)
	}
	t.Logf("%d keys, %d delayed entries, %d parked PEL entries", len(live), delayed, parked)
}

// TestDelayedTraced: a traced XADD DELAY stores its trace trailer and its
// delay tail (in that order) with the entry; the XREAD that returns it
// once due links to the XADD's span, and a restart (which replays the
// records Pebble lacks) keeps both.
func TestDelayedTraced(t *testing.T) {
	dir := t.TempDir()
	exp := tracetest.NewInMemoryExporter()
	tel, err := telemetry.Setup(context.Background(), telemetry.Config{SpanExporter: exp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tel.Shutdown(context.Background()) })
	ts := startTestServer(t, dir, func(o *Options) { o.Telemetry = tel })
	c := ts.client(t)
	id, sent := addDelayed(t, c, "q", 150, "1")
	add := spansNamed(t, exp, "XADD", 1)[0]
	tail := func(s *materialize.Store) codec.EntryTail {
		t.Helper()
		pid, _, _, err := codec.ParseID([]byte(id), 0, false)
		if err != nil {
			t.Fatal(err)
		}
		val, ok, err := s.View().Get(codec.StreamEntryKey(0, []byte("q"), pid))
		if err != nil || !ok {
			t.Fatalf("entry %s: %v, %v", id, ok, err)
		}
		_, tl, err := codec.DecodeEntryTail(val)
		if err != nil {
			t.Fatal(err)
		}
		return tl
	}
	tl := tail(ts.store)
	if tl.Trace.SpanID != [8]byte(add.SpanContext.SpanID()) || tl.DueMs < sent.UnixMilli()+150-1 {
		t.Fatalf("stored tail %+v, XADD span %v", tl, add.SpanContext.SpanID())
	}
	ts.Close()
	ts = startTestServer(t, dir, func(o *Options) { o.Telemetry = tel })
	c = ts.client(t)
	if got := tail(ts.store); got != tl {
		t.Fatalf("after a restart: tail %+v, want %+v", got, tl)
	}
	exp.Reset()
	r := awaitRead(t, goRead(xreadBlock(c, 10*time.Second, "q", "0")))
	notBefore(t, "XREAD BLOCK returned the traced delayed entry", sent, time.Now(), 150*time.Millisecond)
	oneEntry(t, r, "q", id)
	var linked bool
	for _, s := range spansNamedNow(exp, "XREAD") {
		linked = linked || len(linkTo(s, add.SpanContext)) == 1
	}
	if !linked {
		t.Errorf("the XREAD that returned the delayed entry does not link to its XADD span")
	}
}
