package broker

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// pubsubClient returns a go-redis client of addr speaking proto (2 or 3).
func pubsubClient(t testing.TB, addr string, proto int) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: proto, MaxRetries: -1, ReadTimeout: 10 * time.Second})
	t.Cleanup(func() { c.Close() })
	return c
}

// TestGoRedisPubSub uses go-redis's PubSub API as applications do (a
// control channel beside data commands), in RESP2 and RESP3: messages in
// publish order, pattern messages, and a write pipelined before its
// PUBLISH visible to the subscriber that got the message.
func TestGoRedisPubSub(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprint("resp", proto), func(t *testing.T) {
			sub := pubsubClient(t, ts.addr, proto)
			pub := pubsubClient(t, ts.addr, proto)
			ps := sub.Subscribe(ctx, "events")
			defer ps.Close()
			if _, err := ps.Receive(ctx); err != nil { // the confirmation
				t.Fatal(err)
			}
			if err := ps.PSubscribe(ctx, "jobs.*"); err != nil {
				t.Fatal(err)
			}
			ch := ps.Channel()
			const n = 500
			for i := range n {
				// The state written before a message is visible to its receiver.
				if _, err := pub.Pipelined(ctx, func(p redis.Pipeliner) error {
					p.Set(ctx, fmt.Sprint("k", i), i, 0)
					p.Publish(ctx, "events", fmt.Sprint(i))
					return nil
				}); err != nil {
					t.Fatal(err)
				}
			}
			for i := range n {
				select {
				case m := <-ch:
					if m.Channel != "events" || m.Payload != fmt.Sprint(i) {
						t.Fatalf("message %d: %s %q", i, m.Channel, m.Payload)
					}
					if v, err := pub.Get(ctx, fmt.Sprint("k", i)).Result(); err != nil || v != m.Payload {
						t.Fatalf("k%d = %q, %v after its message", i, v, err)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("message %d not received", i)
				}
			}
			if got, err := pub.Publish(ctx, "jobs.build", "go").Result(); err != nil || got != 1 {
				t.Fatalf("PUBLISH jobs.build = %d, %v", got, err)
			}
			select {
			case m := <-ch:
				if m.Pattern != "jobs.*" || m.Channel != "jobs.build" || m.Payload != "go" {
					t.Fatalf("pattern message %+v", m)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("pattern message not received")
			}
			if got, err := pub.PubSubNumSub(ctx, "events").Result(); err != nil || got["events"] != 1 {
				t.Fatalf("PUBSUB NUMSUB = %v, %v", got, err)
			}
		})
	}
}

// TestPubSubAcrossProcesses runs two Sediment servers on one external NATS
// server: a message published on either reaches the subscribers of both,
// in order. PUBLISH counts the publishing process's subscribers only
// (docs/pubsub.md).
func TestPubSubAcrossProcesses(t *testing.T) {
	ns := startNATS(t)
	url := func(o *Options) { o.NATSURL = ns.ClientURL() }
	a, b := newTestServer(t, url), newTestServer(t, url)
	ctx := context.Background()

	subA := pubsubClient(t, a.addr, 3).Subscribe(ctx, "ch")
	defer subA.Close()
	subB := pubsubClient(t, b.addr, 2).PSubscribe(ctx, "c*")
	defer subB.Close()
	for _, s := range []*redis.PubSub{subA, subB} {
		if _, err := s.Receive(ctx); err != nil {
			t.Fatal(err)
		}
	}
	pubA, pubB := pubsubClient(t, a.addr, 2), pubsubClient(t, b.addr, 3)
	const n = 200
	for i := range n {
		pub := pubA
		want := int64(1) // subA on a
		if i%2 == 1 {
			pub = pubB // subB's pattern on b
		}
		if got, err := pub.Publish(ctx, "ch", fmt.Sprint(i)).Result(); err != nil || got != want {
			t.Fatalf("PUBLISH %d = %d, %v, want %d", i, got, err, want)
		}
	}
	for _, s := range []*redis.PubSub{subA, subB} {
		ch := s.Channel()
		// Each process's messages arrive in its publish order; the two
		// processes' messages interleave as the NATS server received them.
		next := [2]int{0, 1} // the next even (from a) and odd (from b) message
		for range n {
			select {
			case m := <-ch:
				var i int
				fmt.Sscan(m.Payload, &i)
				if i != next[i%2] {
					t.Fatalf("message %d arrived when %d was due from its process", i, next[i%2])
				}
				next[i%2] += 2
			case <-time.After(10 * time.Second):
				t.Fatalf("messages %v not received across processes", next)
			}
		}
	}
}

// TestPubSubSlowSubscriber: a subscriber that never reads is disconnected
// once its undelivered messages pass the pubsub output buffer limit, while
// the publisher is not slowed and another subscriber gets every message.
func TestPubSubSlowSubscriber(t *testing.T) {
	ts := newTestServer(t, func(o *Options) {
		o.PubSubLimit = PubSubLimit{Hard: 1 << 20, Soft: 512 << 10, SoftFor: time.Hour}
	})
	ctx := context.Background()

	// The slow one: subscribes over a raw connection and never reads again.
	slow, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	if tc, ok := slow.(*net.TCPConn); ok {
		tc.SetReadBuffer(4 << 10)
	}
	fmt.Fprint(slow, "*2\r\n$9\r\nSUBSCRIBE\r\n$1\r\nc\r\n")
	line, err := bufio.NewReader(slow).ReadString('\n')
	if err != nil || line != "*3\r\n" {
		t.Fatalf("SUBSCRIBE reply %q, %v", line, err)
	}
	fast := pubsubClient(t, ts.addr, 3).Subscribe(ctx, "c")
	defer fast.Close()
	if _, err := fast.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	// The reading subscriber takes each batch of 100 before the next is
	// published, so that only the slow one can pass the limit.
	var got atomic.Int64
	go func() {
		for range fast.Channel(redis.WithChannelSize(1 << 16)) {
			got.Add(1)
		}
	}()
	pub := pubsubClient(t, ts.addr, 2)
	msg := strings.Repeat("x", 4<<10)
	for i := range 4000 { // 16 MB in all: far past the slow one's 1 MB
		if err := pub.Publish(ctx, "c", msg).Err(); err != nil {
			t.Fatalf("PUBLISH %d: %v", i, err)
		}
		if (i+1)%100 == 0 {
			deadline := time.Now().Add(30 * time.Second)
			for got.Load() < int64(i+1) {
				if time.Now().After(deadline) {
					t.Fatalf("the reading subscriber got %d of %d", got.Load(), i+1)
				}
				time.Sleep(time.Millisecond)
			}
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		info := pub.Info(ctx, "stats").Val()
		if strings.Contains(info, "client_output_buffer_limit_disconnections:1") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the slow subscriber was not disconnected:\n%s", info)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := pub.PubSubNumSub(ctx, "c").Val()["c"]; got != 1 {
		t.Fatalf("PUBSUB NUMSUB c = %d after the disconnection, want 1", got)
	}
}

// TestUnsubscribeOrder: while publishers flood a channel, a RESP2 client
// that unsubscribes gets no message after the confirmation: the PING sent
// after it is answered +PONG, as in Redis.
func TestUnsubscribeOrder(t *testing.T) {
	ts := newTestServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for range 3 {
		pub := pubsubClient(t, ts.addr, 2)
		go func() {
			for ctx.Err() == nil {
				pub.Publish(ctx, "ch", "x")
			}
		}()
	}
	c := confDial(t, ts.addr)
	for round := range 300 {
		if r, err := c.do("SUBSCRIBE", "ch"); err != nil || r.kind != confArray {
			t.Fatalf("round %d: SUBSCRIBE = %v, %v", round, r, err)
		}
		// Wait for a message: the flood is on while unsubscribing.
		if r, err := psRead(c); err != nil || r.kind != confArray || r.arr[0].str != "message" {
			t.Fatalf("round %d: %v, %v; want a message", round, r, err)
		}
		fmt.Fprint(c.nc, "*2\r\n$11\r\nUNSUBSCRIBE\r\n$2\r\nch\r\n*1\r\n$4\r\nPING\r\n")
		for {
			r, err := psRead(c)
			if err != nil {
				t.Fatal(err)
			}
			if r.kind == confArray && len(r.arr) == 3 && r.arr[0].str == "unsubscribe" {
				break
			}
		}
		if r, err := psRead(c); err != nil || r.kind != confSimple || r.str != "PONG" {
			t.Fatalf("round %d: after the UNSUBSCRIBE confirmation: %v, %v; want +PONG", round, r, err)
		}
	}
}
