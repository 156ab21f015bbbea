package broker

import (
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/command/reply"
	"github.com/sediment-dev/sediment/materialize"
)

// maxBatch bounds how many pipelined requests run before replies are flushed.
const maxBatch = 1024

// flushAt is the size of buffered replies past which they are flushed
// before the next pipelined request runs. It bounds a connection's output
// buffer to about flushAt plus its largest reply, and keeps the buffer
// under the 256 KiB that redcon's Writer retains between flushes: a
// pipeline of GETs of 100 KB values otherwise regrew a dropped buffer by
// doubling at every flush (two copies of each value, 4.2 bytes allocated
// per value byte in BenchmarkLargeValues).
const flushAt = 128 << 10

// conn is one client connection.
type conn struct {
	s  *Server
	nc net.Conn
	// otelNet are its client.* and server.* span attributes (telemetry.go).
	otelNet []attribute.KeyValue
	// logSpan is the span of the command whose error is being replied,
	// for the trace IDs of an internal-error log line (writeErrTo).
	logSpan trace.Span
	id      int64
	w       *replyBuf
	rd      *Reader
	born    time.Time

	// ctx is cancelled when the client goes away or the server closes.
	ctx    context.Context
	cancel context.CancelFunc

	// Connection state (touched only by the connection goroutine, except db,
	// which is written under mu so that CLIENT LIST may read it).
	db         uint8
	proto      int             // reply protocol, reply.RESP2 or reply.RESP3 (HELLO); written under mu
	pendingSeq uint64          // highest change-log seq whose reply is not yet flushed
	closeAfter bool            // QUIT or protocol error: flush, then close
	pending    []*pendingReply // submitted writes (and errors behind them), in request order
	// notifier is told when the connection's submitted writes end: its
	// event loop; nil for a connection with a goroutine of its own, which
	// waits for them.
	notifier materialize.Notifier
	multi    *multiState // open transaction (MULTI), or nil
	// ps is the connection's subscriptions and pending pushes (pubsub.go),
	// nil before its first subscription or CLIENT TRACKING: set once, under
	// pubsub.mu, by the connection or (for a tracking redirection target)
	// another goroutine.
	ps atomic.Pointer[connPubSub]
	// authed: the connection may run commands (auth.go); false until AUTH
	// when a password was set at its opening. Connection goroutine only.
	authed bool
	// user is the connection's ACL user (userSlot); nil: the default
	// user. Set by the connection (AUTH, HELLO, RESET), read by CLIENT
	// LIST and ACL DELUSER.
	user atomic.Pointer[aclSlot]
	// monitor: the connection ran MONITOR (monitor.go); read by CLIENT KILL.
	monitor atomic.Bool
	// For CLIENT LIST, written by the connection, read by anyone: the last
	// command's full name, when it started (monotonic), the request bytes
	// read but not yet run, and the reply bytes buffered.
	lastCmd   atomic.Pointer[string]
	multiLen  atomic.Int64 // commands queued in the open MULTI, -1 outside
	lastStart atomic.Int64
	qbuf      atomic.Int64
	obl       atomic.Int64
	fd        atomic.Int32 // the socket's descriptor, -1 when unknown (an event loop's hand-off changes it)
	// trk is the connection's CLIENT TRACKING state (tracking.go).
	trk     connTracking
	watched []*watchedKey // WATCHed keys (watches); changed under watches.mu
	dirty   atomic.Bool   // a watched key was touched: EXEC aborts (set by the writer)
	// replyScratch is the reply writers' scratch buffer (reply.NewScratch):
	// used by one command at a time, on this goroutine or, inside EXEC, on
	// the writer while this goroutine waits.
	replyScratch []byte
	// viewBuf holds the read view of the command running (exec.view).
	viewBuf materialize.View
	// spares are execs of ended commands that nothing refers to any more
	// (execDone, and drain for a submitted write once it replied), for
	// the next commands to reuse: an exec is about 400 bytes, most of
	// what a request allocates, and at GET -P 16 the garbage collector
	// was a quarter of the CPU (docs/perf.md, "Execs reused").
	spares []*exec
	// lookups counts the key lookups of its reads (INFO keyspace_hits and
	// keyspace_misses: Server.keyLookups), added to the server's at close.
	lookups materialize.Lookups
	// active is when the connection last finished reading a request or
	// flushing replies (Unix ns), and busy is set while it runs commands
	// or waits in a blocking one: Options.Timeout's idle check (idleSince)
	// reads both from another goroutine. Kept only with a Timeout.
	active atomic.Int64
	busy   atomic.Bool
	// mustLeave: a command in an event loop found it must wait (CLIENT
	// PAUSE began after the loop checked): it did not run, and runs again
	// on the connection's own goroutine (loop_linux.go).
	mustLeave bool
	// buffered counts the reply bytes commands wrote since the last flush
	// (countingSink; outside EXEC), against flushAt.
	buffered int
	// replyMode is CLIENT REPLY's; silenced is set while a command whose
	// reply may be dropped runs (its pushes wait), and replyMark is where
	// its reply begins in the writer's buffer (client_pause.go).
	replyMode replyMode
	silenced  bool
	replyMark int

	mu      sync.Mutex // guards name, closing and read deadlines; db and proto for readers other than the connection goroutine
	name    string
	libName string // CLIENT SETINFO LIB-NAME
	libVer  string // CLIENT SETINFO LIB-VER
	noEvict bool   // CLIENT NO-EVICT ON: shown as flag e (Sediment evicts no client or key anyway)
	noTouch bool   // CLIENT NO-TOUCH ON: shown as flag T (Sediment keeps no access times)
	closing bool   // shutdown was requested: the read deadline stays in the past
	// unblock ends the connection's blocking wait (CLIENT UNBLOCK); nil
	// when it is not blocked.
	unblock context.CancelCauseFunc
}

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{
		s:     s,
		nc:    nc,
		id:    s.nextClientID.Add(1),
		w:     &replyBuf{w: nc},
		rd:    NewReader(nc, s.opts.Limits),
		born:  s.opts.Now(),
		proto: reply.RESP2,
	}
	c.authed = s.acl.def.u.Load().defaultAuthed()
	c.ctx, c.cancel = context.WithCancel(s.ctx)
	c.fd.Store(int32(socketFD(nc)))
	c.active.Store(s.opts.Now().UnixNano())
	c.multiLen.Store(-1)
	c.lastStart.Store(int64(monotonic()))
	return c
}

// socketFD returns nc's file descriptor (TLS: its TCP connection's), or -1.
func socketFD(nc net.Conn) int {
	if tc, ok := nc.(interface{ NetConn() net.Conn }); ok {
		nc = tc.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return -1
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return -1
	}
	fd := -1
	rc.Control(func(f uintptr) { fd = int(f) })
	return fd
}

// shutdown asks the connection to finish the command it is running and
// close: its next read fails at once.
func (c *conn) shutdown() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closing = true
	c.nc.SetReadDeadline(time.Now())
	// A client that does not read its replies would hold a write, and the
	// shutdown waiting for it, forever: its replies get Options.ShutdownGrace.
	c.nc.SetWriteDeadline(time.Now().Add(c.s.opts.ShutdownGrace))
}

// serve runs the connection until it closes. One goroutine reads, executes
// and replies: every request already buffered runs before the replies are
// flushed together, so a pipeline costs one write (and, under appendfsync
// always, one fsync). first, when not nil, is a request an event loop
// read and handed over with the connection (loop_linux.go).
func (c *conn) serve(first [][]byte) {
	defer c.release()
	c.active.Store(c.s.opts.Now().UnixNano())
	for n := 1; ; n++ {
		args, err := first, error(nil)
		if first != nil {
			first = nil
		} else {
			args, err = c.rd.ReadCommand()
		}
		// The activity times are kept only while there is a timeout
		// (CONFIG SET timeout may change it at any request).
		timeout := c.s.timeout.Load() > 0
		if timeout {
			c.busy.Store(true)
		}
		if err != nil {
			c.readFailed(err)
			c.flush()
			return
		}
		c.runRequest(lookup(args[0]), args)
		if c.closeAfter || c.rd.Buffered() == 0 || n%maxBatch == 0 || c.buffered >= flushAt {
			if err := c.flush(); err != nil || c.closeAfter {
				return
			}
		}
		if timeout && c.rd.Buffered() == 0 {
			c.markIdle()
		}
	}
}

// runRequest runs one request, of the command cmd (lookup; nil: unknown),
// and buffers its reply.
func (c *conn) runRequest(cmd *cmdSpec, args [][]byte) {
	c.qbuf.Store(int64(c.rd.Buffered()))
	if c.replyMode.silenced() {
		c.executeSilenced(cmd, args)
	} else {
		c.execute(cmd, args)
		if !c.mustLeave {
			c.endReply()
		}
	}
	c.obl.Store(int64(c.buffered))
}

// markIdle records that the connection waits for its next request, for
// Options.Timeout's idle check.
func (c *conn) markIdle() {
	c.active.Store(c.s.opts.Now().UnixNano())
	c.busy.Store(false)
}

// readFailed ends the requests of a connection whose read failed: the
// replies to the requests before the failure, then a protocol error's
// reply, are buffered for the last flush.
func (c *conn) readFailed(err error) {
	c.drain() // replies to the requests before the error come first
	var pe *ProtocolError
	if errors.As(err, &pe) {
		c.w.WriteError(pe.Msg)
		c.s.opts.Logger.Debug("protocol error", "client", c.id, "err", pe.Msg)
	}
}

// release gives back what a closed connection holds: its lookups
// counted, MONITOR, tracking, subscriptions, WATCHes, its context and
// its socket.
func (c *conn) release() {
	c.s.keepLookups(c)
	c.s.stopMonitor(c)
	c.s.track.disable(c)
	c.s.pubsub.drop(c)
	c.s.watch.clear(c)
	c.cancel()
	c.nc.Close()
}

// idleSince reports whether the connection has been idle since before t
// (Unix ns): it waits for a request, and neither runs nor waits in a
// command. Safe from any goroutine.
func (c *conn) idleSince(t int64) bool {
	return !c.busy.Load() && c.active.Load() < t
}

// pendingReply is a request whose reply waits for a submitted write: the
// write's handle and the reply to write once it committed, or an error to
// reply in its place in the request order.
type pendingReply struct {
	cmd    string
	stat   *cmdStat      // the command's counters, for a failure found at the commit
	span   trace.Span    // the command's span, ended once it replied (telemetry.go)
	d      time.Duration // the command's run time, for its latency histogram once its outcome is known
	notes  []note        // keyspace notifications of its events (notify.go)
	p      *materialize.Pending
	events []codec.Event // the write's events, set by its decision
	reply  func()
	err    error
	// owner is the exec this reply lives in (exec.pendBuf), given back to
	// the connection once the write committed and its reply is written
	// (conn.drain; a failed write's exec is left to the garbage
	// collector): nil when the command submitted a second write, or
	// cannot give it back.
	owner *exec
}

// drain waits for every submitted write in request order, publishes their
// wake-ups and writes their replies. Run before anything that must see
// those writes or reply after them.
func (c *conn) drain() {
	for i, it := range c.pending {
		c.pending[i] = nil
		if it.p == nil {
			c.writeErr(it.cmd, it.err)
			continue
		}
		seq, err := it.p.Wait()
		c.s.recordLatency(it.stat, it.d, err != nil)
		if err != nil {
			it.stat.failed.Add(1)
			c.logSpan = it.span
			c.writeErr(it.cmd, err)
			c.logSpan = nil
			endCommand(it.span, err)
			continue
		}
		if seq != 0 {
			c.pendingSeq = seq
			c.s.publishWakes(it.span, it.events)
			c.s.track.invalidate(c, it.events)
			c.s.publishNotes(it.notes)
		}
		it.reply() // a read's reply may add links to its span first
		endCommand(it.span, nil)
		if it.owner != nil {
			c.spareExec(it.owner)
		}
	}
	c.pending = c.pending[:0]
}

// writesPending reports whether a write the connection submitted has not
// ended yet. Writes end in the order they were submitted: the last one
// tells.
func (c *conn) writesPending() bool {
	for i := len(c.pending) - 1; i >= 0; i-- {
		if p := c.pending[i].p; p != nil {
			return !p.Done()
		}
	}
	return false
}

// writeErr replies err in Redis's words (toWire); unmapped errors are logged.
func (c *conn) writeErr(cmd string, err error) { c.writeErrTo(c.w, cmd, err) }

// writeErrTo writes err in Redis's words to w (EXEC's reply buffer or the
// connection's writer).
func (c *conn) writeErrTo(w *replyBuf, cmd string, err error) {
	msg, ok := toWire(err)
	if !ok {
		ctx := context.Background()
		if c.logSpan != nil {
			ctx = trace.ContextWithSpan(ctx, c.logSpan)
		}
		c.s.opts.Logger.WarnContext(ctx, "internal error", "cmd", cmd, "client", c.id, "err", err)
	}
	c.s.cmdstats.errorReply(msg)
	w.WriteError(msg)
}

// flush makes every write whose reply is buffered durable (appendfsync
// always), then sends the buffered replies.
func (c *conn) flush() error {
	c.drain()
	if c.pendingSeq != 0 {
		if err := c.s.store.WaitDurable(c.pendingSeq); err != nil {
			c.s.logSync.Warn(c.s.opts.Logger, "change log sync failed: closing the connection, its writes' outcome unknown", "client", c.id, "err", err)
			return err
		}
		c.pendingSeq = 0
	}
	c.buffered = 0
	c.obl.Store(0)
	if p := c.ps.Load(); p != nil {
		// Pushes that arrived while the replies were made go after them;
		// the pusher writes the later ones once this flush is done.
		p.sockMu.Lock()
		defer p.sockMu.Unlock()
		c.takePushes(true)
	}
	c.replyMark = 0
	if c.w.Len() == 0 {
		// Nothing to send: a Flush would still make a write system
		// call of 0 bytes (a blocking command flushes before it waits).
		return nil
	}
	if l := c.s.outLimits.Load().normal; (l.Hard > 0 || l.Soft > 0) && !c.subscribed() {
		return c.flushLimited(l)
	}
	return c.w.Flush()
}

// flushLimited is flush's write under client-output-buffer-limit's normal
// class: replies of Hard bytes or more close the connection at once, and
// replies of Soft bytes or more must be taken by the client within
// SoftFor (a write deadline; softFor), or it is closed, as Redis
// disconnects a client whose output buffer stays over the soft limit.
// Sediment holds no more than flushAt and the last reply: a client that
// does not read holds its connection's writes instead.
func (c *conn) flushLimited(l PubSubLimit) error {
	n := int64(c.w.Len())
	var why string
	switch {
	case l.Hard > 0 && n >= l.Hard:
		why = "hard"
	case l.Soft > 0 && n >= l.Soft:
		c.mu.Lock()
		if !c.closing { // a shutdown set its own deadline
			c.nc.SetWriteDeadline(time.Now().Add(softFor(l)))
		}
		c.mu.Unlock()
		err := c.w.Flush()
		c.mu.Lock()
		if !c.closing {
			c.nc.SetWriteDeadline(time.Time{})
		}
		c.mu.Unlock()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			c.outputLimitReached("soft", n)
		}
		return err
	default:
		return c.w.Flush()
	}
	c.outputLimitReached(why, n)
	c.w.Truncate(0)
	return errOutputLimit
}

// outputLimitReached counts and logs a connection closed at its class's
// client-output-buffer-limit (n: the reply bytes it held).
func (c *conn) outputLimitReached(why string, n int64) {
	c.s.stats.outputKilled.Add(1)
	c.s.opts.Logger.Warn("disconnecting a client: output buffer limit reached", "client", c.id, "limit", why, "pending_bytes", n)
}

// reject replies msg to a request refused before it ran, counting it for
// INFO (rejected_calls; cmd nil for an unknown command).
func (c *conn) reject(cmd *cmdSpec, args [][]byte, msg string) {
	c.s.stats.rejected.Add(1)
	if cmd != nil {
		c.s.cmdstats.statFor(cmd, args).rejected.Add(1)
	}
	c.s.cmdstats.errorReply(msg)
	c.w.WriteError(msg)
}

// faultRefuses reports whether a storage fault refuses cmd, as Redis's
// processCommand refuses commands on a disk error: a command with the write
// flag, PING (so health checks see the fault), and EXEC of a transaction
// holding a write.
func (c *conn) faultRefuses(cmd *cmdSpec) bool {
	switch {
	case cmd.flags&flagWrite != 0:
		return true
	case cmd.name == "ping":
		return true
	case cmd.name == "exec":
		return c.multi != nil && c.multi.writes
	}
	return false
}

// oomRefuses reports whether maxmemory refuses cmd while used memory is
// above it, as Redis 7.0's processCommand does: a denyoom command, EXEC of
// a transaction holding one, and anything queued in MULTI but EXEC,
// DISCARD, QUIT and RESET.
func (c *conn) oomRefuses(cmd *cmdSpec) bool {
	switch {
	case cmd.name == "exec":
		return c.multi != nil && c.multi.denyoom
	case c.multi != nil && cmd.name != "discard" && cmd.name != "quit" && cmd.name != "reset":
		return true
	}
	return cmd.flags&flagDenyOOM != 0
}

// refuseFault replies the MISCONF error of a storage fault to cmd.
func (c *conn) refuseFault(cmd *cmdSpec, args [][]byte, f *materialize.StorageFault) {
	c.refuseState(cmd, args, string(errMisconf(f)))
}

// refuseState replies msg, the error of a server state that refuses cmd
// (a storage fault, maxmemory). Inside MULTI the transaction is marked
// (EXEC replies EXECABORT); a refused EXEC discards it, replying EXECABORT
// with the reason (Redis 7.0's rejectCommand and execCommandAbort).
func (c *conn) refuseState(cmd *cmdSpec, args [][]byte, msg string) {
	if c.multi != nil {
		if cmd.name == "exec" {
			c.multi = nil
			c.multiLen.Store(-1)
			c.s.watch.clear(c)
			msg = string(errExecAbortBecause(msg))
		} else {
			c.multi.aborted = true
		}
	}
	c.reject(cmd, args, msg)
}

// execute runs one request, of the command cmd (lookup; nil: unknown),
// and buffers its reply.
func (c *conn) execute(cmd *cmdSpec, args [][]byte) {
	if cmd != nil { // CLIENT LIST's cmd: the last command looked up, as Redis's
		if cmd.container {
			name := fullName(cmd, args)
			c.lastCmd.Store(&name)
		} else {
			c.lastCmd.Store(&cmd.name)
		}
	}
	// runnable: a known command with a valid number of arguments, which the
	// checks below may refuse; the others get their errors further on.
	runnable := cmd != nil && cmd.arityOK(len(args))
	if !c.authed && runnable && !noAuthOK(cmd) {
		c.drain()
		c.reject(cmd, args, string(errNoAuth))
		return
	}
	if runnable {
		if msg := c.aclDenied(cmd, args); msg != "" {
			c.drain()
			if c.multi != nil {
				c.multi.aborted = true
			}
			c.reject(cmd, args, string(msg))
			return
		}
	}
	if c.monitor.Load() && runnable && cmd.flags&(flagWrite|flagReadonly) != 0 {
		c.drain()
		c.reject(cmd, args, string(errMonitorKeyspace))
		return
	}
	if p := c.ps.Load(); p != nil {
		if len(c.pending) > 0 && p.pending() {
			c.drain() // the replies of the writes before the messages come first
		}
		if !c.silenced { // executeSilenced took them: the ones since wait for the next flush
			c.takePushes(false) // messages that came before this request reply first
		}
		if runnable && c.proto == reply.RESP2 && !subscribedOK(cmd) && c.subscribed() {
			c.drain()
			c.reject(cmd, args, string(errSubscribedContext(cmd, args)))
			return
		}
	}
	if runnable && c.faultRefuses(cmd) {
		if f := c.s.store.WriteFault(); f != nil {
			c.drain()
			c.refuseFault(cmd, args, f)
			return
		}
	}
	if runnable && c.s.overMemory.Load() && c.oomRefuses(cmd) {
		c.drain()
		c.refuseState(cmd, args, string(errOOM))
		return
	}
	if runnable && !c.waitPause(cmd) { // CLIENT PAUSE (client_pause.go)
		return // the connection closed while the command was held: it is dropped
	}
	if c.multi != nil && (cmd == nil || !notQueued(cmd)) {
		c.drain()
		c.queue(cmd, args)
		return
	}
	c.s.stats.commands.Add(1)
	if !pipelinedRequest(cmd, args) {
		// Anything but a pipelinable write runs after, and sees, every
		// write submitted before it.
		c.drain()
	}
	if cmd == nil {
		c.reject(nil, args, string(errUnknownCommand(args)))
		return
	}
	if !cmd.arityOK(len(args)) {
		c.reject(cmd, args, string(errWrongArgs(cmd.name)))
		return
	}
	if c.trk.on {
		c.s.track.remember(c, cmd, args) // before the read: a change after it invalidates
	}
	x := c.newExec(cmd, args)
	tl := c.s.tel
	if tl != nil {
		x.span = tl.startCommand(c, cmd, args, nil)
	}
	start := monotonic()
	c.lastStart.Store(int64(start))
	err := x.run()
	d := monotonic() - start - x.blocked
	submitted := x.pend != nil && err == nil
	c.s.ran(cmd, args, d, err != nil, submitted)
	if submitted {
		// A submitted write's latency and span end with its commit (drain).
		x.pend.span, x.pend.d = x.span, d
	} else {
		endCommand(x.span, err)
	}
	c.s.slowlog.add(c, cmd, args, d)
	c.s.feedMonitors(c, cmd, args)
	if cmd.flags&flagReadonly != 0 && c.s.notify.Load()&notifyKeyMiss != 0 {
		c.s.publishNotes(c.s.missNotes(cmd, args, x.db(), x.storageDB(), c.s.store.View()))
	}
	if cmd.name != "client" && c.multi == nil {
		c.trk.caching = false // CLIENT CACHING holds for one command (or one EXEC)
	}
	x.releaseViews(0)
	x.rvMu.Lock()
	x.ended = true
	x.rvMu.Unlock()
	if err != nil {
		if len(c.pending) > 0 { // keep the request order behind submitted writes
			c.pending = append(c.pending, &pendingReply{cmd: cmd.name, err: err})
			c.execDone(x)
			return
		}
		c.logSpan = x.span
		c.writeErr(cmd.name, err)
		c.logSpan = nil
	}
	c.execDone(x)
}

// maxSpareExecs bounds conn.spares (about 7 KiB a connection): a
// pipeline's writes give their execs back together when they reply, and
// a pipeline of 16 (redis-benchmark -P 16) then allocates none.
const maxSpareExecs = 16

// newExec returns the exec of a command: one of the connection's spares,
// cleared, when it has one.
func (c *conn) newExec(cmd *cmdSpec, args [][]byte) *exec {
	n := len(c.spares)
	if n == 0 {
		return &exec{c: c, cmd: cmd, args: args, inline: c.rd.Inline()}
	}
	x := c.spares[n-1]
	c.spares[n-1] = nil
	c.spares = c.spares[:n-1]
	*x = exec{c: c, cmd: cmd, args: args, inline: c.rd.Inline()}
	return x
}

// execDone gives back x, the exec of a command that ended, when nothing
// can refer to it any more: a read-only command that cannot block (a
// blocked command's tries run on other goroutines), outside a
// transaction, with no write submitted (a submitted write's reply lives in
// its exec until it is written: drain gives that exec back).
func (c *conn) execDone(x *exec) {
	if x.cmd.flags&flagReadonly == 0 || x.cmd.flags&flagBlocking != 0 || x.tx != nil || x.pend != nil || x.blocked != 0 {
		return
	}
	c.spareExec(x)
}

// spareExec keeps x for newExec. x must be done with: in particular a
// pipelined write must not drain or flush the connection while it runs
// after its writeAsync (only blocking commands do, in Block and
// waitConsumer, and they never give their exec back), or drain would
// give back an exec still running.
func (c *conn) spareExec(x *exec) {
	if len(c.spares) < maxSpareExecs {
		c.spares = append(c.spares, x)
	}
}

// exec is one command's execution context.
type exec struct {
	c    *conn
	cmd  *cmdSpec
	args [][]byte
	tx   *txnCtx // inside EXEC, or nil
	// inline: args came from an inline command, whose array is sized to
	// its line (keptArg does not apply).
	inline bool

	// rv is the command's read view (view). A write ends it (later reads
	// see the write): done holds the views ended before the command did,
	// closed with rv when it ends. eager: views pin their Pebble state at
	// their first read (after a write, in a blocked command's tries, in a
	// run again after ErrStateMoved). replied counts the reply bytes the
	// command wrote (countingSink). A blocked command's tries run on the
	// waker's goroutine: rvMu orders them with the command's own reads.
	rvMu    sync.Mutex
	rv      *materialize.View
	done    []*materialize.View
	eager   bool
	wrote   bool
	ended   bool // views made after the command ended are the store's live View
	bufUsed bool // the connection's view buffer holds one of the command's views
	replied int
	blocked time.Duration // time the command waited blocked, not counted as its run time
	span    trace.Span    // the command's span; nil when not traced (telemetry.go)
	pend    *pendingReply // its submitted write (writeAsync): &pendBuf for the first
	// The request's command.Ctx and its pending reply live here: one
	// allocation per command instead of three.
	ctx     command.Ctx
	pendBuf pendingReply
}

// w returns the reply writer.
func (x *exec) w() *replyBuf {
	if x.tx != nil {
		return x.tx.w
	}
	return x.c.w
}

// reply returns a protocol-neutral writer of the reply (command/reply),
// rendering into w().
func (x *exec) reply() reply.Writer {
	if x.tx != nil {
		return reply.NewScratch(x.w(), &x.c.replyScratch, x.c.proto)
	}
	return reply.NewScratch(countingSink{x}, &x.c.replyScratch, x.c.proto)
}

// db returns the connection's selected database (logical: SELECT's number).
func (x *exec) db() uint8 { return x.c.db }

// storageDB returns the storage db of the selected database as reads see
// it now (materialize.View.StorageDB). A write decision resolves it again
// on its own View.
func (x *exec) storageDB() uint8 {
	if x.tx != nil {
		return x.tx.tx.View().StorageDB(x.c.db)
	}
	return x.c.s.store.StorageDB(x.c.db)
}

// view returns the command's read View: one committed state, the latest
// at its first read, for all its reads until it writes, blocks or ends
// (materialize.Store.ReadView); inside EXEC, the transaction's so far.
func (x *exec) view() *materialize.View {
	if x.tx != nil {
		return x.tx.tx.View()
	}
	x.rvMu.Lock()
	defer x.rvMu.Unlock()
	switch {
	case x.ended:
		return x.c.s.store.View()
	case x.rv != nil:
	case !x.bufUsed:
		// The command's first view; a blocked command's tries (x.eager
		// by then) and later views allocate theirs.
		x.bufUsed = true
		x.rv = x.c.s.store.ReadViewIn(&x.c.viewBuf, x.eager)
		x.rv.CountLookups(&x.c.lookups)
	default:
		x.rv = x.c.s.store.ReadViewIn(new(materialize.View), x.eager)
		x.rv.CountLookups(&x.c.lookups)
	}
	return x.rv
}

// endView ends the current read view (the next is a new state); it stays
// usable until closeViews.
func (x *exec) endView() {
	x.rvMu.Lock()
	defer x.rvMu.Unlock()
	if x.rv != nil {
		x.done = append(x.done, x.rv)
		x.rv = nil
	}
}

// releaseViews closes the Pebble state of the command's read views, before
// it waits or when it ends (views, from: the first of them to forget). A
// view used again reads a new state (materialize.View.Close).
func (x *exec) releaseViews(from int) {
	x.rvMu.Lock()
	defer x.rvMu.Unlock()
	if x.rv != nil {
		x.rv.Close()
		if len(x.done) < from { // listed at len(x.done): keep it
			x.done = append(x.done, x.rv)
		}
		x.rv = nil
	}
	for i := range x.done {
		x.done[i].Close()
	}
	if from < len(x.done) {
		clear(x.done[from:])
		x.done = x.done[:from]
	}
}

// views returns how many read views the command has made.
func (x *exec) views() int {
	x.rvMu.Lock()
	defer x.rvMu.Unlock()
	if x.rv != nil {
		x.done = append(x.done, x.rv)
		x.rv = nil
	}
	return len(x.done)
}

// wrote records that the command submitted a write: its later reads see
// it (a new view) and are not run again (eager).
func (x *exec) markWrote() {
	x.endView()
	x.rvMu.Lock()
	x.wrote = true
	x.eagerLocked()
	x.rvMu.Unlock()
}

// eagerLocked makes the command's views, those it holds and those to
// come, pin their state at once: it can no longer be run again. rvMu
// must be held.
func (x *exec) eagerLocked() {
	x.eager = true
	for _, v := range x.done {
		v.PinEagerly()
	}
	if x.rv != nil {
		x.rv.PinEagerly()
	}
}

// countingSink counts the reply bytes a command writes, so that a run that
// met materialize.ErrStateMoved can take them back (retryRead).
type countingSink struct{ x *exec }

func (s countingSink) WriteRaw(b []byte) {
	s.x.replied += len(b)
	if s.x.tx == nil {
		s.x.c.buffered += len(b)
	}
	s.x.w().WriteRaw(b)
}

// Reserve is reply.Reserver's: n bytes of the buffer to fill in place.
func (s countingSink) Reserve(n int) []byte {
	s.x.replied += n
	if s.x.tx == nil {
		s.x.c.buffered += n
	}
	return s.x.w().Reserve(n)
}

// Unreserve takes back the last n bytes Reserve lent.
func (s countingSink) Unreserve(n int) {
	s.x.replied -= n
	if s.x.tx == nil {
		s.x.c.buffered -= n
	}
	s.x.w().Unreserve(n)
}

// WriteRef is WriteRaw for b that never changes (reply.RefSink): the
// buffer keeps b itself.
func (s countingSink) WriteRef(b []byte) {
	s.x.replied += len(b)
	if s.x.tx == nil {
		s.x.c.buffered += len(b)
	}
	s.x.w().WriteRef(b)
}

// run runs the command, and runs it once more, with a view pinned at once,
// if its read view's state moved (materialize.ErrStateMoved) before it
// wrote anything: its reply so far is taken back.
func (x *exec) run() error {
	err := x.cmd.run(x)
	if x.tx != nil || !errors.Is(err, materialize.ErrStateMoved) {
		return err
	}
	x.releaseViews(0)
	if x.wrote {
		return err
	}
	if x.replied > 0 {
		n := x.c.w.Len()
		if n < x.replied {
			return err // flushed: cannot take back
		}
		x.c.w.Truncate(n - x.replied)
		x.replied = 0
	}
	x.c.s.stats.readRetries.Add(1)
	x.eager = true
	x.bufUsed = false // the first run's views are gone with it
	return x.cmd.run(x)
}

// inTxn reports whether the command runs inside EXEC: it must not block,
// wait for the writer or flush the connection.
func (x *exec) inTxn() bool { return x.tx != nil }

// writeAsync submits decide on the write path (see materialize.Store.Submit)
// and returns at once; reply writes the command's reply once the write has
// committed, when the connection drains its submitted writes (before the
// next command that is not a pipelinable write, and before every flush).
// decide's error is replied in reply's place. Consecutive writes of a
// pipeline thus share commit groups instead of waiting for one another.
// The request must be pipelined (a write that cannot block).
func (x *exec) writeAsync(decide func(v *materialize.View) ([]codec.Event, error), reply func()) error {
	if x.tx == nil {
		x.markWrote()
	}
	if x.tx != nil {
		if err := x.txWrite(decide); err != nil {
			return err
		}
		reply()
		return nil
	}
	it := &x.pendBuf
	if x.pend != nil { // a second write of the command: the first's is queued
		it = new(pendingReply)
		x.pendBuf.owner = nil
	}
	*it = pendingReply{cmd: x.cmd.name, stat: x.c.s.cmdstats.statFor(x.cmd, x.args), reply: reply}
	if it == &x.pendBuf && x.cmd.flags&flagBlocking == 0 {
		it.owner = x
	}
	x.pend = it
	db := x.db()
	keep := x.keptArg()
	it.p = x.c.s.store.SubmitNotify(spanTag(x.span), x.c.notifier, func(v *materialize.View) ([]codec.Event, error) {
		x.ctx.Resolve(v)
		if keep != nil {
			v.KeepValue(keep)
		}
		evs, err := decide(v)
		x.traceAdds(evs)
		it.events = evs
		if err == nil {
			it.notes = x.c.s.notesOf(x.cmd.name, x.args, db, evs, v)
		}
		return evs, err
	})
	x.c.pending = append(x.c.pending, it)
	return nil
}

// Redis keeps a bulk argument of 32 KiB or more as the string object
// itself (PROTO_MBULK_BIG_ARG); keptArg is the same idea, from 4 KiB.
const (
	keptArgMin  = 4 << 10 // smallest argument kept rather than copied
	keptArgRest = 4 << 10 // at most this many bytes of other arguments
)

// keptArg returns the request's last argument when the store may keep it
// as a string's value without a copy (materialize.View.KeepValue): it is
// keptArgMin bytes or more and the request's other arguments, which share
// its backing array (Reader.ReadCommand), come to keptArgRest bytes and
// an eighth of it at most (what the cache holds uncounted); nil
// otherwise. The Reader never reuses a request's memory, and
// a multibulk request's last argument's array ends where it does (not so
// an inline request's, which the caller leaves out).
func keptArg(args [][]byte) []byte {
	last := args[len(args)-1]
	if len(last) < keptArgMin {
		return nil
	}
	limit := min(keptArgRest, len(last)/8)
	rest := 0
	for _, a := range args[:len(args)-1] {
		if rest += len(a); rest > limit {
			return nil
		}
	}
	return last
}

// keptArg is keptArg of the command's arguments, nil for an inline
// command (its arguments' array is sized to its line, not to them).
func (x *exec) keptArg() []byte {
	if x.inline {
		return nil
	}
	return keptArg(x.args)
}

// txWrite runs decide inside EXEC, keeping its keyspace notifications
// for after the commit.
func (x *exec) txWrite(decide func(v *materialize.View) ([]codec.Event, error)) error {
	return x.tx.write(func(v *materialize.View) ([]codec.Event, error) {
		x.ctx.Resolve(v)
		evs, err := decide(v)
		x.traceAdds(evs)
		if err == nil && len(evs) > 0 {
			*x.tx.notes = append(*x.tx.notes, x.c.s.notesOf(x.cmd.name, x.args, x.db(), evs, v)...)
		}
		return evs, err
	})
}

// write runs decide on the write path (see materialize.Store.Write), marks
// its record for durability before the reply is flushed, and publishes
// wake-ups for the keys its events may unblock.
func (x *exec) write(decide func(v *materialize.View) ([]codec.Event, error)) error {
	if x.tx != nil {
		return x.txWrite(decide)
	}
	x.markWrote()
	var events []codec.Event
	var notes []note
	db := x.db()
	seq, err := x.c.s.store.WriteTagged(spanTag(x.span), func(v *materialize.View) ([]codec.Event, error) {
		x.ctx.Resolve(v)
		evs, err := decide(v)
		x.traceAdds(evs)
		events = evs
		if err == nil {
			notes = x.c.s.notesOf(x.cmd.name, x.args, db, evs, v)
		}
		return evs, err
	})
	if err != nil {
		return err
	}
	if seq != 0 {
		x.c.pendingSeq = seq
		x.c.s.publishWakes(x.span, events)
		x.c.s.track.invalidate(x.c, events)
		x.c.s.publishNotes(notes)
	}
	return nil
}
