package broker

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// fakeClock is a controllable Options.Now for tests.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.UnixMilli(1_700_000_000_000)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// withClock installs clk as the server's clock.
func withClock(clk *fakeClock) func(*Options) {
	return func(o *Options) { o.Now = clk.Now }
}

// clientDB returns a go-redis client of ts whose connections SELECT db.
func clientDB(t testing.TB, ts *testServer, db int) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: ts.addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1,
		ReadTimeout: 10 * time.Second, DB: db})
	t.Cleanup(func() { c.Close() })
	return c
}

// singleConnClient returns a client with a pool of one connection, so that
// connection state (CLIENT SETNAME, SELECT) is visible to every command.
func singleConnClient(t testing.TB, ts *testServer) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: ts.addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1,
		ReadTimeout: 10 * time.Second, PoolSize: 1, MinIdleConns: 0})
	t.Cleanup(func() { c.Close() })
	return c
}

// strs converts a raw array reply of bulk strings to []string.
func strs(t testing.TB, v any) []string {
	t.Helper()
	arr, ok := v.([]any)
	if !ok {
		t.Fatalf("reply %#v is not an array", v)
	}
	out := make([]string, len(arr))
	for i, e := range arr {
		s, ok := e.(string)
		if !ok {
			t.Fatalf("element %d of %#v is not a string", i, v)
		}
		out[i] = s
	}
	return out
}

func sortedStrs(t testing.TB, v any) []string {
	t.Helper()
	s := strs(t, v)
	sort.Strings(s)
	return s
}

func eqStrs(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func mustInt(t testing.TB, c *redis.Client, want int64, args ...any) {
	t.Helper()
	got := mustDo(t, c, args...)
	if n, ok := got.(int64); !ok || n != want {
		t.Fatalf("%q = %#v, want %d", args, got, want)
	}
}

func mustStr(t testing.TB, c *redis.Client, want string, args ...any) {
	t.Helper()
	got := mustDo(t, c, args...)
	if s, ok := got.(string); !ok || s != want {
		t.Fatalf("%q = %#v, want %q", args, got, want)
	}
}

func mustNil(t testing.TB, c *redis.Client, args ...any) {
	t.Helper()
	v, err := do(t, c, args...)
	if err != redis.Nil {
		t.Fatalf("%q = %#v, %v; want nil", args, v, err)
	}
}

func TestKeyspaceDelUnlinkExists(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	mustStr(t, c, "OK", "SET", "a", "1")
	mustStr(t, c, "OK", "SET", "b", "2")
	mustDo(t, c, "XADD", "s", "1-1", "f", "v")
	mustStr(t, c, "OK", "SET", "d", "4")

	mustInt(t, c, 4, "EXISTS", "a", "a", "b", "nope", "s")
	mustInt(t, c, 0, "EXISTS", "nope")
	// DEL counts each existing key once, even when named twice.
	mustInt(t, c, 2, "DEL", "a", "a", "s", "nope")
	mustInt(t, c, 0, "EXISTS", "a", "s")
	mustInt(t, c, 0, "XLEN", "s")
	mustInt(t, c, 1, "UNLINK", "b", "missing")
	mustInt(t, c, 0, "UNLINK", "b")
	mustInt(t, c, 1, "EXISTS", "d")
	mustInt(t, c, 1, "DBSIZE")
	mustErr(t, c, "ERR wrong number of arguments for 'del' command", "DEL")
}

func TestKeyspaceType(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	mustStr(t, c, "OK", "SET", "str", "v")
	mustDo(t, c, "XADD", "st", "*", "f", "v")
	mustDo(t, c, "XGROUP", "CREATE", "empty", "g", "$", "MKSTREAM")
	mustStr(t, c, "string", "TYPE", "str")
	mustStr(t, c, "stream", "TYPE", "st")
	mustStr(t, c, "stream", "TYPE", "empty")
	mustStr(t, c, "none", "TYPE", "nope")
	// SET replaces a stream with a string.
	mustStr(t, c, "OK", "SET", "st", "x")
	mustStr(t, c, "string", "TYPE", "st")
	mustStr(t, c, "x", "GET", "st")
	mustErr(t, c, "WRONGTYPE Operation against a key holding the wrong kind of value", "GET", "empty")
}

func TestKeyspaceKeysGlob(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	for _, k := range []string{"hello", "hallo", "hxllo", "hllo", "heeeello", "h*llo", "other", "h\x00llo"} {
		mustStr(t, c, "OK", "SET", k, "v")
	}
	for _, tc := range []struct {
		pattern string
		want    []string
	}{
		{"*", []string{"h*llo", "h\x00llo", "hallo", "heeeello", "hello", "hllo", "hxllo", "other"}},
		{"h?llo", []string{"h*llo", "h\x00llo", "hallo", "hello", "hxllo"}},
		{"h[ae]llo", []string{"hallo", "hello"}},
		{"h[^e]llo", []string{"h*llo", "h\x00llo", "hallo", "hxllo"}},
		{"h[a-f]llo", []string{"hallo", "hello"}},
		{"h*llo", []string{"h*llo", "h\x00llo", "hallo", "heeeello", "hello", "hllo", "hxllo"}},
		{`h\*llo`, []string{"h*llo"}},
		{"o*", []string{"other"}},
		{"nomatch*", []string{}},
		{"hello", []string{"hello"}},
	} {
		got := sortedStrs(t, mustDo(t, c, "KEYS", tc.pattern))
		sort.Strings(tc.want)
		if !eqStrs(got, tc.want) {
			t.Errorf("KEYS %q = %q, want %q", tc.pattern, got, tc.want)
		}
	}
}

// scanAll iterates SCAN to cursor 0 with the given extra arguments and
// returns every key returned, in order, with duplicates.
func scanAll(t testing.TB, c *redis.Client, extra ...any) []string {
	t.Helper()
	var out []string
	cursor := "0"
	for i := 0; ; i++ {
		if i > 100000 {
			t.Fatal("SCAN does not terminate")
		}
		v := mustDo(t, c, append([]any{"SCAN", cursor}, extra...)...)
		arr, ok := v.([]any)
		if !ok || len(arr) != 2 {
			t.Fatalf("SCAN reply %#v", v)
		}
		cursor, ok = arr[0].(string)
		if !ok {
			t.Fatalf("SCAN cursor %#v", arr[0])
		}
		out = append(out, strs(t, arr[1])...)
		if cursor == "0" {
			return out
		}
	}
}

func TestKeyspaceScan(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	ctx := context.Background()
	want := map[string]bool{}
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := 0; i < 300; i++ {
			k := fmt.Sprintf("key:%d", i)
			want[k] = true
			p.Set(ctx, k, i, 0)
		}
		for i := 0; i < 20; i++ {
			k := fmt.Sprintf("stream:%d", i)
			want[k] = true
			p.XAdd(ctx, &redis.XAddArgs{Stream: k, ID: "1-1", Values: []string{"f", "v"}})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	mustInt(t, c, 320, "DBSIZE")

	got := scanAll(t, c, "COUNT", 10)
	seen := map[string]int{}
	for _, k := range got {
		seen[k]++
	}
	for k := range want {
		if seen[k] != 1 {
			t.Errorf("SCAN returned %q %d times, want once", k, seen[k])
		}
	}
	if len(got) != len(want) {
		t.Errorf("SCAN returned %d keys, want %d", len(got), len(want))
	}
	// The iteration took several calls: COUNT bounds each call.
	first := mustDo(t, c, "SCAN", "0", "COUNT", "10").([]any)
	if first[0] == "0" || len(first[1].([]any)) >= 320 {
		t.Errorf("SCAN 0 COUNT 10 = cursor %v with %d keys; want a partial page", first[0], len(first[1].([]any)))
	}

	// TYPE filter.
	streamsGot := scanAll(t, c, "COUNT", 50, "TYPE", "stream")
	sort.Strings(streamsGot)
	var wantStreams []string
	for i := 0; i < 20; i++ {
		wantStreams = append(wantStreams, fmt.Sprintf("stream:%d", i))
	}
	sort.Strings(wantStreams)
	if !eqStrs(streamsGot, wantStreams) {
		t.Errorf("SCAN TYPE stream = %q", streamsGot)
	}
	if s := scanAll(t, c, "TYPE", "string", "COUNT", 1000); len(s) != 300 {
		t.Errorf("SCAN TYPE string returned %d keys, want 300", len(s))
	}

	// MATCH filter.
	m := scanAll(t, c, "MATCH", "key:1?", "COUNT", 7)
	sort.Strings(m)
	var wantM []string
	for i := 10; i < 20; i++ {
		wantM = append(wantM, fmt.Sprintf("key:%d", i))
	}
	sort.Strings(wantM)
	if !eqStrs(m, wantM) {
		t.Errorf("SCAN MATCH key:1? = %q, want %q", m, wantM)
	}

	mustErr(t, c, "ERR invalid cursor", "SCAN", "abc")
	mustErr(t, c, "ERR syntax error", "SCAN", "0", "COUNT", "0")
	mustErr(t, c, "ERR syntax error", "SCAN", "0", "BOGUS", "1")
}

func TestKeyspaceSelectIsolation(t *testing.T) {
	ts := newTestServer(t)
	c0 := ts.client(t)
	c1 := clientDB(t, ts, 1)
	mustStr(t, c0, "OK", "SET", "k", "zero")
	mustNil(t, c1, "GET", "k")
	mustStr(t, c1, "OK", "SET", "k", "one")
	mustDo(t, c1, "XADD", "s", "1-1", "f", "v")
	mustStr(t, c0, "zero", "GET", "k")
	mustStr(t, c1, "one", "GET", "k")
	mustInt(t, c0, 1, "DBSIZE")
	mustInt(t, c1, 2, "DBSIZE")
	mustInt(t, c0, 0, "XLEN", "s")
	mustInt(t, c1, 1, "XLEN", "s")
	if got := sortedStrs(t, mustDo(t, c1, "KEYS", "*")); !eqStrs(got, []string{"k", "s"}) {
		t.Errorf("KEYS * in db 1 = %q", got)
	}
	if got := scanAll(t, c1, "COUNT", 100); len(got) != 2 {
		t.Errorf("SCAN in db 1 = %q", got)
	}
	if got := scanAll(t, c0, "COUNT", 100); !eqStrs(got, []string{"k"}) {
		t.Errorf("SCAN in db 0 = %q", got)
	}

	// SELECT on one connection switches its db.
	sc := singleConnClient(t, ts)
	mustStr(t, sc, "zero", "GET", "k")
	mustStr(t, sc, "OK", "SELECT", "1")
	mustStr(t, sc, "one", "GET", "k")
	mustStr(t, sc, "OK", "SELECT", "15")
	mustNil(t, sc, "GET", "k")
	mustErr(t, sc, "ERR DB index is out of range", "SELECT", "16")
	mustErr(t, sc, "ERR DB index is out of range", "SELECT", "-1")
	mustErr(t, sc, "ERR value is not an integer or out of range", "SELECT", "x")
	// A failed SELECT keeps the current db.
	mustStr(t, sc, "OK", "SET", "k", "fifteen")
	mustStr(t, sc, "fifteen", "GET", "k")
	mustStr(t, c0, "zero", "GET", "k")
}

func TestKeyspaceFlushDBAndFlushAll(t *testing.T) {
	ts := newTestServer(t)
	c0 := ts.client(t)
	c1 := clientDB(t, ts, 1)
	for i := 0; i < 5; i++ {
		mustStr(t, c0, "OK", "SET", fmt.Sprintf("a%d", i), "v")
		mustStr(t, c1, "OK", "SET", fmt.Sprintf("b%d", i), "v")
	}
	mustDo(t, c0, "XADD", "s0", "1-1", "f", "v")
	mustDo(t, c1, "XADD", "s1", "1-1", "f", "v")
	mustInt(t, c0, 6, "DBSIZE")
	mustInt(t, c1, 6, "DBSIZE")

	// The same names in both dbs share their hash slots.
	mustStr(t, c0, "OK", "SET", "same", "zero")
	mustStr(t, c1, "OK", "SET", "same", "one")
	mustDo(t, c0, "XADD", "samestream", "1-1", "f", "v")
	mustDo(t, c1, "XADD", "samestream", "1-1", "f", "v")
	mustStr(t, c1, "OK", "FLUSHDB")
	mustInt(t, c1, 0, "DBSIZE")
	mustInt(t, c0, 8, "DBSIZE")
	mustStr(t, c0, "zero", "GET", "same")
	mustInt(t, c0, 1, "XLEN", "samestream")
	mustInt(t, c0, 2, "DEL", "same", "samestream")
	mustStr(t, c0, "v", "GET", "a3")
	mustInt(t, c0, 1, "XLEN", "s0")
	mustErr(t, c0, "ERR syntax error", "FLUSHDB", "NOW")

	mustStr(t, c1, "OK", "SET", "again", "v")
	mustStr(t, c0, "OK", "FLUSHALL", "SYNC")
	mustInt(t, c0, 0, "DBSIZE")
	mustInt(t, c1, 0, "DBSIZE")
	mustNil(t, c1, "GET", "again")
	if got := strs(t, mustDo(t, c0, "KEYS", "*")); len(got) != 0 {
		t.Errorf("KEYS * after FLUSHALL = %q", got)
	}
}

func TestKeyspaceStreamFreshAfterFlush(t *testing.T) {
	for _, flush := range []string{"FLUSHALL", "FLUSHDB"} {
		t.Run(flush, func(t *testing.T) {
			ts := newTestServer(t)
			c := ts.client(t)
			mustDo(t, c, "XADD", "s", "5-1", "f", "v")
			mustDo(t, c, "XADD", "s", "6-1", "f", "v")
			mustStr(t, c, "OK", "XGROUP", "CREATE", "s", "g", "0")
			mustDo(t, c, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
			mustStr(t, c, "OK", flush)

			mustStr(t, c, "1-1", "XADD", "s", "1-1", "f", "v")
			mustInt(t, c, 1, "XLEN", "s")
			mustErr(t, c, "NOGROUP No such key 's' or consumer group 'g' in XREADGROUP with GROUP option",
				"XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
			mustErr(t, c, "NOGROUP No such key 's' or consumer group 'g'", "XPENDING", "s", "g")
			// The group can be created again and sees only the new entry.
			mustStr(t, c, "OK", "XGROUP", "CREATE", "s", "g", "0")
			res, err := c.XReadGroup(context.Background(), &redis.XReadGroupArgs{Group: "g", Consumer: "c", Streams: []string{"s", ">"}, Block: -1}).Result()
			if err != nil || len(res) != 1 || len(res[0].Messages) != 1 || res[0].Messages[0].ID != "1-1" {
				t.Fatalf("XREADGROUP after %s = %v, %v", flush, res, err)
			}
			ps, err := c.XPending(context.Background(), "s", "g").Result()
			if err != nil || ps.Count != 1 || ps.Lower != "1-1" {
				t.Fatalf("XPENDING after %s = %+v, %v", flush, ps, err)
			}
		})
	}
}

func TestKeyspaceSetExpiry(t *testing.T) {
	clk := newFakeClock()
	ts := newTestServer(t, withClock(clk))
	c := ts.client(t)
	mustStr(t, c, "OK", "SET", "ex", "v", "EX", "10")
	mustStr(t, c, "OK", "SET", "px", "v", "PX", "1500")
	mustStr(t, c, "OK", "SET", "keep", "v")
	mustInt(t, c, 3, "DBSIZE")
	if info := mustDo(t, c, "INFO", "keyspace").(string); !strings.Contains(info, "db0:keys=3,expires=2") {
		t.Errorf("INFO keyspace = %q, want db0:keys=3,expires=2", info)
	}

	clk.Advance(1499 * time.Millisecond)
	mustStr(t, c, "v", "GET", "px")
	clk.Advance(2 * time.Millisecond)
	mustNil(t, c, "GET", "px")
	mustInt(t, c, 0, "EXISTS", "px")
	mustStr(t, c, "v", "GET", "ex")
	waitDBSize(t, c, 2) // as in Redis, an expired key counts until active expiry deletes it

	clk.Advance(9 * time.Second)
	mustNil(t, c, "GET", "ex")
	mustStr(t, c, "none", "TYPE", "ex")
	waitDBSize(t, c, 1)
	if got := strs(t, mustDo(t, c, "KEYS", "*")); !eqStrs(got, []string{"keep"}) {
		t.Errorf("KEYS * = %q, want [keep]", got)
	}
	// An expired key can be set again with NX.
	mustStr(t, c, "OK", "SET", "ex", "new", "NX")
	mustStr(t, c, "new", "GET", "ex")

	// EXAT / PXAT are absolute.
	nowMs := clk.Now().UnixMilli()
	mustStr(t, c, "OK", "SET", "pxat", "v", "PXAT", strconv.FormatInt(nowMs+100, 10))
	mustStr(t, c, "OK", "SET", "exat", "v", "EXAT", strconv.FormatInt(nowMs/1000+100, 10))
	clk.Advance(101 * time.Millisecond)
	mustNil(t, c, "GET", "pxat")
	mustStr(t, c, "v", "GET", "exat")

	mustErr(t, c, "ERR invalid expire time in 'set' command", "SET", "k", "v", "EX", "0")
	mustErr(t, c, "ERR invalid expire time in 'set' command", "SET", "k", "v", "PX", "-5")
	mustErr(t, c, "ERR value is not an integer or out of range", "SET", "k", "v", "EX", "ten")
	mustErr(t, c, "ERR syntax error", "SET", "k", "v", "EX", "1", "PX", "1")
	mustErr(t, c, "ERR syntax error", "SET", "k", "v", "EX")
	mustInt(t, c, 0, "EXISTS", "k")
}

func TestKeyspaceSetOptions(t *testing.T) {
	clk := newFakeClock()
	ts := newTestServer(t, withClock(clk))
	c := ts.client(t)
	mustStr(t, c, "OK", "SET", "k", "v1", "NX")
	mustNil(t, c, "SET", "k", "v2", "NX")
	mustStr(t, c, "v1", "GET", "k")
	mustNil(t, c, "SET", "absent", "v", "XX")
	mustInt(t, c, 0, "EXISTS", "absent")
	mustStr(t, c, "OK", "SET", "k", "v3", "XX")
	mustStr(t, c, "v3", "GET", "k")
	mustStr(t, c, "v3", "SET", "k", "v4", "GET")
	mustStr(t, c, "v4", "GET", "k")
	mustNil(t, c, "SET", "fresh", "v", "GET")
	mustStr(t, c, "v", "GET", "fresh")
	// NX with GET on an existing key returns the old value and does not write.
	mustStr(t, c, "v4", "SET", "k", "v5", "NX", "GET")
	mustStr(t, c, "v4", "GET", "k")
	mustErr(t, c, "ERR syntax error", "SET", "k", "v", "NX", "XX")
	mustErr(t, c, "ERR syntax error", "SET", "k", "v", "KEEPTTL", "EX", "5")
	mustErr(t, c, "ERR syntax error", "SET", "k", "v", "BOGUS")

	// KEEPTTL keeps the deadline; a plain SET clears it.
	mustStr(t, c, "OK", "SET", "t1", "a", "EX", "10")
	mustStr(t, c, "OK", "SET", "t1", "b", "KEEPTTL")
	mustStr(t, c, "OK", "SET", "t2", "a", "EX", "10")
	mustStr(t, c, "OK", "SET", "t2", "b")
	clk.Advance(11 * time.Second)
	mustNil(t, c, "GET", "t1")
	mustStr(t, c, "b", "GET", "t2")

	// GET against a stream is WRONGTYPE and writes nothing.
	mustDo(t, c, "XADD", "s", "1-1", "f", "v")
	mustErr(t, c, "WRONGTYPE Operation against a key holding the wrong kind of value", "SET", "s", "v", "GET")
	mustStr(t, c, "stream", "TYPE", "s")
	mustInt(t, c, 1, "XLEN", "s")
}

func TestConnectionCommands(t *testing.T) {
	clk := newFakeClock()
	ts := newTestServer(t, withClock(clk))
	c := singleConnClient(t, ts)
	mustNil(t, c, "CLIENT", "GETNAME")
	mustStr(t, c, "OK", "CLIENT", "SETNAME", "worker-1")
	mustStr(t, c, "worker-1", "CLIENT", "GETNAME")
	mustErr(t, c, "ERR Client names cannot contain spaces, newlines or special characters.", "CLIENT", "SETNAME", "bad name")
	mustStr(t, c, "worker-1", "CLIENT", "GETNAME")
	if list := mustDo(t, c, "CLIENT", "LIST").(string); !strings.Contains(list, "name=worker-1") {
		t.Errorf("CLIENT LIST = %q, want name=worker-1", list)
	}
	id1, ok := mustDo(t, c, "CLIENT", "ID").(int64)
	if !ok || id1 <= 0 {
		t.Fatalf("CLIENT ID = %v", id1)
	}
	if again := mustDo(t, c, "CLIENT", "ID").(int64); again != id1 {
		t.Errorf("CLIENT ID changed on one connection: %d, %d", id1, again)
	}
	other := singleConnClient(t, ts)
	id2 := mustDo(t, other, "CLIENT", "ID").(int64)
	if id2 == id1 {
		t.Errorf("two connections share CLIENT ID %d", id1)
	}
	mustNil(t, other, "CLIENT", "GETNAME")
	mustErr(t, c, "ERR unknown subcommand 'NOPE'. Try CLIENT HELP.", "CLIENT", "NOPE")

	mustStr(t, c, "hello world", "ECHO", "hello world")
	mustStr(t, c, "a\x00b\r\n", "ECHO", "a\x00b\r\n")
	mustStr(t, c, "PONG", "PING")
	mustStr(t, c, "hi there", "PING", "hi there")
	mustErr(t, c, "ERR wrong number of arguments for 'ping' command", "PING", "a", "b")
	mustErr(t, c, "ERR wrong number of arguments for 'echo' command", "ECHO")

	tm := strs(t, mustDo(t, c, "TIME"))
	if len(tm) != 2 {
		t.Fatalf("TIME = %q", tm)
	}
	now := clk.Now()
	if tm[0] != strconv.FormatInt(now.Unix(), 10) || tm[1] != strconv.Itoa(now.Nanosecond()/1000) {
		t.Errorf("TIME = %q, want [%d %d]", tm, now.Unix(), now.Nanosecond()/1000)
	}
}

func TestServerInfoAndCommand(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	mustStr(t, c, "OK", "SET", "a", "1")
	mustDo(t, c, "XADD", "s", "*", "f", "v")
	info := mustDo(t, c, "INFO").(string)
	for _, want := range []string{"redis_version:", "# Server", "# Clients", "# Keyspace", "db0:keys=2,", "connected_clients:", "blocked_clients:0"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO lacks %q:\n%s", want, info)
		}
	}
	if srv := mustDo(t, c, "INFO", "server").(string); !strings.Contains(srv, "redis_version:") || strings.Contains(srv, "# Keyspace") {
		t.Errorf("INFO server = %q", srv)
	}

	n, ok := mustDo(t, c, "COMMAND", "COUNT").(int64)
	if !ok || n <= 20 {
		t.Errorf("COMMAND COUNT = %v, want > 20", n)
	}
	subs := 0
	for _, names := range subcommands {
		subs += len(names)
	}
	if list := strs(t, mustDo(t, c, "COMMAND", "LIST")); len(list) != int(n)+subs {
		t.Errorf("COMMAND LIST has %d names, want COUNT %d plus %d subcommands (Redis 7.0 lists both)", len(list), n, subs)
	}
	infos, ok := mustDo(t, c, "COMMAND", "INFO", "xadd", "nosuchcmd", "GET").([]any)
	if !ok || len(infos) != 3 {
		t.Fatalf("COMMAND INFO = %#v", infos)
	}
	xadd, ok := infos[0].([]any)
	if !ok || len(xadd) < 6 || xadd[0] != "xadd" || xadd[1] != int64(-5) {
		t.Errorf("COMMAND INFO xadd = %#v, want name xadd arity -5", infos[0])
	} else if xadd[3] != int64(1) || xadd[4] != int64(1) || xadd[5] != int64(1) {
		t.Errorf("COMMAND INFO xadd key spec = %v %v %v, want 1 1 1", xadd[3], xadd[4], xadd[5])
	}
	if infos[1] != nil {
		t.Errorf("COMMAND INFO nosuchcmd = %#v, want nil", infos[1])
	}
	if get, ok := infos[2].([]any); !ok || get[0] != "get" || get[1] != int64(2) {
		t.Errorf("COMMAND INFO GET = %#v", infos[2])
	}

	mustErr(t, c, "NOPROTO unsupported protocol version", "HELLO", "4")
	mustErr(t, c, "ERR unknown command 'FOO', with args beginning with: 'a' 'b' ", "FOO", "a", "b")
	if got := mustDo(t, c, "CONFIG", "GET", "appendfsync").([]any); len(got) != 2 || got[0] != "appendfsync" || got[1] != "everysec" {
		t.Errorf("CONFIG GET appendfsync = %#v", got)
	}
}

func TestQuitClosesConnection(t *testing.T) {
	ts := newTestServer(t)
	nc, br := dialRaw(t, ts.addr)
	rawSend(t, nc, "PING\r\nQUIT\r\nPING\r\n")
	if l := rawLine(t, nc, br, 5*time.Second); l != "+PONG" {
		t.Fatalf("PING = %q", l)
	}
	if l := rawLine(t, nc, br, 5*time.Second); l != "+OK" {
		t.Fatalf("QUIT = %q", l)
	}
	rawExpectClosed(t, nc, br)
}

func TestKeyspaceExpiredKeyReplacedByStream(t *testing.T) {
	clk := newFakeClock()
	ts := newTestServer(t, withClock(clk))
	c := ts.client(t)
	mustStr(t, c, "OK", "SET", "k", "v", "PX", "100")
	mustErr(t, c, "WRONGTYPE Operation against a key holding the wrong kind of value", "XADD", "k", "*", "f", "v")
	clk.Advance(200 * time.Millisecond)
	// The expired string no longer blocks stream commands.
	mustInt(t, c, 0, "XLEN", "k")
	mustStr(t, c, "1-0", "XADD", "k", "1-0", "f", "v")
	mustStr(t, c, "stream", "TYPE", "k")
	mustInt(t, c, 1, "DBSIZE")
	if info := mustDo(t, c, "INFO", "keyspace").(string); !strings.Contains(info, "db0:keys=1,expires=0") {
		t.Errorf("INFO keyspace = %q", info)
	}
	// The stream does not inherit the string's deadline.
	clk.Advance(time.Hour)
	mustInt(t, c, 1, "XLEN", "k")
	mustStr(t, c, "OK", "SET", "e", "v", "EX", "1")
	clk.Advance(2 * time.Second)
	mustStr(t, c, "OK", "XGROUP", "CREATE", "e", "g", "$", "MKSTREAM")
	mustStr(t, c, "stream", "TYPE", "e")
}

func TestClientListConcurrentSelect(t *testing.T) {
	// CLIENT LIST reads every connection's selected db while the owning
	// connections' executors write it in SELECT; run under -race.
	ts := newTestServer(t)
	a := singleConnClient(t, ts)
	b := ts.client(t)
	mustStr(t, a, "PONG", "PING")
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 200; i++ {
			a.Do(context.Background(), "SELECT", i%2)
		}
	}()
	for i := 0; i < 200; i++ {
		if list := mustDo(t, b, "CLIENT", "LIST").(string); !strings.Contains(list, "db=") {
			t.Fatalf("CLIENT LIST = %q", list)
		}
	}
	<-done
}

func TestKeyspaceExpiryExactlyAtDeadline(t *testing.T) {
	clk := newFakeClock()
	ts := newTestServer(t, withClock(clk))
	c := ts.client(t)
	mustStr(t, c, "OK", "SET", "k", "v", "PX", "1000")
	clk.Advance(1000 * time.Millisecond)
	// Redis (db.c keyIsExpired: "return now > when") still serves a key
	// whose deadline equals the current millisecond.
	v, err := do(t, c, "GET", "k")
	clk.Advance(time.Millisecond)
	mustNil(t, c, "GET", "k")
	if err != nil || v != "v" {
		t.Fatalf("SET k v PX 1000, then GET k exactly 1000 ms later: got %v (%v), want \"v\" (Redis expires only when now > deadline)", v, err)
	}
}

// waitDBSize waits until DBSIZE is n: keys past their TTL count until
// active expiry (every 100 ms) deletes them, as in Redis.
func waitDBSize(t testing.TB, c *redis.Client, n int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, err := c.DBSize(context.Background()).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("DBSIZE = %d, want %d (active expiry did not delete the expired keys)", got, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
