package broker

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
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
	nc *nats.Conn
	ns *natsserver.Server // embedded server, nil with an external URL
	// local: the embedded server accepts no other process (no listen
	// address), so only this process's registry can subscribe to wakes.
	local  bool
	log    *slog.Logger
	reg    *registry
	flushS *nats.Subscription
	// logicalDB maps an event's storage db to its logical db, which wake
	// subjects name (materialize.Store.LogicalDB).
	logicalDB func(storage uint8) uint8
}

// natsFeedAuth is the embedded NATS server's access control
// (Options.NATSFeedPassword): the "feed" user may subscribe to the change
// feed and to reply inboxes, and publish only replay and snapshot
// requests.
type natsFeedAuth struct {
	subjects string // <prefix>.chg.>
	replay   string // <prefix>.replay
	snapshot string // <prefix>.snapshot
	password string
}

// newWaker connects to url, or starts an embedded NATS server when url is
// empty: listening on listen (host:port), or in-process only when listen
// is empty; with auth, the embedded server admits the feed user and this
// process's own connection only; with jsDir, the embedded server runs
// JetStream, storing in jsDir/jetstream (the change feed's capture).
func newWaker(url, listen string, auth *natsFeedAuth, jsDir string, log *slog.Logger, extra ...nats.Option) (*waker, error) {
	w := &waker{log: log}
	var opts []nats.Option
	opts = append(opts, nats.Name("sediment"), nats.MaxReconnects(-1),
		// While an external NATS server is away, this process's waiters
		// are woken locally (publishKey); a wake NATS took but never
		// delivered back before the connection dropped is covered by
		// re-checking every waiter once it is back.
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil { // nil: closed at shutdown
				w.log.Warn("NATS disconnected: this server's blocked clients are woken locally until it is back", "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			w.log.Info("NATS reconnected", "url", nc.ConnectedUrlRedacted())
			if w.reg != nil {
				w.reg.serveAll()
			}
		}))
	opts = append(opts, extra...)
	if url == "" {
		so := &natsserver.Options{DontListen: true, NoLog: true, NoSigs: true}
		if jsDir != "" {
			so.JetStream, so.StoreDir = true, jsDir
		}
		if listen != "" {
			host, port, err := net.SplitHostPort(listen)
			if err != nil {
				return nil, fmt.Errorf("broker: NATS listen address %q: %w", listen, err)
			}
			p, err := strconv.Atoi(port)
			if err != nil {
				return nil, fmt.Errorf("broker: NATS listen address %q: bad port", listen)
			}
			so.DontListen, so.Host, so.Port = false, host, p
		}
		if auth != nil {
			var b [24]byte
			rand.Read(b[:])
			self := hex.EncodeToString(b[:])
			so.Users = []*natsserver.User{
				{Username: "sediment", Password: self},
				{Username: "feed", Password: auth.password, Permissions: &natsserver.Permissions{
					Publish:   &natsserver.SubjectPermission{Allow: []string{auth.replay, auth.snapshot}},
					Subscribe: &natsserver.SubjectPermission{Allow: []string{auth.subjects, "_INBOX.>"}},
				}},
			}
			opts = append(opts, nats.UserInfo("sediment", self))
		}
		ns, err := natsserver.NewServer(so)
		if err != nil {
			return nil, fmt.Errorf("broker: embedded NATS: %w", err)
		}
		ns.Start()
		if !ns.ReadyForConnections(10 * time.Second) {
			ns.Shutdown()
			if listen != "" {
				return nil, fmt.Errorf("broker: embedded NATS did not start listening on %s (in use? --nats-listen off keeps it in-process)", listen)
			}
			return nil, fmt.Errorf("broker: embedded NATS did not start")
		}
		w.ns, w.local = ns, listen == ""
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
		where := "in-process only"
		if listen != "" {
			where = w.ns.ClientURL()
		}
		log.Info("NATS started", "embedded", true, "listen", where)
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

// publishKey publishes a wake for (db, key). With the embedded NATS server
// in-process only, only this process's registry can have subscribed, so
// the wake is published only when it holds a waiter for the key: a
// registered waiter is in the registry before it re-checks Pebble, so a
// write committed after that check finds it here. With the embedded server
// listening, other processes' waiters subscribe to it too: it is asked for
// interest in the subject (a waiter's subscription is confirmed before it
// re-checks Pebble, so the same holds).
func (w *waker) publishKey(db uint8, key []byte) bool {
	if w.local && !w.reg.waiting(waitKey{db, string(key)}) {
		return false
	}
	subj := wakeSubject(db, key)
	if w.ns != nil && !w.local && !w.ns.GlobalAccount().SubscriptionInterest(subj) {
		return false
	}
	if err := w.nc.Publish(subj, nil); err != nil {
		w.log.Warn("wake publish failed", "err", err)
	}
	if w.away() {
		w.reg.serve(waitKey{db, string(key)})
	}
	return true
}

// away reports whether the external NATS server is out of reach: its
// publishes wait in nats.go's reconnect buffer, so this process's waiters
// are woken directly (the embedded server is never away).
func (w *waker) away() bool { return w.ns == nil && !w.nc.IsConnected() }

// publishEvents publishes one wake per distinct key whose events may unblock
// a reader: new entries, deleted keys and groups, flushes. It returns how
// many it published (none for keys nobody waits on).
func (w *waker) publishEvents(events []codec.Event) (n int) {
	var (
		last   codec.Event
		primed bool
	)
	edb := newEventDBs(events, w.logicalDB)
	for i, e := range events {
		switch e.Op {
		case codec.OpXAdd, codec.OpDelKey, codec.OpGroupDel:
		case codec.OpFlushDB, codec.OpFlushAll, codec.OpSwapDB:
			if w.local && !w.reg.any() {
				continue
			}
			if err := w.nc.Publish(wakeFlush, nil); err != nil {
				w.log.Warn("wake publish failed", "err", err)
			}
			if w.away() {
				w.reg.serveAll()
			}
			n++
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
		if w.publishKey(edb.at(i), e.Key) {
			n++
		}
	}
	return n
}
