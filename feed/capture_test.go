package feed_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/feed"
	"github.com/sediment-dev/sediment/materialize"
)

// startJetStream runs a NATS server with JetStream storing in dir, on
// port (-1: a free one), until it is shut down or the test ends.
func startJetStream(t testing.TB, dir string, port int) *natsserver.Server {
	t.Helper()
	ns, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: dir,
		NoLog: true, NoSigs: true})
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

// memStore opens an in-memory store, closed when the test ends.
func memStore(t testing.TB) *materialize.Store {
	t.Helper()
	st, err := materialize.Open(materialize.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// jetStreamConn starts a JetStream server in a temporary directory and
// connects to it; the connection closes when the test ends.
func jetStreamConn(t testing.TB) (*natsserver.Server, *nats.Conn) {
	t.Helper()
	ns := startJetStream(t, t.TempDir(), -1)
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return ns, nc
}

// capturedMsg is one message of the capture's stream.
type capturedMsg struct {
	subject, id string
	m           feed.Message
}

// readStream reads every message of stream with an ordered consumer, in
// the stream's order.
func readStream(t testing.TB, nc *nats.Conn, stream string) []capturedMsg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
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
	var out []capturedMsg
	for uint64(len(out)) < total {
		batch, err := cons.Fetch(500, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for msg := range batch.Messages() {
			n++
			m, err := feed.Decode(msg.Data())
			if err != nil {
				t.Fatalf("%s: %v", msg.Subject(), err)
			}
			out = append(out, capturedMsg{subject: msg.Subject(), id: msg.Headers().Get(jetstream.MsgIDHeader), m: m})
		}
		if n == 0 && ctx.Err() != nil {
			t.Fatalf("read %d of the stream's %d messages", len(out), total)
		}
	}
	return out
}

// checkCaptured checks that msgs are the events of st's records from..to
// (the whole of each, but first's events before firstI), each once, in
// change-log order, with the documented message IDs.
func checkCaptured(t testing.TB, st *materialize.Store, msgs []capturedMsg, from uint64, firstI int, to uint64) {
	t.Helper()
	var want []capturedMsg
	err := st.ChangeLog(from, func(r codec.Record) bool {
		if r.Seq > to {
			return false
		}
		u := ulid.ULID(r.ULID).String()
		for i := range r.Events {
			if r.Seq == from && i < firstI {
				continue
			}
			id := u
			if len(r.Events) > 1 {
				id = fmt.Sprintf("%s-%d", u, i)
			}
			want = append(want, capturedMsg{id: id, m: feed.Message{Seq: r.Seq, I: i, N: len(r.Events), ULID: u}})
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != len(want) {
		t.Errorf("the stream holds %d messages, want %d (records %d..%d)", len(msgs), len(want), from, to)
	}
	for k := range min(len(msgs), len(want)) {
		g, w := msgs[k], want[k]
		if g.m.Seq != w.m.Seq || g.m.I != w.m.I || g.m.N != w.m.N || g.m.ULID != w.m.ULID || g.id != w.id {
			t.Fatalf("message %d: seq %d i %d/%d ulid %s id %q, want seq %d i %d/%d ulid %s id %q", k,
				g.m.Seq, g.m.I, g.m.N, g.m.ULID, g.id, w.m.Seq, w.m.I, w.m.N, w.m.ULID, w.id)
		}
	}
}

// runPublisher runs p until the test ends.
func runPublisher(t testing.TB, p *feed.Publisher) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return stop
}

// waitCaptured waits until c has captured every record of st committed
// so far.
func waitCaptured(t testing.TB, st *materialize.Store, c *feed.Capture, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for c.Captured() < st.LastSeq() {
		if time.Now().After(deadline) {
			t.Fatalf("captured up to %d of %d within %v", c.Captured(), st.LastSeq(), within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func write(t testing.TB, s *materialize.Store, evs ...codec.Event) uint64 {
	t.Helper()
	seq, err := s.Write(func(*materialize.View) ([]codec.Event, error) { return evs, nil })
	if err != nil {
		t.Fatal(err)
	}
	return seq
}

func setEvent(db uint8, key, v string) codec.Event {
	return codec.SetMetaEvent(db, []byte(key), strMeta(v), 0)
}

// TestCaptureExactlyOnceInOrder: a JetStream consumer reads every event of
// every record committed after the capture started exactly once, in
// change-log order, the events of one record (an EXEC's) under one ULID,
// through a window of in-flight messages smaller than the records; a
// SWAPDB's later events name the swapped db; Captured reaches the newest.
func TestCaptureExactlyOnceInOrder(t *testing.T) {
	st := memStore(t)
	write(t, st, setEvent(0, "before", "v")) // before the capture: not captured
	_, nc := jetStreamConn(t)
	ctx := context.Background()
	c, err := feed.NewCapture(ctx, nc, st, "p", feed.CaptureConfig{Stream: "FEED", MaxPending: 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := &feed.Publisher{Store: st, Prefix: "p", Capture: c, MaxPayload: int(nc.MaxPayload())}
	runPublisher(t, p)
	for i := range 200 {
		write(t, st, setEvent(0, fmt.Sprintf("k%d", i), "v"))
	}
	// An EXEC of 6 events, more than the window; then a SWAPDB.
	var exec []codec.Event
	for i := range 6 {
		exec = append(exec, setEvent(0, fmt.Sprintf("x%d", i), "v"))
	}
	write(t, st, exec...)
	write(t, st, codec.SwapDBEvent(0, 1), setEvent(1, "swapped", "v"))
	write(t, st, setEvent(1, "after", "v"))
	waitCaptured(t, st, c, 10*time.Second)
	msgs := readStream(t, nc, "FEED")
	checkCaptured(t, st, msgs, 2, 0, st.LastSeq())
	if got := msgs[len(msgs)-1].subject; got != "p.chg.0.string.after" {
		t.Errorf("the last event's subject is %q, want p.chg.0.string.after (db 0 after the swap)", got)
	}
	if lag := p.LagTime(time.Now()); lag != 0 {
		t.Errorf("LagTime %v with everything captured", lag)
	}
}

// TestCaptureNATSDownHoldsTheLog: while JetStream is unreachable, writes
// go on and the change log keeps every record not captured, whatever the
// retention (a count of 10 here); LagTime counts from the oldest of them.
// When NATS is back on the same address and store, the capture catches up
// (every record once, in order), and the retention then drops the
// captured records (a replay from the first is refused).
func TestCaptureNATSDownHoldsTheLog(t *testing.T) {
	st, err := materialize.Open(materialize.Options{InMemory: true, ChangeLogRetention: 10, ChangeLogSegmentSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	jsDir := t.TempDir()
	ns := startJetStream(t, jsDir, -1)
	url := ns.ClientURL()
	port := ns.Addr().(*net.TCPAddr).Port
	nc, err := nats.Connect(url, nats.ReconnectWait(50*time.Millisecond), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c, err := feed.NewCapture(context.Background(), nc, st, "p", feed.CaptureConfig{Stream: "FEED", AckTimeout: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := &feed.Publisher{Store: st, Prefix: "p", Capture: c, MaxPayload: int(nc.MaxPayload())}
	runPublisher(t, p)
	for i := range 50 {
		write(t, st, setEvent(0, fmt.Sprintf("a%d", i), "v"))
	}
	waitCaptured(t, st, c, 10*time.Second)

	ns.Shutdown()
	ns.WaitForShutdown()
	for i := range 600 {
		write(t, st, setEvent(0, fmt.Sprintf("b%d", i), "value"))
	}
	time.Sleep(200 * time.Millisecond) // pruning runs in the background
	captured := c.Captured()
	if captured >= st.LastSeq() {
		t.Fatalf("captured %d with NATS down, the newest is %d", captured, st.LastSeq())
	}
	if first := st.FirstSeq(); first > captured+1 {
		t.Fatalf("the oldest record kept is %d; the first not captured, %d, is gone", first, captured+1)
	}
	if _, _, err := feed.Replay(st, "p", feed.Cursor{Seq: captured + 1}, 10, feed.ReplayFilter{}, 0); err != nil {
		t.Fatalf("replay from the first record not captured: %v", err)
	}
	if lag := p.LagTime(time.Now()); lag < 150*time.Millisecond {
		t.Errorf("LagTime %v with NATS down for 200 ms", lag)
	}

	startJetStream(t, jsDir, port) // the same address and store
	waitCaptured(t, st, c, 30*time.Second)
	// One event a record: message k is record k+1's. The log keeps only
	// the records from the first not captured when NATS went down: their
	// ULIDs are checked too.
	msgs := readStream(t, nc, "FEED")
	for k, m := range msgs {
		if m.m.Seq != uint64(k+1) {
			t.Fatalf("message %d is record %d, want %d", k, m.m.Seq, k+1)
		}
	}
	first := st.FirstSeq()
	if first < 1 || int(first) > len(msgs) {
		t.Fatalf("the oldest record kept is %d; the stream holds %d", first, len(msgs))
	}
	checkCaptured(t, st, msgs[first-1:], first, 0, st.LastSeq())

	// Captured: the retention drops them now.
	deadline := time.Now().Add(10 * time.Second)
	for st.FirstSeq() <= captured {
		if time.Now().After(deadline) {
			t.Fatalf("the oldest record is still %d after the capture caught up", st.FirstSeq())
		}
		write(t, st, setEvent(0, "c", "v"))
		time.Sleep(10 * time.Millisecond)
	}
	var nr *feed.ErrNotRetained
	if _, _, err := feed.Replay(st, "p", feed.Cursor{Seq: 1}, 10, feed.ReplayFilter{}, 0); !errors.As(err, &nr) {
		t.Fatalf("replay from 1 after pruning: %v, want ErrNotRetained", err)
	}
}

// TestCaptureResumesWhereTheStreamEnds: a capture set up again (a
// restart: the store reopened on its directory) goes on after the
// stream's last message, inside a record when the stream holds only its
// first events (a crash between them): the records written meanwhile are
// captured, and nothing twice.
func TestCaptureResumesWhereTheStreamEnds(t *testing.T) {
	dir := t.TempDir()
	st, err := materialize.Open(materialize.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	_, nc := jetStreamConn(t)
	ctx := context.Background()
	c, err := feed.NewCapture(ctx, nc, st, "p", feed.CaptureConfig{Stream: "FEED"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	stop := runPublisher(t, &feed.Publisher{Store: st, Prefix: "p", Capture: c})
	for i := range 20 {
		write(t, st, setEvent(0, fmt.Sprintf("a%d", i), "v"))
	}
	waitCaptured(t, st, c, 10*time.Second)
	stop()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st, err = materialize.Open(materialize.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// Written while no publisher runs: a record of three events, whose
	// first alone reached the stream.
	seq := write(t, st, setEvent(0, "x0", "v"), setEvent(0, "x1", "v"), setEvent(0, "x2", "v"))
	var subj string
	var payload []byte
	var id string
	st.ChangeLog(seq, func(r codec.Record) bool {
		subj, payload, err = feed.Encode("p", r, 0, func(s uint8) uint8 { return s })
		id = ulid.ULID(r.ULID).String() + "-0"
		return false
	})
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.PublishMsg(ctx, &nats.Msg{Subject: subj, Data: payload, Header: nats.Header{jetstream.MsgIDHeader: {id}}}); err != nil {
		t.Fatal(err)
	}
	c, err = feed.NewCapture(ctx, nc, st, "p", feed.CaptureConfig{Stream: "FEED"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Captured(); got != seq-1 {
		t.Fatalf("Captured %d after the restart, want %d", got, seq-1)
	}
	runPublisher(t, &feed.Publisher{Store: st, Prefix: "p", Capture: c})
	for i := range 5 {
		write(t, st, setEvent(0, fmt.Sprintf("b%d", i), "v"))
	}
	waitCaptured(t, st, c, 10*time.Second)
	checkCaptured(t, st, readStream(t, nc, "FEED"), 1, 0, st.LastSeq())
}

// TestCaptureStreamConfig: the stream is made with file storage over the
// prefix's subjects and the configured limits, and updated by the next
// set-up with other ones.
func TestCaptureStreamConfig(t *testing.T) {
	st := memStore(t)
	_, nc := jetStreamConn(t)
	ctx := context.Background()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	check := func(maxAge, dup time.Duration) {
		t.Helper()
		s, err := js.Stream(ctx, "FEED")
		if err != nil {
			t.Fatal(err)
		}
		cfg := s.CachedInfo().Config
		if cfg.Storage != jetstream.FileStorage || len(cfg.Subjects) != 1 || cfg.Subjects[0] != "pre.chg.>" ||
			cfg.MaxAge != maxAge || cfg.Duplicates != dup || cfg.Replicas != 1 {
			t.Fatalf("stream config: storage %v subjects %v max age %v duplicates %v replicas %d", cfg.Storage, cfg.Subjects, cfg.MaxAge, cfg.Duplicates, cfg.Replicas)
		}
	}
	if _, err := feed.NewCapture(ctx, nc, st, "pre", feed.CaptureConfig{Stream: "FEED"}, nil); err != nil {
		t.Fatal(err)
	}
	check(0, feed.DefaultCaptureDuplicates)
	if _, err := feed.NewCapture(ctx, nc, st, "pre", feed.CaptureConfig{Stream: "FEED", MaxAge: time.Hour, Duplicates: time.Minute}, nil); err != nil {
		t.Fatal(err)
	}
	check(time.Hour, time.Minute)
	// A duplicates window longer than the age limit is cut to it.
	if _, err := feed.NewCapture(ctx, nc, st, "pre", feed.CaptureConfig{Stream: "FEED", MaxAge: 10 * time.Second}, nil); err != nil {
		t.Fatal(err)
	}
	check(10*time.Second, 10*time.Second)

	// A stream on memory storage is refused.
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "MEM", Subjects: []string{"mem.chg.>"}, Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	if _, err := feed.NewCapture(ctx, nc, st, "mem", feed.CaptureConfig{Stream: "MEM"}, nil); err == nil {
		t.Fatal("a capture into a memory stream was set up")
	}
}

// TestCaptureStreamDeleted: a stream deleted while the capture runs is
// made again, and the records after that go into it.
func TestCaptureStreamDeleted(t *testing.T) {
	st := memStore(t)
	_, nc := jetStreamConn(t)
	ctx := context.Background()
	c, err := feed.NewCapture(ctx, nc, st, "p", feed.CaptureConfig{Stream: "FEED", AckTimeout: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	runPublisher(t, &feed.Publisher{Store: st, Prefix: "p", Capture: c})
	write(t, st, setEvent(0, "a", "v"))
	waitCaptured(t, st, c, 10*time.Second)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteStream(ctx, "FEED"); err != nil {
		t.Fatal(err)
	}
	from := write(t, st, setEvent(0, "b", "v"))
	write(t, st, setEvent(0, "c", "v"))
	waitCaptured(t, st, c, 20*time.Second)
	checkCaptured(t, st, readStream(t, nc, "FEED"), from, 0, st.LastSeq())
}
