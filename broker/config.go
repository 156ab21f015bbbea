package broker

import (
	"errors"
	"fmt"
	"math"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/internal/glob"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/streams"
)

// configParam is one parameter of CONFIG GET and SET: Redis 7.0's
// standardConfig (config.c). docs/operations.md lists them all, with what
// each does in Sediment.
type configParam struct {
	name  string
	alias string // Redis's older name: CONFIG GET reports it too, CONFIG SET takes it
	get   func(s *Server) string
	// set parses a value and returns the change it makes, run only once
	// every pair of the CONFIG SET has parsed; its error is the reason text
	// of Redis's "CONFIG SET failed" reply. nil: CONFIG SET refuses the
	// parameter ("can't set immutable config").
	set func(s *Server, v []byte) (apply func(), err error)
	// protected: refused as Redis refuses its protected configs with
	// enable-protected-configs no ("can't set protected config").
	protected bool
	// stored: Sediment keeps and reports the value, and nothing reads it
	// (the encoding knobs of Redis's in-memory types, eviction, RDB and
	// replication settings); def is its value at start.
	stored bool
	def    string
}

// configParams is the registry, and configByName finds a parameter by its
// name or alias in lower case.
var (
	configParams []*configParam
	configByName = map[string]*configParam{}
)

func registerConfig(ps ...*configParam) {
	for _, p := range ps {
		configParams = append(configParams, p)
		configByName[p.name] = p
		if p.alias != "" {
			configByName[p.alias] = p
		}
	}
}

// configStore holds the stored parameters' values (configParam.stored)
// and orders the apply phases of concurrent CONFIG SETs.
type configStore struct {
	mu     sync.Mutex
	values map[string]string
}

func (cs *configStore) load(name string) string {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.values[name]
}

// initConfig sets the stored parameters to their defaults.
func (s *Server) initConfig() {
	s.cfg.values = map[string]string{}
	for _, p := range configParams {
		if p.stored {
			s.cfg.values[p.name] = p.def
		}
	}
}

// Value checks shared by the parameter kinds, with Redis's reason texts.

func parseConfigInt(v []byte, lo, hi int64) (int64, error) {
	n, ok := parseInt(v)
	switch {
	case !ok:
		return 0, errors.New("argument couldn't be parsed into an integer")
	case n < lo || n > hi:
		return 0, fmt.Errorf("argument must be between %d and %d inclusive", lo, hi)
	}
	return n, nil
}

func parseConfigBool(v []byte) (bool, error) {
	b, ok := parseBool(v, "YES", "NO")
	if !ok {
		return false, errors.New("argument must be 'yes' or 'no'")
	}
	return b, nil
}

func parseConfigEnum(v []byte, options []string) (string, error) {
	for _, o := range options {
		if strings.EqualFold(string(v), o) {
			return o, nil
		}
	}
	return "", errors.New("argument(s) must be one of the following: " + strings.Join(options, ", "))
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// Parameter kinds. The stored ones keep their value as CONFIG GET shows it.

func storedParam(name, alias, def string, parse func(v []byte) (string, error)) *configParam {
	p := &configParam{name: name, alias: alias, stored: true, def: def}
	p.get = func(s *Server) string { return s.cfg.load(name) }
	p.set = func(s *Server, v []byte) (func(), error) {
		val, err := parse(v)
		if err != nil {
			return nil, err
		}
		return func() { s.cfg.values[name] = val }, nil // under s.cfg.mu (runConfigSet)
	}
	return p
}

func storedInt(name, alias string, def, lo, hi int64) *configParam {
	return storedParam(name, alias, strconv.FormatInt(def, 10), func(v []byte) (string, error) {
		n, err := parseConfigInt(v, lo, hi)
		return strconv.FormatInt(n, 10), err
	})
}

func storedMemory(name, alias string, def int64) *configParam {
	return storedParam(name, alias, strconv.FormatInt(def, 10), func(v []byte) (string, error) {
		n, err := parseMemory(v)
		return strconv.FormatInt(n, 10), err
	})
}

func storedBool(name, alias string, def bool) *configParam {
	return storedParam(name, alias, yesNo(def), func(v []byte) (string, error) {
		b, err := parseConfigBool(v)
		return yesNo(b), err
	})
}

func storedEnum(name, def string, options ...string) *configParam {
	return storedParam(name, "", def, func(v []byte) (string, error) { return parseConfigEnum(v, options) })
}

// fixedParam is an immutable parameter with a constant value.
func fixedParam(name, value string) *configParam {
	return &configParam{name: name, get: func(*Server) string { return value }}
}

// intParam is a parameter with an effect, read and set as an integer.
func intParam(name string, lo, hi int64, get func(s *Server) int64, set func(s *Server, n int64)) *configParam {
	return &configParam{
		name: name,
		get:  func(s *Server) string { return strconv.FormatInt(get(s), 10) },
		set: func(s *Server, v []byte) (func(), error) {
			n, err := parseConfigInt(v, lo, hi)
			if err != nil {
				return nil, err
			}
			return func() { set(s, n) }, nil
		},
	}
}

// memoryParam is a parameter with an effect, set as a memory value.
func memoryParam(name string, get func(s *Server) int64, set func(s *Server, n int64)) *configParam {
	return &configParam{
		name: name,
		get:  func(s *Server) string { return strconv.FormatInt(get(s), 10) },
		set: func(s *Server, v []byte) (func(), error) {
			n, err := parseMemory(v)
			if err != nil {
				return nil, err
			}
			return func() { set(s, n) }, nil
		},
	}
}

// boolParam is a parameter with an effect, set as yes or no.
func boolParam(name string, get func(s *Server) bool, set func(s *Server, b bool)) *configParam {
	return &configParam{
		name: name,
		get:  func(s *Server) string { return yesNo(get(s)) },
		set: func(s *Server, v []byte) (func(), error) {
			b, err := parseConfigBool(v)
			if err != nil {
				return nil, err
			}
			return func() { set(s, b) }, nil
		},
	}
}

// streamParam sets one field of the stream settings (streams.Config).
func streamParam(name string, field func(c *streams.Config) *int64, parse func(v []byte) (int64, error)) *configParam {
	return &configParam{
		name: name,
		get:  func(s *Server) string { return strconv.FormatInt(*field(s.streamCfg.Load()), 10) },
		set: func(s *Server, v []byte) (func(), error) {
			n, err := parse(v)
			if err != nil {
				return nil, err
			}
			return func() {
				c := *s.streamCfg.Load()
				*field(&c) = n
				s.streamCfg.Store(&c)
			}, nil
		},
	}
}

const maxInt32 = math.MaxInt32

func init() {
	// The parameters with an effect in Sediment.
	registerConfig(
		&configParam{name: "port", get: portOf},
		&configParam{name: "bind", get: func(s *Server) string {
			if a := s.Addr(); a != nil {
				h, _, _ := net.SplitHostPort(a.String())
				return h
			}
			return ""
		}},
		&configParam{name: "dir", protected: true, get: func(s *Server) string {
			if d, err := filepath.Abs(s.opts.Dir); err == nil && !s.opts.InMemory {
				return d
			}
			return s.opts.Dir
		}},
		&configParam{name: "databases", get: func(s *Server) string { return strconv.Itoa(s.opts.Databases) }},
		&configParam{name: "aclfile", get: func(s *Server) string { return s.opts.ACLFile }},
		&configParam{name: "protected-mode", get: func(s *Server) string { return yesNo(!s.opts.ProtectedModeOff) }},
		&configParam{name: "proto-max-bulk-len", get: func(s *Server) string { return strconv.FormatInt(s.opts.Limits.MaxBulkLen, 10) }},
		&configParam{name: "client-query-buffer-limit", get: func(s *Server) string { return strconv.FormatInt(s.opts.Limits.MaxQueryBuffer, 10) }},
		&configParam{name: "client-output-buffer-limit", get: func(s *Server) string {
			l := s.outLimits.Load()
			f := func(c PubSubLimit) string {
				return fmt.Sprintf("%d %d %d", c.Hard, c.Soft, int64(c.SoftFor/time.Second))
			}
			return "normal " + f(l.normal) + " slave " + f(l.replica) + " pubsub " + f(l.pubsub)
		}, set: parseOutputLimits},
		&configParam{
			// The change log is always written: appendonly is always yes.
			name: "appendonly",
			get:  func(*Server) string { return "yes" },
			set: func(s *Server, v []byte) (func(), error) {
				b, err := parseConfigBool(v)
				if err == nil && !b {
					err = errors.New("Sediment's change log cannot be turned off")
				}
				return func() {}, err
			},
		},
		&configParam{
			name: "appendfsync",
			get:  func(s *Server) string { return s.store.Policy().String() },
			set: func(s *Server, v []byte) (func(), error) {
				o, err := parseConfigEnum(v, []string{"always", "everysec", "no"})
				if err != nil {
					return nil, err
				}
				p, _ := materialize.ParseSyncPolicy(o)
				return func() { s.store.SetPolicy(p) }, nil
			},
		},
		&configParam{
			name: "maxclients",
			get:  func(s *Server) string { return strconv.FormatInt(s.maxClients.Load(), 10) },
			set: func(s *Server, v []byte) (func(), error) {
				n, err := parseConfigInt(v, 1, math.MaxUint32)
				if err != nil {
					return nil, err
				}
				// Redis's updateMaxclients: no more than the open-files limit allows.
				if fit, warning, ferr := fitMaxClients(int(n), openFilesLimit()); warning != "" || ferr != nil {
					return nil, fmt.Errorf("The operating system is not able to handle the specified number of clients, try with %d", fit)
				}
				return func() { s.maxClients.Store(n) }, nil
			},
		},
		intParam("timeout", 0, maxInt32,
			func(s *Server) int64 { return s.timeout.Load() / int64(time.Second) },
			func(s *Server, n int64) { s.setTimeout(time.Duration(n) * time.Second) }),
		&configParam{
			name: "requirepass",
			get:  func(s *Server) string { return s.password() },
			set: func(s *Server, v []byte) (func(), error) {
				pass := string(v)
				return func() {
					s.acl.setDefaultPassword(pass)
					s.requirepass.Store(&pass)
				}, nil
			},
		},
		&configParam{
			name: "notify-keyspace-events",
			get:  func(s *Server) string { return formatNotifyFlags(s.notify.Load()) },
			set: func(s *Server, v []byte) (func(), error) {
				f, ok := parseNotifyFlags(v)
				if !ok {
					return nil, errors.New("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")
				}
				return func() { s.notify.Store(f) }, nil
			},
		},
		intParam("slowlog-log-slower-than", -1, math.MaxInt64,
			func(s *Server) int64 { return s.slowlog.slower.Load() },
			func(s *Server, n int64) { s.slowlog.slower.Store(n) }),
		intParam("slowlog-max-len", 0, math.MaxInt64,
			func(s *Server) int64 { return s.slowlog.maxLen.Load() },
			func(s *Server, n int64) { s.slowlog.maxLen.Store(n) }),
		intParam("latency-monitor-threshold", 0, math.MaxInt64,
			func(s *Server) int64 { return s.latency.threshold.Load() },
			func(s *Server, n int64) { s.latency.threshold.Store(n) }),
		boolParam("latency-tracking",
			func(s *Server) bool { return s.cmdstats.tracking.Load() },
			func(s *Server, b bool) { s.cmdstats.tracking.Store(b) }),
		&configParam{
			name: "latency-tracking-info-percentiles",
			get:  func(s *Server) string { return formatPercentiles(*s.cmdstats.percentiles.Load()) },
			set: func(s *Server, v []byte) (func(), error) {
				ps, err := parsePercentiles(v)
				if err != nil {
					return nil, err
				}
				return func() { s.cmdstats.percentiles.Store(&ps) }, nil
			},
		},
		intParam("tracking-table-max-keys", 0, math.MaxInt64,
			func(s *Server) int64 { return int64(s.track.maxKeys()) },
			func(s *Server, n int64) { s.track.setMaxKeys(int(n)) }),
		intParam("acllog-max-len", 0, math.MaxInt64,
			func(s *Server) int64 { return s.acl.logMax.Load() },
			func(s *Server, n int64) { s.acl.logMax.Store(n) }),
		streamParam("stream-node-max-entries", func(c *streams.Config) *int64 { return &c.NodeMaxEntries },
			func(v []byte) (int64, error) { return parseConfigInt(v, 0, math.MaxInt64) }),
		streamParam("stream-node-max-bytes", func(c *streams.Config) *int64 { return &c.NodeMaxBytes }, parseMemory),
		streamParam("stream-idmp-duration", func(c *streams.Config) *int64 { return &c.IDMPDurationS },
			func(v []byte) (int64, error) { return parseConfigInt(v, 1, streams.IDMPDurationMax) }),
		streamParam("stream-idmp-maxsize", func(c *streams.Config) *int64 { return &c.IDMPMaxSize },
			func(v []byte) (int64, error) { return parseConfigInt(v, 1, streams.IDMPMaxSizeMax) }),
		memoryParam("min-free-disk",
			func(s *Server) int64 { return int64(minFree(s.store)) },
			func(s *Server, n int64) { s.store.SetMinFreeDisk(n) }),
	)

	// Parameters Sediment keeps and reports without effect (Redis 7.0's
	// defaults, ranges and aliases).
	registerConfig(
		storedInt("hash-max-listpack-entries", "hash-max-ziplist-entries", 512, 0, math.MaxInt64),
		storedMemory("hash-max-listpack-value", "hash-max-ziplist-value", 64),
		storedInt("zset-max-listpack-entries", "zset-max-ziplist-entries", 128, 0, math.MaxInt64),
		storedMemory("zset-max-listpack-value", "zset-max-ziplist-value", 64),
		storedInt("list-max-listpack-size", "list-max-ziplist-size", -2, math.MinInt32, maxInt32),
		storedInt("list-compress-depth", "", 0, 0, maxInt32),
		storedInt("set-max-intset-entries", "", 512, 0, math.MaxInt64),
		storedMemory("hll-sparse-max-bytes", "", 3000),
		storedInt("busy-reply-threshold", "lua-time-limit", 5000, 0, math.MaxInt64),
		storedParam("hz", "", "10", func(v []byte) (string, error) {
			n, err := parseConfigInt(v, 0, maxInt32)
			return strconv.FormatInt(min(max(n, 1), 500), 10), err // Redis clamps hz to 1..500
		}),
		storedBool("dynamic-hz", "", true),
		storedInt("active-expire-effort", "", 1, 1, 10),
		storedMemory("maxmemory", "", 0),
		storedEnum("maxmemory-policy", "noeviction", "volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl",
			"allkeys-lru", "allkeys-lfu", "allkeys-random", "noeviction"),
		storedInt("maxmemory-samples", "", 5, 1, maxInt32),
		storedInt("lfu-log-factor", "", 10, 0, maxInt32),
		storedInt("lfu-decay-time", "", 1, 0, maxInt32),
		storedEnum("loglevel", "notice", "debug", "verbose", "notice", "warning"),
		storedInt("tcp-keepalive", "", 300, 0, maxInt32),
		storedBool("lazyfree-lazy-eviction", "", false),
		storedBool("lazyfree-lazy-expire", "", false),
		storedBool("lazyfree-lazy-server-del", "", false),
		storedBool("lazyfree-lazy-user-del", "", false),
		storedBool("lazyfree-lazy-user-flush", "", false),
		storedBool("activerehashing", "", true),
		storedBool("activedefrag", "", false),
		storedBool("replica-read-only", "slave-read-only", true),
		storedInt("min-replicas-to-write", "min-slaves-to-write", 0, 0, maxInt32),
		storedMemory("repl-backlog-size", "", 1<<20),
		storedBool("stop-writes-on-bgsave-error", "", true),
		storedBool("rdbcompression", "", true),
		storedBool("aof-use-rdb-preamble", "", true),
		storedBool("no-appendfsync-on-rewrite", "", false),
		storedInt("auto-aof-rewrite-percentage", "", 100, 0, maxInt32),
		storedMemory("auto-aof-rewrite-min-size", "", 64<<20),
		storedParam("save", "", "", parseSave),
		fixedParam("logfile", ""),
		&configParam{name: "dbfilename", protected: true, get: func(*Server) string { return "dump.rdb" }},
		fixedParam("appendfilename", "appendonly.aof"),
		fixedParam("appenddirname", "appendonlydir"),
		fixedParam("daemonize", "no"),
		fixedParam("pidfile", ""),
		fixedParam("unixsocket", ""),
		fixedParam("io-threads", "1"),
		fixedParam("cluster-enabled", "no"),
		fixedParam("tcp-backlog", "511"),
		fixedParam("enable-protected-configs", "no"),
		fixedParam("enable-debug-command", "no"),
		fixedParam("rdbchecksum", "yes"),
	)
}

// parseOutputLimits parses client-output-buffer-limit as Redis 7.0 does:
// groups of class (normal, replica or slave, pubsub), hard and soft
// limits (memory values, 0: none) and soft seconds; classes not named
// keep their limits.
func parseOutputLimits(s *Server, v []byte) (func(), error) {
	f := strings.Fields(string(v))
	if len(f)%4 != 0 {
		return nil, errors.New("Wrong number of arguments in buffer limit configuration.")
	}
	type set struct {
		class string
		limit PubSubLimit
	}
	var sets []set
	for i := 0; i < len(f); i += 4 {
		class := strings.ToLower(f[i])
		if class != "normal" && class != "replica" && class != "slave" && class != "pubsub" {
			return nil, errors.New("Invalid client class specified in buffer limit configuration.")
		}
		hard, err1 := parseMemory([]byte(f[i+1]))
		soft, err2 := parseMemory([]byte(f[i+2]))
		secs, ok := parseInt([]byte(f[i+3]))
		if err1 != nil || err2 != nil || !ok || secs < 0 || secs > math.MaxInt64/int64(time.Second) {
			return nil, errors.New("Error in hard, soft or soft_seconds setting in buffer limit configuration.")
		}
		sets = append(sets, set{class, PubSubLimit{Hard: hard, Soft: soft, SoftFor: time.Duration(secs) * time.Second}})
	}
	return func() { // under s.cfg.mu: concurrent CONFIG SETs of other classes are kept
		l := *s.outLimits.Load()
		for _, st := range sets {
			switch st.class {
			case "normal":
				l.normal = st.limit
			case "pubsub":
				l.pubsub = st.limit
			default:
				l.replica = st.limit
			}
		}
		s.outLimits.Store(&l)
	}, nil
}

// parseSave checks a save value as Redis 7.0 does: pairs of seconds and
// changes (non-negative integers), or "" for none.
func parseSave(v []byte) (string, error) {
	f := strings.Fields(string(v))
	if len(f)%2 != 0 {
		return "", errors.New("Invalid save parameters")
	}
	for _, n := range f {
		if x, err := strconv.ParseInt(n, 10, 64); err != nil || x < 0 {
			return "", errors.New("Invalid save parameters")
		}
	}
	return strings.Join(f, " "), nil
}

// configHelp is CONFIG HELP's text, Redis 7.0's.
var configHelp = []string{
	"CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"GET <pattern>",
	"    Return parameters matching the glob-like <pattern> and their values.",
	"SET <directive> <value>",
	"    Set the configuration <directive> to <value>.",
	"RESETSTAT",
	"    Reset statistics reported by the INFO command.",
	"REWRITE",
	"    Rewrite the configuration file.",
	"HELP",
	"    Prints this help.",
}

// errNoConfigFile is CONFIG REWRITE's reply: Sediment's settings are flags
// and CONFIG SET, with no file to rewrite (Redis's error when it has none).
var errNoConfigFile = wireError("ERR The server is running without a config file")

// CONFIG GET pattern [pattern ...] | SET parameter value [...] | RESETSTAT
// | HELP | REWRITE (always Redis's error for a server without a config
// file).
func runConfig(x *exec) error {
	sub, n := x.args[1], len(x.args)
	switch {
	case equalFold(sub, "GET") && n >= 3:
		return runConfigGet(x)
	case equalFold(sub, "SET") && n >= 4:
		return runConfigSet(x)
	case equalFold(sub, "RESETSTAT") && n == 2:
		x.c.s.cmdstats.reset()
		x.c.s.resetLookups()
		x.reply().OK()
	case equalFold(sub, "HELP") && n == 2:
		command.WriteHelp(x.reply(), configHelp)
	case equalFold(sub, "REWRITE") && n == 2:
		return errNoConfigFile
	case equalFold(sub, "GET"), equalFold(sub, "SET"), equalFold(sub, "RESETSTAT"), equalFold(sub, "HELP"), equalFold(sub, "REWRITE"):
		return errWrongArgsSub("config", sub)
	default:
		return errUnknownSubcommand(sub, "config")
	}
	return nil
}

// runConfigGet is Redis 7.0's configGetCommand: a pattern without glob
// characters is looked up by name or alias and reported under the name as
// given; a glob matches names and aliases without case (a parameter and
// its alias both match "hash-max-*"); each name is reported once, whatever
// its case.
func runConfigGet(x *exec) error {
	s := x.c.s
	var names []string
	var params []*configParam
	add := func(name string, p *configParam) {
		if !slices.ContainsFunc(names, func(n string) bool { return strings.EqualFold(n, name) }) {
			names, params = append(names, name), append(params, p)
		}
	}
	for _, pat := range x.args[2:] {
		if !strings.ContainsAny(string(pat), "[*?") {
			if p := configByName[command.Lower(pat)]; p != nil {
				add(string(pat), p)
			}
			continue
		}
		lower := []byte(command.Lower(pat))
		for _, p := range configParams {
			for _, name := range []string{p.name, p.alias} {
				if name != "" && glob.Match(lower, []byte(name)) {
					add(name, p)
				}
			}
		}
	}
	w := x.reply()
	w.Map(len(names))
	for i, name := range names {
		w.BulkString(name)
		w.BulkString(params[i].get(s))
	}
	return nil
}

// runConfigSet is Redis 7.0's configSetCommand: every pair is checked
// (unknown, immutable, protected and repeated names first, in argument
// order, then each value) before any is applied, so a failed CONFIG SET
// changes nothing. Errors name the parameter as given (an alias is not the
// duplicate of its parameter).
func runConfigSet(x *exec) error {
	if len(x.args)%2 != 0 {
		return errSyntax
	}
	var set []*configParam
	var names []string // as given, in lower case: an alias is a parameter of its own here, as in Redis
	var argErr error
	for i := 2; i < len(x.args); i += 2 {
		name := command.Lower(x.args[i])
		p := configByName[name]
		switch {
		case p == nil && argErr == nil:
			return errConfigSetUnknown(x.args[i])
		case p == nil || argErr != nil:
			continue // the first error in argument order is the reply
		case p.set == nil && p.protected:
			argErr = errConfigSetFailed(string(x.args[i]), "can't set protected config")
		case p.set == nil:
			argErr = errConfigSetFailed(string(x.args[i]), "can't set immutable config")
		case slices.Contains(names, name):
			argErr = errConfigSetFailed(string(x.args[i]), "duplicate parameter")
		}
		set, names = append(set, p), append(names, name)
	}
	if argErr != nil {
		return argErr
	}
	s := x.c.s
	applies := make([]func(), len(set))
	for i, p := range set {
		apply, err := p.set(s, x.args[3+2*i])
		if err != nil {
			return errConfigSetFailed(names[i], err.Error())
		}
		applies[i] = apply
	}
	s.cfg.mu.Lock()
	for _, apply := range applies {
		apply()
	}
	s.cfg.mu.Unlock()
	x.reply().OK()
	return nil
}
