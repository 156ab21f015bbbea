package broker

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/command/reply"
)

// Client-side caching (CLIENT TRACKING), as Redis 7.0's tracking.c
// (docs/client-tracking.md).
//
// Default mode: the keys a tracking client reads with a read-only command
// are remembered in the tracking table (key name → clients, whatever the
// db, as in Redis) before the command reads them; the first committed
// change of such a key sends each of those clients one invalidation and
// forgets the key. BCAST mode: every committed change of a key under one of
// the client's prefixes sends an invalidation, with nothing remembered.
// FLUSHDB and FLUSHALL send every tracking client a null invalidation.
//
// Invalidations are derived from the committed change events (invalidate),
// after the commit is visible: a client that reads a key after an
// invalidation reads the new value. They are pushes (`invalidate`) on
// RESP3 connections, and messages on the __redis__:invalidate channel for a
// RESP2 redirection target in the subscribed state.

// trackingChannel is the channel a RESP2 redirection target receives
// invalidations on.
const trackingChannel = "__redis__:invalidate"

// DefaultTrackingTableMaxKeys is Redis's tracking-table-max-keys default:
// past it, keys are forgotten (with an invalidation to their clients).
const DefaultTrackingTableMaxKeys = 1_000_000

// tracker is the process's tracking table. Lock order: tracker.mu, then
// Server.mu, pubsub.mu, a conn's mu or a connPubSub's mu
// (docs/lock-order.md has every nesting).
type tracker struct {
	s       *Server
	clients atomic.Int32 // connections with tracking on

	mu    sync.Mutex
	table map[string]map[*conn]struct{} // key → default-mode clients that read it
	bcast map[*conn]struct{}            // BCAST-mode clients
	max   int
}

func newTracker(s *Server) *tracker {
	return &tracker{s: s, table: map[string]map[*conn]struct{}{}, bcast: map[*conn]struct{}{}, max: DefaultTrackingTableMaxKeys}
}

// connTracking is a connection's tracking state. Written by the connection
// under tracker.mu; read under it by invalidate. caching is the
// connection's own (CLIENT CACHING, for its next command).
type connTracking struct {
	on, bcast, optin, optout, noloop bool
	redirect                         int64 // client ID; 0: none
	target                           *conn // the redirection target, nil without
	broken                           bool  // the redirection target is gone
	prefixes                         []string
	caching                          bool
}

// trackingOptions is a parsed CLIENT TRACKING ON|OFF request.
type trackingOptions struct {
	on                           bool
	bcast, optin, optout, noloop bool
	redirect                     int64
	prefixes                     []string
}

// enable turns tracking on for c (CLIENT TRACKING ON), checking the
// options against each other and c's current mode as Redis does.
func (t *tracker) enable(c *conn, o trackingOptions) error {
	if !o.bcast && len(o.prefixes) > 0 {
		return errTrackingPrefixNeedsBcast
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	cur := &c.trk
	if cur.on && cur.bcast != o.bcast {
		return errTrackingSwitchBcast
	}
	if o.bcast && (o.optin || o.optout) {
		return errTrackingBcastOpt
	}
	if o.optin && o.optout {
		return errTrackingOptInOut
	}
	if cur.on && ((o.optin && cur.optout) || (o.optout && cur.optin)) {
		return errTrackingSwitchOpt
	}
	if o.bcast {
		if err := checkPrefixes(cur, o.prefixes); err != nil {
			return err
		}
	}
	var target *conn
	if o.redirect != 0 {
		if target = t.s.clientByID(o.redirect); target == nil {
			return errTrackingNoRedirect
		}
	}
	// Invalidations reach c (RESP3), or its redirection target, through
	// their pushes.
	t.s.pubsub.mu.Lock()
	c.pubSubLocked()
	if target != nil {
		target.pubSubLocked()
	}
	t.s.pubsub.mu.Unlock()
	if !cur.on {
		t.clients.Add(1)
	}
	cur.on = true
	cur.bcast = o.bcast
	cur.optin, cur.optout, cur.noloop = o.optin, o.optout, o.noloop
	cur.redirect, cur.target, cur.broken = o.redirect, target, false
	if o.bcast {
		if len(o.prefixes) == 0 && len(cur.prefixes) == 0 {
			cur.prefixes = []string{""}
		}
		cur.prefixes = append(cur.prefixes, o.prefixes...)
		slices.Sort(cur.prefixes) // Redis's prefix table is a radix tree: sent in byte order
		t.bcast[c] = struct{}{}
	}
	return nil
}

// checkPrefixes refuses prefixes that overlap (one is a prefix of the
// other) with c's or with each other, with Redis's messages.
func checkPrefixes(cur *connTracking, ps []string) error {
	overlap := func(a, b string) bool { return strings.HasPrefix(a, b) || strings.HasPrefix(b, a) }
	for i, p := range ps {
		for _, q := range cur.prefixes {
			if overlap(p, q) {
				return errTrackingPrefixExisting(p, q)
			}
		}
		for _, q := range ps[i+1:] {
			if overlap(p, q) {
				return errTrackingPrefixOther(p, q)
			}
		}
	}
	return nil
}

// disable turns tracking off for c (CLIENT TRACKING OFF, RESET, the
// connection closing). Keys it read stay in the table until they change,
// as in Redis; it gets nothing for them.
func (t *tracker) disable(c *conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c.trk.on {
		t.clients.Add(-1)
	}
	delete(t.bcast, c)
	c.trk = connTracking{}
}

// remember records, before a read-only command reads them, the keys a
// default-mode tracking client reads (Redis's trackingRememberKeys, with
// OPTIN/OPTOUT and CLIENT CACHING). Run on c's goroutine (or its EXEC's).
func (t *tracker) remember(c *conn, cmd *cmdSpec, args [][]byte) {
	trk := &c.trk
	if !trk.on || trk.bcast || cmd.flags&flagReadonly == 0 {
		return
	}
	if (trk.optin && !trk.caching) || (trk.optout && trk.caching) {
		return
	}
	keys := commandKeys(cmd, args)
	if len(keys) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, k := range keys {
		cs := t.table[string(k)]
		if cs == nil {
			cs = map[*conn]struct{}{}
			t.table[string(k)] = cs
		}
		cs[c] = struct{}{}
	}
	for t.max > 0 && len(t.table) > t.max {
		for k := range t.table { // a random key, as Redis evicts
			t.invalidateKeyLocked(nil, k)
			break
		}
	}
}

// maxKeys is tracking-table-max-keys (0: no bound).
func (t *tracker) maxKeys() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.max
}

// setMaxKeys sets tracking-table-max-keys; the table shrinks to it at the
// next key remembered, as in Redis.
func (t *tracker) setMaxKeys(n int) {
	t.mu.Lock()
	t.max = n
	t.mu.Unlock()
}

// invalidate sends the invalidations of committed events; origin is the
// client whose command made them (for NOLOOP), nil for active expiry.
func (t *tracker) invalidate(origin *conn, events []codec.Event) {
	if t.clients.Load() == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var bkeys []string // keys for the BCAST clients
	last := ""
	for i, e := range events {
		switch e.Op {
		case codec.OpFlushDB, codec.OpFlushAll:
			t.flushLocked()
			continue
		case codec.OpGroupSet, codec.OpGroupDel, codec.OpConsumerSet, codec.OpConsumerDel,
			codec.OpPELSet, codec.OpPELDel, codec.OpTTLDel, codec.OpSwapDB, codec.OpZRanks:
			// Consumer-group state and index upkeep: Redis's XGROUP,
			// XREADGROUP, XACK, XCLAIM do not invalidate; SWAPDB neither.
			continue
		}
		k := string(e.Key)
		if i > 0 && k == last {
			continue
		}
		last = k
		t.invalidateKeyLocked(origin, k)
		if len(t.bcast) > 0 {
			bkeys = append(bkeys, k)
		}
	}
	if len(bkeys) > 0 {
		t.broadcastLocked(origin, bkeys)
	}
}

// invalidateKeys is invalidate for keys deleted by active expiry.
func (t *tracker) invalidateKeys(keys []string) {
	if t.clients.Load() == 0 || len(keys) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, k := range keys {
		t.invalidateKeyLocked(nil, k)
	}
	if len(t.bcast) > 0 {
		t.broadcastLocked(nil, keys)
	}
}

// invalidateKeyLocked sends key's invalidation to the default-mode clients
// that read it and forgets it. t.mu must be held.
func (t *tracker) invalidateKeyLocked(origin *conn, key string) {
	cs, ok := t.table[key]
	if !ok {
		return
	}
	delete(t.table, key)
	for c := range cs {
		if !c.trk.on || c.trk.bcast || (c.trk.noloop && c == origin) {
			continue
		}
		t.sendLocked(c, []string{key}, false)
	}
}

// broadcastLocked sends the BCAST clients the keys under their prefixes:
// one message per matching prefix, as Redis's per-prefix batches. t.mu
// must be held.
func (t *tracker) broadcastLocked(origin *conn, keys []string) {
	for c := range t.bcast {
		if c.trk.noloop && c == origin {
			continue
		}
		for _, p := range c.trk.prefixes {
			var match []string
			for _, k := range keys {
				if strings.HasPrefix(k, p) {
					match = append(match, k)
				}
			}
			if len(match) > 0 {
				t.sendLocked(c, match, false)
			}
		}
	}
}

// flushLocked sends every tracking client the null invalidation and
// empties the table (FLUSHDB, FLUSHALL). t.mu must be held.
func (t *tracker) flushLocked() {
	clear(t.table)
	t.s.mu.Lock()
	conns := make([]*conn, 0, len(t.s.conns))
	for c := range t.s.conns {
		conns = append(conns, c)
	}
	t.s.mu.Unlock()
	for _, c := range conns {
		if c.trk.on {
			t.sendLocked(c, nil, true)
		}
	}
}

// sendLocked sends one invalidation of keys (null with flush) for
// tracking client c, to its redirection target or to itself (Redis's
// sendTrackingMessage). t.mu must be held.
func (t *tracker) sendLocked(c *conn, keys []string, flush bool) {
	target, redirected := c, false
	if c.trk.redirect != 0 {
		target, redirected = c.trk.target, true
		if target == nil || target.ctx.Err() != nil {
			c.trk.broken = true
			c.mu.Lock()
			proto := c.proto
			c.mu.Unlock()
			if proto == reply.RESP3 {
				t.push(c, func(w reply.Writer) {
					w.Push(2)
					w.BulkString("tracking-redir-broken")
					w.Int(c.trk.redirect)
				})
			}
			return
		}
	}
	target.mu.Lock()
	proto := target.proto
	target.mu.Unlock()
	value := func(w reply.Writer) {
		if flush {
			w.NullBulk()
			return
		}
		w.Array(len(keys))
		for _, k := range keys {
			w.BulkString(k)
		}
	}
	switch {
	case proto == reply.RESP3:
		t.push(target, func(w reply.Writer) {
			w.Push(2)
			w.BulkString("invalidate")
			value(w)
		})
	case redirected && target.subscribed():
		t.push(target, func(w reply.Writer) {
			w.Push(3)
			w.BulkString("message")
			w.BulkString(trackingChannel)
			value(w)
		})
	}
	// Otherwise a RESP2 connection cannot take pushes: nothing is sent,
	// as in Redis.
}

// push renders one push for c and queues it.
func (t *tracker) push(c *conn, render func(w reply.Writer)) {
	p := c.ps.Load()
	if p == nil {
		return
	}
	c.mu.Lock()
	proto := c.proto
	c.mu.Unlock()
	var s byteSink
	var scratch []byte
	render(reply.NewScratch(&s, &scratch, proto))
	p.push(c, s.b)
}

// commandKeys returns the keys of a request by the command table's key
// positions, or by the command's own rule for the commands whose keys move
// (numkeys, STREAMS); nil when they cannot be found (getKeys says why).
func commandKeys(cmd *cmdSpec, args [][]byte) [][]byte {
	keys, _ := getKeys(cmd, args)
	return keys
}

// getKeys is commandKeys for COMMAND GETKEYS: ok is false when a movable
// command's numkeys or STREAMS arguments do not hold (Redis's "Invalid
// arguments specified for command").
func getKeys(cmd *cmdSpec, args [][]byte) (keys [][]byte, ok bool) {
	numkeys := func(at, first int, extra ...[]byte) ([][]byte, bool) {
		if len(args) <= at {
			return nil, false
		}
		n, isInt := parseInt(args[at])
		if !isInt || n < 1 || n > int64(len(args)-first) {
			return nil, false
		}
		return append(extra, args[first:first+int(n)]...), true
	}
	switch cmd.name {
	case "sintercard", "zdiff", "zinter", "zintercard", "zunion", "lmpop", "zmpop":
		return numkeys(1, 2)
	case "blmpop", "bzmpop":
		return numkeys(2, 3)
	case "zunionstore", "zinterstore", "zdiffstore":
		return numkeys(2, 3, args[1])
	case "xread", "xreadgroup":
		for i := 1; i < len(args); i++ {
			if equalFold(args[i], "STREAMS") {
				rest := args[i+1:]
				if len(rest) == 0 || len(rest)%2 != 0 {
					return nil, false
				}
				return rest[:len(rest)/2], true
			}
		}
		return nil, false
	case "object":
		if len(args) > 2 {
			return args[2:3], true
		}
		return nil, false
	case "memory": // MEMORY USAGE key
		if len(args) > 2 && equalFold(args[1], "USAGE") {
			return args[2:3], true
		}
		return nil, true
	}
	if cmd.first <= 0 {
		return nil, true
	}
	last := cmd.last
	if last < 0 {
		last = len(args) + last
	}
	for i := cmd.first; i <= last && i < len(args); i += max(cmd.step, 1) {
		keys = append(keys, args[i])
	}
	return keys, true
}

// movableKeyCommands are the commands with keys and no key positions in
// the table, whose keys getKeys finds by rule; TestTrackingKeys checks
// every other read-only command has key positions or no keys.
var movableKeyCommands = []string{"sintercard", "zdiff", "zinter", "zintercard", "zunion", "lmpop", "zmpop",
	"blmpop", "bzmpop", "xread", "xreadgroup", "object", "memory", "zunionstore", "zinterstore", "zdiffstore"}

// clientByID returns the connection with that CLIENT ID, or nil.
func (s *Server) clientByID(id int64) *conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if c.id == id {
			return c
		}
	}
	return nil
}
