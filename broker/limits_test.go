package broker

// The limits table: every numeric argument of every command gets the int64
// extremes and the malformed numbers Redis's parsers reject, and the reply
// must be redis-server's, byte for byte, reply type included. Sediment runs
// in process, so the test also bounds the heap each command allocates: a
// count or limit must never size work before the data does
// (docs/commands.md, "Common to all commands").
//
// A new command adds its numeric arguments to limitCases, or its name to
// limitNoNumbers; TestLimitsCoverTable fails until it does.

import (
	"errors"
	"fmt"
	"math"
	"net"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sediment-dev/sediment/internal/num"
)

// limitValues are sent in place of '#' in every case.
var limitValues = []string{
	"0", "-1", "1",
	"9223372036854775807", "-9223372036854775808",
	"9223372036854775808", "-9223372036854775809",
	"18446744073709551615", "99999999999999999999999",
	"+5", " 5", "5.0", "0x10", "",
	// Large enough that sizing a slice by it shows in the heap check,
	// small enough to be harmless if it does.
	"4194304",
	// Milliseconds whose time.Duration wraps to about half a millisecond.
	"18446744073710",
}

// limitCase is one numeric argument of one command.
type limitCase struct {
	cmd    string   // the command; '#' is replaced by each value (fields split on spaces)
	then   []string // commands run after it, to compare the state it left
	extra  []string // values tried on top of limitValues
	settle bool     // sleep a few ms after the setup, so that idle times are >= 1 ms
	blocks bool     // may block: checked blocked, then unblocked by an XADD
	// cursor: SCAN, run in database 1 flushed first. Partial iterations
	// differ by design: keys are compared when one starts and ends at 0.
	cursor bool
	// knownDiff names a documented difference (docs/commands.md): a
	// mismatch is logged, not failed.
	knownDiff string
	// sizes: the number is the size of the data the command writes or
	// replies, as in Redis (SETRANGE's offset, HRANDFIELD's count), so
	// values from 64 Ki up to sizes (in absolute value) are not sent: they
	// allocate that much by definition. Larger ones (errors) still are.
	sizes int64
}

// limitSetup runs before every value: a stream s of three entries, group g
// with 1-1 and 2-1 pending for c and 3-1 undelivered, group g2 with nothing
// new, and a string k. Each value gets keys of its own (limitArgs) rather
// than a FLUSHALL: thousands of flushes would pile up range deletions that
// slow every later command.
var limitSetup = []string{
	"XADD s 1-1 a 1", "XADD s 2-1 b 2", "XADD s 3-1 c 3",
	"XGROUP CREATE s g 0", "XGROUP CREATE s g2 $",
	"XREADGROUP GROUP g c COUNT 2 STREAMS s >",
	"SET k v",
	"HSET h f 1", // one field: HRANDFIELD replies are deterministic
	"SADD st 7",  // one member (an intset in Redis): SRANDMEMBER, SPOP and SSCAN replies too
	"RPUSH li a b a",
	"ZADD zs 1 a 2 b 3 c",
	"ZADD zr 5 m", // one member: ZRANDMEMBER replies are deterministic
}

// limitCases lists every numeric argument of today's commands. CLIENT and
// CONFIG take numbers only in subcommands Sediment does not have yet (KILL
// ID, PAUSE, UNBLOCK, NO-EVICT; CONFIG SET).
var limitCases = map[string][]limitCase{
	"xadd": {
		{cmd: "XADD s MAXLEN # 9-1 f v", then: []string{"XLEN s"}},
		{cmd: "XADD s MAXLEN = # 9-1 f v", then: []string{"XLEN s"}},
		{cmd: "XADD s MAXLEN ~ # 9-1 f v", then: []string{"XLEN s"}},
		{cmd: "XADD s MAXLEN ~ 10 LIMIT # 9-1 f v", then: []string{"XLEN s"}},
		{cmd: "XADD s MINID ~ 0 LIMIT # 9-1 f v", then: []string{"XLEN s"}},
		{cmd: "XADD s MAXLEN = 1 LIMIT # 9-1 f v"},
	},
	"xtrim": {
		{cmd: "XTRIM s MAXLEN #", then: []string{"XLEN s"}},
		{cmd: "XTRIM s MAXLEN ~ #", then: []string{"XLEN s"}},
		{cmd: "XTRIM s MAXLEN ~ 0 LIMIT #", then: []string{"XLEN s"}},
		{cmd: "XTRIM s MINID ~ 9 LIMIT #", then: []string{"XLEN s"}},
	},
	"xrange": {
		{cmd: "XRANGE s - + COUNT #"},
		{cmd: "XRANGE s (1-1 + COUNT 1 COUNT #"},
		{cmd: "XRANGE nokey - + COUNT #"},
	},
	"xrevrange": {
		{cmd: "XREVRANGE s + - COUNT #"},
	},
	"xread": {
		{cmd: "XREAD COUNT # STREAMS s 0"},
		{cmd: "XREAD COUNT # STREAMS s nokey 0 0"},
		{cmd: "XREAD BLOCK # STREAMS s 0"},
		{cmd: "XREAD BLOCK # STREAMS s $", blocks: true},
		{cmd: "XREAD COUNT # BLOCK 0 STREAMS s $", blocks: true},
	},
	"xreadgroup": {
		{cmd: "XREADGROUP GROUP g c COUNT # STREAMS s >", then: []string{"XPENDING s g"}},
		{cmd: "XREADGROUP GROUP g c COUNT # STREAMS s 0", then: []string{"XPENDING s g - + 10"}},
		{cmd: "XREADGROUP GROUP g c2 COUNT # NOACK STREAMS s >", then: []string{"XPENDING s g"}},
		{cmd: "XREADGROUP GROUP g c BLOCK # STREAMS s 0"},
		{cmd: "XREADGROUP GROUP g c BLOCK # STREAMS s >", then: []string{"XPENDING s g"}},
		{cmd: "XREADGROUP GROUP g2 c BLOCK # STREAMS s >", blocks: true, then: []string{"XPENDING s g2"}},
		{cmd: "XREADGROUP GROUP g2 c COUNT # BLOCK 0 STREAMS s >", blocks: true, then: []string{"XPENDING s g2"}},
	},
	"xpending": {
		{cmd: "XPENDING s g - + #"},
		{cmd: "XPENDING s g - + # c"},
		{cmd: "XPENDING s g - + # nobody"},
		{cmd: "XPENDING s g IDLE # - + 10", settle: true},
		{cmd: "XPENDING s g IDLE # - + 10 c", settle: true},
		{cmd: "XPENDING s g IDLE # - +"},
		{cmd: "XPENDING s g IDLE # - + #", settle: true},
		{cmd: "XPENDING s nog - + #"},
	},
	"xclaim": {
		{cmd: "XCLAIM s g c2 # 1-1", settle: true, then: []string{"XPENDING s g - + 10"}},
		{cmd: "XCLAIM s g c2 0 1-1 IDLE #", then: []string{"XPENDING s g IDLE 1000 - + 10"}},
		{cmd: "XCLAIM s g c2 0 1-1 TIME #", then: []string{"XPENDING s g IDLE 1000 - + 10"}},
		{cmd: "XCLAIM s g c2 0 1-1 RETRYCOUNT #", then: []string{"XPENDING s g - + 10"}},
		{cmd: "XCLAIM s g c2 0 1-1 3-1 FORCE RETRYCOUNT # JUSTID", then: []string{"XPENDING s g - + 10"}},
		{cmd: "XCLAIM s nog c2 # 1-1"},
	},
	"xautoclaim": {
		{cmd: "XAUTOCLAIM s g c2 # 0", settle: true, then: []string{"XPENDING s g - + 10"}},
		{cmd: "XAUTOCLAIM s g c2 0 0 COUNT #", then: []string{"XPENDING s g - + 10"},
			// Redis's bound is LONG_MAX/16 (it allocates COUNT stream IDs),
			// and no allocation of 2^47 bytes or more succeeds.
			// Between about 2^42 and 2^43 the reply depends on the host.
			extra: []string{"576460752303423487", "576460752303423488", "922337203685477580", "8796093022208"}},
		{cmd: "XAUTOCLAIM s g c2 0 0 COUNT # JUSTID", then: []string{"XPENDING s g - + 10"}},
		{cmd: "XAUTOCLAIM s nog c2 0 0 COUNT #"},
	},
	"xgroup": {
		{cmd: "XGROUP CREATE s g3 0 ENTRIESREAD #", then: []string{"XINFO GROUPS s"}},
		{cmd: "XGROUP CREATE s g3 $ MKSTREAM ENTRIESREAD #", then: []string{"XINFO GROUPS s"}},
		{cmd: "XGROUP SETID s g 0 ENTRIESREAD #", then: []string{"XINFO GROUPS s"}},
		{cmd: "XGROUP SETID s nog 0 ENTRIESREAD #"},
	},
	"xsetid": {
		{cmd: "XSETID s 3-1 ENTRIESADDED #", then: []string{"XINFO STREAM s"}},
		{cmd: "XSETID nokey 3-1 ENTRIESADDED #"},
	},
	"xinfo": {
		{cmd: "XINFO STREAM s FULL COUNT #"},
	},
	"scan": {
		{cmd: "SCAN #", cursor: true, extra: []string{"-18446744073709551615", "-18446744073709551616",
			"18446744073709551616", "+", "-", "-0", "00", "16383", "16384", "\x00", "7\x00x", "7\x01"}},
		{cmd: "SCAN 0 COUNT #", cursor: true},
		{cmd: "SCAN 0 MATCH * COUNT # TYPE string", cursor: true},
	},
	"memory": {
		// The sizes are estimates of different storage: the errors and the
		// missing key's nil are compared; sizes are logged.
		{cmd: "MEMORY USAGE nokey SAMPLES #"},
		{cmd: "MEMORY USAGE k SAMPLES #", knownDiff: "MEMORY USAGE estimates Sediment's stored bytes, not Redis's allocations"},
	},
	"slowlog": {
		// The entries depend on each server's timing (a command slower than
		// 10 ms on one only); the count's errors and bounds are compared.
		{cmd: "SLOWLOG GET #", knownDiff: "slow log entries depend on each server's timing"},
	},
	"hello": {
		// With a bad option after it, so that the protocol never changes:
		// the protover is parsed (and refused) before the options.
		{cmd: "HELLO # NOSUCHOPTION"},
	},
	"select": {
		{cmd: "SELECT #", extra: []string{"15", "16", "255", "256", "2147483647", "2147483648", "-2147483648", "-2147483649"}},
	},
	"expire": {
		{cmd: "EXPIRE k #", then: []string{"TTL k"}, extra: []string{"9223372036854775", "9223372036854776"}},
		{cmd: "EXPIRE nokey #"},
		{cmd: "EXPIRE k # NX"},
	},
	"pexpire": {
		// No TTL afterwards: a 1 ms TTL may or may not have passed.
		{cmd: "PEXPIRE k #"},
		{cmd: "PEXPIRE nokey # GT"},
	},
	"expireat": {
		{cmd: "EXPIREAT k #", then: []string{"PEXPIRETIME k"}, extra: []string{"9223372036854775", "9223372036854776"}},
		{cmd: "EXPIREAT nokey #"},
	},
	"pexpireat": {
		{cmd: "PEXPIREAT k #", then: []string{"PEXPIRETIME k"}},
		{cmd: "PEXPIREAT k # XX", then: []string{"PEXPIRETIME k"}},
	},
	"set": {
		{cmd: "SET k2 v EX #", then: []string{"TTL k2"}, extra: []string{"9223372036854775", "9223372036854776"}},
		{cmd: "SET k2 v PX #"},
		{cmd: "SET k2 v EXAT #", then: []string{"PEXPIRETIME k2"}, extra: []string{"9223372036854775", "9223372036854776"}},
		{cmd: "SET k2 v PXAT #", then: []string{"PEXPIRETIME k2"}},
		{cmd: "SET k v GET EX #", then: []string{"GET k"}},
	},
	"setex":    {{cmd: "SETEX k2 # v", then: []string{"TTL k2"}, extra: []string{"9223372036854775", "9223372036854776"}}},
	"psetex":   {{cmd: "PSETEX k2 # v"}},
	"getrange": {{cmd: "GETRANGE k # 10"}, {cmd: "GETRANGE k 0 #"}, {cmd: "GETRANGE k # -1"}},
	"substr":   {{cmd: "SUBSTR k # -1"}, {cmd: "SUBSTR k -3 #"}},
	"setrange": {{cmd: "SETRANGE k2 # x", then: []string{"STRLEN k2"}, extra: []string{"536870911", "536870912"}, sizes: 512 << 20}},
	"incrby":   {{cmd: "INCRBY n #", then: []string{"GET n"}}, {cmd: "INCRBY k #"}},
	"decrby":   {{cmd: "DECRBY n #", then: []string{"GET n"}}},
	"lcs":      {{cmd: "LCS k k IDX MINMATCHLEN # WITHMATCHLEN"}, {cmd: "LCS k nokey MINMATCHLEN #"}},
	"hincrby":  {{cmd: "HINCRBY h f #", then: []string{"HGET h f"}}},
	"hrandfield": {
		{cmd: "HRANDFIELD h #", sizes: math.MaxInt64 - 1},
		{cmd: "HRANDFIELD h # WITHVALUES", sizes: math.MaxInt64/2 - 1},
		{cmd: "HRANDFIELD nokey #", sizes: math.MaxInt64 - 1},
	},
	"hscan": {{cmd: "HSCAN h # COUNT 10", cursor: true}, {cmd: "HSCAN h 0 COUNT #"}},
	"sscan": {{cmd: "SSCAN st # COUNT 10", cursor: true}, {cmd: "SSCAN st 0 COUNT #"}},
	"srandmember": {
		{cmd: "SRANDMEMBER st #", sizes: math.MaxInt64 - 1},
		{cmd: "SRANDMEMBER nokey #", sizes: math.MaxInt64 - 1},
	},
	"spop":       {{cmd: "SPOP st #", then: []string{"SCARD st"}}, {cmd: "SPOP nokey #"}},
	"sintercard": {{cmd: "SINTERCARD # st st"}, {cmd: "SINTERCARD 1 st LIMIT #"}},
	"move":       {{cmd: "MOVE k2 #"}},
	"swapdb":     {{cmd: "SWAPDB # 1"}, {cmd: "SWAPDB 1 #"}},
	"copy":       {{cmd: "COPY k k2 DB #"}},
	"lpop":       {{cmd: "LPOP li #", then: []string{"LRANGE li 0 -1"}}, {cmd: "LPOP nokey #"}},
	"rpop":       {{cmd: "RPOP li #", then: []string{"LRANGE li 0 -1"}}, {cmd: "RPOP nokey #"}},
	"lrange":     {{cmd: "LRANGE li # 10"}, {cmd: "LRANGE li 0 #"}, {cmd: "LRANGE li # #"}, {cmd: "LRANGE nokey # 1"}},
	"lindex":     {{cmd: "LINDEX li #"}, {cmd: "LINDEX nokey #"}},
	"lset":       {{cmd: "LSET li # x", then: []string{"LRANGE li 0 -1"}}, {cmd: "LSET nokey # x"}},
	"lrem":       {{cmd: "LREM li # a", then: []string{"LRANGE li 0 -1"}}, {cmd: "LREM nokey # a"}},
	"ltrim":      {{cmd: "LTRIM li # -1", then: []string{"LRANGE li 0 -1"}}, {cmd: "LTRIM li 0 #", then: []string{"LRANGE li 0 -1"}}},
	"lpos": {
		{cmd: "LPOS li a RANK #"}, {cmd: "LPOS li a COUNT #"}, {cmd: "LPOS li a MAXLEN #"},
		{cmd: "LPOS li a RANK # COUNT 0"}, {cmd: "LPOS nokey a COUNT #"},
	},
	"lmpop": {
		{cmd: "LMPOP # li LEFT", then: []string{"LRANGE li 0 -1"}},
		{cmd: "LMPOP 1 li RIGHT COUNT #", then: []string{"LRANGE li 0 -1"}},
	},
	// A timeout on a list holding elements: served at once, so the timeout
	// is parsed and never waited.
	"blpop":      {{cmd: "BLPOP li #", then: []string{"LRANGE li 0 -1"}}},
	"brpop":      {{cmd: "BRPOP nokey li #", then: []string{"LRANGE li 0 -1"}}},
	"blmove":     {{cmd: "BLMOVE li li2 LEFT RIGHT #", then: []string{"LRANGE li2 0 -1"}}},
	"brpoplpush": {{cmd: "BRPOPLPUSH li li #", then: []string{"LRANGE li 0 -1"}}},
	"blmpop": {
		{cmd: "BLMPOP # 1 li LEFT", then: []string{"LRANGE li 0 -1"}},
		{cmd: "BLMPOP 0 # li LEFT", then: []string{"LRANGE li 0 -1"}},
		{cmd: "BLMPOP 0 1 li RIGHT COUNT #", then: []string{"LRANGE li 0 -1"}},
	},
	// Sorted sets: ranks, LIMITs, counts, numkeys, timeouts, cursors.
	"zrange": {
		{cmd: "ZRANGE zs # 10"}, {cmd: "ZRANGE zs 0 #"}, {cmd: "ZRANGE zs # # REV WITHSCORES"},
		{cmd: "ZRANGE zs -inf +inf BYSCORE LIMIT # 2"}, {cmd: "ZRANGE zs - + BYLEX LIMIT 0 #"},
		{cmd: "ZRANGE zs 0 -1 LIMIT 0 #"}, {cmd: "ZRANGE nokey # 1"},
	},
	"zrangestore": {
		{cmd: "ZRANGESTORE zd zs # -1", then: []string{"ZRANGE zd 0 -1 WITHSCORES"}},
		{cmd: "ZRANGESTORE zd zs 0 -1 BYSCORE LIMIT 1 #", then: []string{"ZRANGE zd 0 -1 WITHSCORES"}},
	},
	"zrevrange":        {{cmd: "ZREVRANGE zs # -1"}, {cmd: "ZREVRANGE zs 0 # WITHSCORES"}},
	"zrangebyscore":    {{cmd: "ZRANGEBYSCORE zs -inf +inf LIMIT # 1"}, {cmd: "ZRANGEBYSCORE zs -inf +inf WITHSCORES LIMIT 1 #"}},
	"zrevrangebyscore": {{cmd: "ZREVRANGEBYSCORE zs +inf -inf LIMIT # #"}},
	"zrangebylex":      {{cmd: "ZRANGEBYLEX zs - + LIMIT # 1"}, {cmd: "ZRANGEBYLEX zs - + LIMIT 0 #"}},
	"zrevrangebylex":   {{cmd: "ZREVRANGEBYLEX zs + - LIMIT # #"}},
	"zremrangebyrank": {
		{cmd: "ZREMRANGEBYRANK zs # 0", then: []string{"ZRANGE zs 0 -1"}},
		{cmd: "ZREMRANGEBYRANK zs 5 #", then: []string{"ZRANGE zs 0 -1"}},
	},
	"zpopmin": {{cmd: "ZPOPMIN zs #", then: []string{"ZRANGE zs 0 -1"}}, {cmd: "ZPOPMIN nokey #"}},
	"zpopmax": {{cmd: "ZPOPMAX zs #", then: []string{"ZRANGE zs 0 -1"}}},
	"zmpop": {
		{cmd: "ZMPOP # zs MIN", then: []string{"ZRANGE zs 0 -1"}},
		{cmd: "ZMPOP 1 zs MAX COUNT #", then: []string{"ZRANGE zs 0 -1"}},
	},
	// Timeouts on a set holding members: served at once.
	"bzpopmin": {{cmd: "BZPOPMIN zs #", then: []string{"ZRANGE zs 0 -1"}}},
	"bzpopmax": {{cmd: "BZPOPMAX nokey zs #", then: []string{"ZRANGE zs 0 -1"}}},
	"bzmpop": {
		{cmd: "BZMPOP # 1 zs MIN", then: []string{"ZRANGE zs 0 -1"}},
		{cmd: "BZMPOP 0 # zs MIN", then: []string{"ZRANGE zs 0 -1"}},
		{cmd: "BZMPOP 0 1 zs MAX COUNT #", then: []string{"ZRANGE zs 0 -1"}},
	},
	"zrandmember": {
		{cmd: "ZRANDMEMBER zr #", sizes: math.MaxInt64 - 1},
		{cmd: "ZRANDMEMBER zr # WITHSCORES", sizes: math.MaxInt64/2 - 1},
		{cmd: "ZRANDMEMBER nokey #", sizes: math.MaxInt64 - 1},
	},
	"zunion":      {{cmd: "ZUNION # zs zr"}},
	"zinter":      {{cmd: "ZINTER # zs zs WITHSCORES"}},
	"zdiff":       {{cmd: "ZDIFF # zs zr"}},
	"zunionstore": {{cmd: "ZUNIONSTORE zd # zs zr", then: []string{"ZRANGE zd 0 -1 WITHSCORES"}}},
	"zinterstore": {{cmd: "ZINTERSTORE zd # zs zs", then: []string{"ZRANGE zd 0 -1 WITHSCORES"}}},
	"zdiffstore":  {{cmd: "ZDIFFSTORE zd # zs zr", then: []string{"ZRANGE zd 0 -1 WITHSCORES"}}},
	"zintercard":  {{cmd: "ZINTERCARD # zs zs"}, {cmd: "ZINTERCARD 1 zs LIMIT #"}},
	"zscan":       {{cmd: "ZSCAN zs # COUNT 10", cursor: true}, {cmd: "ZSCAN zs 0 COUNT #"}},
	"getex": {
		{cmd: "GETEX k EX #", then: []string{"TTL k"}, extra: []string{"9223372036854775", "9223372036854776"}},
		{cmd: "GETEX nokey PX #"},
		{cmd: "GETEX k EXAT #", then: []string{"PEXPIRETIME k"}},
		{cmd: "GETEX k PXAT #", then: []string{"PEXPIRETIME k"}},
	},
}

// limitNoNumbers are the commands that take no numeric argument (in the
// forms Sediment implements).
var limitNoNumbers = []string{
	"get", "del", "unlink", "exists", "type", "keys", "dbsize", "flushdb", "flushall",
	"save", "bgsave", "lastsave",
	"changes", // FROM and COUNT: TestChangesErrors; SNAPSHOT's COUNT, DB and cursor: TestSnapshotErrors
	"ttl", "pttl", "expiretime", "pexpiretime", "persist",
	"xlen", "xdel", "xack",
	// Redis 8.2: numids is checked against the redis.io text by
	// TestXDelExErrors (redis-server 7.0 has neither command).
	"xdelex", "xackdel",
	// Redis 8.6: its ranges are checked by TestXCfgSet.
	"xcfgset",
	// Redis 8.8: numids and RETRYCOUNT are checked by TestXNack.
	"xnack",
	// Redis 8.6.2: its only number is an ID (TestXIDMPRecord).
	"xidmprecord",
	"ping", "echo", "quit", "client", "command", "info", "time", "config", "reset", "auth", "role", "monitor", "shutdown", "latency",
	// ACL GENPASS bits (random output) and ACL LOG count (client details
	// in the entries): checked by the acl differential case and TestACLGenPass.
	"acl",
	"subscribe", "psubscribe", "ssubscribe", "unsubscribe", "punsubscribe", "sunsubscribe", "publish", "spublish", "pubsub",
	"multi", "exec", "discard", "watch", "unwatch",
	"mget", "mset", "msetnx", "strlen", "getset", "getdel", "setnx", "incr", "decr", "append",
	"incrbyfloat", "hincrbyfloat", // their number is a float: the differential cases cover it
	"hset", "hmset", "hsetnx", "hget", "hmget", "hdel", "hlen", "hstrlen", "hexists", "hkeys", "hvals", "hgetall",
	"sadd", "srem", "scard", "sismember", "smismember", "smembers", "smove",
	"sinter", "sunion", "sdiff", "sinterstore", "sunionstore", "sdiffstore",
	"rename", "renamenx", "touch", "randomkey", "object",
	"lpush", "rpush", "lpushx", "rpushx", "llen", "linsert", "lmove", "rpoplpush",
	// Sorted sets: their numbers are scores and score bounds, floats that
	// the differential cases cover.
	"zadd", "zincrby", "zrem", "zcard", "zscore", "zmscore", "zrank", "zrevrank",
	"zcount", "zlexcount", "zremrangebyscore", "zremrangebylex",
}

// TestLimitsCoverTable fails when a command of the table is neither in
// limitCases nor in limitNoNumbers, or is in both.
func TestLimitsCoverTable(t *testing.T) {
	none := map[string]bool{}
	for _, n := range limitNoNumbers {
		none[n] = true
	}
	for name := range commandTable {
		_, has := limitCases[name]
		switch {
		case has && none[name]:
			t.Errorf("%s is in limitCases and in limitNoNumbers", name)
		case !has && !none[name]:
			t.Errorf("%s has no entry in limitCases (its numeric arguments) nor in limitNoNumbers", name)
		}
	}
	for name := range limitCases {
		if commandTable[name] == nil {
			t.Errorf("limitCases has %s, which is not in the command table", name)
		}
	}
	for name := range none {
		if commandTable[name] == nil {
			t.Errorf("limitNoNumbers has %s, which is not in the command table", name)
		}
	}
}

// limitArgs splits a command template, puts v in place of '#' and gives
// the keys (s, k, k2, nokey) the suffix of run n.
func limitArgs(tmpl, v string, n int) []string {
	args := strings.Split(tmpl, " ")
	for i, a := range args {
		switch a {
		case "#":
			args[i] = v
		case "s", "k", "k2", "h", "st", "nokey":
			args[i] = fmt.Sprintf("%s:%d", a, n)
		}
	}
	return args
}

// limitRaw encodes commands as one pipelined multibulk payload.
func limitRaw(cmds [][]string) string {
	var b strings.Builder
	for _, args := range cmds {
		fmt.Fprintf(&b, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
	}
	return b.String()
}

// Bounds of the heap and time a non-blocking command may take. A count
// that sized a slice of IDs or entries before the data did would allocate
// 64 MiB or more at 4194304.
const (
	limitMaxAlloc = 32 << 20
	limitMaxTime  = 2 * time.Second
	// limitBlockedAfter is how long Redis may take to reply and the command
	// still count as replied rather than blocked (with a BLOCK of more than
	// limitShortBlock ms).
	limitBlockedAfter = 20 * time.Millisecond
	// limitShortBlock is the longest BLOCK (ms) the test waits out.
	limitShortBlock = 1000
)

// TestLimits sends every value of limitValues (and each case's extras) in
// place of each numeric argument in limitCases, to redis-server and to
// Sediment, and compares the replies and the state left behind.
func TestLimits(t *testing.T) {
	redisAddr := confStartRedis(t)
	ts := newTestServer(t)
	l := &limitRun{
		t:  t,
		rc: confDial(t, redisAddr), sc: confDial(t, ts.addr),
		ru: confDial(t, redisAddr), su: confDial(t, ts.addr),
	}
	start, n := time.Now(), 0
	for _, name := range sortedKeys(limitCases) {
		for _, c := range limitCases[name] {
			known := 0
			for _, v := range append(append([]string(nil), limitValues...), c.extra...) {
				n++
				if !l.run(c, v) {
					known++
				}
			}
			if c.knownDiff != "" {
				if known == 0 {
					t.Logf("%q is marked knownDiff (%s) but matches Redis for every value: remove the marker", c.cmd, c.knownDiff)
				} else {
					t.Logf("KNOWN DIFF (%s): %q differs for %d values", c.knownDiff, c.cmd, known)
				}
			}
		}
	}
	t.Logf("limits: %d commands in %v", n, time.Since(start).Round(time.Millisecond))
}

func sortedKeys(m map[string][]limitCase) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// limitRun holds a connection to each server for the commands, and one for
// the XADDs that unblock them.
type limitRun struct {
	t              *testing.T
	rc, sc, ru, su *confConn
	n              int // runs so far: the key suffix of the current one
}

// run checks c with value v on fresh state. It returns false when the case
// has a known difference and the replies differed.
func (l *limitRun) run(c limitCase, v string) bool {
	t := l.t
	t.Helper()
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && c.sizes > 0 && (n >= 64<<10 || n <= -64<<10) && n <= c.sizes && n >= -c.sizes {
		return true
	}
	l.n++
	args := limitArgs(c.cmd, v, l.n)
	what := confFmtArgs(args)
	setup := [][]string{{"SELECT", "0"}}
	if c.cursor {
		setup = [][]string{{"SELECT", "1"}, {"FLUSHDB"}}
	}
	for _, cmd := range limitSetup {
		setup = append(setup, limitArgs(cmd, "", l.n))
	}
	for _, cc := range []*confConn{l.rc, l.sc} {
		r, err := cc.doRaw(limitRaw(setup), len(setup))
		if err != nil {
			t.Fatalf("%s: setup: %v", what, err)
		}
		for i, e := range r.arr {
			if e.kind == confError {
				t.Fatalf("%s: setup %q: %v", what, setup[i], e)
			}
		}
	}
	if c.settle {
		time.Sleep(3 * time.Millisecond)
	}
	want, got, ok := l.main(c, args, v)
	if !ok {
		return true
	}
	s := confStep{args: args, sorted: c.cursor}
	rn, sn := &confNormalizer{ids: map[string]string{}}, &confNormalizer{ids: map[string]string{}}
	want, got = rn.normalize(s, want), sn.normalize(s, got)
	if c.cursor && !limitScanWhole(args, want, got) && want.kind != confError && got.kind != confError {
		// Partial iterations differ by design (docs/commands.md, SCAN).
		want, got = confReply{kind: want.kind}, confReply{kind: got.kind}
	}
	if !want.equal(got) {
		return l.mismatch(c, what, want, got)
	}
	for _, then := range c.then {
		s := confStep{args: limitArgs(then, "", l.n)}
		want, err := l.rc.run(s)
		if err != nil {
			t.Fatalf("%s, then %s: redis: %v", what, then, err)
		}
		got, err := l.sc.run(s)
		if err != nil {
			t.Fatalf("%s, then %s: sediment: %v", what, then, err)
		}
		if want, got = rn.normalize(s, want), sn.normalize(s, got); !want.equal(got) {
			return l.mismatch(c, what+", then "+then, want, got)
		}
	}
	return true
}

// limitScanWhole reports whether SCAN args started at cursor 0 and both
// replies end the iteration: they then list every key.
func limitScanWhole(args []string, want, got confReply) bool {
	done := func(r confReply) bool { return r.kind == confArray && len(r.arr) == 2 && r.arr[0].str == "0" }
	cur, ok := num.ParseCursor([]byte(args[1]))
	return ok && cur == 0 && done(want) && done(got)
}

func (l *limitRun) mismatch(c limitCase, what string, want, got confReply) bool {
	msg := fmt.Sprintf("%s\n--- redis:\n%s\n--- sediment:\n%s", what, want, got)
	if c.knownDiff == "" {
		l.t.Error(msg)
	}
	return c.knownDiff == ""
}

// main sends the command under test to both servers and returns their
// replies. Sediment's must come within limitMaxTime and allocate at most
// limitMaxAlloc. A command that blocks on Redis must block on Sediment too;
// both are then unblocked by an XADD. ok is false after a failure.
func (l *limitRun) main(c limitCase, args []string, v string) (want, got confReply, ok bool) {
	t := l.t
	t.Helper()
	what := confFmtArgs(args)
	if !c.blocks {
		var err error
		if want, err = l.rc.do(args...); err != nil {
			t.Fatalf("%s: redis: %v", what, err)
		}
		var alloc uint64
		var took time.Duration
		for try := 0; try < 2; try++ {
			// A second try rules out an allocation by something else
			// (a memtable, the GC) during the first. It runs on the state
			// the first left, so only its cost counts; Redis runs it too.
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			begin := time.Now()
			r, err := l.sc.do(args...)
			took = time.Since(begin)
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatalf("%s: sediment: %v", what, err)
			}
			if try == 0 {
				got = r
			}
			if alloc = after.TotalAlloc - before.TotalAlloc; alloc <= limitMaxAlloc && took <= limitMaxTime {
				return want, got, true
			}
			if try == 0 {
				if _, err := l.rc.do(args...); err != nil { // keep the states alike
					t.Fatalf("%s: redis: %v", what, err)
				}
			}
		}
		t.Errorf("%s: Sediment allocated %d bytes in %v (bounds: %d bytes, %v)", what, alloc, took, limitMaxAlloc, limitMaxTime)
		return want, got, false
	}
	// Blocking: send to both, then see who replies. short: v is a BLOCK
	// timeout short enough to wait out.
	n, err := strconv.ParseInt(v, 10, 64)
	short := err == nil && n >= 1 && n <= limitShortBlock && strings.Contains(c.cmd, "BLOCK #")
	for _, cc := range []*confConn{l.rc, l.sc} {
		cc.nc.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := cc.nc.Write([]byte(limitRaw([][]string{args}))); err != nil {
			t.Fatalf("%s: write: %v", what, err)
		}
	}
	read := func(cc *confConn, wait time.Duration) (confReply, bool) {
		cc.nc.SetReadDeadline(time.Now().Add(wait))
		r, err := cc.read()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return confReply{}, false
			}
			t.Fatalf("%s: read: %v", what, err)
		}
		return r, true
	}
	if short {
		// A timeout Redis serves late (at its next cron tick, up to 100 ms):
		// both must reply without being unblocked.
		want, rok := read(l.rc, limitMaxTime)
		got, sok := read(l.sc, limitMaxTime)
		if !rok || !sok {
			t.Fatalf("%s: a short BLOCK got no reply within %v (redis: %v, sediment: %v)", what, limitMaxTime, rok, sok)
		}
		return want, got, true
	}
	want, redisReplied := read(l.rc, limitBlockedAfter)
	if redisReplied {
		// Not blocked (an error, or data): Sediment must reply the same
		// without being unblocked.
		got, replied := read(l.sc, limitMaxTime)
		if !replied {
			t.Errorf("%s: Redis replied %v at once, Sediment did not reply within %v", what, want, limitMaxTime)
			l.unblock(what, l.su, l.sc)
			return want, got, false
		}
		return want, got, true
	}
	// limitBlockedAfter has passed: a Sediment reply sent at once is here.
	got, replied := read(l.sc, 10*time.Millisecond)
	if replied {
		// Unless Redis was only slow, Sediment replied where Redis blocks.
		if want, redisReplied = read(l.rc, 500*time.Millisecond); redisReplied {
			return want, got, true
		}
		t.Errorf("%s: Redis blocks, Sediment replied at once:\n%s", what, got)
		l.unblock(what, l.ru, l.rc)
		return want, got, false
	}
	want = l.unblock(what, l.ru, l.rc)
	got = l.unblock(what, l.su, l.sc)
	return want, got, true
}

// unblock adds an entry to s through u and returns the reply the blocked
// connection c then gets.
func (l *limitRun) unblock(what string, u, c *confConn) confReply {
	t := l.t
	t.Helper()
	if r, err := u.do("XADD", fmt.Sprintf("s:%d", l.n), "10-1", "new", "1"); err != nil || r.kind == confError {
		t.Fatalf("%s: unblocking XADD: %v %v", what, r, err)
	}
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	r, err := c.read()
	if err != nil {
		t.Fatalf("%s: reply after unblocking: %v", what, err)
	}
	return r
}
