package broker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sediment-dev/sediment/codec"
)

// TestCountsMatchRecount runs random command sequences with fixed seeds
// against a real server and, after every step, compares each count the
// store keeps with a full recount of the store (read with one iterator, so
// one consistent state):
//   - a hash's or a set's Meta.Count with its H or S keys;
//   - a list's count and head with its I keys (exactly the positions
//     head .. head+count-1);
//   - a stream's length (and first ID) with its X keys;
//   - the PEL stats of every group and consumer with their P and Q ranges,
//     and P and Q with each other;
//   - DBSIZE and INFO keyspace's keys= and expires= with the metadata keys
//     of each db;
//   - the metadata reads see (the store's metadata cache) with the stored.
//
// It also fails on sub-keys left without their key (or under a key of
// another type, or a group that is gone), on a key with a TTL and no TTL
// index entry, and on any "ERR internal error" reply.
//
// The keys, fields, members, groups and consumers come from small pools
// (with "" and "\x00" in them), so that collisions, overwrites by other
// types and deletions are frequent. A third of the steps wrap 2-5 commands
// in MULTI ... EXEC (or DISCARD), sometimes after a WATCH that another
// client may break; a few serve an XREADGROUP blocked on another
// connection; a few restart the server on its data. The server's clock is
// fake: advancing it expires keys lazily, and the test runs active expiry
// cycles too.
//
// The generator is the table countsCmds. A command the server does not
// know (COMMAND INFO) is generated but not sent, so a seed's sequence stays
// the same as commands appear. Run with -v to see, per seed, which commands
// were sent, how often they failed and with what.
func TestCountsMatchRecount(t *testing.T) {
	const seeds, steps = 6, 400
	for seed := uint64(1); seed <= seeds; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			runCounts(t, seed, steps)
		})
	}
}

// countsStats counts, per generator label, the replies of one seed.
type countsStats struct {
	ok, failed, unsupported int
	errs                    map[string]int // error replies by their first words
}

// countsRun is one seed's run: its server, clients and generator state.
type countsRun struct {
	t        *testing.T
	ts       *testServer
	clk      *fakeClock
	r        *rand.Rand
	main     *redis.Client    // one connection: SELECT and MULTI state stay on it
	db       uint8            // main's db
	dbs      [2]*redis.Client // DBSIZE, and WATCH breakers, per db
	known    map[string]bool  // command name → the server has it
	ids      []string         // recent IDs XADD replied with
	log      []string         // every command sent, for failure messages
	stats    map[string]*countsStats
	restarts int
	// countMode is what DBSIZE counts, once a step has told: "stored"
	// (expired keys until deleted, as Redis) or "live".
	countMode string
}

func runCounts(t *testing.T, seed uint64, steps int) {
	clk := newFakeClock()
	run := &countsRun{
		countMode: "stored", // Redis's meaning, which the key counters keep
		t:         t, clk: clk, r: rand.New(rand.NewPCG(seed, 0x5eed)),
		known: map[string]bool{},
		stats: map[string]*countsStats{},
	}
	run.start(t.TempDir())
	run.probe()
	for step := 0; step < steps; step++ {
		run.step(step)
		run.check(step)
	}
	labels := make([]string, 0, len(run.stats))
	for l := range run.stats {
		labels = append(labels, l)
	}
	slices.Sort(labels)
	var b strings.Builder
	for _, l := range labels {
		s := run.stats[l]
		fmt.Fprintf(&b, "\n  %-18s ok %4d  error %4d  not sent %4d", l, s.ok, s.failed, s.unsupported)
		errs := slices.Sorted(maps.Keys(s.errs))
		for _, e := range errs {
			fmt.Fprintf(&b, "\n      %4d %q", s.errs[e], e)
		}
	}
	t.Logf("seed %d, %d steps, %d commands sent, %d restarts, DBSIZE counts %q keys:%s",
		seed, steps, len(run.log), run.restarts, run.countMode, b.String())
}

// start starts a server on dir (with the data a previous one left there)
// and connects the clients.
func (g *countsRun) start(dir string) {
	g.ts = startTestServer(g.t, dir, withClock(g.clk), func(o *Options) { o.Databases = 2 })
	g.main, g.db = singleConnClient(g.t, g.ts), 0
	for db := range g.dbs {
		g.dbs[db] = clientDB(g.t, g.ts, db)
	}
}

// probe asks COMMAND INFO which of the generated commands the server has.
func (g *countsRun) probe() {
	args := []any{"COMMAND", "INFO"}
	var names []string
	for _, c := range countsCmds {
		if !slices.Contains(names, c.cmd) {
			names = append(names, c.cmd)
			args = append(args, c.cmd)
		}
	}
	v := mustDo(g.t, g.main, args...)
	infos, ok := v.([]any)
	if !ok || len(infos) != len(names) {
		g.t.Fatalf("COMMAND INFO: %v", v)
	}
	for i, info := range infos {
		g.known[names[i]] = info != nil
	}
}

// countsCmd is one kind of generated command. cmd is its name for COMMAND
// INFO; label names it in the statistics (XGROUP's subcommands apart).
type countsCmd struct {
	cmd, label string
	weight     int
	gen        func(g *countsRun) []any
}

// The pools. Each type has keys of its own and shares one (countsShared)
// with the others; the keyspace commands, and now and then a typed one, pick
// from all of them, so that keys change type without most typed commands
// meeting WRONGTYPE.
const countsShared = "x\x00"

var (
	countsStrKeys   = []string{"a", "{a}b", "\x00a"}
	countsHashKeys  = []string{"", "h\x00", "h"}
	countsSetKeys   = []string{"\x00", "S", "S\x00"}
	countsListKeys  = []string{"L", "L\x00", "{a}L"}
	countsZKeys     = []string{"Z", "Z\x00", "{a}Z"}
	countsScores    = []string{"1", "2", "-1", "0", "inf", "1.5"}
	countsXKeys     = []string{"s", "\x00s\x00"}
	countsKeys      = slices.Concat(countsStrKeys, countsHashKeys, countsSetKeys, countsListKeys, countsZKeys, countsXKeys, []string{countsShared})
	countsFields    = []string{"f", "g", "", "\x00", "f\x00", "\x00f"}
	countsValues    = []string{"1", "-2", "", "x\x00y", "1.5", "10"}
	countsGroups    = []string{"", "g\x00"}
	countsConsumers = []string{"c", "", "\x00d"}
)

// countsCmds is the generator table: adding a command is one line.
var countsCmds = []countsCmd{
	// Strings and the keyspace.
	{"set", "set", 8, func(g *countsRun) []any {
		a := []any{"SET", g.key(countsStrKeys), g.pick(countsValues)}
		switch g.r.IntN(5) {
		case 0:
			a = append(a, "PX", 1+g.r.IntN(800))
		case 1:
			a = append(a, "EX", 1+g.r.IntN(2))
		case 2:
			a = append(a, "KEEPTTL")
		}
		switch g.r.IntN(4) {
		case 0:
			a = append(a, "NX")
		case 1:
			a = append(a, "XX")
		}
		if g.r.IntN(4) == 0 {
			a = append(a, "GET")
		}
		return a
	}},
	{"del", "del", 4, func(g *countsRun) []any { return append([]any{"DEL"}, g.some(countsKeys, 1, 3)...) }},
	{"unlink", "unlink", 2, func(g *countsRun) []any { return append([]any{"UNLINK"}, g.some(countsKeys, 1, 2)...) }},
	{"expire", "expire", 2, func(g *countsRun) []any {
		a := []any{"EXPIRE", g.pick(countsKeys), g.r.IntN(4) - 1}
		if g.r.IntN(3) == 0 {
			a = append(a, g.pick([]string{"NX", "XX", "GT", "LT"}))
		}
		return a
	}},
	{"pexpire", "pexpire", 4, func(g *countsRun) []any {
		return []any{"PEXPIRE", g.pick(countsKeys), g.r.IntN(1000) - 50}
	}},
	{"persist", "persist", 2, func(g *countsRun) []any { return []any{"PERSIST", g.pick(countsKeys)} }},
	{"incr", "incr", 4, func(g *countsRun) []any { return []any{"INCR", g.key(countsStrKeys)} }},
	{"append", "append", 4, func(g *countsRun) []any { return []any{"APPEND", g.key(countsStrKeys), g.pick(countsValues)} }},
	{"mset", "mset", 4, func(g *countsRun) []any {
		a := []any{"MSET"}
		for range 1 + g.r.IntN(3) {
			a = append(a, g.key(countsStrKeys), g.pick(countsValues))
		}
		return a
	}},
	{"getdel", "getdel", 4, func(g *countsRun) []any { return []any{"GETDEL", g.key(countsStrKeys)} }},
	{"getex", "getex", 2, func(g *countsRun) []any {
		if g.r.IntN(2) == 0 {
			return []any{"GETEX", g.key(countsStrKeys), "PERSIST"}
		}
		return []any{"GETEX", g.key(countsStrKeys), "PX", 1 + g.r.IntN(500)}
	}},
	{"select", "select", 2, func(g *countsRun) []any { return []any{"SELECT", g.r.IntN(2)} }},
	{"flushdb", "flushdb", 1, func(g *countsRun) []any { return append([]any{"FLUSHDB"}, g.some([]string{"SYNC", "ASYNC"}, 0, 1)...) }},
	{"flushall", "flushall", 1, func(g *countsRun) []any { return []any{"FLUSHALL"} }},
	{"rename", "rename", 4, func(g *countsRun) []any { return []any{"RENAME", g.pick(countsKeys), g.pick(countsKeys)} }},
	{"renamenx", "renamenx", 2, func(g *countsRun) []any { return []any{"RENAMENX", g.pick(countsKeys), g.pick(countsKeys)} }},
	{"copy", "copy", 4, func(g *countsRun) []any {
		a := []any{"COPY", g.pick(countsKeys), g.pick(countsKeys)}
		if g.r.IntN(2) == 0 {
			a = append(a, "DB", g.r.IntN(2))
		}
		if g.r.IntN(2) == 0 {
			a = append(a, "REPLACE")
		}
		return a
	}},
	{"move", "move", 2, func(g *countsRun) []any { return []any{"MOVE", g.pick(countsKeys), g.r.IntN(2)} }},

	// Hashes.
	{"hset", "hset", 16, func(g *countsRun) []any {
		a := []any{"HSET", g.key(countsHashKeys)}
		for range 1 + g.r.IntN(4) {
			a = append(a, g.pick(countsFields), g.pick(countsValues))
		}
		return a
	}},
	{"hmset", "hmset", 2, func(g *countsRun) []any {
		return []any{"HMSET", g.key(countsHashKeys), g.pick(countsFields), g.pick(countsValues)}
	}},
	{"hdel", "hdel", 12, func(g *countsRun) []any {
		return append([]any{"HDEL", g.key(countsHashKeys)}, g.some(countsFields, 1, 4)...)
	}},
	{"hsetnx", "hsetnx", 4, func(g *countsRun) []any {
		return []any{"HSETNX", g.key(countsHashKeys), g.pick(countsFields), g.pick(countsValues)}
	}},
	{"hincrby", "hincrby", 4, func(g *countsRun) []any {
		return []any{"HINCRBY", g.key(countsHashKeys), g.pick(countsFields), g.r.IntN(7) - 3}
	}},
	{"hincrbyfloat", "hincrbyfloat", 4, func(g *countsRun) []any {
		return []any{"HINCRBYFLOAT", g.key(countsHashKeys), g.pick(countsFields), g.pick([]string{"0.5", "-1", "2e1"})}
	}},

	// Sets (not sent while the server does not have them).
	{"sadd", "sadd", 12, func(g *countsRun) []any {
		return append([]any{"SADD", g.key(countsSetKeys)}, g.some(countsFields, 1, 4)...)
	}},
	{"srem", "srem", 8, func(g *countsRun) []any {
		return append([]any{"SREM", g.key(countsSetKeys)}, g.some(countsFields, 1, 4)...)
	}},
	{"spop", "spop", 4, func(g *countsRun) []any {
		if g.r.IntN(2) == 0 {
			return []any{"SPOP", g.key(countsSetKeys)}
		}
		return []any{"SPOP", g.key(countsSetKeys), g.r.IntN(4)}
	}},
	{"smove", "smove", 4, func(g *countsRun) []any {
		return []any{"SMOVE", g.key(countsSetKeys), g.key(countsSetKeys), g.pick(countsFields)}
	}},
	{"sinterstore", "sinterstore", 2, func(g *countsRun) []any {
		return append([]any{"SINTERSTORE", g.key(countsSetKeys)}, g.some(countsSetKeys, 1, 3)...)
	}},
	{"sunionstore", "sunionstore", 2, func(g *countsRun) []any {
		return append([]any{"SUNIONSTORE", g.key(countsSetKeys)}, g.some(countsSetKeys, 1, 3)...)
	}},
	{"sdiffstore", "sdiffstore", 2, func(g *countsRun) []any {
		return append([]any{"SDIFFSTORE", g.key(countsSetKeys)}, g.some(countsSetKeys, 1, 3)...)
	}},

	// Lists: every command that moves the head or the count.
	{"lpush", "lpush", 8, func(g *countsRun) []any {
		return append([]any{g.pick([]string{"LPUSH", "RPUSH", "LPUSHX", "RPUSHX"}), g.key(countsListKeys)}, g.some(countsFields, 1, 4)...)
	}},
	{"lpop", "lpop", 6, func(g *countsRun) []any {
		a := []any{g.pick([]string{"LPOP", "RPOP"}), g.key(countsListKeys)}
		if g.r.IntN(2) == 0 {
			a = append(a, g.r.IntN(4))
		}
		return a
	}},
	{"lrem", "lrem", 3, func(g *countsRun) []any {
		return []any{"LREM", g.key(countsListKeys), g.r.IntN(5) - 2, g.pick(countsFields)}
	}},
	{"linsert", "linsert", 3, func(g *countsRun) []any {
		return []any{"LINSERT", g.key(countsListKeys), g.pick([]string{"BEFORE", "AFTER"}), g.pick(countsFields), g.pick(countsFields)}
	}},
	{"ltrim", "ltrim", 2, func(g *countsRun) []any {
		return []any{"LTRIM", g.key(countsListKeys), g.r.IntN(5) - 2, g.r.IntN(5) - 2}
	}},
	{"lset", "lset", 2, func(g *countsRun) []any {
		return []any{"LSET", g.key(countsListKeys), g.r.IntN(5) - 2, g.pick(countsFields)}
	}},
	{"lmove", "lmove", 3, func(g *countsRun) []any {
		return []any{"LMOVE", g.key(countsListKeys), g.key(countsListKeys), g.pick([]string{"LEFT", "RIGHT"}), g.pick([]string{"LEFT", "RIGHT"})}
	}},
	{"lmpop", "lmpop", 2, func(g *countsRun) []any {
		return append(append([]any{"LMPOP", 2}, g.key(countsListKeys), g.key(countsListKeys)), g.pick([]string{"LEFT", "RIGHT"}), "COUNT", 1+g.r.IntN(3))
	}},

	// Sorted sets: every command that adds or removes members (and a ZADD
	// large enough to build rank blocks).
	{"zadd", "zadd", 8, func(g *countsRun) []any {
		a := []any{"ZADD", g.key(countsZKeys)}
		for range 1 + g.r.IntN(4) {
			a = append(a, g.pick(countsScores), g.pick(countsFields))
		}
		return a
	}},
	{"zadd-many", "zadd", 1, func(g *countsRun) []any {
		a := []any{"ZADD", g.key(countsZKeys)}
		for i := range 2100 + g.r.IntN(200) {
			a = append(a, g.r.IntN(50), fmt.Sprintf("m%d", i))
		}
		return a
	}},
	{"zincrby", "zincrby", 2, func(g *countsRun) []any {
		return []any{"ZINCRBY", g.key(countsZKeys), g.pick(countsScores), g.pick(countsFields)}
	}},
	{"zrem", "zrem", 6, func(g *countsRun) []any {
		return append([]any{"ZREM", g.key(countsZKeys)}, g.some(countsFields, 1, 4)...)
	}},
	{"zpopmin", "zpopmin", 4, func(g *countsRun) []any {
		return []any{g.pick([]string{"ZPOPMIN", "ZPOPMAX"}), g.key(countsZKeys), g.pick([]string{"1", "3", "2000"})}
	}},
	{"zremrangebyrank", "zremrangebyrank", 3, func(g *countsRun) []any {
		switch g.r.IntN(3) {
		case 0:
			return []any{"ZREMRANGEBYSCORE", g.key(countsZKeys), g.pick([]string{"-inf", "(0", "1"}), g.pick([]string{"+inf", "(2", "1.5"})}
		case 1:
			return []any{"ZREMRANGEBYLEX", g.key(countsZKeys), g.pick([]string{"-", "[a", "(m1"}), g.pick([]string{"+", "[z", "(m5"})}
		}
		return []any{"ZREMRANGEBYRANK", g.key(countsZKeys), g.r.IntN(2000) - 10, g.r.IntN(2400) - 10}
	}},
	{"zunionstore", "zunionstore", 2, func(g *countsRun) []any {
		return append([]any{g.pick([]string{"ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE"}), g.key(countsZKeys), 2}, g.key(countsZKeys), g.key(countsSetKeys))
	}},
	{"zrangestore", "zrangestore", 1, func(g *countsRun) []any {
		return []any{"ZRANGESTORE", g.key(countsZKeys), g.key(countsZKeys), 0, g.r.IntN(3000)}
	}},
	{"zmpop", "zmpop", 2, func(g *countsRun) []any {
		return []any{"ZMPOP", 2, g.key(countsZKeys), g.key(countsZKeys), g.pick([]string{"MIN", "MAX"}), "COUNT", 1 + g.r.IntN(3)}
	}},

	// Streams and consumer groups.
	{"xadd", "xadd", 24, func(g *countsRun) []any {
		a := []any{"XADD", g.key(countsXKeys)}
		if g.r.IntN(10) == 0 {
			a = append(a, "NOMKSTREAM")
		}
		if g.r.IntN(3) == 0 {
			a = append(a, g.trim()...)
		}
		a = append(a, g.newID())
		for range 1 + g.r.IntN(2) {
			a = append(a, g.pick(countsFields), g.pick(countsValues))
		}
		return a
	}},
	{"xdel", "xdel", 6, func(g *countsRun) []any {
		a := []any{"XDEL", g.key(countsXKeys)}
		for range 1 + g.r.IntN(3) {
			a = append(a, g.oldID())
		}
		return a
	}},
	{"xtrim", "xtrim", 4, func(g *countsRun) []any { return append([]any{"XTRIM", g.key(countsXKeys)}, g.trim()...) }},
	{"xsetid", "xsetid", 2, func(g *countsRun) []any { return []any{"XSETID", g.key(countsXKeys), g.oldID()} }},
	{"xgroup", "xgroup create", 24, func(g *countsRun) []any {
		a := []any{"XGROUP", "CREATE", g.key(countsXKeys), g.pick(countsGroups), g.pick([]string{"0", "$", g.oldID()})}
		if g.r.IntN(4) != 0 {
			a = append(a, "MKSTREAM")
		}
		if g.r.IntN(5) == 0 {
			a = append(a, "ENTRIESREAD", g.r.IntN(5))
		}
		return a
	}},
	{"xgroup", "xgroup destroy", 2, func(g *countsRun) []any {
		k, grp := g.group()
		return []any{"XGROUP", "DESTROY", k, grp}
	}},
	{"xgroup", "xgroup createcons", 2, func(g *countsRun) []any {
		k, grp := g.group()
		return []any{"XGROUP", "CREATECONSUMER", k, grp, g.pick(countsConsumers)}
	}},
	{"xgroup", "xgroup delconsumer", 4, func(g *countsRun) []any {
		k, grp := g.group()
		return []any{"XGROUP", "DELCONSUMER", k, grp, g.pick(countsConsumers)}
	}},
	{"xgroup", "xgroup setid", 4, func(g *countsRun) []any {
		k, grp := g.group()
		return []any{"XGROUP", "SETID", k, grp, g.pick([]string{"0", "$", g.oldID()})}
	}},
	{"xreadgroup", "xreadgroup", 28, func(g *countsRun) []any {
		k, grp := g.group()
		a := []any{"XREADGROUP", "GROUP", grp, g.pick(countsConsumers)}
		if g.r.IntN(3) != 0 {
			a = append(a, "COUNT", 1+g.r.IntN(4))
		}
		if g.r.IntN(8) == 0 {
			a = append(a, "NOACK")
		}
		a = append(a, "STREAMS")
		readID := func() string {
			switch g.r.IntN(5) {
			case 0:
				return "0"
			case 1:
				return g.oldID()
			}
			return ">"
		}
		switch g.r.IntN(8) {
		case 0, 1: // the same stream twice
			return append(a, k, k, readID(), readID())
		case 2:
			return append(a, k, g.key(countsXKeys), readID(), readID())
		default:
			return append(a, k, readID())
		}
	}},
	{"xack", "xack", 10, func(g *countsRun) []any {
		k, grp := g.group()
		a := []any{"XACK", k, grp}
		for range 1 + g.r.IntN(3) {
			a = append(a, g.pendingID(k, grp))
		}
		return a
	}},
	{"xclaim", "xclaim", 8, func(g *countsRun) []any {
		k, grp := g.group()
		a := []any{"XCLAIM", k, grp, g.pick(countsConsumers), g.r.IntN(100)}
		for range 1 + g.r.IntN(3) {
			a = append(a, g.pendingID(k, grp))
		}
		switch g.r.IntN(6) {
		case 0:
			a = append(a, "FORCE")
		case 1:
			a = append(a, "JUSTID")
		case 2:
			a = append(a, "IDLE", g.r.IntN(200), "RETRYCOUNT", g.r.IntN(3))
		}
		return a
	}},
	{"xautoclaim", "xautoclaim", 6, func(g *countsRun) []any {
		k, grp := g.group()
		a := []any{"XAUTOCLAIM", k, grp, g.pick(countsConsumers), g.r.IntN(100), g.pick([]string{"0", "0-0", g.pendingID(k, grp)})}
		if g.r.IntN(2) == 0 {
			a = append(a, "COUNT", 1+g.r.IntN(3))
		}
		if g.r.IntN(4) == 0 {
			a = append(a, "JUSTID")
		}
		return a
	}},
}

// countsTotalWeight is the sum of countsCmds' weights.
var countsTotalWeight = func() int {
	n := 0
	for _, c := range countsCmds {
		n += c.weight
	}
	return n
}()

func (g *countsRun) pick(pool []string) string { return pool[g.r.IntN(len(pool))] }

// key picks a key of a type's own pool, or the shared key, or any key.
func (g *countsRun) key(own []string) string {
	switch g.r.IntN(10) {
	case 0:
		return countsShared
	case 1:
		return g.pick(countsKeys)
	}
	return g.pick(own)
}

// some returns between lo and hi elements of pool, repeats allowed.
func (g *countsRun) some(pool []string, lo, hi int) []any {
	out := make([]any, lo+g.r.IntN(hi-lo+1))
	for i := range out {
		out[i] = g.pick(pool)
	}
	return out
}

// group returns a stream key and a group name: two times in three a group
// that exists in the connection's db (when there is one), else any.
func (g *countsRun) group() (key, group string) {
	if g.r.IntN(3) != 0 {
		if live := g.liveGroups(); len(live) > 0 {
			p := live[g.r.IntN(len(live))]
			return p[0], p[1]
		}
	}
	return g.key(countsXKeys), g.pick(countsGroups)
}

// liveGroups lists the groups of the live streams of the connection's db
// (under any key: RENAME, COPY and MOVE take streams everywhere).
func (g *countsRun) liveGroups() [][2]string {
	v := g.ts.store.View()
	var out [][2]string
	for _, key := range countsKeys {
		m, ok, err := v.Meta(g.db, []byte(key))
		if err != nil {
			g.t.Fatal(err)
		}
		if !ok || m.Type != codec.TypeStream {
			continue
		}
		p := codec.KeyPrefix(codec.TagGroup, g.db, []byte(key))
		if err := v.IterateKeys(p, codec.PrefixEnd(p), func(k, _ []byte) (bool, error) {
			name, _, err := codec.SplitName(k[len(p):])
			out = append(out, [2]string{key, string(name)})
			return true, err
		}); err != nil {
			g.t.Fatal(err)
		}
	}
	return out
}

// pendingID returns, half the time, an ID pending in key's group (when
// there is one), else oldID's.
func (g *countsRun) pendingID(key, group string) string {
	if g.r.IntN(2) == 0 {
		p := codec.GroupPrefix(codec.TagPEL, g.db, []byte(key), []byte(group))
		var ids []string
		if err := g.ts.store.View().Iterate(p, codec.PrefixEnd(p), false, func(k, _ []byte) (bool, error) {
			id, err := codec.DecodeID(k[len(p):])
			ids = append(ids, id.String())
			return true, err
		}); err != nil {
			g.t.Fatal(err)
		}
		if len(ids) > 0 {
			return ids[g.r.IntN(len(ids))]
		}
	}
	return g.oldID()
}

// nowMs is the fake clock's time.
func (g *countsRun) nowMs() int64 { return g.clk.Now().UnixMilli() }

// newID returns an XADD ID: automatic, partial, or explicit near the
// clock's time (sometimes below the stream's top: an error).
func (g *countsRun) newID() string {
	switch g.r.IntN(6) {
	case 0, 1, 2:
		return "*"
	case 3:
		return fmt.Sprintf("%d-*", g.nowMs()-int64(g.r.IntN(3)))
	}
	return fmt.Sprintf("%d-%d", g.nowMs()+int64(g.r.IntN(20)-10), g.r.IntN(3))
}

// oldID returns, mostly, an ID XADD replied with lately, else one around
// the clock's time, so that XDEL, XACK, XCLAIM ... often name entries that
// exist or are pending.
func (g *countsRun) oldID() string {
	if len(g.ids) > 0 && g.r.IntN(4) != 0 {
		return g.ids[g.r.IntN(len(g.ids))]
	}
	return fmt.Sprintf("%d-%d", g.nowMs()-int64(g.r.IntN(2000)), g.r.IntN(2))
}

// trim returns XADD's or XTRIM's trimming arguments.
func (g *countsRun) trim() []any {
	var a []any
	if g.r.IntN(2) == 0 {
		a = append(a, "MAXLEN")
		if g.r.IntN(2) == 0 {
			a = append(a, g.pick([]string{"=", "~"}))
		}
		a = append(a, g.r.IntN(8))
	} else {
		a = append(a, "MINID")
		if g.r.IntN(2) == 0 {
			a = append(a, g.pick([]string{"=", "~"}))
		}
		a = append(a, g.oldID())
	}
	if a[1] == "~" && g.r.IntN(3) == 0 {
		a = append(a, "LIMIT", g.r.IntN(4))
	}
	return a
}

// generate picks one command from the table.
func (g *countsRun) generate() (countsCmd, []any) {
	n := g.r.IntN(countsTotalWeight)
	for _, c := range countsCmds {
		if n < c.weight {
			return c, c.gen(g)
		}
		n -= c.weight
	}
	panic("unreachable")
}

// step advances the clock, maybe runs an active expiry cycle, and runs one
// command, or 2-5 in MULTI.
func (g *countsRun) step(step int) {
	t := g.t
	if g.r.IntN(4) == 0 {
		g.clk.Advance(time.Duration(g.r.IntN(400)) * time.Millisecond)
	} else {
		g.clk.Advance(time.Duration(g.r.IntN(3)) * time.Millisecond)
	}
	if g.r.IntN(10) == 0 {
		if _, err := g.ts.store.ExpireCycle(200); err != nil {
			t.Fatalf("step %d: ExpireCycle: %v", step, err)
		}
		g.log = append(g.log, fmt.Sprintf("%d: (active expiry cycle at %d)", step, g.nowMs()))
	}
	if g.r.IntN(100) == 0 {
		// Restart: the key counters and the metadata cache are rebuilt
		// from what the store holds.
		if err := g.ts.Close(); err != nil {
			t.Fatalf("step %d: Close: %v", step, err)
		}
		g.start(g.ts.dir)
		g.log = append(g.log, fmt.Sprintf("%d: (restart)", step))
		g.restarts++
	}
	if g.r.IntN(15) == 0 {
		g.blockedRead(step)
		return
	}
	if g.r.IntN(3) != 0 {
		c, args := g.generate()
		if !g.known[c.cmd] {
			g.stat(c.label).unsupported++
			return
		}
		v, err := g.send(step, g.main, args)
		g.record(step, c, args, v, err)
		return
	}

	n := 2 + g.r.IntN(4)
	watch := g.r.IntN(4) == 0
	var breaker []any
	var breakerDB int
	if watch {
		g.mustSend(step, g.main, append([]any{"WATCH"}, g.some(countsKeys, 1, 2)...))
		if g.r.IntN(2) == 0 {
			c, args := g.generate()
			if g.known[c.cmd] && c.cmd != "select" {
				breaker, breakerDB = args, g.r.IntN(2)
			}
		}
	}
	g.mustSend(step, g.main, []any{"MULTI"})
	var cmds []countsCmd
	var argss [][]any
	for range n {
		c, args := g.generate()
		if !g.known[c.cmd] {
			g.stat(c.label).unsupported++
			continue
		}
		if v, err := g.send(step, g.main, args); err != nil || v != "QUEUED" {
			t.Fatalf("step %d: %q in MULTI: %v, %v", step, args, v, err)
		}
		cmds, argss = append(cmds, c), append(argss, args)
	}
	if breaker != nil {
		// Another client's write between WATCH and EXEC (it may touch
		// no watched key, or another db).
		g.send(step, g.dbs[breakerDB], breaker)
	}
	if g.r.IntN(8) == 0 {
		g.mustSend(step, g.main, []any{"DISCARD"})
		return
	}
	v, err := g.send(step, g.main, []any{"EXEC"})
	switch {
	case errors.Is(err, redis.Nil): // WATCH failed: nothing ran
		return
	case err != nil:
		t.Fatalf("step %d: EXEC: %v", step, err)
	}
	res, ok := v.([]any)
	if !ok || len(res) != len(cmds) {
		t.Fatalf("step %d: EXEC replied %v for %d commands", step, v, len(cmds))
	}
	for i, r := range res {
		err, _ := r.(error)
		g.record(step, cmds[i], argss[i], r, err)
	}
}

// blockedRead runs XREADGROUP ... BLOCK on another connection to the main
// connection's db, waits until the server has queued it (or replied), then
// makes the write that serves it: an XADD, two in one EXEC, or the deletion
// of the key or of the group. The PEL changes the writer makes for blocked
// clients are then checked like the others.
func (g *countsRun) blockedRead(step int) {
	t := g.t
	k, grp := g.group()
	args := []any{"XREADGROUP", "GROUP", grp, g.pick(countsConsumers), "COUNT", 1 + g.r.IntN(3), "BLOCK", 2000, "STREAMS", k, ">"}
	var writes [][]any
	switch g.r.IntN(8) {
	case 0:
		writes = [][]any{{"DEL", k}}
	case 1:
		writes = [][]any{{"XGROUP", "DESTROY", k, grp}}
	case 2:
		writes = [][]any{{"MULTI"}, {"XADD", k, "*", "f", "1"}, {"XADD", k, "*", "f", "2"}, {"EXEC"}}
	default:
		writes = [][]any{{"XADD", k, "*", g.pick(countsFields), g.pick(countsValues)}}
	}
	if !g.known["xreadgroup"] {
		return
	}
	g.log = append(g.log, fmt.Sprintf("%d: (another client, db %d) %s", step, g.db, countsQuote(args)))
	type reply struct {
		v   any
		err error
	}
	done := make(chan reply, 1)
	c := g.dbs[g.db]
	go func() {
		v, err := c.Do(context.Background(), args...).Result()
		done <- reply{v, err}
	}()
	var r reply
	replied := false
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		select {
		case r = <-done:
			replied = true
		default:
		}
		if replied || blockedClients(t, g.main) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("step %d: %s neither replied nor blocked", step, countsQuote(args))
		}
	}
	for _, w := range writes {
		g.send(step, g.main, w)
	}
	if !replied {
		select {
		case r = <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("step %d: blocked %s: no reply", step, countsQuote(args))
		}
	}
	if r.err != nil && !errors.Is(r.err, redis.Nil) {
		if _, ok := r.err.(redis.Error); !ok {
			t.Fatalf("step %d: %s: transport error: %v", step, countsQuote(args), r.err)
		}
	}
	label := "xreadgroup block"
	if replied {
		label = "xreadgroup block*" // replied at once: nothing to wait for
	}
	g.record(step, countsCmd{cmd: "xreadgroup", label: label}, args, r.v, r.err)
}

func (g *countsRun) stat(label string) *countsStats {
	s := g.stats[label]
	if s == nil {
		s = &countsStats{}
		g.stats[label] = s
	}
	return s
}

// send sends one command and logs it. Error replies are returned; a
// transport error fails the test.
func (g *countsRun) send(step int, c *redis.Client, args []any) (any, error) {
	g.log = append(g.log, fmt.Sprintf("%d: %s", step, countsQuote(args)))
	return do(g.t, c, args...)
}

// mustSend sends a command that must not fail.
func (g *countsRun) mustSend(step int, c *redis.Client, args []any) {
	if v, err := g.send(step, c, args); err != nil {
		g.t.Fatalf("step %d: %s: %v, %v", step, countsQuote(args), v, err)
	}
}

// record counts a command's reply, keeps the IDs XADD replies with, and
// fails on an internal error.
func (g *countsRun) record(step int, c countsCmd, args []any, v any, err error) {
	switch {
	case err == nil || errors.Is(err, redis.Nil):
		g.stat(c.label).ok++
	case strings.HasPrefix(err.Error(), "ERR unknown command"):
		g.stat(c.label).unsupported++
		return
	case strings.Contains(err.Error(), "internal error"):
		g.t.Fatalf("step %d: %s: %v\nlast commands:\n%s", step, countsQuote(args), err, g.lastLog(30))
	default:
		st := g.stat(c.label)
		st.failed++
		if st.errs == nil {
			st.errs = map[string]int{}
		}
		msg := err.Error()
		st.errs[msg[:min(len(msg), 40)]]++
		return
	}
	if c.cmd == "select" {
		g.db = uint8(args[1].(int))
	}
	if id, ok := v.(string); ok && c.cmd == "xadd" {
		g.ids = append(g.ids, id)
		if len(g.ids) > 24 {
			g.ids = g.ids[1:]
		}
	}
}

func (g *countsRun) lastLog(n int) string {
	return strings.Join(g.log[max(0, len(g.log)-n):], "\n")
}

// countsQuote renders a command with its binary arguments quoted.
func countsQuote(args []any) string {
	var b strings.Builder
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		switch a := a.(type) {
		case string:
			if a == "" || strings.ContainsAny(a, "\x00 \"") {
				b.WriteString(strconv.Quote(a))
			} else {
				b.WriteString(a)
			}
		default:
			fmt.Fprint(&b, a)
		}
	}
	return b.String()
}

// Recount: the whole store read with one iterator (one consistent state,
// however active expiry runs meanwhile).

type countsKey struct {
	db  uint8
	key string
}

type countsGroupKey struct {
	countsKey
	group string
}

type countsConsumerKey struct {
	countsGroupKey
	consumer string
}

type countsPELKey struct {
	countsGroupKey
	id codec.ID
}

// countsIDs is a recount of a range of IDs.
type countsIDs struct {
	n           uint64
	first, last codec.ID
}

func (c *countsIDs) add(id codec.ID) {
	if c.n == 0 || id.Less(c.first) {
		c.first = id
	}
	if c.n == 0 || c.last.Less(id) {
		c.last = id
	}
	c.n++
}

func (c *countsIDs) stats() codec.PELStats {
	if c == nil {
		return codec.PELStats{}
	}
	return codec.PELStats{Count: c.n, First: c.first}
}

// countsStore is everything the store holds, decoded.
type countsStore struct {
	meta      map[countsKey]codec.Meta
	ttl       map[countsKey][]int64           // E entries' deadlines
	hash, set map[countsKey]uint64            // H, S keys
	list      map[countsKey][]int64           // I keys' positions, in order
	zmember   map[countsKey]map[string]uint64 // Z keys: member → score bits
	zindex    map[countsKey]map[string]uint64 // Y keys: member → score bits
	zblocks   map[countsKey][]int64           // B keys' counts
	entries   map[countsKey]*countsIDs
	groups    map[countsGroupKey]codec.Group
	consumers map[countsConsumerKey]codec.Consumer
	pel       map[countsGroupKey]*countsIDs // P keys
	owner     map[countsPELKey]string       // P key → its value's consumer
	cpel      map[countsConsumerKey]*countsIDs
	qkeys     map[countsConsumerKey][]codec.ID // Q keys
	streamSub map[countsKey]int                // X G C P Q keys, for orphans
}

func (g *countsRun) read() *countsStore {
	t := g.t
	s := &countsStore{
		meta: map[countsKey]codec.Meta{}, ttl: map[countsKey][]int64{},
		hash: map[countsKey]uint64{}, set: map[countsKey]uint64{}, list: map[countsKey][]int64{},
		zmember: map[countsKey]map[string]uint64{}, zindex: map[countsKey]map[string]uint64{}, zblocks: map[countsKey][]int64{},
		entries: map[countsKey]*countsIDs{}, groups: map[countsGroupKey]codec.Group{},
		consumers: map[countsConsumerKey]codec.Consumer{}, pel: map[countsGroupKey]*countsIDs{},
		owner: map[countsPELKey]string{}, cpel: map[countsConsumerKey]*countsIDs{},
		qkeys: map[countsConsumerKey][]codec.ID{}, streamSub: map[countsKey]int{},
	}
	ids := func(m map[countsKey]*countsIDs, k countsKey) *countsIDs {
		if m[k] == nil {
			m[k] = &countsIDs{}
		}
		return m[k]
	}
	err := g.ts.store.View().Iterate([]byte{byte(codec.TagZBlock)}, []byte{byte(codec.TagZMember) + 1}, false,
		func(k, val []byte) (bool, error) {
			tag := codec.Tag(k[0])
			switch tag {
			case codec.TagMeta, codec.TagHash, codec.TagSet, codec.TagList, codec.TagStreamEntry, codec.TagGroup,
				codec.TagConsumer, codec.TagPEL, codec.TagConsumerPEL, codec.TagZMember, codec.TagZScore, codec.TagZBlock:
			case codec.TagTTL:
				_, deadline, db, key, err := codec.DecodeTTLKey(k)
				ck := countsKey{db, string(key)}
				s.ttl[ck] = append(s.ttl[ck], deadline)
				return true, err
			default: // the change log, and whatever else is not a user key's
				return true, nil
			}
			d, err := codec.DecodeKey(k)
			if err != nil {
				return false, fmt.Errorf("key %q: %w", k, err)
			}
			ck := countsKey{d.DB, string(d.Key)}
			// split takes a name off the suffix; id decodes what is left.
			suffix := d.Suffix
			split := func() string {
				var name []byte
				if err == nil {
					name, suffix, err = codec.SplitName(suffix)
				}
				return string(name)
			}
			id := func() codec.ID {
				if err != nil {
					return codec.ID{}
				}
				if len(suffix) != codec.IDLen {
					err = fmt.Errorf("ID suffix of %d bytes", len(suffix))
				}
				var id codec.ID
				if err == nil {
					id, err = codec.DecodeID(suffix)
				}
				return id
			}
			switch tag {
			case codec.TagMeta:
				if len(d.Suffix) != 0 {
					return false, fmt.Errorf("meta key %q with a suffix", k)
				}
				m, err := codec.DecodeMeta(val)
				m.Value = slices.Clone(m.Value) // Value and Floor alias the iterator's buffer
				m.Floor = slices.Clone(m.Floor)
				s.meta[ck] = m
				return true, err
			case codec.TagHash:
				s.hash[ck]++
				return true, nil
			case codec.TagSet:
				s.set[ck]++
				return true, nil
			case codec.TagList:
				p, err := codec.DecodeListPos(d.Suffix)
				s.list[ck] = append(s.list[ck], p)
				return true, err
			case codec.TagZMember, codec.TagZScore:
				var sc float64
				var mem []byte
				m := s.zmember
				if tag == codec.TagZMember {
					mem = d.Suffix
					sc, err = codec.DecodeScoreArg(val)
				} else {
					m = s.zindex
					sc, mem, err = codec.DecodeZScoreSuffix(d.Suffix)
				}
				if m[ck] == nil {
					m[ck] = map[string]uint64{}
				}
				m[ck][string(mem)] = math.Float64bits(sc)
				return true, err
			case codec.TagZBlock:
				n, _, err := codec.DecodeZBlock(val)
				s.zblocks[ck] = append(s.zblocks[ck], int64(n))
				return true, err
			}
			s.streamSub[ck]++
			switch tag {
			case codec.TagStreamEntry:
				ids(s.entries, ck).add(id())
			case codec.TagGroup:
				gk := countsGroupKey{ck, split()}
				if err == nil && len(suffix) != 0 {
					err = fmt.Errorf("group key %q with trailing bytes", k)
				}
				if err == nil {
					s.groups[gk], err = codec.DecodeGroup(val)
				}
			case codec.TagConsumer:
				gk := countsGroupKey{ck, split()}
				cons := countsConsumerKey{gk, split()}
				if err == nil && len(suffix) != 0 {
					err = fmt.Errorf("consumer key %q with trailing bytes", k)
				}
				if err == nil {
					s.consumers[cons], err = codec.DecodeConsumer(val)
				}
			case codec.TagPEL:
				gk := countsGroupKey{ck, split()}
				id := id()
				var e codec.PELEntry
				if err == nil {
					e, err = codec.DecodePELEntry(val)
				}
				if s.pel[gk] == nil {
					s.pel[gk] = &countsIDs{}
				}
				s.pel[gk].add(id)
				s.owner[countsPELKey{gk, id}] = string(e.Consumer)
			case codec.TagConsumerPEL:
				gk := countsGroupKey{ck, split()}
				cons := countsConsumerKey{gk, split()}
				id := id()
				if s.cpel[cons] == nil {
					s.cpel[cons] = &countsIDs{}
				}
				s.cpel[cons].add(id)
				s.qkeys[cons] = append(s.qkeys[cons], id)
			}
			if err != nil {
				return false, fmt.Errorf("key %q: %w", k, err)
			}
			return true, nil
		})
	if err != nil {
		t.Fatalf("reading the store: %v", err)
	}
	return s
}

// check compares every stored count with the recount, and DBSIZE with the
// live keys of each db.
func (g *countsRun) check(step int) {
	s := g.read()
	now := g.nowMs()
	var bad []string
	badf := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }

	for k, m := range s.meta {
		if int(k.db) >= len(g.dbs) {
			badf("key %q in db %d", k.key, k.db)
			continue
		}
		if m.ExpireAtMs != 0 && !slices.Contains(s.ttl[k], m.ExpireAtMs) {
			badf("db %d key %q: expires at %d, no TTL index entry (have %v)", k.db, k.key, m.ExpireAtMs, s.ttl[k])
		}
		switch m.Type {
		case codec.TypeHash:
			if m.Count == 0 || m.Count != s.hash[k] {
				badf("db %d hash %q: count %d, %d H keys", k.db, k.key, m.Count, s.hash[k])
			}
		case codec.TypeSet:
			if m.Count == 0 || m.Count != s.set[k] {
				badf("db %d set %q: count %d, %d S keys", k.db, k.key, m.Count, s.set[k])
			}
		case codec.TypeList:
			// Dense positions: exactly head .. head+count-1.
			pos := s.list[k]
			dense := m.Count != 0 && uint64(len(pos)) == m.Count
			for i, p := range pos {
				dense = dense && p == m.Head+int64(i)
			}
			if !dense {
				badf("db %d list %q: count %d head %d, I keys at %v", k.db, k.key, m.Count, m.Head, pos)
			}
		case codec.TypeZSet:
			z, y := s.zmember[k], s.zindex[k]
			if m.Count == 0 || m.Count != uint64(len(z)) || !maps.Equal(z, y) {
				badf("db %d zset %q: count %d, %d Z keys, %d Y keys (equal %v)", k.db, k.key, m.Count, len(z), len(y), maps.Equal(z, y))
			}
			var lowest []byte // the floor must be the lowest Y suffix (truncated)
			for mem, bits := range y {
				if suf := append(codec.AppendScore(nil, math.Float64frombits(bits)), mem...); lowest == nil || bytes.Compare(suf, lowest) < 0 {
					lowest = suf
				}
			}
			if want := lowest[:min(len(lowest), codec.ZFloorMax)]; !bytes.Equal(m.Floor, want) {
				badf("db %d zset %q: floor %q, lowest score-index suffix %q", k.db, k.key, m.Floor, lowest)
			}
			var inBlocks int64
			for _, n := range s.zblocks[k] {
				inBlocks += n
			}
			if m.Ranked && inBlocks != int64(m.Count) || !m.Ranked && len(s.zblocks[k]) > 0 {
				badf("db %d zset %q: count %d ranked %v, %d rank blocks counting %d", k.db, k.key, m.Count, m.Ranked, len(s.zblocks[k]), inBlocks)
			}
		case codec.TypeStream:
			x := s.entries[k]
			if x == nil {
				x = &countsIDs{}
			}
			sm := m.Stream
			if sm.Length != x.n {
				badf("db %d stream %q: length %d, %d X keys", k.db, k.key, sm.Length, x.n)
			}
			if x.n > 0 && (sm.FirstID != x.first || sm.LastID.Less(x.last)) {
				badf("db %d stream %q: first-id %v last-id %v, X keys from %v to %v", k.db, k.key, sm.FirstID, sm.LastID, x.first, x.last)
			}
			if x.n == 0 && !sm.FirstID.IsZero() {
				badf("db %d stream %q: empty, first-id %v", k.db, k.key, sm.FirstID)
			}
		}
	}
	// Sub-keys must belong to a key of their type.
	typeOf := func(k countsKey) codec.Type { return s.meta[k].Type }
	for k, n := range s.hash {
		if typeOf(k) != codec.TypeHash {
			badf("db %d key %q (%s): %d H keys", k.db, k.key, typeOf(k), n)
		}
	}
	for k, n := range s.set {
		if typeOf(k) != codec.TypeSet {
			badf("db %d key %q (%s): %d S keys", k.db, k.key, typeOf(k), n)
		}
	}
	for k, pos := range s.list {
		if typeOf(k) != codec.TypeList {
			badf("db %d key %q (%s): %d I keys", k.db, k.key, typeOf(k), len(pos))
		}
	}
	for _, zm := range []map[countsKey]map[string]uint64{s.zmember, s.zindex} {
		for k, mem := range zm {
			if typeOf(k) != codec.TypeZSet {
				badf("db %d key %q (%s): %d Z or Y keys", k.db, k.key, typeOf(k), len(mem))
			}
		}
	}
	for k, n := range s.zblocks {
		if typeOf(k) != codec.TypeZSet {
			badf("db %d key %q (%s): %d rank blocks", k.db, k.key, typeOf(k), len(n))
		}
	}
	for k, n := range s.streamSub {
		if typeOf(k) != codec.TypeStream {
			badf("db %d key %q (%s): %d stream sub-keys", k.db, k.key, typeOf(k), n)
		}
	}

	// PEL stats: a group's against its P keys, a consumer's against its Q
	// keys; and P and Q must describe the same entries.
	for gk, grp := range s.groups {
		if grp.PELUnknown {
			badf("%s: legacy group value", countsGroupName(gk))
		}
		if want := s.pel[gk].stats(); grp.PEL != want {
			badf("%s: PEL stats %+v, P keys %+v", countsGroupName(gk), grp.PEL, want)
		}
	}
	for ck, c := range s.consumers {
		if _, ok := s.groups[ck.countsGroupKey]; !ok {
			badf("%s consumer %q: no group", countsGroupName(ck.countsGroupKey), ck.consumer)
		}
		if c.PELUnknown {
			badf("%s consumer %q: legacy consumer value", countsGroupName(ck.countsGroupKey), ck.consumer)
		}
		if want := s.cpel[ck].stats(); c.PEL != want {
			badf("%s consumer %q: PEL stats %+v, Q keys %+v", countsGroupName(ck.countsGroupKey), ck.consumer, c.PEL, want)
		}
	}
	for gk := range s.pel {
		if _, ok := s.groups[gk]; !ok {
			badf("%s: P keys, no group", countsGroupName(gk))
		}
	}
	for pk, owner := range s.owner {
		ck := countsConsumerKey{pk.countsGroupKey, owner}
		if _, ok := s.consumers[ck]; !ok {
			badf("%s: pending %v owned by %q, no such consumer", countsGroupName(pk.countsGroupKey), pk.id, owner)
		}
		if !slices.Contains(s.qkeys[ck], pk.id) {
			badf("%s: pending %v owned by %q, no Q key", countsGroupName(pk.countsGroupKey), pk.id, owner)
		}
	}
	for ck, ids := range s.qkeys {
		for _, id := range ids {
			if owner, ok := s.owner[countsPELKey{ck.countsGroupKey, id}]; !ok || owner != ck.consumer {
				badf("%s: Q key %v of %q, P key owned by %q (exists %v)", countsGroupName(ck.countsGroupKey), id, ck.consumer, owner, ok)
			}
		}
	}

	// What reads see (View.Meta, through the store's metadata cache) must
	// be the stored metadata.
	v := g.ts.store.View()
	for db := range g.dbs {
		for _, key := range countsKeys {
			k := countsKey{uint8(db), key}
			m, ok, err := v.Meta(k.db, []byte(key))
			if err != nil {
				g.t.Fatal(err)
			}
			want, stored := s.meta[k]
			live := stored && (want.ExpireAtMs == 0 || want.ExpireAtMs >= v.NowMs())
			switch {
			case ok != live:
				badf("db %d key %q: reads find it %v, stored %v (expires at %d)", k.db, key, ok, stored, want.ExpireAtMs)
			case ok && !countsSameMeta(m, want):
				badf("db %d key %q: reads see %+v, stored %+v", k.db, key, m, want)
			}
		}
	}
	if len(bad) == 0 {
		bad = g.checkKeyCounts()
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		g.t.Fatalf("step %d (time %d): %d mismatches:\n  %s\nlast commands:\n%s",
			step, now, len(bad), strings.Join(bad[:min(len(bad), 20)], "\n  "), g.lastLog(30))
	}
}

func countsSameMeta(a, b codec.Meta) bool {
	return a.Type == b.Type && a.ExpireAtMs == b.ExpireAtMs && string(a.Value) == string(b.Value) &&
		a.Stream == b.Stream && a.Count == b.Count
}

// countsKeyCount is what DBSIZE and INFO keyspace report for one db, or
// what they should: keys, and keys with a TTL.
type countsKeyCount struct{ keys, expires int64 }

// keyCounts counts the metadata keys of each db: every stored one, and the
// live ones (TTL not passed).
func (s *countsStore) keyCounts(nowMs int64) (stored, live [2]countsKeyCount) {
	for k, m := range s.meta {
		if int(k.db) >= len(stored) {
			continue // reported by check
		}
		ttl := int64(0)
		if m.ExpireAtMs != 0 {
			ttl = 1
		}
		stored[k.db].keys++
		stored[k.db].expires += ttl
		if m.ExpireAtMs == 0 || m.ExpireAtMs >= nowMs {
			live[k.db].keys++
			live[k.db].expires += ttl
		}
	}
	return stored, live
}

// checkKeyCounts compares DBSIZE and INFO keyspace's keys= and expires= in
// each db with a recount of the metadata, in Redis's meaning (a key counts
// until it is deleted, expired or not), which Sediment's key counters keep
// (countMode "stored"; "live", only the unexpired keys, was Sediment's
// before them and is still recognised in the messages). Active expiry may delete keys while the server is asked: the
// store is read before and after, and the question asked again when they
// differ (or, to let a counter catch up with its commit, when the replies
// match neither recount).
func (g *countsRun) checkKeyCounts() []string {
	var bad []string
	for attempt := 0; attempt < 5; attempt++ {
		if attempt > 0 {
			time.Sleep(20 * time.Millisecond)
		}
		before, _ := g.read().keyCounts(g.nowMs())
		var got [2]countsKeyCount
		for db, c := range g.dbs {
			n, ok := mustDo(g.t, c, "DBSIZE").(int64)
			if !ok {
				g.t.Fatalf("DBSIZE in db %d: not an integer", db)
			}
			got[db].keys = n
		}
		info, _ := mustDo(g.t, g.dbs[0], "INFO", "keyspace").(string)
		var fromInfo [2]countsKeyCount
		for _, l := range strings.Split(info, "\r\n") {
			var db int
			var kc countsKeyCount
			var avg int64
			if n, _ := fmt.Sscanf(l, "db%d:keys=%d,expires=%d,avg_ttl=%d", &db, &kc.keys, &kc.expires, &avg); n == 4 && db >= 0 && db < len(fromInfo) {
				fromInfo[db] = kc
			}
		}
		stored, live := g.read().keyCounts(g.nowMs())
		if stored != before {
			continue
		}
		bad = bad[:0]
		fits := func(want [2]countsKeyCount) bool {
			for db := range want {
				if got[db].keys != want[db].keys || fromInfo[db] != want[db] {
					return false
				}
			}
			return true
		}
		fitsStored, fitsLive := fits(stored), fits(live)
		switch {
		case g.countMode == "stored" && fitsStored, g.countMode == "live" && fitsLive:
			return nil
		case g.countMode == "" && (fitsStored || fitsLive):
			if fitsStored != fitsLive { // the first step that tells them apart
				g.countMode = map[bool]string{true: "stored", false: "live"}[fitsStored]
			}
			return nil
		}
		for db := range got {
			bad = append(bad, fmt.Sprintf("db %d: DBSIZE %d, INFO keys=%d,expires=%d; stored keys %d (%d with a TTL), live %d (%d); counting %q so far",
				db, got[db].keys, fromInfo[db].keys, fromInfo[db].expires,
				stored[db].keys, stored[db].expires, live[db].keys, live[db].expires, g.countMode))
		}
	}
	if bad == nil {
		g.t.Fatal("the store kept changing while DBSIZE was asked")
	}
	return bad
}

func countsGroupName(gk countsGroupKey) string {
	return fmt.Sprintf("db %d stream %q group %q", gk.db, gk.key, gk.group)
}
