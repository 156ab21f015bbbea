package broker

import (
	"slices"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
)

// Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH with Redis 7.0's
// semantics (https://redis.io/docs/latest/develop/interact/transactions/).
//
// After MULTI a connection queues every command but these five, QUIT and
// RESET, replying QUEUED. An unknown command or a wrong argument count is
// replied at once and makes EXEC reply EXECABORT; anything else (syntax,
// wrong type) is the command's own error inside EXEC's reply, and the other
// commands stand. EXEC is one materialize.WriteTxn: the commands run in
// order on the writer goroutine, each seeing the ones before it, and their
// events form one change-log record, committed atomically. Blocking
// commands do not block inside EXEC: they reply as on a timeout.

func init() {
	const tx = flagNoScript | flagLoading | flagStale
	register(
		&cmdSpec{name: "multi", arity: 1, flags: tx | flagFast, group: "transactions", since: "1.2.0", summary: "Starts a transaction.", run: runMulti},
		&cmdSpec{name: "exec", arity: 1, flags: tx, group: "transactions", since: "1.2.0", summary: "Executes all commands in a transaction.", run: runExec},
		&cmdSpec{name: "discard", arity: 1, flags: tx | flagFast, group: "transactions", since: "2.0.0", summary: "Discards a transaction.", run: runDiscard},
		&cmdSpec{name: "watch", arity: -2, flags: tx | flagFast, first: 1, last: -1, step: 1, group: "transactions", since: "2.2.0", summary: "Monitors changes to keys to determine the execution of a transaction.", run: runWatch},
		&cmdSpec{name: "unwatch", arity: 1, flags: tx | flagFast, group: "transactions", since: "2.2.0", summary: "Forgets about watched keys of a transaction.", run: runUnwatch},
	)
}

// multiState is a connection's open transaction.
type multiState struct {
	queue   []queued
	aborted bool // a command was rejected while queueing: EXEC replies EXECABORT
	writes  bool // a queued command has the write flag (a storage fault refuses EXEC)
	denyoom bool // a queued command has the denyoom flag (maxmemory refuses EXEC)
	// mayReplicate: a queued command is one of Redis's may-replicate ones
	// (PUBLISH): CLIENT PAUSE WRITE holds EXEC.
	mayReplicate bool
}

type queued struct {
	cmd  *cmdSpec
	args [][]byte // the reader's slices: owned, never reused
}

// notQueued reports whether cmd runs at once inside MULTI, as in Redis's
// processCommand.
func notQueued(cmd *cmdSpec) bool {
	switch cmd.name {
	case "exec", "discard", "multi", "watch", "quit", "reset":
		return true
	}
	return false
}

// noMulti reports whether cmd is refused inside MULTI (Redis's no-multi
// flag: SHUTDOWN, SAVE, and Sediment's CHANGES, which would read the
// change log on the writer inside EXEC).
func noMulti(cmd *cmdSpec) bool { return cmd.flags&flagNoMulti != 0 }

// queue handles a request that arrives while c is in MULTI and is not one
// of notQueued's. It replies at once.
func (c *conn) queue(cmd *cmdSpec, args [][]byte) {
	switch {
	case cmd == nil:
		c.multi.aborted = true
		c.reject(nil, args, string(errUnknownCommand(args)))
	case !cmd.arityOK(len(args)):
		c.multi.aborted = true
		c.reject(cmd, args, string(errWrongArgs(cmd.name)))
	case noMulti(cmd):
		c.multi.aborted = true
		c.reject(cmd, args, string(errNotInMulti))
	default:
		c.multi.queue = append(c.multi.queue, queued{cmd, args})
		c.multi.writes = c.multi.writes || cmd.flags&flagWrite != 0
		c.multi.denyoom = c.multi.denyoom || cmd.flags&flagDenyOOM != 0
		c.multi.mayReplicate = c.multi.mayReplicate || slices.Contains(mayReplicate, cmd.name)
		c.multiLen.Store(int64(len(c.multi.queue)))
		c.w.WriteString("QUEUED")
	}
}

// MULTI. Reply: OK.
func runMulti(x *exec) error {
	if x.c.multi != nil {
		return errMultiNested
	}
	x.c.multi = &multiState{}
	x.c.multiLen.Store(0)
	x.w().WriteString("OK")
	return nil
}

// DISCARD. Reply: OK. Also forgets the watched keys.
func runDiscard(x *exec) error {
	if x.c.multi == nil {
		return errDiscardNoMulti
	}
	x.c.multi = nil
	x.c.multiLen.Store(-1)
	x.c.s.watch.clear(x.c)
	x.w().WriteString("OK")
	return nil
}

// UNWATCH. Reply: OK.
func runUnwatch(x *exec) error {
	x.c.s.watch.clear(x.c)
	x.w().WriteString("OK")
	return nil
}

// WATCH key [key ...]. Reply: OK. Registers inside a write decision (no
// events) so that it is ordered with every write (watches).
func runWatch(x *exec) error {
	if x.c.multi != nil {
		return errWatchInMulti
	}
	err := x.write(func(v *materialize.View) ([]codec.Event, error) {
		for _, k := range x.args[1:] {
			_, ok, del, err := v.MetaForWrite(v.StorageDB(x.db()), k)
			if err != nil {
				return nil, err
			}
			x.c.s.watch.add(x.c, watchedKey{key: waitKey{x.db(), string(k)}, existed: ok || len(del) > 0, expired: len(del) > 0})
		}
		return nil, nil
	})
	if err != nil {
		return err
	}
	x.w().WriteString("OK")
	return nil
}

// EXEC. Reply: one reply per queued command; the null array when a watched
// key was touched; EXECABORT when queueing rejected a command.
func runExec(x *exec) error {
	c := x.c
	m := c.multi
	if m == nil {
		return errExecNoMulti
	}
	c.multi = nil
	c.multiLen.Store(-1)
	defer c.s.watch.clear(c)
	if m.aborted {
		return errExecAbort
	}
	if c.dirty.Load() {
		x.reply().NullArray()
		return nil
	}
	// The queued commands run on the writer goroutine, every write waiting
	// behind them: the process's pub/sub subscription, a NATS round trip
	// the first time, is made before (docs/lock-order.md). Its error, if
	// any, is the queued SUBSCRIBE's reply, which tries again.
	for _, q := range m.queue {
		switch q.cmd.name {
		case "subscribe", "psubscribe", "ssubscribe":
			c.s.pubsub.ensureSub()
		}
	}
	replies := &replyBuf{} // buffered only: copied to the connection after the commit
	aborted := false
	var events []codec.Event
	var notes []note
	seq, err := c.s.store.WriteTxnTagged(spanTag(x.span), func(tx *materialize.Txn) error {
		if c.dirty.Load() { // touched by a write decided since the check above
			aborted = true
			return nil
		}
		expired, err := c.expiredSince(tx.View())
		if err != nil || expired {
			aborted = true
			return err
		}
		replies.WriteArray(len(m.queue))
		for _, q := range m.queue {
			qx := &exec{c: c, cmd: q.cmd, args: q.args, tx: &txnCtx{tx: tx, w: replies, notes: &notes}}
			c.s.stats.commands.Add(1)
			if c.trk.on {
				c.s.track.remember(c, q.cmd, q.args)
			}
			if x.span != nil { // traced: the server has telemetry
				qx.span = c.s.tel.startCommand(c, q.cmd, q.args, x.span)
			}
			start := monotonic()
			err := c.aclChanged(q.cmd, q.args)
			if err == nil {
				err = q.cmd.run(qx)
			}
			d := monotonic() - start
			c.s.ran(q.cmd, q.args, d, err != nil, false)
			endCommand(qx.span, err)
			c.s.slowlog.add(c, q.cmd, q.args, d)
			c.s.feedMonitors(c, q.cmd, q.args)
			if err != nil {
				c.logSpan = qx.span
				c.writeErrTo(replies, q.cmd.name, err)
				c.logSpan = nil
			}
			if q.cmd.flags&flagReadonly != 0 {
				notes = append(notes, c.s.missNotes(q.cmd, q.args, qx.db(), qx.storageDB(), tx.View())...)
			}
		}
		events = tx.Events()
		return nil
	})
	if err != nil {
		return err
	}
	if aborted {
		x.reply().NullArray()
		return nil
	}
	if seq != 0 {
		c.pendingSeq = seq
		c.s.publishWakes(x.span, events)
		c.s.track.invalidate(c, events)
	}
	c.s.publishNotes(notes) // a read-only EXEC may have key misses
	x.w().WriteRaw(replies.Bytes())
	return nil
}

// txnCtx is the EXEC a command runs inside: its writes emit into tx and its
// reply goes to w, EXEC's reply buffer.
type txnCtx struct {
	tx    *materialize.Txn
	w     *replyBuf
	notes *[]note // the EXEC's keyspace notifications, published after its commit
}

// inTxn runs decide inside EXEC: an error is the command's, with nothing
// emitted; otherwise its events are emitted at once.
func (t *txnCtx) write(decide func(v *materialize.View) ([]codec.Event, error)) error {
	evs, err := decide(t.tx.View())
	if err != nil {
		return err
	}
	return t.tx.Emit(evs...)
}
