package main

import (
	"testing"
	"time"
)

func TestParseDefaults(t *testing.T) {
	c, err := parse(nil, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	want := config{bind: "127.0.0.1", port: 6380, dir: "./data", appendfsync: "everysec", databases: 16, maxclients: 10000, logLevel: "info", logFormat: "text", natsListen: "127.0.0.1:4222", feedPrefix: "sediment", cacheMB: 64, memtableMB: 16, minFreeDiskMB: 64, protected: "yes", retention: "1048576", shutdownGrace: 2 * time.Second, snapshotEvery: time.Hour, snapshotKeep: 1, tls: tlsFlags{authClients: "yes"}}
	if c != want {
		t.Fatalf("defaults = %+v, want %+v", c, want)
	}
}

func TestParseEnvAndFlags(t *testing.T) {
	env := map[string]string{
		"SEDIMENT_PORT":         "7000",
		"SEDIMENT_NATS_URL":     "nats://127.0.0.1:4222",
		"SEDIMENT_APPENDFSYNC":  "always",
		"SEDIMENT_DIR":          "/env/dir",
		"SEDIMENT_TIMEOUT":      "30",
		"SEDIMENT_METRICS_ADDR": "127.0.0.1:9121",
		"SEDIMENT_OTEL_STDOUT":  "true",
	}
	c, err := parse([]string{"serve", "--dir", "/flag/dir"}, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if c.port != 7000 || c.natsURL != "nats://127.0.0.1:4222" || c.appendfsync != "always" || c.timeout != 30 ||
		c.metricsAddr != "127.0.0.1:9121" || !c.otelStdout {
		t.Fatalf("env not applied: %+v", c)
	}
	if c.dir != "/flag/dir" {
		t.Fatalf("dir = %q: a flag on the command line must win over SEDIMENT_DIR", c.dir)
	}
}

func TestParseErrors(t *testing.T) {
	none := func(string) string { return "" }
	if _, err := parse([]string{"--port", "x"}, none); err == nil {
		t.Fatal("--port x accepted")
	}
	if _, err := parse([]string{"extra"}, none); err == nil {
		t.Fatal("stray argument accepted")
	}
	if _, err := parse(nil, func(k string) string {
		if k == "SEDIMENT_DATABASES" {
			return "many"
		}
		return ""
	}); err == nil {
		t.Fatal("SEDIMENT_DATABASES=many accepted")
	}
	for _, mb := range []string{"0", "4096"} {
		if _, err := parse([]string{"--memtable-size", mb}, none); err == nil {
			t.Fatalf("--memtable-size %s accepted", mb)
		}
	}
	if c, err := parse([]string{"--memtable-size", "4"}, none); err != nil || c.memtableMB != 4 {
		t.Fatalf("--memtable-size 4: %d, %v", c.memtableMB, err)
	}
	if err := run([]string{"--appendfsync", "sometimes"}, none); err == nil {
		t.Fatal("--appendfsync sometimes accepted")
	}
	if err := run([]string{"--log-format", "yaml"}, none); err == nil {
		t.Fatal("--log-format yaml accepted")
	}
}
