// Command sediment runs the Sediment server: a Redis-protocol (RESP),
// stream-first broker storing its data in Pebble and waking blocked readers
// through NATS.
//
//	sediment replay --from-snapshot DIR --log DIR --to DIR
//	sediment check [--dir ./data] [--max-errors 100]
//	sediment feed [--nats-url URL] [--user feed --password P] [--db N] [--type T] [--key K] [--from SEQ]
//	sediment [serve] [--bind 127.0.0.1] [--port 6380] [--dir ./data]
//	         [--nats-url URL] [--appendfsync always|everysec|no]
//	         [--databases 16] [--maxclients 10000] [--timeout 0] [--event-loops 0] [--shutdown-grace 2s] [--cache-size 64] [--log-level info]
//	         [--nats-listen 127.0.0.1:4222|off] [--feed-prefix sediment]
//	         [--feed-jetstream NAME] [--feed-jetstream-replicas 1] [--feed-jetstream-max-age 0] [--feed-jetstream-duplicates 30s]
//	         [--requirepass PASSWORD] [--protected-mode yes|no] [--changelog-retention 1048576[,AGE]]
//	         [--snapshot-every 1h] [--snapshot-keep 1]
//	         [--tls-port 0] [--tls-cert-file F] [--tls-key-file F] [--tls-ca-cert-file F]
//	         [--tls-auth-clients yes|no|optional] [--tls-protocols "TLSv1.2 TLSv1.3"] [--tls-ciphers ...]
//	         [--nats-creds F] [--nats-tls-cert-file F] [--nats-tls-key-file F] [--nats-tls-ca-cert-file F]
//
// Every flag can also be set by an environment variable SEDIMENT_<FLAG>, with
// dashes as underscores (SEDIMENT_NATS_URL); a flag on the command line wins.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sediment-dev/sediment/broker"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/telemetry"
)

var version = "dev"

func main() {
	if err := run(os.Args[1:], os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "sediment:", err)
		os.Exit(1)
	}
}

// config is the parsed command line.
type config struct {
	bind, dir, natsURL, appendfsync, logLevel, pprof string
	metricsAddr, logFormat, metricsStreams           string
	otelStdout, otelRecordArgs                       bool
	natsListen, feedPrefix, requirepass, protected   string
	aclFile, natsFeedPassword, retention             string
	port, databases, maxclients, timeout, cacheMB    int
	eventLoops, memtableMB                           int
	shutdownGrace, snapshotEvery                     time.Duration
	snapshotKeep                                     int
	minFreeDiskMB                                    int
	tls                                              tlsFlags
	feedJS                                           jetStreamFlags
}

// jetStreamFlags are the change feed's durable capture (--feed-jetstream).
type jetStreamFlags struct {
	stream             string
	replicas           int
	maxAge, duplicates time.Duration
}

// parse fills config from args, then from SEDIMENT_* variables for every
// flag not given on the command line.
func parse(args []string, getenv func(string) string) (config, error) {
	if len(args) > 0 && args[0] == "serve" {
		args = args[1:]
	}
	var c config
	fs := flag.NewFlagSet("sediment", flag.ContinueOnError)
	fs.StringVar(&c.bind, "bind", "127.0.0.1", "address to listen on")
	fs.IntVar(&c.port, "port", 6380, "TCP port to listen on")
	fs.StringVar(&c.dir, "dir", "./data", "data directory (Pebble)")
	fs.StringVar(&c.natsURL, "nats-url", "", "NATS server URL; empty starts an embedded NATS server")
	fs.StringVar(&c.natsListen, "nats-listen", "127.0.0.1:4222", "where the embedded NATS server listens for change-feed subscribers (host:port); off: in-process only")
	fs.StringVar(&c.feedPrefix, "feed-prefix", "sediment", "subject prefix of the change feed (<prefix>.chg.<db>.<type>.<key>)")
	fs.StringVar(&c.feedJS.stream, "feed-jetstream", "", "capture the change feed durably in this JetStream stream (created or updated over <prefix>.chg.>, file storage; the embedded NATS server stores it in <dir>/jetstream); empty: off")
	fs.IntVar(&c.feedJS.replicas, "feed-jetstream-replicas", 0, "replicas of the --feed-jetstream stream; 0: 1 (more need a NATS cluster)")
	fs.DurationVar(&c.feedJS.maxAge, "feed-jetstream-max-age", 0, "how long the --feed-jetstream stream keeps a message (e.g. 168h); 0: no limit")
	fs.DurationVar(&c.feedJS.duplicates, "feed-jetstream-duplicates", 0, "the --feed-jetstream stream's de-duplication window (message IDs kept in JetStream's memory this long); 0: 30s")
	fs.StringVar(&c.appendfsync, "appendfsync", "everysec", "fsync policy: always, everysec or no")
	fs.IntVar(&c.databases, "databases", 16, "number of databases (SELECT 0..N-1)")
	fs.IntVar(&c.maxclients, "maxclients", 10000, "most client connections served at once; more are told \"ERR max number of clients reached\"")
	fs.IntVar(&c.cacheMB, "cache-size", 64, "Pebble's block cache in MiB (large values are read through it)")
	fs.IntVar(&c.memtableMB, "memtable-size", 16, "each of Pebble's memtables in MiB, 1 to 4095; a flush starts once the full ones hold half of this")
	fs.StringVar(&c.retention, "changelog-retention", "1048576", "change-log records kept for replay (CHANGES): a count, an age (168h), or both (1048576,168h); a record goes once either limit says so; 0: no count limit")
	fs.DurationVar(&c.snapshotEvery, "snapshot-every", time.Hour, "write a snapshot of the store to <dir>/snapshots this often when it changed (the change log after the newest one is kept whatever --changelog-retention says, so 'sediment replay' can rebuild the store from them); 0: never")
	fs.IntVar(&c.snapshotKeep, "snapshot-keep", 1, "how many periodic snapshots to keep (at least 1)")
	fs.IntVar(&c.minFreeDiskMB, "min-free-disk", 64, "refuse writes (MISCONF) while the data directory's filesystem has less free space than this, in MiB; 0: never")
	fs.IntVar(&c.timeout, "timeout", 0, "close a client idle for this many seconds; 0: never (Redis's timeout)")
	fs.IntVar(&c.eventLoops, "event-loops", 0, "event loops serving plain TCP clients (Linux); 0: one per processor (GOMAXPROCS); -1: a goroutine per client instead")
	fs.DurationVar(&c.shutdownGrace, "shutdown-grace", 2*time.Second, "on SIGTERM or SHUTDOWN, how long each client may take to read the replies it was sent before its connection is closed")
	fs.StringVar(&c.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&c.logFormat, "log-format", "text", "log line format: text (logfmt) or json; lines logged inside a traced command carry trace_id and span_id")
	fs.StringVar(&c.natsFeedPassword, "nats-feed-password", "", "access control on the embedded NATS listener: the user 'feed' with this password may only subscribe to the change feed and request its replay; any other client is refused (SEDIMENT_NATS_FEED_PASSWORD keeps it out of the process list)")
	fs.StringVar(&c.aclFile, "aclfile", "", "the users' file (Redis's aclfile: one 'user <name> <rules>' line each; loaded at start and by ACL LOAD, written by ACL SAVE); it must exist")
	fs.StringVar(&c.requirepass, "requirepass", "", "the default user's password (Redis's requirepass): clients must AUTH; empty: none")
	fs.StringVar(&c.protected, "protected-mode", "yes", "yes: without a password, refuse clients from outside loopback (Redis's protected-mode); no: serve them")
	fs.IntVar(&c.tls.port, "tls-port", 0, "TCP port of a TLS listener beside the plain one (Redis's tls-port); 0: none. --port 0 with it: TLS only")
	fs.StringVar(&c.tls.certFile, "tls-cert-file", "", "the TLS listener's certificate (PEM)")
	fs.StringVar(&c.tls.keyFile, "tls-key-file", "", "the TLS listener's private key (PEM)")
	fs.StringVar(&c.tls.caFile, "tls-ca-cert-file", "", "CA certificates (PEM) that client certificates must chain to")
	fs.StringVar(&c.tls.authClients, "tls-auth-clients", "yes", "client certificates: yes (required), optional, or no")
	fs.StringVar(&c.tls.protocols, "tls-protocols", "", "TLS versions, space-separated: TLSv1.2 TLSv1.3 (default: both)")
	fs.StringVar(&c.tls.ciphers, "tls-ciphers", "", "TLS 1.2 cipher suites, colon-separated IANA names (default: Go's)")
	fs.StringVar(&c.tls.ciphersuites, "tls-ciphersuites", "", "TLS 1.3 cipher suites: not configurable in Go; must stay empty")
	fs.StringVar(&c.tls.natsCreds, "nats-creds", "", "NATS credentials file (--nats-url)")
	fs.StringVar(&c.tls.natsCert, "nats-tls-cert-file", "", "client certificate (PEM) for the NATS connection")
	fs.StringVar(&c.tls.natsKey, "nats-tls-key-file", "", "client private key (PEM) for the NATS connection")
	fs.StringVar(&c.tls.natsCA, "nats-tls-ca-cert-file", "", "CA certificates (PEM) to verify the NATS server")
	fs.StringVar(&c.pprof, "pprof", "", "serve Go's net/http/pprof profiles on this address (e.g. 127.0.0.1:6060); empty: off")
	fs.StringVar(&c.metricsAddr, "metrics-addr", "", "serve Prometheus /metrics, /healthz and /readyz on this address (e.g. 127.0.0.1:9121); empty: off")
	fs.StringVar(&c.metricsStreams, "metrics-streams", "", "comma-separated stream keys or glob patterns whose length and consumer-group lag, pending and consumers are metrics (at most 100 streams)")
	fs.BoolVar(&c.otelStdout, "otel-stdout", false, "write every span to standard output as JSON (OpenTelemetry's stdout exporter), whatever OTEL_TRACES_EXPORTER says")
	fs.BoolVar(&c.otelRecordArgs, "otel-record-args", false, "put each command's arguments on its span (db.query.text; each cut at 64 bytes)")
	showVersion := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *showVersion {
		fmt.Println("sediment", version)
		os.Exit(0)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		env := "SEDIMENT_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v := getenv(env); v != "" && !set[f.Name] && err == nil {
			if e := f.Value.Set(v); e != nil {
				err = fmt.Errorf("%s=%q: %w", env, v, e)
			}
		}
	})
	if err == nil && (c.memtableMB < 1 || c.memtableMB > 4095) {
		err = fmt.Errorf("--memtable-size %d: want 1 to 4095 (MiB)", c.memtableMB)
	}
	return c, err
}

func run(args []string, getenv func(string) string) error {
	if len(args) > 0 && args[0] == "replay" {
		return runReplay(args[1:], os.Stdout)
	}
	if len(args) > 0 && args[0] == "check" {
		os.Exit(runCheck(args[1:], getenv, os.Stdout, os.Stderr)) // 0 clean, 1 violations, 2 failed
	}
	if len(args) > 0 && args[0] == "feed" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		err := runFeed(args[1:], getenv, os.Stdout, ctx.Done())
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	c, err := parse(args, getenv)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	hopts := &slog.HandlerOptions{Level: level}
	var handler slog.Handler
	switch c.logFormat {
	case "text":
		handler = slog.NewTextHandler(os.Stderr, hopts)
	case "json":
		handler = slog.NewJSONHandler(os.Stderr, hopts)
	default:
		return fmt.Errorf("--log-format: want text or json, got %q", c.logFormat)
	}
	log := slog.New(telemetry.LogHandler(handler))
	natsListen := c.natsListen
	if natsListen == "off" {
		natsListen = ""
	}
	policy, err := materialize.ParseSyncPolicy(c.appendfsync)
	if err != nil {
		return err
	}
	if c.pprof != "" {
		ln, err := net.Listen("tcp", c.pprof)
		if err != nil {
			return fmt.Errorf("--pprof: %w", err)
		}
		log.Info("pprof listening", "addr", ln.Addr().String())
		go http.Serve(ln, nil) // net/http/pprof registers on the default mux
	}
	if c.protected != "yes" && c.protected != "no" {
		return fmt.Errorf("--protected-mode: want yes or no, got %q", c.protected)
	}
	keep, keepAge, err := parseRetention(c.retention)
	if err != nil {
		return err
	}
	tlsCfg, err := serverTLS(c.tls)
	if err != nil {
		return err
	}
	natsOpts, err := natsOptions(c.tls)
	if err != nil {
		return err
	}
	if c.port == 0 && tlsCfg == nil {
		return errors.New("--port 0 needs --tls-port: there would be no listener")
	}
	var tlsAddr string
	if tlsCfg != nil {
		tlsAddr = net.JoinHostPort(c.bind, strconv.Itoa(c.tls.port))
	}
	broker.SedimentVersion = version
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	tcfg := telemetry.Config{Prometheus: c.metricsAddr != "", RecordArgs: c.otelRecordArgs, Version: version}
	if c.otelStdout {
		tcfg.Stdout = os.Stdout
	}
	tel, err := telemetry.Setup(ctx, tcfg)
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tel.Shutdown(sctx); err != nil {
			log.Warn("telemetry shutdown", "err", err)
		}
	}()
	srv, err := broker.New(broker.Options{
		Telemetry:      tel,
		MetricsStreams: splitList(c.metricsStreams),
		OnShutdown:     stop, // SHUTDOWN: the same path as SIGTERM
		Addr:           net.JoinHostPort(c.bind, strconv.Itoa(c.port)),
		Dir:            c.dir,
		NATSURL:        c.natsURL,
		AppendFsync:    policy,
		Databases:      c.databases,
		MaxClients:     c.maxclients,
		Timeout:        time.Duration(c.timeout) * time.Second,
		ShutdownGrace:  c.shutdownGrace,
		EventLoops:     c.eventLoops,
		CacheSize:      int64(c.cacheMB) << 20,
		MemTableSize:   int64(c.memtableMB) << 20,
		MinFreeDisk:    minFreeDisk(c.minFreeDiskMB),
		Retention:      keep,
		RetentionAge:   keepAge,
		SnapshotEvery:  c.snapshotEvery,
		SnapshotKeep:   c.snapshotKeep,
		StorageFatal: func(msg string) {
			log.Error("storage cannot go on; exiting (every acknowledged write is in the change log and is replayed at the next start)", "err", msg)
			os.Exit(1)
		},
		NATSListen:       natsListen,
		FeedPrefix:       c.feedPrefix,
		RequirePass:      c.requirepass,
		ACLFile:          c.aclFile,
		NATSFeedPassword: c.natsFeedPassword,
		TLSAddr:          tlsAddr,
		TLS:              tlsCfg,
		PlainOff:         c.port == 0,
		NATSOptions:      natsOpts,
		Logger:           log,
		// Protected mode as Redis's: off only when asked.
		ProtectedModeOff: c.protected == "no",

		// The change feed's durable capture (--feed-jetstream).
		FeedJetStream:           c.feedJS.stream,
		FeedJetStreamReplicas:   c.feedJS.replicas,
		FeedJetStreamMaxAge:     c.feedJS.maxAge,
		FeedJetStreamDuplicates: c.feedJS.duplicates,
	})
	if err != nil {
		return err
	}

	if c.metricsAddr != "" {
		ln, err := net.Listen("tcp", c.metricsAddr)
		if err != nil {
			srv.Close()
			return fmt.Errorf("--metrics-addr: %w", err)
		}
		log.Info("metrics listening", "addr", ln.Addr().String())
		hs := &http.Server{Handler: tel.Handler(srv.Ready), ReadHeaderTimeout: 10 * time.Second}
		go hs.Serve(ln)
		defer hs.Close()
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case err = <-errc:
	}
	if cerr := srv.Close(); err == nil {
		err = cerr
	}
	return err
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// parseRetention parses --changelog-retention: a record count (0: no
// count limit), a Go duration, or both separated by a comma.
func parseRetention(v string) (count uint64, age time.Duration, err error) {
	count = 1 << 20
	for _, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		if n, perr := strconv.ParseUint(part, 10, 64); perr == nil {
			count = n
			if n == 0 {
				count = math.MaxUint64
			}
			continue
		}
		d, derr := time.ParseDuration(part)
		if derr != nil || d <= 0 {
			return 0, 0, fmt.Errorf("--changelog-retention: want a record count, a duration (168h) or both (1048576,168h), got %q", v)
		}
		age = d
	}
	return count, age, nil
}

// minFreeDisk turns --min-free-disk (MiB; 0: off) into
// broker.Options.MinFreeDisk (bytes; negative: off).
func minFreeDisk(mb int) int64 {
	if mb <= 0 {
		return -1
	}
	return int64(mb) << 20
}
