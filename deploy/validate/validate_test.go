// Package validate loads the deployment files of deploy/ with their own
// tools' Go loaders, since no container engine runs where the tests do:
// the compose file with compose-go (as docker compose reads it), the
// Kubernetes manifests by strict decoding into k8s.io/api types, the
// Prometheus configuration with Prometheus's loader and the collector
// configuration with the collector's, for its components. It is a module
// of its own so that these loaders stay out of Sediment's.
package validate

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	promconfig "github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/discovery"
	"go.opentelemetry.io/collector/exporter/otlpexporter"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/otelcol/otelcoltest"
	"go.opentelemetry.io/collector/processor/batchprocessor"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

func TestCompose(t *testing.T) {
	t.Setenv("SEDIMENT_REQUIREPASS", "test-password")
	opts, err := cli.NewProjectOptions([]string{"../compose.yaml"}, cli.WithWorkingDirectory(".."), cli.WithOsEnv)
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	names := p.ServiceNames()
	for _, want := range []string{"sediment", "nats-1", "nats-2", "nats-3", "otel-collector", "jaeger", "prometheus", "grafana"} {
		if !slices.Contains(names, want) {
			t.Errorf("no service %q in %v", want, names)
		}
	}
	sed := p.Services["sediment"]
	env := func(k string) string {
		if v := sed.Environment[k]; v != nil {
			return *v
		}
		return ""
	}
	if env("SEDIMENT_REQUIREPASS") != "test-password" {
		t.Errorf("SEDIMENT_REQUIREPASS = %q", env("SEDIMENT_REQUIREPASS"))
	}
	for _, n := range []string{"nats-1", "nats-2", "nats-3"} {
		if !strings.Contains(env("SEDIMENT_NATS_URL"), "nats://"+n+":4222") {
			t.Errorf("SEDIMENT_NATS_URL %q lacks %s", env("SEDIMENT_NATS_URL"), n)
		}
	}
	if env("OTEL_EXPORTER_OTLP_ENDPOINT") != "http://otel-collector:4318" || env("SEDIMENT_METRICS_ADDR") != "0.0.0.0:9121" {
		t.Errorf("sediment's telemetry settings: %v", sed.Environment)
	}
	// Every file the services mount exists.
	for _, s := range p.Services {
		for _, v := range s.Volumes {
			if v.Type == "bind" {
				if _, err := os.Stat(v.Source); err != nil {
					t.Errorf("%s mounts %s: %v", s.Name, v.Source, err)
				}
			}
		}
	}
	// Without the password the file refuses to load.
	t.Setenv("SEDIMENT_REQUIREPASS", "")
	os.Unsetenv("SEDIMENT_REQUIREPASS")
	opts, _ = cli.NewProjectOptions([]string{"../compose.yaml"}, cli.WithWorkingDirectory(".."), cli.WithOsEnv)
	if _, err := opts.LoadProject(context.Background()); err == nil {
		t.Errorf("compose.yaml loads without SEDIMENT_REQUIREPASS")
	}
}

// docs splits a multi-document YAML file.
func docs(t *testing.T, path string) [][]byte {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, d := range bytes.Split(b, []byte("\n---\n")) {
		if len(bytes.TrimSpace(d)) > 0 {
			out = append(out, d)
		}
	}
	return out
}

func TestKubernetes(t *testing.T) {
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict(docs(t, "../k8s/configmap.yaml")[0], &cm); err != nil {
		t.Fatalf("configmap.yaml: %v", err)
	}
	var svcs []corev1.Service
	for _, d := range docs(t, "../k8s/service.yaml") {
		var s corev1.Service
		if err := yaml.UnmarshalStrict(d, &s); err != nil {
			t.Fatalf("service.yaml: %v", err)
		}
		svcs = append(svcs, s)
	}
	var ss appsv1.StatefulSet
	if err := yaml.UnmarshalStrict(docs(t, "../k8s/statefulset.yaml")[0], &ss); err != nil {
		t.Fatalf("statefulset.yaml: %v", err)
	}
	if len(svcs) != 2 || ss.Spec.ServiceName != svcs[1].Name || svcs[1].Spec.ClusterIP != "None" {
		t.Errorf("the StatefulSet's serviceName %q is not the headless service", ss.Spec.ServiceName)
	}
	c := ss.Spec.Template.Spec.Containers[0]
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["resp"] != 6380 || ports["metrics"] != 9121 {
		t.Errorf("container ports %v", ports)
	}
	if !strings.HasSuffix(cm.Data["SEDIMENT_METRICS_ADDR"], ":9121") {
		t.Errorf("SEDIMENT_METRICS_ADDR %q is not the metrics port", cm.Data["SEDIMENT_METRICS_ADDR"])
	}
	if c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe.HTTPGet.Path != "/readyz" ||
		c.LivenessProbe.HTTPGet.Port.StrVal != "metrics" || c.ReadinessProbe.HTTPGet.Port.StrVal != "metrics" {
		t.Errorf("probes: %+v %+v", c.LivenessProbe.HTTPGet, c.ReadinessProbe.HTTPGet)
	}
	if c.EnvFrom[0].ConfigMapRef.Name != cm.Name || c.VolumeMounts[0].MountPath != cm.Data["SEDIMENT_DIR"] ||
		c.VolumeMounts[0].Name != ss.Spec.VolumeClaimTemplates[0].Name {
		t.Errorf("config or data volume not wired: %+v %+v", c.EnvFrom, c.VolumeMounts)
	}
	for _, s := range svcs {
		if s.Spec.Selector["app.kubernetes.io/name"] != ss.Spec.Template.Labels["app.kubernetes.io/name"] {
			t.Errorf("service %s selects %v", s.Name, s.Spec.Selector)
		}
	}
}

func TestPrometheus(t *testing.T) {
	cfg, err := promconfig.LoadFile(filepath.Join("..", "prometheus", "prometheus.yml"), false, nil)
	if err != nil {
		t.Fatalf("prometheus.yml: %v", err)
	}
	if len(cfg.ScrapeConfigs) != 1 || cfg.ScrapeConfigs[0].JobName != "sediment" {
		t.Fatalf("scrape configs: %+v", cfg.ScrapeConfigs)
	}
	var targets []string
	for _, sd := range cfg.ScrapeConfigs[0].ServiceDiscoveryConfigs {
		static, ok := sd.(discovery.StaticConfig)
		if !ok {
			t.Fatalf("service discovery %T, want static", sd)
		}
		for _, g := range static {
			for _, ls := range g.Targets {
				targets = append(targets, string(ls["__address__"]))
			}
		}
	}
	if !slices.Equal(targets, []string{"sediment:9121"}) {
		t.Errorf("the sediment job scrapes %v, want sediment:9121 (compose.yaml's SEDIMENT_METRICS_ADDR port)", targets)
	}
}

// TestCollector loads otel/collector.yaml with the collector's loader and
// the factories of the components it names, which check their settings.
func TestCollector(t *testing.T) {
	factories, err := otelcoltest.NopFactories()
	if err != nil {
		t.Fatal(err)
	}
	if factories.Receivers, err = otelcol.MakeFactoryMap(otlpreceiver.NewFactory()); err != nil {
		t.Fatal(err)
	}
	if factories.Processors, err = otelcol.MakeFactoryMap(batchprocessor.NewFactory()); err != nil {
		t.Fatal(err)
	}
	if factories.Exporters, err = otelcol.MakeFactoryMap(otlpexporter.NewFactory()); err != nil {
		t.Fatal(err)
	}
	cfg, err := otelcoltest.LoadConfigAndValidate(filepath.Join("..", "otel", "collector.yaml"), factories)
	if err != nil {
		t.Fatalf("collector.yaml: %v", err)
	}
	if len(cfg.Service.Pipelines) != 1 {
		t.Errorf("pipelines: %v", cfg.Service.Pipelines)
	}
	// Sediment's OTLP endpoint in compose.yaml is the receiver's HTTP port.
	compose, err := os.ReadFile("../compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(compose, []byte("OTEL_EXPORTER_OTLP_ENDPOINT: http://otel-collector:4318")) {
		t.Errorf("compose.yaml does not send OTLP to the collector's HTTP receiver")
	}
}
