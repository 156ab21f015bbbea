package broker

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/feed"
	"github.com/sediment-dev/sediment/materialize"
)

// CHANGES SNAPSHOT: the state of the keys a pattern selects, pinned at one
// committed sequence S and read page by page as change-feed events, so
// that a consumer applies the snapshot and then the records after S with
// one code path (docs/change-feed.md, "Snapshot, then changes").
//
// A snapshot is a server-side session: a pinned Pebble state
// (materialize.PinnedState) and a hold on the change log from S+1
// (materialize.LogHold), so that the records that follow the snapshot
// stay while it is read. Sessions are bounded in number
// (snapshotMaxOpen), expire after snapshotIdle without a page, and are
// closed at shutdown.

const (
	// snapshotMaxOpen is how many snapshots may be open at once.
	snapshotMaxOpen = 16
	// snapshotIdle is how long a snapshot stays open with no page read;
	// also how long the change log from S+1 is held after its last page.
	snapshotIdle = 60 * time.Second
	// snapshotDefault is how many events a page holds without COUNT.
	snapshotDefault = 100
	// snapshotReplyBytes bounds the payloads of a RESP page: it ends
	// before an event that would take it past this (its first event
	// comes whole, however large).
	snapshotReplyBytes = 16 << 20
	// snapshotReplyHead bounds the bytes around the events of a NATS
	// reply: {"seq":N,"cursor":"N","events":[...]}.
	snapshotReplyHead = 96
)

func errTooManySnapshots(n int, idle time.Duration) wireError {
	return wireError(fmt.Sprintf("ERR too many open snapshots (%d): read one to its end, or wait for one to expire (%v idle)", n, idle))
}

// errNoSnapshot is the reply to a cursor that names no open snapshot.
const errNoSnapshot wireError = "ERR no such snapshot cursor: snapshots expire after 60 s without a page, and end with their last page"

// errSnapshotsClosed: the server is shutting down.
const errSnapshotsClosed wireError = "ERR the server is shutting down"

// snapshots are a server's open snapshots. The zero value is ready.
//
// Lock order: gate, then a session's mu, then mu.
type snapshots struct {
	// gate is read-held by every request, and held by closeAll, so that no
	// request pins a state once closeAll began or uses one it closed.
	gate sync.RWMutex

	mu       sync.Mutex
	byCursor map[uint64]*snapSession // the cursors of a session: its next page's, and its last page's (a retry)
	open     int                     // sessions open or being opened
	closed   bool
	next     uint64 // the last cursor given

	// max and idle are snapshotMaxOpen and snapshotIdle unless a test
	// sets them (before the first snapshot).
	max  int
	idle time.Duration
}

// snapSession is one open snapshot.
type snapSession struct {
	r    *snapshots
	mu   sync.Mutex // one page at a time; before r.mu
	st   *materialize.PinnedState
	snap *feed.Snapshot
	hold *materialize.LogHold
	// cur is the cursor of the next page, read from pos; prev the cursor
	// of the page last read, from prevPos: asked again (its reply was
	// lost), it is read again.
	cur, prev    uint64
	pos, prevPos feed.SnapshotPos
	used         time.Time
	timer        *time.Timer
	closed       bool
}

// snapPage is one page of a snapshot: the snapshot's sequence, the cursor
// of the next page (0: none) and the events.
type snapPage struct {
	seq      uint64
	cursor   uint64
	payloads [][]byte
}

func (r *snapshots) limits() (int, time.Duration) {
	return cmp.Or(r.max, snapshotMaxOpen), cmp.Or(r.idle, snapshotIdle)
}

// start opens a snapshot of s's store and reads its first page.
func (r *snapshots) start(s *Server, f feed.SnapshotFilter, count, maxBytes int, truncate bool) (snapPage, error) {
	r.gate.RLock()
	defer r.gate.RUnlock()
	maxOpen, idle := r.limits()
	r.mu.Lock()
	switch {
	case r.closed:
		r.mu.Unlock()
		return snapPage{}, errSnapshotsClosed
	case r.open >= maxOpen:
		r.mu.Unlock()
		return snapPage{}, errTooManySnapshots(maxOpen, idle)
	}
	r.open++
	r.mu.Unlock()
	// The hold comes first, from a record at or before S+1 (the last
	// committed before the pin), then moves up to S+1: taken after the
	// pin, a short retention could drop S+1 in between.
	hold := s.store.HoldLog(s.store.LastSeq() + 1)
	st, err := s.store.PinState()
	if err != nil {
		hold.Release()
		r.release()
		return snapPage{}, err
	}
	hold.Advance(st.Seq() + 1)
	sess := &snapSession{r: r, st: st, snap: feed.NewSnapshot(st, s.opts.FeedPrefix, f),
		hold: hold, used: time.Now()}
	next, payloads, err := sess.snap.Page(feed.SnapshotPos{}, count, maxBytes, truncate)
	if err != nil || next.Done() {
		sess.end(err == nil, idle)
		return snapPage{seq: st.Seq(), payloads: payloads}, err
	}
	// Made whole, under its lock, before its cursor is in the map: another
	// client may ask for the cursor at once, and its timer reads it.
	sess.mu.Lock()
	r.mu.Lock()
	if r.byCursor == nil {
		r.byCursor = map[uint64]*snapSession{}
	}
	cursor := r.cursorLocked()
	sess.cur, sess.pos = cursor, next
	sess.timer = time.AfterFunc(idle, sess.expire)
	r.byCursor[cursor] = sess
	r.mu.Unlock()
	sess.mu.Unlock()
	return snapPage{seq: st.Seq(), cursor: cursor, payloads: payloads}, nil
}

// cursorLocked returns a new cursor: random, then counting, below 2^53
// (a JSON number reads it exactly). r.mu held.
func (r *snapshots) cursorLocked() uint64 {
	if r.next == 0 {
		r.next = rand.Uint64N(1 << 40)
	}
	r.next = r.next%(1<<53-1) + 1
	return r.next
}

// release gives back a place taken by start.
func (r *snapshots) release() {
	r.mu.Lock()
	r.open--
	r.mu.Unlock()
}

// page reads the page of cursor: the next page of its snapshot, or the
// page last read again when cursor is that page's (a retry).
func (r *snapshots) page(cursor uint64, count, maxBytes int, truncate bool) (snapPage, error) {
	r.gate.RLock()
	defer r.gate.RUnlock()
	_, idle := r.limits()
	r.mu.Lock()
	sess := r.byCursor[cursor]
	r.mu.Unlock()
	if sess == nil {
		return snapPage{}, errNoSnapshot
	}
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.closed || (cursor != sess.cur && cursor != sess.prev) {
		return snapPage{}, errNoSnapshot // expired meanwhile
	}
	from := sess.pos
	if cursor != sess.cur {
		from = sess.prevPos
	}
	sess.used = time.Now()
	next, payloads, err := sess.snap.Page(from, count, maxBytes, truncate)
	if err != nil {
		return snapPage{}, err
	}
	seq := sess.st.Seq()
	if next.Done() {
		sess.end(true, idle)
		return snapPage{seq: seq, payloads: payloads}, nil
	}
	r.mu.Lock()
	for _, c := range []uint64{sess.cur, sess.prev} {
		if c != cursor {
			delete(r.byCursor, c)
		}
	}
	sess.prev, sess.prevPos = cursor, from
	sess.cur, sess.pos = r.cursorLocked(), next
	r.byCursor[sess.cur] = sess
	r.mu.Unlock()
	sess.timer.Reset(idle)
	return snapPage{seq: seq, cursor: sess.cur, payloads: payloads}, nil // sess.mu held
}

// end closes the session: its cursors go, its pinned state is released,
// and its hold on the change log too, after grace when the snapshot was
// read to its end (the consumer goes on with the records after it), at
// once otherwise. sess.mu held, or sess not yet shared.
func (sess *snapSession) end(read bool, grace time.Duration) {
	if sess.closed {
		return
	}
	sess.closed = true
	if sess.timer != nil {
		sess.timer.Stop()
	}
	r := sess.r
	r.mu.Lock()
	if sess.cur != 0 && r.byCursor[sess.cur] == sess {
		delete(r.byCursor, sess.cur)
	}
	if sess.prev != 0 && r.byCursor[sess.prev] == sess {
		delete(r.byCursor, sess.prev)
	}
	r.open--
	r.mu.Unlock()
	sess.st.Close()
	if read && grace > 0 {
		time.AfterFunc(grace, sess.hold.Release)
	} else {
		sess.hold.Release()
	}
}

// expire ends the session when it has been idle for the idle time (its
// timer fired; a page read since has set the timer again).
func (sess *snapSession) expire() {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	_, idle := sess.r.limits()
	if sess.closed || time.Since(sess.used) < idle {
		return
	}
	sess.end(false, 0)
}

// closeAll ends every session and refuses new ones: at shutdown, before
// the store closes (its Close fails while a pinned state is open).
func (r *snapshots) closeAll() {
	r.gate.Lock()
	defer r.gate.Unlock()
	r.mu.Lock()
	r.closed = true
	open := map[*snapSession]bool{}
	for _, sess := range r.byCursor {
		open[sess] = true
	}
	r.mu.Unlock()
	for sess := range open {
		sess.mu.Lock()
		sess.end(false, 0)
		sess.mu.Unlock()
	}
}

// count returns the open snapshots.
func (r *snapshots) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.open
}

// CHANGES SNAPSHOT [MATCH pattern] [TYPE type] [DB db] [COUNT count]
// CHANGES SNAPSHOT CONTINUE cursor [COUNT count]
//
// The first form pins the committed state after one change-log record S
// and replies its first page: [S, cursor, [payload ...]], each payload a
// change-feed event (docs/change-feed.md) marked snapshot; the second
// replies the next page of the snapshot cursor names, in the same shape.
// cursor "0": the snapshot is over. COUNT bounds the events of a page
// (default 100, at most feed.SnapshotMax); MATCH is a glob on the key,
// TYPE the key's type, DB a logical db (all by default). The records from
// S+1 on (CHANGES FROM S+1, or the live feed's events with seq above S)
// follow the snapshot exactly.
func runChangesSnapshot(x *exec) error {
	args := x.args[2:]
	count := snapshotDefault
	var f feed.SnapshotFilter
	f.DB = -1
	cursor, cont := uint64(0), false
	if len(args) > 0 && equalFold(args[0], "CONTINUE") {
		if len(args) < 2 {
			return errWrongArgs("changes")
		}
		n, err := strconv.ParseUint(string(args[1]), 10, 64)
		if err != nil {
			return command.ErrInvalidCursor
		}
		cursor, cont, args = n, true, args[2:]
	}
	for i := 0; i < len(args); i += 2 {
		if i+1 >= len(args) {
			return errSyntax
		}
		v := args[i+1]
		switch {
		case equalFold(args[i], "COUNT"):
			n, ok := parseInt(v)
			if !ok || n < 1 {
				return errValueRange(1, feed.SnapshotMax)
			}
			count = int(min(n, feed.SnapshotMax))
		case cont:
			return errSyntax // the filters are the snapshot's, given when it began
		case equalFold(args[i], "MATCH"):
			f.Match = append([]byte{}, v...)
		case equalFold(args[i], "TYPE"):
			f.Type = command.Lower(v)
		case equalFold(args[i], "DB"):
			n, ok := parseInt(v)
			if !ok {
				return command.ErrNotInteger
			}
			if n < 0 || n >= int64(x.c.s.opts.Databases) {
				return command.ErrDBIndex
			}
			f.DB = int(n)
		default:
			return errSyntax
		}
	}
	var p snapPage
	var err error
	if cont {
		if cursor == 0 {
			return errNoSnapshot
		}
		p, err = x.c.s.snaps.page(cursor, count, snapshotReplyBytes, false)
	} else {
		p, err = x.c.s.snaps.start(x.c.s, f, count, snapshotReplyBytes, false)
	}
	if err != nil {
		return err
	}
	w := x.reply()
	w.Array(3)
	w.Int(int64(p.seq))
	w.BulkString(strconv.FormatUint(p.cursor, 10))
	w.Array(len(p.payloads))
	for _, b := range p.payloads {
		w.Bulk(b)
	}
	return nil
}

// snapshotRequest is the JSON body of a request on <prefix>.snapshot: a
// new snapshot (no cursor) with its filters, or the next page of one.
type snapshotRequest struct {
	Cursor string  `json:"cursor,omitempty"`
	Count  int     `json:"count,omitempty"`
	Match  *string `json:"match,omitempty"`
	Type   string  `json:"type,omitempty"`
	DB     *int    `json:"db,omitempty"`
}

// serveSnapshot answers requests on <prefix>.snapshot: CHANGES SNAPSHOT
// for nats.go programs. The reply is {"seq":S,"cursor":"C","events":[...]}
// within NATS's max_payload (an event too large for a message alone comes
// truncated), or {"error":"..."}.
func (s *Server) serveSnapshot() error {
	nc := s.wake.nc
	subject := cmp.Or(s.opts.FeedPrefix, feed.DefaultPrefix) + ".snapshot"
	sub, err := nc.Subscribe(subject, func(m *nats.Msg) {
		body := s.snapshotReply(m.Data, int(nc.MaxPayload())-snapshotReplyHead)
		if err := m.Respond(body); err != nil {
			s.opts.Logger.Warn("change feed: snapshot reply failed", "err", err, "bytes", len(body))
		}
	})
	if err != nil {
		return fmt.Errorf("broker: change feed snapshot subject: %w", err)
	}
	go func() {
		<-s.ctx.Done()
		sub.Unsubscribe()
	}()
	return nil
}

// snapshotReply answers one <prefix>.snapshot request.
func (s *Server) snapshotReply(data []byte, maxBytes int) []byte {
	fail := func(msg string) []byte {
		b, _ := json.Marshal(replayErr{Error: msg})
		return b
	}
	var req snapshotRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return fail("bad request: " + err.Error())
	}
	count := snapshotDefault
	if req.Count != 0 {
		if req.Count < 1 {
			return fail(fmt.Sprintf("count must be between 1 and %d", feed.SnapshotMax))
		}
		count = min(req.Count, feed.SnapshotMax)
	}
	var p snapPage
	var err error
	if req.Cursor != "" {
		n, perr := strconv.ParseUint(req.Cursor, 10, 64)
		if perr != nil || n == 0 {
			return fail(string(errNoSnapshot))
		}
		p, err = s.snaps.page(n, count, maxBytes, true)
	} else {
		f := feed.SnapshotFilter{Type: req.Type, DB: -1}
		if req.Match != nil {
			f.Match = []byte(*req.Match)
		}
		if req.DB != nil {
			if *req.DB < 0 || *req.DB >= s.opts.Databases {
				return fail(string(command.ErrDBIndex))
			}
			f.DB = *req.DB
		}
		p, err = s.snaps.start(s, f, count, maxBytes, true)
	}
	if err != nil {
		if w, ok := err.(wireError); ok {
			return fail(string(w))
		}
		s.opts.Logger.Warn("change feed: snapshot failed", "err", err)
		return fail("internal error")
	}
	return appendSnapshotReply(nil, p)
}

// appendSnapshotReply appends {"seq":S,"cursor":"C","events":[...]}, each
// payload as is.
func appendSnapshotReply(b []byte, p snapPage) []byte {
	b = append(b, `{"seq":`...)
	b = strconv.AppendUint(b, p.seq, 10)
	b = append(b, `,"cursor":"`...)
	b = strconv.AppendUint(b, p.cursor, 10)
	b = append(b, `","events":[`...)
	for i, e := range p.payloads {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, e...)
	}
	return append(b, "]}"...)
}
