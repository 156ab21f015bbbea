package broker

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
)

// Blocked consumers (XREADGROUP BLOCK with '>' on every stream) are served
// by the writer, as Redis serves clients blocked on a key right after the
// command that made the key ready and before any later command is decided:
//
//  1. The blocked command's first attempt is a write decision. When it
//     delivers nothing, that same decision queues the client here, so no
//     write can commit between the check and the queueing.
//  2. After each write that adds entries to a key (or deletes the key or a
//     group, or flushes), the writer goroutine calls consumers.ready with a
//     view that sees the write. For each consumer group with clients queued
//     on the key, it runs the clients' decisions in arrival order until one
//     gets nothing: one client per available entry, and one extra attempt
//     per group, however many clients wait. Each delivery is a change-log
//     record of its own in the same commit group.
//  3. Once the group commits, the writer hands each served client its
//     reply and sequence number through the client's channel.
//
// Lock order: the writer (materialize.Store's commit) is taken before
// consumers.mu; nothing holding consumers.mu calls into the write path.
// XREAD clients, which consume nothing, wait in the registry (block.go) and
// are woken through NATS.

// consumerWaiter is one blocked XREADGROUP client.
type consumerWaiter struct {
	keys  []waitKey
	group string
	ctx   context.Context // the client's: ended when it disconnects
	// deliver is the command's decision on a wake (command.Waiter.Serve):
	// ok false means nothing to deliver yet (and no events); otherwise the
	// command has its result (entries or an error such as UNBLOCKED) and
	// events are what it records.
	deliver func(v *materialize.View) (events []codec.Event, ok bool)
	done    bool            // set under consumers.mu once out of the queues
	served  bool            // set under consumers.mu when a result is on its way to res
	res     chan waitResult // capacity 1
}

// consumers holds the queues of blocked consumers: per key, per group, in
// arrival order. It is an in-memory index; FLUSHDB/FLUSHALL serve every
// waiter of the flushed keys (with an error) and so empty it.
type consumers struct {
	mu     sync.Mutex
	queues map[waitKey]map[string][]*consumerWaiter
	n      atomic.Int64 // queued waiters: the writer's fast path when 0
	log    func(msg string, args ...any)
}

func newConsumers(log func(string, ...any)) *consumers {
	return &consumers{queues: map[waitKey]map[string][]*consumerWaiter{}, log: log}
}

// queueLocked adds w behind the waiters already queued on its keys.
// c.mu must be held.
func (c *consumers) queueLocked(w *consumerWaiter) {
	for _, k := range w.keys {
		byGroup := c.queues[k]
		if byGroup == nil {
			byGroup = map[string][]*consumerWaiter{}
			c.queues[k] = byGroup
		}
		byGroup[w.group] = append(byGroup[w.group], w)
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
		byGroup := c.queues[k]
		q := byGroup[w.group]
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
			delete(byGroup, w.group)
			if len(byGroup) == 0 {
				delete(c.queues, k)
			}
		} else {
			byGroup[w.group] = q
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
// queued on the keys whose events may make them ready. It runs on the
// writer goroutine.
func (c *consumers) ready(v *materialize.View, events []codec.Event, record func(materialize.Served)) {
	if c.n.Load() == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var (
		last   waitKey
		primed bool
	)
	edb := newEventDBs(events, v.LogicalDB)
	for i, e := range events {
		switch e.Op {
		case codec.OpXAdd, codec.OpDelKey, codec.OpGroupDel:
			k := waitKey{edb.at(i), string(e.Key)}
			if primed && k == last {
				continue // served already for this key
			}
			last, primed = k, true
			for group := range c.queues[k] {
				c.serveLocked(v, k, group, record)
			}
		case codec.OpFlushDB, codec.OpFlushAll, codec.OpSwapDB:
			// Every waiter of the dbs: flushed keys end their waits,
			// swapped ones may now hold entries (Redis's SWAPDB serves
			// the clients blocked on keys of either db).
			var dbs [2]uint8
			switch e.Op {
			case codec.OpFlushDB:
				db := edb.at(i)
				dbs = [2]uint8{db, db}
			case codec.OpSwapDB:
				dbs = [2]uint8{e.DB, e.Args[0][0]}
			}
			for k, byGroup := range c.queues {
				if e.Op == codec.OpFlushAll || k.db == dbs[0] || k.db == dbs[1] {
					for group := range byGroup {
						c.serveLocked(v, k, group, record)
					}
				}
			}
			primed = false
		}
	}
}

// serveLocked tries the consumers of group queued on k in arrival order
// until one gets nothing: the ones after it, reading the same group's new
// entries, would get nothing too. c.mu must be held.
func (c *consumers) serveLocked(v *materialize.View, k waitKey, group string, record func(materialize.Served)) {
	for {
		q := c.queues[k][group]
		if len(q) == 0 {
			return
		}
		w := q[0]
		if w.ctx.Err() != nil {
			c.removeLocked(w) // the client left: deliver nothing to it
			continue
		}
		events, ok := w.deliver(v)
		if !ok {
			return
		}
		c.removeLocked(w)
		w.served = true
		record(materialize.Served{Events: events, Done: func(seq uint64, err error) {
			if err != nil {
				c.log("blocked XREADGROUP failed", "err", err)
				w.res <- waitResult{err: errInternal}
				return
			}
			w.res <- waitResult{seq: seq}
		}})
	}
}
