package feed

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
)

// Publisher tails a store's change log and publishes each committed event
// in sequence order, on one goroutine (never on the write path): Run.
type Publisher struct {
	Store  *materialize.Store
	Prefix string // DefaultPrefix if empty
	// Publish sends one message (nats.Conn.Publish). An error stops the
	// record: it is published again, whole, on the next try.
	Publish func(subject string, payload []byte) error
	// PublishTraced, when set, sends a message with a W3C traceparent
	// header (nats.Conn.PublishMsg): used for the events that carry the
	// trace context of the command that wrote them (an XADD's, when it
	// was traced: docs/telemetry.md). Nil: Publish, without the header.
	PublishTraced func(subject string, payload []byte, traceparent string) error
	// Tracer, when set, makes a "send" span (kind PRODUCER) for each
	// traced event, child of the writing command's span, and the message's
	// traceparent names it: a subscriber's span is the send span's child.
	Tracer trace.Tracer
	// Interest, when set, tells whether anyone subscribes to a subject
	// (the embedded NATS server knows); events nobody follows are not
	// encoded. Nil: publish everything.
	Interest func(subject string) bool
	// Active, when set, tells whether anyone could be subscribed at all
	// (another client is connected to the embedded NATS server). While it
	// is false the publisher reads no record, and only keeps its place at
	// the newest; a client that connects, subscribes and then writes sees
	// that write (the place taken before it connected is older). Nil:
	// always active.
	Active func() bool
	// MaxPayload is the largest message NATS takes (nats.Conn.MaxPayload);
	// a larger event is published truncated. 0: no limit.
	MaxPayload int
	Logger     *slog.Logger
	// Capture, when set, makes the feed a durable capture into a JetStream
	// stream (NewCapture; docs/change-feed.md, "Durable capture
	// (JetStream)"): every event is published, whatever Interest and
	// Active say, through the capture's JetStream context, and a record
	// counts as done once JetStream has stored all its events. Publish,
	// PublishTraced, Interest and Active are then unused.
	Capture *Capture

	published atomic.Uint64 // the last sequence published (or skipped)
	// start is the place Start took: the newest committed record and the
	// db map after it.
	start struct {
		taken   bool
		logical [256]uint8
	}
	// oldest is the record the lag in time is measured from (LagTime).
	oldest struct {
		mu  sync.Mutex
		seq uint64 // 0: none known
		ms  int64  // its decision time, Unix ms
	}
}

// Published returns the sequence of the last record published: with a
// Capture, the last whose events were all handed to NATS (Captured tells
// which JetStream stored).
func (p *Publisher) Published() uint64 { return p.published.Load() }

// LagTime returns how long ago the oldest committed record the feed has
// not finished with was decided: not yet published or, with a Capture,
// not yet stored by JetStream. It is 0 when there is none, and when the
// publisher has not read that record yet (it reads each as it commits;
// while a publish fails or JetStream cannot be reached it knows the
// record it retries). It reads no record. Safe for concurrent use.
func (p *Publisher) LagTime(now time.Time) time.Duration {
	done := p.published.Load()
	if p.Capture != nil {
		done = p.Capture.Captured()
	}
	if done >= p.Store.LastSeq() {
		return 0
	}
	p.oldest.mu.Lock()
	seq, ms := p.oldest.seq, p.oldest.ms
	p.oldest.mu.Unlock()
	if seq != done+1 {
		return 0
	}
	return max(now.Sub(time.UnixMilli(ms)), 0)
}

// setOldest records the decision time of record seq, the oldest the feed
// has not finished with (LagTime).
func (p *Publisher) setOldest(seq uint64, ms int64) {
	p.oldest.mu.Lock()
	p.oldest.seq, p.oldest.ms = seq, ms
	p.oldest.mu.Unlock()
}

// Start takes the publisher's place: Run publishes every record committed
// after the newest one now. A server calls it before it serves clients, so
// that the writes it accepts before Run's goroutine runs are published;
// Run takes its place itself when Start was not called. Unused with a
// Capture.
func (p *Publisher) Start() {
	seq, logical := p.Store.CommittedDBMap()
	p.published.Store(seq)
	p.start.logical, p.start.taken = logical, true
}

// Run publishes every record committed after the one current when it
// starts (or when Start was called), until ctx ends. It follows SWAPDB's
// db map through the records. With a Capture it starts where the
// capture's stream ends instead (NewCapture), and publishes every record
// after it.
func (p *Publisher) Run(ctx context.Context) error {
	if p.Capture != nil {
		return p.runCapture(ctx)
	}
	prefix := p.Prefix
	if prefix == "" {
		prefix = DefaultPrefix
	}
	log := p.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if !p.start.taken {
		p.Start()
	}
	logical := p.start.logical
	tail := p.Store.TailLog(p.published.Load() + 1)
	defer func() { tail.Close() }() // the tail current when Run returns
	mapDB := func(s uint8) uint8 { return logical[s] }
	idle := false // the tail's place is behind published: reposition it
	backoff := 10 * time.Millisecond
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-p.Store.CommitNotify():
		case <-time.After(time.Second): // a missed notification, or a retry
		}
		if p.Active != nil {
			seq, lg := p.Store.CommittedDBMap()
			if !p.Active() {
				// Nobody to publish to: take the place of seq, whose map
				// is lg; the next read, if any, starts after it.
				if !idle || seq != p.published.Load() {
					idle = true
					logical = lg
					p.published.Store(seq)
				}
				continue
			}
			if idle {
				idle = false
				tail.Close()
				tail = p.Store.TailLog(p.published.Load() + 1)
			}
		}
		last := p.Store.LastSeq()
		var perr error
		err := tail.Read(last, func(r codec.Record) bool {
			before := logical // a record published again after a failure starts from its map
			for i, e := range r.Events {
				if perr = p.publish(prefix, r, i, mapDB); perr != nil {
					logical = before
					p.setOldest(r.Seq, r.TimeMs) // the record retried: LagTime
					return false
				}
				swapDBs(&logical, e) // the events after it (in this record too) use the new map
			}
			p.published.Store(r.Seq)
			return true
		})
		switch {
		case errors.Is(err, materialize.ErrLogGone):
			// Subscribers see the gap in the sequence numbers.
			log.Warn("change feed: records dropped before they were published; going on from the newest", "err", err)
			var seq uint64
			seq, logical = p.Store.CommittedDBMap()
			p.published.Store(seq)
			tail.Close()
			tail = p.Store.TailLog(seq + 1)
			continue
		case err != nil:
			log.Warn("change feed: reading the change log failed", "err", err)
		case perr != nil:
			log.Warn("change feed: publish failed; retrying", "err", perr)
		}
		if err != nil || perr != nil {
			// Start the unpublished record again (Read moved past it).
			tail.Close()
			tail = p.Store.TailLog(p.published.Load() + 1)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 10 * time.Millisecond
	}
}

// swapDBs applies e to logical when e is a SWAPDB: the event names logical
// dbs, and the storage dbs behind them swap, as the store's db map did. A
// swap is its own inverse: applied to the map after it, it gives the map
// before it (Replay).
func swapDBs(logical *[256]uint8, e codec.Event) {
	if e.Op != codec.OpSwapDB || len(e.Args) != 1 || len(e.Args[0]) != 1 {
		return
	}
	a, b := e.DB, e.Args[0][0]
	var sa, sb uint8
	for st, l := range logical {
		if l == a {
			sa = uint8(st)
		}
		if l == b {
			sb = uint8(st)
		}
	}
	logical[sa], logical[sb] = b, a
}

// withoutTrailer returns r and the trace context of its event i: the
// record's (a sampled command's: Record.Trace), or an XADD entry's own
// (its trace trailer), which then leaves the event's args in the returned
// record (a copy of the events; r's are not changed).
func withoutTrailer(r codec.Record, i int) (codec.Record, codec.TraceContext) {
	tc := r.Trace
	if e, t := codec.XAddWithoutTrace(r.Events[i]); !t.IsZero() {
		// The trace trailer goes; a delay tail after it stays.
		events := append([]codec.Event(nil), r.Events...)
		events[i] = e
		r.Events, tc = events, t
	}
	return r, tc
}

func (p *Publisher) publish(prefix string, r codec.Record, i int, logical func(uint8) uint8) error {
	subj, payload, tc, ok := p.encode(prefix, r, i, logical, p.Interest, p.MaxPayload)
	if !ok {
		return nil
	}
	if !tc.IsZero() && p.PublishTraced != nil {
		if p.Tracer == nil {
			return p.PublishTraced(subj, payload, tc.String())
		}
		return p.sendTraced(subj, tc, r.Seq, func(traceparent string) error {
			return p.PublishTraced(subj, payload, traceparent)
		})
	}
	return p.Publish(subj, payload)
}

// encode returns the subject and payload of event i of r, and the trace
// context its message carries (zero: none); ok is false for an event not
// to publish: nobody subscribes to it (interest, when not nil), or it
// cannot be encoded (logged). A payload larger than maxPayload (when
// above 0) is truncated. The payload is the caller's.
func (p *Publisher) encode(prefix string, r codec.Record, i int, logical func(uint8) uint8, interest func(string) bool, maxPayload int) (subj string, payload []byte, tc codec.TraceContext, ok bool) {
	// The trace context goes in a traceparent header, not in the payload.
	r, tc = withoutTrailer(r, i)
	if interest != nil {
		// The subject alone first: most events are skipped when nobody
		// listens.
		if !interest(subjectOf(prefix, r.Events[i], logical)) {
			return "", nil, tc, false
		}
	}
	subj, payload, err := Encode(prefix, r, i, logical)
	if err != nil {
		// A corrupt event cannot become publishable by waiting: skip it
		// (subscribers see i of n missing).
		p.logger().Warn("change feed: event not encodable; skipped", "seq", r.Seq, "i", i, "err", err)
		return "", nil, tc, false
	}
	if maxPayload > 0 && len(payload) > maxPayload {
		// Larger than NATS takes in one message: the event goes without
		// its arguments and value (Message.Truncated).
		if subj, payload, err = EncodeTruncated(prefix, r, i, logical); err != nil {
			return "", nil, tc, false
		}
	}
	return subj, payload, tc, true
}

// sendTraced sends a traced event inside its send span (Tracer): send
// publishes it with the traceparent header given.
func (p *Publisher) sendTraced(subj string, tc codec.TraceContext, seq uint64, send func(traceparent string) error) error {
	parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tc.TraceID, SpanID: tc.SpanID,
		TraceFlags: trace.TraceFlags(tc.Flags), Remote: true})
	_, sp := p.Tracer.Start(trace.ContextWithRemoteSpanContext(context.Background(), parent), "send",
		trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(
			semconv.MessagingSystemKey.String("nats"), semconv.MessagingOperationTypeSend,
			semconv.MessagingDestinationName(subj), attribute.Int64("sediment.feed.seq", int64(seq))))
	defer sp.End()
	sc := sp.SpanContext()
	if !sc.IsValid() {
		return send(tc.String())
	}
	err := send(codec.TraceContext{TraceID: sc.TraceID(), SpanID: sc.SpanID(), Flags: byte(sc.TraceFlags())}.String())
	if err != nil {
		sp.SetStatus(codes.Error, err.Error())
	}
	return err
}

func (p *Publisher) logger() *slog.Logger {
	if p.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return p.Logger
}

// subjectOf returns an event's subject without building its payload.
func subjectOf(prefix string, e codec.Event, logical func(uint8) uint8) string {
	db := logical(e.DB)
	switch e.Op {
	case codec.OpFlushAll:
		return AllSubject(prefix)
	case codec.OpSwapDB:
		return DBSubject(prefix, e.DB, OpName(e.Op)) // logical already
	case codec.OpFlushDB:
		return DBSubject(prefix, db, OpName(e.Op))
	}
	return KeySubject(prefix, db, typeOf(e), e.Key)
}
