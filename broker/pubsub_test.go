package broker

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Differential pub/sub scenarios: several connections per server, each
// step a command on one of them (its replies read) or a push to read; the
// same script runs against redis-server and Sediment, in RESP2 and in
// RESP3, and every reply and push must be equal.

// psStep is one step of a pub/sub scenario.
type psStep struct {
	conn   int
	args   []string // nil: read pushes only
	n      int      // replies (or pushes) to read; 0 means 1
	sorted bool     // the n replies come in an unspecified order
	// all: read every push Redis sent so far (counted up to the reply of
	// a PING sent after them), and as many from Sediment.
	all bool
}

// monitorLine is a MONITOR line: time, db, client address, command.
var monitorLine = regexp.MustCompile(`^\d+\.\d{6} \[(\d+) [^\]]+\](.*)$`)

// recvAll reads every push waiting on conn (pushes of unknown number:
// keyspace notifications).
func recvAll(conn int) psStep { return psStep{conn: conn, all: true} }

// on sends args on conn and reads its replies: one, or one per name for
// the (un)subscribe commands.
func on(conn int, args ...string) psStep {
	n := 1
	if strings.HasSuffix(strings.ToUpper(args[0]), "SUBSCRIBE") && len(args) > 2 {
		n = len(args) - 1
	}
	return psStep{conn: conn, args: args, n: n}
}

// onN sends args on conn and reads n replies, compared as a sorted list.
func onN(conn, n int, args ...string) psStep {
	return psStep{conn: conn, args: args, n: n, sorted: true}
}

// recv reads one push on conn.
func recv(conn int) psStep { return psStep{conn: conn} }

type psCase struct {
	name  string
	conns int
	proto int // 0: run in RESP2 and RESP3; 3: RESP3 only
	steps []psStep
}

var pubsubCases = []psCase{
	{name: "subscribe publish unsubscribe", conns: 2, steps: []psStep{
		on(0, "SUBSCRIBE", "a", "b", "a"),
		on(1, "PUBLISH", "a", "hello"),
		recv(0),
		on(1, "PUBLISH", "nochan", "x"),
		on(1, "PUBLISH", "b", ""),
		recv(0),
		on(0, "UNSUBSCRIBE", "a", "nochan"),
		on(1, "PUBLISH", "a", "x"),
		on(0, "PING"),
		on(0, "PING", "msg"),
		on(0, "PING", "a", "b"),
		on(0, "GET", "x"),
		on(0, "UNSUBSCRIBE"),
		on(0, "UNSUBSCRIBE"),
		on(0, "PUNSUBSCRIBE"),
		on(0, "SUNSUBSCRIBE"),
		on(0, "GET", "x"),
		on(0, "PING"),
	}},
	{name: "patterns", conns: 2, steps: []psStep{
		on(0, "PSUBSCRIBE", "news.*", "h?llo", "news.*"),
		on(0, "SUBSCRIBE", "news.tech"),
		on(1, "PUBLISH", "news.tech", "m1"),
		recv(0),
		recv(0),
		on(1, "PUBLISH", "hello", "m2"),
		recv(0),
		on(1, "PUBSUB", "NUMPAT"),
		onN(1, 1, "PUBSUB", "CHANNELS"),
		on(1, "PUBSUB", "CHANNELS", "news*"),
		on(1, "PUBSUB", "CHANNELS", "x*"),
		on(1, "PUBSUB", "NUMSUB", "news.tech", "news.*", "nochan"),
		on(1, "PUBSUB", "NUMSUB"),
		on(0, "PUNSUBSCRIBE", "news.*"),
		on(1, "PUBLISH", "news.tech", "m3"),
		recv(0),
		on(0, "PUNSUBSCRIBE", "nosuch"),
		on(0, "PUNSUBSCRIBE"),
		on(1, "PUBSUB", "NUMPAT"),
		on(1, "PUBLISH", "hallo", "m4"),
		on(0, "UNSUBSCRIBE"),
		on(0, "GET", "x"),
	}},
	{name: "shard channels", conns: 2, steps: []psStep{
		on(0, "SSUBSCRIBE", "s1", "s2"),
		on(0, "SUBSCRIBE", "s1"),
		on(1, "SPUBLISH", "s1", "m"),
		recv(0),
		on(1, "PUBLISH", "s1", "c"),
		recv(0),
		on(1, "PUBSUB", "SHARDNUMSUB", "s1", "x"),
		onN(1, 1, "PUBSUB", "SHARDCHANNELS", "s1"),
		on(0, "SUNSUBSCRIBE", "s1"),
		on(0, "GET", "x"),
		on(0, "UNSUBSCRIBE", "s1"),
		on(0, "GET", "x"),
		on(0, "SUNSUBSCRIBE", "s2", "s3"),
		on(0, "GET", "x"),
	}},
	{name: "binary channels and messages", conns: 2, steps: []psStep{
		on(0, "SUBSCRIBE", "a\x00b", "ch\r\nx", ""),
		on(1, "PUBLISH", "a\x00b", "\x00\xff\r\n"),
		recv(0),
		on(1, "PUBLISH", "", "empty channel"),
		recv(0),
		on(0, "PSUBSCRIBE", "a\x00*"),
		on(1, "PUBLISH", "a\x00b", "two"),
		recv(0),
		recv(0),
		onN(0, 3, "UNSUBSCRIBE"),
		on(0, "PUNSUBSCRIBE"),
	}},
	{name: "many subscribers", conns: 4, steps: []psStep{
		on(0, "SUBSCRIBE", "a"),
		on(1, "SUBSCRIBE", "a"),
		on(2, "PSUBSCRIBE", "*"),
		on(3, "PUBLISH", "a", "x"),
		recv(0),
		recv(1),
		recv(2),
		on(3, "PUBSUB", "NUMSUB", "a"),
		on(3, "PUBLISH", "b", "y"),
		recv(2),
		on(1, "QUIT"),
		on(3, "PUBLISH", "a", "z"),
		recv(0),
		recv(2),
	}},
	{name: "subscribed state", conns: 2, steps: []psStep{
		on(0, "SUBSCRIBE", "a"),
		on(0, "MULTI"),
		on(0, "SET", "k", "v"),
		on(0, "CLIENT", "INFO"),
		on(0, "PUBSUB", "NUMPAT"),
		on(0, "NOSUCHCMD"),
		on(0, "SUBSCRIBE"),
		on(0, "GET"),
		on(0, "RESET"),
		on(1, "PUBLISH", "a", "x"),
		on(0, "GET", "k"),
		on(0, "PING"),
	}},
	{name: "subscribe inside multi", conns: 2, steps: []psStep{
		on(0, "MULTI"),
		on(0, "SET", "k", "v"),
		on(0, "SUBSCRIBE", "q"),
		on(0, "EXEC"),
		on(1, "PUBLISH", "q", "after exec"),
		recv(0),
		on(0, "UNSUBSCRIBE", "q"),
		on(0, "GET", "k"),
	}},
	{name: "errors", conns: 1, steps: []psStep{
		on(0, "PUBLISH", "a"),
		on(0, "PUBLISH", "a", "b", "c"),
		on(0, "SUBSCRIBE"),
		on(0, "PSUBSCRIBE"),
		on(0, "PUBSUB"),
		on(0, "PUBSUB", "NUMPAT", "x"),
		on(0, "PUBSUB", "CHANNELS", "a", "b"),
		on(0, "PUBSUB", "SHARDCHANNELS", "a", "b"),
		on(0, "PUBSUB", "FOO"),
		on(0, "PUBSUB", "HELP"),
		on(0, "PUBSUB", "HELP", "x"),
		on(0, "SPUBLISH", "a"),
	}},
}

// psRead reads one reply (or push) with a deadline.
func psRead(c *confConn) (confReply, error) {
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	return c.read()
}

// runPubSubCase runs tc on both servers in protocol proto and compares.
func runPubSubCase(t *testing.T, tc psCase, redisAddr, sedimentAddr string, proto int) {
	type side struct {
		name  string
		conns []*confConn
	}
	sides := []*side{{name: "redis"}, {name: "sediment"}}
	for i, addr := range []string{redisAddr, sedimentAddr} {
		for range tc.conns {
			c := confDial(t, addr)
			if proto == 3 {
				if r, err := c.do("HELLO", "3"); err != nil || r.kind != confMap {
					t.Fatalf("%s: HELLO 3: %v %v", sides[i].name, r, err)
				}
			}
			sides[i].conns = append(sides[i].conns, c)
		}
		if r, err := sides[i].conns[0].do("FLUSHALL"); err != nil || r.kind != confSimple {
			t.Fatalf("%s: FLUSHALL: %v %v", sides[i].name, r, err)
		}
	}
	nz := []*confNormalizer{{ids: map[string]string{}}, {ids: map[string]string{}}}
	// "$ID<j>" in a step's arguments is conn j's CLIENT ID on that server;
	// in a CLIENT command's reply, an integer equal to one is compared as
	// "<ID<j>>".
	ids := [2][]int64{}
	for j, sd := range sides {
		for _, c := range sd.conns {
			r, err := c.do("CLIENT", "ID")
			if err != nil || r.kind != confInt {
				t.Fatalf("%s: CLIENT ID: %v %v", sd.name, r, err)
			}
			ids[j] = append(ids[j], r.n)
		}
	}
	var maskIDs func(j int, r confReply) confReply
	maskIDs = func(j int, r confReply) confReply {
		if r.kind == confInt {
			for ci, id := range ids[j] {
				if r.n == id {
					return confReply{kind: confSimple, str: fmt.Sprintf("<ID%d>", ci)}
				}
			}
		}
		if r.kind.agg() {
			arr := slices.Clone(r.arr)
			for i := range arr {
				arr[i] = maskIDs(j, arr[i])
			}
			r.arr = arr
		}
		return r
	}
	for i, s := range tc.steps {
		n := max(s.n, 1)
		var got [2][]confReply
		for j, sd := range sides {
			c := sd.conns[s.conn]
			if s.all && j == 0 {
				// Redis sends them before the reply to the command that
				// made them: a PING's reply comes after all of them.
				fmt.Fprint(c.nc, "*1\r\n$4\r\nPING\r\n")
				n = 0
				for {
					r, err := psRead(c)
					if err != nil {
						t.Fatalf("%q step %d: redis: read: %v", tc.name, i+1, err)
					}
					if r.kind == confSimple && r.str == "PONG" || r.kind.agg() && len(r.arr) == 2 && r.arr[0].str == "pong" {
						break
					}
					got[0] = append(got[0], nz[0].walk(r))
					n++
				}
				continue
			}
			if s.args != nil {
				var b strings.Builder
				fmt.Fprintf(&b, "*%d\r\n", len(s.args))
				for _, a := range s.args {
					if strings.HasPrefix(a, "$ID") {
						ci, _ := strconv.Atoi(a[3:])
						a = strconv.FormatInt(ids[j][ci], 10)
					}
					fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
				}
				c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
				if _, err := c.nc.Write([]byte(b.String())); err != nil {
					t.Fatalf("step %d: %s: write: %v", i+1, sd.name, err)
				}
			}
			for range n {
				r, err := psRead(c)
				if err != nil {
					t.Fatalf("%q step %d %s: %s: read: %v", tc.name, i+1, confFmtArgs(s.args), sd.name, err)
				}
				if len(s.args) > 0 && strings.EqualFold(s.args[0], "CLIENT") {
					r = confReply{kind: r.kind} // its contents differ by design
				}
				r = nz[j].walk(r)
				if m := monitorLine.FindStringSubmatch(r.str); r.kind == confSimple && m != nil {
					r.str = "<time> [" + m[1] + " <addr>]" + m[2] // MONITOR's clock and client address
				}
				if len(s.args) > 1 && strings.EqualFold(s.args[0], "CLIENT") {
					r = maskIDs(j, r) // GETREDIR, TRACKINGINFO
				}
				got[j] = append(got[j], r)
			}
			if s.sorted {
				// In an unspecified order the running counts differ too:
				// compare the (un)subscribed names.
				for k, r := range got[j] {
					if r.kind.agg() && len(r.arr) == 3 && r.arr[2].kind == confInt {
						arr := slices.Clone(r.arr)
						arr[2] = confReply{kind: confSimple, str: "<count>"}
						got[j][k].arr = arr
					}
				}
				sort.Slice(got[j], func(a, b int) bool { return got[j][a].String() < got[j][b].String() })
			}
		}
		for k := range got[0] {
			if !got[0][k].equal(got[1][k]) {
				what := "push"
				if s.args != nil {
					what = confFmtArgs(s.args)
				}
				t.Fatalf("case %q (RESP%d) step %d on conn %d: %s\n--- redis:\n%s\n--- sediment:\n%s",
					tc.name, proto, i+1, s.conn, what, got[0][k], got[1][k])
			}
		}
	}
	// Nothing else may be pending: a stray push would come before PING's reply.
	for _, sd := range sides {
		for ci, c := range sd.conns {
			if r, err := c.do("PING", "end"); err != nil {
				continue // closed by the case (QUIT)
			} else if s := r.String(); !strings.Contains(s, "end") {
				t.Fatalf("case %q (RESP%d): %s conn %d had an unread reply or push: %s", tc.name, proto, sd.name, ci, s)
			}
		}
	}
}

// TestPubSubConformance runs every pubsubCases scenario against
// redis-server and Sediment, in RESP2 and RESP3.
func TestPubSubConformance(t *testing.T) {
	redisAddr := confStartRedis(t)
	ts := newTestServer(t)
	for _, proto := range []int{2, 3} {
		for _, tc := range pubsubCases {
			if tc.proto != 0 && tc.proto != proto {
				continue
			}
			t.Run(fmt.Sprintf("resp%d/%s", proto, tc.name), func(t *testing.T) {
				runPubSubCase(t, tc, redisAddr, ts.addr, proto)
			})
		}
	}
}
