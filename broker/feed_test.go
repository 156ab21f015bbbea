package broker

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/redis/go-redis/v9"

	"github.com/sediment-dev/sediment/feed"
)

// feedSub subscribes a nats.go client of ts's embedded NATS server to
// subject and returns the channel of its messages.
func feedSub(t *testing.T, ts *testServer, subject string) <-chan *nats.Msg {
	t.Helper()
	nc, err := nats.Connect("", nats.InProcessServer(ts.wake.ns))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	ch := make(chan *nats.Msg, 1024)
	if _, err := nc.ChanSubscribe(subject, ch); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return ch
}

// nextFeed returns the next message of ch, decoded.
func nextFeed(t *testing.T, ch <-chan *nats.Msg) (string, feed.Message) {
	t.Helper()
	select {
	case m := <-ch:
		fm, err := feed.Decode(m.Data)
		if err != nil {
			t.Fatalf("%s: %v: %s", m.Subject, err, m.Data)
		}
		return m.Subject, fm
	case <-time.After(5 * time.Second):
		t.Fatal("no change-feed message within 5 s")
	}
	return "", feed.Message{}
}

// TestChangeFeed: every committed write reaches a nats.go subscriber as
// events in change-log order, on subjects naming db, type and key, with
// the documented payload.
func TestChangeFeed(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	ctx := context.Background()
	all := feedSub(t, ts, "sediment.chg.>")
	hashes := feedSub(t, ts, "sediment.chg.0.hash.>")

	mustDo(t, c, "SET", "k", "v1")
	subj, m := nextFeed(t, all)
	if subj != "sediment.chg.0.string.k" || m.Op != "set-meta" || m.Type != "string" || *m.Key != "k" ||
		m.Meta == nil || m.Meta.Value64 != "djE=" || *m.DB != 0 || m.N != 1 || m.I != 0 || len(m.ULID) != 26 || m.Ms == 0 {
		t.Fatalf("SET k v1: %s %+v", subj, m)
	}
	seq := m.Seq

	mustDo(t, c, "HSET", "h", "f", "x")
	for _, want := range []string{"hset", "set-meta"} {
		subj, m = nextFeed(t, all)
		if subj != "sediment.chg.0.hash.h" || m.Op != want || m.Seq != seq+1 || m.N != 2 {
			t.Fatalf("HSET h f x: %s %+v, want op %s at seq %d", subj, m, want, seq+1)
		}
		if hsubj, _ := nextFeed(t, hashes); hsubj != subj {
			t.Fatalf("the hash filter got %s", hsubj)
		}
	}
	if ev, err := m.Event(); err != nil || string(ev.Key) != "h" {
		t.Fatalf("Message.Event: %+v, %v", ev, err)
	}

	// One EXEC: one sequence number, its events together, in order.
	if _, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "a", "1", 0)
		p.Del(ctx, "k")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	s1, m1 := nextFeed(t, all)
	s2, m2 := nextFeed(t, all)
	if s1 != "sediment.chg.0.string.a" || s2 != "sediment.chg.0.string.k" || m1.Seq != seq+2 || m2.Seq != seq+2 ||
		m1.N != 2 || m2.I != 1 || m2.Op != "del" {
		t.Fatalf("EXEC: %s %+v; %s %+v", s1, m1, s2, m2)
	}

	// An odd key: escaped in the subject, whole in the payload.
	odd := "a.b *>\x00%"
	mustDo(t, c, "SADD", odd, "m")
	subj, m = nextFeed(t, all)
	if subj != "sediment.chg.0.set.a%2Eb%20%2A%3E%00%25" || *m.Key != odd {
		t.Fatalf("SADD of an odd key: %s %+v", subj, m)
	}
	nextFeed(t, all) // its set-meta

	// A stream entry, another db, FLUSHDB, SWAPDB, FLUSHALL.
	id := mustDo(t, c, "XADD", "s", "*", "f", "v").(string)
	subj, m = nextFeed(t, all)
	args, _ := m.ArgBytes()
	if subj != "sediment.chg.0.stream.s" || m.Op != "xadd" || len(args) != 3 || string(args[1]) != "f" {
		t.Fatalf("XADD s %s: %s %+v", id, subj, m)
	}
	nextFeed(t, all) // the stream's set-meta
	c1 := redis.NewClient(&redis.Options{Addr: ts.addr, DB: 1, Protocol: 2, DisableIdentity: true})
	defer c1.Close()
	c1.Set(ctx, "x", "y", 0)
	if subj, _ = nextFeed(t, all); subj != "sediment.chg.1.string.x" {
		t.Fatalf("SET in db 1: %s", subj)
	}
	mustDo(t, c, "SWAPDB", "0", "1")
	if subj, m = nextFeed(t, all); subj != "sediment.chg.0.db.swapdb" || m.Op != "swapdb" {
		t.Fatalf("SWAPDB 0 1: %s %+v", subj, m)
	}
	c1.Set(ctx, "z", "w", 0) // db 1 now holds what db 0 held: subjects name logical dbs
	if subj, _ = nextFeed(t, all); subj != "sediment.chg.1.string.z" {
		t.Fatalf("SET in db 1 after SWAPDB: %s", subj)
	}
	mustDo(t, c, "FLUSHDB")
	if subj, m = nextFeed(t, all); subj != "sediment.chg.0.db.flushdb" || *m.DB != 0 {
		t.Fatalf("FLUSHDB: %s %+v", subj, m)
	}
	// Expiry deletes through the log too.
	mustDo(t, c, "SET", "e", "v", "PX", "30")
	if subj, m = nextFeed(t, all); subj != "sediment.chg.0.string.e" || m.Meta.ExpireAtMs == 0 {
		t.Fatalf("SET e v PX 30: %s %+v", subj, m)
	}
	if subj, m = nextFeed(t, all); subj != "sediment.chg.0.string.e" || m.Op != "del" || m.Reason != "expired" {
		t.Fatalf("the expiry of e: %s %+v", subj, m)
	}
	// A deletion by a command names no reason, nor does EXPIRE with a time
	// already passed (Redis's "del" event, not "expired").
	mustDo(t, c, "SET", "d", "v")
	nextFeed(t, all)
	mustDo(t, c, "DEL", "d")
	if subj, m = nextFeed(t, all); subj != "sediment.chg.0.string.d" || m.Op != "del" || m.Reason != "" {
		t.Fatalf("DEL d: %s %+v", subj, m)
	}
	mustDo(t, c, "SET", "d", "v")
	nextFeed(t, all)
	mustDo(t, c, "EXPIRE", "d", "0")
	if subj, m = nextFeed(t, all); subj != "sediment.chg.0.string.d" || m.Op != "del" || m.Reason != "" {
		t.Fatalf("EXPIRE d 0: %s %+v", subj, m)
	}
	mustDo(t, c, "FLUSHALL")
	if subj, m = nextFeed(t, all); subj != "sediment.chg.all.db.flushall" || m.DB != nil {
		t.Fatalf("FLUSHALL: %s %+v", subj, m)
	}
	select {
	case m := <-all:
		t.Fatalf("an extra message: %s %s", m.Subject, m.Data)
	case <-time.After(100 * time.Millisecond):
	}
}

// TestChangeFeedFirstSubscriber: with nobody connected to the embedded
// NATS server the publisher reads nothing; a client that then connects,
// subscribes and writes sees its write, and not the writes before it
// connected.
func TestChangeFeedFirstSubscriber(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	mustDo(t, c, "SET", "before", "1")
	deadline := time.Now().Add(5 * time.Second)
	for ts.feed.Published() < ts.store.LastSeq() { // the publisher took its place after it
		if time.Now().After(deadline) {
			t.Fatal("the idle publisher did not take its place")
		}
		time.Sleep(5 * time.Millisecond)
	}
	ch := feedSub(t, ts, "sediment.chg.>")
	mustDo(t, c, "SET", "after", "2")
	if subj, _ := nextFeed(t, ch); subj != "sediment.chg.0.string.after" {
		t.Fatalf("the first message after subscribing is %s", subj)
	}
}

// TestChangeFeedLargeValue: an event larger than NATS's max_payload goes
// truncated (no args, no value), and the feed goes on after it.
func TestChangeFeedLargeValue(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	ch := feedSub(t, ts, "sediment.chg.>")
	big := make([]byte, 600<<10) // base64 twice in the payload: past 1 MB
	for i := range big {
		big[i] = 'x'
	}
	mustDo(t, c, "SET", "big", string(big))
	mustDo(t, c, "SET", "small", "v")
	subj, m := nextFeed(t, ch)
	if subj != "sediment.chg.0.string.big" || !m.Truncated || len(m.Args) != 0 || m.Meta == nil || m.Meta.Value64 != "" || m.Meta.Type != "string" {
		t.Fatalf("the large SET: %s %+v", subj, m)
	}
	if subj, m = nextFeed(t, ch); subj != "sediment.chg.0.string.small" || m.Truncated || m.Meta.Value64 != "dg==" {
		t.Fatalf("the SET after it: %s %+v", subj, m)
	}
}
