package broker

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sediment-dev/sediment/materialize"
)

// TestPersistRestart writes streams, groups, a PEL and strings, restarts
// the server on the same directory and checks everything is back.
func TestPersistRestart(t *testing.T) {
	for _, tc := range []struct {
		name string
		mods []func(*Options)
	}{
		{"everysec", nil},
		{"always", []func(*Options){func(o *Options) { o.AppendFsync = materialize.SyncAlways }}},
		{"no", []func(*Options){func(o *Options) { o.AppendFsync = materialize.SyncNo }}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ts := startTestServer(t, dir, tc.mods...)
			c := ts.client(t)
			for i := 1; i <= 6; i++ {
				mustDo(t, c, "XADD", "s", fmt.Sprintf("%d-0", i), "n", fmt.Sprint(i), "bin\x00", "\r\n")
			}
			mustInt(t, c, 1, "XDEL", "s", "6-0")
			mustStr(t, c, "OK", "XGROUP", "CREATE", "s", "g", "0")
			mustStr(t, c, "OK", "XGROUP", "CREATE", "s", "other", "$")
			mustDo(t, c, "XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "s", ">")
			mustDo(t, c, "XREADGROUP", "GROUP", "g", "bob", "COUNT", "1", "STREAMS", "s", ">")
			mustDo(t, c, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0") // 1-0 and 2-0 now delivered twice
			mustInt(t, c, 1, "XACK", "s", "g", "2-0")
			mustStr(t, c, "OK", "SET", "str", "value\x00\r\n")
			mustStr(t, c, "OK", "SET", "ttl", "v", "EX", "3600")
			// Past codec.SplitValueMin the value travels beside its metadata.
			big := strings.Repeat("b\x00\r\n", 1000)
			mustStr(t, c, "OK", "SET", "big", big, "EX", "3600")
			mustInt(t, c, int64(len(big)+1), "APPEND", "big", "!")
			if got := mustDo(t, c, "GET", "big"); got != big+"!" {
				t.Fatalf("GET big = %d bytes", len(fmt.Sprint(got)))
			}
			c1 := clientDB(t, ts, 3)
			mustStr(t, c1, "OK", "SET", "indb3", "three")
			if err := ts.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}

			ts2 := startTestServer(t, dir, tc.mods...)
			c = ts2.client(t)
			if info := mustDo(t, c, "INFO", "persistence").(string); !strings.Contains(info, "appendfsync:"+ts2.store.Policy().String()) {
				t.Errorf("INFO persistence = %q", info)
			}
			got := rawEntries(t, mustDo(t, c, "XRANGE", "s", "-", "+"))
			if len(got) != 5 {
				t.Fatalf("XRANGE after restart = %q", got)
			}
			for i, e := range got {
				if e.ID != fmt.Sprintf("%d-0", i+1) || !eqStrs(e.Fields, []string{"n", fmt.Sprint(i + 1), "bin\x00", "\r\n"}) {
					t.Fatalf("entry %d after restart = %q", i, e)
				}
			}
			mustInt(t, c, 5, "XLEN", "s")
			if got := mustDo(t, c, "GET", "big"); got != strings.Repeat("b\x00\r\n", 1000)+"!" {
				t.Fatalf("GET big after restart = %d bytes", len(fmt.Sprint(got)))
			}
			if ttl := mustDo(t, c, "TTL", "big").(int64); ttl < 3590 || ttl > 3600 {
				t.Fatalf("TTL big after restart = %d", ttl)
			}
			// The top item survives: smaller IDs are rejected, '*' continues.
			mustErr(t, c, "ERR The ID specified in XADD is equal or smaller than the target stream top item", "XADD", "s", "6-0", "f", "v")

			sum := mustDo(t, c, "XPENDING", "s", "g").([]any)
			if len(sum) != 4 || sum[0] != int64(2) || sum[1] != "1-0" || sum[2] != "3-0" || fmt.Sprint(sum[3]) != "[[alice 1] [bob 1]]" {
				t.Fatalf("XPENDING summary after restart = %#v", sum)
			}
			want := []pendingRow{{"1-0", "alice", 2}, {"3-0", "bob", 1}}
			if rows := xpendingExt(t, c, "s", "g", "-", "+", "10"); fmt.Sprint(rows) != fmt.Sprint(want) {
				t.Fatalf("XPENDING after restart = %v, want %v", rows, want)
			}
			if rows := xpendingExt(t, c, "s", "g", "-", "+", "10", "bob"); fmt.Sprint(rows) != fmt.Sprint(want[1:]) {
				t.Fatalf("XPENDING bob after restart = %v", rows)
			}
			// The group continues after its last-delivered-id (3-0).
			rs := rawStreams(t, mustDo(t, c, "XREADGROUP", "GROUP", "g", "carol", "STREAMS", "s", ">"))
			if ids := rawIDs(rs["s"]); !eqStrs(ids, []string{"4-0", "5-0"}) {
				t.Fatalf("XREADGROUP > after restart = %q", ids)
			}
			// "other" was created at $ (6-0, since deleted): nothing new.
			mustNil(t, c, "XREADGROUP", "GROUP", "other", "x", "STREAMS", "s", ">")
			mustErr(t, c, "BUSYGROUP Consumer Group name already exists", "XGROUP", "CREATE", "s", "g", "0")
			// History is still alice's, with incremented delivery counts.
			rs = rawStreams(t, mustDo(t, c, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0"))
			if ids := rawIDs(rs["s"]); !eqStrs(ids, []string{"1-0"}) {
				t.Fatalf("alice history after restart = %q", ids)
			}
			if rows := xpendingExt(t, c, "s", "g", "1-0", "1-0", "1"); len(rows) != 1 || rows[0].Count != 3 {
				t.Fatalf("XPENDING 1-0 = %v", rows)
			}

			mustStr(t, c, "value\x00\r\n", "GET", "str")
			mustStr(t, c, "v", "GET", "ttl")
			mustStr(t, clientDB(t, ts2, 3), "three", "GET", "indb3")
			mustInt(t, c, 4, "DBSIZE") // s, str, ttl, big
			mustStr(t, c, "stream", "TYPE", "s")

			// Writes after the restart persist across a second restart.
			mustStr(t, c, "7-0", "XADD", "s", "7-0", "f", "v")
			mustInt(t, c, 2, "XACK", "s", "g", "1-0", "4-0")
			if err := ts2.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			ts3 := startTestServer(t, dir, tc.mods...)
			c = ts3.client(t)
			mustInt(t, c, 6, "XLEN", "s")
			want = []pendingRow{{"3-0", "bob", 1}, {"5-0", "carol", 1}}
			if rows := xpendingExt(t, c, "s", "g", "-", "+", "10"); fmt.Sprint(rows) != fmt.Sprint(want) {
				t.Fatalf("XPENDING after second restart = %v, want %v", rows, want)
			}
			rs = rawStreams(t, mustDo(t, c, "XREADGROUP", "GROUP", "g", "carol", "STREAMS", "s", ">"))
			if ids := rawIDs(rs["s"]); !eqStrs(ids, []string{"7-0"}) {
				t.Fatalf("XREADGROUP > after second restart = %q", ids)
			}
		})
	}
}

// TestPersistDeletesAndFlush checks that deletions survive a restart.
func TestPersistDeletesAndFlush(t *testing.T) {
	dir := t.TempDir()
	ts := startTestServer(t, dir, func(o *Options) { o.AppendFsync = materialize.SyncAlways })
	c := ts.client(t)
	mustDo(t, c, "XADD", "gone", "1-0", "f", "v")
	mustStr(t, c, "OK", "XGROUP", "CREATE", "gone", "g", "0")
	mustDo(t, c, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "gone", ">")
	mustInt(t, c, 1, "DEL", "gone")
	mustStr(t, c, "OK", "SET", "a", "1")
	c1 := clientDB(t, ts, 1)
	mustStr(t, c1, "OK", "SET", "b", "2")
	mustStr(t, c1, "OK", "FLUSHDB")
	mustDo(t, c, "XADD", "trim", "1-0", "f", "v")
	mustDo(t, c, "XADD", "trim", "2-0", "f", "v")
	mustInt(t, c, 1, "XTRIM", "trim", "MAXLEN", "1")
	if err := ts.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	ts2 := startTestServer(t, dir, func(o *Options) { o.AppendFsync = materialize.SyncAlways })
	c = ts2.client(t)
	mustInt(t, c, 0, "EXISTS", "gone")
	// The recreated stream has no trace of the old group.
	mustStr(t, c, "1-0", "XADD", "gone", "1-0", "f", "v")
	mustErr(t, c, "NOGROUP No such key 'gone' or consumer group 'g'", "XPENDING", "gone", "g")
	mustStr(t, c, "1", "GET", "a")
	mustInt(t, clientDB(t, ts2, 1), 0, "DBSIZE")
	mustIDs(t, c, []string{"2-0"}, "XRANGE", "trim", "-", "+")
	mustInt(t, c, 1, "XLEN", "trim")
}

func rawIDs(es []rawEntry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

func TestPersistExpiryAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	clk := newFakeClock()
	ts := startTestServer(t, dir, withClock(clk))
	c := ts.client(t)
	mustStr(t, c, "OK", "SET", "short", "v", "EX", "10")
	mustStr(t, c, "OK", "SET", "long", "v", "EX", "1000")
	mustStr(t, c, "OK", "SET", "forever", "v")
	if err := ts.Close(); err != nil {
		t.Fatal(err)
	}
	clk.Advance(11 * time.Second)
	ts2 := startTestServer(t, dir, withClock(clk))
	c = ts2.client(t)
	mustNil(t, c, "GET", "short")
	mustStr(t, c, "v", "GET", "long")
	mustStr(t, c, "v", "GET", "forever")
	waitDBSize(t, c, 2)
	clk.Advance(1000 * time.Second)
	mustNil(t, c, "GET", "long")
	waitDBSize(t, c, 1)
}
