package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/redis/go-redis/v9"

	"github.com/sediment-dev/sediment/feed"
)

// changes runs CHANGES and returns next and the payloads.
func changes(t *testing.T, c *redis.Client, args ...any) (int64, [][]byte) {
	t.Helper()
	v, err := c.Do(context.Background(), append([]any{"CHANGES", "FROM"}, args...)...).Slice()
	if err != nil || len(v) != 2 {
		t.Fatalf("CHANGES FROM %v: %v %v", args, v, err)
	}
	var out [][]byte
	for _, p := range v[1].([]any) {
		out = append(out, []byte(p.(string)))
	}
	return v[0].(int64), out
}

// TestChangesReplaysTheFeed: CHANGES returns, for the retained records,
// exactly the payloads a feed subscriber received live, in order (SWAPDB
// included: the logical dbs as they were); COUNT pages through them with
// next; MATCH and TYPE filter; a <prefix>.replay request over NATS gets
// the same events.
func TestChangesReplaysTheFeed(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	c := ts.client(t)
	live := feedSub(t, ts, "sediment.chg.>")
	c1 := redis.NewClient(&redis.Options{Addr: ts.addr, DB: 1, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { c1.Close() })

	mustDo(t, c, "SET", "k", "v")
	mustDo(t, c, "HSET", "h", "f", "x")
	mustDo(t, c1, "SET", "in1", "a")
	mustDo(t, c, "SWAPDB", "0", "1")
	mustDo(t, c, "SET", "k2", "after") // db 0 is the former db 1 now
	mustDo(t, c, "XADD", "s", "*", "f", "v")
	c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "a", "1", 0)
		p.SAdd(ctx, "set", "m")
		return nil
	})
	mustDo(t, c, "DEL", "a")

	var want [][]byte
	for len(want) < 12 {
		select {
		case m := <-live:
			want = append(want, m.Data)
		case <-time.After(2 * time.Second):
			if len(want) == 0 {
				t.Fatal("no live feed message")
			}
			goto done
		}
	}
done:
	last := int64(ts.store.LastSeq())
	next, got := changes(t, c, 0, "COUNT", 1000)
	if next != last+1 || len(got) != len(want) {
		t.Fatalf("CHANGES FROM 0: next %d (want %d), %d events (live: %d)", next, last+1, len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("event %d:\nlive:    %s\nCHANGES: %s", i, want[i], got[i])
		}
	}

	// INFO: the feed caught up with the log (a subscriber is connected).
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		info := c.Info(ctx, "persistence").Val()
		if strings.Contains(info, "sediment_feed_lag_records:0\r\n") && strings.Contains(info, "sediment_feed_published_seq:"+itoa64(last)+"\r\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("INFO persistence: the feed did not catch up:\n%s", info)
		}
	}

	// Paging: COUNT records a time, next to go on, the same events.
	var paged [][]byte
	for from := int64(1); from <= last; {
		n, evs := changes(t, c, from, "COUNT", 2)
		if n <= from {
			t.Fatalf("CHANGES FROM %d COUNT 2: next %d", from, n)
		}
		paged, from = append(paged, evs...), n
	}
	if len(paged) != len(want) {
		t.Fatalf("paged: %d events, want %d", len(paged), len(want))
	}

	// Filters.
	if _, evs := changes(t, c, 0, "COUNT", 1000, "TYPE", "hash"); len(evs) != 2 {
		t.Fatalf("TYPE hash: %d events, want 2 (hset, set-meta)", len(evs))
	}
	_, evs := changes(t, c, 0, "COUNT", 1000, "MATCH", "k*")
	for _, e := range evs {
		if m, _ := feed.Decode(e); m.Key == nil || !strings.HasPrefix(*m.Key, "k") {
			t.Fatalf("MATCH k*: %s", e)
		}
	}
	if len(evs) != 2 {
		t.Fatalf("MATCH k*: %d events, want 2", len(evs))
	}
	// Past the end: nothing, next unchanged.
	if n, evs := changes(t, c, last+5); n != last+5 || len(evs) != 0 {
		t.Fatalf("CHANGES past the end: %d %d", n, len(evs))
	}

	// The same over NATS.
	nc, err := nats.Connect("", nats.InProcessServer(ts.wake.ns))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	msg, err := nc.Request("sediment.replay", []byte(`{"from":0,"count":1000}`), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Next   uint64            `json:"next"`
		Events []json.RawMessage `json:"events"`
		Error  string            `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &rep); err != nil || rep.Error != "" || rep.Next != uint64(last+1) || len(rep.Events) != len(want) {
		t.Fatalf("replay over NATS: %v %+v", err, rep)
	}
	for i := range want {
		if !bytes.Equal(rep.Events[i], want[i]) {
			t.Fatalf("replay event %d: %s, want %s", i, rep.Events[i], want[i])
		}
	}
	msg, err = nc.Request("sediment.replay", []byte(`not json`), 5*time.Second)
	if err != nil || !strings.Contains(string(msg.Data), `"error":"bad request`) {
		t.Fatalf("a bad replay request: %s %v", msg.Data, err)
	}
}

// TestChangesErrors: syntax, ranges, and a sequence not retained.
func TestChangesErrors(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"CHANGES", "FROM"}, "ERR wrong number of arguments for 'changes' command"},
		{[]any{"CHANGES", "SINCE", "1"}, "ERR syntax error"},
		{[]any{"CHANGES", "FROM", "x"}, "ERR value is not an integer or out of range"},
		{[]any{"CHANGES", "FROM", "-1"}, "ERR value is not an integer or out of range"},
		{[]any{"CHANGES", "FROM", "1", "COUNT"}, "ERR syntax error"},
		{[]any{"CHANGES", "FROM", "1", "COUNT", "0"}, "ERR value is out of range, value must between 1 and 10000"},
		{[]any{"CHANGES", "FROM", "1", "BOGUS", "1"}, "ERR syntax error"},
	} {
		mustErr(t, c, tc.want, tc.args...)
	}
	// Not inside MULTI: it would read the log on the writer.
	cc := confDial(t, ts.addr)
	cc.do("MULTI")
	if r, _ := cc.do("CHANGES", "FROM", "1"); r.kind != confError || r.str != "ERR Command not allowed inside a transaction" {
		t.Fatalf("CHANGES inside MULTI: %v", r)
	}
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

// TestReplayOverNATSStaysWithinMaxPayload: pages of a large log, and a
// transaction's record larger than NATS's max_payload, come in replies
// NATS takes (the reply is cut between events, next_i), every event once;
// keys with <, > and & come as the feed publishes them, unescaped.
func TestReplayOverNATSStaysWithinMaxPayload(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	c := ts.client(t)
	p := c.Pipeline()
	for i := range 12000 {
		p.Set(ctx, fmt.Sprintf("key:<%d>&", i), "v", 0)
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for i := range 20000 {
			p.Set(ctx, fmt.Sprintf("tx:%d", i), "v", 0)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect("", nats.InProcessServer(ts.wake.ns))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	total, from, fromI := 0, uint64(0), 0
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatal("no end")
		}
		msg, err := nc.Request("sediment.replay", []byte(fmt.Sprintf(`{"from":%d,"i":%d,"count":10000}`, from, fromI)), 10*time.Second)
		if err != nil {
			t.Fatalf("replay from %d/%d: %v", from, fromI, err)
		}
		if len(msg.Data) > int(nc.MaxPayload()) {
			t.Fatalf("a reply of %d bytes, over max_payload %d", len(msg.Data), nc.MaxPayload())
		}
		if pages == 0 && !bytes.Contains(msg.Data, []byte(`"key":"key:<0>&"`)) {
			t.Fatalf("the first page does not hold the first key as the feed writes it: %.300s", msg.Data)
		}
		var rep struct {
			Next   uint64            `json:"next"`
			NextI  int               `json:"next_i"`
			Events []json.RawMessage `json:"events"`
			Error  string            `json:"error"`
		}
		if err := json.Unmarshal(msg.Data, &rep); err != nil || rep.Error != "" {
			t.Fatalf("replay reply: %v %s", err, rep.Error)
		}
		total += len(rep.Events)
		if rep.Next == from && rep.NextI == fromI {
			break
		}
		from, fromI = rep.Next, rep.NextI
	}
	if total != 32000 {
		t.Fatalf("%d events replayed, want 32000", total)
	}
}
