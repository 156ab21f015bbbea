package main

import (
	"crypto/tls"
	"strings"
	"testing"
)

// TestServerTLSFlags checks the TLS flags' errors and what they set, with
// certificate files that do not need to exist for the cases that fail
// before reading them.
func TestServerTLSFlags(t *testing.T) {
	if cfg, err := serverTLS(tlsFlags{}); cfg != nil || err != nil {
		t.Fatalf("--tls-port 0: %v, %v; want no TLS", cfg, err)
	}
	for _, tc := range []struct {
		f    tlsFlags
		want string
	}{
		{tlsFlags{port: 1}, "--tls-port needs --tls-cert-file and --tls-key-file"},
		{tlsFlags{port: 1, certFile: "/nonexistent.crt", keyFile: "/nonexistent.key"}, "--tls-cert-file/--tls-key-file"},
	} {
		if _, err := serverTLS(tc.f); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.f, err, tc.want)
		}
	}
	if _, err := natsOptions(tlsFlags{natsCert: "a"}); err == nil {
		t.Error("--nats-tls-cert-file without --nats-tls-key-file accepted")
	}
	if _, err := natsOptions(tlsFlags{natsCreds: "/nonexistent.creds"}); err == nil {
		t.Error("a missing --nats-creds file accepted")
	}
	if v := tlsVersions["TLSv1.3"]; v != tls.VersionTLS13 {
		t.Errorf("TLSv1.3 = %x", v)
	}
}
