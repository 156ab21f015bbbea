package broker

import (
	"context"
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

// TestExternalNATS runs Sediment against an external NATS server
// (--nats-url): a blocked XREADGROUP is woken by an XADD from another client,
// and the wake is visible to any other NATS subscriber, which is how several
// Sediment processes on one NATS cluster wake each other's clients.
func TestExternalNATS(t *testing.T) {
	ns := startNATS(t)

	observer, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer observer.Close()
	wakes, err := observer.SubscribeSync("sediment.wake.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := observer.Flush(); err != nil {
		t.Fatal(err)
	}

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
