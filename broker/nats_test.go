package broker

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/redis/go-redis/v9"
)

// startNATS runs an external NATS server on a random loopback port until
// the test ends.
func startNATS(t testing.TB) *natsserver.Server {
	t.Helper()
	ns, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS server not ready")
	}
	return ns
}

// watchWakes subscribes another NATS client of url to every wake subject,
// until the test ends.
func watchWakes(t testing.TB, url string) *nats.Subscription {
	t.Helper()
	observer, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(observer.Close)
	wakes, err := observer.SubscribeSync("sediment.wake.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := observer.Flush(); err != nil {
		t.Fatal(err)
	}
	return wakes
}

// blockXRead starts an XREAD BLOCK of key from on c and returns once the
// server counts it blocked (admin asks); the reply arrives on the channel.
func blockXRead(t testing.TB, c, admin *redis.Client, key, from string) chan []redis.XStream {
	t.Helper()
	got := make(chan []redis.XStream, 1)
	go func() {
		r, _ := c.XRead(context.Background(), &redis.XReadArgs{Streams: []string{key, from}, Block: 10 * time.Second}).Result()
		got <- r
	}()
	waitBlocked(t, admin, 1)
	return got
}

// expectWoken checks that a blockXRead got one entry, id, within 5 s.
func expectWoken(t testing.TB, got chan []redis.XStream, id string) {
	t.Helper()
	select {
	case r := <-got:
		if len(r) != 1 || len(r[0].Messages) != 1 || r[0].Messages[0].ID != id {
			t.Fatalf("woken with %v, want %s", r, id)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("blocked XREAD not woken with %s", id)
	}
}

// TestExternalNATS runs Sediment against an external NATS server
// (--nats-url): a blocked XREADGROUP is woken by an XADD from another client,
// and the wake is visible to any other NATS subscriber, which is how several
// Sediment processes on one NATS cluster wake each other's clients.
func TestExternalNATS(t *testing.T) {
	ns := startNATS(t)
	wakes := watchWakes(t, ns.ClientURL())

	ts := newTestServer(t, func(o *Options) { o.NATSURL = ns.ClientURL() })
	c := ts.client(t)
	ctx := context.Background()
	mustDo(t, c, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")

	got := make(chan []redis.XStream, 1)
	go func() {
		r, _ := c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "c", Streams: []string{"s", ">"}, Block: 10 * time.Second}).Result()
		got <- r
	}()
	admin := ts.client(t)
	waitBlocked(t, admin, 1)
	mustDo(t, admin, "XADD", "s", "1-1", "f", "v")
	select {
	case r := <-got:
		if len(r) != 1 || len(r[0].Messages) != 1 || r[0].Messages[0].ID != "1-1" {
			t.Fatalf("woken with %v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("blocked XREADGROUP not woken through the external NATS server")
	}
	msg, err := wakes.NextMsg(5 * time.Second)
	if err != nil {
		t.Fatalf("no wake seen on the external NATS server: %v", err)
	}
	if want := wakeSubject(0, []byte("s")); msg.Subject != want {
		t.Fatalf("wake subject %q, want %q", msg.Subject, want)
	}
}

// TestExternalNATSDown: with an external NATS server that goes away,
// writes keep working and this server's blocked readers are still woken
// (locally, while the connection is down); a reader that blocks while NATS
// is down waits rather than failing; once NATS is back on the same
// address, wakes go through it again.
func TestExternalNATSDown(t *testing.T) {
	opts := &natsserver.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true}
	ns, err := natsserver.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS server not ready")
	}
	url := ns.ClientURL()
	ts := newTestServer(t, func(o *Options) {
		o.NATSURL = url
		o.NATSOptions = append(o.NATSOptions, nats.ReconnectWait(50*time.Millisecond))
	})
	c, admin := ts.client(t), ts.client(t)
	blockRead := func(key, from string) chan []redis.XStream { return blockXRead(t, c, admin, key, from) }
	woken := func(got chan []redis.XStream, id string) { t.Helper(); expectWoken(t, got, id) }

	// Blocked before NATS goes away, woken by a write while it is away.
	got := blockRead("s", "$")
	ns.Shutdown()
	ns.WaitForShutdown()
	mustDo(t, admin, "XADD", "s", "1-1", "f", "v")
	woken(got, "1-1")
	// Blocked while NATS is away.
	got = blockRead("s", "1-1")
	mustDo(t, admin, "XADD", "s", "2-1", "f", "v")
	woken(got, "2-1")

	// NATS back on the same address: wakes go through it again, and other
	// subscribers see them.
	ns2, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: opts.Port, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	ns2.Start()
	defer ns2.Shutdown()
	if !ns2.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS server not ready again")
	}
	deadline := time.Now().Add(10 * time.Second)
	for !ts.wake.nc.IsConnected() {
		if time.Now().After(deadline) {
			t.Fatal("not reconnected to NATS within 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	wakes := watchWakes(t, url)
	got = blockRead("s", "2-1")
	mustDo(t, admin, "XADD", "s", "3-1", "f", "v")
	woken(got, "3-1")
	if _, err := wakes.NextMsg(5 * time.Second); err != nil {
		t.Fatalf("no wake on NATS after it came back: %v", err)
	}
}

// TestEmbeddedNATSFeedAuth: with a feed password, the embedded NATS
// listener refuses a client without credentials; the "feed" user follows
// the change feed but may neither subscribe to the wake subjects nor
// publish; the server's own wake-ups still work.
func TestEmbeddedNATSFeedAuth(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ts := newTestServer(t, func(o *Options) { o.NATSListen = addr; o.NATSFeedPassword = "fp" })
	url := "nats://" + addr
	if nc, err := nats.Connect(url); err == nil {
		nc.Close()
		t.Fatal("a client without credentials was admitted")
	}
	if nc, err := nats.Connect(url, nats.UserInfo("feed", "wrong")); err == nil {
		nc.Close()
		t.Fatal("a wrong feed password was admitted")
	}
	denied := make(chan error, 4)
	nc, err := nats.Connect(url, nats.UserInfo("feed", "fp"), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { denied <- err }))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	changes, err := nc.SubscribeSync("sediment.chg.>")
	if err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	c := ts.client(t)
	mustStr(t, c, "OK", "SET", "k", "v")
	if _, err := changes.NextMsg(5 * time.Second); err != nil {
		t.Fatalf("the feed user saw no change: %v", err)
	}
	// It may ask for a replay (a request on sediment.replay, the reply
	// on its inbox).
	if msg, err := nc.Request("sediment.replay", []byte(`{"from":0}`), 5*time.Second); err != nil || !strings.Contains(string(msg.Data), `"events":[{`) {
		t.Fatalf("the feed user's replay request: %v %v", msg, err)
	}
	for _, try := range []func() error{
		func() error { _, err := nc.SubscribeSync("sediment.wake.>"); nc.Flush(); return err },
		func() error { err := nc.Publish("sediment.wake.flush", nil); nc.Flush(); return err },
	} {
		if err := try(); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-denied:
			if !strings.Contains(err.Error(), "Permissions Violation") {
				t.Fatalf("want a permissions violation, got %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the feed user was allowed beyond the change feed")
		}
	}
	// Blocked readers are still woken through the server's own connection.
	admin := ts.client(t)
	got := blockXRead(t, c, admin, "s", "$")
	mustDo(t, admin, "XADD", "s", "1-1", "f", "v")
	expectWoken(t, got, "1-1")
	if _, err := New(Options{InMemory: true, NATSFeedPassword: "x"}); err == nil {
		t.Fatal("a feed password without a NATS listener was accepted")
	}
}
