package broker

// Differential CLIENT TRACKING scenarios, run by TestPubSubConformance
// with the pub/sub ones: every invalidation push (or __redis__:invalidate
// message) must be Redis's, and none may be extra (the scenario's closing
// PING on each connection would meet it first).

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

func init() {
	pubsubCases = append(pubsubCases, trackingCases...)
}

var trackingCases = []psCase{
	{name: "tracking default mode", conns: 2, proto: 3, steps: []psStep{
		on(0, "CLIENT", "TRACKING", "ON"),
		on(0, "GET", "k"),
		on(1, "SET", "k", "v"),
		recv(0),
		on(0, "GET", "k"),
		on(0, "SET", "k", "v2"), // its own write: the reply, then the push
		recv(0),
		on(1, "SET", "k", "v3"), // forgotten since: nothing
		on(0, "MGET", "a", "b", "nosuch"),
		on(1, "MSET", "a", "1", "b", "2"),
		recv(0),
		recv(0),
		on(1, "SET", "a", "again"),
		on(0, "HGETALL", "h"),
		on(1, "HSET", "h", "f", "v"),
		recv(0),
		on(0, "SMEMBERS", "st"),
		on(1, "SADD", "st", "m"),
		recv(0),
		on(0, "ZRANGE", "z", "0", "-1"),
		on(1, "ZADD", "z", "1", "m"),
		recv(0),
		on(0, "LRANGE", "l", "0", "-1"),
		on(1, "RPUSH", "l", "x"),
		recv(0),
		on(0, "XRANGE", "s", "-", "+"),
		on(1, "XADD", "s", "1-1", "f", "v"),
		recv(0),
		on(0, "XRANGE", "s", "-", "+"),
		on(1, "XGROUP", "CREATE", "s", "g", "0"),
		on(1, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"),
		on(1, "XACK", "s", "g", "1-1"),
		on(1, "XDEL", "s", "1-1"),
		recv(0),
		on(0, "EXISTS", "x"),
		on(1, "SET", "x", "1", "EX", "100"),
		recv(0),
		on(0, "TTL", "x"),
		on(1, "EXPIRE", "x", "200"),
		recv(0),
		on(0, "XREAD", "STREAMS", "s2", "0"),
		on(0, "ZUNION", "2", "z1", "z2"),
		on(1, "XADD", "s2", "1-1", "f", "v"),
		recv(0),
		on(1, "ZADD", "z2", "1", "m"),
		recv(0),
		on(1, "ZADD", "z1", "1", "m"),
		recv(0),
		on(0, "GET", "y"),
		on(1, "DEL", "nosuch"),
		on(1, "FLUSHALL"),
		recv(0),
		on(1, "SET", "y", "1"), // the flush forgot every key
		on(0, "CLIENT", "TRACKINGINFO"),
		on(0, "CLIENT", "GETREDIR"),
		on(0, "CLIENT", "TRACKING", "OFF"),
		on(0, "GET", "z"),
		on(1, "SET", "z", "1"),
		on(0, "CLIENT", "TRACKINGINFO"),
		on(0, "CLIENT", "GETREDIR"),
	}},
	{name: "tracking noloop optin optout", conns: 2, proto: 3, steps: []psStep{
		on(0, "CLIENT", "TRACKING", "ON", "NOLOOP"),
		on(0, "GET", "k"),
		on(0, "SET", "k", "1"),
		on(1, "SET", "k", "2"),
		on(0, "CLIENT", "TRACKINGINFO"),
		on(0, "CLIENT", "TRACKING", "OFF"),
		on(0, "CLIENT", "TRACKING", "ON", "OPTIN"),
		on(0, "GET", "a"),
		on(1, "SET", "a", "1"),
		on(0, "CLIENT", "CACHING", "YES"),
		on(0, "CLIENT", "TRACKINGINFO"),
		on(0, "GET", "a"),
		on(1, "SET", "a", "2"),
		recv(0),
		on(0, "CLIENT", "CACHING", "YES"),
		on(0, "CLIENT", "GETREDIR"), // a CLIENT command keeps the flag
		on(0, "GET", "b"),
		on(1, "SET", "b", "1"),
		recv(0),
		on(0, "CLIENT", "CACHING", "YES"),
		on(0, "MULTI"),
		on(0, "GET", "c"),
		on(0, "GET", "d"),
		on(0, "EXEC"),
		on(1, "SET", "c", "1"),
		recv(0),
		on(1, "SET", "d", "1"),
		recv(0),
		on(0, "GET", "e"),
		on(1, "SET", "e", "1"),
		on(0, "CLIENT", "CACHING", "NO"),
		on(0, "CLIENT", "TRACKING", "ON", "OPTOUT"),
		on(0, "CLIENT", "TRACKING", "OFF"),
		on(0, "CLIENT", "TRACKING", "ON", "OPTOUT"),
		on(0, "GET", "f"),
		on(1, "SET", "f", "1"),
		recv(0),
		on(0, "CLIENT", "CACHING", "NO"),
		on(0, "CLIENT", "TRACKINGINFO"),
		on(0, "GET", "g"),
		on(1, "SET", "g", "1"),
		on(0, "CLIENT", "CACHING", "YES"),
		on(0, "CLIENT", "CACHING", "MAYBE"),
	}},
	{name: "tracking bcast", conns: 3, proto: 3, steps: []psStep{
		on(0, "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "user:", "PREFIX", "obj:"),
		on(0, "CLIENT", "TRACKINGINFO"),
		on(1, "SET", "user:1", "x"),
		recv(0),
		on(1, "SET", "other", "1"),
		on(1, "MSET", "user:2", "a", "obj:1", "b"),
		recv(0),
		recv(0),
		on(1, "DEL", "user:1", "user:2"),
		recv(0),
		on(0, "SET", "user:9", "own"),
		recv(0),
		on(2, "CLIENT", "TRACKING", "ON", "BCAST"),
		on(2, "CLIENT", "TRACKINGINFO"),
		on(1, "SET", "any", "1"),
		recv(2),
		on(0, "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "use"),
		on(0, "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "zz"),
		on(0, "CLIENT", "TRACKINGINFO"),
		on(0, "CLIENT", "TRACKING", "ON", "OPTIN"),
		on(2, "CLIENT", "TRACKING", "ON", "BCAST", "NOLOOP"),
		on(2, "SET", "mine", "1"),
		on(1, "SET", "zz1", "1"),
		recv(0),
		recv(2),
		on(1, "FLUSHALL"),
		recv(0),
		recv(2),
	}},
	{name: "tracking redirect", conns: 3, steps: []psStep{
		on(1, "SUBSCRIBE", "__redis__:invalidate"),
		on(0, "CLIENT", "TRACKING", "ON", "REDIRECT", "$ID1"),
		on(0, "CLIENT", "GETREDIR"),
		on(0, "CLIENT", "TRACKINGINFO"),
		on(0, "GET", "k"),
		on(2, "SET", "k", "v"),
		recv(1),
		on(0, "GET", "k"),
		on(0, "SET", "k", "mine"),
		recv(1),
		on(2, "FLUSHALL"),
		recv(1),
		on(0, "CLIENT", "TRACKING", "ON", "REDIRECT", "$ID1", "REDIRECT", "$ID2"),
		on(0, "CLIENT", "TRACKING", "OFF"),
		on(0, "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "p", "REDIRECT", "$ID1"),
		on(2, "SET", "p1", "x"),
		recv(1),
		on(1, "UNSUBSCRIBE"),
	}},
	{name: "tracking redirect to a RESP3 connection", conns: 3, steps: []psStep{
		on(1, "HELLO", "3"),
		on(0, "CLIENT", "TRACKING", "ON", "REDIRECT", "$ID1"),
		on(0, "GET", "k"),
		on(2, "SET", "k", "v"),
		recv(1),
	}},
	{name: "tracking errors", conns: 1, steps: []psStep{
		on(0, "CLIENT", "TRACKINGINFO"),
		on(0, "CLIENT", "GETREDIR"),
		on(0, "CLIENT", "TRACKING"),
		on(0, "CLIENT", "TRACKING", "MAYBE"),
		on(0, "CLIENT", "TRACKING", "ON", "NOSUCH"),
		on(0, "CLIENT", "TRACKING", "ON", "OPTIN", "OPTOUT"),
		on(0, "CLIENT", "TRACKING", "ON", "PREFIX", "a"),
		on(0, "CLIENT", "TRACKING", "ON", "BCAST", "OPTIN"),
		on(0, "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "ab", "PREFIX", "a"),
		on(0, "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a", "PREFIX", "a"),
		on(0, "CLIENT", "TRACKING", "ON", "REDIRECT", "x"),
		on(0, "CLIENT", "TRACKING", "ON", "REDIRECT", "999999"),
		on(0, "CLIENT", "TRACKING", "ON", "REDIRECT"),
		on(0, "CLIENT", "TRACKING", "ON", "PREFIX"),
		on(0, "CLIENT", "CACHING", "YES"),
		on(0, "CLIENT", "CACHING"),
		on(0, "CLIENT", "CACHING", "YES", "NO"),
		on(0, "CLIENT", "GETREDIR", "x"),
		on(0, "CLIENT", "TRACKINGINFO", "x"),
		on(0, "CLIENT", "TRACKING", "OFF"),
		on(0, "CLIENT", "TRACKING", "ON"),
		on(0, "CLIENT", "TRACKING", "ON", "OPTIN"),
		on(0, "CLIENT", "TRACKING", "ON", "OPTOUT"),
		on(0, "CLIENT", "TRACKINGINFO"),
		on(0, "CLIENT", "TRACKING", "ON", "BCAST"),
		on(0, "RESET"),
		on(0, "CLIENT", "TRACKINGINFO"),
		on(0, "CONFIG", "GET", "tracking-table-max-keys"),
		on(0, "CONFIG", "SET", "tracking-table-max-keys", "-1"),
		on(0, "CONFIG", "SET", "tracking-table-max-keys", "x"),
		on(0, "CONFIG", "SET", "tracking-table-max-keys", "5"),
		on(0, "CONFIG", "GET", "tracking-table-max-keys"),
		on(0, "CONFIG", "SET", "tracking-table-max-keys", "1000000"),
	}},
}

// TestTrackingKeys: every read-only command's keys are known to tracking,
// by key positions or by name (commandKeys), so a new read-only command
// with movable keys cannot be left untracked silently.
func TestTrackingKeys(t *testing.T) {
	noKeys := map[string]bool{"dbsize": true, "keys": true, "randomkey": true, "scan": true}
	for name, c := range commandTable {
		if c.flags&flagReadonly == 0 || c.first > 0 || noKeys[name] {
			continue
		}
		if !slices.Contains(movableKeyCommands, name) {
			t.Errorf("read-only command %s has no key positions and commandKeys does not know it", name)
		}
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"GET", "k"}, []string{"k"}},
		{[]string{"MGET", "a", "b", "c"}, []string{"a", "b", "c"}},
		{[]string{"XREAD", "COUNT", "1", "STREAMS", "s1", "s2", "0", "$"}, []string{"s1", "s2"}},
		{[]string{"ZUNION", "2", "z1", "z2", "WITHSCORES"}, []string{"z1", "z2"}},
		{[]string{"SINTERCARD", "1", "s", "LIMIT", "5"}, []string{"s"}},
		{[]string{"ZINTER", "9", "z"}, nil},
		{[]string{"LCS", "a", "b"}, []string{"a", "b"}},
	} {
		args := make([][]byte, len(tc.args))
		for i, a := range tc.args {
			args[i] = []byte(a)
		}
		var got []string
		for _, k := range commandKeys(lookup(args[0]), args) {
			got = append(got, string(k))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("commandKeys(%v) = %q, want %q", tc.args, got, tc.want)
		}
	}
}

// TestTrackingNoStaleCacheDefault is TestTrackingNoStaleCache for plain
// reads in default mode (no MULTI around them, unlike rueidis's OPTIN
// reads): a RESP3 connection keeps a cache of the values its GETs return,
// drops a key on its invalidation (and does not cache a reply whose key was
// invalidated while the GET was in flight, as client caches do), while
// another client keeps writing. Once the writes stop and the pushes are
// read, every cached value must be the server's.
func TestTrackingNoStaleCacheDefault(t *testing.T) {
	ts := newTestServer(t)
	c := confDial(t, ts.addr)
	for _, args := range [][]string{{"HELLO", "3"}, {"CLIENT", "TRACKING", "ON"}} {
		if r, err := c.do(args...); err != nil || r.kind == confError {
			t.Fatalf("%v: %v %v", args, r, err)
		}
	}
	writer := ts.client(t)
	const keys, rounds = 8, 3000
	key := func(i int) string { return fmt.Sprint("k", i%keys) }
	cache := map[string]string{}
	invalidated := map[string]bool{} // since the GET in flight was sent
	// read returns the next reply, applying the pushes before it.
	read := func() confReply {
		for {
			c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
			r, err := c.read()
			if err != nil {
				t.Fatal(err)
			}
			if r.kind != confPush {
				return r
			}
			if len(r.arr) != 2 || r.arr[0].str != "invalidate" {
				t.Fatalf("unexpected push %v", r)
			}
			if !r.arr[1].kind.agg() {
				clear(cache) // a flush
				continue
			}
			for _, k := range r.arr[1].arr {
				delete(cache, k.str)
				invalidated[k.str] = true
			}
		}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			k := key(i)
			clear(invalidated)
			fmt.Fprintf(c.nc, "*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n", len(k), k)
			if r := read(); r.kind == confBulk && !invalidated[k] {
				cache[k] = r.str
			}
		}
	}()
	for i := range rounds {
		mustDo(t, writer, "SET", key(i), fmt.Sprint(i))
	}
	close(stop)
	<-done
	time.Sleep(100 * time.Millisecond) // the last invalidations on their way
	fmt.Fprint(c.nc, "*1\r\n$4\r\nPING\r\n")
	if r := read(); r.str != "PONG" {
		t.Fatalf("PING = %v", r)
	}
	for k, v := range cache {
		if want := mustDo(t, writer, "GET", k); v != want {
			t.Errorf("%s cached as %q, the server holds %q: an invalidation was lost", k, v, want)
		}
	}
}

// TestTrackingTableBound: past the table's bound, keys are forgotten with
// an invalidation to the clients that read them (Redis's
// tracking-table-max-keys), so no cached value outlives its tracking.
func TestTrackingTableBound(t *testing.T) {
	ts := newTestServer(t)
	c := confDial(t, ts.addr)
	for _, args := range [][]string{{"CONFIG", "SET", "tracking-table-max-keys", "10"}, {"HELLO", "3"}, {"CLIENT", "TRACKING", "ON"}} {
		if r, err := c.do(args...); err != nil || r.kind == confError {
			t.Fatalf("%v: %v %v", args, r, err)
		}
	}
	evicted := map[string]bool{}
	for i := range 25 {
		k := fmt.Sprint("k", i)
		fmt.Fprintf(c.nc, "*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n", len(k), k)
	}
	// The pushes come before the PING's reply, among the GETs' nulls.
	fmt.Fprint(c.nc, "*1\r\n$4\r\nPING\r\n")
	nulls := 0
	for {
		c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		r, err := c.read()
		if err != nil {
			t.Fatal(err)
		}
		if r.kind == confSimple && r.str == "PONG" {
			break
		}
		if r.kind == confNull {
			nulls++
			continue
		}
		if r.kind != confPush || r.arr[0].str != "invalidate" {
			t.Fatalf("unexpected reply %v", r)
		}
		for _, k := range r.arr[1].arr {
			evicted[k.str] = true
		}
	}
	ts.track.mu.Lock()
	n := len(ts.track.table)
	ts.track.mu.Unlock()
	if nulls != 25 || n != 10 || len(evicted) != 15 {
		t.Fatalf("%d GET replies; table holds %d keys and %d were invalidated, want 25, 10 and 15", nulls, n, len(evicted))
	}
}
