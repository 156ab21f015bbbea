package feed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
)

// The durable capture's defaults (CaptureConfig).
const (
	// DefaultCaptureDuplicates is the stream's de-duplication window. The
	// capture asks the stream where it ends before it publishes again
	// after a failure, so the window only has to cover the messages still
	// in flight around a failure (AckTimeout); JetStream keeps every
	// message ID for the window, in memory.
	DefaultCaptureDuplicates = 30 * time.Second
	// DefaultCaptureMaxPending bounds the messages published and not yet
	// acknowledged by JetStream.
	DefaultCaptureMaxPending = 1024
	// DefaultCaptureMaxPendingBytes bounds their payloads' bytes.
	DefaultCaptureMaxPendingBytes = 8 << 20
	// DefaultCaptureAckTimeout is how long a publish waits for
	// JetStream's acknowledgement before it counts as failed.
	DefaultCaptureAckTimeout = 5 * time.Second
)

const (
	// captureHeaderRoom is what a message's headers may take (message ID,
	// expected last ID, traceparent: about 200 bytes).
	captureHeaderRoom = 512
	// The back-off between attempts to find where the stream ends after a
	// failure.
	captureBackoffMin = 50 * time.Millisecond
	captureBackoffMax = 2 * time.Second
)

// CaptureConfig configures a Capture. Only Stream is required.
type CaptureConfig struct {
	// Stream names the JetStream stream (created when missing).
	Stream string
	// Replicas is the stream's replica count (clustered JetStream). 0
	// takes 1.
	Replicas int
	// MaxAge is how long JetStream keeps a message; 0: no limit.
	MaxAge time.Duration
	// Duplicates is the stream's de-duplication window; 0 takes
	// DefaultCaptureDuplicates (at most MaxAge, as JetStream requires).
	Duplicates time.Duration
	// MaxPending bounds the messages published and not yet acknowledged;
	// 0 takes DefaultCaptureMaxPending.
	MaxPending int
	// MaxPendingBytes bounds their payload bytes; 0 takes
	// DefaultCaptureMaxPendingBytes.
	MaxPendingBytes int
	// AckTimeout is how long a publish waits for its acknowledgement
	// before it counts as failed; 0 takes DefaultCaptureAckTimeout.
	AckTimeout time.Duration
}

func (c CaptureConfig) withDefaults() CaptureConfig {
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.Duplicates == 0 {
		c.Duplicates = DefaultCaptureDuplicates
	}
	if c.MaxAge > 0 && c.Duplicates > c.MaxAge {
		c.Duplicates = c.MaxAge
	}
	if c.MaxPending <= 0 {
		c.MaxPending = DefaultCaptureMaxPending
	}
	if c.MaxPendingBytes <= 0 {
		c.MaxPendingBytes = DefaultCaptureMaxPendingBytes
	}
	if c.AckTimeout <= 0 {
		c.AckTimeout = DefaultCaptureAckTimeout
	}
	return c
}

// Capture is the change feed's durable capture: a Publisher with a
// Capture publishes every event to a JetStream stream over
// <prefix>.chg.>, each message with a Nats-Msg-Id header (the record's
// ULID, then "-" and the event's index when the record holds several
// events) and a Nats-Expected-Last-Msg-Id header naming the message
// before it, and counts a record captured once JetStream has stored all
// its events. It holds the change log (materialize.LogHold) from the first
// record not yet captured, so the retention drops none before JetStream
// has it. When a publish fails (NATS unreachable, no acknowledgement
// within AckTimeout, a message refused), it lets the messages in flight
// settle, asks the stream for its last message (again and again, backing
// off, until NATS answers) and publishes again from the event after it:
// nothing is lost, nothing is stored twice (the expected last ID keeps a
// message whose predecessor was lost out of the stream, and the message
// IDs de-duplicate the rest), and the stream holds the events in
// change-log order. docs/change-feed.md, "Durable capture (JetStream)".
//
// Captured and Stream are safe for concurrent use; the rest belongs to
// the Publisher's Run.
type Capture struct {
	st       *materialize.Store
	nc       *nats.Conn
	js       jetstream.JetStream
	stream   jetstream.Stream
	cfg      CaptureConfig
	prefix   string
	subjects string // <prefix>.chg.>
	log      *slog.Logger
	hold     *materialize.LogHold

	start  Cursor // the first event to publish (NewCapture)
	lastID string // Nats-Msg-Id of the stream's last message at start
	// captured is the last record JetStream stored whole.
	captured atomic.Uint64
}

// NewCapture sets up the durable capture of st's change feed with the
// subject prefix (DefaultPrefix if empty) on nc: it creates the stream, or
// updates its subjects, replicas, age limit and de-duplication window
// (other settings stay; a stream on memory storage is an error), and finds
// where to start: after the stream's last message when it is one of this
// log's records, and with the next record committed otherwise (a new or
// emptied stream; a stream that holds another log's records is reported
// in the log). It holds st's change log from there. Set it as a
// Publisher's Capture; Run releases the hold when it returns. ctx bounds
// the set-up's requests.
func NewCapture(ctx context.Context, nc *nats.Conn, st *materialize.Store, prefix string, cfg CaptureConfig, log *slog.Logger) (*Capture, error) {
	if cfg.Stream == "" {
		return nil, errors.New("feed: capture: no stream name")
	}
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg = cfg.withDefaults()
	// Hold everything first: nothing may go before the start is known.
	hold := st.HoldLog(0)
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(cfg.MaxPending),
		jetstream.WithPublishAsyncTimeout(cfg.AckTimeout))
	if err != nil {
		hold.Release()
		return nil, fmt.Errorf("feed: capture: %w", err)
	}
	c := &Capture{st: st, nc: nc, js: js, cfg: cfg, prefix: prefix, subjects: prefix + ".chg.>", log: log, hold: hold}
	if err := c.ensureStream(ctx); err != nil {
		hold.Release()
		return nil, err
	}
	if err := c.locateStart(ctx); err != nil {
		hold.Release()
		return nil, err
	}
	return c, nil
}

// Stream returns the stream's name.
func (c *Capture) Stream() string { return c.cfg.Stream }

// Captured returns the sequence of the last record JetStream has stored
// whole (every record before it too).
func (c *Capture) Captured() uint64 { return c.captured.Load() }

// ensureStream creates the stream, or updates the settings the capture
// owns.
func (c *Capture) ensureStream(ctx context.Context) error {
	name := c.cfg.Stream
	s, err := c.js.Stream(ctx, name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		s, err = c.js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{c.subjects},
			Storage: jetstream.FileStorage, Replicas: c.cfg.Replicas, MaxAge: c.cfg.MaxAge,
			Duplicates: c.cfg.Duplicates, Retention: jetstream.LimitsPolicy, Discard: jetstream.DiscardOld})
		if err != nil {
			return fmt.Errorf("feed: create JetStream stream %q: %w", name, err)
		}
		c.log.Info("change feed capture: JetStream stream created", "stream", name, "subjects", c.subjects)
		c.stream = s
		return nil
	}
	if err != nil {
		return fmt.Errorf("feed: JetStream stream %q: %w", name, err)
	}
	cfg := s.CachedInfo().Config
	if cfg.Storage != jetstream.FileStorage {
		return fmt.Errorf("feed: JetStream stream %q uses %s storage; the capture needs file storage", name, cfg.Storage)
	}
	if !slices.Equal(cfg.Subjects, []string{c.subjects}) || cfg.Replicas != c.cfg.Replicas ||
		cfg.MaxAge != c.cfg.MaxAge || cfg.Duplicates != c.cfg.Duplicates {
		// Other subjects would break the chain of expected last IDs.
		cfg.Subjects, cfg.Replicas, cfg.MaxAge, cfg.Duplicates = []string{c.subjects}, c.cfg.Replicas, c.cfg.MaxAge, c.cfg.Duplicates
		if s, err = c.js.UpdateStream(ctx, cfg); err != nil {
			return fmt.Errorf("feed: update JetStream stream %q: %w", name, err)
		}
		c.log.Info("change feed capture: JetStream stream updated", "stream", name, "subjects", c.subjects)
	}
	c.stream = s
	return nil
}

// streamEnd is what the stream's last message tells.
type streamEnd struct {
	id    string  // its Nats-Msg-Id ("" when the stream is empty)
	ours  bool    // a feed payload: m and next hold
	m     Message // its payload
	after Cursor  // the event after it
}

// end asks the stream for its last message.
func (c *Capture) end(ctx context.Context) (streamEnd, error) {
	raw, err := c.stream.GetLastMsgForSubject(ctx, c.subjects)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return streamEnd{}, nil
	}
	if err != nil {
		return streamEnd{}, err
	}
	e := streamEnd{id: raw.Header.Get(jetstream.MsgIDHeader)}
	m, err := Decode(raw.Data)
	if err != nil || m.Seq == 0 || m.I < 0 || m.I >= m.N {
		return e, nil
	}
	e.ours, e.m = true, m
	if e.after = (Cursor{Seq: m.Seq, I: m.I + 1}); e.after.I >= m.N {
		e.after = Cursor{Seq: m.Seq + 1}
	}
	return e, nil
}

// fromThisLog reports whether m names a record of this store's log: not
// after its last, and, when the record is still retained, with its ULID.
func (c *Capture) fromThisLog(m Message) bool {
	if m.Seq > c.st.LastSeq() {
		return false
	}
	same := true
	c.st.ChangeLog(m.Seq, func(r codec.Record) bool {
		if r.Seq == m.Seq {
			same = ulid.ULID(r.ULID).String() == m.ULID
		}
		return false
	})
	return same
}

// locateStart sets where Run starts, and the hold and Captured with it.
func (c *Capture) locateStart(ctx context.Context) error {
	e, err := c.end(ctx)
	if err != nil {
		return fmt.Errorf("feed: JetStream stream %q: reading its last message: %w", c.cfg.Stream, err)
	}
	last := c.st.LastSeq()
	start := Cursor{Seq: last + 1}
	switch {
	case !e.ours:
		c.log.Info("change feed capture: the stream holds no record yet; capturing from the next write", "stream", c.cfg.Stream, "seq", start.Seq)
	case !c.fromThisLog(e.m):
		c.log.Warn("change feed capture: the stream's last message is not a record of this change log; capturing from the next write",
			"stream", c.cfg.Stream, "stream_seq", e.m.Seq, "stream_ulid", e.m.ULID, "seq", start.Seq)
	default:
		start = e.after
		if first := c.st.FirstSeq(); first > 0 && start.Seq < first {
			c.log.Warn("change feed capture: records after the stream's last were dropped before they were captured (the capture was off); going on from the oldest retained",
				"stream", c.cfg.Stream, "from", start.Seq, "oldest", first)
			start = Cursor{Seq: first}
		}
		c.log.Info("change feed capture: resuming after the stream's last record", "stream", c.cfg.Stream, "seq", start.Seq, "i", start.I)
	}
	c.start, c.lastID = start, e.id
	c.captured.Store(start.Seq - 1)
	c.hold.Advance(start.Seq)
	return nil
}

// resume returns where to publish again after a failure: after the
// stream's last message when that is further than the first record not
// yet captured (acknowledgements lost, messages stored), and the last
// message's ID. It moves Captured and the hold up to it.
func (c *Capture) resume(ctx context.Context) (Cursor, string, error) {
	e, err := c.end(ctx)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		// Deleted under us: make it again, empty.
		if err = c.ensureStream(ctx); err == nil {
			e, err = c.end(ctx)
		}
	}
	if err != nil {
		return Cursor{}, "", err
	}
	next := Cursor{Seq: c.Captured() + 1}
	if e.ours && (e.after.Seq > next.Seq || e.after.Seq == next.Seq && e.after.I > 0) && c.fromThisLog(e.m) {
		next = e.after
		c.captured.Store(next.Seq - 1)
		c.hold.Advance(next.Seq)
	}
	return next, e.id, nil
}

// msgID returns the Nats-Msg-Id of event i of a record with ULID u and n
// events.
func msgID(u string, i, n int) string {
	if n == 1 {
		return u
	}
	return u + "-" + strconv.Itoa(i)
}

// pendingMsg is a message published to JetStream and not yet settled by
// the capture, or (fut nil) the end of record seq: the record is captured
// once every entry up to it is settled.
type pendingMsg struct {
	fut  jetstream.PubAckFuture
	seq  uint64
	ms   int64 // the record's decision time
	size int   // the payload's bytes
}

// captureRun is the state of Run with a Capture.
type captureRun struct {
	p      *Publisher
	c      *Capture
	q      []pendingMsg // in publish order
	msgs   int          // entries of q with a future
	bytes  int          // their payload bytes
	failed error        // why the pass stopped (nil: it did not)
}

// pop settles q's head as stored.
func (r *captureRun) pop() {
	h := r.q[0]
	r.q[0] = pendingMsg{}
	r.q = r.q[1:]
	if h.fut != nil {
		r.msgs--
		r.bytes -= h.size
		return
	}
	r.c.captured.Store(h.seq)
	r.c.hold.Advance(h.seq + 1)
	if len(r.q) > 0 {
		r.p.setOldest(r.q[0].seq, r.q[0].ms)
	}
}

// poll settles the entries at q's head whose acknowledgement came, without
// waiting. It returns false when one was not stored.
func (r *captureRun) poll() bool {
	for len(r.q) > 0 {
		h := r.q[0]
		if h.fut == nil {
			r.pop()
			continue
		}
		select {
		case <-h.fut.Ok():
			r.pop()
		case err := <-h.fut.Err():
			r.failed = err
			return false
		default:
			return true
		}
	}
	return true
}

// wait settles q's head, waiting for its acknowledgement (at most the
// AckTimeout: a later one is an error). It returns false when it was not
// stored, or ctx ended.
func (r *captureRun) wait(ctx context.Context) bool {
	h := r.q[0]
	if h.fut == nil {
		r.pop()
		return true
	}
	select {
	case <-h.fut.Ok():
		r.pop()
		return true
	case err := <-h.fut.Err():
		r.failed = err
	case <-ctx.Done():
		r.failed = ctx.Err()
	}
	return false
}

// send publishes one event to JetStream.
func (r *captureRun) send(subj string, payload []byte, tc codec.TraceContext, seq uint64, id, lastID string) (jetstream.PubAckFuture, error) {
	h := nats.Header{jetstream.MsgIDHeader: {id}}
	if lastID != "" {
		h[jetstream.ExpectedLastMsgIDHeader] = []string{lastID}
	}
	var fut jetstream.PubAckFuture
	publish := func(traceparent string) error {
		if traceparent != "" {
			h["traceparent"] = []string{traceparent}
		}
		var err error
		fut, err = r.c.js.PublishMsgAsync(&nats.Msg{Subject: subj, Data: payload, Header: h})
		return err
	}
	var err error
	switch {
	case tc.IsZero():
		err = publish("")
	case r.p.Tracer == nil:
		err = publish(tc.String())
	default:
		err = r.p.sendTraced(subj, tc, seq, publish)
	}
	return fut, err
}

// runCapture is Run with a Capture.
func (p *Publisher) runCapture(ctx context.Context) error {
	c := p.Capture
	defer c.hold.Release()
	log := p.logger()
	r := &captureRun{p: p, c: c}
	maxPayload := p.MaxPayload
	if maxPayload > 0 {
		// NATS counts the headers in: leave room for the capture's.
		maxPayload = max(maxPayload-captureHeaderRoom, 1)
	}
	cur, lastID := c.start, c.lastID // the next event to publish, the last message's ID
	p.published.Store(cur.Seq - 1)
	var (
		tail    *materialize.LogTail
		logical [256]uint8
	)
	mapDB := func(s uint8) uint8 { return logical[s] }
	// reposition makes the tail read from cur.Seq, with the db map as of
	// the record before it.
	reposition := func() error {
		if tail != nil {
			tail.Close()
		}
		var last uint64
		last, logical = p.Store.CommittedDBMap()
		tail = p.Store.TailLog(cur.Seq)
		if cur.Seq <= last {
			return undoSwaps(p.Store, cur.Seq, last, &logical)
		}
		return nil
	}
	defer func() {
		if tail != nil {
			tail.Close()
		}
	}()
	toNewest := func(why error) {
		// Records gone before they were captured: subscribers and the
		// stream see the gap in the sequence numbers.
		log.Warn("change feed capture: records dropped before they were captured; going on from the newest", "err", why)
		for len(r.q) > 0 && r.wait(ctx) {
		}
		r.q, r.msgs, r.bytes = r.q[:0], 0, 0
		var seq uint64
		seq, logical = p.Store.CommittedDBMap()
		cur = Cursor{Seq: seq + 1}
		c.captured.Store(seq)
		c.hold.Advance(seq + 1)
		p.published.Store(seq)
		tail.Close()
		tail = p.Store.TailLog(seq + 1)
	}
	if err := reposition(); err != nil {
		toNewest(err)
	}
	backoff := captureBackoffMin
	// kick starts a pass at once: the records committed before Run (since
	// the stream's end), and those after a failure.
	kick := make(chan struct{}, 1)
	kick <- struct{}{}
	for {
		var (
			okc  <-chan *jetstream.PubAck
			errc <-chan error
		)
		if len(r.q) > 0 && r.q[0].fut != nil {
			okc, errc = r.q[0].fut.Ok(), r.q[0].fut.Err()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-p.Store.CommitNotify():
		case <-kick:
		case <-okc:
			r.pop()
		case err := <-errc:
			r.failed = err
		case <-time.After(time.Second): // a missed notification
		}
		var rerr error
		if r.failed == nil && r.poll() {
			last := p.Store.LastSeq()
			rerr = tail.Read(last, func(rec codec.Record) bool {
				if len(r.q) == 0 {
					p.setOldest(rec.Seq, rec.TimeMs)
				}
				if !c.nc.IsConnected() {
					// Not into nats.go's reconnect buffer, which wakes
					// and PUBLISH share: ask where the stream ends once
					// NATS is back.
					r.failed = nats.ErrDisconnected
					return false
				}
				u := ulid.ULID(rec.ULID).String()
				for i, e := range rec.Events {
					if rec.Seq == cur.Seq && i < cur.I {
						swapDBs(&logical, e) // stored already: read for the db map only
						continue
					}
					for r.msgs >= c.cfg.MaxPending || r.bytes >= c.cfg.MaxPendingBytes {
						// The bounded buffer, overfilled by this record's
						// own events: wait for the oldest's ack.
						if !r.wait(ctx) {
							return false
						}
					}
					if subj, payload, tc, ok := p.encode(c.prefix, rec, i, mapDB, nil, maxPayload); ok {
						id := msgID(u, i, len(rec.Events))
						fut, err := r.send(subj, payload, tc, rec.Seq, id, lastID)
						if err != nil {
							r.failed = err
							return false
						}
						r.q = append(r.q, pendingMsg{fut: fut, seq: rec.Seq, ms: rec.TimeMs, size: len(payload)})
						r.msgs++
						r.bytes += len(payload)
						lastID = id
					}
					swapDBs(&logical, e)
				}
				r.q = append(r.q, pendingMsg{seq: rec.Seq, ms: rec.TimeMs}) // the record's end
				cur = Cursor{Seq: rec.Seq + 1}
				p.published.Store(rec.Seq)
				if !r.poll() {
					return false
				}
				// With the bounded buffer full, stop at this record's end
				// and wait for acks outside Read: Read holds the change
				// log's read lock, and a pruning waiting for it would hold
				// every other reader of the log meanwhile. Only a record
				// whose own events overfill the buffer waits inside.
				return r.msgs < c.cfg.MaxPending && r.bytes < c.cfg.MaxPendingBytes
			})
		}
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(rerr, materialize.ErrLogGone):
			toNewest(rerr)
			continue
		case rerr != nil:
			log.Warn("change feed capture: reading the change log failed", "err", rerr)
		case r.failed != nil:
		default:
			backoff = captureBackoffMin
			continue
		}
		// Publish again from the first record not yet captured, once the
		// messages in flight have settled (so that none is stored after
		// the stream is asked where it ends).
		if r.failed != nil {
			log.Warn("change feed capture: a message was not stored; publishing again from the first record not captured once JetStream answers",
				"stream", c.cfg.Stream, "seq", c.Captured()+1, "err", r.failed)
		}
		select {
		case <-c.js.PublishAsyncComplete():
		case <-ctx.Done():
			return nil
		case <-time.After(c.cfg.AckTimeout + time.Second):
		}
		// What was stored before the failure is captured.
		r.failed = nil
		r.poll()
		r.q, r.msgs, r.bytes, r.failed = r.q[:0], 0, 0, nil
		p.learnOldest(c.Captured() + 1)
		for attempt := 0; ; attempt++ {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, captureBackoffMax)
			qctx, cancel := context.WithTimeout(ctx, c.cfg.AckTimeout)
			next, id, err := c.resume(qctx)
			cancel()
			if err == nil {
				cur, lastID = next, id
				break
			}
			if ctx.Err() != nil {
				return nil
			}
			if attempt == 0 {
				log.Warn("change feed capture: JetStream unreachable; writes go on, the change log keeps every record not captured, retrying",
					"stream", c.cfg.Stream, "err", err)
			} else {
				log.Debug("change feed capture: JetStream still unreachable", "stream", c.cfg.Stream, "err", err)
			}
			p.learnOldest(c.Captured() + 1)
		}
		p.published.Store(cur.Seq - 1)
		if err := reposition(); err != nil {
			toNewest(err)
		}
		select {
		case kick <- struct{}{}:
		default: // one is there already
		}
	}
}

// learnOldest reads the decision time of record seq, when it is committed
// and LagTime does not know it yet: one read of the log while the capture
// cannot publish.
func (p *Publisher) learnOldest(seq uint64) {
	p.oldest.mu.Lock()
	known := p.oldest.seq == seq
	p.oldest.mu.Unlock()
	if known || seq > p.Store.LastSeq() {
		return
	}
	p.Store.ChangeLog(seq, func(r codec.Record) bool {
		if r.Seq == seq {
			p.setOldest(seq, r.TimeMs)
		}
		return false
	})
}

// ValidStreamName reports whether name can name a JetStream stream: not
// empty, and without spaces, '.', '*', '>', path separators or control
// characters.
func ValidStreamName(name string) bool {
	return name != "" && !strings.ContainsFunc(name, func(r rune) bool {
		return r <= ' ' || r == 0x7f || strings.ContainsRune(".*>/\\", r)
	})
}
