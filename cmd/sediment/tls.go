package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/nats-io/nats.go"
)

// tlsFlags are Redis's TLS settings, by their names (docs/security.md).
type tlsFlags struct {
	port                      int
	certFile, keyFile, caFile string
	authClients               string // yes, no, optional
	protocols                 string // e.g. "TLSv1.2 TLSv1.3"
	ciphers, ciphersuites     string
	natsCreds                 string
	natsCert, natsKey, natsCA string
}

// tlsVersions maps Redis's tls-protocols names to Go's versions.
var tlsVersions = map[string]uint16{"TLSv1.2": tls.VersionTLS12, "TLSv1.3": tls.VersionTLS13}

// serverTLS builds the RESP listener's TLS configuration, or nil when
// --tls-port is 0. Errors name the flag at fault.
func serverTLS(f tlsFlags) (*tls.Config, error) {
	if f.port == 0 {
		return nil, nil
	}
	if f.certFile == "" || f.keyFile == "" {
		return nil, errors.New("--tls-port needs --tls-cert-file and --tls-key-file")
	}
	cert, err := tls.LoadX509KeyPair(f.certFile, f.keyFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert-file/--tls-key-file: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	switch f.authClients {
	case "yes", "optional":
		if f.caFile == "" {
			return nil, fmt.Errorf("--tls-auth-clients %s needs --tls-ca-cert-file (or --tls-auth-clients no)", f.authClients)
		}
		pool, err := certPool(f.caFile)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca-cert-file: %w", err)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
		if f.authClients == "optional" {
			cfg.ClientAuth = tls.VerifyClientCertIfGiven
		}
	case "no":
	default:
		return nil, fmt.Errorf("--tls-auth-clients: want yes, no or optional, got %q", f.authClients)
	}
	if f.protocols != "" {
		cfg.MinVersion, cfg.MaxVersion = 0, 0
		for _, p := range strings.Fields(f.protocols) {
			v, ok := tlsVersions[p]
			if !ok {
				return nil, fmt.Errorf("--tls-protocols: %q is not one of TLSv1.2, TLSv1.3", p)
			}
			if cfg.MinVersion == 0 || v < cfg.MinVersion {
				cfg.MinVersion = v
			}
			if v > cfg.MaxVersion {
				cfg.MaxVersion = v
			}
		}
	}
	if f.ciphers != "" {
		byName := map[string]uint16{}
		for _, c := range tls.CipherSuites() {
			byName[c.Name] = c.ID
		}
		for _, n := range strings.Split(f.ciphers, ":") {
			id, ok := byName[n]
			if !ok {
				return nil, fmt.Errorf("--tls-ciphers: %q is not a secure TLS 1.2 cipher suite name Go knows (IANA names, e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)", n)
			}
			cfg.CipherSuites = append(cfg.CipherSuites, id)
		}
	}
	if f.ciphersuites != "" {
		return nil, errors.New("--tls-ciphersuites: TLS 1.3 cipher suites are not configurable in Go's TLS; leave it empty")
	}
	return cfg, nil
}

// natsOptions are the nats.go options of --nats-creds and --nats-tls-*.
func natsOptions(f tlsFlags) ([]nats.Option, error) {
	var opts []nats.Option
	if f.natsCreds != "" {
		if _, err := os.Stat(f.natsCreds); err != nil {
			return nil, fmt.Errorf("--nats-creds: %w", err)
		}
		opts = append(opts, nats.UserCredentials(f.natsCreds))
	}
	if (f.natsCert == "") != (f.natsKey == "") {
		return nil, errors.New("--nats-tls-cert-file and --nats-tls-key-file go together")
	}
	if f.natsCert != "" {
		opts = append(opts, nats.ClientCert(f.natsCert, f.natsKey))
	}
	if f.natsCA != "" {
		opts = append(opts, nats.RootCAs(f.natsCA))
	}
	return opts, nil
}

func certPool(file string) (*x509.CertPool, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s: no PEM certificate", file)
	}
	return pool, nil
}
