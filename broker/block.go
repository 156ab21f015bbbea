package broker

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/sediment-dev/sediment/codec"
)

// Blocking reads that consume nothing (XREAD BLOCK) wait in a registry of waiters
// keyed by (db, key). The order is: try; register and subscribe to the key's
// wake subject (confirmed by the NATS server); try again; wait. A write that
// commits after the second try publishes a wake the subscription receives; one
// that committed before it is seen by the try. So no wake-up is lost.
//
// On a wake, the registry tries each waiter of the key in arrival order,
// under its lock; every XREAD waiter gets the new entries. The attempt only
// reads: nothing under the registry lock calls into the write path.
// Blocked XREADGROUP clients, which consume, are served by the writer
// instead (serve.go).

// errWakeSubscribe begins the error that ends a blocking read whose key's
// wake subject could not be subscribed to (NATS down): no write could wake
// it, so it must not wait.
const errWakeSubscribe = "ERR blocking wait failed: cannot subscribe to wake-ups: "

// attempt runs a blocked command's read: true when the command is done
// (its result kept by the command), false to keep waiting.
type attempt func() bool

type waitKey struct {
	db  uint8
	key string
}

type waiter struct {
	keys []waitKey
	try  attempt
	done bool // set under registry.mu once served
	res  chan waitResult
}

// waitResult ends a wait: the change-log seq of the write that served it
// (0 for reads), or the error to reply instead.
type waitResult struct {
	seq    uint64
	events []codec.Event // a served client's committed events
	err    error
}

type keySub struct {
	refs  int
	sub   *nats.Subscription
	ready chan struct{} // closed once the subscription is confirmed
	err   error
}

// registry is the waiter registry: an in-memory index over NATS
// subscriptions, rebuilt as clients block; it holds no data.
type registry struct {
	w     *waker
	mu    sync.Mutex
	byKey map[waitKey][]*waiter // arrival order
	subs  map[waitKey]*keySub
}

func newRegistry(w *waker) *registry {
	return &registry{w: w, byKey: map[waitKey][]*waiter{}, subs: map[waitKey]*keySub{}}
}

// block waits until try succeeds, the timeout passes (0: forever) or ctx
// ends. It returns the result and true, or false on timeout/cancel.
// The caller has already tried once and found nothing.
func (r *registry) block(ctx context.Context, keys []waitKey, timeout time.Duration, try attempt) (waitResult, bool) {
	w := &waiter{keys: keys, try: try, res: make(chan waitResult, 1)}
	subs := r.register(w)
	for _, ks := range subs {
		select {
		case <-ks.ready:
		case <-ctx.Done():
			return r.cancel(w) // served meanwhile: keep the result
		}
		if ks.err != nil {
			// No wake would reach this waiter: it must not wait forever.
			if res, served := r.cancel(w); served {
				return res, true
			}
			msg := strings.NewReplacer("\r", " ", "\n", " ").Replace(ks.err.Error())
			return waitResult{err: wireError(errWakeSubscribe + msg)}, true
		}
	}
	// Re-check now that wakes for every key will reach us.
	r.mu.Lock()
	if !w.done {
		r.tryLocked(w)
	}
	r.mu.Unlock()

	if res, ok := await(ctx, w.res, timeout); ok {
		return res, true
	}
	if res, served := r.cancel(w); served {
		return res, true
	}
	return waitResult{}, false
}

// await receives from res until the timeout passes (0: forever) or ctx
// ends; ok is false when nothing was received.
func await(ctx context.Context, res <-chan waitResult, timeout time.Duration) (waitResult, bool) {
	var timer <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timer = t.C
	}
	select {
	case r := <-res:
		return r, true
	case <-timer:
	case <-ctx.Done():
	}
	return waitResult{}, false
}

// register adds w under each key and returns the key subscriptions to wait on.
func (r *registry) register(w *waiter) []*keySub {
	r.mu.Lock()
	defer r.mu.Unlock()
	subs := make([]*keySub, 0, len(w.keys))
	for _, k := range w.keys {
		r.byKey[k] = append(r.byKey[k], w)
		ks := r.subs[k]
		if ks == nil {
			ks = &keySub{ready: make(chan struct{})}
			r.subs[k] = ks
			go r.subscribe(k, ks)
		}
		ks.refs++
		subs = append(subs, ks)
	}
	return subs
}

// subscribe subscribes to k's wake subject and confirms it with the server.
func (r *registry) subscribe(k waitKey, ks *keySub) {
	defer close(ks.ready)
	sub, err := r.w.nc.Subscribe(wakeSubject(k.db, []byte(k.key)), func(*nats.Msg) { r.serve(k) })
	// While NATS is away nats.go subscribes again once it is back, and
	// until then this process's writes wake the waiter locally: no
	// confirmation to wait for.
	if err == nil && !r.w.away() {
		if err = r.w.nc.Flush(); err != nil && r.w.away() {
			err = nil
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ks.sub, ks.err = sub, err
	if err != nil {
		r.w.log.Warn("wake subscribe failed", "err", err)
		if r.subs[k] == ks {
			delete(r.subs, k) // the next waiter on k subscribes again
		}
	}
	if ks.refs == 0 && sub != nil { // every waiter left while we subscribed
		sub.Unsubscribe()
	}
}

// waiting reports whether a waiter is registered on k.
func (r *registry) waiting(k waitKey) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byKey[k]) > 0
}

// any reports whether any waiter is registered.
func (r *registry) any() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byKey) > 0
}

// cancel removes w. If it was served meanwhile, it returns that result.
func (r *registry) cancel(w *waiter) (waitResult, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w.done {
		return <-w.res, true
	}
	w.done = true
	r.removeLocked(w)
	return waitResult{}, false
}

// removeLocked drops w from every key list and releases subscriptions.
// r.mu must be held.
func (r *registry) removeLocked(w *waiter) {
	for _, k := range w.keys {
		list := r.byKey[k]
		for i, o := range list {
			if o == w {
				list = append(list[:i:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(r.byKey, k)
		} else {
			r.byKey[k] = list
		}
		if ks := r.subs[k]; ks != nil {
			ks.refs--
			if ks.refs == 0 {
				delete(r.subs, k)
				if ks.sub != nil {
					ks.sub.Unsubscribe()
				}
			}
		}
	}
}

// tryLocked runs w's attempt and, if it finishes, hands w its result.
// r.mu must be held.
func (r *registry) tryLocked(w *waiter) {
	if !w.try() {
		return
	}
	w.done = true
	r.removeLocked(w)
	w.res <- waitResult{}
}

// serve tries the waiters on k in arrival order.
func (r *registry) serve(k waitKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range append([]*waiter(nil), r.byKey[k]...) {
		if !w.done {
			r.tryLocked(w)
		}
	}
}

// serveAll tries every waiter (after FLUSHDB/FLUSHALL).
func (r *registry) serveAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[*waiter]bool{}
	for _, list := range r.byKey {
		for _, w := range append([]*waiter(nil), list...) {
			if !w.done && !seen[w] {
				seen[w] = true
				r.tryLocked(w)
			}
		}
	}
}
