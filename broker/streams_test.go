package broker

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// rawEntry is one stream entry of a raw reply; Fields is nil when the
// reply carried a null field list (an entry deleted while pending).
type rawEntry struct {
	ID     string
	Fields []string
}

// rawEntries decodes a raw [[id, [field, value, ...]], ...] reply.
func rawEntries(t testing.TB, v any) []rawEntry {
	t.Helper()
	arr, ok := v.([]any)
	if !ok {
		t.Fatalf("entries reply %#v is not an array", v)
	}
	out := make([]rawEntry, len(arr))
	for i, e := range arr {
		pair, ok := e.([]any)
		if !ok || len(pair) != 2 {
			t.Fatalf("entry %d: %#v", i, e)
		}
		id, ok := pair[0].(string)
		if !ok {
			t.Fatalf("entry %d ID %#v", i, pair[0])
		}
		out[i].ID = id
		if pair[1] != nil {
			out[i].Fields = strs(t, pair[1])
		}
	}
	return out
}

func rawEntryIDs(t testing.TB, v any) []string {
	t.Helper()
	var ids []string
	for _, e := range rawEntries(t, v) {
		ids = append(ids, e.ID)
	}
	return ids
}

// mustIDs runs a command whose reply is a list of entries and checks their IDs.
func mustIDs(t testing.TB, c *redis.Client, want []string, args ...any) {
	t.Helper()
	got := rawEntryIDs(t, mustDo(t, c, args...))
	if !eqStrs(got, want) {
		t.Fatalf("%q = %q, want %q", args, got, want)
	}
}

// rawStreams decodes a raw XREAD/XREADGROUP reply into key → entries.
func rawStreams(t testing.TB, v any) map[string][]rawEntry {
	t.Helper()
	arr, ok := v.([]any)
	if !ok {
		t.Fatalf("streams reply %#v is not an array", v)
	}
	out := map[string][]rawEntry{}
	for _, s := range arr {
		pair, ok := s.([]any)
		if !ok || len(pair) != 2 {
			t.Fatalf("stream reply %#v", s)
		}
		key, ok := pair[0].(string)
		if !ok {
			t.Fatalf("stream key %#v", pair[0])
		}
		out[key] = rawEntries(t, pair[1])
	}
	return out
}

type pendingRow struct {
	ID       string
	Consumer string
	Count    int64
}

// xpendingExt runs an extended XPENDING and returns its rows (idle omitted).
func xpendingExt(t testing.TB, c *redis.Client, args ...any) []pendingRow {
	t.Helper()
	v := mustDo(t, c, append([]any{"XPENDING"}, args...)...)
	arr, ok := v.([]any)
	if !ok {
		t.Fatalf("XPENDING %q = %#v", args, v)
	}
	out := make([]pendingRow, len(arr))
	for i, r := range arr {
		row, ok := r.([]any)
		if !ok || len(row) != 4 {
			t.Fatalf("XPENDING row %#v", r)
		}
		out[i] = pendingRow{ID: row[0].(string), Consumer: row[1].(string), Count: row[3].(int64)}
		if idle, ok := row[2].(int64); !ok || idle < 0 {
			t.Fatalf("XPENDING idle %#v", row[2])
		}
	}
	return out
}

func parseStreamID(t testing.TB, s string) (uint64, uint64) {
	t.Helper()
	ms, seq, ok := strings.Cut(s, "-")
	if !ok {
		t.Fatalf("ID %q has no '-'", s)
	}
	a, err1 := strconv.ParseUint(ms, 10, 64)
	b, err2 := strconv.ParseUint(seq, 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("bad ID %q", s)
	}
	return a, b
}

func TestStreamXAddAutoIDsIncrease(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	ctx := context.Background()
	const n = 500
	cmds, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := 0; i < n; i++ {
			p.XAdd(ctx, &redis.XAddArgs{Stream: "s", Values: []string{"i", strconv.Itoa(i)}})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var prevMs, prevSeq uint64
	ids := make([]string, n)
	for i, cmd := range cmds {
		id := cmd.(*redis.StringCmd).Val()
		ids[i] = id
		ms, seq := parseStreamID(t, id)
		if i > 0 && (ms < prevMs || (ms == prevMs && seq <= prevSeq)) {
			t.Fatalf("ID %d %q not greater than %d-%d", i, id, prevMs, prevSeq)
		}
		prevMs, prevSeq = ms, seq
	}
	if firstMs, _ := parseStreamID(t, ids[0]); firstMs < uint64(time.Now().Add(-time.Hour).UnixMilli()) {
		t.Errorf("auto ID %q is not based on the clock", ids[0])
	}
	mustInt(t, c, n, "XLEN", "s")
	got := rawEntries(t, mustDo(t, c, "XRANGE", "s", "-", "+"))
	if len(got) != n {
		t.Fatalf("XRANGE returned %d entries", len(got))
	}
	for i, e := range got {
		if e.ID != ids[i] || !eqStrs(e.Fields, []string{"i", strconv.Itoa(i)}) {
			t.Fatalf("entry %d = %+v, want %s [i %d]", i, e, ids[i], i)
		}
	}
	// After an explicit ID far in the future, '*' continues its sequence.
	mustStr(t, c, "99999999999999-5", "XADD", "s", "99999999999999-5", "f", "v")
	mustStr(t, c, "99999999999999-6", "XADD", "s", "*", "f", "v")
}

func TestStreamXAddAutoIDsFromClock(t *testing.T) {
	clk := newFakeClock()
	ts := newTestServer(t, withClock(clk))
	c := ts.client(t)
	ms := clk.Now().UnixMilli()
	mustStr(t, c, fmt.Sprintf("%d-0", ms), "XADD", "s", "*", "f", "v")
	mustStr(t, c, fmt.Sprintf("%d-1", ms), "XADD", "s", "*", "f", "v")
	mustStr(t, c, fmt.Sprintf("%d-2", ms), "XADD", "s", "*", "f", "v")
	clk.Advance(5 * time.Millisecond)
	mustStr(t, c, fmt.Sprintf("%d-0", ms+5), "XADD", "s", "*", "f", "v")
	mustInt(t, c, 4, "XLEN", "s")
}

func TestStreamXAddExplicitIDs(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	const small = "ERR The ID specified in XADD is equal or smaller than the target stream top item"
	mustStr(t, c, "5-1", "XADD", "s", "5-1", "f", "v")
	mustErr(t, c, small, "XADD", "s", "5-1", "f", "v")
	mustErr(t, c, small, "XADD", "s", "4-9", "f", "v")
	mustStr(t, c, "5-2", "XADD", "s", "5-*", "f", "v")
	mustStr(t, c, "5-3", "XADD", "s", "5-*", "f", "v")
	mustStr(t, c, "7-0", "XADD", "s", "7-*", "f", "v")
	mustErr(t, c, small, "XADD", "s", "6-*", "f", "v")
	mustStr(t, c, "8-0", "XADD", "s", "8", "f", "v")
	mustInt(t, c, 5, "XLEN", "s")

	mustErr(t, c, "ERR The ID specified in XADD must be greater than 0-0", "XADD", "z", "0-0", "f", "v")
	mustStr(t, c, "0-1", "XADD", "z", "0-*", "f", "v")
	mustErr(t, c, "ERR Invalid stream ID specified as stream command argument", "XADD", "s", "abc", "f", "v")
	mustErr(t, c, "ERR Invalid stream ID specified as stream command argument", "XADD", "s", "1-x", "f", "v")
	mustErr(t, c, "ERR Invalid stream ID specified as stream command argument", "XADD", "s", "-1", "f", "v")
	mustErr(t, c, "ERR wrong number of arguments for 'xadd' command", "XADD", "s", "*", "f", "v", "dangling")
	mustErr(t, c, "ERR wrong number of arguments for 'xadd' command", "XADD", "s", "*")
	mustInt(t, c, 5, "XLEN", "s")

	// NOMKSTREAM on a missing key creates nothing.
	mustNil(t, c, "XADD", "nokey", "NOMKSTREAM", "*", "f", "v")
	mustInt(t, c, 0, "EXISTS", "nokey")
	mustStr(t, c, "9-0", "XADD", "s", "NOMKSTREAM", "9-0", "f", "v")

	// The last possible ID exhausts the stream.
	mustStr(t, c, "18446744073709551615-18446744073709551615", "XADD", "big", "18446744073709551615-18446744073709551615", "f", "v")
	mustErr(t, c, "ERR The stream has exhausted the last possible ID, unable to add more items", "XADD", "big", "*", "f", "v")

	// Multiple field/value pairs keep their order, duplicates included.
	mustStr(t, c, "1-1", "XADD", "m", "1-1", "b", "2", "a", "1", "b", "3")
	got := rawEntries(t, mustDo(t, c, "XRANGE", "m", "-", "+"))
	if len(got) != 1 || !eqStrs(got[0].Fields, []string{"b", "2", "a", "1", "b", "3"}) {
		t.Fatalf("XRANGE m = %+v", got)
	}
}

func TestStreamXRangeXRevRange(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	for i := 1; i <= 10; i++ {
		mustDo(t, c, "XADD", "s", fmt.Sprintf("%d-1", i), "n", strconv.Itoa(i))
	}
	all := []string{"1-1", "2-1", "3-1", "4-1", "5-1", "6-1", "7-1", "8-1", "9-1", "10-1"}
	mustIDs(t, c, all, "XRANGE", "s", "-", "+")
	mustIDs(t, c, all[:3], "XRANGE", "s", "-", "+", "COUNT", "3")
	mustIDs(t, c, []string{"4-1", "5-1"}, "XRANGE", "s", "(3-1", "+", "COUNT", "2")
	mustIDs(t, c, []string{"1-1", "2-1"}, "XRANGE", "s", "-", "(3-1")
	mustIDs(t, c, []string{"4-1", "5-1", "6-1"}, "XRANGE", "s", "(3-1", "(7-1")
	mustIDs(t, c, []string{"3-1", "4-1", "5-1"}, "XRANGE", "s", "3", "5")
	mustIDs(t, c, []string{"3-1"}, "XRANGE", "s", "3-1", "3-1")
	mustIDs(t, c, []string{"3-1"}, "XRANGE", "s", "3-0", "(4-0")
	mustIDs(t, c, []string{}, "XRANGE", "s", "5", "3")
	mustIDs(t, c, []string{}, "XRANGE", "s", "(3-1", "(3-2")
	mustIDs(t, c, []string{}, "XRANGE", "nokey", "-", "+")
	mustIDs(t, c, []string{"10-1", "9-1"}, "XREVRANGE", "s", "+", "-", "COUNT", "2")
	mustIDs(t, c, []string{"9-1", "8-1"}, "XREVRANGE", "s", "(10-1", "(7-1")
	mustIDs(t, c, []string{"5-1", "4-1", "3-1"}, "XREVRANGE", "s", "5", "3")
	mustIDs(t, c, []string{"2-1", "1-1"}, "XREVRANGE", "s", "(3-1", "-")
	mustNil(t, c, "XRANGE", "s", "-", "+", "COUNT", "0")

	got := rawEntries(t, mustDo(t, c, "XRANGE", "s", "7-1", "7-1"))
	if len(got) != 1 || !eqStrs(got[0].Fields, []string{"n", "7"}) {
		t.Fatalf("XRANGE 7-1 7-1 = %+v", got)
	}

	mustErr(t, c, "ERR invalid end ID for the interval", "XRANGE", "s", "-", "(0-0")
	mustErr(t, c, "ERR invalid start ID for the interval", "XRANGE", "s", "(18446744073709551615-18446744073709551615", "+")
	mustErr(t, c, "ERR Invalid stream ID specified as stream command argument", "XRANGE", "s", "x", "+")
	mustErr(t, c, "ERR syntax error", "XRANGE", "s", "-", "+", "COUNT")
	mustErr(t, c, "ERR value is not an integer or out of range", "XRANGE", "s", "-", "+", "COUNT", "x")
}

func TestStreamXDel(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	for i := 1; i <= 5; i++ {
		mustDo(t, c, "XADD", "s", fmt.Sprintf("%d-0", i), "f", "v")
	}
	mustInt(t, c, 2, "XDEL", "s", "2-0", "4-0", "9-9", "2-0")
	mustInt(t, c, 3, "XLEN", "s")
	mustIDs(t, c, []string{"1-0", "3-0", "5-0"}, "XRANGE", "s", "-", "+")
	mustInt(t, c, 0, "XDEL", "s", "2-0")
	mustInt(t, c, 1, "XDEL", "s", "1-0")
	mustIDs(t, c, []string{"3-0"}, "XRANGE", "s", "-", "+", "COUNT", "1")
	mustInt(t, c, 0, "XDEL", "nokey", "1-0")
	// An invalid ID fails the whole command before anything is deleted.
	mustErr(t, c, "ERR Invalid stream ID specified as stream command argument", "XDEL", "s", "3-0", "bad")
	mustInt(t, c, 2, "XLEN", "s")
	// Deleting everything leaves an empty stream, not a missing key.
	mustInt(t, c, 2, "XDEL", "s", "3-0", "5-0")
	mustInt(t, c, 0, "XLEN", "s")
	mustStr(t, c, "stream", "TYPE", "s")
	// The top item is remembered: smaller IDs are still rejected.
	mustErr(t, c, "ERR The ID specified in XADD is equal or smaller than the target stream top item", "XADD", "s", "5-0", "f", "v")
	mustStr(t, c, "5-1", "XADD", "s", "5-*", "f", "v")
}

func TestStreamXTrim(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	for i := 1; i <= 10; i++ {
		mustDo(t, c, "XADD", "s", fmt.Sprintf("%d-0", i), "f", "v")
	}
	mustInt(t, c, 7, "XTRIM", "s", "MAXLEN", "=", "3")
	mustInt(t, c, 3, "XLEN", "s")
	mustIDs(t, c, []string{"8-0", "9-0", "10-0"}, "XRANGE", "s", "-", "+")
	mustInt(t, c, 0, "XTRIM", "s", "MAXLEN", "3")
	mustInt(t, c, 1, "XTRIM", "s", "MINID", "9")
	mustIDs(t, c, []string{"9-0", "10-0"}, "XRANGE", "s", "-", "+")
	mustInt(t, c, 0, "XTRIM", "s", "MINID", "=", "9-0")
	mustInt(t, c, 2, "XTRIM", "s", "MAXLEN", "0")
	mustInt(t, c, 0, "XLEN", "s")
	mustInt(t, c, 0, "XTRIM", "nokey", "MAXLEN", "0")
	mustInt(t, c, 0, "EXISTS", "nokey")

	mustErr(t, c, "ERR syntax error", "XTRIM", "s", "BOGUS", "1")
	mustErr(t, c, "ERR The MAXLEN argument must be >= 0.", "XTRIM", "s", "MAXLEN", "-1")
	mustErr(t, c, "ERR syntax error, LIMIT cannot be used without the special ~ option", "XTRIM", "s", "MAXLEN", "1", "LIMIT", "10")
	mustErr(t, c, "ERR syntax error, MAXLEN and MINID options at the same time are not compatible", "XTRIM", "s", "MAXLEN", "1", "MINID", "1")
}

func TestStreamXTrimApprox(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	ctx := context.Background()
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := 1; i <= 250; i++ {
			p.XAdd(ctx, &redis.XAddArgs{Stream: "s", ID: fmt.Sprintf("%d-0", i), Values: []string{"f", "v"}})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Excess 240 entries: '~' removes whole multiples of 100 only.
	mustInt(t, c, 200, "XTRIM", "s", "MAXLEN", "~", "10")
	mustInt(t, c, 50, "XLEN", "s")
	mustIDs(t, c, []string{"201-0"}, "XRANGE", "s", "-", "+", "COUNT", "1")
	// Excess 40 < 100: nothing.
	mustInt(t, c, 0, "XTRIM", "s", "MAXLEN", "~", "10")
	mustInt(t, c, 50, "XLEN", "s")
	// The exact form still trims precisely.
	mustInt(t, c, 40, "XTRIM", "s", "MAXLEN", "10")
	mustIDs(t, c, []string{"241-0"}, "XRANGE", "s", "-", "+", "COUNT", "1")

	// LIMIT caps '~' trimming, again in multiples of 100.
	_, err = c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := 1; i <= 300; i++ {
			p.XAdd(ctx, &redis.XAddArgs{Stream: "t", ID: fmt.Sprintf("%d-0", i), Values: []string{"f", "v"}})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	mustInt(t, c, 100, "XTRIM", "t", "MAXLEN", "~", "0", "LIMIT", "150")
	mustInt(t, c, 200, "XLEN", "t")

	// MINID ~ removes whole nodes only: 101..249 are below the threshold,
	// but only the full node of 100 (101..200) may go.
	t.Run("MinIDApprox", func(t *testing.T) {
		n := mustDo(t, c, "XTRIM", "t", "MINID", "~", "250")
		if n != int64(100) {
			t.Fatalf("XTRIM t MINID ~ 250 on entries 101..300 removed %v entries, want 100 (a multiple of %d)", n, 100)
		}
		mustIDs(t, c, []string{"201-0"}, "XRANGE", "t", "-", "+", "COUNT", "1")
		mustInt(t, c, 100, "XLEN", "t")
	})
}

func TestStreamXAddMaxLen(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	for i := 1; i <= 10; i++ {
		mustStr(t, c, fmt.Sprintf("%d-0", i), "XADD", "s", "MAXLEN", "3", fmt.Sprintf("%d-0", i), "n", strconv.Itoa(i))
		want := int64(i)
		if want > 3 {
			want = 3
		}
		mustInt(t, c, want, "XLEN", "s")
	}
	got := rawEntries(t, mustDo(t, c, "XRANGE", "s", "-", "+"))
	if len(got) != 3 || got[0].ID != "8-0" || got[2].ID != "10-0" || !eqStrs(got[2].Fields, []string{"n", "10"}) {
		t.Fatalf("XRANGE after XADD MAXLEN 3 = %+v", got)
	}
	mustDo(t, c, "XADD", "s", "MAXLEN", "=", "1", "*", "f", "v")
	mustInt(t, c, 1, "XLEN", "s")
	// MAXLEN 0 keeps nothing, not even the new entry, but the ID is returned.
	mustStr(t, c, "100-0", "XADD", "z", "MAXLEN", "0", "100-0", "f", "v")
	mustInt(t, c, 0, "XLEN", "z")
	mustStr(t, c, "stream", "TYPE", "z")
	mustErr(t, c, "ERR The ID specified in XADD is equal or smaller than the target stream top item", "XADD", "z", "100-0", "f", "v")
	// MINID on XADD.
	mustDo(t, c, "XADD", "m", "1-0", "f", "v")
	mustDo(t, c, "XADD", "m", "2-0", "f", "v")
	mustDo(t, c, "XADD", "m", "MINID", "2", "3-0", "f", "v")
	mustIDs(t, c, []string{"2-0", "3-0"}, "XRANGE", "m", "-", "+")
}

func TestStreamGroupCreateDestroy(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	const noKey = "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically."
	mustErr(t, c, noKey, "XGROUP", "CREATE", "s", "g", "$")
	mustInt(t, c, 0, "EXISTS", "s")
	mustStr(t, c, "OK", "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
	mustStr(t, c, "stream", "TYPE", "s")
	mustInt(t, c, 0, "XLEN", "s")
	mustErr(t, c, "BUSYGROUP Consumer Group name already exists", "XGROUP", "CREATE", "s", "g", "$")
	mustErr(t, c, "BUSYGROUP Consumer Group name already exists", "XGROUP", "CREATE", "s", "g", "0", "MKSTREAM")
	mustStr(t, c, "OK", "XGROUP", "CREATE", "s", "g2", "0")
	mustInt(t, c, 1, "XGROUP", "DESTROY", "s", "g")
	mustInt(t, c, 0, "XGROUP", "DESTROY", "s", "g")
	mustErr(t, c, noKey, "XGROUP", "DESTROY", "nokey", "g")
	mustErr(t, c, "NOGROUP No such key 's' or consumer group 'g' in XREADGROUP with GROUP option",
		"XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
	// g2 survives g's destruction.
	mustNil(t, c, "XREADGROUP", "GROUP", "g2", "c", "STREAMS", "s", ">")
	// A recreated group starts from its new ID.
	mustDo(t, c, "XADD", "s", "1-0", "f", "v")
	mustDo(t, c, "XADD", "s", "2-0", "f", "v")
	mustStr(t, c, "OK", "XGROUP", "CREATE", "s", "g", "1-0")
	got := rawStreams(t, mustDo(t, c, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"))
	if ids := got["s"]; len(ids) != 1 || ids[0].ID != "2-0" {
		t.Fatalf("XREADGROUP after CREATE at 1-0 = %+v", got)
	}
	mustStr(t, c, "OK", "XGROUP", "CREATE", "s", "late", "$")
	mustNil(t, c, "XREADGROUP", "GROUP", "late", "c", "STREAMS", "s", ">")
	mustErr(t, c, "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.",
		"XREADGROUP", "GROUP", "late", "c", "STREAMS", "s", "$")

	mustErr(t, c, "ERR Invalid stream ID specified as stream command argument", "XGROUP", "CREATE", "s", "bad", "nope")
	mustErr(t, c, "ERR unknown subcommand or wrong number of arguments for 'CREATE'. Try XGROUP HELP.", "XGROUP", "CREATE", "s", "bad2", "0", "EXTRA")
	mustErr(t, c, "ERR unknown subcommand 'FOO'. Try XGROUP HELP.", "XGROUP", "FOO")
	mustErr(t, c, "ERR wrong number of arguments for 'xgroup|create' command", "XGROUP", "CREATE", "s")
	mustStr(t, c, "OK", "SET", "str", "v")
	mustErr(t, c, "WRONGTYPE Operation against a key holding the wrong kind of value", "XGROUP", "CREATE", "str", "g", "0", "MKSTREAM")
}

func TestStreamGroupReadPendingAck(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	for i := 1; i <= 6; i++ {
		mustDo(t, c, "XADD", "s", fmt.Sprintf("%d-1", i), "n", strconv.Itoa(i))
	}
	mustStr(t, c, "OK", "XGROUP", "CREATE", "s", "g", "0")

	got := rawStreams(t, mustDo(t, c, "XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "s", ">"))
	if len(got) != 1 || len(got["s"]) != 2 || got["s"][0].ID != "1-1" || got["s"][1].ID != "2-1" ||
		!eqStrs(got["s"][1].Fields, []string{"n", "2"}) {
		t.Fatalf("alice > = %+v", got)
	}
	got = rawStreams(t, mustDo(t, c, "XREADGROUP", "GROUP", "g", "bob", "COUNT", "2", "STREAMS", "s", ">"))
	if ids := got["s"]; len(ids) != 2 || ids[0].ID != "3-1" || ids[1].ID != "4-1" {
		t.Fatalf("bob > = %+v", got)
	}
	// History: alice's own pending entries, redelivered.
	got = rawStreams(t, mustDo(t, c, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0"))
	if ids := got["s"]; len(ids) != 2 || ids[0].ID != "1-1" || ids[1].ID != "2-1" || !eqStrs(ids[0].Fields, []string{"n", "1"}) {
		t.Fatalf("alice 0 = %+v", got)
	}
	got = rawStreams(t, mustDo(t, c, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "1-1"))
	if ids := got["s"]; len(ids) != 1 || ids[0].ID != "2-1" {
		t.Fatalf("alice 1-1 = %+v", got)
	}
	want := []pendingRow{{"1-1", "alice", 2}, {"2-1", "alice", 3}, {"3-1", "bob", 1}, {"4-1", "bob", 1}}
	if rows := xpendingExt(t, c, "s", "g", "-", "+", "10"); fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Fatalf("XPENDING - + 10 = %v, want %v", rows, want)
	}
	if rows := xpendingExt(t, c, "s", "g", "-", "+", "10", "bob"); fmt.Sprint(rows) != fmt.Sprint(want[2:]) {
		t.Fatalf("XPENDING bob = %v", rows)
	}
	if rows := xpendingExt(t, c, "s", "g", "(1-1", "3-1", "2"); fmt.Sprint(rows) != fmt.Sprint(want[1:3]) {
		t.Fatalf("XPENDING (1-1 3-1 2 = %v", rows)
	}
	if rows := xpendingExt(t, c, "s", "g", "-", "+", "0"); len(rows) != 0 {
		t.Fatalf("XPENDING COUNT 0 = %v", rows)
	}
	if rows := xpendingExt(t, c, "s", "g", "-", "+", "10", "nobody"); len(rows) != 0 {
		t.Fatalf("XPENDING nobody = %v", rows)
	}
	// History of a consumer with nothing pending: the stream with no entries.
	got = rawStreams(t, mustDo(t, c, "XREADGROUP", "GROUP", "g", "carol", "STREAMS", "s", "0"))
	if e, ok := got["s"]; !ok || len(e) != 0 {
		t.Fatalf("carol 0 = %+v", got)
	}

	// XACK counts only entries that were pending.
	mustInt(t, c, 2, "XACK", "s", "g", "1-1", "3-1", "9-9", "1-1")
	mustInt(t, c, 0, "XACK", "s", "g", "1-1")
	mustInt(t, c, 0, "XACK", "s", "nogroup", "2-1")
	mustInt(t, c, 0, "XACK", "nokey", "g", "2-1")
	mustErr(t, c, "ERR Invalid stream ID specified as stream command argument", "XACK", "s", "g", "2-1", "bad")
	sum := mustDo(t, c, "XPENDING", "s", "g").([]any)
	if len(sum) != 4 || sum[0] != int64(2) || sum[1] != "2-1" || sum[2] != "4-1" ||
		fmt.Sprint(sum[3]) != "[[alice 1] [bob 1]]" {
		t.Fatalf("XPENDING summary = %#v", sum)
	}

	// NOACK: delivered, but not pending.
	got = rawStreams(t, mustDo(t, c, "XREADGROUP", "GROUP", "g", "carol", "NOACK", "STREAMS", "s", ">"))
	if ids := got["s"]; len(ids) != 2 || ids[0].ID != "5-1" || ids[1].ID != "6-1" {
		t.Fatalf("carol NOACK > = %+v", got)
	}
	if rows := xpendingExt(t, c, "s", "g", "-", "+", "10", "carol"); len(rows) != 0 {
		t.Fatalf("XPENDING carol after NOACK = %v", rows)
	}
	if sum := mustDo(t, c, "XPENDING", "s", "g").([]any); sum[0] != int64(2) {
		t.Fatalf("XPENDING count after NOACK = %#v", sum)
	}
	mustNil(t, c, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")

	// A pending entry deleted from the stream comes back with null fields.
	mustInt(t, c, 1, "XDEL", "s", "2-1")
	hist := rawStreams(t, mustDo(t, c, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0"))
	if ids := hist["s"]; len(ids) != 1 || ids[0].ID != "2-1" || ids[0].Fields != nil {
		t.Fatalf("alice history after XDEL = %+v", hist)
	}

	// Everything acknowledged: an empty summary.
	mustInt(t, c, 2, "XACK", "s", "g", "2-1", "4-1")
	sum = mustDo(t, c, "XPENDING", "s", "g").([]any)
	if len(sum) != 4 || sum[0] != int64(0) || sum[1] != nil || sum[2] != nil || sum[3] != nil {
		t.Fatalf("empty XPENDING summary = %#v", sum)
	}
}

func TestStreamPendingSummaryConsumerOrder(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	for i := 1; i <= 8; i++ {
		mustDo(t, c, "XADD", "s", fmt.Sprintf("%d-0", i), "f", "v")
	}
	mustStr(t, c, "OK", "XGROUP", "CREATE", "s", "g", "0")
	// Deliver in an order unrelated to the names; "a" is a prefix of "ab".
	for _, r := range []struct {
		consumer string
		count    int
	}{{"zed", 1}, {"ab", 2}, {"Carl", 1}, {"a", 3}, {"bob", 1}} {
		mustDo(t, c, "XREADGROUP", "GROUP", "g", r.consumer, "COUNT", strconv.Itoa(r.count), "STREAMS", "s", ">")
	}
	sum := mustDo(t, c, "XPENDING", "s", "g").([]any)
	if sum[0] != int64(8) || sum[1] != "1-0" || sum[2] != "8-0" {
		t.Fatalf("XPENDING summary head = %#v", sum[:3])
	}
	if got := fmt.Sprint(sum[3]); got != "[[Carl 1] [a 3] [ab 2] [bob 1] [zed 1]]" {
		t.Fatalf("XPENDING consumers = %s", got)
	}
	// Per-consumer filters do not mix "a" and "ab".
	if rows := xpendingExt(t, c, "s", "g", "-", "+", "100", "a"); fmt.Sprint(rows) != "[{5-0 a 1} {6-0 a 1} {7-0 a 1}]" {
		t.Fatalf("XPENDING a = %v", rows)
	}
	if rows := xpendingExt(t, c, "s", "g", "-", "+", "100", "ab"); fmt.Sprint(rows) != "[{2-0 ab 1} {3-0 ab 1}]" {
		t.Fatalf("XPENDING ab = %v", rows)
	}
	if rows := xpendingExt(t, c, "s", "g", "-", "+", "1", "ab"); len(rows) != 1 {
		t.Fatalf("XPENDING ab COUNT 1 = %v", rows)
	}
}

func TestStreamPendingIdle(t *testing.T) {
	clk := newFakeClock()
	ts := newTestServer(t, withClock(clk))
	c := ts.client(t)
	mustDo(t, c, "XADD", "s", "1-0", "f", "v")
	mustDo(t, c, "XADD", "s", "2-0", "f", "v")
	mustStr(t, c, "OK", "XGROUP", "CREATE", "s", "g", "0")
	mustDo(t, c, "XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">")
	clk.Advance(5 * time.Second)
	mustDo(t, c, "XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">")
	clk.Advance(1 * time.Second)
	v := mustDo(t, c, "XPENDING", "s", "g", "-", "+", "10").([]any)
	if len(v) != 2 || v[0].([]any)[2] != int64(6000) || v[1].([]any)[2] != int64(1000) {
		t.Fatalf("XPENDING idle = %#v", v)
	}
	v = mustDo(t, c, "XPENDING", "s", "g", "IDLE", "3000", "-", "+", "10").([]any)
	if len(v) != 1 || v[0].([]any)[0] != "1-0" {
		t.Fatalf("XPENDING IDLE 3000 = %#v", v)
	}
}

func TestStreamNoGroupAndWrongType(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	mustDo(t, c, "XADD", "s", "1-0", "f", "v")
	mustErr(t, c, "NOGROUP No such key 's' or consumer group 'nope' in XREADGROUP with GROUP option",
		"XREADGROUP", "GROUP", "nope", "c", "STREAMS", "s", ">")
	mustErr(t, c, "NOGROUP No such key 'missing' or consumer group 'g' in XREADGROUP with GROUP option",
		"XREADGROUP", "GROUP", "g", "c", "STREAMS", "missing", ">")
	// With BLOCK too, a missing group fails at once.
	mustErr(t, c, "NOGROUP No such key 's' or consumer group 'nope' in XREADGROUP with GROUP option",
		"XREADGROUP", "GROUP", "nope", "c", "BLOCK", "0", "STREAMS", "s", ">")
	mustErr(t, c, "NOGROUP No such key 's' or consumer group 'nope'", "XPENDING", "s", "nope")
	mustErr(t, c, "NOGROUP No such key 's' or consumer group 'nope'", "XPENDING", "s", "nope", "-", "+", "10")
	// Redis checks the key and group before the ID.
	mustErr(t, c, "NOGROUP No such key 's' or consumer group 'g' in XREADGROUP with GROUP option",
		"XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "$")
	mustErr(t, c, "ERR Missing GROUP option for XREADGROUP", "XREADGROUP", "COUNT", "1", "BLOCK", "1", "STREAMS", "s", ">")
	mustErr(t, c, "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.",
		"XREAD", "STREAMS", "s", ">")
	mustErr(t, c, "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.",
		"XREAD", "STREAMS", "s", "t", "0")
	mustErr(t, c, "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.",
		"XREAD", "GROUP", "g", "c", "STREAMS", "s", "0")

	mustStr(t, c, "OK", "SET", "str", "v")
	const wt = "WRONGTYPE Operation against a key holding the wrong kind of value"
	for _, args := range [][]any{
		{"XADD", "str", "*", "f", "v"},
		{"XLEN", "str"},
		{"XRANGE", "str", "-", "+"},
		{"XREVRANGE", "str", "+", "-"},
		{"XDEL", "str", "1-0"},
		{"XTRIM", "str", "MAXLEN", "0"},
		{"XGROUP", "CREATE", "str", "g", "0"},
		{"XREADGROUP", "GROUP", "g", "c", "STREAMS", "str", ">"},
		{"XREAD", "STREAMS", "str", "0"},
		{"XPENDING", "str", "g"},
		{"GET", "s"},
	} {
		mustErr(t, c, wt, args...)
	}
	mustStr(t, c, "v", "GET", "str")
	mustInt(t, c, 1, "XLEN", "s")
}

func TestStreamBinaryNames(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	key := "k\x00\r\nx"
	field, value := "f\x00\r\n", "v\r\n\x00"
	group, consumer := "g\x00\r\n", "c\r\n\x00"

	mustStr(t, c, "1-0", "XADD", key, "1-0", field, value)
	mustStr(t, c, "2-0", "XADD", key, "2-0", "plain", "")
	// Keys that differ only after a NUL are distinct.
	mustStr(t, c, "1-0", "XADD", "k\x00", "1-0", "f", "v")
	mustInt(t, c, 2, "XLEN", key)
	mustInt(t, c, 1, "XLEN", "k\x00")
	mustInt(t, c, 0, "XLEN", "k")
	mustStr(t, c, "stream", "TYPE", key)

	got := rawEntries(t, mustDo(t, c, "XRANGE", key, "-", "+"))
	if len(got) != 2 || !eqStrs(got[0].Fields, []string{field, value}) || !eqStrs(got[1].Fields, []string{"plain", ""}) {
		t.Fatalf("XRANGE binary = %q", got)
	}
	mustStr(t, c, "OK", "XGROUP", "CREATE", key, group, "0")
	mustStr(t, c, "OK", "XGROUP", "CREATE", key, "g", "0") // differs from group only in its suffix
	rs := rawStreams(t, mustDo(t, c, "XREADGROUP", "GROUP", group, consumer, "COUNT", "1", "STREAMS", key, ">"))
	if e := rs[key]; len(e) != 1 || e[0].ID != "1-0" || !eqStrs(e[0].Fields, []string{field, value}) {
		t.Fatalf("XREADGROUP binary = %q", rs)
	}
	rs = rawStreams(t, mustDo(t, c, "XREADGROUP", "GROUP", group, "c", "STREAMS", key, ">"))
	if e := rs[key]; len(e) != 1 || e[0].ID != "2-0" {
		t.Fatalf("XREADGROUP plain consumer = %q", rs)
	}
	if rows := xpendingExt(t, c, key, group, "-", "+", "10"); fmt.Sprint(rows) != fmt.Sprint([]pendingRow{{"1-0", consumer, 1}, {"2-0", "c", 1}}) {
		t.Fatalf("XPENDING binary = %+q", fmt.Sprint(rows))
	}
	if rows := xpendingExt(t, c, key, group, "-", "+", "10", consumer); len(rows) != 1 || rows[0].Consumer != consumer {
		t.Fatalf("XPENDING binary consumer = %q", fmt.Sprint(rows))
	}
	sum := mustDo(t, c, "XPENDING", key, group).([]any)
	cons := sum[3].([]any)
	if len(cons) != 2 || cons[0].([]any)[0] != "c" || cons[1].([]any)[0] != consumer {
		t.Fatalf("XPENDING summary consumers = %q", cons)
	}
	// The other group saw nothing.
	if sum := mustDo(t, c, "XPENDING", key, "g").([]any); sum[0] != int64(0) {
		t.Fatalf("XPENDING g = %#v", sum)
	}
	mustInt(t, c, 1, "XACK", key, group, "1-0")
	// Error texts never carry control characters.
	mustErr(t, c, "NOGROUP No such key 'k   x' or consumer group 'no  ' in XREADGROUP with GROUP option",
		"XREADGROUP", "GROUP", "no\r\n", "c", "STREAMS", key, ">")
	mustInt(t, c, 1, "XGROUP", "DESTROY", key, group)
	mustInt(t, c, 1, "DEL", key)
	mustInt(t, c, 1, "XLEN", "k\x00")
	// Binary string keys and values.
	mustStr(t, c, "OK", "SET", "\x00\r\n", "\r\n\x00\xff")
	mustStr(t, c, "\r\n\x00\xff", "GET", "\x00\r\n")
	if got := strs(t, mustDo(t, c, "KEYS", "\x00*")); !eqStrs(got, []string{"\x00\r\n"}) {
		t.Fatalf("KEYS \\x00* = %q", got)
	}
}

func TestStreamXReadNonBlocking(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	mustDo(t, c, "XADD", "a", "1-0", "f", "1")
	mustDo(t, c, "XADD", "a", "2-0", "f", "2")
	mustDo(t, c, "XADD", "b", "5-0", "f", "5")
	rs := rawStreams(t, mustDo(t, c, "XREAD", "COUNT", "1", "STREAMS", "a", "b", "nokey", "0", "0", "0"))
	if len(rs) != 2 || len(rs["a"]) != 1 || rs["a"][0].ID != "1-0" || rs["b"][0].ID != "5-0" {
		t.Fatalf("XREAD = %+v", rs)
	}
	rs = rawStreams(t, mustDo(t, c, "XREAD", "STREAMS", "a", "b", "1-0", "5-0"))
	if len(rs) != 1 || len(rs["a"]) != 1 || rs["a"][0].ID != "2-0" {
		t.Fatalf("XREAD after = %+v", rs)
	}
	mustNil(t, c, "XREAD", "STREAMS", "a", "$")
	mustNil(t, c, "XREAD", "STREAMS", "nokey", "0")
	mustErr(t, c, "ERR timeout is negative", "XREAD", "BLOCK", "-1", "STREAMS", "a", "0")
	mustErr(t, c, "ERR timeout is not an integer or out of range", "XREAD", "BLOCK", "x", "STREAMS", "a", "0")
	mustErr(t, c, "ERR syntax error", "XREAD", "COUNT", "1", "a", "0")
}
