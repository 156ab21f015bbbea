package broker

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/sediment-dev/sediment/command/reply"
	"github.com/sediment-dev/sediment/internal/glob"
)

// Pub/Sub across processes through NATS (docs/pubsub.md).
//
// PUBLISH and SPUBLISH publish one NATS message on pubsubSubject; every
// Sediment process with at least one subscribed client subscribes to that
// subject and delivers the message to its clients whose channels or
// patterns match. The payload is
//
//	+------+------------------------+---------+---------+
//	| kind | uvarint len(channel)   | channel | message |
//	+------+------------------------+---------+---------+
//
// kind is 'c' (PUBLISH) or 's' (SPUBLISH); channel and message are
// binary-safe. One NATS connection and one subscription per process keep a
// publisher's messages in order for every subscriber, as Redis does.
//
// Delivery never blocks on a client: a message is appended to the client's
// pending pushes (connPubSub) and written by the client's own pusher
// goroutine, or by the connection itself before its next reply. A client
// whose pending pushes pass the hard limit, or stay over the soft limit
// for the soft time, is disconnected (Redis's client-output-buffer-limit
// pubsub class).
const pubsubSubject = "sediment.pubsub"

const (
	kindChannel = 'c'
	kindShard   = 's'
)

// PubSubLimit is Redis's client-output-buffer-limit for the pubsub class:
// a subscriber whose undelivered messages reach Hard bytes, or stay at
// Soft bytes or more for SoftFor, is disconnected. Zero Hard or Soft is no
// limit of that kind.
type PubSubLimit struct {
	Hard, Soft int64
	SoftFor    time.Duration
}

// DefaultPubSubLimit is Redis's default: pubsub 32mb 8mb 60.
var DefaultPubSubLimit = PubSubLimit{Hard: 32 << 20, Soft: 8 << 20, SoftFor: 60 * time.Second}

// softFor is how long a client may stay over the soft limit: SoftFor, and
// at least a second for 0, as Redis counts whole seconds (its client is
// disconnected once the clock's second has moved on).
func softFor(l PubSubLimit) time.Duration { return max(l.SoftFor, time.Second) }

// outputLimits are client-output-buffer-limit's classes, each in
// PubSubLimit's shape: Options.PubSubLimit and Redis's defaults at start,
// then CONFIG SET (config.go). normal applies to replies (conn.flush),
// pubsub to pushes (connPubSub.push); Sediment has no replicas, so the
// replica class is kept and reported only.
type outputLimits struct {
	normal, replica, pubsub PubSubLimit
}

// pubsub is the process's subscription table. Lock order: pubsub.mu, then
// a conn's mu or a connPubSub's mu; a connPubSub's sockMu is taken before
// its mu and never with pubsub.mu held (docs/lock-order.md has every
// nesting).
type pubsub struct {
	s  *Server
	nc *nats.Conn

	mu       sync.RWMutex
	channels map[string]map[*conn]struct{} // channel → subscribers
	patterns map[string]map[*conn]struct{} // pattern → subscribers
	shards   map[string]map[*conn]struct{} // shard channel → subscribers

	subMu sync.Mutex
	sub   *nats.Subscription // made at the first subscription, kept
}

func newPubSub(s *Server, nc *nats.Conn) *pubsub {
	return &pubsub{s: s, nc: nc,
		channels: map[string]map[*conn]struct{}{},
		patterns: map[string]map[*conn]struct{}{},
		shards:   map[string]map[*conn]struct{}{}}
}

// ensureSub subscribes the process to pubsubSubject and waits until the
// NATS server has the subscription, so that a message published anywhere
// after a SUBSCRIBE's reply reaches it.
func (ps *pubsub) ensureSub() error {
	ps.subMu.Lock()
	defer ps.subMu.Unlock()
	if ps.sub != nil {
		return nil
	}
	sub, err := ps.nc.Subscribe(pubsubSubject, ps.receive)
	if err == nil {
		sub.SetPendingLimits(-1, -1) // slow clients are cut by their own limit, not by dropping here
		err = ps.nc.Flush()
	}
	if err != nil {
		if sub != nil {
			sub.Unsubscribe()
		}
		return err
	}
	ps.sub = sub
	return nil
}

// encodePubSub returns the NATS payload of a message (layout above).
func encodePubSub(kind byte, channel, message []byte) []byte {
	b := make([]byte, 0, 1+binary.MaxVarintLen64+len(channel)+len(message))
	b = append(b, kind)
	b = binary.AppendUvarint(b, uint64(len(channel)))
	b = append(b, channel...)
	return append(b, message...)
}

// decodePubSub splits a NATS payload; ok is false for a malformed one.
func decodePubSub(b []byte) (kind byte, channel, message []byte, ok bool) {
	if len(b) < 2 || (b[0] != kindChannel && b[0] != kindShard) {
		return 0, nil, nil, false
	}
	n, w := binary.Uvarint(b[1:])
	if w <= 0 || n > uint64(len(b)-1-w) {
		return 0, nil, nil, false
	}
	rest := b[1+w:]
	return b[0], rest[:n], rest[n:], true
}

// publish sends a message to every subscriber of the cluster and returns
// how many of this process's clients receive it (Redis's PUBLISH count, on
// this process only: docs/pubsub.md). A message larger than NATS's
// max_payload is refused.
func (ps *pubsub) publish(kind byte, channel, message []byte) (int64, error) {
	payload := encodePubSub(kind, channel, message)
	if max := ps.nc.MaxPayload(); int64(len(payload)) > max {
		return 0, errPublishTooLarge(max)
	}
	n := ps.receivers(kind, channel)
	if err := ps.nc.Publish(pubsubSubject, payload); err != nil {
		return 0, fmt.Errorf("broker: publish: %w", err)
	}
	return n, nil
}

// receivers counts the local clients a message on channel reaches: one per
// subscription, so a client subscribed to the channel and to a matching
// pattern counts twice, as in Redis.
func (ps *pubsub) receivers(kind byte, channel []byte) int64 {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	if kind == kindShard {
		return int64(len(ps.shards[string(channel)]))
	}
	n := int64(len(ps.channels[string(channel)]))
	for p, cs := range ps.patterns {
		if glob.Match([]byte(p), channel) {
			n += int64(len(cs))
		}
	}
	return n
}

// receive is the NATS handler: it hands the message to each local
// subscriber, in the order NATS delivers (one goroutine).
func (ps *pubsub) receive(m *nats.Msg) {
	kind, channel, message, ok := decodePubSub(m.Data)
	if !ok {
		ps.s.opts.Logger.Warn("malformed pub/sub message", "subject", m.Subject, "len", len(m.Data))
		return
	}
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	var f frames
	if kind == kindShard {
		for c := range ps.shards[string(channel)] {
			c.ps.Load().push(c, f.get(c, "smessage", nil, channel, message))
		}
		return
	}
	for c := range ps.channels[string(channel)] {
		c.ps.Load().push(c, f.get(c, "message", nil, channel, message))
	}
	for p, cs := range ps.patterns {
		if len(cs) == 0 || !glob.Match([]byte(p), channel) {
			continue
		}
		var pf frames
		for c := range cs {
			c.ps.Load().push(c, pf.get(c, "pmessage", []byte(p), channel, message))
		}
	}
}

// frames renders one delivery once per protocol.
type frames struct{ resp2, resp3 []byte }

func (f *frames) get(c *conn, kind string, pattern, channel, message []byte) []byte {
	c.mu.Lock()
	proto := c.proto
	c.mu.Unlock()
	p := &f.resp2
	if proto == reply.RESP3 {
		p = &f.resp3
	}
	if *p == nil {
		var s byteSink
		var scratch []byte
		w := reply.NewScratch(&s, &scratch, proto)
		if pattern != nil {
			w.Push(4)
			w.BulkString(kind)
			w.Bulk(pattern)
		} else {
			w.Push(3)
			w.BulkString(kind)
		}
		w.Bulk(channel)
		w.Bulk(message)
		*p = s.b
	}
	return *p
}

// byteSink is a reply.Sink appending to b.
type byteSink struct{ b []byte }

func (s *byteSink) WriteRaw(b []byte) { s.b = append(s.b, b...) }

// subKind is one of the three subscription spaces.
type subKind int

const (
	subChannel subKind = iota
	subPattern
	subShard
)

// table returns the process table of k. ps.mu must be held.
func (ps *pubsub) tableLocked(k subKind) map[string]map[*conn]struct{} {
	switch k {
	case subPattern:
		return ps.patterns
	case subShard:
		return ps.shards
	}
	return ps.channels
}

// subscribe adds c's subscription to name in space k; false if it was
// already there. Run on c's goroutine (or its EXEC on the writer's).
func (ps *pubsub) subscribe(c *conn, k subKind, name string) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p := c.pubSubLocked()
	own := p.set(k)
	if _, ok := own[name]; ok {
		return false
	}
	own[name] = struct{}{}
	t := ps.tableLocked(k)
	cs := t[name]
	if cs == nil {
		cs = map[*conn]struct{}{}
		t[name] = cs
	}
	cs[c] = struct{}{}
	return true
}

// unsubscribe removes c's subscription to name in space k; false if there
// was none.
func (ps *pubsub) unsubscribe(c *conn, k subKind, name string) bool {
	p := c.ps.Load()
	if p == nil {
		return false
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	own := p.set(k)
	if _, ok := own[name]; !ok {
		return false
	}
	delete(own, name)
	t := ps.tableLocked(k)
	delete(t[name], c)
	if len(t[name]) == 0 {
		delete(t, name)
	}
	return true
}

// names returns c's subscriptions in space k, sorted.
func (ps *pubsub) names(c *conn, k subKind) []string {
	p := c.ps.Load()
	if p == nil {
		return nil
	}
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	out := make([]string, 0, len(p.set(k)))
	for n := range p.set(k) {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// drop removes every subscription of c (disconnect, RESET).
func (ps *pubsub) drop(c *conn) {
	if c.ps.Load() == nil {
		return
	}
	for _, k := range []subKind{subChannel, subPattern, subShard} {
		for _, n := range ps.names(c, k) {
			ps.unsubscribe(c, k, n)
		}
	}
}

// counts returns c's number of channel and pattern subscriptions (the
// count SUBSCRIBE and PSUBSCRIBE reply) and of shard channels.
func (ps *pubsub) counts(c *conn) (chanPat, shard int) {
	p := c.ps.Load()
	if p == nil {
		return 0, 0
	}
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	return len(p.channels) + len(p.patterns), len(p.shards)
}

// subCounts returns c's numbers of channels, patterns and shard channels
// (CLIENT LIST's sub, psub, ssub). Safe from any goroutine.
func (ps *pubsub) subCounts(c *conn) (sub, psub, ssub int) {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	p := c.ps.Load()
	if p == nil {
		return 0, 0, 0
	}
	return len(p.channels), len(p.patterns), len(p.shards)
}

// connPubSub is a connection's subscriptions and its pending pushes.
type connPubSub struct {
	// channels, patterns, shards: written under pubsub.mu on the
	// connection's goroutine, read under pubsub.mu.
	channels, patterns, shards map[string]struct{}

	// sockMu orders the socket writes of the connection's flushes and of
	// its pusher goroutine.
	sockMu sync.Mutex

	mu       sync.Mutex // guards the fields below
	buf      []byte     // pushes not yet handed to the socket or the reply buffer
	spare    []byte
	idle     bool      // the connection flushed its replies and waits: the pusher may write
	overSoft time.Time // when buf reached the soft limit; zero when below it
	killed   bool
	signal   chan struct{} // wakes the pusher (capacity 1)
}

func (p *connPubSub) set(k subKind) map[string]struct{} {
	switch k {
	case subPattern:
		return p.patterns
	case subShard:
		return p.shards
	}
	return p.channels
}

// pubSubLocked returns c's pub/sub state, made (with its pusher goroutine)
// at the first subscription. c.s.pubsub.mu must be held.
func (c *conn) pubSubLocked() *connPubSub {
	if p := c.ps.Load(); p != nil {
		return p
	}
	p := &connPubSub{
		channels: map[string]struct{}{}, patterns: map[string]struct{}{}, shards: map[string]struct{}{},
		signal: make(chan struct{}, 1),
		// Idle until the connection's next request (takePushes): made for
		// a redirection target by another goroutine, the connection may
		// be waiting for input, and its next flush would be the only other
		// writer of the pushes.
		idle: true,
	}
	c.ps.Store(p)
	go p.pusher(c)
	return p
}

// push queues a rendered message for c. It never blocks on the client: a
// client over its limit is disconnected instead.
func (p *connPubSub) push(c *conn, frame []byte) {
	p.mu.Lock()
	if p.killed {
		p.mu.Unlock()
		return
	}
	p.buf = append(p.buf, frame...)
	n := int64(len(p.buf))
	limit := c.s.outLimits.Load().pubsub
	var why string
	switch {
	case limit.Hard > 0 && n >= limit.Hard:
		why = "hard"
	case limit.Soft > 0 && n >= limit.Soft:
		now := c.s.opts.Now()
		if p.overSoft.IsZero() {
			p.overSoft = now
		} else if now.Sub(p.overSoft) >= softFor(limit) {
			why = "soft"
		}
	default:
		p.overSoft = time.Time{}
	}
	if why != "" {
		p.killed = true
		p.buf = nil
	}
	p.mu.Unlock()
	if why != "" {
		c.s.opts.Logger.Warn("disconnecting a slow pub/sub client: output buffer limit reached",
			"client", c.id, "limit", why, "pending_bytes", n)
		c.s.stats.pubsubKilled.Add(1)
		go c.nc.Close() // the read and any write fail: serve returns (a TLS close may block: not under pubsub.mu)
		return
	}
	select {
	case p.signal <- struct{}{}:
	default:
	}
}

// pusher writes pending pushes while the connection waits for requests (or
// in a blocking command); otherwise the connection takes them into its
// replies (takePushes).
func (p *connPubSub) pusher(c *conn) {
	for {
		select {
		case <-p.signal:
		case <-c.ctx.Done():
			return
		}
		c.leaveLoop() // an event loop's connection writes from its loop only
		p.sockMu.Lock()
		p.mu.Lock()
		if !p.idle || len(p.buf) == 0 {
			p.mu.Unlock()
			p.sockMu.Unlock()
			continue
		}
		b := p.buf
		p.buf, p.spare = p.spare[:0], nil
		p.overSoft = time.Time{}
		p.mu.Unlock()
		_, err := c.nc.Write(b)
		p.sockMu.Unlock()
		if err != nil {
			return
		}
		p.mu.Lock()
		if cap(b) <= 1<<20 {
			p.spare = b[:0]
		}
		p.mu.Unlock()
	}
}

// pending reports whether pushes wait to be written.
func (p *connPubSub) pending() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.buf) > 0
}

// takePushes moves the pending pushes into the connection's reply buffer,
// ahead of the replies still to come, and marks the connection busy (idle
// false) or idle. Run on the connection's goroutine: before each command
// (busy), and by flush with sockMu held (idle).
func (c *conn) takePushes(idle bool) {
	p := c.ps.Load()
	p.mu.Lock()
	if len(p.buf) > 0 {
		c.w.WriteRaw(p.buf)
		p.buf = p.buf[:0]
		p.overSoft = time.Time{}
	}
	p.idle = idle
	p.mu.Unlock()
}
