package broker

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/redcon"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/command/reply"
	"github.com/sediment-dev/sediment/materialize"
)

// maxBatch bounds how many pipelined requests run before replies are flushed.
const maxBatch = 1024

// conn is one client connection.
type conn struct {
	s    *Server
	nc   net.Conn
	id   int64
	w    *redcon.Writer
	rd   *Reader
	born time.Time

	// ctx is cancelled when the client goes away or the server closes.
	ctx    context.Context
	cancel context.CancelFunc

	// Connection state (touched only by the connection goroutine, except db,
	// which is written under mu so that CLIENT LIST may read it).
	db         uint8
	pendingSeq uint64          // highest change-log seq whose reply is not yet flushed
	closeAfter bool            // QUIT or protocol error: flush, then close
	pending    []*pendingReply // submitted writes (and errors behind them), in request order
	multi      *multiState     // open transaction (MULTI), or nil
	watched    []*watchedKey   // WATCHed keys (watches); changed under watches.mu
	dirty      atomic.Bool     // a watched key was touched: EXEC aborts (set by the writer)
	// replyScratch is the reply writers' scratch buffer (reply.NewScratch):
	// used by one command at a time, on this goroutine or, inside EXEC, on
	// the writer while this goroutine waits.
	replyScratch []byte

	mu      sync.Mutex // guards name, closing and read deadlines; db for readers other than the connection goroutine
	name    string
	closing bool // shutdown was requested: the read deadline stays in the past
	// unblock ends the connection's blocking wait (CLIENT UNBLOCK); nil
	// when it is not blocked.
	unblock context.CancelCauseFunc
}

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{
		s:    s,
		nc:   nc,
		id:   s.nextClientID.Add(1),
		w:    redcon.NewWriter(nc),
		rd:   NewReader(nc, s.opts.Limits),
		born: s.opts.Now(),
	}
	c.ctx, c.cancel = context.WithCancel(s.ctx)
	return c
}

// shutdown asks the connection to finish the command it is running and
// close: its next read fails at once.
func (c *conn) shutdown() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closing = true
	c.nc.SetReadDeadline(time.Now())
}

// serve runs the connection until it closes. One goroutine reads, executes
// and replies: every request already buffered runs before the replies are
// flushed together, so a pipeline costs one write (and, under appendfsync
// always, one fsync).
func (c *conn) serve() {
	defer c.nc.Close()
	defer c.cancel()
	defer c.s.watch.clear(c)
	for n := 1; ; n++ {
		args, err := c.rd.ReadCommand()
		if err != nil {
			c.drain() // replies to the requests before the error come first
			var pe *ProtocolError
			if errors.As(err, &pe) {
				c.w.WriteError(pe.Msg)
				c.s.opts.Logger.Debug("protocol error", "client", c.id, "err", pe.Msg)
			}
			c.flush()
			return
		}
		c.execute(args)
		if c.closeAfter || c.rd.Buffered() == 0 || n%maxBatch == 0 {
			if err := c.flush(); err != nil || c.closeAfter {
				return
			}
		}
	}
}

// pendingReply is a request whose reply waits for a submitted write: the
// write's handle and the reply to write once it committed, or an error to
// reply in its place in the request order.
type pendingReply struct {
	cmd    string
	p      *materialize.Pending
	events []codec.Event // the write's events, set by its decision
	reply  func()
	err    error
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
		if err != nil {
			c.writeErr(it.cmd, err)
			continue
		}
		if seq != 0 {
			c.pendingSeq = seq
			c.s.wake.publishEvents(it.events)
		}
		it.reply()
	}
	c.pending = c.pending[:0]
}

// writeErr replies err in Redis's words (toWire); unmapped errors are logged.
func (c *conn) writeErr(cmd string, err error) { c.writeErrTo(c.w, cmd, err) }

// writeErrTo writes err in Redis's words to w (EXEC's reply buffer or the
// connection's writer).
func (c *conn) writeErrTo(w *redcon.Writer, cmd string, err error) {
	msg, ok := toWire(err)
	if !ok {
		c.s.opts.Logger.Warn("internal error", "cmd", cmd, "client", c.id, "err", err)
	}
	w.WriteError(msg)
}

// flush makes every write whose reply is buffered durable (appendfsync
// always), then sends the buffered replies.
func (c *conn) flush() error {
	c.drain()
	if c.pendingSeq != 0 {
		if err := c.s.store.WaitDurable(c.pendingSeq); err != nil {
			c.s.opts.Logger.Warn("change log sync failed", "client", c.id, "err", err)
			return err
		}
		c.pendingSeq = 0
	}
	return c.w.Flush()
}

// execute runs one request and buffers its reply.
func (c *conn) execute(args [][]byte) {
	cmd := lookup(args[0])
	if c.multi != nil && (cmd == nil || !notQueued(cmd)) {
		c.drain()
		c.queue(cmd, args)
		return
	}
	c.s.stats.commands.Add(1)
	if cmd == nil || !cmd.arityOK(len(args)) || !cmd.pipelined(args) {
		// Anything but a pipelinable write runs after, and sees, every
		// write submitted before it.
		c.drain()
	}
	if cmd == nil {
		c.s.stats.rejected.Add(1)
		c.w.WriteError(string(errUnknownCommand(args)))
		return
	}
	if !cmd.arityOK(len(args)) {
		c.s.stats.rejected.Add(1)
		c.w.WriteError(string(errWrongArgs(cmd.name)))
		return
	}
	x := &exec{c: c, cmd: cmd, args: args}
	if err := cmd.run(x); err != nil {
		if len(c.pending) > 0 { // keep the request order behind submitted writes
			c.pending = append(c.pending, &pendingReply{cmd: cmd.name, err: err})
			return
		}
		c.writeErr(cmd.name, err)
	}
}

// exec is one command's execution context.
type exec struct {
	c    *conn
	cmd  *cmdSpec
	args [][]byte
	tx   *txnCtx // inside EXEC, or nil
}

// w returns the reply writer.
func (x *exec) w() *redcon.Writer {
	if x.tx != nil {
		return x.tx.w
	}
	return x.c.w
}

// reply returns a protocol-neutral writer of the reply (command/reply),
// rendering into w().
func (x *exec) reply() reply.Writer { return reply.NewScratch(x.w(), &x.c.replyScratch) }

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

// view returns a read View of the latest committed state (inside EXEC: of
// the transaction so far).
func (x *exec) view() *materialize.View {
	if x.tx != nil {
		return x.tx.tx.View()
	}
	return x.c.s.store.View()
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
	if x.tx != nil {
		if err := x.tx.write(decide); err != nil {
			return err
		}
		reply()
		return nil
	}
	it := &pendingReply{cmd: x.cmd.name, reply: reply}
	it.p = x.c.s.store.Submit(func(v *materialize.View) ([]codec.Event, error) {
		evs, err := decide(v)
		it.events = evs
		return evs, err
	})
	x.c.pending = append(x.c.pending, it)
	return nil
}

// write runs decide on the write path (see materialize.Store.Write), marks
// its record for durability before the reply is flushed, and publishes
// wake-ups for the keys its events may unblock.
func (x *exec) write(decide func(v *materialize.View) ([]codec.Event, error)) error {
	if x.tx != nil {
		return x.tx.write(decide)
	}
	var events []codec.Event
	seq, err := x.c.s.store.Write(func(v *materialize.View) ([]codec.Event, error) {
		evs, err := decide(v)
		events = evs
		return evs, err
	})
	if err != nil {
		return err
	}
	if seq != 0 {
		x.c.pendingSeq = seq
		x.c.s.wake.publishEvents(events)
	}
	return nil
}
