package broker

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/feed"
)

// jsMsg is one message of a capture's stream.
type jsMsg struct {
	subject, id string
	m           feed.Message
}

// readJetStream reads every message of stream on nc with a nats.go
// ordered consumer, in the stream's order.
func readJetStream(t *testing.T, nc *nats.Conn, stream string) []jsMsg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	total := s.CachedInfo().State.Msgs
	cons, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var out []jsMsg
	for uint64(len(out)) < total {
		batch, err := cons.Fetch(1000, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for msg := range batch.Messages() {
			m, err := feed.Decode(msg.Data())
			if err != nil {
				t.Fatalf("%s: %v", msg.Subject(), err)
			}
			out = append(out, jsMsg{subject: msg.Subject(), id: msg.Headers().Get(jetstream.MsgIDHeader), m: m})
		}
		if ctx.Err() != nil {
			t.Fatalf("read %d of the stream's %d messages", len(out), total)
		}
	}
	return out
}

// checkJetStream checks that msgs hold every event of ts's records
// from..LastSeq exactly once, in change-log order, each with its message
// ID (the record's ULID, "-i" after it when the record has several
// events).
func checkJetStream(t *testing.T, ts *testServer, msgs []jsMsg, from uint64) {
	t.Helper()
	k := 0
	err := ts.store.ChangeLog(from, func(r codec.Record) bool {
		u := ulid.ULID(r.ULID).String()
		for i := range r.Events {
			id := u
			if len(r.Events) > 1 {
				id = u + "-" + strconv.Itoa(i)
			}
			if k >= len(msgs) {
				t.Fatalf("the stream ends before record %d event %d", r.Seq, i)
			}
			g := msgs[k].m
			if g.Seq != r.Seq || g.I != i || g.N != len(r.Events) || g.ULID != u || msgs[k].id != id {
				t.Fatalf("message %d: record %d event %d/%d ulid %s id %q; want record %d event %d/%d ulid %s id %q",
					k, g.Seq, g.I, g.N, g.ULID, msgs[k].id, r.Seq, i, len(r.Events), u, id)
			}
			k++
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if k != len(msgs) {
		t.Fatalf("the stream holds %d messages; the change log's records hold %d events", len(msgs), k)
	}
}

// waitFeedCaptured waits until INFO says the capture stored every record
// committed (changelog_last_seq), and returns that sequence.
func waitFeedCaptured(t *testing.T, c *redis.Client, within time.Duration) uint64 {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		f := infoFields(c.Info(context.Background(), "persistence").Val())
		if f["sediment_feed_captured_seq"] == f["changelog_last_seq"] && f["sediment_feed_capture_lag_records"] == "0" {
			n, _ := strconv.ParseUint(f["changelog_last_seq"], 10, 64)
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("not captured within %v: captured %s of %s", within, f["sediment_feed_captured_seq"], f["changelog_last_seq"])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestFeedJetStreamEmbedded: with FeedJetStream and the embedded NATS
// server, JetStream runs in it, storing in <dir>/jetstream; a nats.go
// consumer of the stream reads every event once, in order, with the
// record's ULID as message ID (and "-i" for an EXEC's events); INFO
// reports the stream, the captured sequence and no lag.
func TestFeedJetStreamEmbedded(t *testing.T) {
	ts := newTestServer(t, func(o *Options) { o.FeedJetStream = "FEED" })
	c := ts.client(t)
	ctx := context.Background()
	mustDo(t, c, "SET", "k", "v1")
	mustDo(t, c, "HSET", "h", "f", "v", "g", "w")
	if _, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "a", "1", 0)
		p.Incr(ctx, "a")
		p.XAdd(ctx, &redis.XAddArgs{Stream: "s", Values: []string{"f", "v"}})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	mustDo(t, c, "DEL", "k")
	last := waitFeedCaptured(t, c, 10*time.Second)
	if last < 4 {
		t.Fatalf("changelog_last_seq %d after 4 writes", last)
	}
	f := infoFields(c.Info(ctx, "persistence").Val())
	if f["sediment_feed_jetstream"] != "FEED" || f["sediment_feed_lag_seconds"] != "0.000" || f["sediment_feed_lag_records"] != "0" {
		t.Errorf("INFO persistence: jetstream %q lag %q s %q records", f["sediment_feed_jetstream"], f["sediment_feed_lag_seconds"], f["sediment_feed_lag_records"])
	}
	if fi, err := os.Stat(filepath.Join(ts.dir, "jetstream")); err != nil || !fi.IsDir() {
		t.Errorf("no JetStream store in the data directory: %v", err)
	}
	nc, err := nats.Connect("", nats.InProcessServer(ts.wake.ns))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	msgs := readJetStream(t, nc, "FEED")
	checkJetStream(t, ts, msgs, 1)
	multi := 0
	for _, m := range msgs {
		if m.m.N > 1 && m.m.Op == "set-meta" && m.m.Key != nil && *m.m.Key == "a" {
			multi++
		}
	}
	if multi == 0 {
		t.Error("no event of the EXEC's record in the stream")
	}
}

// TestFeedJetStreamInMemory: an in-memory server's embedded JetStream
// stores in a temporary directory, removed at Close.
func TestFeedJetStreamInMemory(t *testing.T) {
	s, err := New(Options{InMemory: true, FeedJetStream: "FEED"})
	if err != nil {
		t.Fatal(err)
	}
	dir := s.jsTemp
	if fi, err := os.Stat(dir); dir == "" || err != nil || !fi.IsDir() {
		t.Fatalf("no temporary JetStream store (%q): %v", dir, err)
	}
	s.Close()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the temporary JetStream store %s is left after Close: %v", dir, err)
	}
}

// TestFeedJetStreamNATSRestart: 4 clients write (XADD, SET) while the
// external NATS server holding the capture's stream stops and starts
// again on the same address and store: every write succeeds, INFO shows
// the capture's lag meanwhile, and once NATS is back the capture catches
// up: the stream holds every event of every record once, in order.
func TestFeedJetStreamNATSRestart(t *testing.T) {
	jsDir := t.TempDir()
	startNS := func(port int) *natsserver.Server {
		ns, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: jsDir, NoLog: true, NoSigs: true})
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
	ns := startNS(-1)
	url, port := ns.ClientURL(), ns.Addr().(*net.TCPAddr).Port
	ts := newTestServer(t, func(o *Options) {
		o.NATSURL = url
		o.NATSOptions = append(o.NATSOptions, nats.ReconnectWait(50*time.Millisecond))
		o.FeedJetStream = "FEED"
	})
	admin := ts.client(t)
	ctx := context.Background()

	var (
		stop   atomic.Bool
		writes atomic.Int64
		wg     sync.WaitGroup
		errs   = make(chan error, 4)
	)
	for w := range 4 {
		c := ts.client(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				var err error
				if i%2 == 0 {
					err = c.XAdd(ctx, &redis.XAddArgs{Stream: fmt.Sprintf("s%d", w), Values: []string{"i", strconv.Itoa(i)}}).Err()
				} else {
					err = c.Set(ctx, fmt.Sprintf("k%d:%d", w, i%50), i, 0).Err()
				}
				if err != nil {
					errs <- fmt.Errorf("client %d, write %d: %w", w, i, err)
					return
				}
				writes.Add(1)
			}
		}()
	}
	waitWrites := func(n int64) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for target := writes.Load() + n; writes.Load() < target; {
			select {
			case err := <-errs:
				t.Fatal(err)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("fewer than %d writes within 20 s", n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitWrites(500)
	ns.Shutdown()
	ns.WaitForShutdown()
	waitWrites(1000) // NATS away: writes go on
	time.Sleep(300 * time.Millisecond)
	f := infoFields(admin.Info(ctx, "persistence").Val())
	if lag, _ := strconv.ParseUint(f["sediment_feed_capture_lag_records"], 10, 64); lag == 0 {
		t.Errorf("capture lag 0 records with NATS down: %v", f)
	}
	if lag, _ := strconv.ParseFloat(f["sediment_feed_lag_seconds"], 64); lag < 0.2 {
		t.Errorf("feed lag %s s with NATS down for more than 300 ms", f["sediment_feed_lag_seconds"])
	}
	startNS(port)
	waitWrites(500) // NATS back
	stop.Store(true)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	waitFeedCaptured(t, admin, 60*time.Second)
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	checkJetStream(t, ts, readJetStream(t, nc, "FEED"), 1)
}

// TestFeedJetStreamFeedAuth: the capture works on the embedded server
// with its access control on (Sediment's own user has JetStream), and the
// feed user still follows the core subjects.
func TestFeedJetStreamFeedAuth(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ts := newTestServer(t, func(o *Options) { o.NATSListen = addr; o.NATSFeedPassword = "fp"; o.FeedJetStream = "FEED" })
	nc, err := nats.Connect("nats://"+addr, nats.UserInfo("feed", "fp"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	sub, err := nc.SubscribeSync("sediment.chg.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	c := ts.client(t)
	mustDo(t, c, "SET", "k", "v")
	if _, err := sub.NextMsg(5 * time.Second); err != nil {
		t.Fatalf("the feed user got no core message: %v", err)
	}
	waitFeedCaptured(t, c, 10*time.Second)
	// Read through Sediment's own connection: the feed user may not use
	// the JetStream API (docs/change-feed.md).
	checkJetStream(t, ts, readJetStream(t, ts.wake.nc, "FEED"), 1)
}
