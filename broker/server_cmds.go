package broker

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/command/reply"
	"github.com/sediment-dev/sediment/materialize"
)

// Version is the Redis version Sediment reports in INFO (redis_version), so
// clients enable the features it implements; sediment_version is its own.
const Version = "7.0.0"

// SedimentVersion is set by the build (-ldflags -X).
var SedimentVersion = "dev"

func init() {
	register(
		&cmdSpec{name: "ping", arity: -1, flags: flagFast, group: "connection", since: "1.0.0", summary: "Returns the server's liveliness response.", run: runPing},
		&cmdSpec{name: "echo", arity: 2, flags: flagFast, group: "connection", since: "1.0.0", summary: "Returns the given string.", run: runEcho},
		&cmdSpec{name: "quit", arity: -1, flags: flagFast, group: "connection", since: "1.0.0", summary: "Closes the connection.", run: runQuit},
		&cmdSpec{name: "select", arity: 2, flags: flagFast, group: "connection", since: "1.0.0", summary: "Changes the selected database.", run: runSelect},
		&cmdSpec{name: "client", arity: -2, flags: 0, group: "connection", since: "2.4.0", summary: "A container for client connection commands.", run: runClient},
		&cmdSpec{name: "command", arity: -1, flags: 0, group: "server", since: "2.8.13", summary: "Returns detailed information about all commands.", run: runCommand},
		&cmdSpec{name: "info", arity: -1, flags: 0, group: "server", since: "1.0.0", summary: "Returns information and statistics about the server.", run: runInfo},
		&cmdSpec{name: "time", arity: 1, flags: flagFast, group: "server", since: "2.6.0", summary: "Returns the server time.", run: runTime},
		&cmdSpec{name: "role", arity: 1, flags: flagNoScript | flagLoading | flagStale | flagFast, group: "server", since: "2.8.12", summary: "Returns the replication role.", run: runRole},
		&cmdSpec{name: "config", arity: -2, flags: flagAdmin, group: "server", since: "2.0.0", summary: "A container for server configuration commands.", run: runConfig},
	)
}

// PING [message]. Reply: PONG, or the message as a bulk string.
func runPing(x *exec) error {
	if x.c.proto == reply.RESP2 && x.c.subscribed() {
		// Redis's subscribed-state PING: ["pong", message or ""].
		if len(x.args) > 2 {
			return errWrongArgs("ping")
		}
		w := x.reply()
		w.Array(2)
		w.BulkString("pong")
		if len(x.args) == 2 {
			w.Bulk(x.args[1])
		} else {
			w.BulkString("")
		}
		return nil
	}
	switch len(x.args) {
	case 1:
		x.reply().Simple("PONG")
	case 2:
		x.reply().Bulk(x.args[1])
	default:
		return errWrongArgs("ping")
	}
	return nil
}

// ECHO message.
func runEcho(x *exec) error { x.reply().Bulk(x.args[1]); return nil }

// QUIT: replies OK, then closes the connection after flushing.
func runQuit(x *exec) error {
	x.reply().Simple("OK")
	x.c.closeAfter = true
	return nil
}

// SELECT index: 0 <= index < Options.Databases. As Redis, an index
// outside C's int range gets the range error before the database check.
func runSelect(x *exec) error {
	n, ok := parseInt(x.args[1])
	if !ok {
		return errNotInteger
	}
	if n < math.MinInt32 || n > math.MaxInt32 {
		return errValueRange(math.MinInt32, math.MaxInt32)
	}
	if n < 0 || n >= int64(x.c.s.opts.Databases) {
		return errDBIndex
	}
	x.c.mu.Lock()
	x.c.db = uint8(n) // under mu: CLIENT LIST on other connections reads it
	x.c.mu.Unlock()
	x.reply().Simple("OK")
	return nil
}

// CLIENT ID | GETNAME | SETNAME name | SETINFO attr value | INFO | LIST |
// UNBLOCK client-id [TIMEOUT | ERROR]
func runClient(x *exec) error {
	sub, n := x.args[1], len(x.args)
	c := x.c
	if ok, err := clientTracking(x, sub); ok {
		return err
	}
	switch {
	case equalFold(sub, "ID") && n == 2:
		x.reply().Int(c.id)
	case equalFold(sub, "GETNAME") && n == 2:
		c.mu.Lock()
		name := c.name
		c.mu.Unlock()
		if name == "" {
			x.reply().NullBulk()
		} else {
			x.reply().BulkString(name)
		}
	case equalFold(sub, "SETNAME") && n == 3:
		if !validClientName(x.args[2]) {
			return errBadClientName
		}
		c.mu.Lock()
		c.name = string(x.args[2])
		c.mu.Unlock()
		x.reply().Simple("OK")
	case equalFold(sub, "SETINFO") && n == 4:
		// Redis 7.2's: LIB-NAME and LIB-VER show in CLIENT LIST; other
		// attributes are accepted and ignored.
		c.mu.Lock()
		switch {
		case equalFold(x.args[2], "LIB-NAME"):
			c.libName = string(x.args[3])
		case equalFold(x.args[2], "LIB-VER"):
			c.libVer = string(x.args[3])
		}
		c.mu.Unlock()
		x.reply().Simple("OK")
	case equalFold(sub, "INFO") && n == 2:
		x.reply().Verbatim("txt", []byte(c.info()+"\n"))
	case equalFold(sub, "LIST"):
		return runClientList(x)
	case equalFold(sub, "PAUSE") && (n == 3 || n == 4):
		return runClientPause(x)
	case equalFold(sub, "UNPAUSE") && n == 2:
		c.s.pause.unpause()
		x.reply().OK()
	case equalFold(sub, "REPLY") && n == 3:
		return runClientReply(x)
	case equalFold(sub, "NO-TOUCH") && n == 3:
		return runClientNoTouch(x)
	case equalFold(sub, "HELP") && n == 2:
		command.WriteHelp(x.reply(), clientHelp)
	case equalFold(sub, "KILL") && n >= 3:
		return runClientKill(x)
	case equalFold(sub, "NO-EVICT") && n == 3:
		on, ok := parseBool(x.args[2], "ON", "OFF")
		if !ok {
			return errSyntax
		}
		c.mu.Lock()
		c.noEvict = on
		c.mu.Unlock()
		x.reply().OK()
	case equalFold(sub, "UNBLOCK") && (n == 3 || n == 4):
		id, ok := parseInt(x.args[2])
		if !ok {
			return command.ErrNotInteger
		}
		cause := errUnblockTimeout
		if n == 4 {
			switch {
			case equalFold(x.args[3], "TIMEOUT"):
			case equalFold(x.args[3], "ERROR"):
				cause = errUnblockError
			default:
				return errUnblockReason
			}
		}
		x.reply().IntBool(c.s.unblockClient(id, cause))
	case equalFold(sub, "ID"), equalFold(sub, "GETNAME"), equalFold(sub, "SETNAME"), equalFold(sub, "SETINFO"), equalFold(sub, "KILL"),
		equalFold(sub, "INFO"), equalFold(sub, "UNBLOCK"), equalFold(sub, "NO-EVICT"), equalFold(sub, "UNPAUSE"),
		equalFold(sub, "REPLY"), equalFold(sub, "NO-TOUCH"), equalFold(sub, "HELP"):
		return errWrongArgsSub("client", sub)
	case equalFold(sub, "PAUSE") && n < 3:
		return errWrongArgsSub("client", sub)
	case equalFold(sub, "PAUSE"):
		return command.ErrSubcommandSyntax(sub, "client") // Redis's fall-through in clientCommand
	default:
		return errUnknownSubcommand(sub, "client")
	}
	return nil
}

// CLIENT LIST [TYPE normal|master|replica|pubsub | ID client-id ...]:
// one line per connection, by ID, as Redis 7.0's.
func runClientList(x *exec) error {
	c, args := x.c, x.args
	var keep func(*conn) bool
	switch {
	case len(args) == 4 && equalFold(args[2], "TYPE"):
		f, err := clientTypeFilter(args[3])
		if err != nil {
			return err
		}
		keep = f
	case len(args) > 3 && equalFold(args[2], "ID"):
		ids := make([]int64, 0, len(args)-3)
		for _, a := range args[3:] {
			id, ok := parseInt(a)
			if !ok {
				return errInvalidClientID
			}
			ids = append(ids, id)
		}
		keep = func(o *conn) bool { return slices.Contains(ids, o.id) }
	case len(args) != 2:
		return errSyntax
	}
	c.s.mu.Lock()
	conns := make([]*conn, 0, len(c.s.conns))
	for o := range c.s.conns {
		conns = append(conns, o)
	}
	c.s.mu.Unlock()
	sort.Slice(conns, func(i, j int) bool { return conns[i].id < conns[j].id })
	var b strings.Builder
	for _, o := range conns {
		if keep == nil || keep(o) {
			b.WriteString(o.info())
			b.WriteByte('\n')
		}
	}
	x.reply().Verbatim("txt", []byte(b.String()))
	return nil
}

// errInvalidClientID is CLIENT LIST ID's reply to an ID that is not an
// integer.
var errInvalidClientID = wireError("ERR Invalid client ID")

// info is the connection's CLIENT LIST line (the fields Sediment tracks).
//
// Fields as Redis 7's, in its order, with what Sediment tracks: qbuf is
// the request bytes read and not yet run, obl the reply bytes buffered,
// omem the pub/sub, tracking and MONITOR pushes waiting and oll that in
// 16 KiB nodes (Redis's reply chunks); the memory fields Redis keeps of its
// own allocations (qbuf-free, argv-mem, multi-mem, rbs, rbp, tot-mem) are
// not reported.
func (c *conn) info() string {
	c.mu.Lock()
	name, db, proto, blocked := c.name, c.db, c.proto, c.unblock != nil
	libName, libVer, noEvict, noTouch := c.libName, c.libVer, c.noEvict, c.noTouch
	c.mu.Unlock()
	sub, psub, ssub := c.s.pubsub.subCounts(c)
	age := int64(c.s.opts.Now().Sub(c.born) / time.Second)
	idle := int64((monotonic() - time.Duration(c.lastStart.Load())) / time.Second)
	var flags []byte
	if c.monitor.Load() {
		flags = append(flags, 'O')
	}
	if sub+psub+ssub > 0 {
		flags = append(flags, 'P')
	}
	multi := int64(-1)
	if q := c.multiLen.Load(); q >= 0 {
		flags = append(flags, 'x')
		multi = q
	}
	if blocked {
		flags = append(flags, 'b')
	}
	redir := int64(-1)
	c.s.track.mu.Lock()
	if c.trk.on {
		flags = append(flags, 't')
		if c.trk.broken {
			flags = append(flags, 'R')
		}
		if c.trk.bcast {
			flags = append(flags, 'B')
		}
		redir = c.trk.redirect
	}
	c.s.track.mu.Unlock()
	if noEvict {
		flags = append(flags, 'e')
	}
	if noTouch {
		flags = append(flags, 'T')
	}
	if len(flags) == 0 {
		flags = append(flags, 'N')
	}
	omem := int64(0)
	if p := c.ps.Load(); p != nil {
		p.mu.Lock()
		omem = int64(len(p.buf))
		p.mu.Unlock()
	}
	cmd := "NULL"
	if p := c.lastCmd.Load(); p != nil {
		cmd = *p
	}
	return fmt.Sprintf("id=%d addr=%s laddr=%s fd=%d name=%s age=%d idle=%d flags=%s db=%d sub=%d psub=%d ssub=%d multi=%d qbuf=%d obl=%d oll=%d omem=%d events=r cmd=%s user=%s redir=%d resp=%d lib-name=%s lib-ver=%s",
		c.id, c.nc.RemoteAddr(), c.nc.LocalAddr(), c.fd.Load(), name, age, idle, flags, db, sub, psub, ssub, multi,
		c.qbuf.Load(), c.obl.Load(), (omem+16383)/16384, omem, cmd, c.userSlot().name, redir, proto, libName, libVer)
}

// ROLE: ["master", replication offset, replicas]. Sediment has no
// replication: always a master at offset 0 with no replicas.
// https://redis.io/docs/latest/commands/role/
func runRole(x *exec) error {
	w := x.reply()
	w.Array(3)
	w.BulkString("master")
	w.Int(0)
	w.Array(0)
	return nil
}

// TIME. Reply: [unix seconds, microseconds] as bulk strings.
func runTime(x *exec) error {
	now := x.c.s.opts.Now()
	x.reply().Array(2)
	x.reply().BulkString(strconv.FormatInt(now.Unix(), 10))
	x.reply().BulkString(strconv.FormatInt(int64(now.Nanosecond()/1000), 10))
	return nil
}

// INFO [section ...]: server, clients, memory, persistence, stats,
// errorstats, keyspace ("default", "all" and "everything" select them all),
// and commandstats (with "all", "everything" or by name, as Redis).
func runInfo(x *exec) error {
	want := map[string]bool{}
	for _, a := range x.args[1:] {
		want[command.Lower(a)] = true
	}
	all := len(want) == 0 || want["all"] || want["default"] || want["everything"]
	s := x.c.s
	var b strings.Builder
	section := func(name string, body func()) {
		if all || want[name] {
			if b.Len() > 0 {
				b.WriteString("\r\n")
			}
			title := strings.ToUpper(name[:1]) + name[1:]
			if name == "cpu" {
				title = "CPU" // as Redis names it
			}
			fmt.Fprintf(&b, "# %s\r\n", title)
			body()
		}
	}
	kv := func(k string, v any) { fmt.Fprintf(&b, "%s:%v\r\n", k, v) }
	now := s.opts.Now()
	section("server", func() {
		kv("redis_version", Version)
		kv("sediment_version", SedimentVersion)
		kv("redis_mode", "standalone")
		kv("os", runtime.GOOS+" "+runtime.GOARCH)
		kv("arch_bits", strconv.IntSize)
		kv("go_version", runtime.Version())
		kv("process_id", os.Getpid())
		kv("tcp_port", portOf(s))
		kv("uptime_in_seconds", int64(now.Sub(s.start)/time.Second))
		kv("uptime_in_days", int64(now.Sub(s.start)/(24*time.Hour)))
		kv("executable", executable())
		kv("sediment_event_loops", s.loops.count())
	})
	section("clients", func() {
		s.mu.Lock()
		n, inLoops := len(s.conns), 0
		for c := range s.conns {
			if c.inLoop() {
				inLoops++
			}
		}
		s.mu.Unlock()
		kv("connected_clients", n)
		kv("blocked_clients", s.stats.blocked.Load())
		kv("maxclients", s.maxClients.Load())
		kv("sediment_loop_clients", inLoops)
	})
	section("memory", func() {
		m := s.memoryFigures()
		rss := residentBytes()
		kv("used_memory", m.used)
		kv("used_memory_human", humanBytes(m.used))
		kv("used_memory_rss", rss)
		kv("used_memory_rss_human", humanBytes(rss))
		kv("used_memory_peak", m.peak)
		kv("used_memory_peak_human", humanBytes(m.peak))
		// maxmemory and its policy are stored, not enforced (config.go).
		maxmem, _ := strconv.ParseInt(s.cfg.load("maxmemory"), 10, 64)
		kv("maxmemory", maxmem)
		kv("maxmemory_human", humanBytes(maxmem))
		kv("maxmemory_policy", s.cfg.load("maxmemory-policy"))
		kv("mem_allocator", "go")
		kv("sediment_go_heap", m.heap)
		kv("sediment_pebble_block_cache", m.cache)
		kv("sediment_pebble_memtables", m.memtables)
	})
	section("persistence", func() {
		kv("loading", 0)
		kv("aof_enabled", 1)
		kv("appendfsync", s.store.Policy().String())
		kv("changelog_last_seq", s.store.LastSeq())
		// Write amplification since start (materialize.StorageStats).
		st := s.store.StorageStats()
		kv("sediment_changelog_bytes_written", st.ChangeLogBytes)
		kv("sediment_flush_bytes_written", st.FlushBytes)
		kv("sediment_compaction_bytes_written", st.CompactionBytes)
		kv("sediment_write_amplification", strconv.FormatFloat(st.WriteAmp(), 'f', 2, 64))
		// Always 0 unless a PEL key was set twice before its SingleDelete
		// (docs/key-format.md, "PEL keys: removed with SingleDelete").
		kv("sediment_singledelete_misuses", st.SingleDeleteMisuses)
		// String values of 4 KiB or more live in the change log until
		// retention moves those still used into the store; it waits for
		// the views pinned before (docs/rfcs/20261129_value_log.md).
		kv("sediment_values_inlined", st.ValuesInlined)
		kv("sediment_pinned_views", st.PinnedViews)
		// The change feed: the last record published and how far behind
		// the log it is.
		pub := s.feed.Published()
		kv("sediment_feed_published_seq", pub)
		kv("sediment_feed_lag_records", st.ChangeLogRecords-min(pub, st.ChangeLogRecords))
		// The age of the oldest record not yet published (not yet
		// captured, with a JetStream capture).
		kv("sediment_feed_lag_seconds", strconv.FormatFloat(s.feed.LagTime(s.opts.Now()).Seconds(), 'f', 3, 64))
		if c := s.feed.Capture; c != nil {
			captured := c.Captured()
			kv("sediment_feed_jetstream", c.Stream())
			kv("sediment_feed_captured_seq", captured)
			kv("sediment_feed_capture_lag_records", st.ChangeLogRecords-min(captured, st.ChangeLogRecords))
		}
		s.saveInfo(kv)
		// Storage faults (docs/operations.md): Redis's AOF write status,
		// with the fault's cause and the free space beside it.
		fault := "none"
		status := "ok"
		if f := s.store.Fault(); f != nil {
			fault, status = f.Where+": "+sanitize([]byte(f.Cause()), 200), "err"
		}
		kv("aof_last_write_status", status)
		kv("sediment_storage_fault", fault)
		free, reserve, ok := s.store.DiskFree()
		if !ok {
			kv("sediment_disk_free", -1)
		} else {
			kv("sediment_disk_free", free)
		}
		kv("sediment_min_free_disk", reserve)
	})
	section("stats", func() {
		kv("total_connections_received", s.stats.connsReceived.Load())
		kv("rejected_connections", s.stats.rejectedConns.Load())
		kv("total_commands_processed", s.stats.commands.Load())
		kv("expired_keys", s.store.ExpiredKeys())
		kv("evicted_keys", 0) // no maxmemory, no eviction
		hits, misses := s.keyLookups()
		kv("keyspace_hits", hits)
		kv("keyspace_misses", misses)
		kv("rejected_calls", s.stats.rejected.Load())
		kv("total_error_replies", s.cmdstats.errTot.Load())
		// This process's subscriptions (docs/pubsub.md).
		ch, pat, shard := s.pubsub.sizes()
		kv("pubsub_channels", ch)
		kv("pubsub_patterns", pat)
		kv("pubsub_shardchannels", shard)
		kv("client_output_buffer_limit_disconnections", s.stats.pubsubKilled.Load()+s.stats.outputKilled.Load())
		// Where metadata lookups were answered (materialize.IterStats):
		// the metadata cache, the key filter (absent keys), or Pebble.
		st := s.store.IterStats()
		kv("sediment_meta_cache_hits", st.MetaHits)
		kv("sediment_meta_filter_absent", st.MetaAbsent)
		kv("sediment_meta_pebble_lookups", st.MetaLookups)
		// Group, consumer and PEL-entry values the writer's group cache
		// answered without a Pebble lookup.
		kv("sediment_group_cache_hits", st.GroupHits)
		// Reads of a stream's newest entries (XREADGROUP `>`) the writer's
		// tail cache answered without a Pebble iterator.
		kv("sediment_tail_cache_hits", st.TailHits)
		// Hash fields, set members and sorted-set scores the writer's
		// field cache answered without a Pebble lookup.
		kv("sediment_field_cache_hits", st.FieldHits)
		// The same lookups by read commands (HGET, SISMEMBER, ZSCORE, ...)
		// the committed elements answered without a Pebble lookup.
		kv("sediment_read_field_cache_hits", st.ReadFieldHits)
		// Group commit: commits and the change-log records they held.
		groups, records := s.store.GroupStats()
		kv("sediment_commit_groups", groups)
		kv("sediment_commit_records", records)
		// Read commands run again because a commit began between their
		// first (cached) read and their first Pebble read (ReadView).
		kv("sediment_read_retries", s.stats.readRetries.Load())
	})
	// Sediment has no replication: a master with no replica and no
	// backlog, as a Redis with none reports itself (RedisInsight and
	// client libraries read role).
	section("replication", func() {
		kv("role", "master")
		kv("connected_slaves", 0)
		kv("master_failover_state", "no-failover")
		kv("master_replid", s.replID)
		kv("master_replid2", strings.Repeat("0", 40))
		kv("master_repl_offset", 0)
		kv("second_repl_offset", -1)
		kv("repl_backlog_active", 0)
		kv("repl_backlog_size", 1048576)
		kv("repl_backlog_first_byte_offset", 0)
		kv("repl_backlog_histlen", 0)
	})
	section("cpu", func() {
		// The process's CPU time in seconds (getrusage), as Redis's; Go
		// has no main thread, so Redis's *_main_thread fields are absent.
		if t, ok := cpuTimes(); ok {
			kv("used_cpu_sys", t[0])
			kv("used_cpu_user", t[1])
			kv("used_cpu_sys_children", t[2])
			kv("used_cpu_user_children", t[3])
		}
	})
	// commandstats is not a default section, as in Redis.
	if want["commandstats"] || want["all"] || want["everything"] {
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# Commandstats\r\n")
		s.cmdstats.commandstats(kv)
	}
	section("errorstats", func() { s.cmdstats.errorstats(kv) })
	// latencystats is in "all" and "everything", not in the default, as in Redis.
	if want["latencystats"] || want["all"] || want["everything"] {
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# Latencystats\r\n")
		s.cmdstats.latencystats(kv)
	}
	section("keyspace", func() {
		v := x.view()
		for db := 0; db < s.opts.Databases; db++ {
			if n, expires := v.KeyCount(v.StorageDB(uint8(db))); n > 0 {
				fmt.Fprintf(&b, "db%d:keys=%d,expires=%d,avg_ttl=0\r\n", db, n, expires)
			}
		}
	})
	x.reply().Verbatim("txt", []byte(b.String()))
	return nil
}

// residentBytes returns the process's resident set size (Linux:
// /proc/self/statm), or 0 where it cannot be read.
func residentBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}

// humanBytes renders n as Redis's *_human fields do (bytesToHuman:
// "1.50M", "812B").
func humanBytes(n int64) string {
	const k = 1024.0
	f := float64(n)
	switch {
	case f < k:
		return strconv.FormatInt(n, 10) + "B"
	case f < k*k:
		return strconv.FormatFloat(f/k, 'f', 2, 64) + "K"
	case f < k*k*k:
		return strconv.FormatFloat(f/(k*k), 'f', 2, 64) + "M"
	case f < k*k*k*k:
		return strconv.FormatFloat(f/(k*k*k), 'f', 2, 64) + "G"
	}
	return strconv.FormatFloat(f/(k*k*k*k), 'f', 2, 64) + "T"
}

func portOf(s *Server) string {
	if a := s.Addr(); a != nil {
		if i := strings.LastIndexByte(a.String(), ':'); i >= 0 {
			return a.String()[i+1:]
		}
	}
	return ""
}

func executable() string {
	p, err := os.Executable()
	if err != nil {
		return ""
	}
	return p
}

// parseMemory parses a memory value as Redis's CONFIG SET does (util.c
// memtoull): decimal digits with an optional unit, case-insensitive: b, k
// (1000), kb (1024), m, mb, g, gb; signs, decimal points and other units
// are refused. The error is CONFIG SET's reason text.
func parseMemory(b []byte) (int64, error) {
	s := strings.ToLower(string(b))
	units := []struct {
		suffix string
		mul    uint64
	}{{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"b", 1}, {"k", 1000}, {"m", 1000 * 1000}, {"g", 1000 * 1000 * 1000}}
	mul := uint64(1)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			s, mul = s[:len(s)-len(u.suffix)], u.mul
			break
		}
	}
	errMem := errors.New("argument must be a memory value")
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, errMem
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || (mul > 1 && n > math.MaxUint64/mul) || n*mul > math.MaxInt64 {
		return 0, fmt.Errorf("argument must be between 0 and %d inclusive", int64(math.MaxInt64))
	}
	return int64(n * mul), nil
}

// parseBool parses an argument that is either yes or no (upper case: any
// case is taken): yes/no CONFIG values, ON/OFF options.
func parseBool(v []byte, yes, no string) (value, ok bool) {
	switch {
	case equalFold(v, yes):
		return true, true
	case equalFold(v, no):
		return false, true
	}
	return false, false
}

// minFree is the store's reserve of free disk space in bytes (CONFIG
// min-free-disk; 0: none).
func minFree(st *materialize.Store) uint64 {
	_, reserve, _ := st.DiskFree()
	return reserve
}
