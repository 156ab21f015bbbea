package broker

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Idempotent production (Redis 8.6): the expected replies follow the XADD
// and XCFGSET pages and the cases of Redis's tests/unit/type/stream.tcl
// that they describe; redis-server 7.0 has none of it.
// https://redis.io/docs/latest/commands/xadd/
// https://redis.io/docs/latest/commands/xcfgset/

// xinfoIDMP returns the six IDMP fields of XINFO STREAM key, in order.
func xinfoIDMP(t *testing.T, c *redis.Client, key string) string {
	t.Helper()
	r := mustDo(t, c, "XINFO", "STREAM", key).([]any)
	var out []string
	for i := 0; i+1 < len(r); i += 2 {
		switch k := r[i].(string); k {
		case "idmp-duration", "idmp-maxsize", "pids-tracked", "iids-tracked", "iids-added", "iids-duplicates":
			out = append(out, fmt.Sprintf("%s=%v", k, r[i+1]))
		}
	}
	return strings.Join(out, " ")
}

func TestXAddIDMP(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	id1 := mustDo(t, c, "XADD", "s", "IDMP", "p1", "req-1", "*", "f", "v").(string)
	// A duplicate adds nothing and returns the first ID, whatever its fields.
	if got := mustDo(t, c, "XADD", "s", "IDMP", "p1", "req-1", "*", "other", "fields"); got != id1 {
		t.Fatalf("duplicate XADD = %v, want %s", got, id1)
	}
	if n := mustDo(t, c, "XLEN", "s"); n != int64(1) {
		t.Fatalf("XLEN %v after a duplicate", n)
	}
	// Producers are separate; binary and odd IDs are plain IDs.
	id2 := mustDo(t, c, "XADD", "s", "IDMP", "p2", "req-1", "*", "f", "v").(string)
	id3 := mustDo(t, c, "XADD", "s", "IDMP", "p\x00", "*", "*", "f", "v").(string)
	if id2 == id1 || id3 == id2 {
		t.Fatalf("IDs %s %s %s", id1, id2, id3)
	}
	if got := mustDo(t, c, "XADD", "s", "IDMP", "p\x00", "*", "*", "f", "v"); got != id3 {
		t.Fatalf("duplicate of a binary producer = %v, want %s", got, id3)
	}
	if got := xinfoIDMP(t, c, "s"); got != "idmp-duration=100 idmp-maxsize=100 pids-tracked=3 iids-tracked=3 iids-added=3 iids-duplicates=2" {
		t.Fatalf("XINFO STREAM: %s", got)
	}
	// The original ID comes back even after its entry is deleted.
	mustDo(t, c, "XDEL", "s", id1)
	mustDo(t, c, "XTRIM", "s", "MAXLEN", "0")
	if got := mustDo(t, c, "XADD", "s", "IDMP", "p1", "req-1", "*", "f", "v"); got != id1 {
		t.Fatalf("duplicate after XDEL = %v, want %s", got, id1)
	}
	// IDMPAUTO: the same field-value pairs in any order are a duplicate.
	a1 := mustDo(t, c, "XADD", "s", "IDMPAUTO", "p3", "*", "a", "1", "b", "2").(string)
	if got := mustDo(t, c, "XADD", "s", "IDMPAUTO", "p3", "*", "b", "2", "a", "1"); got != a1 {
		t.Fatalf("IDMPAUTO reordered = %v, want %s", got, a1)
	}
	for _, fv := range [][]any{{"a", "1", "b", "3"}, {"a", "1", "c", "2"}, {"a", "1", "b", ""}, {"a", "1"}} {
		args := append([]any{"XADD", "s", "IDMPAUTO", "p3", "*"}, fv...)
		if got := mustDo(t, c, args...); got == a1 {
			t.Fatalf("IDMPAUTO %v deduplicated against a b", fv)
		}
	}
	// Typed, through go-redis.
	ctx := context.Background()
	g1, err := c.XAdd(ctx, &redis.XAddArgs{Stream: "t", ProducerID: "gp", IdempotentID: "x", Values: []any{"f", "v"}}).Result()
	if err != nil {
		t.Fatal(err)
	}
	if g2, err := c.XAdd(ctx, &redis.XAddArgs{Stream: "t", ProducerID: "gp", IdempotentID: "x", Values: []any{"f", "w"}}).Result(); err != nil || g2 != g1 {
		t.Fatalf("go-redis duplicate = %v, %v; want %s", g2, err, g1)
	}
	info, err := c.XInfoStream(ctx, "t").Result()
	if err != nil || info.IIDsAdded != 1 || info.IIDsDuplicates != 1 || info.PIDsTracked != 1 || info.IDMPDuration != 100 || info.IDMPMaxSize != 100 {
		t.Fatalf("go-redis XInfoStream = %+v, %v", info, err)
	}
}

func TestXAddIDMPSyntax(t *testing.T) {
	runScript(t, []scriptStep{
		st("ERR IDMP/IDMPAUTO can be used only with auto-generated IDs", "XADD", "s", "IDMP", "p1", "i1", "1-1", "f", "v"),
		st("ERR IDMP/IDMPAUTO can be used only with auto-generated IDs", "XADD", "s", "IDMPAUTO", "p1", "1-*", "f", "v"),
		st("ERR IDMP/IDMPAUTO specified multiple times", "XADD", "s", "IDMP", "p1", "i1", "IDMPAUTO", "p1", "*", "f", "v"),
		st("ERR IDMP/IDMPAUTO specified multiple times", "XADD", "s", "IDMPAUTO", "p1", "IDMP", "p1", "i1", "*", "f", "v"),
		st("ERR IDMP requires a non-empty producer ID", "XADD", "s", "IDMP", "", "i1", "*", "f", "v"),
		st("ERR IDMP requires a non-empty idempotent ID", "XADD", "s", "IDMP", "p1", "", "*", "f", "v"),
		st("ERR IDMPAUTO requires a non-empty producer ID", "XADD", "s", "IDMPAUTO", "", "*", "f", "v"),
		// IDMP takes its next two arguments, whatever they are: here the
		// iid is "*" and "f" the ID.
		st("ERR Invalid stream ID specified as stream command argument", "XADD", "s", "IDMP", "p1", "*", "f", "v"),
		st("0", "EXISTS", "s"),
		// Options in any order before the ID.
		st("*", "XADD", "s", "IDMP", "p1", "r", "MAXLEN", "~", "100", "*", "f", "v"),
		st("*", "XADD", "s", "MAXLEN", "~", "100", "IDMP", "p1", "r2", "*", "f", "v"),
		st("*", "XADD", "s", "NOMKSTREAM", "IDMP", "p1", "r3", "*", "f", "v"),
		st("*", "XADD", "s", "KEEPREF", "IDMPAUTO", "p1", "*", "f", "v"),
		st("*", "XADD", "s", "IDMPAUTO", "p1", "KEEPREF", "*", "f", "w"),
		st("5", "XLEN", "s"),
		st("redis: nil", "XADD", "nokey", "NOMKSTREAM", "IDMP", "p1", "r", "*", "f", "v"),
		st("0", "EXISTS", "nokey"),
	})
}

func TestXCfgSet(t *testing.T) {
	runScript(t, []scriptStep{
		st("ERR no such key", "XCFGSET", "nokey", "IDMP-DURATION", "5"),
		st("*", "XADD", "s", "IDMP", "p", "req-1", "*", "f", "v"),
		st("ERR At least one parameter (IDMP-DURATION or IDMP-MAXSIZE) is required", "XCFGSET", "s"),
		st("ERR syntax error", "XCFGSET", "s", "IDMP-DURATION"),
		st("ERR syntax error", "XCFGSET", "s", "INVALID", "5"),
		st("ERR value is not an integer or out of range", "XCFGSET", "s", "IDMP-DURATION", "A"),
		st("ERR value is not an integer or out of range", "XCFGSET", "s", "IDMP-DURATION", "3.14"),
		st("ERR value is not an integer or out of range", "XCFGSET", "s", "IDMP-DURATION", "INVALID", "IDMP-MAXSIZE"),
		st("ERR IDMP-DURATION must be between 1 and 86400 seconds", "XCFGSET", "s", "IDMP-DURATION", "0"),
		st("ERR IDMP-DURATION must be between 1 and 86400 seconds", "XCFGSET", "s", "IDMP-DURATION", "86401"),
		st("ERR IDMP-MAXSIZE must be between 1 and 10000 entries", "XCFGSET", "s", "IDMP-MAXSIZE", "10001"),
		st("ERR IDMP-MAXSIZE must be between 1 and 10000 entries", "XCFGSET", "s", "IDMP-MAXSIZE", "-100"),
		// The same values again clear nothing.
		st("OK", "XCFGSET", "s", "IDMP-DURATION", "100", "IDMP-MAXSIZE", "100"),
		// A change clears every producer's IDs; the lifetime counters stay.
		st("OK", "XCFGSET", "s", "IDMP-MAXSIZE", "3"),
		st("OK", "SET", "str", "v"),
		st("WRONGTYPE Operation against a key holding the wrong kind of value", "XCFGSET", "str", "IDMP-MAXSIZE", "3"),
	})
}

// TestXCfgSetEffects: clearing, and eviction at idmp-maxsize (oldest
// first; an evicted ID adds again and evicts the next oldest).
func TestXCfgSetEffects(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	first := mustDo(t, c, "XADD", "s", "IDMP", "p", "req-1", "*", "f", "v")
	// The same values again clear nothing.
	mustDo(t, c, "XCFGSET", "s", "IDMP-DURATION", "100", "IDMP-MAXSIZE", "100")
	if got := xinfoIDMP(t, c, "s"); got != "idmp-duration=100 idmp-maxsize=100 pids-tracked=1 iids-tracked=1 iids-added=1 iids-duplicates=0" {
		t.Fatalf("after XCFGSET with the same values: %s", got)
	}
	mustDo(t, c, "XCFGSET", "s", "IDMP-MAXSIZE", "3")
	if got := xinfoIDMP(t, c, "s"); got != "idmp-duration=100 idmp-maxsize=3 pids-tracked=0 iids-tracked=0 iids-added=1 iids-duplicates=0" {
		t.Fatalf("after XCFGSET: %s", got)
	}
	if got := mustDo(t, c, "XADD", "s", "IDMP", "p", "req-1", "*", "f", "v"); got == first {
		t.Fatal("an ID recorded before XCFGSET's change still deduplicates")
	}
	ids := map[string]any{"req-1": nil}
	for _, r := range []string{"req-2", "req-3", "req-4"} {
		ids[r] = mustDo(t, c, "XADD", "s", "IDMP", "p", r, "*", "f", "v")
	}
	// req-1 was evicted by req-4: adding it again is new, and evicts req-2.
	mustDo(t, c, "XADD", "s", "IDMP", "p", "req-1", "*", "f", "v")
	if got := mustDo(t, c, "XADD", "s", "IDMP", "p", "req-3", "*", "f", "v"); got != ids["req-3"] {
		t.Fatalf("req-3 = %v, want %v", got, ids["req-3"])
	}
	if got := mustDo(t, c, "XADD", "s", "IDMP", "p", "req-2", "*", "f", "v"); got == ids["req-2"] {
		t.Fatal("req-2 should have been evicted")
	}
	if got := xinfoIDMP(t, c, "s"); got != "idmp-duration=100 idmp-maxsize=3 pids-tracked=1 iids-tracked=3 iids-added=7 iids-duplicates=1" {
		t.Fatalf("after the evictions: %s", got)
	}
	// DEL takes the records with the stream.
	mustDo(t, c, "DEL", "s")
	mustDo(t, c, "XADD", "s", "IDMP", "p", "req-3", "*", "f", "v")
	if got := xinfoIDMP(t, c, "s"); got != "idmp-duration=100 idmp-maxsize=100 pids-tracked=1 iids-tracked=1 iids-added=1 iids-duplicates=0" {
		t.Fatalf("after DEL and a new XADD: %s", got)
	}
}

// TestIDMPConfigAndPersistence: CONFIG's stream-idmp-* give new streams
// their settings; records survive a restart; the sweep expires them.
func TestIDMPConfigAndPersistence(t *testing.T) {
	dir := t.TempDir()
	ts := startTestServer(t, dir)
	c := ts.client(t)
	mustErr(t, c, "ERR CONFIG SET failed (possibly related to argument 'stream-idmp-duration') - argument must be between 1 and 86400 inclusive", "CONFIG", "SET", "stream-idmp-duration", "0")
	mustErr(t, c, "ERR CONFIG SET failed (possibly related to argument 'stream-idmp-maxsize') - argument must be between 1 and 10000 inclusive", "CONFIG", "SET", "stream-idmp-maxsize", "10001")
	mustDo(t, c, "CONFIG", "SET", "stream-idmp-duration", "1", "stream-idmp-maxsize", "50")
	if got := fmt.Sprint(mustDo(t, c, "CONFIG", "GET", "stream-idmp-*")); got != "map[stream-idmp-duration:1 stream-idmp-maxsize:50]" && got != "[stream-idmp-duration 1 stream-idmp-maxsize 50]" {
		t.Fatalf("CONFIG GET: %s", got)
	}
	mustDo(t, c, "XADD", "fresh", "*", "f", "v")
	if got := xinfoIDMP(t, c, "fresh"); got != "idmp-duration=1 idmp-maxsize=50 pids-tracked=0 iids-tracked=0 iids-added=0 iids-duplicates=0" {
		t.Fatalf("a new stream: %s", got)
	}
	mustDo(t, c, "XADD", "long", "IDMP", "p", "r", "*", "f", "v")
	mustDo(t, c, "XCFGSET", "long", "IDMP-DURATION", "3600")
	id := mustDo(t, c, "XADD", "long", "IDMP", "p", "r", "*", "f", "v")
	mustDo(t, c, "XADD", "short", "IDMP", "p", "r", "*", "f", "v")
	c.Close()
	ts.Close()

	ts = startTestServer(t, dir)
	c = ts.client(t)
	if got := mustDo(t, c, "XADD", "long", "IDMP", "p", "r", "*", "f", "v"); got != id {
		t.Fatalf("after a restart: %v, want %v", got, id)
	}
	// short's record expires after 1 s (the sweep runs once a second).
	deadline := time.Now().Add(5 * time.Second)
	for xinfoIDMP(t, c, "short") != "idmp-duration=1 idmp-maxsize=50 pids-tracked=0 iids-tracked=0 iids-added=1 iids-duplicates=0" {
		if time.Now().After(deadline) {
			t.Fatalf("short after 5 s: %s", xinfoIDMP(t, c, "short"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := xinfoIDMP(t, c, "long"); got != "idmp-duration=3600 idmp-maxsize=50 pids-tracked=1 iids-tracked=1 iids-added=2 iids-duplicates=1" {
		t.Fatalf("long: %s", got)
	}
}

// TestXNack: XNACK (Redis 8.8) releases pending entries without
// acknowledging them: unowned, delivery time 0, counts by mode, in the
// NACK zone that XREADGROUP CLAIM serves first, in release order.
// https://redis.io/docs/latest/commands/xnack/
func TestXNack(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	ctx := context.Background()
	streamWithGroup(t, c, 5)
	mustDo(t, c, "XREADGROUP", "GROUP", "g", "c1", "COUNT", "4", "STREAMS", "s", ">") // 1..4, count 1
	mustDo(t, c, "XCLAIM", "s", "g", "c1", "0", "2-0", "3-0")                         // 2, 3: count 2
	// Released in the order 3, 1, 2: SILENT undoes a delivery, FAIL keeps
	// the count, FATAL sets the largest; 9-0 is not pending (skipped).
	if n := mustDo(t, c, "XNACK", "s", "g", "SILENT", "IDS", "2", "3-0", "9-0"); n != int64(1) {
		t.Fatalf("XNACK SILENT = %v", n)
	}
	mustDo(t, c, "XNACK", "s", "g", "FAIL", "IDS", "1", "1-0")
	mustDo(t, c, "XNACK", "s", "g", "FATAL", "IDS", "1", "2-0")
	pend := fmt.Sprint(mustDo(t, c, "XPENDING", "s", "g", "-", "+", "10"))
	for _, want := range []string{"[1-0  -1 ", "[2-0  -1 ", "[3-0  -1 ", "[4-0 c1 "} {
		if !strings.Contains(pend, want) {
			t.Fatalf("XPENDING %s: no %q", pend, want)
		}
	}
	if !strings.Contains(pend, " 1] [2-0  ") || !strings.Contains(pend, " 9223372036854775807] [3-0  ") || !strings.Contains(pend, " 1] [4-0") {
		t.Fatalf("XPENDING counts: %s", pend)
	}
	// The summary counts them; no consumer owns them.
	if got := fmt.Sprint(mustDo(t, c, "XPENDING", "s", "g")); got != "[4 1-0 4-0 [[c1 1]]]" {
		t.Fatalf("XPENDING summary: %s", got)
	}
	full, err := c.XInfoStreamFull(ctx, "s", 0).Result()
	if err != nil || full.Groups[0].NackedCount != 3 {
		t.Fatalf("XINFO STREAM FULL nacked-count: %+v, %v", full.Groups, err)
	}
	// Its place in the group's map, as Redis 8.8's t_stream.c writes it:
	// after pel-count, before pending.
	raw := mustDo(t, c, "XINFO", "STREAM", "s", "FULL").([]any)
	g0 := raw[len(raw)-1].([]any)[0].([]any)
	var names []string
	for i := 0; i < len(g0); i += 2 {
		names = append(names, g0[i].(string))
	}
	if got := strings.Join(names, " "); got != "name last-delivered-id entries-read lag pel-count nacked-count pending consumers" {
		t.Fatalf("XINFO STREAM FULL group fields: %s", got)
	}
	// CLAIM serves the NACK zone first, in release order, then idle and new
	// entries.
	got := fmt.Sprint(mustDo(t, c, "XREADGROUP", "GROUP", "g", "c2", "COUNT", "3", "CLAIM", "60000", "STREAMS", "s", ">"))
	if !strings.HasPrefix(got, "[[s [[3-0 [f 3] ") || !strings.Contains(got, "[1-0 [f 1] ") || !strings.Contains(got, " 1] [2-0 [f 2] ") {
		t.Fatalf("CLAIM after XNACK: %s", got)
	}
	if full, err = c.XInfoStreamFull(ctx, "s", 0).Result(); err != nil || full.Groups[0].NackedCount != 0 {
		t.Fatalf("nacked-count after the claim: %+v, %v", full, err)
	}
	// RETRYCOUNT sets the count; FORCE takes an entry nobody read.
	if n := mustDo(t, c, "XNACK", "s", "g", "FAIL", "FORCE", "IDS", "2", "5-0", "6-0", "RETRYCOUNT", "7"); n != int64(1) {
		t.Fatalf("XNACK FORCE = %v", n)
	}
	if got := fmt.Sprint(mustDo(t, c, "XPENDING", "s", "g", "5-0", "5-0", "1")); !strings.HasPrefix(got, "[[5-0  ") || !strings.HasSuffix(got, " 7]]") {
		t.Fatalf("forced entry: %s", got)
	}
	// XACK of a released entry.
	if n := mustDo(t, c, "XACK", "s", "g", "5-0"); n != int64(1) {
		t.Fatalf("XACK of a NACKed entry = %v", n)
	}
	if full, err = c.XInfoStreamFull(ctx, "s", 0).Result(); err != nil || full.Groups[0].NackedCount != 0 || full.Groups[0].PelCount != 4 {
		t.Fatalf("after XACK: %+v", full.Groups[0])
	}
}

func TestXNackErrors(t *testing.T) {
	runScript(t, script(addN("s", 2), []scriptStep{
		st("OK", "XGROUP", "CREATE", "s", "g", "0"),
		st("ERR wrong number of arguments for 'xnack' command", "XNACK", "s", "g", "FAIL", "IDS", "1"),
		st("ERR mode must be SILENT, FAIL, or FATAL", "XNACK", "s", "g", "LOUD", "IDS", "1", "1-0"),
		st("ERR numids must be a positive integer", "XNACK", "s", "g", "FAIL", "IDS", "0", "1-0"),
		st("ERR numids must be a positive integer", "XNACK", "s", "g", "FAIL", "IDS", "x", "1-0"),
		st("ERR number of IDs doesn't match numids", "XNACK", "s", "g", "FAIL", "IDS", "3", "1-0", "2-0"),
		st("ERR Invalid RETRYCOUNT value, must be >= 0", "XNACK", "s", "g", "FAIL", "IDS", "1", "1-0", "RETRYCOUNT", "-1"),
		st("ERR Unrecognized XNACK option 'LATER'", "XNACK", "s", "g", "FAIL", "IDS", "1", "1-0", "LATER"),
		st("ERR syntax error, expected IDS keyword", "XNACK", "s", "g", "FAIL", "FORCE", "RETRYCOUNT", "1"),
		st("NOGROUP No such key 's' or consumer group 'nog'", "XNACK", "s", "nog", "FAIL", "IDS", "1", "1-0"),
		st("NOGROUP No such key 'nokey' or consumer group 'g'", "XNACK", "nokey", "g", "FAIL", "IDS", "1", "1-0"),
		st("ERR Invalid stream ID specified as stream command argument", "XNACK", "s", "g", "FAIL", "IDS", "2", "1-0", "bad"),
		st("0", "XNACK", "s", "g", "FAIL", "IDS", "1", "1-0"),
	}))
}

// TestXReadMaxCountMaxSize: XREAD and XREADGROUP MAXCOUNT and MAXSIZE
// (Redis 8.10): caps across all the streams of one read, in the order
// given; the streams after the cap are skipped, and the first entry always
// comes, whatever its size. XREADGROUP delivers only what it returns.
// https://redis.io/docs/latest/commands/xread/
func TestXReadMaxCountMaxSize(t *testing.T) {
	runScript(t, script(addN("s1", 3), addN("s2", 3), addN("s3", 3), []scriptStep{
		st("[[s1 [[1-0 [f 1]] [2-0 [f 2]]]] [s2 [[1-0 [f 1]]]]]", "XREAD", "COUNT", "2", "MAXCOUNT", "3", "STREAMS", "s1", "s2", "s3", "0", "0", "0"),
		st("[[s1 [[1-0 [f 1]] [2-0 [f 2]] [3-0 [f 3]]]] [s2 [[1-0 [f 1]]]]]", "XREAD", "MAXCOUNT", "4", "STREAMS", "s1", "s2", "s3", "0", "0", "0"),
		st("ERR MAXCOUNT must be a positive integer", "XREAD", "MAXCOUNT", "0", "STREAMS", "s1", "0"),
		st("ERR MAXCOUNT must be a positive integer", "XREAD", "MAXCOUNT", "x", "STREAMS", "s1", "0"),
		st("ERR MAXSIZE must be a positive integer", "XREAD", "MAXSIZE", "-1", "STREAMS", "s1", "0"),
		st("ERR MAXCOUNT must be greater than or equal to COUNT", "XREAD", "COUNT", "3", "MAXCOUNT", "2", "STREAMS", "s1", "0"),
		// MAXSIZE: entries of 5 bytes here ("1-0" + "f" + "1"): 12 bytes
		// take two; 1 byte still takes the first.
		st("[[s1 [[1-0 [f 1]] [2-0 [f 2]]]]]", "XREAD", "MAXSIZE", "12", "STREAMS", "s1", "s2", "0", "0"),
		st("[[s1 [[1-0 [f 1]]]]]", "XREAD", "MAXSIZE", "1", "STREAMS", "s1", "s2", "0", "0"),
		st("[[s1 [[1-0 [f 1]] [2-0 [f 2]] [3-0 [f 3]]]] [s2 [[1-0 [f 1]]]]]", "XREAD", "MAXSIZE", "20", "STREAMS", "s1", "s2", "0", "0"),
		// XREADGROUP: what is not returned is not delivered.
		st("OK", "XGROUP", "CREATE", "s1", "g", "0"),
		st("OK", "XGROUP", "CREATE", "s2", "g", "0"),
		st("[[s1 [[1-0 [f 1]] [2-0 [f 2]]]]]", "XREADGROUP", "GROUP", "g", "c", "MAXCOUNT", "2", "STREAMS", "s1", "s2", ">", ">"),
		st("[2 1-0 2-0 [[c 2]]]", "XPENDING", "s1", "g"),
		st("[0 <nil> <nil> <nil>]", "XPENDING", "s2", "g"),
		st("[[s1 [[3-0 [f 3]]]] [s2 [[1-0 [f 1]]]]]", "XREADGROUP", "GROUP", "g", "c", "MAXSIZE", "10", "STREAMS", "s1", "s2", ">", ">"),
		st("[1 1-0 1-0 [[c 1]]]", "XPENDING", "s2", "g"),
		// History reads are capped the same way.
		st("[[s1 [[1-0 [f 1]]]]]", "XREADGROUP", "GROUP", "g", "c", "MAXCOUNT", "1", "STREAMS", "s1", "s2", "0", "0"),
	}))
}

// TestIDMPRenameExpires: RENAME and COPY take a stream's idempotent IDs
// along, and the sweep still expires them under the new name.
func TestIDMPRenameExpires(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	mustDo(t, c, "CONFIG", "SET", "stream-idmp-duration", "1")
	mustDo(t, c, "XADD", "a", "IDMP", "p", "r", "*", "f", "v")
	mustDo(t, c, "RENAME", "a", "b")
	mustDo(t, c, "COPY", "b", "c")
	want := "idmp-duration=1 idmp-maxsize=100 pids-tracked=0 iids-tracked=0 iids-added=1 iids-duplicates=0"
	deadline := time.Now().Add(5 * time.Second)
	for xinfoIDMP(t, c, "b") != want || xinfoIDMP(t, c, "c") != want {
		if time.Now().After(deadline) {
			t.Fatalf("after 5 s: b %s; c %s", xinfoIDMP(t, c, "b"), xinfoIDMP(t, c, "c"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDeadLetters: XGROUP DEADLETTER (a Sediment extension,
// docs/rfcs/20261126_dead_letters_delayed_delivery.md): a claim that meets
// an entry delivered MAXDELIVERIES times moves it, with its delivery
// history, to the dead-letter stream, and goes on with the next.
func TestDeadLetters(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	streamWithGroup(t, c, 3)
	for _, bad := range [][]any{
		{"XGROUP", "DEADLETTER", "nokey", "g", "dlq", "MAXDELIVERIES", "2"},
		{"XGROUP", "DEADLETTER", "s", "nog", "dlq", "MAXDELIVERIES", "2"},
		{"XGROUP", "DEADLETTER", "s", "g", "dlq", "MAXDELIVERIES", "0"},
		{"XGROUP", "DEADLETTER", "s", "g", "s", "MAXDELIVERIES", "2"},
		{"XGROUP", "DEADLETTER", "s", "g", "dlq"},
		{"XGROUP", "DEADLETTER", "s", "g", "dlq", "MAXCOUNT", "2"},
	} {
		if _, err := do(t, c, bad...); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
	mustErr(t, c, "ERR MAXDELIVERIES must be a positive integer", "XGROUP", "DEADLETTER", "s", "g", "dlq", "MAXDELIVERIES", "0")
	mustErr(t, c, "ERR the dead-letter stream must be another key", "XGROUP", "DEADLETTER", "s", "g", "s", "MAXDELIVERIES", "2")
	mustDo(t, c, "XGROUP", "DEADLETTER", "s", "g", "dlq", "MAXDELIVERIES", "2")
	info := func() string { return fmt.Sprint(mustDo(t, c, "XINFO", "DEADLETTER", "s", "g")) }
	if got := info(); got != "[dead-letter-key dlq max-deliveries 2 dead-lettered 0]" {
		t.Fatalf("XINFO DEADLETTER: %s", got)
	}
	mustDo(t, c, "XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s", ">")
	mustDo(t, c, "XCLAIM", "s", "g", "c2", "0", "1-0") // 1-0 delivered twice
	// CLAIM moves 1-0 and claims the others (delivered once).
	got := fmt.Sprint(mustDo(t, c, "XREADGROUP", "GROUP", "g", "c3", "CLAIM", "0", "STREAMS", "s", ">"))
	if strings.Contains(got, "1-0") || !strings.Contains(got, "[2-0 [f 2] ") || !strings.Contains(got, "[3-0 [f 3] ") {
		t.Fatalf("CLAIM with dead letters: %s", got)
	}
	dl := fmt.Sprint(mustDo(t, c, "XRANGE", "dlq", "-", "+"))
	if !strings.HasSuffix(dl, " [dl-stream s dl-group g dl-id 1-0 dl-deliveries 2 dl-consumer c2 f 1]]]") {
		t.Fatalf("dead-letter stream: %s", dl)
	}
	if got := fmt.Sprint(mustDo(t, c, "XPENDING", "s", "g")); got != "[2 2-0 3-0 [[c3 2]]]" {
		t.Fatalf("XPENDING: %s", got)
	}
	// XAUTOCLAIM moves both (delivered twice now): nothing claimed.
	if got := fmt.Sprint(mustDo(t, c, "XAUTOCLAIM", "s", "g", "c4", "0", "0")); got != "[0-0 [] []]" {
		t.Fatalf("XAUTOCLAIM with dead letters: %s", got)
	}
	if got := info(); got != "[dead-letter-key dlq max-deliveries 2 dead-lettered 3]" {
		t.Fatalf("XINFO DEADLETTER: %s", got)
	}
	if n := mustDo(t, c, "XLEN", "dlq"); n != int64(3) {
		t.Fatalf("XLEN dlq = %v", n)
	}
	// OFF: claims deliver again; the count stays.
	mustDo(t, c, "XGROUP", "DEADLETTER", "s", "g", "OFF")
	if got := info(); got != "[dead-letter-key <nil> max-deliveries 0 dead-lettered 3]" {
		t.Fatalf("XINFO DEADLETTER after OFF: %s", got)
	}
	// A dead-letter key of another type fails the claim, which changes nothing.
	mustDo(t, c, "XADD", "s", "4-0", "f", "4")
	mustDo(t, c, "XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s", ">")
	mustDo(t, c, "XCLAIM", "s", "g", "c1", "0", "4-0")
	mustDo(t, c, "SET", "str", "v")
	mustDo(t, c, "XGROUP", "DEADLETTER", "s", "g", "str", "MAXDELIVERIES", "1")
	mustErr(t, c, "WRONGTYPE Operation against a key holding the wrong kind of value", "XAUTOCLAIM", "s", "g", "c4", "0", "0")
	if got := fmt.Sprint(mustDo(t, c, "XPENDING", "s", "g")); got != "[1 4-0 4-0 [[c1 1]]]" {
		t.Fatalf("XPENDING after the failed claim: %s", got)
	}
}

// TestXIDMPRecord: XIDMPRECORD (Redis 8.6.2) records a pair an IDMP XADD
// would then find; the errors in the order and words of Redis's
// xidmprecordCommand (the page lists the cases only).
// https://redis.io/docs/latest/commands/xidmprecord/
func TestXIDMPRecord(t *testing.T) {
	c := newTestServer(t).client(t)
	// Records expire idmp-duration after their entry's ID time: IDs of now.
	var ids []string
	for _, v := range []string{"a", "b", "c"} {
		ids = append(ids, mustDo(t, c, "XADD", "s", "*", "f", v).(string))
	}
	mustDo(t, c, "SET", "str", "x")
	ms, _, _ := strings.Cut(ids[0], "-")
	for _, tc := range []struct {
		want string
		args []any
	}{
		{"ERR wrong number of arguments for 'xidmprecord' command", []any{"s", "p", "i"}},
		{"ERR Invalid stream ID specified as stream command argument", []any{"s", "", "", "*"}},
		{"ERR Invalid stream ID specified as stream command argument", []any{"nokey", "p", "i", "+"}},
		{"ERR producer ID must be non-empty", []any{"nokey", "", "", ids[0]}},
		{"ERR idempotent ID must be non-empty", []any{"nokey", "p", "", ids[0]}},
		{"ERR no such key", []any{"nokey", "p", "i", ids[0]}},
		{"WRONGTYPE Operation against a key holding the wrong kind of value", []any{"str", "p", "i", ids[0]}},
		{"ERR No such message in stream", []any{"s", "p", "i", "9999999999999-0"}},
		{"OK", []any{"s", "p", "i1", ids[0]}},
		{"OK", []any{"s", "p", "i1", ids[0]}}, // the same pair again
		{"ERR IID already exists for this producer with a different stream ID", []any{"s", "p", "i1", ids[1]}},
		{"OK", []any{"s", "q", "i1", ids[1]}},
	} {
		got, err := c.Do(context.Background(), append([]any{"XIDMPRECORD"}, tc.args...)...).Result()
		s := fmt.Sprint(got)
		if err != nil {
			s = err.Error()
		}
		if s != tc.want {
			t.Fatalf("XIDMPRECORD %v = %s, want %s", tc.args, s, tc.want)
		}
	}
	// A strict ID without its sequence is ms-0 (the stream's first entry).
	if got := mustDo(t, c, "XIDMPRECORD", "s", "p", "i1", ms); got != "OK" || ids[0] != ms+"-0" {
		t.Fatalf("XIDMPRECORD with %s = %v (first entry %s)", ms, got, ids[0])
	}
	// An IDMP XADD finds the pairs: the entries recorded, nothing added.
	if got := mustDo(t, c, "XADD", "s", "IDMP", "p", "i1", "*", "f", "z"); got != ids[0] {
		t.Fatalf("XADD IDMP p i1 = %v, want %s", got, ids[0])
	}
	if got := mustDo(t, c, "XADD", "s", "IDMP", "q", "i1", "*", "f", "z"); got != ids[1] {
		t.Fatalf("XADD IDMP q i1 = %v, want %s", got, ids[1])
	}
	if got := xinfoIDMP(t, c, "s"); got != "idmp-duration=100 idmp-maxsize=100 pids-tracked=2 iids-tracked=2 iids-added=2 iids-duplicates=2" {
		t.Fatalf("XINFO STREAM: %s", got)
	}
	mustDo(t, c, "XDEL", "s", ids[2])
	if _, err := c.Do(context.Background(), "XIDMPRECORD", "s", "p", "i3", ids[2]).Result(); err == nil || err.Error() != "ERR No such message in stream" {
		t.Fatalf("XIDMPRECORD of a deleted entry: %v", err)
	}
	// The producer keeps idmp-maxsize records: a new one evicts its oldest.
	mustDo(t, c, "XCFGSET", "s", "IDMP-MAXSIZE", "1")
	mustDo(t, c, "XIDMPRECORD", "s", "p", "i1", ids[0])
	mustDo(t, c, "XIDMPRECORD", "s", "p", "i2", ids[1])
	if got := xinfoIDMP(t, c, "s"); got != "idmp-duration=100 idmp-maxsize=1 pids-tracked=1 iids-tracked=1 iids-added=4 iids-duplicates=2" {
		t.Fatalf("XINFO STREAM after the eviction: %s", got)
	}
	if got := mustDo(t, c, "XADD", "s", "IDMP", "p", "i1", "*", "f", "new"); got == ids[0] {
		t.Fatalf("i1 was evicted, but XADD IDMP p i1 found %v", got)
	}
}
