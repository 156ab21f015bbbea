package broker

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/feed"
	"github.com/sediment-dev/sediment/internal/ratelog"
	"github.com/sediment-dev/sediment/keyspace"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/streams"
	"github.com/sediment-dev/sediment/telemetry"
)

// Options configures a Server. The zero value runs a development server on
// 127.0.0.1:6380 with data in ./data and an embedded NATS server.
type Options struct {
	// Addr is the TCP listen address. The default is "127.0.0.1:6380".
	Addr string
	// Dir is the data directory. The default is "./data".
	Dir string
	// InMemory keeps all data in memory (tests); Dir is ignored.
	InMemory bool
	// NATSURL is the NATS server to use for wake-ups and the change feed.
	// Empty starts an embedded NATS server.
	NATSURL string
	// NATSOptions are extra nats.go options for NATSURL's connection:
	// credentials (nats.UserCredentials), TLS (nats.ClientCert,
	// nats.RootCAs).
	NATSOptions []nats.Option
	// NATSListen is where the embedded NATS server listens for other
	// processes (nats.go subscribers of the change feed), host:port; empty:
	// in-process only. The command's default is 127.0.0.1:4222.
	NATSListen string
	// FeedPrefix is the change feed's subject prefix (feed.DefaultPrefix
	// when empty): docs/change-feed.md.
	FeedPrefix string
	// NATSFeedPassword, with the embedded NATS server listening
	// (NATSListen), turns on its access control: the user "feed" with this
	// password may only subscribe to the change feed (<FeedPrefix>.chg.>) and request its replay (<FeedPrefix>.replay),
	// and every other client is refused (Sediment's own connection uses a
	// random password of its own). Empty: no access control.
	NATSFeedPassword string
	// FeedJetStream, when set, captures the change feed durably in the
	// JetStream stream of that name (docs/change-feed.md, "Durable capture
	// (JetStream)"), created or updated at start over <FeedPrefix>.chg.>
	// with file storage. The embedded NATS server then runs JetStream,
	// storing in <Dir>/jetstream (a temporary directory, removed at Close,
	// with InMemory); an external one must have it enabled. Empty, the
	// default: no capture.
	FeedJetStream string
	// FeedJetStreamReplicas is the stream's replica count (clustered
	// JetStream; 1 with the embedded server). 0 takes 1.
	FeedJetStreamReplicas int
	// FeedJetStreamMaxAge is how long the stream keeps a message; 0, the
	// default, has no limit.
	FeedJetStreamMaxAge time.Duration
	// FeedJetStreamDuplicates is the stream's de-duplication window; 0
	// takes feed.DefaultCaptureDuplicates (30 s).
	FeedJetStreamDuplicates time.Duration
	// AppendFsync is the durability policy (Redis's appendfsync). The
	// default is everysec.
	AppendFsync materialize.SyncPolicy
	// Databases is the number of SELECT-able databases, 1..256. The default is 16.
	Databases int
	// MaxClients is how many client connections are served at once
	// (Redis's maxclients, default 10000): a connection beyond it is told
	// "ERR max number of clients reached" and closed, as Redis does.
	MaxClients int
	// CacheSize is Pebble's block cache in bytes (materialize.Options);
	// 0 takes its default, 64 MiB. Values of 4 KiB or more live in blob
	// files and are read through it: a working set of large values larger
	// than the cache is read from the files, checksummed and cached again
	// on every read (docs/perf.md).
	CacheSize int64
	// MemTableSize is the size of each of Pebble's memtables in bytes
	// (materialize.Options); 0 takes its default, 16 MiB. A flush starts
	// once the full memtables waiting for it hold half of this, so the
	// memory they take is bounded by about twice this size.
	MemTableSize int64
	// MinFreeDisk is the free space in bytes below which writes are
	// refused with MISCONF (materialize.Options.MinFreeDisk); 0 takes its
	// default, 64 MiB; negative turns the check off.
	MinFreeDisk int64
	// Retention and RetentionAge are the change log's retention
	// (materialize.Options.ChangeLogRetention and ChangeLogRetentionAge):
	// what CHANGES and the feed's replay can read. 0: their defaults.
	Retention    uint64
	RetentionAge time.Duration
	// SnapshotEvery and SnapshotKeep are the periodic snapshots
	// (materialize.Options.SnapshotEvery and SnapshotKeep): a checkpoint
	// under <Dir>/snapshots this often, the newest SnapshotKeep kept, the
	// change log after the newest kept whatever the retention, so that
	// `sediment replay` can rebuild the store. 0: none.
	SnapshotEvery time.Duration
	SnapshotKeep  int
	// StorageFatal is materialize.Options.Fatal: told when Pebble cannot go
	// on, it must not return. nil: a panic.
	StorageFatal func(msg string)
	// Timeout closes a client connection idle for longer than it (Redis's
	// timeout, whole seconds at the wire); 0, the default, never does. A
	// client waiting in a blocking command is not idle, nor is one whose
	// command is still running, as in Redis. Connections are checked
	// Timeout/4 apart, at most a second apart.
	Timeout time.Duration
	// EventLoops is how many event loops serve plain TCP connections
	// (Linux; docs/architecture.md, "Connection model"): 0 takes
	// runtime.GOMAXPROCS, and a negative number gives every connection a
	// goroutine of its own instead, as do TLS connections and other
	// systems.
	EventLoops int
	// ShutdownGrace is how long a shutdown (Close: SIGTERM, SHUTDOWN)
	// gives each connection to take the replies it was sent before it is
	// closed, so that a client that never reads cannot hold the shutdown.
	// The default is 2 s.
	ShutdownGrace time.Duration
	// Logger receives lifecycle (Info), internal-error (Warn) and
	// per-command (Debug) logs. The default discards.
	Logger *slog.Logger
	// Telemetry is the process's OpenTelemetry tracer and meter
	// (telemetry.Setup): a span per command and per commit group, and the
	// metrics of docs/telemetry.md. Nil, or with neither, is off. The
	// server does not shut it down.
	Telemetry *telemetry.Telemetry
	// MetricsStreams are the streams whose length and consumer groups' lag,
	// pending count and consumers are metrics (docs/telemetry.md): exact
	// key names, or glob patterns (which scan each db's keyspace at every
	// collection). At most 100 streams are reported.
	MetricsStreams []string
	// Limits bounds each client's requests; zero fields take Redis's defaults.
	Limits Limits
	// TLSAddr, when set, is a second listen address that speaks TLS
	// (Redis's tls-port), configured by TLS, which it requires.
	TLSAddr string
	// TLS configures the TLS listener: certificates, client
	// authentication (Redis's tls-auth-clients), versions and ciphers.
	TLS *tls.Config
	// PlainOff serves TLS alone, with no plain listener (Redis's port 0);
	// it needs TLSAddr.
	PlainOff bool
	// ACLFile is Redis's aclfile: the users are loaded from it at start
	// and by ACL LOAD, and written by ACL SAVE (acl_file.go). It must
	// exist; it cannot be used with RequirePass. Empty: users live in
	// memory only.
	ACLFile string
	// RequirePass is the default user's password (Redis's requirepass):
	// when set, a connection must AUTH before any other command. Empty,
	// the default, is nopass. CONFIG SET requirepass changes it.
	RequirePass string
	// ProtectedModeOff turns Redis's protected mode off. On (the zero
	// value), while no password is set, connections from addresses other
	// than loopback are refused with Redis's DENIED error.
	ProtectedModeOff bool
	// PubSubLimit disconnects a subscriber that does not take its messages
	// (Redis's client-output-buffer-limit pubsub); zero fields take
	// DefaultPubSubLimit's.
	PubSubLimit PubSubLimit
	// OnShutdown is called once the SHUTDOWN command has closed the
	// server (the program exits then); nil: nothing more.
	OnShutdown func()
	// Now is the clock; the default is time.Now. Tests inject one.
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	if o.Addr == "" {
		o.Addr = "127.0.0.1:6380"
	}
	if o.Dir == "" {
		o.Dir = "./data"
	}
	if o.ShutdownGrace <= 0 {
		o.ShutdownGrace = 2 * time.Second
	}
	if o.Databases == 0 {
		o.Databases = 16
	}
	if o.MaxClients == 0 {
		o.MaxClients = 10000
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	o.Limits = o.Limits.withDefaults()
	if o.PubSubLimit.Hard == 0 {
		o.PubSubLimit.Hard = DefaultPubSubLimit.Hard
	}
	if o.PubSubLimit.Soft == 0 {
		o.PubSubLimit.Soft = DefaultPubSubLimit.Soft
	}
	if o.PubSubLimit.SoftFor == 0 {
		o.PubSubLimit.SoftFor = DefaultPubSubLimit.SoftFor
	}
	return o
}

// Validate reports an invalid option.
func (o Options) Validate() error {
	if o.Databases < 1 || o.Databases > 256 {
		return fmt.Errorf("broker: databases must be 1..256, got %d", o.Databases)
	}
	if o.MaxClients < 1 {
		return fmt.Errorf("broker: maxclients must be at least 1, got %d", o.MaxClients)
	}
	if o.CacheSize < 0 {
		return fmt.Errorf("broker: cache size must not be negative, got %d", o.CacheSize)
	}
	if o.MemTableSize < 0 || o.MemTableSize >= 4<<30 {
		return fmt.Errorf("broker: memtable size must be at least 0 and below 4 GiB, got %d", o.MemTableSize)
	}
	if o.Timeout < 0 {
		return fmt.Errorf("broker: timeout must not be negative, got %v", o.Timeout)
	}
	if o.NATSFeedPassword != "" && (o.NATSListen == "" || o.NATSURL != "") {
		return fmt.Errorf("broker: a NATS feed password needs the embedded NATS server listening (no NATS URL, a NATS listen address)")
	}
	if o.FeedJetStream != "" {
		switch {
		case !feed.ValidStreamName(o.FeedJetStream):
			return fmt.Errorf("broker: JetStream stream name %q: it may hold no spaces, '.', '*', '>' or path separators", o.FeedJetStream)
		case o.FeedJetStreamReplicas < 0 || o.FeedJetStreamReplicas > 5:
			return fmt.Errorf("broker: JetStream replicas must be 1..5, got %d", o.FeedJetStreamReplicas)
		case o.FeedJetStreamReplicas > 1 && o.NATSURL == "":
			return fmt.Errorf("broker: JetStream replicas need a NATS cluster (a NATS URL); the embedded server keeps one")
		case o.FeedJetStreamMaxAge < 0 || o.FeedJetStreamDuplicates < 0:
			return fmt.Errorf("broker: JetStream max age and duplicates window must not be negative")
		}
	}
	if o.ACLFile != "" && o.RequirePass != "" {
		return fmt.Errorf("broker: requirepass and an ACL file cannot be used together: give the default user its password in the ACL file")
	}
	if (o.TLSAddr != "") != (o.TLS != nil) {
		return fmt.Errorf("broker: a TLS listen address needs a TLS configuration, and one without the other is unused")
	}
	if o.PlainOff && o.TLSAddr == "" {
		return fmt.Errorf("broker: with no plain listener there must be a TLS one")
	}
	return nil
}

// Server is a Sediment server. Create it with New, run it with Serve or
// ListenAndServe, stop it with Close.
type Server struct {
	opts  Options
	store *materialize.Store
	// logSync limits the log lines of failed change-log syncs (one per
	// connection whose writes wait on them).
	logSync *ratelog.Limited
	wake    *waker
	loops   *eventLoops   // nil: a goroutine per connection
	pubsub  *pubsub       // SUBSCRIBE/PUBLISH through NATS (pubsub.go)
	track   *tracker      // CLIENT TRACKING (tracking.go)
	notify  atomic.Uint32 // notify-keyspace-events flags (notify.go)
	// acl is the users (acl.go).
	acl *aclUsers
	// requirepass is the default user's password (auth.go); nil or empty:
	// nopass.
	requirepass atomic.Pointer[string]
	cmdstats    cmdStats                       // INFO commandstats and errorstats (cmdstats.go)
	slowlog     slowLog                        // SLOWLOG
	latency     latencyMonitor                 // LATENCY (latency.go)
	mons        monitors                       // MONITOR connections (monitor.go)
	feed        *feed.Publisher                // the change feed (docs/change-feed.md)
	snaps       snapshots                      // CHANGES SNAPSHOT's open snapshots (snapshot.go)
	tel         *telem                         // OpenTelemetry; nil: off (telemetry.go)
	cons        *consumers                     // blocked XREADGROUP clients, served by the writer
	watch       *watches                       // WATCHed keys
	scans       keyspace.ScanCursors           // SCAN positions inside hash slots
	streamCfg   atomic.Pointer[streams.Config] // stream-idmp-* (CONFIG SET)
	cfg         configStore                    // CONFIG's stored parameters (config.go)
	pause       clientPause                    // CLIENT PAUSE (client_pause.go)
	saves       saves                          // SAVE and BGSAVE (save.go)
	overMemory  atomic.Bool                    // used memory is above maxmemory (memory.go)
	outLimits   atomic.Pointer[outputLimits]   // client-output-buffer-limit (pubsub.go)
	maxClients  atomic.Int64                   // maxclients: Options.MaxClients, then CONFIG SET
	timeout     atomic.Int64                   // timeout in ns: Options.Timeout, then CONFIG SET
	start       time.Time
	replID      string // INFO replication's master_replid: 40 random hex digits per start, as Redis's
	jsTemp      string // the embedded JetStream's temporary store (InMemory), removed at close

	ctx    context.Context // cancelled by Close: ends blocking waits
	cancel context.CancelFunc

	mu    sync.Mutex
	ln    net.Listener // the plain listener (Serve)
	tlsLn net.Listener // the TLS listener (ServeTLS)
	conns map[*conn]struct{}
	wg    sync.WaitGroup // connection goroutines and background loops

	nextClientID atomic.Int64
	stats        stats
	closed       atomic.Bool
	closeOnce    sync.Once
	closeErr     error
}

type stats struct {
	connsReceived atomic.Int64
	commands      atomic.Int64
	rejected      atomic.Int64
	blocked       atomic.Int64
	readRetries   atomic.Int64 // commands run again after materialize.ErrStateMoved
	rejectedConns atomic.Int64 // connections refused beyond maxclients
	memPeak       atomic.Int64 // the largest used_memory INFO has reported
	pubsubKilled  atomic.Int64 // subscribers disconnected at PubSubLimit
	outputKilled  atomic.Int64 // normal clients disconnected at client-output-buffer-limit
	// The key lookups of closed connections' reads (conn.lookups).
	keyHits, keyMisses atomic.Int64
}

// keepLookups moves a closing connection's key lookups to the server's.
func (s *Server) keepLookups(c *conn) {
	s.stats.keyHits.Add(c.lookups.Hits.Swap(0))
	s.stats.keyMisses.Add(c.lookups.Misses.Swap(0))
}

// resetLookups is CONFIG RESETSTAT's part for keyspace_hits and misses.
func (s *Server) resetLookups() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.keyHits.Store(0)
	s.stats.keyMisses.Store(0)
	for c := range s.conns {
		c.lookups.Hits.Store(0)
		c.lookups.Misses.Store(0)
	}
}

// keyLookups returns INFO's keyspace_hits and keyspace_misses: the read
// lookups of keys that were found and not found (materialize.Lookups),
// of the closed connections and the open ones. CONFIG RESETSTAT resets
// them.
func (s *Server) keyLookups() (hits, misses int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	hits, misses = s.stats.keyHits.Load(), s.stats.keyMisses.Load()
	for c := range s.conns {
		hits += c.lookups.Hits.Load()
		misses += c.lookups.Misses.Load()
	}
	return hits, misses
}

// New opens the store, connects to (or starts) NATS and returns a Server
// ready to Serve.
func New(opts Options) (*Server, error) {
	o := opts.withDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	fit, warning, err := fitMaxClients(o.MaxClients, openFilesLimit())
	if err != nil {
		return nil, err
	}
	if warning != "" {
		o.Logger.Warn(warning)
		o.MaxClients = fit
	}
	tl, err := newTelem(o.Telemetry)
	if err != nil {
		return nil, err
	}
	var observer materialize.Observer
	if tl != nil {
		observer = tl
	}
	store, err := materialize.Open(materialize.Options{
		Dir:                   o.Dir,
		InMemory:              o.InMemory,
		Sync:                  o.AppendFsync,
		CacheSize:             o.CacheSize,
		MemTableSize:          uint64(o.MemTableSize),
		MinFreeDisk:           o.MinFreeDisk,
		ChangeLogRetention:    o.Retention,
		ChangeLogRetentionAge: o.RetentionAge,
		SnapshotEvery:         o.SnapshotEvery,
		SnapshotKeep:          o.SnapshotKeep,
		Fatal:                 o.StorageFatal,
		Logger:                o.Logger,
		Now:                   o.Now,
		Observer:              observer,
	})
	if err != nil {
		return nil, err
	}
	s := &Server{opts: o, store: store, conns: map[*conn]struct{}{}, start: o.Now(), tel: tl, logSync: ratelog.New(10 * time.Second)}
	s.requirepass.Store(&o.RequirePass)
	s.maxClients.Store(int64(o.MaxClients))
	s.outLimits.Store(&outputLimits{replica: PubSubLimit{Hard: 256 << 20, Soft: 64 << 20, SoftFor: 60 * time.Second}, pubsub: o.PubSubLimit})
	s.timeout.Store(int64(o.Timeout))
	s.initConfig()
	s.acl = newACLUsers(o.RequirePass)
	if o.ACLFile != "" {
		if err := s.acl.load(o.ACLFile, nil); err != nil {
			store.Close()
			return nil, fmt.Errorf("broker: ACL file: %w", err)
		}
	}
	var id [20]byte
	rand.Read(id[:])
	s.replID = hex.EncodeToString(id[:])
	cfg := streams.DefaultConfig
	s.streamCfg.Store(&cfg)
	s.slowlog.slower.Store(10000) // Redis's defaults: 10 ms, 128 entries
	s.slowlog.maxLen.Store(128)
	s.cmdstats.init()
	s.cmdstats.tracking.Store(true) // latency-tracking yes, as Redis 7
	ps := slices.Clone(defaultPercentiles)
	s.cmdstats.percentiles.Store(&ps)
	s.cmdstats.resetAt.Store(&s.start)
	s.cons = newConsumers(o.Logger.Warn)
	s.watch = newWatches()
	store.SetReady(func(v *materialize.View, events []codec.Event, record func(materialize.Served)) {
		s.watch.touch(v, events)
		s.cons.ready(v, events, func(sv materialize.Served) {
			record(sv)
			s.watch.touch(v, sv.Events) // a served client's pops touch watched keys too
		})
	})
	s.ctx, s.cancel = context.WithCancel(context.Background())
	var feedAuth *natsFeedAuth
	if o.NATSFeedPassword != "" {
		prefix := cmp.Or(o.FeedPrefix, feed.DefaultPrefix)
		feedAuth = &natsFeedAuth{subjects: prefix + ".chg.>", replay: prefix + ".replay", snapshot: prefix + ".snapshot", password: o.NATSFeedPassword}
	}
	var jsDir string
	if o.FeedJetStream != "" && o.NATSURL == "" {
		// The embedded server's JetStream store: <dir>/jetstream.
		if jsDir = o.Dir; o.InMemory {
			if jsDir, err = os.MkdirTemp("", "sediment-jetstream-"); err != nil {
				store.Close()
				return nil, fmt.Errorf("broker: JetStream store: %w", err)
			}
			s.jsTemp = jsDir
		}
	}
	if s.wake, err = newWaker(o.NATSURL, o.NATSListen, feedAuth, jsDir, o.Logger, o.NATSOptions...); err != nil {
		store.Close()
		s.removeJSTemp()
		return nil, err
	}
	var capture *feed.Capture
	if o.FeedJetStream != "" {
		// Before anything can commit (active expiry): the capture holds
		// the log from its start.
		ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
		capture, err = feed.NewCapture(ctx, s.wake.nc, store, o.FeedPrefix, feed.CaptureConfig{Stream: o.FeedJetStream,
			Replicas: o.FeedJetStreamReplicas, MaxAge: o.FeedJetStreamMaxAge, Duplicates: o.FeedJetStreamDuplicates}, o.Logger)
		cancel()
		if err != nil {
			s.wake.close()
			store.Close()
			s.removeJSTemp()
			return nil, fmt.Errorf("broker: change feed capture: %w", err)
		}
	}
	s.wake.logicalDB = store.LogicalDB
	s.pubsub = newPubSub(s, s.wake.nc)
	s.track = newTracker(s)
	s.wg.Add(1)
	go s.activeExpiry()
	s.wg.Add(1)
	go s.closeIdle()
	s.wg.Add(1)
	go s.watchMaxMemory()
	nc := s.wake.nc
	s.feed = &feed.Publisher{Store: store, Prefix: o.FeedPrefix, Publish: nc.Publish,
		PublishTraced: func(subject string, payload []byte, traceparent string) error {
			return nc.PublishMsg(&nats.Msg{Subject: subject, Data: payload, Header: nats.Header{"traceparent": {traceparent}}})
		},
		MaxPayload: int(s.wake.nc.MaxPayload()), Logger: o.Logger, Capture: capture}
	if tl != nil {
		s.feed.Tracer = tl.tracer // send spans of traced events (docs/telemetry.md)
	}
	if ns := s.wake.ns; ns != nil && capture == nil {
		// (With a capture, JetStream subscribes to every event.)
		// Only subscribers of this server can listen: ask it.
		acc := ns.GlobalAccount()
		s.feed.Interest = acc.SubscriptionInterest
		s.feed.Active = func() bool { return acc.NumConnections() > 1 } // more than the wake connection
	}
	if capture == nil {
		s.feed.Start() // the feed's place, taken before any client writes
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.feed.Run(s.ctx)
	}()
	if err := s.serveReplay(); err != nil {
		s.Close()
		return nil, err
	}
	if tl != nil {
		if err := tl.observe(o.Telemetry.Meter(), s); err != nil {
			s.Close()
			return nil, err
		}
		if o.Telemetry.Meter() != nil {
			o.Telemetry.SetProducer(s.commandMetrics)
		}
	}
	if n := o.EventLoops; n >= 0 && runtime.GOOS == "linux" {
		if n == 0 {
			n = runtime.GOMAXPROCS(0)
		}
		if s.loops, err = newEventLoops(s, n); err != nil {
			o.Logger.Warn("no event loops: a goroutine serves each connection", "err", err)
		}
	}
	return s, nil
}

// ListenAndServe listens on Options.Addr and serves until Close.
// With Options.TLSAddr it also listens there for TLS (ServeTLS), and with
// Options.PlainOff there only.
func (s *Server) ListenAndServe() error {
	var tlsLn net.Listener
	if s.opts.TLSAddr != "" {
		ln, err := net.Listen("tcp", s.opts.TLSAddr)
		if err != nil {
			return err
		}
		tlsLn = ln
		if s.opts.PlainOff {
			return s.ServeTLS(tlsLn)
		}
	}
	ln, err := net.Listen("tcp", s.opts.Addr)
	if err != nil {
		if tlsLn != nil {
			tlsLn.Close()
		}
		return err
	}
	if tlsLn != nil {
		go func() {
			if err := s.ServeTLS(tlsLn); err != nil {
				s.opts.Logger.Error("TLS listener failed", "err", err)
			}
		}()
	}
	return s.Serve(ln)
}

// Ready returns nil while the server accepts clients (a listener is up and
// Close has not begun), and otherwise why not: /readyz (docs/telemetry.md).
func (s *Server) Ready() error {
	if s.closed.Load() {
		return errors.New("shutting down")
	}
	s.mu.Lock()
	up := s.ln != nil || s.tlsLn != nil
	s.mu.Unlock()
	if !up {
		return errors.New("not listening yet")
	}
	return nil
}

// Serve accepts connections on ln until Close; it returns nil after Close.
func (s *Server) Serve(ln net.Listener) error { return s.serve(ln, false) }

// ServeTLS accepts TLS connections on ln (Options.TLS) until Close; it
// returns nil after Close. Handshakes happen in the connections' own
// goroutines; one that fails closes its connection.
func (s *Server) ServeTLS(ln net.Listener) error {
	if s.opts.TLS == nil {
		ln.Close()
		return errors.New("broker: ServeTLS without Options.TLS")
	}
	return s.serve(tls.NewListener(ln, s.opts.TLS), true)
}

func (s *Server) serve(ln net.Listener, isTLS bool) error {
	s.mu.Lock()
	if s.closed.Load() {
		s.mu.Unlock()
		ln.Close()
		return nil
	}
	if isTLS {
		s.tlsLn = ln
	} else {
		s.ln = ln
	}
	s.mu.Unlock()
	s.opts.Logger.Info("listening", "addr", ln.Addr().String(), "tls", isTLS, "appendfsync", s.store.Policy().String())
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.closed.Load() {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			return err
		}
		s.stats.connsReceived.Add(1)
		s.mu.Lock()
		if s.closed.Load() {
			s.mu.Unlock()
			nc.Close()
			continue
		}
		if int64(len(s.conns)) >= s.maxClients.Load() {
			s.mu.Unlock()
			s.stats.rejectedConns.Add(1)
			go rejectConn(nc, errMaxClients)
			continue
		}
		if s.protectedDenied(nc.RemoteAddr()) {
			s.mu.Unlock()
			s.stats.rejectedConns.Add(1)
			s.opts.Logger.Warn("protected mode: refused a connection from outside loopback (no password is set)", "client", nc.RemoteAddr().String())
			go rejectConn(nc, errProtectedMode)
			continue
		}
		var lc net.Conn
		if s.loops != nil && !isTLS {
			if lc = s.loops.wrap(nc); lc != nil {
				nc = lc
			}
		}
		if lc == nil && !isTLS {
			nc = withRawIO(nc)
		}
		c := newConn(s, nc)
		if lc != nil {
			s.loops.prepare(c)
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		if lc != nil {
			// Under s.mu: a Close, shutdown or timeout of c that follows
			// (posted to the loop) must find it added.
			s.loops.add(c)
			s.mu.Unlock()
			continue
		}
		s.mu.Unlock()
		go func() {
			c.serve(nil)
			s.connDone(c)
		}()
	}
}

// connDone forgets a connection that closed.
func (s *Server) connDone(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.wg.Done()
}

// errMaxClients is Redis's reply to a connection beyond maxclients.
const errMaxClients = "-ERR max number of clients reached\r\n"

// rejectConn writes msg to a connection that will not be served and
// closes it, as Redis does beyond maxclients; a client that does not
// read it holds nothing for longer than rejectWriteTimeout.
func rejectConn(nc net.Conn, msg string) {
	nc.SetWriteDeadline(time.Now().Add(rejectWriteTimeout))
	nc.Write([]byte(msg))
	nc.Close()
}

const rejectWriteTimeout = time.Second

// TLSAddr returns the TLS listener's address, or nil before ServeTLS.
func (s *Server) TLSAddr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tlsLn == nil {
		return nil
	}
	return s.tlsLn.Addr()
}

// Addr returns the listener's address, or nil before Serve.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// Close stops accepting, ends blocking waits (they reply as on timeout),
// lets each connection finish the commands it has read, closes connections,
// then closes NATS and the store. It is safe to call more than once.
func (s *Server) Close() error {
	// Every caller (SIGTERM, SHUTDOWN, both) returns once the server is
	// closed, with the first close's error.
	s.closeOnce.Do(func() { s.closeErr = s.close() })
	return s.closeErr
}

func (s *Server) close() error {
	s.closed.Store(true)
	s.mu.Lock()
	if s.ln != nil {
		s.ln.Close()
	}
	if s.tlsLn != nil {
		s.tlsLn.Close()
	}
	for c := range s.conns {
		c.shutdown()
	}
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	if s.loops != nil {
		s.loops.stop()
	}
	if s.tel != nil {
		s.tel.close()
		s.opts.Telemetry.SetProducer(nil)
	}
	s.wake.close()
	s.removeJSTemp()
	err := s.store.Close()
	s.opts.Logger.Info("stopped")
	return err
}

// removeJSTemp removes the embedded JetStream's temporary store (InMemory
// with a change feed capture), if any.
func (s *Server) removeJSTemp() {
	if s.jsTemp != "" {
		os.RemoveAll(s.jsTemp)
	}
}

// closeIdle closes the connections idle for longer than the timeout
// (Redis's clientsCronHandleTimeout), checked a quarter of the timeout at
// start apart (10 ms to 1 s; 1 s without one). Clients blocked in a
// command are not idle.
func (s *Server) closeIdle() {
	period := time.Second
	if s.opts.Timeout > 0 {
		period = min(max(s.opts.Timeout/4, 10*time.Millisecond), time.Second)
	}
	s.every(period, func() {
		timeout := time.Duration(s.timeout.Load())
		if timeout == 0 {
			return
		}
		idleSince := s.opts.Now().Add(-timeout).UnixNano()
		s.mu.Lock()
		defer s.mu.Unlock()
		for c := range s.conns {
			if c.idleSince(idleSince) {
				s.opts.Logger.Debug("closing an idle client", "client", c.id)
				c.nc.Close() // its read fails: serve returns
			}
		}
	})
}

// setTimeout changes the idle timeout (CONFIG SET timeout). A connection
// keeps its activity times only while there is a timeout: turning one on
// starts every connection's idle time now, and marks those blocked in a
// command busy until they return.
func (s *Server) setTimeout(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.timeout.Load() == 0 && d > 0 {
		now := s.opts.Now().UnixNano()
		for c := range s.conns {
			c.active.Store(now)
			c.mu.Lock()
			if c.unblock != nil {
				c.busy.Store(true)
			}
			c.mu.Unlock()
		}
	}
	s.timeout.Store(int64(d))
}

// every calls fn every d until the server closes, then marks s.wg done.
func (s *Server) every(d time.Duration, fn func()) {
	defer s.wg.Done()
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}

// activeExpiry deletes keys whose TTL passed, ten times a second, as Redis's
// active expire cycle does (hz 10), and, once a second, idempotent IDs
// whose stream's idmp-duration passed (streams.ExpireIDMP).
func (s *Server) activeExpiry() {
	tick := 0
	var idmpFrom int64 // the sweep's cursor (streams.ExpireIDMP)
	s.every(100*time.Millisecond, func() {
		if s.store.Fault() != nil {
			return // writes are refused (docs/operations.md, "Storage faults")
		}
		if s.pause.writesHeld(s.opts.Now()) {
			return // CLIENT PAUSE WRITE holds expiry too, as Redis's
		}
		if tick++; tick%10 == 0 {
			_, err := s.store.Write(func(v *materialize.View) ([]codec.Event, error) {
				from := idmpFrom
				evs, err := streams.ExpireIDMP(v, &from, 1000)
				if err == nil {
					idmpFrom = from
				}
				return evs, err
			})
			if err != nil && !errors.Is(err, materialize.ErrClosed) {
				s.opts.Logger.Warn("idempotent-ID expiry failed", "err", err)
			}
		}
		keys, err := s.store.ExpireCycle(200)
		if err != nil {
			if !errors.Is(err, materialize.ErrClosed) {
				s.opts.Logger.Warn("active expiry failed", "err", err)
			}
			return
		}
		names := make([]string, 0, len(keys))
		for _, k := range keys {
			s.wake.publishKey(s.store.LogicalDB(k.DB), k.Key)
			names = append(names, string(k.Key))
		}
		s.track.invalidateKeys(names)
		if s.notify.Load() != 0 {
			notes := make([]note, len(keys))
			for i, k := range keys {
				notes[i] = note{class: notifyExpired, event: "expired", db: s.store.LogicalDB(k.DB), key: k.Key}
			}
			s.publishNotes(notes)
		}
	})
}
