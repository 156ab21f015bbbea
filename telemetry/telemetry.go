// Package telemetry sets up OpenTelemetry traces and metrics for a
// Sediment process from the standard OTEL_* environment variables, and
// serves Prometheus's /metrics with /healthz and /readyz
// (docs/rfcs/20261127_telemetry.md, docs/telemetry.md).
//
// The span exporter comes from the contrib autoexport package
// (OTEL_TRACES_EXPORTER, OTEL_EXPORTER_OTLP_*), the sampler from the SDK's
// default (OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG) and the resource
// from resource.WithFromEnv (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES).
// Setup reads only what turns a signal on, the metrics exporter's name
// and protocol (it builds the OTLP and console readers itself, to give
// them the server's own histograms: SetProducer) and whether the sampler
// can sample at all (neverSamples).
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of Sediment's tracer and meter.
const ScopeName = "github.com/sediment-dev/sediment"

// Config is what the command line adds to the environment.
type Config struct {
	// Stdout, when set, receives every span as JSON (--otel-stdout),
	// whatever the environment says about exporters.
	Stdout io.Writer
	// Prometheus makes a Prometheus registry with the OpenTelemetry
	// Prometheus exporter on it, served by Handler (--metrics-addr).
	Prometheus bool
	// RecordArgs puts the arguments of each command on its span
	// (--otel-record-args).
	RecordArgs bool
	// Version is the service.version resource attribute.
	Version string

	// SpanExporter and MetricReader, when set, are used instead of the
	// environment's (tests: the SDK's in-memory exporter and manual
	// reader). SpanExporter is wrapped in a synchronous processor;
	// MetricReader is given the producer of the metrics the server keeps
	// itself (SetProducer), to pass to sdkmetric.WithProducer.
	SpanExporter sdktrace.SpanExporter
	MetricReader func(sdkmetric.Producer) sdkmetric.Reader
}

// ProduceFunc returns metrics kept outside the SDK (the server's own
// per-command latency histograms): sdkmetric.Producer's Produce.
type ProduceFunc func(context.Context) ([]metricdata.ScopeMetrics, error)

// lateProducer is the sdkmetric.Producer given to every reader at Setup,
// producing whatever SetProducer installs later (nothing until then).
type lateProducer struct{ fn atomic.Pointer[ProduceFunc] }

func (p *lateProducer) Produce(ctx context.Context) ([]metricdata.ScopeMetrics, error) {
	if f := p.fn.Load(); f != nil {
		return (*f)(ctx)
	}
	return nil, nil
}

// Telemetry is a process's tracer and meter. Its zero value (or nil) is
// telemetry off: Tracer and Meter return nil.
type Telemetry struct {
	tracer     trace.Tracer
	meter      metric.Meter
	recordArgs bool
	tp         *sdktrace.TracerProvider
	mp         *sdkmetric.MeterProvider
	registry   *prometheus.Registry
	producer   lateProducer
}

// SetProducer makes every metric reader also export what fn produces, at
// each collection; nil stops it. A server installs its own while it runs.
func (t *Telemetry) SetProducer(fn ProduceFunc) {
	if t == nil {
		return
	}
	if fn == nil {
		t.producer.fn.Store(nil)
		return
	}
	t.producer.fn.Store(&fn)
}

// Tracer returns the tracer, or nil when traces are off.
func (t *Telemetry) Tracer() trace.Tracer {
	if t == nil {
		return nil
	}
	return t.tracer
}

// Meter returns the meter, or nil when metrics are off.
func (t *Telemetry) Meter() metric.Meter {
	if t == nil {
		return nil
	}
	return t.meter
}

// RecordArgs reports whether spans carry the commands' arguments.
func (t *Telemetry) RecordArgs() bool { return t != nil && t.recordArgs }

// Setup builds the providers that the environment and cfg ask for.
//
// Traces are on when OTEL_TRACES_EXPORTER names an exporter (not "none"),
// when an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), or with cfg.Stdout. Metrics are on
// when OTEL_METRICS_EXPORTER names an exporter, when an OTLP endpoint is
// set (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_METRICS_ENDPOINT),
// or with cfg.Prometheus. OTEL_SDK_DISABLED=true turns both off. The SDK's
// own default (OTLP to localhost) is never used unasked.
func Setup(ctx context.Context, cfg Config) (*Telemetry, error) {
	getenv := os.Getenv
	t := &Telemetry{recordArgs: cfg.RecordArgs}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return t, nil
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		semconv.ServiceName("sediment"), semconv.ServiceVersion(cfg.Version)))
	if err != nil {
		return nil, err
	}
	// The environment's service name and attributes win over the defaults.
	envRes, err := resource.New(ctx, resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("telemetry: OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	if res, err = resource.Merge(res, envRes); err != nil {
		return nil, err
	}

	otlp := getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
	var spanOpts []sdktrace.TracerProviderOption
	switch {
	case cfg.SpanExporter != nil:
		spanOpts = append(spanOpts, sdktrace.WithSyncer(cfg.SpanExporter))
	case cfg.Stdout != nil:
		exp, err := stdouttrace.New(stdouttrace.WithWriter(cfg.Stdout))
		if err != nil {
			return nil, err
		}
		spanOpts = append(spanOpts, sdktrace.WithBatcher(exp))
	case named(getenv("OTEL_TRACES_EXPORTER")) || otlp || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "":
		exp, err := autoexport.NewSpanExporter(ctx)
		if err != nil {
			return nil, fmt.Errorf("telemetry: traces exporter: %w", err)
		}
		if !autoexport.IsNoneSpanExporter(exp) {
			spanOpts = append(spanOpts, sdktrace.WithBatcher(exp))
		}
	}
	if len(spanOpts) > 0 && neverSamples(getenv) {
		// Every command starts its own trace: a sampler that samples no
		// root span records nothing, and starting non-recording spans
		// would still cost each command (0.9 µs of CPU at GET -P 16).
		spanOpts = nil
	}
	if len(spanOpts) > 0 {
		t.tp = sdktrace.NewTracerProvider(append(spanOpts, sdktrace.WithResource(res))...)
		t.tracer = t.tp.Tracer(ScopeName, trace.WithInstrumentationVersion(cfg.Version))
	}

	var readers []sdkmetric.Option
	if cfg.MetricReader != nil {
		readers = append(readers, sdkmetric.WithReader(cfg.MetricReader(&t.producer)))
	}
	if named(getenv("OTEL_METRICS_EXPORTER")) || otlp || getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") != "" {
		r, err := metricReader(ctx, getenv, &t.producer)
		if err != nil {
			t.Shutdown(ctx)
			return nil, fmt.Errorf("telemetry: metrics exporter: %w", err)
		}
		if r != nil {
			readers = append(readers, sdkmetric.WithReader(r))
		}
	}
	if cfg.Prometheus {
		t.registry = prometheus.NewRegistry()
		exp, err := otelprom.New(otelprom.WithRegisterer(t.registry), otelprom.WithProducer(&t.producer))
		if err != nil {
			t.Shutdown(ctx)
			return nil, fmt.Errorf("telemetry: prometheus exporter: %w", err)
		}
		readers = append(readers, sdkmetric.WithReader(exp))
	}
	if len(readers) > 0 {
		t.mp = sdkmetric.NewMeterProvider(append(readers, sdkmetric.WithResource(res))...)
		t.meter = t.mp.Meter(ScopeName, metric.WithInstrumentationVersion(cfg.Version))
	}
	return t, nil
}

// metricReader returns the periodic reader OTEL_METRICS_EXPORTER asks for
// (nil for none), with p's metrics: OTLP (over OTEL_EXPORTER_OTLP_
// METRICS_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL: http/protobuf, the
// default, or grpc) or console. The exporters and the reader read their
// other variables themselves (endpoint, headers, interval). Any other
// name (prometheus) is autoexport's reader, which cannot carry p: the
// server's command histograms are then not exported (docs/telemetry.md).
func metricReader(ctx context.Context, getenv func(string) string, p sdkmetric.Producer) (sdkmetric.Reader, error) {
	var exp sdkmetric.Exporter
	var err error
	switch name := strings.TrimSpace(getenv("OTEL_METRICS_EXPORTER")); name {
	case "", "otlp":
		proto := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"))
		if proto == "" {
			proto = strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_PROTOCOL"))
		}
		switch proto {
		case "", "http/protobuf":
			exp, err = otlpmetrichttp.New(ctx)
		case "grpc":
			exp, err = otlpmetricgrpc.New(ctx)
		default:
			return nil, fmt.Errorf("OTLP protocol %q: want http/protobuf or grpc", proto)
		}
	case "console":
		exp, err = stdoutmetric.New()
	case "none":
		return nil, nil
	default:
		r, err := autoexport.NewMetricReader(ctx)
		if err != nil || autoexport.IsNoneMetricReader(r) {
			return nil, err
		}
		return r, nil
	}
	if err != nil {
		return nil, err
	}
	return sdkmetric.NewPeriodicReader(exp, sdkmetric.WithProducer(p)), nil
}

// neverSamples reports whether OTEL_TRACES_SAMPLER (with its argument)
// samples no root span: always_off, parentbased_always_off, or a trace-ID
// ratio of 0 (parent-based or not).
func neverSamples(getenv func(string) string) bool {
	switch strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER")) {
	case "always_off", "parentbased_always_off":
		return true
	case "traceidratio", "parentbased_traceidratio":
		r, err := strconv.ParseFloat(strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER_ARG")), 64)
		return err == nil && r <= 0
	}
	return false
}

// named reports whether an OTEL_*_EXPORTER value names an exporter.
func named(v string) bool {
	v = strings.TrimSpace(v)
	return v != "" && v != "none"
}

// Shutdown flushes and stops the exporters.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	var errs []error
	if t.tp != nil {
		errs = append(errs, t.tp.Shutdown(ctx))
	}
	if t.mp != nil {
		errs = append(errs, t.mp.Shutdown(ctx))
	}
	return errors.Join(errs...)
}

// Handler serves GET /metrics (Prometheus's text format, when Setup was
// asked for it; 404 otherwise), /healthz (200 while the process serves
// HTTP) and /readyz (200 when ready returns nil, else 503 with its error).
func (t *Telemetry) Handler(ready func() error) http.Handler {
	mux := http.NewServeMux()
	if t != nil && t.registry != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(t.registry, promhttp.HandlerOpts{}))
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := ready(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok\n")
	})
	return mux
}
