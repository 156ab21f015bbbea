package broker

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/tidwall/redcon"

	"github.com/sediment-dev/sediment/codec"
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

	// Executor state (touched only by the executor goroutine, except db,
	// which is written under mu so that CLIENT LIST may read it).
	db         uint8
	pendingSeq uint64 // highest change-log seq whose reply is not yet flushed
	closeAfter bool   // QUIT or protocol error: flush, then close

	mu   sync.Mutex // guards name, and db for readers other than the executor
	name string
}

type batch struct {
	cmds [][][]byte
	err  error // read error after cmds: protocol error or EOF
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

// shutdown asks the connection to finish the commands it has read and close.
func (c *conn) shutdown() {
	// Unblock the reader; the executor drains what was already read.
	c.nc.SetReadDeadline(time.Now())
}

// serve runs the connection until it closes.
func (c *conn) serve() {
	defer c.nc.Close()
	defer c.cancel()
	batches := make(chan batch, 1)
	go c.readLoop(batches)
	for b := range batches {
		for _, args := range b.cmds {
			c.execute(args)
			if c.closeAfter {
				break
			}
		}
		if b.err != nil && !c.closeAfter {
			var pe *ProtocolError
			if errors.As(b.err, &pe) {
				c.w.WriteError(pe.Msg)
				c.s.opts.Logger.Debug("protocol error", "client", c.id, "err", pe.Msg)
			}
			c.closeAfter = true
		}
		if err := c.flush(); err != nil || c.closeAfter {
			c.cancel()
			c.nc.Close()
			for range batches { // let readLoop exit
			}
			return
		}
	}
}

// readLoop parses requests and hands them to the executor in batches: all
// requests already buffered form one batch, so a pipeline's replies are
// flushed together. It ends after the first read error.
func (c *conn) readLoop(out chan<- batch) {
	defer close(out)
	for {
		var b batch
		for len(b.cmds) < maxBatch {
			args, err := c.rd.ReadCommand()
			if err != nil {
				if !errors.Is(err, io.EOF) && !isProtocolError(err) {
					err = io.EOF // network error or shutdown: just close
				}
				b.err = err
				break
			}
			b.cmds = append(b.cmds, args)
			if c.rd.Buffered() == 0 {
				break
			}
		}
		if b.err != nil {
			c.cancel() // wakes a blocked command at once; a dead client consumes nothing
		}
		select {
		case out <- b:
		case <-c.ctx.Done():
			if b.err == nil {
				return
			}
			out <- b // the executor drains until close
		}
		if b.err != nil {
			return
		}
	}
}

func isProtocolError(err error) bool {
	var pe *ProtocolError
	return errors.As(err, &pe)
}

// flush makes every write whose reply is buffered durable (appendfsync
// always), then sends the buffered replies.
func (c *conn) flush() error {
	if c.pendingSeq != 0 {
		if err := c.s.store.WaitDurable(c.pendingSeq); err != nil {
			c.s.opts.Logger.Warn("WAL sync failed", "client", c.id, "err", err)
			return err
		}
		c.pendingSeq = 0
	}
	return c.w.Flush()
}

// execute runs one request and buffers its reply.
func (c *conn) execute(args [][]byte) {
	c.s.stats.commands.Add(1)
	cmd := lookup(args[0])
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
		msg, ok := toWire(err)
		if !ok {
			c.s.opts.Logger.Warn("internal error", "cmd", cmd.name, "client", c.id, "err", err)
		}
		c.w.WriteError(msg)
	}
}

// exec is one command's execution context.
type exec struct {
	c    *conn
	cmd  *command
	args [][]byte
}

// w returns the reply writer.
func (x *exec) w() *redcon.Writer { return x.c.w }

// db returns the connection's selected database.
func (x *exec) db() uint8 { return x.c.db }

// view returns a read View of the latest committed state.
func (x *exec) view() *materialize.View { return x.c.s.store.View() }

// write runs decide on the write path (see materialize.Store.Write), marks
// its record for durability before the reply is flushed, and publishes
// wake-ups for the keys its events may unblock.
func (x *exec) write(decide func(v *materialize.View) ([]codec.Event, error)) error {
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
