package telemetry

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// clearEnv unsets every variable Setup's on/off rules read.
func clearEnv(t *testing.T) {
	for _, k := range []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
		"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES"} {
		t.Setenv(k, "")
	}
}

func shutdown(t *testing.T, tel *Telemetry) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	tel.Shutdown(ctx) // an OTLP exporter with nobody listening may fail its last export
}

func TestSetupOnOff(t *testing.T) {
	cases := []struct {
		name           string
		env            map[string]string
		cfg            Config
		traces, metric bool
	}{
		{name: "nothing set: nothing exported", traces: false, metric: false},
		{name: "an OTLP endpoint: both", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}, traces: true, metric: true},
		{name: "a traces endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:1/v1/traces"}, traces: true},
		{name: "a metrics endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://127.0.0.1:1/v1/metrics"}, metric: true},
		{name: "console traces", env: map[string]string{"OTEL_TRACES_EXPORTER": "console"}, traces: true},
		{name: "none", env: map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"}},
		{name: "endpoint but traces none", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_TRACES_EXPORTER": "none"}, metric: true},
		{name: "disabled wins", env: map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"},
			cfg: Config{Prometheus: true, Stdout: &bytes.Buffer{}}},
		{name: "stdout flag", cfg: Config{Stdout: &bytes.Buffer{}}, traces: true},
		{name: "sampler always_off: traces off, metrics on", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_TRACES_SAMPLER": "always_off"}, metric: true},
		{name: "ratio 0", env: map[string]string{"OTEL_TRACES_EXPORTER": "console", "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0"}},
		{name: "ratio 0.5", env: map[string]string{"OTEL_TRACES_EXPORTER": "console", "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.5"}, traces: true},
		{name: "prometheus flag", cfg: Config{Prometheus: true}, metric: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			tel, err := Setup(context.Background(), tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer shutdown(t, tel)
			if got := tel.Tracer() != nil; got != tc.traces {
				t.Errorf("traces on = %v, want %v", got, tc.traces)
			}
			if got := tel.Meter() != nil; got != tc.metric {
				t.Errorf("metrics on = %v, want %v", got, tc.metric)
			}
		})
	}
	var nilTel *Telemetry
	if nilTel.Tracer() != nil || nilTel.Meter() != nil || nilTel.RecordArgs() || nilTel.Shutdown(context.Background()) != nil {
		t.Errorf("a nil Telemetry is not off")
	}
}

// TestStdoutResource checks that spans reach --otel-stdout's writer with
// the environment's service name and resource attributes.
func TestStdoutResource(t *testing.T) {
	clearEnv(t)
	t.Setenv("OTEL_SERVICE_NAME", "sediment-7")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=test")
	var out bytes.Buffer
	tel, err := Setup(context.Background(), Config{Stdout: &out, Version: "v9"})
	if err != nil {
		t.Fatal(err)
	}
	_, sp := tel.Tracer().Start(context.Background(), "PING")
	sp.End()
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"Name":"PING"`, `"Value":"sediment-7"`, `"Key":"deployment.environment.name"`, `"Key":"service.version","Value":{"Type":"STRING","Value":"v9"}`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout spans lack %s:\n%s", want, out.String())
		}
	}
}

func TestHandler(t *testing.T) {
	clearEnv(t)
	tel, err := Setup(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	ready := errors.New("not listening yet")
	web := httptest.NewServer(tel.Handler(func() error { return ready }))
	defer web.Close()
	status := func(path string) int {
		resp, err := http.Get(web.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := status("/metrics"); c != http.StatusNotFound {
		t.Errorf("/metrics without Prometheus: %d, want 404", c)
	}
	if c := status("/healthz"); c != 200 {
		t.Errorf("/healthz: %d", c)
	}
	if c := status("/readyz"); c != http.StatusServiceUnavailable {
		t.Errorf("/readyz while not ready: %d, want 503", c)
	}
	ready = nil
	if c := status("/readyz"); c != 200 {
		t.Errorf("/readyz when ready: %d", c)
	}
}

func TestLogHandler(t *testing.T) {
	var out bytes.Buffer
	log := slog.New(LogHandler(slog.NewJSONHandler(&out, nil))).With("client", 7)
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5}, TraceFlags: trace.FlagsSampled})
	log.WarnContext(trace.ContextWithSpanContext(context.Background(), sc), "inside")
	log.Warn("outside")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%q", out.String())
	}
	if !strings.Contains(lines[0], `"trace_id":"01020300000000000000000000000000","span_id":"0405000000000000"`) || !strings.Contains(lines[0], `"client":7`) {
		t.Errorf("inside a span: %s", lines[0])
	}
	if strings.Contains(lines[1], "trace_id") {
		t.Errorf("outside a span: %s", lines[1])
	}
}
