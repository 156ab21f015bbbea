package broker

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/redis/go-redis/v9"
)

// testPKI is a CA with a server certificate for 127.0.0.1 and a client
// certificate, made for one test.
type testPKI struct {
	pool           *x509.CertPool
	server, client tls.Certificate
	caPEM          []byte
}

func newTestPKI(t testing.TB) *testPKI {
	t.Helper()
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	caKey := key()
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sediment test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	issue := func(serial int64, usage x509.ExtKeyUsage) tls.Certificate {
		k := key()
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "sediment test"},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: k}
	}
	p := &testPKI{pool: x509.NewCertPool(), caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})}
	p.pool.AddCert(caCert)
	p.server = issue(2, x509.ExtKeyUsageServerAuth)
	p.client = issue(3, x509.ExtKeyUsageClientAuth)
	return p
}

// newTLSTestServer starts a server whose only listener speaks TLS with cfg.
func newTLSTestServer(t *testing.T, cfg *tls.Config, mods ...func(*Options)) string {
	t.Helper()
	opts := Options{Dir: t.TempDir(), TLS: cfg, TLSAddr: "127.0.0.1:0", PlainOff: true}
	for _, m := range mods {
		m(&opts)
	}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.ServeTLS(ln) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; err != nil {
			t.Errorf("ServeTLS: %v", err)
		}
	})
	return ln.Addr().String()
}

// TestTLS: go-redis over TLS with mutual authentication (the client's
// certificate required and verified), a client without a certificate
// refused, and a plain-text client on the TLS port getting nothing served.
func TestTLS(t *testing.T) {
	pki := newTestPKI(t)
	addr := newTLSTestServer(t, &tls.Config{Certificates: []tls.Certificate{pki.server},
		ClientCAs: pki.pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12})
	ctx := context.Background()

	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1,
		TLSConfig: &tls.Config{RootCAs: pki.pool, Certificates: []tls.Certificate{pki.client}}})
	defer c.Close()
	if err := c.Set(ctx, "k", "over tls", 0).Err(); err != nil {
		t.Fatalf("SET over mutual TLS: %v", err)
	}
	if v, err := c.Get(ctx, "k").Result(); err != nil || v != "over tls" {
		t.Fatalf("GET = %q, %v", v, err)
	}
	// A blocking read woken over the same kind of connection.
	woken := make(chan error, 1)
	go func() { woken <- c.BLPop(ctx, 5*time.Second, "q").Err() }()
	time.Sleep(50 * time.Millisecond)
	if err := c.RPush(ctx, "q", "x").Err(); err != nil {
		t.Fatal(err)
	}
	if err := <-woken; err != nil {
		t.Fatalf("BLPOP over TLS: %v", err)
	}

	anon := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, TLSConfig: &tls.Config{RootCAs: pki.pool}})
	defer anon.Close()
	if err := anon.Ping(ctx).Err(); err == nil {
		t.Fatal("a client without a certificate was served")
	}

	plain := confDial(t, addr)
	if r, err := plain.do("PING"); err == nil {
		t.Fatalf("a plain-text client on the TLS port got %v", r)
	}
}

// TestNATSOverTLS runs Sediment against an external NATS server that
// speaks only TLS, with the CA given as a file (Options.NATSOptions, as
// --nats-tls-ca-cert-file does): a blocked XREAD is woken through it.
func TestNATSOverTLS(t *testing.T) {
	pki := newTestPKI(t)
	ns, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true,
		TLS: true, TLSConfig: &tls.Config{Certificates: []tls.Certificate{pki.server}, MinVersion: tls.VersionTLS12}})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS server not ready")
	}
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pki.caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t, func(o *Options) {
		o.NATSURL = ns.ClientURL()
		o.NATSOptions = []nats.Option{nats.RootCAs(ca)}
	})
	c, admin := ts.client(t), ts.client(t)
	got := blockXRead(t, c, admin, "s", "$")
	mustDo(t, admin, "XADD", "s", "1-1", "f", "v")
	expectWoken(t, got, "1-1") // through NATS over TLS
}

// TestTLSRedisCLI: redis-cli over mutual TLS (--tls --cacert --cert
// --key), as an operator runs it; skipped without redis-cli.
func TestTLSRedisCLI(t *testing.T) {
	cli, err := osexec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli not installed")
	}
	pki := newTestPKI(t)
	addr := newTLSTestServer(t, &tls.Config{Certificates: []tls.Certificate{pki.server},
		ClientCAs: pki.pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12})
	dir := t.TempDir()
	keyDER, err := x509.MarshalECPrivateKey(pki.client.PrivateKey.(*ecdsa.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"ca.pem":     pki.caPEM,
		"client.pem": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: pki.client.Certificate[0]}),
		"client.key": pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	host, port, _ := net.SplitHostPort(addr)
	run := func(args ...string) string {
		t.Helper()
		base := []string{"--tls", "--cacert", filepath.Join(dir, "ca.pem"), "--cert", filepath.Join(dir, "client.pem"),
			"--key", filepath.Join(dir, "client.key"), "-h", host, "-p", port}
		out, err := osexec.Command(cli, append(base, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if out := run("SET", "k", "over redis-cli"); out != "OK" {
		t.Fatalf("redis-cli SET over TLS: %q", out)
	}
	if out := run("GET", "k"); out != "over redis-cli" {
		t.Fatalf("redis-cli GET over TLS: %q", out)
	}
	// Without a client certificate the server refuses the handshake.
	out, err := osexec.Command(cli, "--tls", "--cacert", filepath.Join(dir, "ca.pem"), "-h", host, "-p", port, "PING").CombinedOutput()
	if err == nil && strings.TrimSpace(string(out)) == "PONG" {
		t.Fatal("redis-cli without a client certificate was served")
	}
}
