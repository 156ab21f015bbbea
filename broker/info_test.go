package broker

import (
	"context"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sediment-dev/sediment/internal/redistest"
)

// infoFields parses an INFO reply into field -> value.
func infoFields(info string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(info, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, "#") {
			out[k] = v
		}
	}
	return out
}

// TestInfoMemory: INFO memory has the fields redis-cli --stat and
// monitoring tools read (used_memory with its human form, the RSS, the
// peak, maxmemory), and used_memory is the Go heap plus Pebble's cache and
// memtables, which grow with what the server holds in memory.
func TestInfoMemory(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	ctx := context.Background()
	read := func() map[string]string {
		info, err := c.Info(ctx, "memory").Result()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(info, "# Memory\r\n") {
			t.Fatalf("INFO memory = %q", info)
		}
		return infoFields(info)
	}
	num := func(m map[string]string, k string) int64 {
		n, err := strconv.ParseInt(m[k], 10, 64)
		if err != nil {
			t.Fatalf("%s = %q: %v", k, m[k], err)
		}
		return n
	}
	before := read()
	for _, k := range []string{"used_memory_human", "used_memory_rss_human", "used_memory_peak_human", "maxmemory_policy", "mem_allocator"} {
		if before[k] == "" {
			t.Errorf("INFO memory has no %s", k)
		}
	}
	used := num(before, "used_memory")
	if parts := num(before, "sediment_go_heap") + num(before, "sediment_pebble_block_cache") + num(before, "sediment_pebble_memtables"); parts != used || used <= 0 {
		t.Fatalf("used_memory %d, its parts add up to %d", used, parts)
	}
	if num(before, "used_memory_rss") <= 0 || num(before, "used_memory_peak") < used || num(before, "maxmemory") != 0 {
		t.Fatalf("INFO memory = %v", before)
	}
	// Hash fields: a string value this large would stay in the change log.
	val := strings.Repeat("v", 1<<20)
	for i := 0; i < 8; i++ {
		if err := c.HSet(ctx, "k"+strconv.Itoa(i), "f", val).Err(); err != nil {
			t.Fatal(err)
		}
	}
	after := read()
	if got := num(after, "sediment_pebble_memtables"); got <= num(before, "sediment_pebble_memtables") {
		t.Errorf("memtables %d after 8 MiB of HSETs, %d before", got, num(before, "sediment_pebble_memtables"))
	}
	if num(after, "used_memory_peak") < num(before, "used_memory_peak") {
		t.Errorf("used_memory_peak went down: %v -> %v", before["used_memory_peak"], after["used_memory_peak"])
	}
	if all, err := c.Info(ctx).Result(); err != nil || !strings.Contains(all, "# Memory\r\n") {
		t.Fatalf("INFO (default) has no memory section: %v", err)
	}
}

// TestInfoSections checks the default INFO's sections, in Redis 7.0's
// order (of those Sediment has), and the replication and cpu sections'
// fields against redis-server's.
func TestInfoSections(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	ctx := context.Background()
	headers := func(info string) []string {
		return regexp.MustCompile(`(?m)^# (\w+)\r$`).FindAllString(info, -1)
	}
	got := strings.Join(headers(c.Info(ctx).Val()), ",")
	want := "# Server\r,# Clients\r,# Memory\r,# Persistence\r,# Stats\r,# Replication\r,# CPU\r,# Errorstats\r,# Keyspace\r"
	if got != want {
		t.Errorf("default INFO sections %q, want %q", got, want)
	}
	got = strings.Join(headers(c.Info(ctx, "everything").Val()), ",")
	want = "# Server\r,# Clients\r,# Memory\r,# Persistence\r,# Stats\r,# Replication\r,# CPU\r,# Commandstats\r,# Errorstats\r,# Latencystats\r,# Keyspace\r"
	if got != want {
		t.Errorf("INFO everything sections %q, want %q", got, want)
	}
	// CONFIG GET port and bind: the listener's (tools read them).
	host, port, _ := net.SplitHostPort(ts.addr)
	if got := c.ConfigGet(ctx, "port").Val(); got["port"] != port {
		t.Errorf("CONFIG GET port: %v, want %s", got, port)
	}
	if got := c.ConfigGet(ctx, "bind").Val(); got["bind"] != host {
		t.Errorf("CONFIG GET bind: %v, want %s", got, host)
	}
	rep := infoFields(c.Info(ctx, "replication").Val())
	if rep["role"] != "master" || rep["connected_slaves"] != "0" || !regexp.MustCompile(`^[0-9a-f]{40}$`).MatchString(rep["master_replid"]) {
		t.Errorf("INFO replication: %v", rep)
	}
	cpu := infoFields(c.Info(ctx, "cpu").Val())
	for _, k := range []string{"used_cpu_sys", "used_cpu_user", "used_cpu_sys_children", "used_cpu_user_children"} {
		if !regexp.MustCompile(`^\d+\.\d{6}$`).MatchString(cpu[k]) {
			t.Errorf("INFO cpu %s = %q", k, cpu[k])
		}
	}
	// The same fields as redis-server's (less *_main_thread: Go has no main thread).
	r := redis.NewClient(&redis.Options{Addr: redistest.Start(t), Protocol: 2})
	defer r.Close()
	for section, have := range map[string]map[string]string{"replication": rep, "cpu": cpu} {
		for k := range infoFields(r.Info(ctx, section).Val()) {
			if _, ok := have[k]; !ok && !strings.HasSuffix(k, "_main_thread") {
				t.Errorf("INFO %s lacks redis-server's %s", section, k)
			}
		}
	}
}

// TestInfoExpiredKeys: expired_keys counts keys deleted because their TTL
// passed, by active expiry and by a write that found them expired, and
// not keys deleted by DEL.
func TestInfoExpiredKeys(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	ctx := context.Background()
	mustDo(t, c, "SET", "gone", "v", "PX", 1)
	mustDo(t, c, "SET", "overwritten", "v", "PX", 1)
	mustDo(t, c, "SET", "deleted", "v")
	mustDo(t, c, "DEL", "deleted")
	time.Sleep(5 * time.Millisecond)
	mustDo(t, c, "SET", "overwritten", "new") // finds it expired: an expiry, then a new key
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, _ := strconv.Atoi(infoFields(c.Info(ctx, "stats").Val())["expired_keys"])
		if n == 2 {
			break
		}
		if n > 2 || time.Now().After(deadline) {
			t.Fatalf("expired_keys = %d, want 2", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if v := infoFields(c.Info(ctx, "stats").Val())["evicted_keys"]; v != "0" {
		t.Fatalf("evicted_keys = %q", v)
	}
}

// TestPinnedViewsReleased: the commands that pin a Pebble state (reads of
// values kept in the change log, scans, transactions, scripts, blocking
// reads, the stream and group commands) release it when they end:
// sediment_pinned_views (INFO persistence) comes back to 0. Change-log
// retention waits for every view pinned before it moved values, so one
// left open would hold it back for good.
func TestPinnedViewsReleased(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	ctx := context.Background()
	big := strings.Repeat("v", 300_000) // read from the change log, not the cache
	for i := range 20 {
		c.Set(ctx, "big"+strconv.Itoa(i), big, 0)
		c.HSet(ctx, "h"+strconv.Itoa(i), "f", strconv.Itoa(i))
		c.XAdd(ctx, &redis.XAddArgs{Stream: "s", Values: []string{"f", strconv.Itoa(i)}})
	}
	c.XGroupCreate(ctx, "s", "g", "0")
	for i := range 20 {
		if got := c.Get(ctx, "big"+strconv.Itoa(i)).Val(); got != big {
			t.Fatalf("GET big%d: %d bytes", i, len(got))
		}
	}
	c.Keys(ctx, "*")
	c.Scan(ctx, 0, "*", 5)
	c.HGetAll(ctx, "h3")
	c.Append(ctx, "big1", "x")
	c.GetRange(ctx, "big2", 10, 20)
	c.XRange(ctx, "s", "-", "+")
	c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "c", Streams: []string{"s", ">"}, Count: 5})
	c.XRead(ctx, &redis.XReadArgs{Streams: []string{"s", "$"}, Block: 20 * time.Millisecond})
	c.XPending(ctx, "s", "g")
	c.XInfoStream(ctx, "s")
	c.Eval(ctx, "return redis.call('GET', KEYS[1])", []string{"big3"})
	if _, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Get(ctx, "big4")
		p.Set(ctx, "big5", big+"y", 0)
		p.Get(ctx, "big5")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	c.Copy(ctx, "big6", "big6copy", 0, false)
	c.Rename(ctx, "big7", "big7moved")
	pinned := func() string { return infoFields(c.Info(ctx, "persistence").Val())["sediment_pinned_views"] }
	deadline := time.Now().Add(5 * time.Second)
	for pinned() != "0" {
		if time.Now().After(deadline) {
			t.Fatalf("sediment_pinned_views = %q after the commands ended", pinned())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
