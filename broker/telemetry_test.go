package broker

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/feed"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/telemetry"
)

// tracedServer starts a server whose spans go to an in-memory exporter
// and whose metrics to a manual reader (docs/telemetry.md).
func tracedServer(t *testing.T, cfg telemetry.Config) (*testServer, *tracetest.InMemoryExporter, *sdkmetric.ManualReader, *telemetry.Telemetry) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	var reader *sdkmetric.ManualReader
	cfg.SpanExporter = exp
	cfg.MetricReader = func(p sdkmetric.Producer) sdkmetric.Reader {
		reader = sdkmetric.NewManualReader(sdkmetric.WithProducer(p))
		return reader
	}
	tel, err := telemetry.Setup(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tel.Shutdown(context.Background()) })
	ts := newTestServer(t, func(o *Options) { o.Telemetry = tel; o.InMemory = true })
	return ts, exp, reader, tel
}

func spanAttr(s tracetest.SpanStub, key string) (attribute.Value, bool) {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// spansNamed returns the ended spans named name, waiting briefly: a
// pipelined write's span ends when the connection drains it, which the
// client sees at the same time.
func spansNamed(t *testing.T, exp *tracetest.InMemoryExporter, name string, n int) []tracetest.SpanStub {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		out := spansNamedNow(exp, name)
		if len(out) >= n || time.Now().After(deadline) {
			if len(out) != n {
				t.Fatalf("%d spans named %q, want %d", len(out), name, n)
			}
			return out
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// whileBlocked runs read (a blocking read on another client) on its own
// goroutine, runs args on c once a client is blocked, and fails the test
// unless read then returns nil.
func whileBlocked(t *testing.T, c *redis.Client, read func() error, args ...any) {
	t.Helper()
	got := make(chan error, 1)
	go func() { got <- read() }()
	waitBlocked(t, c, 1)
	mustDo(t, c, args...)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

// spansNamedNow returns the ended spans named name, without waiting.
func spansNamedNow(exp *tracetest.InMemoryExporter, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// linkedFrom returns the commit spans that link to sc.
func linkedFrom(exp *tracetest.InMemoryExporter, sc trace.SpanContext) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name != "commit" {
			continue
		}
		for _, l := range s.Links {
			if l.SpanContext.SpanID() == sc.SpanID() && l.SpanContext.TraceID() == sc.TraceID() {
				out = append(out, s)
			}
		}
	}
	return out
}

func TestTelemetryCommandSpan(t *testing.T) {
	ts, exp, _, _ := tracedServer(t, telemetry.Config{})
	c := ts.client(t)
	ctx := context.Background()
	mustDo(t, c, "SELECT", 3)
	mustDo(t, c, "SET", "k", "v")

	set := spansNamed(t, exp, "SET", 1)[0]
	if set.SpanKind != trace.SpanKindServer {
		t.Errorf("SET span kind %v, want server", set.SpanKind)
	}
	if set.Parent.IsValid() {
		t.Errorf("SET span has a parent %v: each command starts a trace", set.Parent)
	}
	want := map[string]string{
		"db.system.name":    "redis",
		"db.operation.name": "SET",
		"db.namespace":      "3",
		"client.address":    "127.0.0.1",
		"server.address":    "127.0.0.1",
	}
	for k, v := range want {
		if got, ok := spanAttr(set, k); !ok || got.AsString() != v {
			t.Errorf("SET span %s = %v, want %q", k, got.Emit(), v)
		}
	}
	port, _ := spanAttr(set, "server.port")
	if !strings.HasSuffix(ts.addr, ":"+port.Emit()) {
		t.Errorf("server.port %s, server on %s", port.Emit(), ts.addr)
	}
	if _, ok := spanAttr(set, "db.query.text"); ok {
		t.Errorf("db.query.text recorded without --otel-record-args")
	}
	if set.Status.Code == codes.Error {
		t.Errorf("SET span status %v", set.Status)
	}
	// Its commit links to it.
	commits := linkedFrom(exp, set.SpanContext)
	if len(commits) != 1 {
		t.Fatalf("%d commit spans link to SET, want 1", len(commits))
	}
	cm := commits[0]
	if w, _ := spanAttr(cm, "sediment.commit.records"); w.AsInt64() != 1 {
		t.Errorf("commit records %v, want 1", w.Emit())
	}
	if sync, ok := spanAttr(cm, "sediment.commit.sync"); !ok || sync.AsBool() {
		t.Errorf("commit span sediment.commit.sync = %v (present %v), want false under everysec", sync.AsBool(), ok)
	}
	if b, _ := spanAttr(cm, "sediment.commit.log_bytes"); b.AsInt64() <= 0 {
		t.Errorf("commit log_bytes %v, want > 0", b.Emit())
	}
	if !cm.StartTime.Before(cm.EndTime) || cm.StartTime.Before(set.StartTime) || cm.EndTime.After(set.EndTime) {
		t.Errorf("commit [%v, %v] not inside SET [%v, %v]", cm.StartTime, cm.EndTime, set.StartTime, set.EndTime)
	}

	// An error reply.
	mustDo(t, c, "SET", "s", "abc")
	mustErr(t, c, "ERR value is not an integer or out of range", "INCR", "s")
	mustDo(t, c, "LPUSH", "l", "x")
	if err := c.Get(ctx, "l").Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
		t.Fatalf("GET of a list: %v", err)
	}
	incr := spansNamed(t, exp, "INCR", 1)[0]
	if incr.Status.Code != codes.Error || incr.Status.Description != "ERR value is not an integer or out of range" {
		t.Errorf("INCR status %+v", incr.Status)
	}
	if code, _ := spanAttr(incr, "db.response.status_code"); code.AsString() != "ERR" {
		t.Errorf("INCR db.response.status_code %q, want ERR", code.AsString())
	}
	get := spansNamed(t, exp, "GET", 1)[0]
	if code, _ := spanAttr(get, "db.response.status_code"); code.AsString() != "WRONGTYPE" {
		t.Errorf("GET db.response.status_code %q, want WRONGTYPE", code.AsString())
	}
	if len(linkedFrom(exp, get.SpanContext)) != 0 {
		t.Errorf("a read is linked from a commit")
	}
	// A subcommand names its span.
	mustDo(t, c, "CLIENT", "ID")
	spansNamed(t, exp, "CLIENT ID", 1)
	// An unknown subcommand does not name a span: names stay bounded.
	if _, err := do(t, c, "CLIENT", "NOSUCH-1234"); err == nil {
		t.Fatal("CLIENT NOSUCH-1234 succeeded")
	}
	spansNamed(t, exp, "CLIENT", 1)
}

func TestTelemetryPipeline(t *testing.T) {
	ts, exp, _, _ := tracedServer(t, telemetry.Config{})
	c := ts.client(t)
	ctx := context.Background()
	p := c.Pipeline()
	for i := 0; i < 20; i++ {
		p.XAdd(ctx, &redis.XAddArgs{Stream: "s", Values: []string{"f", "v"}})
	}
	p.XLen(ctx, "s")
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	adds := spansNamed(t, exp, "XADD", 20)
	spansNamed(t, exp, "XLEN", 1)
	ids := map[trace.SpanID]bool{}
	writes := 0
	for _, a := range adds {
		if ids[a.SpanContext.SpanID()] {
			t.Fatalf("two XADD spans share span ID %v", a.SpanContext.SpanID())
		}
		ids[a.SpanContext.SpanID()] = true
		cs := linkedFrom(exp, a.SpanContext)
		if len(cs) != 1 {
			t.Fatalf("XADD linked from %d commits, want 1", len(cs))
		}
	}
	// Every commit's link count is within its writes; together they cover all 20.
	for _, s := range exp.GetSpans() {
		if s.Name != "commit" {
			continue
		}
		w, _ := spanAttr(s, "sediment.commit.writes")
		if int64(len(s.Links)) > w.AsInt64() {
			t.Errorf("commit with %d links but %d writes", len(s.Links), w.AsInt64())
		}
		writes += len(s.Links)
	}
	if writes != 20 {
		t.Errorf("commits link %d writes, want 20", writes)
	}
}

func TestTelemetryExecAndBlock(t *testing.T) {
	ts, exp, _, _ := tracedServer(t, telemetry.Config{RecordArgs: true})
	c := ts.client(t)
	ctx := context.Background()
	if _, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "a", "1", 0)
		p.Incr(ctx, "a")
		p.Get(ctx, "a")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	exec := spansNamed(t, exp, "EXEC", 1)[0]
	for _, name := range []string{"SET", "INCR", "GET"} {
		s := spansNamed(t, exp, name, 1)[0]
		if s.Parent.SpanID() != exec.SpanContext.SpanID() || s.SpanContext.TraceID() != exec.SpanContext.TraceID() {
			t.Errorf("%s inside EXEC: parent %v, want the EXEC span %v", name, s.Parent.SpanID(), exec.SpanContext.SpanID())
		}
		if s.SpanKind != trace.SpanKindInternal {
			t.Errorf("%s inside EXEC: kind %v, want internal", name, s.SpanKind)
		}
	}
	if q, _ := spanAttr(spansNamed(t, exp, "SET", 1)[0], "db.query.text"); q.AsString() != "set a 1" {
		t.Errorf("db.query.text %q, want %q", q.AsString(), "set a 1")
	}
	if len(linkedFrom(exp, exec.SpanContext)) != 1 {
		t.Errorf("EXEC's commit does not link to it")
	}

	// A blocked XREADGROUP woken by an XADD: its wait is a child span.
	mustDo(t, c, "XGROUP", "CREATE", "q", "g", "$", "MKSTREAM")
	reader := ts.client(t)
	whileBlocked(t, c, func() error {
		return reader.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "c", Streams: []string{"q", ">"}, Block: 5 * time.Second}).Err()
	}, "XADD", "q", "*", "f", "v")
	xrg := spansNamed(t, exp, "XREADGROUP", 1)[0]
	block := spansNamed(t, exp, "block", 1)[0]

	if block.Parent.SpanID() != xrg.SpanContext.SpanID() {
		t.Errorf("block span's parent %v, want XREADGROUP %v", block.Parent.SpanID(), xrg.SpanContext.SpanID())
	}
	if w, ok := spanAttr(block, "sediment.block.woken"); !ok || !w.AsBool() {
		t.Errorf("block span woken = %v", w.Emit())
	}
	// A blocked XREAD waits in the registry, woken through NATS: the XADD
	// that wakes it publishes the wake-up in a child span. (The blocked
	// XREADGROUP above was served by the writer: no wake-up, no span.)
	if n := len(spansNamedNow(exp, "wake")); n != 0 {
		t.Errorf("%d wake spans before any XREAD waited", n)
	}
	// The XADD must come once the waiter is in the registry: INFO counts a
	// client blocked just before it registers, and an XADD in between is
	// seen by the waiter's re-check instead, with no wake-up to publish.
	got := make(chan error, 1)
	go func() {
		got <- reader.XRead(ctx, &redis.XReadArgs{Streams: []string{"q2", "$"}, Block: 5 * time.Second}).Err()
	}()
	for deadline := time.Now().Add(5 * time.Second); !ts.wake.reg.waiting(waitKey{0, "q2"}); {
		if time.Now().After(deadline) {
			t.Fatal("the XREAD never waited in the registry")
		}
		time.Sleep(time.Millisecond)
	}
	mustDo(t, c, "XADD", "q2", "*", "f", "v")
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	wake := spansNamed(t, exp, "wake", 1)[0]
	var xadd tracetest.SpanStub
	for _, sp := range exp.GetSpans() {
		if sp.Name == "XADD" {
			xadd = sp // the last: q2's
		}
	}
	if wake.Parent.SpanID() != xadd.SpanContext.SpanID() {
		t.Errorf("wake span's parent %v, want the XADD %v", wake.Parent.SpanID(), xadd.SpanContext.SpanID())
	}
	if n, _ := spanAttr(wake, "sediment.wake.subjects"); n.AsInt64() != 1 {
		t.Errorf("wake subjects %v, want 1", n.Emit())
	}
	// A timed-out wait.
	if err := reader.BLPop(ctx, 20*time.Millisecond, "nothing").Err(); err != redis.Nil {
		t.Fatalf("BLPOP: %v", err)
	}
	blpop := spansNamed(t, exp, "BLPOP", 1)[0]
	found := false
	for _, s := range spansNamed(t, exp, "block", 3) { // XREADGROUP's, XREAD's, BLPOP's
		if s.Parent.SpanID() == blpop.SpanContext.SpanID() {
			found = true
			if w, _ := spanAttr(s, "sediment.block.woken"); w.AsBool() {
				t.Errorf("a timed-out BLPOP's wait says woken")
			}
		}
	}
	if !found {
		t.Errorf("BLPOP's wait has no block span")
	}
}

func TestTelemetryMetrics(t *testing.T) {
	ts, _, reader, _ := tracedServer(t, telemetry.Config{})
	c := ts.client(t)
	mustDo(t, c, "CONFIG", "RESETSTAT") // the command table's counters are the process's
	for i := 0; i < 5; i++ {
		mustDo(t, c, "SET", "k", i)
	}
	mustDo(t, c, "SET", "s", "x")
	mustErr(t, c, "ERR value is not an integer or out of range", "INCR", "s")

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	metrics := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			metrics[m.Name] = m
		}
	}
	hist := func(name string) metricdata.Histogram[float64] {
		h, ok := metrics[name].Data.(metricdata.Histogram[float64])
		if !ok {
			t.Fatalf("%s: %T, want a float64 histogram", name, metrics[name].Data)
		}
		return h
	}
	count := func(h metricdata.Histogram[float64], op, outcome string) uint64 {
		for _, dp := range h.DataPoints {
			o, _ := dp.Attributes.Value("db.operation.name")
			oc, _ := dp.Attributes.Value("outcome")
			if o.AsString() == op && oc.AsString() == outcome {
				return dp.Count
			}
		}
		return 0
	}
	cmd := hist("sediment.command.duration")
	if n := count(cmd, "SET", "ok"); n != 6 {
		t.Errorf("SET ok count %d, want 6", n)
	}
	if n := count(cmd, "INCR", "error"); n != 1 {
		t.Errorf("INCR error count %d, want 1", n)
	}
	if n := count(cmd, "INCR", "ok"); n != 0 {
		t.Errorf("INCR ok count %d, want 0", n)
	}
	var commits uint64
	for _, dp := range hist("sediment.commit.duration").DataPoints {
		commits += dp.Count
	}
	if commits < 6 {
		t.Errorf("%d commit groups recorded, want at least the 6 SETs'", commits)
	}
	gauge := func(name string) int64 {
		g, ok := metrics[name].Data.(metricdata.Gauge[int64])
		if !ok || len(g.DataPoints) != 1 {
			t.Fatalf("%s: %T %+v", name, metrics[name].Data, metrics[name].Data)
		}
		return g.DataPoints[0].Value
	}
	if n := gauge("sediment.clients.connected"); n != 1 {
		t.Errorf("connected %d, want 1", n)
	}
	if n := gauge("sediment.storage.fault"); n != 0 {
		t.Errorf("storage fault %d with none set", n)
	}
	sum, ok := metrics["sediment.changelog.records"].Data.(metricdata.Sum[int64])
	if !ok || len(sum.DataPoints) != 1 || sum.DataPoints[0].Value != int64(ts.store.LastSeq()) || sum.DataPoints[0].Value < 6 {
		t.Errorf("changelog records %+v, want %d", metrics["sediment.changelog.records"].Data, ts.store.LastSeq())
	}
	written, ok := metrics["sediment.storage.bytes_written"].Data.(metricdata.Sum[int64])
	var logBytes int64
	for _, dp := range written.DataPoints {
		if k, _ := dp.Attributes.Value("kind"); k.AsString() == "changelog" {
			logBytes = dp.Value
		}
	}
	if !ok || len(written.DataPoints) != 3 || logBytes <= 0 {
		t.Errorf("bytes written %+v: want changelog, flush and compaction, change-log bytes > 0", metrics["sediment.storage.bytes_written"].Data)
	}
	amp, ok := metrics["sediment.storage.write_amplification"].Data.(metricdata.Gauge[float64])
	if !ok || len(amp.DataPoints) != 1 || amp.DataPoints[0].Value < 1 {
		t.Errorf("write amplification %+v, want >= 1 after writes", metrics["sediment.storage.write_amplification"].Data)
	}
}

// TestTelemetryPrometheus scrapes /metrics and finds every metric that
// docs/telemetry.md lists, and checks /healthz and /readyz.
func TestTelemetryPrometheus(t *testing.T) {
	tel, err := telemetry.Setup(context.Background(), telemetry.Config{Prometheus: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tel.Shutdown(context.Background()) })
	// Under always every reply waits for an fsync: the fsync histogram has data.
	ts := newTestServer(t, func(o *Options) {
		o.Telemetry, o.AppendFsync, o.MetricsStreams = tel, materialize.SyncAlways, []string{"s"}
	})
	c := ts.client(t)
	mustDo(t, c, "SET", "k", "v")
	mustDo(t, c, "XADD", "s", "*", "f", "v")
	mustDo(t, c, "XGROUP", "CREATE", "s", "g", "0")
	web := httptest.NewServer(tel.Handler(ts.Ready))
	defer web.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get(web.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get("/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	doc, err := os.ReadFile("../docs/telemetry.md")
	if err != nil {
		t.Fatal(err)
	}
	names := regexp.MustCompile("(?m)^\\| `(sediment\\.[a-z_.]+)` \\|").FindAllStringSubmatch(string(doc), -1)
	if len(names) < 10 {
		t.Fatalf("found %d metric rows in docs/telemetry.md", len(names))
	}
	for _, m := range names {
		prom := strings.ReplaceAll(m[1], ".", "_")
		if !regexp.MustCompile("(?m)^" + regexp.QuoteMeta(prom) + "[_a-z]*(\\{| )").MatchString(body) {
			t.Errorf("%s (%s...) is documented but not in /metrics", m[1], prom)
		}
	}
	// Every metric the Grafana dashboard of deploy/ plots is exported.
	dash, err := os.ReadFile("../deploy/grafana/dashboards/sediment.json")
	if err != nil {
		t.Fatal(err)
	}
	plotted := regexp.MustCompile(`sediment_[a-z_]+`).FindAllString(string(dash), -1)
	if len(plotted) < 10 {
		t.Fatalf("the dashboard plots %d metrics", len(plotted))
	}
	for _, m := range plotted {
		if !regexp.MustCompile("(?m)^" + m + "(\\{| )").MatchString(body) {
			t.Errorf("the dashboard plots %s, which /metrics does not have", m)
		}
	}
	if !strings.Contains(body, `db_operation_name="SET"`) {
		t.Errorf("/metrics has no SET series")
	}
	if code, body := get("/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	if code, body := get("/readyz"); code != 200 || body != "ok\n" {
		t.Errorf("/readyz: %d %q", code, body)
	}
	ts.Close()
	if code, body := get("/readyz"); code != 503 || !strings.Contains(body, "shutting down") {
		t.Errorf("/readyz after Close: %d %q", code, body)
	}
}

// linkTo returns the links of s to the span sc.
func linkTo(s tracetest.SpanStub, sc trace.SpanContext) []sdktrace.Link {
	var out []sdktrace.Link
	for _, l := range s.Links {
		if l.SpanContext.TraceID() == sc.TraceID() && l.SpanContext.SpanID() == sc.SpanID() {
			out = append(out, l)
		}
	}
	return out
}

func linkAttr(l sdktrace.Link, key string) string {
	for _, kv := range l.Attributes {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

// TestTelemetryMessagePath follows entries from their XADD to every
// command that delivers them: each delivering span links to the XADD span,
// with the entry's ID on the link, also after a restart (the context is
// stored with the entry), and the entries' fields are unchanged.
func TestTelemetryMessagePath(t *testing.T) {
	dir := t.TempDir()
	exp := tracetest.NewInMemoryExporter()
	tel, err := telemetry.Setup(context.Background(), telemetry.Config{SpanExporter: exp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tel.Shutdown(context.Background()) })
	ctx := context.Background()
	ts := startTestServer(t, dir, func(o *Options) { o.Telemetry = tel })
	c := ts.client(t)
	mustDo(t, c, "XGROUP", "CREATE", "q", "g", "$", "MKSTREAM")
	id1 := mustDo(t, c, "XADD", "q", "*", "f", "1").(string)
	add1 := spansNamed(t, exp, "XADD", 1)[0]
	for k, v := range map[string]string{"messaging.system": "redis", "messaging.operation.type": "send",
		"messaging.destination.name": "q", "messaging.message.id": id1} {
		if got, _ := spanAttr(add1, k); got.Emit() != v {
			t.Errorf("XADD span %s = %q, want %q", k, got.Emit(), v)
		}
	}
	// The fields a client reads are the fields it added.
	xr, err := c.XRange(ctx, "q", "-", "+").Result()
	if err != nil || len(xr) != 1 || len(xr[0].Values) != 1 || xr[0].Values["f"] != "1" {
		t.Fatalf("XRANGE: %v %v", xr, err)
	}

	// XREADGROUP delivers it.
	if _, err := c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "c1", Streams: []string{"q", ">"}, Block: -1}).Result(); err != nil {
		t.Fatal(err)
	}
	rg := spansNamed(t, exp, "XREADGROUP", 1)[0]
	links := linkTo(rg, add1.SpanContext)
	if len(links) != 1 {
		t.Fatalf("XREADGROUP has %d links to the XADD span, want 1: %+v", len(links), rg.Links)
	}
	if got := linkAttr(links[0], "messaging.message.id"); got != id1 {
		t.Errorf("link message id %q, want %q", got, id1)
	}
	for k, v := range map[string]string{"messaging.operation.type": "receive", "messaging.destination.name": "q",
		"messaging.consumer.group.name": "g", "messaging.batch.message_count": "1"} {
		if got, _ := spanAttr(rg, k); got.Emit() != v {
			t.Errorf("XREADGROUP span %s = %q, want %q", k, got.Emit(), v)
		}
	}
	// XREAD and XCLAIM deliver it too.
	if _, err := c.XRead(ctx, &redis.XReadArgs{Streams: []string{"q", "0"}, Block: -1}).Result(); err != nil {
		t.Fatal(err)
	}
	if len(linkTo(spansNamed(t, exp, "XREAD", 1)[0], add1.SpanContext)) != 1 {
		t.Errorf("XREAD does not link to the XADD span")
	}
	mustDo(t, c, "XCLAIM", "q", "g", "c2", 0, id1)
	if len(linkTo(spansNamed(t, exp, "XCLAIM", 1)[0], add1.SpanContext)) != 1 {
		t.Errorf("XCLAIM does not link to the XADD span")
	}

	// After a restart, XAUTOCLAIM and a CLAIM read still find the context.
	ts.Close()
	exp.Reset()
	ts = startTestServer(t, dir, func(o *Options) { o.Telemetry = tel })
	c = ts.client(t)
	mustDo(t, c, "XAUTOCLAIM", "q", "g", "c3", 0, "0")
	if len(linkTo(spansNamed(t, exp, "XAUTOCLAIM", 1)[0], add1.SpanContext)) != 1 {
		t.Errorf("XAUTOCLAIM after a restart does not link to the XADD span")
	}
	mustDo(t, c, "XREADGROUP", "GROUP", "g", "c4", "CLAIM", 0, "STREAMS", "q", ">")
	if len(linkTo(spansNamed(t, exp, "XREADGROUP", 1)[0], add1.SpanContext)) != 1 {
		t.Errorf("XREADGROUP CLAIM does not link to the XADD span")
	}

	// A blocked XREADGROUP woken by an XADD links to that XADD.
	reader := ts.client(t)
	whileBlocked(t, c, func() error {
		return reader.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "c5", Streams: []string{"q", ">"}, Block: 5 * time.Second}).Err()
	}, "XADD", "q", "*", "f", "2")
	add2 := spansNamed(t, exp, "XADD", 1)[0]
	var woken tracetest.SpanStub
	for _, s := range spansNamed(t, exp, "XREADGROUP", 2) {
		if len(s.Links) == 1 && s.Links[0].SpanContext.SpanID() == add2.SpanContext.SpanID() {
			woken = s
		}
	}
	if woken.Name == "" {
		t.Errorf("the woken XREADGROUP does not link to the XADD that woke it")
	}
}

// TestTelemetryFeedTraceparent: a traced XADD's change-feed message
// carries its span's context in a traceparent header, from which a
// nats.go subscriber continues the writer's trace; the payload's args are
// the entry's ID and fields alone. Other traced writes' messages carry
// theirs too; expiry's, none.
func TestTelemetryFeedTraceparent(t *testing.T) {
	ts, exp, _, _ := tracedServer(t, telemetry.Config{})
	c := ts.client(t)
	ch := feedSub(t, ts, "sediment.chg.0.stream.>")
	id := mustDo(t, c, "XADD", "s", "*", "f", "v").(string)
	add := spansNamed(t, exp, "XADD", 1)[0]
	var msg *nats.Msg
	select {
	case msg = <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("no change-feed message")
	}
	fm, err := feed.Decode(msg.Data)
	if err != nil || fm.Op != "xadd" {
		t.Fatalf("%v %+v", err, fm)
	}
	args, err := fm.ArgBytes()
	if err != nil || len(args) != 3 || string(args[1]) != "f" || string(args[2]) != "v" {
		t.Fatalf("xadd args %q %v, want the ID, f, v", args, err)
	}
	if got, err := codec.DecodeIDArg(args[0]); err != nil || got.String() != id {
		t.Fatalf("xadd ID %v %v, want %s", got, err, id)
	}
	// What an instrumented subscriber does with the header: NATS headers
	// are case-sensitive, so its carrier reads nats.Header as is.
	ctx := propagation.TraceContext{}.Extract(context.Background(), natsCarrier(msg.Header))
	sc := trace.SpanContextFromContext(ctx)
	// It names the feed's send span, the XADD span's child. (The XADD's
	// record holds two events, both sent with a send span of their own.)
	var send tracetest.SpanStub
	for deadline := time.Now().Add(5 * time.Second); send.Name == "" && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		for _, sp := range spansNamedNow(exp, "send") {
			if sp.SpanContext.SpanID() == sc.SpanID() {
				send = sp
			}
		}
	}
	if sc.TraceID() != add.SpanContext.TraceID() || sc.SpanID() != send.SpanContext.SpanID() || !sc.IsRemote() {
		t.Fatalf("traceparent %q: %v, want the send span %v", msg.Header.Get("traceparent"), sc, send.SpanContext)
	}
	if send.Parent.SpanID() != add.SpanContext.SpanID() || send.SpanKind != trace.SpanKindProducer {
		t.Errorf("send span: parent %v kind %v, want the XADD span %v, producer", send.Parent.SpanID(), send.SpanKind, add.SpanContext.SpanID())
	}
	for k, v := range map[string]string{"messaging.system": "nats", "messaging.operation.type": "send", "messaging.destination.name": msg.Subject} {
		if got, _ := spanAttr(send, k); got.Emit() != v {
			t.Errorf("send span %s = %q, want %q", k, got.Emit(), v)
		}
	}
	// Any other traced write carries its command's context (the record's)
	// in the same way; a deletion by active expiry, which no command made,
	// carries none.
	// record returns the messages of the next record (after those of the
	// records before it, which it skips).
	record := func(what string, after uint64) []*nats.Msg {
		t.Helper()
		var out []*nats.Msg
		for {
			select {
			case m := <-ch:
				fm, err := feed.Decode(m.Data)
				if err != nil {
					t.Fatal(err)
				}
				if fm.Seq <= after {
					continue
				}
				if out = append(out, m); fm.I == fm.N-1 {
					return out
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("no change-feed record for %s", what)
			}
		}
	}
	seq := ts.store.LastSeq()
	for _, cmd := range [][]any{{"XTRIM", "s", "MAXLEN", 0}, {"PEXPIRE", "s", 20}} {
		mustDo(t, c, cmd...)
		span := spansNamed(t, exp, cmd[0].(string), 1)[0]
		for _, m := range record(cmd[0].(string), seq) {
			sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), natsCarrier(m.Header)))
			if !sc.IsValid() || sc.TraceID() != span.SpanContext.TraceID() {
				t.Errorf("%s's message %s: traceparent %q, want a span of the %s span's trace %v", cmd[0], m.Data, m.Header.Get("traceparent"), cmd[0], span.SpanContext.TraceID())
			}
		}
		seq = ts.store.LastSeq()
	}
	for _, m := range record("the expiry", seq) {
		if h := m.Header.Get("traceparent"); h != "" {
			t.Errorf("the expiry's message (%s) has traceparent %q", m.Data, h)
		}
	}
}

// natsCarrier is an OpenTelemetry TextMapCarrier over NATS message
// headers, as a nats.go subscriber writes it (nats.Header is
// case-sensitive, unlike http.Header).
type natsCarrier nats.Header

func (c natsCarrier) Get(key string) string { return nats.Header(c).Get(key) }
func (c natsCarrier) Set(key, value string) { nats.Header(c).Set(key, value) }
func (c natsCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// TestTelemetryStreamMetrics: --metrics-streams' streams report their
// length and their groups' lag, pending count and consumers.
func TestTelemetryStreamMetrics(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	var reader *sdkmetric.ManualReader
	tel, err := telemetry.Setup(context.Background(), telemetry.Config{SpanExporter: exp,
		MetricReader: func(p sdkmetric.Producer) sdkmetric.Reader {
			reader = sdkmetric.NewManualReader(sdkmetric.WithProducer(p))
			return reader
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tel.Shutdown(context.Background()) })
	ts := newTestServer(t, func(o *Options) {
		o.Telemetry, o.InMemory, o.MetricsStreams = tel, true, []string{"orders", "ev:*", "nosuch"}
	})
	c := ts.client(t)
	for i := 0; i < 3; i++ {
		mustDo(t, c, "XADD", "orders", "*", "n", i)
	}
	mustDo(t, c, "XGROUP", "CREATE", "orders", "billing", "0")
	mustDo(t, c, "XREADGROUP", "GROUP", "billing", "c1", "COUNT", 1, "STREAMS", "orders", ">")
	mustDo(t, c, "XADD", "ev:1", "*", "f", "v")
	mustDo(t, c, "XADD", "other", "*", "f", "v")
	mustDo(t, c, "SET", "ev:str", "x") // matches the pattern, not a stream
	mustDo(t, c, "SELECT", 2)
	mustDo(t, c, "XADD", "orders", "*", "f", "v")

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if !strings.HasPrefix(m.Name, "sediment.stream.") {
				continue
			}
			for _, dp := range m.Data.(metricdata.Gauge[int64]).DataPoints {
				db, _ := dp.Attributes.Value("db.namespace")
				key, _ := dp.Attributes.Value("messaging.destination.name")
				g, _ := dp.Attributes.Value("messaging.consumer.group.name")
				got[m.Name+" "+db.AsString()+" "+key.AsString()+" "+g.AsString()] = dp.Value
			}
		}
	}
	want := map[string]int64{
		"sediment.stream.length 0 orders ":                 3,
		"sediment.stream.length 0 ev:1 ":                   1,
		"sediment.stream.length 2 orders ":                 1,
		"sediment.stream.group.lag 0 orders billing":       2,
		"sediment.stream.group.pending 0 orders billing":   1,
		"sediment.stream.group.consumers 0 orders billing": 1,
	}
	if len(got) != len(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d (all: %v)", k, got[k], v, got)
		}
	}
}
