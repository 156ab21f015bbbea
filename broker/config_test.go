package broker

import (
	"context"
	"fmt"
	"net"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sediment-dev/sediment/materialize"
)

// configExamples are valid CONFIG SET values, other than the default, of
// every settable parameter TestConfigParamsLikeRedis sets on both servers.
var configExamples = map[string]string{
	"hash-max-listpack-entries":         "100",
	"hash-max-listpack-value":           "1kb",
	"zset-max-listpack-entries":         "1k",
	"zset-max-listpack-value":           "0",
	"list-max-listpack-size":            "-5",
	"list-compress-depth":               "3",
	"set-max-intset-entries":            "9223372036854775807",
	"hll-sparse-max-bytes":              "2mb",
	"busy-reply-threshold":              "300",
	"hz":                                "1000",
	"dynamic-hz":                        "NO",
	"active-expire-effort":              "10",
	"maxmemory":                         "1gb",
	"maxmemory-policy":                  "ALLKEYS-LRU",
	"maxmemory-samples":                 "64",
	"lfu-log-factor":                    "0",
	"lfu-decay-time":                    "9",
	"loglevel":                          "Debug",
	"tcp-keepalive":                     "0",
	"lazyfree-lazy-eviction":            "yes",
	"lazyfree-lazy-expire":              "yes",
	"lazyfree-lazy-server-del":          "yes",
	"lazyfree-lazy-user-del":            "yes",
	"lazyfree-lazy-user-flush":          "yes",
	"activerehashing":                   "no",
	"activedefrag":                      "no",
	"replica-read-only":                 "no",
	"min-replicas-to-write":             "2",
	"repl-backlog-size":                 "10mb",
	"stop-writes-on-bgsave-error":       "no",
	"rdbcompression":                    "no",
	"aof-use-rdb-preamble":              "no",
	"no-appendfsync-on-rewrite":         "yes",
	"auto-aof-rewrite-percentage":       "50",
	"auto-aof-rewrite-min-size":         "1g",
	"save":                              "  3600 1   300 100 ",
	"appendfsync":                       "always",
	"maxclients":                        "100",
	"timeout":                           "300",
	"notify-keyspace-events":            "KEA",
	"slowlog-log-slower-than":           "-1",
	"slowlog-max-len":                   "5",
	"latency-monitor-threshold":         "100",
	"latency-tracking":                  "no",
	"tracking-table-max-keys":           "10",
	"acllog-max-len":                    "3",
	"stream-node-max-entries":           "0",
	"stream-node-max-bytes":             "1kb",
	"latency-tracking-info-percentiles": "50 99.9",
	"client-output-buffer-limit":        "normal 10mb 5mb 3 REPLICA 1kb 1k 0 PubSub 64mb 0 9",
}

// configNotCompared are parameters whose values differ between the two
// test servers by their set-up (ports, directories, start options), or
// whose CONFIG SET would change the test servers' behaviour (bind, port,
// requirepass, appendonly, protected-mode).
var configNotCompared = map[string]bool{
	"port": true, "bind": true, "dir": true, "appendonly": true, "appendfsync": true, "save": true,
	"loglevel": true, "requirepass": true, "protected-mode": true, "maxclients": true,
	"aclfile": true, "proto-max-bulk-len": true, "client-query-buffer-limit": true,
	"daemonize": true, "pidfile": true, "logfile": true, "tcp-backlog": true,
}

// TestConfigParamsLikeRedis checks every registered parameter that Redis
// 7.0 has against redis-server: its value at start, CONFIG SET of a bad
// value (Redis's reason, or its immutable/protected refusal), and CONFIG
// SET of a good value as CONFIG GET then reports it, under the name and
// under its alias.
func TestConfigParamsLikeRedis(t *testing.T) {
	rc := confDial(t, confStartRedis(t))
	ts := newTestServer(t)
	sc := confDial(t, ts.addr)
	get := func(c *confConn, name string) string {
		t.Helper()
		r, err := c.do("CONFIG", "GET", name)
		if err != nil || len(r.arr) != 2 {
			t.Fatalf("CONFIG GET %s: %v %v", name, r, err)
		}
		return r.arr[1].str
	}
	compared := 0
	for _, p := range configParams {
		if r, err := rc.do("CONFIG", "GET", p.name); err != nil || len(r.arr) == 0 {
			continue // Sediment's own (min-free-disk) or newer than Redis 7.0
		}
		compared++
		if configNotCompared[p.name] {
			continue
		}
		if p.set != nil && configExamples[p.name] == "" {
			t.Errorf("%s: settable, with no example in configExamples", p.name)
			continue
		}
		if r, s := get(rc, p.name), get(sc, p.name); r != s {
			t.Errorf("CONFIG GET %s at start: redis %q, sediment %q", p.name, r, s)
		}
		for _, v := range []string{"zz_bad", configExamples[p.name]} {
			if v == "" {
				continue
			}
			want, _ := rc.do("CONFIG", "SET", p.name, v)
			got, _ := sc.do("CONFIG", "SET", p.name, v)
			if !want.equal(got) {
				t.Errorf("CONFIG SET %s %q: redis %v, sediment %v", p.name, v, want, got)
			}
			for _, name := range []string{p.name, p.alias} {
				if name != "" && get(rc, name) != get(sc, name) {
					t.Errorf("CONFIG GET %s after SET %q: redis %q, sediment %q", name, v, get(rc, name), get(sc, name))
				}
			}
		}
	}
	if compared < 60 {
		t.Fatalf("compared %d parameters with Redis's, want at least 60", compared)
	}
}

// CONFIG SET's errors in the order they win, aliases (not duplicates of
// their parameter), arity, CONFIG GET's names as given, and
// client-output-buffer-limit's syntax, as both servers reply them
// (conformance cases: RESP2 and RESP3).
func init() {
	conformanceCases = append(conformanceCases, confCase{name: "config set errors", steps: []confStep{
		cc("CONFIG", "SET", "hz"),
		cc("CONFIG", "SET", "hz", "5", "maxmemory"),
		cc("CONFIG", "SET", "nosuch", "1", "databases", "3"),
		cc("CONFIG", "SET", "databases", "3", "nosuch", "1"),
		cc("CONFIG", "SET", "hz", "5", "HZ", "6"),
		cc("CONFIG", "SET", "hash-max-listpack-entries", "5", "hash-max-ziplist-entries", "6"),
		cc("CONFIG", "SET", "hz", "5", "maxmemory", "bad"),
		cc("CONFIG", "SET", "hz", "5", "hash-max-ziplist-value", "bad"),
		cc("CONFIG", "SET", "dbfilename", "x.rdb"),
		cc("CONFIG", "SET", "DBFILENAME", "x.rdb", "hz", "bad"),
		cc("CONFIG", "GET", "hz"), // unchanged by the failed SETs
		cc("CONFIG", "GET", "MaxMemory"),
		cc("CONFIG", "GET", "lua-time-limit"),
		cc("CONFIG", "GET", "nosuch"),
		cc("CONFIG", "GET", "hz", "HZ", "hz"),
		cc("CONFIG", "GET"),
		cc("CONFIG", "SET", "hz", "10", "lua-time-limit", "5000"),
		cc("CONFIG", "SET", "hash-max-listpack-entries", "512"), // back to the default for the cases after this one
		cc("CONFIG", "SET", "client-output-buffer-limit", "normal 1 2"),
		cc("CONFIG", "SET", "client-output-buffer-limit", "bogus 1 2 3"),
		cc("CONFIG", "SET", "client-output-buffer-limit", "master 1 2 3"),
		cc("CONFIG", "SET", "client-output-buffer-limit", "normal x 2 3"),
		cc("CONFIG", "SET", "client-output-buffer-limit", "normal 1 2 -3"),
		cc("CONFIG", "SET", "client-output-buffer-limit", "normal 1 2 x"),
		cc("CONFIG", "SET", "client-output-buffer-limit", ""),
		cc("CONFIG", "GET", "client-output-buffer-limit"),
	}})
}

// TestConfigGetGlobLikeRedis: CONFIG GET of a glob gives both names of an
// aliased parameter (Redis's order varies: compared as sorted pairs).
func TestConfigGetGlobLikeRedis(t *testing.T) {
	rc := confDial(t, confStartRedis(t))
	ts := newTestServer(t)
	sc := confDial(t, ts.addr)
	for _, pat := range []string{"hash-max-*", "*MAXMEMORY*", "zset-max-[lz]i*"} {
		want, _ := rc.do("CONFIG", "GET", pat)
		got, _ := sc.do("CONFIG", "GET", pat)
		if w, g := configPairs(want), configPairs(got); !slices.Equal(w, g) {
			t.Errorf("CONFIG GET %s: redis %v, sediment %v", pat, w, g)
		}
	}
}

// configPairs returns a CONFIG GET reply's names, sorted, leaving out the
// Redis parameters Sediment does not have.
func configPairs(r confReply) []string {
	var out []string
	for i := 0; i+1 < len(r.arr); i += 2 {
		if configByName[r.arr[i].str] != nil {
			out = append(out, r.arr[i].str+"="+r.arr[i+1].str)
		}
	}
	sort.Strings(out)
	return out
}

// TestConfigParamsDocumented: docs/operations.md's parameter table names
// every registered parameter, and every parameter it names is registered.
func TestConfigParamsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	sec := string(doc)
	i := strings.Index(sec, "## CONFIG parameters")
	if i < 0 {
		t.Fatal("docs/operations.md has no \"## CONFIG parameters\" section")
	}
	sec = sec[i+3:]
	if j := strings.Index(sec, "\n## "); j >= 0 {
		sec = sec[:j]
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z-]+)`").FindAllStringSubmatch(sec, -1) {
		documented[m[1]] = true
	}
	for _, p := range configParams {
		if !documented[p.name] {
			t.Errorf("%s is not in docs/operations.md's CONFIG table", p.name)
		}
		delete(documented, p.name)
	}
	for n := range documented {
		t.Errorf("docs/operations.md documents %s, which CONFIG does not have", n)
	}
}

// TestConfigSetEffects: the parameters with an effect take it at once.
func TestConfigSetEffects(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	c := ts.client(t)

	// appendfsync: the store's policy, and INFO.
	mustDo(t, c, "CONFIG", "SET", "appendfsync", "always")
	if p := ts.store.Policy(); p != materialize.SyncAlways {
		t.Fatalf("store policy after CONFIG SET appendfsync always: %v", p)
	}
	if info := c.Info(ctx, "persistence").Val(); !strings.Contains(info, "appendfsync:always") {
		t.Fatalf("INFO persistence after appendfsync always:\n%s", info)
	}
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	mustDo(t, c, "CONFIG", "SET", "appendfsync", "everysec")

	// maxclients: a connection beyond it is refused.
	mustDo(t, c, "CONFIG", "SET", "maxclients", "2")
	c2 := ts.client(t)
	if err := c2.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	nc, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 128)
	n, _ := nc.Read(buf)
	nc.Close()
	if got := string(buf[:n]); got != "-ERR max number of clients reached\r\n" {
		t.Fatalf("third connection under maxclients 2: %q", got)
	}
	if info := c.Info(ctx, "clients").Val(); !strings.Contains(info, "maxclients:2\r\n") {
		t.Fatalf("INFO clients after maxclients 2:\n%s", info)
	}
	c2.Close()
	mustDo(t, c, "CONFIG", "SET", "maxclients", "10000")

	// timeout: turned on at run time, it closes an idle connection, not
	// one blocked in a command.
	idle, blocked := ts.client(t), ts.client(t)
	idle.Ping(ctx)
	blockedDone := make(chan error, 1)
	go func() { blockedDone <- blocked.BLPop(ctx, 0, "nothing").Err() }()
	waitBlocked(t, c, 1)
	mustDo(t, c, "CONFIG", "SET", "timeout", "1")
	addr := idleAddr(t, idle)
	for deadline := time.Now().Add(10 * time.Second); strings.Contains(clientList(t, c), addr); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the idle client is still connected 10 s after CONFIG SET timeout 1")
		}
	}
	select {
	case err := <-blockedDone:
		t.Fatalf("blocked BLPOP ended under timeout: %v", err)
	default:
	}
	mustDo(t, c, "CONFIG", "SET", "timeout", "0")
	c.LPush(ctx, "nothing", "x")
	if err := <-blockedDone; err != nil {
		t.Fatalf("blocked BLPOP: %v", err)
	}

	// acllog-max-len bounds ACL LOG.
	mustDo(t, c, "CONFIG", "SET", "acllog-max-len", "2")
	for i := range 4 {
		c.Do(ctx, "AUTH", fmt.Sprintf("nosuch%d", i), "pw")
	}
	if n := len(c.Do(ctx, "ACL", "LOG").Val().([]any)); n != 2 {
		t.Fatalf("ACL LOG under acllog-max-len 2: %d entries", n)
	}

	// maxmemory and its policy are stored and reported by INFO.
	mustDo(t, c, "CONFIG", "SET", "maxmemory", "1mb", "maxmemory-policy", "allkeys-lru")
	if info := c.Info(ctx, "memory").Val(); !strings.Contains(info, "maxmemory:1048576\r\nmaxmemory_human:1.00M\r\nmaxmemory_policy:allkeys-lru\r\n") {
		t.Fatalf("INFO memory after maxmemory 1mb:\n%s", info)
	}
}

func clientList(t *testing.T, c *redis.Client) string {
	t.Helper()
	s, err := c.ClientList(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// idleAddr returns the client's address as CLIENT LIST shows it.
func idleAddr(t *testing.T, c *redis.Client) string {
	t.Helper()
	info, err := c.ClientInfo(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return "addr=" + info.Addr + " "
}

// TestConfigEveryParam: every registered parameter (each one
// docs/operations.md lists: TestConfigParamsDocumented) answers CONFIG GET
// under its name and alias; a settable one takes its own value back
// unchanged, a fixed one refuses it with Redis's error.
func TestConfigEveryParam(t *testing.T) {
	ts := newTestServer(t)
	c := confDial(t, ts.addr)
	for _, p := range configParams {
		var value string
		for _, name := range []string{p.name, p.alias} {
			if name == "" {
				continue
			}
			r, err := c.do("CONFIG", "GET", name)
			if err != nil || len(r.arr) != 2 || r.arr[0].str != name {
				t.Fatalf("CONFIG GET %s: %v %v", name, r, err)
			}
			value = r.arr[1].str
		}
		r, err := c.do("CONFIG", "SET", p.name, value)
		switch {
		case err != nil:
			t.Fatal(err)
		case p.set == nil && p.protected:
			if r.str != "ERR CONFIG SET failed (possibly related to argument '"+p.name+"') - can't set protected config" {
				t.Errorf("CONFIG SET %s (protected): %v", p.name, r)
			}
		case p.set == nil:
			if r.str != "ERR CONFIG SET failed (possibly related to argument '"+p.name+"') - can't set immutable config" {
				t.Errorf("CONFIG SET %s (fixed): %v", p.name, r)
			}
		case r.kind != confSimple:
			t.Errorf("CONFIG SET %s %q (its own value): %v", p.name, value, r)
		default:
			if r, _ := c.do("CONFIG", "GET", p.name); len(r.arr) != 2 || r.arr[1].str != value {
				t.Errorf("CONFIG GET %s after setting its own value %q: %v", p.name, value, r)
			}
		}
	}
}

// TestMaxMemoryLikeRedis: with used memory above maxmemory both servers
// refuse denyoom commands, commands queued in MULTI and EXEC of a
// transaction that queued a denyoom command (EXECABORT), and serve the
// rest (differential); lowered back, writes resume.
func TestMaxMemoryLikeRedis(t *testing.T) {
	redisAddr := confStartRedis(t)
	ts := newTestServer(t)
	rc, sc := confDial(t, redisAddr), confDial(t, ts.addr)
	for _, c := range []*confConn{rc, sc} {
		c.do("SET", "k", "1")
		c.do("CONFIG", "SET", "maxmemory", "1")
		// Sediment compares every 100 ms: wait for the first refusal.
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if r, _ := c.do("SET", "probe", "x"); r.kind == confError {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("no OOM 5 s after CONFIG SET maxmemory 1")
			}
		}
	}
	for _, args := range [][]string{
		{"SET", "k", "2"}, {"GET", "k"}, {"INCR", "k"}, {"APPEND", "k", "x"}, {"PUBLISH", "ch", "m"},
		{"XADD", "s", "*", "f", "v"}, {"EXPIRE", "k", "100"}, {"DEL", "nokey"},
		{"MULTI"}, {"GET", "k"}, {"DISCARD"},
		{"MULTI"}, {"EXEC"},
		{"CONFIG", "SET", "maxmemory", "0"},
	} {
		want, _ := rc.do(args...)
		got, _ := sc.do(args...)
		if !want.equal(got) {
			t.Errorf("%v:\nredis:    %v\nsediment: %v", args, want, got)
		}
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if r, _ := sc.do("SET", "k", "3"); r.kind == confSimple {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("writes still refused 5 s after CONFIG SET maxmemory 0")
		}
	}
}

// TestOutputBufferLimitNormal: client-output-buffer-limit's normal class
// closes a connection whose replies reach the hard limit, and one that
// does not take a reply over the soft limit within the soft seconds; a
// subscriber's pushes are held to the pubsub class's, changed by CONFIG
// SET for connections already subscribed too.
func TestOutputBufferLimitNormal(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	admin := ts.client(t)
	big := strings.Repeat("x", 2<<20)
	if err := admin.Set(ctx, "big", big, 0).Err(); err != nil {
		t.Fatal(err)
	}
	killed := func() string { return infoField(t, admin, "stats", "client_output_buffer_limit_disconnections") }

	mustDo(t, admin, "CONFIG", "SET", "client-output-buffer-limit", "normal 1mb 0 0")
	c := ts.client(t)
	if err := c.Get(ctx, "big").Err(); err == nil {
		t.Fatal("GET of a 2 MB value under a 1 MB hard limit was replied")
	}
	if n := killed(); n != "1" {
		t.Fatalf("client_output_buffer_limit_disconnections %s after the hard limit, want 1", n)
	}
	if v := admin.StrLen(ctx, "big").Val(); v != 2<<20 {
		t.Fatalf("the admin connection (small replies) lost: STRLEN %d", v)
	}

	// Soft: a client that sends GETs of 2 MB and reads nothing is closed
	// once a reply waits more than a second.
	mustDo(t, admin, "CONFIG", "SET", "client-output-buffer-limit", "normal 0 1mb 1")
	nc, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	go func() {
		for range 200 {
			if _, err := nc.Write([]byte("GET big\r\n")); err != nil {
				return
			}
		}
	}()
	for deadline := time.Now().Add(20 * time.Second); killed() != "2"; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("a client reading nothing is still connected 20 s after a 1 s soft limit (disconnections %s)", killed())
		}
	}
	// A client that reads takes the same replies under the soft limit.
	c2 := ts.client(t)
	for range 5 {
		if v, err := c2.Get(ctx, "big").Result(); err != nil || len(v) != 2<<20 {
			t.Fatalf("GET under the soft limit, client reading: %d bytes, %v", len(v), err)
		}
	}
	mustDo(t, admin, "CONFIG", "SET", "client-output-buffer-limit", "normal 0 0 0")

	// The pubsub class, changed after a subscriber subscribed, applies to it.
	sub := dialRawSession(t, ts.addr)
	if out := sub.send("SUBSCRIBE ch\r\n", 200*time.Millisecond); !strings.Contains(out, "subscribe") {
		t.Fatalf("SUBSCRIBE: %q", out)
	}
	mustDo(t, admin, "CONFIG", "SET", "client-output-buffer-limit", "pubsub 64kb 0 0")
	// The kernel's socket buffers take some megabytes before the pushes
	// queue up: up to 128 MB are sent.
	msg := strings.Repeat("m", 64<<10)
	for i := 0; killed() != "3"; i++ {
		if i == 2000 {
			t.Fatalf("a subscriber reading nothing is still connected after 128 MB of messages over a 64 KB limit")
		}
		admin.Publish(ctx, "ch", msg)
	}
}
