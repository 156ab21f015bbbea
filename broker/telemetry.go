package broker

import (
	"context"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/groups"
	"github.com/sediment-dev/sediment/internal/glob"
	"github.com/sediment-dev/sediment/keyspace"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/streams"
	"github.com/sediment-dev/sediment/telemetry"
)

// OpenTelemetry traces and metrics of commands and commits
// (docs/telemetry.md, docs/rfcs/20261127_telemetry.md). A server without
// telemetry has a nil *telem: each command pays one nil check.

// telem is a server's tracer and instruments.
type telem struct {
	tracer     trace.Tracer // nil: traces off
	recordArgs bool

	// nil: metrics off. Command durations are not an SDK instrument: the
	// server's own histograms (latency.go) are exported by commandMetrics.
	commitDur    metric.Float64Histogram
	commitWrites metric.Int64Histogram
	fsyncDur     metric.Float64Histogram
	reg          metric.Registration
	streamsReg   metric.Registration // --metrics-streams
}

// Attribute values of the outcome of a command.
var (
	outcomeOK    = attribute.String("outcome", "ok")
	outcomeError = attribute.String("outcome", "error")
)

// durationBuckets are the histograms' bucket bounds in seconds: 10 µs to
// 10 s (the SDK's default bounds are meant for milliseconds).
var durationBuckets = []float64{1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 5e-2, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// newTelem returns the instruments of t, or nil when it has neither traces
// nor metrics.
func newTelem(t *telemetry.Telemetry) (*telem, error) {
	tr, m := t.Tracer(), t.Meter()
	if tr == nil && m == nil {
		return nil, nil
	}
	tl := &telem{tracer: tr, recordArgs: t.RecordArgs()}
	if m == nil {
		return tl, nil
	}
	var err error
	if tl.commitDur, err = m.Float64Histogram("sediment.commit.duration", metric.WithUnit("s"),
		metric.WithDescription("Time the writer took to decide and commit one group of writes"),
		metric.WithExplicitBucketBoundaries(durationBuckets...)); err != nil {
		return nil, err
	}
	if tl.commitWrites, err = m.Int64Histogram("sediment.commit.writes", metric.WithUnit("{write}"),
		metric.WithDescription("Writes per commit group"),
		metric.WithExplicitBucketBoundaries(1, 2, 4, 8, 16, 32, 64, 128, 256)); err != nil {
		return nil, err
	}
	if tl.fsyncDur, err = m.Float64Histogram("sediment.fsync.duration", metric.WithUnit("s"),
		metric.WithDescription("Time one fsync of the change log took"),
		metric.WithExplicitBucketBoundaries(durationBuckets...)); err != nil {
		return nil, err
	}
	return tl, nil
}

// observe registers the gauges and counters read from s at each
// collection.
func (tl *telem) observe(m metric.Meter, s *Server) error {
	if m == nil {
		return nil
	}
	connected, err := m.Int64ObservableGauge("sediment.clients.connected", metric.WithUnit("{client}"),
		metric.WithDescription("Client connections (INFO connected_clients)"))
	if err != nil {
		return err
	}
	blocked, err := m.Int64ObservableGauge("sediment.clients.blocked", metric.WithUnit("{client}"),
		metric.WithDescription("Clients waiting in a blocking command (INFO blocked_clients)"))
	if err != nil {
		return err
	}
	records, err := m.Int64ObservableCounter("sediment.changelog.records", metric.WithUnit("{record}"),
		metric.WithDescription("The last committed change-log sequence number"))
	if err != nil {
		return err
	}
	feedLag, err := m.Int64ObservableGauge("sediment.feed.lag", metric.WithUnit("{record}"),
		metric.WithDescription("Committed change-log records not yet published on the change feed"))
	if err != nil {
		return err
	}
	feedLagTime, err := m.Float64ObservableGauge("sediment.feed.lag.time", metric.WithUnit("s"),
		metric.WithDescription("Age of the oldest committed change-log record not yet published on the change feed (not yet stored by JetStream, with a capture)"))
	if err != nil {
		return err
	}
	captured, err := m.Int64ObservableCounter("sediment.feed.captured", metric.WithUnit("{record}"),
		metric.WithDescription("The last change-log sequence the JetStream capture has stored, every record before it too (with --feed-jetstream)"))
	if err != nil {
		return err
	}
	captureLag, err := m.Int64ObservableGauge("sediment.feed.capture.lag", metric.WithUnit("{record}"),
		metric.WithDescription("Committed change-log records not yet stored by the JetStream capture (with --feed-jetstream)"))
	if err != nil {
		return err
	}
	disk, err := m.Int64ObservableGauge("sediment.storage.disk_usage", metric.WithUnit("By"),
		metric.WithDescription("Bytes of Pebble's files (the change log not included)"))
	if err != nil {
		return err
	}
	memtable, err := m.Int64ObservableGauge("sediment.storage.memtable_size", metric.WithUnit("By"),
		metric.WithDescription("Bytes of Pebble's memtables"))
	if err != nil {
		return err
	}
	cache, err := m.Int64ObservableGauge("sediment.storage.block_cache.size", metric.WithUnit("By"),
		metric.WithDescription("Bytes in Pebble's block cache"))
	if err != nil {
		return err
	}
	lookups, err := m.Int64ObservableCounter("sediment.storage.block_cache.lookups", metric.WithUnit("{lookup}"),
		metric.WithDescription("Block cache lookups, by result (hit, miss)"))
	if err != nil {
		return err
	}
	compactions, err := m.Int64ObservableCounter("sediment.storage.compactions", metric.WithUnit("{compaction}"),
		metric.WithDescription("Pebble compactions since start"))
	if err != nil {
		return err
	}
	flushes, err := m.Int64ObservableCounter("sediment.storage.flushes", metric.WithUnit("{flush}"),
		metric.WithDescription("Pebble memtable flushes since start"))
	if err != nil {
		return err
	}
	readAmp, err := m.Int64ObservableGauge("sediment.storage.read_amplification", metric.WithUnit("1"),
		metric.WithDescription("Sublevels and levels a read may visit"))
	if err != nil {
		return err
	}
	written, err := m.Int64ObservableCounter("sediment.storage.bytes_written", metric.WithUnit("By"),
		metric.WithDescription("Bytes written to disk since start, by kind: changelog (each write's record, once), flush and compaction (Pebble's sstables and blob files)"))
	if err != nil {
		return err
	}
	writeAmp, err := m.Float64ObservableGauge("sediment.storage.write_amplification", metric.WithUnit("1"),
		metric.WithDescription("Bytes written to disk (change log, flushes, compactions) per change-log byte, since start"))
	if err != nil {
		return err
	}
	fault, err := m.Int64ObservableGauge("sediment.storage.fault", metric.WithUnit("1"),
		metric.WithDescription("1 while a storage fault refuses writes (MISCONF: a failed change-log write or fsync, a failed flush, free space below the reserve), else 0"))
	if err != nil {
		return err
	}
	free, err := m.Int64ObservableGauge("sediment.storage.disk_free", metric.WithUnit("By"),
		metric.WithDescription("Free bytes on the data directory's filesystem at the last check (every second)"))
	if err != nil {
		return err
	}
	hit := metric.WithAttributes(attribute.String("result", "hit"))
	miss := metric.WithAttributes(attribute.String("result", "miss"))
	tl.reg, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s.mu.Lock()
		n := len(s.conns)
		s.mu.Unlock()
		o.ObserveInt64(connected, int64(n))
		o.ObserveInt64(blocked, s.stats.blocked.Load())
		st := s.store.StorageStats()
		o.ObserveInt64(records, int64(st.ChangeLogRecords))
		if pub := s.feed.Published(); st.ChangeLogRecords > pub {
			o.ObserveInt64(feedLag, int64(st.ChangeLogRecords-pub))
		} else {
			o.ObserveInt64(feedLag, 0)
		}
		o.ObserveFloat64(feedLagTime, s.feed.LagTime(s.opts.Now()).Seconds())
		if c := s.feed.Capture; c != nil {
			done := c.Captured()
			o.ObserveInt64(captured, int64(done))
			o.ObserveInt64(captureLag, int64(st.ChangeLogRecords-min(done, st.ChangeLogRecords)))
		}
		o.ObserveInt64(disk, int64(st.DiskUsage))
		o.ObserveInt64(memtable, int64(st.MemTableSize))
		o.ObserveInt64(cache, st.CacheSize)
		o.ObserveInt64(lookups, st.CacheHits, hit)
		o.ObserveInt64(lookups, st.CacheMisses, miss)
		o.ObserveInt64(compactions, st.Compactions)
		o.ObserveInt64(flushes, st.Flushes)
		o.ObserveInt64(readAmp, int64(st.ReadAmp))
		o.ObserveInt64(written, st.ChangeLogBytes, metric.WithAttributes(attribute.String("kind", "changelog")))
		o.ObserveInt64(written, st.FlushBytes, metric.WithAttributes(attribute.String("kind", "flush")))
		o.ObserveInt64(written, st.CompactionBytes, metric.WithAttributes(attribute.String("kind", "compaction")))
		o.ObserveFloat64(writeAmp, st.WriteAmp())
		if s.store.Fault() != nil {
			o.ObserveInt64(fault, 1)
		} else {
			o.ObserveInt64(fault, 0)
		}
		if n, _, ok := s.store.DiskFree(); ok {
			o.ObserveInt64(free, int64(min(n, 1<<62)))
		}
		return nil
	}, connected, blocked, records, feedLag, feedLagTime, captured, captureLag, disk, memtable, cache, lookups, compactions, flushes, readAmp, written, writeAmp, fault, free)
	if err != nil || len(s.opts.MetricsStreams) == 0 {
		return err
	}
	return tl.observeStreams(m, s)
}

// close unregisters the callbacks (the server is closing).
func (tl *telem) close() {
	if tl.reg != nil {
		tl.reg.Unregister()
	}
	if tl.streamsReg != nil {
		tl.streamsReg.Unregister()
	}
}

// cmdAttrs are a command's span name and db.operation.name attribute,
// made once at register.
type cmdAttrs struct {
	name string // upper case
	op   attribute.KeyValue
}

func newCmdAttrs(name string) cmdAttrs {
	upper := strings.ToUpper(name)
	return cmdAttrs{name: upper, op: semconv.DBOperationName(upper)}
}

// The span start options, made once.
var (
	serverKind   = trace.WithSpanKind(trace.SpanKindServer)
	internalKind = trace.WithSpanKind(trace.SpanKindInternal)
)

// startCommand starts the span of a request on c: kind SERVER, a new
// trace (parent nil) or, inside EXEC, INTERNAL under parent. It returns
// nil when traces are off. Attributes are set only on a sampled span.
func (tl *telem) startCommand(c *conn, cmd *cmdSpec, args [][]byte, parent trace.Span) trace.Span {
	if tl.tracer == nil {
		return nil
	}
	ctx, kind := context.Background(), serverKind
	if parent != nil {
		ctx, kind = trace.ContextWithSpan(ctx, parent), internalKind
	}
	name := cmd.attrs.name
	if cmd.container && len(args) > 1 {
		// Only a known subcommand names the span: names stay a bounded set.
		if sub := command.Lower(args[1]); slices.Contains(subcommands[cmd.name], sub) {
			name += " " + strings.ToUpper(sub)
		}
	}
	_, sp := tl.tracer.Start(ctx, name, kind)
	if !sp.IsRecording() {
		return sp
	}
	attrs := append(make([]attribute.KeyValue, 0, 9),
		semconv.DBSystemNameRedis, cmd.attrs.op,
		semconv.DBNamespace(strconv.Itoa(int(c.db))))
	attrs = append(attrs, c.netAttrs()...)
	if tl.recordArgs {
		attrs = append(attrs, semconv.DBQueryText(queryText(args)))
	}
	sp.SetAttributes(attrs...)
	return sp
}

// endCommand ends a command's span (nil: traces off) with the outcome of
// err. (Its duration is in the server's histograms: Server.ran.)
func endCommand(sp trace.Span, err error) {
	if sp == nil {
		return
	}
	if err != nil && sp.IsRecording() {
		msg, _ := toWire(err)
		code, _, _ := strings.Cut(msg, " ")
		sp.SetAttributes(semconv.DBResponseStatusCode(code))
		sp.SetStatus(codes.Error, msg)
	}
	sp.End()
}

// blockSpan starts the span of a blocking command's wait under the
// command's span; nil when the command is not traced.
func (tl *telem) blockSpan(parent trace.Span) trace.Span {
	if tl == nil || parent == nil || !parent.IsRecording() {
		return nil
	}
	_, sp := tl.tracer.Start(trace.ContextWithSpan(context.Background(), parent), "block", internalKind)
	return sp
}

// endBlockSpan ends a wait's span (nil: not traced): woken tells whether
// the wait was served before its timeout.
func endBlockSpan(sp trace.Span, woken bool, err error) {
	if sp == nil {
		return
	}
	sp.SetAttributes(attribute.Bool("sediment.block.woken", woken))
	if err != nil {
		sp.SetStatus(codes.Error, err.Error())
	}
	sp.End()
}

// publishWakes publishes the wake-ups of a committed write's events
// (waker.publishEvents); when the write's span records and something was
// published, a child span "wake" covers it, with the count.
func (s *Server) publishWakes(parent trace.Span, events []codec.Event) {
	if parent == nil || !parent.IsRecording() {
		s.wake.publishEvents(events)
		return
	}
	start := time.Now()
	n := s.wake.publishEvents(events)
	if n == 0 {
		return
	}
	_, sp := s.tel.tracer.Start(trace.ContextWithSpan(context.Background(), parent), "wake", internalKind,
		trace.WithTimestamp(start), trace.WithAttributes(attribute.Int("sediment.wake.subjects", n)))
	sp.End()
}

// spanTag is the tag a traced write gives the store (materialize
// SubmitTagged): the commit span links to it, and the store writes its
// trace context into the write's change-log record (materialize.Traced),
// which the change feed sends as the traceparent header. nil when the span
// is not sampled.
func spanTag(sp trace.Span) any {
	if sp == nil {
		return nil
	}
	if sc := sp.SpanContext(); sc.IsSampled() {
		return sampledWrite{sc}
	}
	return nil
}

// sampledWrite is spanTag's tag.
type sampledWrite struct{ sc trace.SpanContext }

// TraceContext is materialize.Traced's.
func (w sampledWrite) TraceContext() codec.TraceContext {
	return codec.TraceContext{TraceID: w.sc.TraceID(), SpanID: w.sc.SpanID(), Flags: byte(w.sc.TraceFlags())}
}

// Commit records a commit group (materialize.Observer) and, when it
// carried sampled writes, makes its span with links to theirs.
func (tl *telem) Commit(g materialize.GroupInfo) {
	if tl.commitDur != nil {
		ctx := context.Background()
		tl.commitDur.Record(ctx, g.End.Sub(g.Start).Seconds())
		tl.commitWrites.Record(ctx, int64(g.Writes))
	}
	if tl.tracer == nil || len(g.Tags) == 0 {
		return
	}
	links := make([]trace.Link, 0, len(g.Tags))
	for _, t := range g.Tags {
		if w, ok := t.(sampledWrite); ok {
			links = append(links, trace.Link{SpanContext: w.sc})
		}
	}
	_, sp := tl.tracer.Start(context.Background(), "commit",
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithTimestamp(g.Start),
		trace.WithLinks(links...),
		trace.WithAttributes(
			attribute.Int("sediment.commit.writes", g.Writes),
			attribute.Int("sediment.commit.records", g.Records),
			attribute.Int("sediment.commit.log_bytes", g.LogBytes),
			attribute.Bool("sediment.commit.sync", g.Sync)))
	if g.Err != nil {
		sp.SetStatus(codes.Error, g.Err.Error())
	}
	sp.End(trace.WithTimestamp(g.End))
}

// commandBounds are the bucket bounds of sediment.command.duration in
// seconds: the latency histograms' powers of two, 2^10 to 2^30 ns.
var commandBounds = func() []float64 {
	var b []float64
	for e := latMinExp; e <= latMaxExp; e++ {
		b = append(b, float64(uint64(1)<<e)/1e9)
	}
	return b
}()

// commandMetrics produces sediment.command.duration from the server's
// latency histograms (Server.ran): a cumulative histogram per command and
// outcome, since the last CONFIG RESETSTAT (telemetry.ProduceFunc). It
// allocates at collection time only; recording costs commands two atomic
// adds instead of the SDK's locked aggregation.
func (s *Server) commandMetrics(context.Context) ([]metricdata.ScopeMetrics, error) {
	start, now := *s.cmdstats.resetAt.Load(), time.Now()
	var dps []metricdata.HistogramDataPoint[float64]
	s.cmdstats.eachStat(func(name string, st *cmdStat) {
		op := semconv.DBOperationName(strings.ToUpper(strings.ReplaceAll(name, "|", " ")))
		for i, outcome := range []attribute.KeyValue{outcomeOK, outcomeError} {
			h := st.lat[i].Load()
			if h == nil {
				continue
			}
			counts, total := h.snapshot()
			if total == 0 {
				continue
			}
			buckets := make([]uint64, len(commandBounds)+1)
			buckets[0] = counts[0]
			for j := 1; j < latBuckets-1; j++ {
				buckets[1+(j-1)/latSub] += counts[j]
			}
			buckets[len(buckets)-1] = counts[latBuckets-1]
			dps = append(dps, metricdata.HistogramDataPoint[float64]{
				Attributes: attribute.NewSet(op, outcome), StartTime: start, Time: now,
				Count: total, Bounds: commandBounds, BucketCounts: buckets, Sum: float64(h.sumNs.Load()) / 1e9,
			})
		}
	})
	if len(dps) == 0 {
		return nil, nil
	}
	return []metricdata.ScopeMetrics{{
		Scope: instrumentation.Scope{Name: telemetry.ScopeName, Version: SedimentVersion},
		Metrics: []metricdata.Metrics{{
			Name: "sediment.command.duration", Unit: "s",
			Description: "Time commands took to run, less the time they waited blocked, by command and outcome",
			Data:        metricdata.Histogram[float64]{Temporality: metricdata.CumulativeTemporality, DataPoints: dps},
		}},
	}}, nil
}

// Sync records one fsync of the change log (materialize.Observer).
func (tl *telem) Sync(d time.Duration, _ error) {
	if tl.fsyncDur != nil {
		tl.fsyncDur.Record(context.Background(), d.Seconds())
	}
}

// netAttrs are the connection's client.* and server.* span attributes,
// made at its first traced command.
func (c *conn) netAttrs() []attribute.KeyValue {
	if c.otelNet != nil {
		return c.otelNet
	}
	var a []attribute.KeyValue
	if host, port, ok := splitAddr(c.nc.RemoteAddr()); ok {
		a = append(a, semconv.ClientAddress(host), semconv.ClientPort(port))
	}
	if host, port, ok := splitAddr(c.nc.LocalAddr()); ok {
		a = append(a, semconv.ServerAddress(host), semconv.ServerPort(port))
	}
	c.otelNet = a
	return a
}

func splitAddr(addr net.Addr) (host string, port int, ok bool) {
	if addr == nil {
		return "", 0, false
	}
	h, p, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "", 0, false
	}
	n, err := strconv.Atoi(p)
	return h, n, err == nil
}

// queryText is db.query.text for --otel-record-args: the arguments
// space-separated, each cut at 64 bytes, at most 32 of them, with invalid
// UTF-8 replaced (attribute values are strings).
func queryText(args [][]byte) string {
	var b strings.Builder
	for i, a := range args {
		if i == 32 {
			b.WriteString(" ...")
			break
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		if len(a) > 64 {
			b.WriteString(strings.ToValidUTF8(string(a[:64]), "\uFFFD"))
			b.WriteString("...")
			continue
		}
		b.WriteString(strings.ToValidUTF8(string(a), "\uFFFD"))
	}
	return b.String()
}

// A message's path (docs/telemetry.md): XADD stores its span's context
// with each entry it adds (codec.TraceContext), and the read that delivers
// the entry links its span to it, with OpenTelemetry's messaging
// attributes on both.

// messagingSystem is messaging.system on both ends of a message's path.
var messagingSystem = semconv.MessagingSystemKey.String("redis")

// traceAdds gives the entries an XADD adds (its OpXAdd events) the
// context of the command's span, when it is sampled, and sets the span's
// messaging attributes (send).
func (x *exec) traceAdds(evs []codec.Event) {
	if x.span == nil || x.cmd.name != "xadd" {
		return
	}
	sc := x.span.SpanContext()
	if !sc.IsSampled() {
		return
	}
	tc := codec.TraceContext{TraceID: sc.TraceID(), SpanID: sc.SpanID(), Flags: byte(sc.TraceFlags())}
	for i, e := range evs {
		if e.Op != codec.OpXAdd || len(e.Args) == 0 {
			continue
		}
		evs[i] = codec.XAddWithTrace(e, tc)
		if x.span.IsRecording() {
			if id, err := codec.DecodeIDArg(e.Args[0]); err == nil {
				x.span.SetAttributes(messagingSystem, semconv.MessagingOperationTypeSend,
					semconv.MessagingDestinationName(string(e.Key)), semconv.MessagingMessageID(id.String()))
			}
		}
	}
}

// TracingDeliveries reports whether the command's span records
// (command.DeliveryTracer).
func (r execRuntime) TracingDeliveries() bool {
	return r.x.span != nil && r.x.span.IsRecording()
}

// Delivered sets the messaging attributes (receive) on the command's span
// and links it to the XADD span of each entry that has one
// (command.DeliveryTracer). Each link carries the entry's stream and ID.
func (r execRuntime) Delivered(key, group []byte, entries []streams.Entry) {
	sp := r.x.span
	attrs := []attribute.KeyValue{messagingSystem, semconv.MessagingOperationTypeReceive,
		semconv.MessagingDestinationName(string(key)), semconv.MessagingBatchMessageCount(len(entries))}
	if group != nil {
		attrs = append(attrs, semconv.MessagingConsumerGroupName(string(group)))
	}
	sp.SetAttributes(attrs...)
	dest := semconv.MessagingDestinationName(string(key))
	for _, e := range entries {
		if e.Trace.IsZero() {
			continue
		}
		sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: e.Trace.TraceID, SpanID: e.Trace.SpanID,
			TraceFlags: trace.TraceFlags(e.Trace.Flags), Remote: true})
		sp.AddLink(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{dest, semconv.MessagingMessageID(e.ID.String())}})
	}
}

// maxStreamSeries bounds how many streams the per-stream metrics report at
// one collection (--metrics-streams): the series' cardinality.
const maxStreamSeries = 100

// streamMetric is one stream's figures at a collection.
type streamMetric struct {
	db     int
	key    string
	length int64
	groups []groups.GroupInfo
}

// collectStreams returns the streams that Options.MetricsStreams' patterns
// name, in db then key order, at most maxStreamSeries: an exact name is
// one lookup per db; a pattern with glob characters scans each db's
// keyspace (O(keys) per collection).
func (s *Server) collectStreams() ([]streamMetric, error) {
	v := s.store.View()
	var out []streamMetric
	add := func(db int, storage uint8, key []byte, m codec.Meta) error {
		if m.Type != codec.TypeStream || len(out) >= maxStreamSeries {
			return nil
		}
		for _, o := range out {
			if o.db == db && o.key == string(key) {
				return nil
			}
		}
		gs, err := groups.Infos(v, storage, key, m.Stream)
		if err != nil {
			return err
		}
		out = append(out, streamMetric{db: db, key: string(key), length: int64(m.Stream.Length), groups: gs})
		return nil
	}
	for db := 0; db < s.opts.Databases && len(out) < maxStreamSeries; db++ {
		storage := v.StorageDB(uint8(db))
		if n, _ := v.KeyCount(storage); n == 0 {
			continue
		}
		for _, pat := range s.opts.MetricsStreams {
			if !strings.ContainsAny(pat, `*?[\`) {
				m, ok, err := v.Meta(storage, []byte(pat))
				if err != nil {
					return nil, err
				}
				if ok {
					if err := add(db, storage, []byte(pat), m); err != nil {
						return nil, err
					}
				}
				continue
			}
			var serr error
			if _, _, err := keyspace.Scan(v, storage, 0, nil, func(key []byte, m codec.Meta) bool {
				if m.Type == codec.TypeStream && glob.Match([]byte(pat), key) {
					serr = add(db, storage, append([]byte(nil), key...), m)
				}
				return serr == nil && len(out) < maxStreamSeries
			}); err != nil {
				return nil, err
			}
			if serr != nil {
				return nil, serr
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].db != out[j].db {
			return out[i].db < out[j].db
		}
		return out[i].key < out[j].key
	})
	return out, nil
}

// observeStreams registers the per-stream gauges of --metrics-streams.
func (tl *telem) observeStreams(m metric.Meter, s *Server) error {
	length, err := m.Int64ObservableGauge("sediment.stream.length", metric.WithUnit("{entry}"),
		metric.WithDescription("Entries in the stream (XLEN), for the streams --metrics-streams names"))
	if err != nil {
		return err
	}
	lag, err := m.Int64ObservableGauge("sediment.stream.group.lag", metric.WithUnit("{entry}"),
		metric.WithDescription("Entries not yet delivered to the consumer group (XINFO GROUPS lag; absent while Redis's rules leave it unknown)"))
	if err != nil {
		return err
	}
	pending, err := m.Int64ObservableGauge("sediment.stream.group.pending", metric.WithUnit("{entry}"),
		metric.WithDescription("Entries delivered to the consumer group and not acknowledged (its PEL)"))
	if err != nil {
		return err
	}
	consumers, err := m.Int64ObservableGauge("sediment.stream.group.consumers", metric.WithUnit("{consumer}"),
		metric.WithDescription("Consumers of the consumer group"))
	if err != nil {
		return err
	}
	reg, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		streams, err := s.collectStreams()
		if err != nil {
			return err
		}
		for _, st := range streams {
			base := []attribute.KeyValue{semconv.DBNamespace(strconv.Itoa(st.db)), semconv.MessagingDestinationName(st.key)}
			o.ObserveInt64(length, st.length, metric.WithAttributes(base...))
			for _, g := range st.groups {
				ga := metric.WithAttributes(append(base[:2:2], semconv.MessagingConsumerGroupName(string(g.Name)))...)
				if g.LagKnown {
					o.ObserveInt64(lag, g.Lag, ga)
				}
				o.ObserveInt64(pending, g.Pending, ga)
				o.ObserveInt64(consumers, g.Consumers, ga)
			}
		}
		return nil
	}, length, lag, pending, consumers)
	if err != nil {
		return err
	}
	tl.streamsReg = reg
	return nil
}
