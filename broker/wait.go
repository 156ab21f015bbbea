package broker

import (
	"context"
	"errors"
	"time"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/materialize"
)

// The blocking waits of command.Runtime (XREAD and XREADGROUP live in
// command/stream): Block waits in the waiter registry (block.go), woken
// through NATS; WriteBlock queues a consumer the writer serves (serve.go).

// waitKeys returns the registry keys of keys in the connection's db
// (logical: the registries follow SWAPDB by translating events).
func (x *exec) waitKeys(keys [][]byte) []waitKey {
	out := make([]waitKey, len(keys))
	for i, k := range keys {
		out[i] = waitKey{x.db(), string(k)}
	}
	return out
}

var errBlockInTxn = errors.New("broker: a blocking wait inside EXEC")

func (r execRuntime) InTxn() bool { return r.x.inTxn() }

// Block flushes the replies already buffered (a blocked command must not
// hold back the replies of earlier pipelined commands), then waits in the
// registry.
func (r execRuntime) Block(keys [][]byte, timeout time.Duration, try func() bool) (bool, error) {
	x := r.x
	if x.inTxn() {
		return false, errBlockInTxn
	}
	if err := x.c.flush(); err != nil {
		return false, err
	}
	mark := x.views()
	x.releaseViews(mark) // each try reads the state after its wake
	x.rvMu.Lock()
	x.eagerLocked() // a try, or the command after its wait, cannot be run again
	x.rvMu.Unlock()
	bw := x.c.newBlockWait()
	bw.arm()
	stop := x.c.watchClose()
	x.c.s.stats.blocked.Add(1)
	sp := x.c.s.tel.blockSpan(x.span)
	t0 := time.Now()
	res, ok := x.c.s.wake.reg.block(bw.ctx, x.waitKeys(keys), timeout, func() bool {
		defer x.releaseViews(mark)
		return try()
	})
	x.blocked += time.Since(t0)
	endBlockSpan(sp, ok, res.err)
	x.c.s.stats.blocked.Add(-1)
	if x.c.ps.Load() != nil {
		x.c.takePushes(false) // pushes that came while blocked, then the reply
	}
	stop()
	if res.err != nil {
		bw.end(false)
		return false, res.err
	}
	return ok, bw.end(ok)
}

// WriteBlock runs decide as a write; a Waiter it returns is queued in the
// same decision, then waited for (waitConsumer).
func (r execRuntime) WriteBlock(decide func(v *materialize.View) ([]codec.Event, *command.Waiter, error), timeout time.Duration) (queued, served bool, err error) {
	x := r.x
	var w *consumerWaiter
	bw := x.c.newBlockWait()
	defer bw.end(true)
	err = x.write(func(v *materialize.View) ([]codec.Event, error) {
		evs, cw, err := decide(v)
		if err != nil || cw == nil {
			return evs, err
		}
		if x.inTxn() {
			return nil, errBlockInTxn
		}
		w = &consumerWaiter{keys: x.waitKeys(cw.Keys), queue: waitQueue{pop: cw.Pop, pops: cw.Pops, group: cw.Group}, ctx: bw.ctx, res: make(chan waitResult, 1), deliver: cw.Serve}
		x.c.s.cons.queue(w)
		return evs, nil
	})
	if err != nil {
		if w != nil {
			x.c.s.cons.cancel(w) // the decision did not commit: leave the queue
		}
		return false, false, err
	}
	if w == nil {
		return false, false, nil
	}
	x.releaseViews(x.views())
	bw.arm()
	served, err = x.waitConsumer(w, timeout)
	if err == nil {
		err = bw.end(served)
	}
	return true, served, err
}

// waitConsumer flushes the replies already buffered, waits for the writer
// to serve w (serve.go) up to timeout, and reports whether it did.
func (x *exec) waitConsumer(w *consumerWaiter, timeout time.Duration) (bool, error) {
	if err := x.c.flush(); err != nil {
		x.c.s.cons.cancel(w)
		return false, err
	}
	stop := x.c.watchClose()
	x.c.s.stats.blocked.Add(1)
	sp := x.c.s.tel.blockSpan(x.span)
	t0 := time.Now()
	res, ok := x.c.s.cons.wait(w, timeout)
	x.blocked += time.Since(t0)
	endBlockSpan(sp, ok, res.err)
	x.c.s.stats.blocked.Add(-1)
	if x.c.ps.Load() != nil {
		x.c.takePushes(false) // pushes that came while blocked, then the reply
	}
	stop()
	if !ok {
		return false, nil
	}
	if res.err != nil {
		return true, res.err
	}
	if res.seq > x.c.pendingSeq {
		x.c.pendingSeq = res.seq
	}
	x.c.s.track.invalidate(x.c, res.events)
	x.c.s.publishNotes(x.c.s.notesOf(x.cmd.name, x.args, x.db(), res.events, nil))
	return true, nil
}

// CLIENT UNBLOCK's causes: the context of a wait it ends is cancelled with
// one of these.
var (
	errUnblockTimeout = errors.New("broker: CLIENT UNBLOCK TIMEOUT")
	errUnblockError   = errors.New("broker: CLIENT UNBLOCK ERROR")
)

// blockWait is one blocking wait of a connection: its context ends when
// the client leaves or, once armed, when CLIENT UNBLOCK ends the wait.
type blockWait struct {
	c      *conn
	ctx    context.Context
	cancel context.CancelCauseFunc
	ended  bool
}

func (c *conn) newBlockWait() *blockWait {
	ctx, cancel := context.WithCancelCause(c.ctx)
	return &blockWait{c: c, ctx: ctx, cancel: cancel}
}

// arm lets CLIENT UNBLOCK end the wait from now on (the client counts as
// blocked).
func (b *blockWait) arm() {
	b.c.mu.Lock()
	b.c.unblock = b.cancel
	b.c.mu.Unlock()
}

// end disarms the wait and releases its context. It returns errUnblocked
// when the wait was not served because CLIENT UNBLOCK ... ERROR ended it
// (TIMEOUT ends it as a timeout does: nil).
func (b *blockWait) end(served bool) error {
	if b.ended {
		return nil
	}
	b.ended = true
	b.c.mu.Lock()
	b.c.unblock = nil
	b.c.mu.Unlock()
	cause := context.Cause(b.ctx)
	b.cancel(nil)
	if !served && errors.Is(cause, errUnblockError) {
		return errUnblocked
	}
	return nil
}

// unblockClient ends the wait of the connection id as CLIENT UNBLOCK does
// (cause errUnblockTimeout or errUnblockError) and reports whether it was
// blocked.
func (s *Server) unblockClient(id int64, cause error) bool {
	c := s.clientByID(id)
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.unblock == nil {
		return false
	}
	c.unblock(cause)
	c.unblock = nil
	return true
}
