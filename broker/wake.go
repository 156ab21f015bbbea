package broker

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/sediment-dev/sediment/codec"
)

// Wake-up subjects:
//
//	sediment.wake.<db>.<hex(key)>   a key that may unblock readers changed
//	sediment.wake.<db>.h<sha256>    the same, for keys longer than 64 bytes
//	sediment.wake.flush             FLUSHDB/FLUSHALL: every waiter re-checks
//
// The payload is empty. A wake is only a hint: the woken waiter re-reads
// Pebble. docs/architecture.md describes the protocol.
const (
	wakePrefix   = "sediment.wake."
	wakeFlush    = "sediment.wake.flush"
	maxHexKeyLen = 64
)

// wakeSubject returns the wake-up subject of (db, key).
func wakeSubject(db uint8, key []byte) string {
	b := make([]byte, 0, len(wakePrefix)+4+2*maxHexKeyLen+1)
	b = append(b, wakePrefix...)
	b = strconv.AppendUint(b, uint64(db), 10)
	b = append(b, '.')
	if len(key) > maxHexKeyLen {
		sum := sha256.Sum256(key)
		b = append(b, 'h')
		return string(hex.AppendEncode(b, sum[:]))
	}
	b = append(b, 'k') // a token is never empty, even for the empty key
	return string(hex.AppendEncode(b, key))
}

// waker connects the waiter registry to NATS.
type waker struct {
	nc     *nats.Conn
	ns     *natsserver.Server // embedded server, nil with an external URL
	log    *slog.Logger
	reg    *registry
	flushS *nats.Subscription
	// logicalDB maps an event's storage db to its logical db, which wake
	// subjects name (materialize.Store.LogicalDB).
	logicalDB func(storage uint8) uint8
}

// newWaker connects to url, or starts an embedded in-process NATS server
// (no listening port) when url is empty.
func newWaker(url string, log *slog.Logger) (*waker, error) {
	w := &waker{log: log}
	var opts []nats.Option
	opts = append(opts, nats.Name("sediment"), nats.MaxReconnects(-1))
	if url == "" {
		ns, err := natsserver.NewServer(&natsserver.Options{DontListen: true, NoLog: true, NoSigs: true})
		if err != nil {
			return nil, fmt.Errorf("broker: embedded NATS: %w", err)
		}
		ns.Start()
		if !ns.ReadyForConnections(10 * time.Second) {
			ns.Shutdown()
			return nil, fmt.Errorf("broker: embedded NATS did not start")
		}
		w.ns = ns
		opts = append(opts, nats.InProcessServer(ns))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		if w.ns != nil {
			w.ns.Shutdown()
		}
		return nil, fmt.Errorf("broker: connect NATS %q: %w", url, err)
	}
	w.nc = nc
	w.reg = newRegistry(w)
	w.flushS, err = nc.Subscribe(wakeFlush, func(*nats.Msg) { w.reg.serveAll() })
	if err == nil {
		err = nc.Flush()
	}
	if err != nil {
		w.close()
		return nil, fmt.Errorf("broker: subscribe %s: %w", wakeFlush, err)
	}
	if w.ns != nil {
		log.Info("NATS started", "embedded", true, "listen", "in-process only")
	} else {
		log.Info("NATS connected", "url", nc.ConnectedUrlRedacted())
	}
	return w, nil
}

func (w *waker) close() {
	if w.nc != nil {
		w.nc.Drain()
		w.nc.Close()
	}
	if w.ns != nil {
		w.ns.Shutdown()
		w.ns.WaitForShutdown()
	}
}

// publishKey publishes a wake for (db, key). With the embedded NATS server,
// which accepts no other process, only this process's registry can have
// subscribed, so the wake is published only when it holds a waiter for the
// key: a registered waiter is in the registry before it re-checks Pebble, so
// a write committed after that check finds it here.
func (w *waker) publishKey(db uint8, key []byte) {
	if w.ns != nil && !w.reg.waiting(waitKey{db, string(key)}) {
		return
	}
	if err := w.nc.Publish(wakeSubject(db, key), nil); err != nil {
		w.log.Warn("wake publish failed", "err", err)
	}
}

// publishEvents publishes one wake per distinct key whose events may unblock
// a reader: new entries, deleted keys and groups, flushes.
func (w *waker) publishEvents(events []codec.Event) {
	var (
		last   codec.Event
		primed bool
	)
	edb := newEventDBs(events, w.logicalDB)
	for i, e := range events {
		switch e.Op {
		case codec.OpXAdd, codec.OpDelKey, codec.OpGroupDel:
		case codec.OpFlushDB, codec.OpFlushAll, codec.OpSwapDB:
			if w.ns != nil && !w.reg.any() {
				continue
			}
			if err := w.nc.Publish(wakeFlush, nil); err != nil {
				w.log.Warn("wake publish failed", "err", err)
			}
			continue
		default:
			continue
		}
		if primed && last.DB == e.DB && string(last.Key) == string(e.Key) {
			continue
		}
		last, primed = e, true
		// Subjects name logical dbs. A SWAPDB committed since these events
		// may make this the wrong one: its own wake (above) wakes every
		// waiter to re-check.
		w.publishKey(edb.at(i), e.Key)
	}
}
