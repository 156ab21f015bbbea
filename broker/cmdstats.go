package broker

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sediment-dev/sediment/command"
)

// Per-command statistics (INFO commandstats), error statistics (INFO
// errorstats) and the slow log (SLOWLOG), as Redis 7.0 keeps them.
//
// A command's time is what its handler took on the connection (or, inside
// EXEC, the writer's) goroutine, less any time it waited blocked (BLPOP,
// XREAD BLOCK ...), as Redis counts it. A pipelined write's time is its
// submission; the commit it waits for with the rest of its group is not
// counted (Redis has no such wait).

// clockBase and monotonic give a monotonic clock at one clock read per
// call (time.Now reads two clocks): about 36 ns here against 60.
var clockBase = time.Now()

func monotonic() time.Duration { return time.Since(clockBase) }

// cmdStat is one command's (or subcommand's) counters.
type cmdStat struct {
	calls, usec, rejected, failed atomic.Int64
	// lat are its latency histograms (latency.go), [0] of the calls that
	// succeeded and [1] of those that failed; nil until the first.
	lat [2]atomic.Pointer[latHist]
}

// cmdStats holds a server's counters: the commands' by their index
// (cmdSpec.idx: no lookup per call), the subcommands' by full name
// ("client|info").
type cmdStats struct {
	byCmd  []cmdStat // made by init once every command is registered
	m      sync.Map  // string → *cmdStat
	errors sync.Map  // error code ("ERR", "WRONGTYPE") → *atomic.Int64
	errTot atomic.Int64
	// tracking is latency-tracking (the histograms are kept), percentiles
	// latency-tracking-info-percentiles (latency.go).
	tracking    atomic.Bool
	percentiles atomic.Pointer[[]float64]
	// resetAt is when the counters began (start or CONFIG RESETSTAT):
	// the start time of the cumulative metrics (telemetry.go).
	resetAt atomic.Pointer[time.Time]
}

// fullName is Redis's name of a request's command: "name", or
// "name|subcommand" for the container commands (CLIENT LIST's cmd, the
// subscribed-state error). It allocates only for a container command.
func fullName(cmd *cmdSpec, args [][]byte) string {
	if cmd.container && len(args) > 1 {
		return cmd.name + "|" + command.Lower(args[1])
	}
	return cmd.name
}

// statFor returns the counters of a request's command: its subcommand's
// when it names a known one (so that made-up subcommands cannot grow the
// table), else the command's.
func (s *cmdStats) statFor(cmd *cmdSpec, args [][]byte) *cmdStat {
	if cmd.container && len(args) > 1 {
		sub := command.Lower(args[1])
		if slices.Contains(subcommands[cmd.name], sub) {
			return s.get(cmd.name + "|" + sub)
		}
	}
	return s.of(cmd)
}

// of returns cmd's own counters (not its subcommands').
func (s *cmdStats) of(cmd *cmdSpec) *cmdStat { return &s.byCmd[cmd.idx] }

// init makes the counters of every registered command.
func (s *cmdStats) init() { s.byCmd = make([]cmdStat, len(commandTable)) }

// subcommands are the container commands' subcommands that Sediment runs:
// the table's container flag (fullName) and the commandstats names.
var subcommands = map[string][]string{
	"acl":     {"cat", "deluser", "dryrun", "genpass", "getuser", "list", "load", "log", "save", "setuser", "users", "whoami", "help"},
	"client":  {"id", "getname", "setname", "setinfo", "info", "list", "unblock", "kill", "tracking", "caching", "getredir", "trackinginfo", "no-evict", "no-touch", "pause", "unpause", "reply", "help"},
	"config":  {"get", "set", "resetstat", "help", "rewrite"},
	"command": {"count", "list", "info", "docs", "getkeys", "getkeysandflags", "help"},
	"object":  {"encoding", "freq", "idletime", "refcount", "help"},
	"pubsub":  {"channels", "numsub", "numpat", "shardchannels", "shardnumsub", "help"},
	"xgroup":  {"create", "setid", "destroy", "createconsumer", "delconsumer", "help"},
	"xinfo":   {"stream", "groups", "consumers", "help"},
	"slowlog": {"get", "len", "reset", "help"},
	"latency": {"doctor", "graph", "history", "latest", "reset", "histogram", "help"},
	"memory":  {"doctor", "malloc-stats", "purge", "stats", "usage", "help"},
}

func (s *cmdStats) get(name string) *cmdStat {
	if v, ok := s.m.Load(name); ok {
		return v.(*cmdStat)
	}
	v, _ := s.m.LoadOrStore(name, new(cmdStat))
	return v.(*cmdStat)
}

// ran counts one call of cmd (args: for its subcommand) that took d;
// failed when it replied an error. It feeds INFO commandstats, the
// latency histograms when latency-tracking is on (unless deferred: a
// submitted write's outcome is known at its commit, where drain calls
// recordLatency), and the latency monitor when its threshold is set.
func (s *Server) ran(cmd *cmdSpec, args [][]byte, d time.Duration, failed, deferLatency bool) {
	st := s.cmdstats.statFor(cmd, args)
	st.calls.Add(1)
	st.usec.Add(d.Microseconds())
	if failed {
		st.failed.Add(1)
	}
	if !deferLatency {
		s.recordLatency(st, d, failed)
	}
	if t := s.latency.threshold.Load(); t > 0 && d >= time.Duration(t)*time.Millisecond {
		event := "command"
		if cmd.flags&flagFast != 0 {
			event = "fast-command"
		}
		s.latency.add(event, s.opts.Now().Unix(), d.Milliseconds())
	}
}

// recordLatency puts a call of d in st's histogram of its outcome, when
// latency-tracking is on.
func (s *Server) recordLatency(st *cmdStat, d time.Duration, failed bool) {
	if !s.cmdstats.tracking.Load() {
		return
	}
	i := 0
	if failed {
		i = 1
	}
	latHistOf(&st.lat[i]).record(d)
}

// errorReply counts an error reply by its code, the text's first word
// (INFO errorstats).
func (s *cmdStats) errorReply(msg string) {
	code, _, _ := strings.Cut(msg, " ")
	s.errTot.Add(1)
	v, ok := s.errors.Load(code)
	if !ok {
		v, _ = s.errors.LoadOrStore(code, new(atomic.Int64))
	}
	v.(*atomic.Int64).Add(1)
}

// reset forgets every counter (CONFIG RESETSTAT).
func (s *cmdStats) reset() {
	s.m.Range(func(k, _ any) bool { s.m.Delete(k); return true })
	for i := range s.byCmd {
		st := &s.byCmd[i]
		st.calls.Store(0)
		st.usec.Store(0)
		st.rejected.Store(0)
		st.failed.Store(0)
		st.lat[0].Store(nil)
		st.lat[1].Store(nil)
	}
	now := time.Now()
	s.resetAt.Store(&now)
	s.errors.Range(func(k, _ any) bool { s.errors.Delete(k); return true })
	s.errTot.Store(0)
}

// commandstats renders INFO's commandstats lines, by name.
func (s *cmdStats) commandstats(kv func(k string, v any)) {
	s.eachStat(func(n string, st *cmdStat) {
		calls, usec := st.calls.Load(), st.usec.Load()
		per := 0.0
		if calls > 0 {
			per = float64(usec) / float64(calls)
		}
		kv("cmdstat_"+n, fmt.Sprintf("calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d",
			calls, usec, per, st.rejected.Load(), st.failed.Load()))
	})
}

// errorstats renders INFO's errorstats lines, by code.
func (s *cmdStats) errorstats(kv func(k string, v any)) {
	var codes []string
	s.errors.Range(func(k, _ any) bool { codes = append(codes, k.(string)); return true })
	slices.Sort(codes)
	for _, c := range codes {
		v, _ := s.errors.Load(c)
		kv("errorstat_"+c, fmt.Sprintf("count=%d", v.(*atomic.Int64).Load()))
	}
}

// slowEntry is one slow log entry.
type slowEntry struct {
	id, unix, usec int64
	args           []string
	addr, name     string
}

// slowLog is the slow log: the newest entries first, at most maxLen.
type slowLog struct {
	mu      sync.Mutex
	entries []slowEntry
	nextID  int64
	slower  atomic.Int64 // slowlog-log-slower-than, µs; negative: off
	maxLen  atomic.Int64 // slowlog-max-len
}

// Redis's slow log bounds on what an entry keeps of a command.
const (
	slowMaxArgs   = 32
	slowMaxArgLen = 128
)

// add logs a command that took d, if it was slow enough. args are
// copied, shortened as Redis does, AUTH's and HELLO AUTH's secrets
// redacted.
func (l *slowLog) add(c *conn, cmd *cmdSpec, args [][]byte, d time.Duration) {
	slower := l.slower.Load()
	if slower < 0 || d.Microseconds() < slower || cmd.name == "exec" {
		return // EXEC's commands are logged one by one, as Redis's skip_slowlog
	}
	n := min(len(args), slowMaxArgs)
	e := slowEntry{unix: c.s.opts.Now().Unix(), usec: d.Microseconds(), args: make([]string, n), addr: c.nc.RemoteAddr().String()}
	redact := redactedArgs(cmd, args)
	for i := range n {
		a := args[i]
		switch {
		case i == slowMaxArgs-1 && len(args) > slowMaxArgs:
			e.args[i] = fmt.Sprintf("... (%d more arguments)", len(args)-slowMaxArgs+1)
		case redact[i]:
			e.args[i] = "(redacted)"
		case len(a) > slowMaxArgLen:
			e.args[i] = fmt.Sprintf("%s... (%d more bytes)", a[:slowMaxArgLen], len(a)-slowMaxArgLen)
		default:
			e.args[i] = string(a)
		}
	}
	c.mu.Lock()
	e.name = c.name
	c.mu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	e.id = l.nextID
	l.nextID++
	l.entries = slices.Insert(l.entries, 0, e)
	if max := int(l.maxLen.Load()); len(l.entries) > max {
		l.entries = l.entries[:max]
	}
}

func init() {
	register(
		&cmdSpec{name: "slowlog", arity: -2, flags: flagAdmin, group: "server", since: "2.2.12", summary: "A container for slow log commands.", run: runSlowlog},
	)
}

var slowlogHelp = []string{
	"SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"GET [<count>]",
	"    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
	"    Entries are made of:",
	"    id, timestamp, time in microseconds, arguments array, client IP and port,",
	"    client name",
	"LEN",
	"    Return the length of the slowlog.",
	"RESET",
	"    Reset the slowlog.",
	"HELP",
	"    Prints this help.",
}

// SLOWLOG GET [count] | LEN | RESET | HELP.
// https://redis.io/docs/latest/commands/slowlog/
func runSlowlog(x *exec) error {
	l := &x.c.s.slowlog
	sub, n := x.args[1], len(x.args)
	w := x.reply()
	switch {
	case equalFold(sub, "GET") && n <= 3:
		count := int64(10)
		if n == 3 {
			v, ok := parseInt(x.args[2])
			if !ok || v < -1 {
				return errSlowlogCount
			}
			count = v
		}
		l.mu.Lock()
		es := l.entries
		if count >= 0 && int64(len(es)) > count {
			es = es[:count]
		}
		es = slices.Clone(es)
		l.mu.Unlock()
		w.Array(len(es))
		for _, e := range es {
			w.Array(6)
			w.Int(e.id)
			w.Int(e.unix)
			w.Int(e.usec)
			w.Array(len(e.args))
			for _, a := range e.args {
				w.BulkString(a)
			}
			w.BulkString(e.addr)
			w.BulkString(e.name)
		}
	case equalFold(sub, "LEN") && n == 2:
		l.mu.Lock()
		w.Int(int64(len(l.entries)))
		l.mu.Unlock()
	case equalFold(sub, "RESET") && n == 2:
		l.mu.Lock()
		l.entries = nil
		l.mu.Unlock()
		w.OK()
	case equalFold(sub, "HELP") && n == 2:
		command.WriteHelp(w, slowlogHelp)
	case equalFold(sub, "GET"), equalFold(sub, "LEN"), equalFold(sub, "RESET"), equalFold(sub, "HELP"):
		return errWrongArgsSub("slowlog", sub)
	default:
		return errUnknownSubcommand(sub, "slowlog")
	}
	return nil
}
