package broker

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
)

// Blocked consumers (XREADGROUP BLOCK with '>' on every stream, and the
// blocking pops: BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP) are served by
// the writer, as Redis serves clients blocked on a key right after the
// command that made the key ready and before any later command is decided:
//
//  1. The blocked command's first attempt is a write decision. When it
//     delivers nothing, that same decision queues the client here, so no
//     write can commit between the check and the queueing.
//  2. After each write that adds entries to a key (or deletes the key or a
//     group, or flushes), or pushes onto or creates a key, the writer
//     goroutine calls consumers.ready with a view that sees the write. For
//     each queue on the key (the pops; the readers of each consumer group)
//     it runs the clients' decisions in arrival order until one gets
//     nothing: one client per available entry or element, and one extra
//     attempt per queue, however many clients wait. Each delivery is a
//     change-log record of its own in the same commit group, and its own
//     events may make more keys ready (BLMOVE pushes): they are served in
//     turn, as Redis's handleClientsBlockedOnKeys loops until no key is
//     ready.
//  3. Once the group commits, the writer hands each served client its
//     reply and sequence number through the client's channel.
//
// Lock order: the writer (materialize.Store's commit) is taken before
// consumers.mu; nothing holding consumers.mu calls into the write path.
// XREAD clients, which consume nothing, wait in the registry (block.go) and
// are woken through NATS.

// waitQueue names one queue of waiters on a key: the popping commands of
// one type (lists, sorted sets), or the readers of one consumer group.
type waitQueue struct {
	pop   bool
	pops  codec.Type
	group string
}

// consumerWaiter is one blocked XREADGROUP or popping client.
type consumerWaiter struct {
	keys  []waitKey
	queue waitQueue
	ctx   context.Context // the client's: ended when it disconnects
	// deliver is the command's decision on a wake (command.Waiter.Serve):
	// ok false means nothing to deliver yet; otherwise the command has its
	// result (entries or an error such as UNBLOCKED). events are what it
	// records, either way: with ok false, only the entries a group read
	// parked (delayed delivery), and the client waits on.
	deliver func(v *materialize.View, key []byte) (events []codec.Event, ok bool)
	done    bool            // set under consumers.mu once out of the queues
	served  bool            // set under consumers.mu when a result is on its way to res
	res     chan waitResult // capacity 1
}

// consumers holds the queues of blocked consumers: per key, per queue
// (waitQueue), in arrival order. It is an in-memory index; FLUSHDB/FLUSHALL serve every
// waiter of the flushed keys (with an error) and so empty it.
type consumers struct {
	mu     sync.Mutex
	queues map[waitKey]map[waitQueue][]*consumerWaiter
	n      atomic.Int64 // queued waiters: the writer's fast path when 0
	log    func(msg string, args ...any)
}

func newConsumers(log func(string, ...any)) *consumers {
	return &consumers{queues: map[waitKey]map[waitQueue][]*consumerWaiter{}, log: log}
}

// queueLocked adds w behind the waiters already queued on its keys.
// c.mu must be held.
func (c *consumers) queueLocked(w *consumerWaiter) {
	for _, k := range w.keys {
		byQueue := c.queues[k]
		if byQueue == nil {
			byQueue = map[waitQueue][]*consumerWaiter{}
			c.queues[k] = byQueue
		}
		byQueue[w.queue] = append(byQueue[w.queue], w)
	}
	c.n.Add(1)
}

// queue is queueLocked for a decision running on the writer goroutine.
func (c *consumers) queue(w *consumerWaiter) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.queueLocked(w)
}

// removeLocked marks w done and drops it from every queue. c.mu must be held.
func (c *consumers) removeLocked(w *consumerWaiter) {
	if w.done {
		return
	}
	w.done = true
	c.n.Add(-1)
	for _, k := range w.keys {
		byQueue := c.queues[k]
		q := byQueue[w.queue]
		if len(q) > 0 && q[0] == w {
			q[0] = nil
			q = q[1:] // served from the head: O(1)
		} else {
			for i, o := range q {
				if o == w {
					q = append(q[:i:i], q[i+1:]...) // a timeout or a client gone
					break
				}
			}
		}
		if len(q) == 0 {
			delete(byQueue, w.queue)
			if len(byQueue) == 0 {
				delete(c.queues, k)
			}
		} else {
			byQueue[w.queue] = q
		}
	}
}

// cancel takes w out of the queues; a result it was served meanwhile is
// dropped (its entries stay pending for its consumer, as after any lost
// reply, and XCLAIM/XAUTOCLAIM recover them).
func (c *consumers) cancel(w *consumerWaiter) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(w)
}

// wait blocks until w is served, the timeout passes (0: forever) or its
// client leaves. It returns the result, or false when nothing was served.
func (c *consumers) wait(w *consumerWaiter, timeout time.Duration) (waitResult, bool) {
	if res, ok := await(w.ctx, w.res, timeout); ok {
		return res, true
	}
	c.mu.Lock()
	served := w.served
	c.removeLocked(w)
	c.mu.Unlock()
	if served {
		// Served by a commit group still in flight: its reply comes once
		// the group has committed.
		return <-w.res, true
	}
	return waitResult{}, false
}

// ready is the store's ReadyFunc: after a write, it serves the consumers
// queued on the keys whose events may make them ready, then the ones the
// served clients' own events make ready, until none is. It runs on the
// writer goroutine.
func (c *consumers) ready(v *materialize.View, events []codec.Event, record func(materialize.Served)) {
	if c.n.Load() == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var more [][]codec.Event // served writes' events, served in turn
	chain := func(s materialize.Served) {
		if len(s.Events) > 0 {
			more = append(more, s.Events)
		}
		record(s)
	}
	c.readyLocked(v, events, chain)
	for len(more) > 0 && c.n.Load() > 0 {
		evs := more[0]
		more = more[1:]
		c.readyLocked(v, evs, chain)
	}
}

// readyLocked serves the queues events make ready. c.mu must be held.
func (c *consumers) readyLocked(v *materialize.View, events []codec.Event, record func(materialize.Served)) {
	var (
		last   waitKey
		primed bool
	)
	edb := newEventDBs(events, v.LogicalDB)
	for i, e := range events {
		var pops bool // only the pops: the key was pushed onto or created
		switch e.Op {
		case codec.OpXAdd, codec.OpDelKey, codec.OpGroupDel:
		case codec.OpPELSet:
			// An entry released by XNACK is claimable at once: blocked
			// XREADGROUP CLAIM readers try again (others find nothing new).
			// One parked by delayed delivery (also unowned) may bring a
			// CLAIM reader's timed wake forward: it decides that.
			if len(e.Args) < 3 {
				continue
			}
			if pe, err := codec.DecodePELEntry(e.Args[2]); err != nil || !pe.Nacked() {
				continue
			}
		case codec.OpLSet, codec.OpZAdd, codec.OpSetMeta, codec.OpCopyKey:
			pops = true
		case codec.OpFlushDB, codec.OpFlushAll, codec.OpSwapDB:
			// Every waiter of the dbs: flushed keys end their group
			// readers' waits, swapped ones may now hold entries or
			// elements (Redis's SWAPDB serves the clients blocked on keys
			// of either db).
			var dbs [2]uint8
			switch e.Op {
			case codec.OpFlushDB:
				db := edb.at(i)
				dbs = [2]uint8{db, db}
			case codec.OpSwapDB:
				dbs = [2]uint8{e.DB, e.Args[0][0]}
			}
			for k, byQueue := range c.queues {
				if e.Op == codec.OpFlushAll || k.db == dbs[0] || k.db == dbs[1] {
					for q := range byQueue {
						c.serveLocked(v, k, q, record)
					}
				}
			}
			primed = false
			continue
		default:
			continue
		}
		k := waitKey{edb.at(i), string(e.Key)}
		if primed && k == last && pops {
			continue // served already for this key
		}
		last, primed = k, true
		for q := range c.queues[k] {
			if !pops || q.pop {
				c.serveLocked(v, k, q, record)
			}
		}
	}
}

// serveLocked tries the consumers of queue q on k in arrival order until
// one gets nothing: the ones after it, reading the same group's new
// entries or popping the same list, would get nothing too. c.mu must be
// held.
func (c *consumers) serveLocked(v *materialize.View, k waitKey, q waitQueue, record func(materialize.Served)) {
	for {
		ws := c.queues[k][q]
		if len(ws) == 0 {
			return
		}
		w := ws[0]
		if w.ctx.Err() != nil {
			c.removeLocked(w) // the client left: deliver nothing to it
			continue
		}
		events, ok := w.deliver(v, []byte(k.key))
		if !ok {
			if len(events) > 0 {
				// Entries not yet due that the read passed and parked
				// (delayed delivery): recorded, and the client stays
				// queued. The record's own wake tries the queue again.
				record(materialize.Served{Events: events, Done: func(uint64, error) {}})
			}
			return
		}
		c.removeLocked(w)
		w.served = true
		record(materialize.Served{Events: events, Done: func(seq uint64, err error) {
			if err != nil {
				c.log("blocked client's write failed", "err", err)
				w.res <- waitResult{err: errInternal}
				return
			}
			w.res <- waitResult{seq: seq, events: events}
		}})
	}
}
