//go:build linux

package broker

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Event loops (docs/rfcs/20261129_event_loop.md, step 1): plain TCP
// connections are served by a few goroutines, each waiting in epoll_wait
// on its own set of sockets, instead of a goroutine per connection
// parked in the runtime's network poller. A round of a loop reads every
// readable socket, runs the whole requests each holds (writes are
// submitted, not waited for, so the round's writes share commit groups),
// then completes the round's writes and sends each connection's replies
// with one write.
//
// A connection leaves its loop for a goroutine of its own (hand-off:
// conn.serve, never back) before anything that may wait on its own: a
// blocking command (BLPOP, XREAD BLOCK, ...), SUBSCRIBE and the other
// push modes, MONITOR, SAVE and SHUTDOWN, any command while CLIENT PAUSE
// holds clients, a request too large for its read buffer, replies the
// socket does not take at once, and pushes for a connection with
// subscriptions or tracking. Its state (the conn) goes with it as is; the
// request that made it leave runs first there.

// eventLoops are a server's loops.
type eventLoops struct {
	s     *Server
	loops []*loop
	next  atomic.Uint32
	wg    sync.WaitGroup
}

// loop is one event loop: an epoll set, the connections in it and an
// eventfd by which other goroutines wake it (inbox).
type loop struct {
	s   *Server
	ep  int // the epoll set
	efd int // eventfd: a message waits in inbox
	// mu guards inbox.
	mu    sync.Mutex
	inbox []loopMsg
	// Loop goroutine only:
	conns map[int32]*conn // by socket descriptor
	round []*conn         // connections that ran requests this round
	// waiting are connections whose writes have not ended: their replies
	// wait for the writer's Notify (spare: the list's other array).
	waiting, spare []*conn
	// written is the writer's wake-up (Notify) of a loop whose
	// connections wait for their writes.
	written chan struct{}
	evs     []unix.EpollEvent
	stop    bool
	dead    atomic.Bool // fail: the loop serves no connection
}

// loopOp is what a message asks of a loop.
type loopOp uint8

const (
	opAdd   loopOp = iota // serve a new connection
	opEnd                 // finish the replies and close (a read deadline in the past: shutdown)
	opClose               // close now (Close: CLIENT KILL, idle timeout)
	opLeave               // hand off to a goroutine (pushes wait for it)
	opStop                // the server closed: end the loop once it has no connection
)

type loopMsg struct {
	c  *conn
	op loopOp
}

// newEventLoops starts n loops.
func newEventLoops(s *Server, n int) (*eventLoops, error) {
	e := &eventLoops{s: s}
	for range n {
		l, err := newLoop(s)
		if err != nil {
			e.stop()
			return nil, err
		}
		e.loops = append(e.loops, l)
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			l.run()
		}()
	}
	return e, nil
}

func newLoop(s *Server) (*loop, error) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err == nil {
		err = unix.SetNonblock(ep, true) // for the runtime's poller (run)
	}
	if err != nil {
		return nil, err
	}
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(ep)
		return nil, err
	}
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, efd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(efd)}); err != nil {
		unix.Close(ep)
		unix.Close(efd)
		return nil, err
	}
	return &loop{s: s, ep: ep, efd: efd, conns: map[int32]*conn{}, written: make(chan struct{}, 1), evs: make([]unix.EpollEvent, 128)}, nil
}

// wrap takes nc over for a loop: a plain TCP connection's socket is
// duplicated and nc closed (the runtime's poller no longer watches it).
// It returns nil, nc untouched, for any other connection.
func (e *eventLoops) wrap(nc net.Conn) net.Conn {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	l := e.loops[int(e.next.Add(1))%len(e.loops)]
	if l.dead.Load() {
		return nil
	}
	fd := -1
	var derr error
	if err := rc.Control(func(f uintptr) { fd, derr = unix.FcntlInt(f, unix.F_DUPFD_CLOEXEC, 0) }); err != nil || derr != nil {
		return nil
	}
	lc := &loopConn{l: l, fd: fd, laddr: nc.LocalAddr(), raddr: nc.RemoteAddr(), left: make(chan struct{})}
	nc.Close() // the duplicate keeps the socket open; it stays non-blocking
	return lc
}

// prepare readies c, made on a wrapped connection, for its loop: its
// replies are written without waiting.
func (e *eventLoops) prepare(c *conn) {
	lc := c.nc.(*loopConn)
	lc.c = c
	c.w.w = loopWriter{lc}
	c.notifier = lc.l
	c.fd.Store(int32(lc.fd))
}

// add gives c, prepared, to its loop.
func (e *eventLoops) add(c *conn) { c.nc.(*loopConn).l.post(c, opAdd) }

// stop ends the loops, once no connection is left in them.
func (e *eventLoops) stop() {
	for _, l := range e.loops {
		l.post(nil, opStop)
	}
	e.wg.Wait()
}

// post queues a message for the loop and wakes it.
func (l *loop) post(c *conn, op loopOp) {
	l.mu.Lock()
	l.inbox = append(l.inbox, loopMsg{c, op})
	l.mu.Unlock()
	var one = [8]byte{1}
	unix.Write(l.efd, one[:]) // EAGAIN: the counter is already set
	l.Notify()                // a loop waiting for the writer looks too
}

func (l *loop) run() {
	// The loop waits for its epoll set in the runtime's network poller,
	// not in epoll_wait: an epoll descriptor is itself pollable. A
	// goroutine in a blocking epoll_wait would keep its processor until
	// the runtime takes it back (20 µs or more), while the writer and the
	// other loop wait for one; parked, it gives the processor up at once.
	ep := os.NewFile(uintptr(l.ep), "epoll")
	defer ep.Close()
	rc, err := ep.SyscallConn()
	if err != nil {
		l.fail(err)
		return
	}
	// While connections wait for their writes, the loop waits for the
	// writer's Notify (or a post) at most this long before it looks at
	// its sockets again: a stalled write holds the others' reads no
	// longer.
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		var n int
		var err error
		if len(l.waiting) > 0 {
			// The sockets ready now are served; with none the loop waits
			// for the writer, which readies it directly (Notify), not
			// through the poller.
			n, err = pollReady(l.ep, l.evs)
			if n == 0 && err == nil {
				timer.Reset(waitingPoll)
				select {
				case <-l.written:
				case <-timer.C:
				}
				timer.Stop()
			}
		} else {
			var werr error
			err = rc.Read(func(fd uintptr) bool {
				n, werr = pollReady(int(fd), l.evs)
				return n > 0 || (werr != nil && werr != unix.EINTR)
			})
			if err == nil {
				err = werr
			}
		}
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			l.fail(err)
			return
		}
		for _, ev := range l.evs[:n] {
			if int(ev.Fd) == l.efd {
				l.takeInbox()
			} else if c := l.conns[ev.Fd]; c != nil {
				l.serveReadable(c)
			}
		}
		l.endRound()
		if l.stop && len(l.conns) == 0 {
			unix.Close(l.efd)
			return
		}
	}
}

// waitingPoll bounds a loop's wait for the writer (run).
const waitingPoll = time.Millisecond

// fail ends a loop whose epoll set failed (a bug): its connections and
// any it is given later are handed off to goroutines of their own, and
// wrap gives it no more.
func (l *loop) fail(err error) {
	l.s.opts.Logger.Error("event loop failed: its clients move to goroutines of their own", "err", err)
	l.dead.Store(true)
	for _, c := range l.conns {
		l.handOff(c, nil)
	}
	for {
		l.mu.Lock()
		msgs := l.inbox
		l.inbox = nil
		l.mu.Unlock()
		for _, m := range msgs {
			switch {
			case m.op == opStop:
				unix.Close(l.efd)
				return
			case m.op == opAdd:
				l.handOff(m.c, nil)
			}
		}
		<-l.written // post signals it too
	}
}

// takeInbox runs the messages other goroutines posted.
func (l *loop) takeInbox() {
	var buf [8]byte
	unix.Read(l.efd, buf[:])
	l.mu.Lock()
	msgs := l.inbox
	l.inbox = nil
	l.mu.Unlock()
	for _, m := range msgs {
		if m.op == opStop {
			l.stop = true
			continue
		}
		if m.op == opAdd {
			lc := m.c.nc.(*loopConn)
			if err := unix.EpollCtl(l.ep, unix.EPOLL_CTL_ADD, lc.fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(lc.fd)}); err != nil {
				l.s.opts.Logger.Warn("event loop: cannot watch a connection", "client", m.c.id, "err", err)
				l.close(m.c)
				continue
			}
			l.conns[int32(lc.fd)] = m.c
			// A request may have arrived before the socket was watched:
			// level-triggered epoll reports it at the next wait.
			continue
		}
		lc := m.c.nc.(*loopConn)
		if l.conns[int32(lc.fd)] != m.c {
			continue // already closed or handed off
		}
		switch m.op {
		case opClose:
			l.close(m.c)
		case opEnd:
			// As a goroutine's read deadline: the whole requests read
			// run, then the connection ends.
			lc.ending = true
			l.serveBuffered(m.c, nil)
		case opLeave:
			l.handOff(m.c, nil)
		}
	}
}

// serveReadable reads what c's socket holds and runs the whole requests
// buffered.
func (l *loop) serveReadable(c *conn) {
	lc := c.nc.(*loopConn)
	if c.ps.Load() != nil {
		// Pushes (subscriptions, tracking) are written by another
		// goroutine while the connection waits: that needs the
		// goroutine path.
		l.handOff(c, nil)
		return
	}
	if lc.held != nil {
		// A request waits for the connection's writes: the socket is not
		// read until it has run (endRound).
		l.watch(lc, false)
		return
	}
	if lc.ending {
		return // it ends once its held request ran (endRound)
	}
	lc.filling = true
	ferr := c.rd.Fill()
	lc.filling = false
	if ferr == errWouldBlock {
		ferr = nil
	}
	l.serveBuffered(c, ferr)
}

// serveBuffered runs c's request held behind its writes, if any, and the
// whole requests buffered, until one must wait for c's writes (it is held
// then) or leave the loop. ferr is the error of the read that filled the
// buffer (the client went away): c ends once the buffer holds no whole
// request.
func (l *loop) serveBuffered(c *conn, ferr error) {
	lc := c.nc.(*loopConn)
	timeout := l.s.timeout.Load() > 0
	for n := 1; ; n++ {
		args := lc.held
		if args != nil {
			lc.held = nil
		} else {
			switch c.rd.Ready() {
			case readyTooBig:
				l.handOff(c, nil)
				return
			case readyNone:
				if ferr != nil || lc.ending { // the client went away (or its socket failed), or shutdown
					l.end(c)
					return
				}
				l.joinRound(c)
				return
			}
			var err error
			args, err = c.rd.ReadCommand()
			if err == errWouldBlock { // skipped requests only
				continue
			}
			if timeout {
				c.busy.Store(true)
			}
			if err != nil {
				c.readFailed(err)
				l.end(c)
				return
			}
		}
		cmd := lookup(args[0])
		if !c.loopRuns(cmd, args) {
			l.handOff(c, args)
			return
		}
		if !pipelinedRequest(cmd, args) && c.writesPending() {
			// It must see the writes before it (conn.execute drains):
			// it runs once they have ended, and the loop serves the other
			// connections meanwhile.
			lc.held = args
			l.joinRound(c)
			return
		}
		c.runRequest(cmd, args)
		if c.mustLeave { // CLIENT PAUSE began: it runs again on its own goroutine
			c.mustLeave = false
			l.handOff(c, args)
			return
		}
		if c.closeAfter {
			l.end(c)
			return
		}
		if c.ps.Load() != nil { // CLIENT TRACKING ON: its replies go with it
			l.handOff(c, nil)
			return
		}
		if n%maxBatch == 0 || c.buffered >= flushAt {
			if !l.flush(c) {
				return
			}
		}
	}
}

// watch turns the loop's watch of lc's socket on or off (a connection
// whose request is held does not read). Off takes the socket out of the
// epoll set: with no events asked, epoll would still report a hang-up.
func (l *loop) watch(lc *loopConn, on bool) {
	if lc.muted != on {
		return
	}
	var err error
	if on {
		err = unix.EpollCtl(l.ep, unix.EPOLL_CTL_ADD, lc.fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(lc.fd)})
	} else {
		err = unix.EpollCtl(l.ep, unix.EPOLL_CTL_DEL, lc.fd, nil)
	}
	if err == nil {
		lc.muted = !on
	}
}

// joinRound lists c among the connections whose replies the round sends.
func (l *loop) joinRound(c *conn) {
	lc := c.nc.(*loopConn)
	if !lc.inRound {
		lc.inRound = true
		l.round = append(l.round, c)
	}
}

// Notify is told by the writer that a commit group holding writes of the
// loop's connections has ended (materialize.Notifier): it wakes the loop.
func (l *loop) Notify() {
	select {
	case l.written <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// endRound sends the replies of the round's connections whose writes have
// ended; the others wait for the writer's Notify, and the loop serves other
// connections meanwhile. Connections whose writes have ended since are
// served again: their replies, and the requests held behind the writes.
func (l *loop) endRound() {
	if len(l.waiting) > 0 {
		waiting := l.waiting
		l.waiting = l.spare[:0]
		for i, c := range waiting {
			waiting[i] = nil
			lc := c.nc.(*loopConn)
			switch {
			case l.conns[int32(lc.fd)] != c: // closed or handed off since
				lc.waiting = false
			case c.writesPending():
				l.waiting = append(l.waiting, c)
			default:
				lc.waiting = false
				l.joinRound(c)
			}
		}
		l.spare = waiting[:0]
	}
	// Connections served again here join the round anew: it is walked
	// by index.
	for i := 0; i < len(l.round); i++ {
		c := l.round[i]
		l.round[i] = nil
		lc := c.nc.(*loopConn)
		lc.inRound = false
		switch {
		case l.conns[int32(lc.fd)] != c: // closed or handed off since
		case c.writesPending():
			if !lc.waiting {
				lc.waiting = true
				l.waiting = append(l.waiting, c)
			}
		case lc.held != nil: // its writes ended: the request held behind them runs
			l.watch(lc, true)
			l.serveBuffered(c, nil)
		default:
			if l.flush(c) && l.s.timeout.Load() > 0 && c.rd.Buffered() == 0 {
				c.markIdle()
			}
		}
	}
	l.round = l.round[:0]
}

// flush completes c's writes and sends its replies (conn.flush) without
// waiting for the socket: replies it does not take hand c off, and a
// failure closes it. It reports whether c is still in the loop.
func (l *loop) flush(c *conn) bool {
	if err := c.flush(); err != nil {
		l.close(c)
		return false
	}
	if len(c.nc.(*loopConn).out) > 0 {
		l.handOff(c, nil)
		return false
	}
	return true
}

// end finishes c: its writes complete, its replies are sent and it
// closes (a goroutine sends what the socket does not take at once).
func (l *loop) end(c *conn) {
	c.closeAfter = true // after a hand-off, its goroutine only sends the replies
	if l.flush(c) {
		l.close(c)
	}
}

// forget takes c's socket out of the loop.
func (l *loop) forget(c *conn) *loopConn {
	lc := c.nc.(*loopConn)
	unix.EpollCtl(l.ep, unix.EPOLL_CTL_DEL, lc.fd, nil)
	delete(l.conns, int32(lc.fd))
	return lc
}

// close closes c and ends it as serve's return does.
func (l *loop) close(c *conn) {
	lc := l.forget(c)
	lc.mu.Lock()
	lc.closed = true
	unix.Close(lc.fd)
	lc.mu.Unlock()
	close(lc.left)
	c.release()
	l.s.connDone(c)
}

// handOff moves c to a goroutine of its own, which runs first (when not
// nil) and then serves c as any connection (conn.serve), starting with
// the replies the loop could not send and the bytes it buffered.
func (l *loop) handOff(c *conn, first [][]byte) {
	lc := l.forget(c)
	f := os.NewFile(uintptr(lc.fd), "")
	nc, err := net.FileConn(f) // a duplicate, watched by the runtime's poller
	f.Close()
	if err == nil {
		nc = withRawIO(nc)
	}
	lc.mu.Lock()
	if err == nil {
		lc.nc.Store(&nc)
		if !lc.rdl.IsZero() {
			nc.SetReadDeadline(lc.rdl)
		}
		if !lc.wdl.IsZero() {
			nc.SetWriteDeadline(lc.wdl)
		}
		if lc.closeReq {
			nc.Close()
		}
	} else {
		lc.closed = true
	}
	lc.mu.Unlock()
	if err != nil {
		close(lc.left)
		l.s.opts.Logger.Warn("event loop: cannot hand a connection off", "client", c.id, "err", err)
		c.release()
		l.s.connDone(c)
		return
	}
	c.fd.Store(int32(socketFD(nc)))
	if len(lc.out) > 0 {
		c.w.prepend(lc.out)
		lc.out = nil
	}
	if first == nil {
		first, lc.held = lc.held, nil
	}
	c.w.w = lc
	c.notifier = nil
	go func() {
		// The replies the loop could not send go first, before the
		// pusher (waiting in leaveLoop) may write.
		var err error
		if c.w.Len() > 0 {
			err = c.flush()
		}
		close(lc.left)
		if err == nil && !c.closeAfter {
			c.serve(first)
		} else {
			c.release()
		}
		l.s.connDone(c)
	}()
}

// loopRuns reports whether the request args, of the command cmd (nil:
// unknown), may run in an event loop: it cannot wait on its own (see the
// comment at the top of the file).
func (c *conn) loopRuns(cmd *cmdSpec, args [][]byte) bool {
	if c.s.pause.on.Load() || c.replyMode.silenced() {
		// CLIENT REPLY OFF or SKIP: each request waits for the writes
		// before it (executeSilenced), which a loop must not do.
		return false
	}
	if cmd == nil || !cmd.arityOK(len(args)) {
		return true // an error reply
	}
	return !cmd.ownGoroutine && !cmd.mayBlock(args)
}

// loopConn is the net.Conn of a connection served by an event loop: the
// loop reads and writes its socket without waiting, and the methods other
// goroutines call (Close, deadlines, addresses) ask the loop. After a
// hand-off it is the runtime's net.Conn of the same socket (nc) under
// another name.
type loopConn struct {
	l            *loop
	c            *conn
	fd           int
	laddr, raddr net.Addr
	nc           atomic.Pointer[net.Conn] // set by the hand-off
	left         chan struct{}            // closed when the loop no longer holds it

	// Loop goroutine only:
	filling bool // Fill runs: Read may read the socket
	inRound bool // listed in the loop's round
	waiting bool // listed in the loop's waiting
	muted   bool // the loop does not watch the socket (held)
	// held is a request that waits for the connection's writes to end.
	held [][]byte
	// ending: a shutdown asked it to end once its whole requests ran.
	ending bool
	out    []byte // replies the socket did not take

	mu       sync.Mutex // guards the fields below and the hand-off
	closed   bool
	closeReq bool      // Close was called: the hand-off closes it too
	endReq   bool      // a past read deadline was set
	rdl, wdl time.Time // deadlines set while in the loop, for the hand-off
	// wdlSet: a write deadline is set (a write under the soft output
	// limit, a shutdown's grace): the loop's writer hands that write to
	// the connection's goroutine, whose write waits until the deadline.
	wdlSet atomic.Bool
}

// handed returns the runtime's connection after a hand-off, or nil.
func (lc *loopConn) handed() net.Conn {
	if p := lc.nc.Load(); p != nil {
		return *p
	}
	return nil
}

// Read reads the socket without waiting, while the loop fills the
// connection's Reader (errWouldBlock: nothing more now).
func (lc *loopConn) Read(p []byte) (int, error) {
	if nc := lc.handed(); nc != nil {
		return nc.Read(p)
	}
	if !lc.filling {
		return 0, errWouldBlock
	}
	for {
		n, err := sockRead(lc.fd, p) // rawio_linux.go
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return 0, errWouldBlock
		case err != nil:
			return 0, err
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// Write is a write by another goroutine than the loop's (a pusher, which
// waits for the hand-off first: leaveLoop) or by the connection's own
// goroutine after the hand-off.
func (lc *loopConn) Write(p []byte) (int, error) {
	if nc := lc.handed(); nc != nil {
		return nc.Write(p)
	}
	return 0, net.ErrClosed
}

// WriteVec writes bufs to the handed-off connection (vectorWriter), with
// writev when it is a plain socket.
func (lc *loopConn) WriteVec(bufs [][]byte) error {
	nc := lc.handed()
	if nc == nil {
		return net.ErrClosed
	}
	return writeVec(nc, bufs)
}

// leaveLoop asks the loop to hand the connection off and waits until it
// no longer holds it (handed off or closed).
func (lc *loopConn) leaveLoop() {
	lc.mu.Lock()
	if lc.handed() == nil && !lc.closed {
		lc.l.post(lc.c, opLeave)
	}
	lc.mu.Unlock()
	<-lc.left
}

func (lc *loopConn) Close() error {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if nc := lc.handed(); nc != nil {
		return nc.Close()
	}
	if lc.closed || lc.closeReq {
		return nil
	}
	lc.closeReq = true
	lc.l.post(lc.c, opClose)
	return nil
}

func (lc *loopConn) LocalAddr() net.Addr  { return lc.laddr }
func (lc *loopConn) RemoteAddr() net.Addr { return lc.raddr }

func (lc *loopConn) SetDeadline(t time.Time) error {
	if err := lc.SetReadDeadline(t); err != nil {
		return err
	}
	return lc.SetWriteDeadline(t)
}

// SetReadDeadline in the loop: a deadline already past (conn.shutdown)
// ends the connection once its replies are sent; a later one is kept for
// a hand-off (a connection in the loop waits for no read).
func (lc *loopConn) SetReadDeadline(t time.Time) error {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if nc := lc.handed(); nc != nil {
		return nc.SetReadDeadline(t)
	}
	lc.rdl = t
	if !t.IsZero() && !t.After(time.Now()) && !lc.closed && !lc.endReq {
		lc.endReq = true
		lc.l.post(lc.c, opEnd)
	}
	return nil
}

// SetWriteDeadline in the loop is kept for a hand-off: the loop's writes
// never wait.
func (lc *loopConn) SetWriteDeadline(t time.Time) error {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if nc := lc.handed(); nc != nil {
		return nc.SetWriteDeadline(t)
	}
	lc.wdl = t
	lc.wdlSet.Store(!t.IsZero())
	return nil
}

// SyscallConn is the runtime connection's after a hand-off (watchClose
// runs only there).
func (lc *loopConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := lc.handed().(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errors.New("broker: connection served by an event loop")
}

// loopWriter is a loop connection's reply writer in the loop: it writes
// what the socket takes and keeps the rest in out, which makes the loop
// hand the connection off (its goroutine sends out first). It writes
// nothing, keeping it all, when a write deadline is set (the write must
// wait until it) or the connection has pushes (its pusher writes only
// after the hand-off's goroutine has sent out: handOff).
type loopWriter struct{ lc *loopConn }

func (w loopWriter) Write(p []byte) (int, error) {
	lc := w.lc
	if len(lc.out) > 0 || lc.wdlSet.Load() || lc.c.ps.Load() != nil {
		lc.out = append(lc.out, p...)
		return len(p), nil
	}
	for n := 0; n < len(p); {
		k, err := sockWrite(lc.fd, p[n:])
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			lc.out = append(lc.out, p[n:]...)
			return len(p), nil
		case err != nil:
			return n, err
		}
		n += k
	}
	return len(p), nil
}

// WriteVec is Write for the slices of bufs in order (vectorWriter): one
// writev per maxWriteVecs slices, and what the socket does not take now
// goes to lc.out, as in Write.
func (w loopWriter) WriteVec(bufs [][]byte) error {
	lc := w.lc
	if len(lc.out) > 0 || lc.wdlSet.Load() || lc.c.ps.Load() != nil {
		for _, b := range bufs {
			lc.out = append(lc.out, b...)
		}
		return nil
	}
	for len(bufs) > 0 {
		k, err := sockWritev(lc.fd, bufs[:min(len(bufs), maxWriteVecs)])
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			for _, b := range bufs {
				lc.out = append(lc.out, b...)
			}
			return nil
		case err != nil:
			return err
		}
		bufs = dropWritten(bufs, k)
	}
	return nil
}

// maxWriteVecs is the most slices one writev takes (Linux's IOV_MAX).
const maxWriteVecs = 1024

// leaveLoop makes sure c is not served by an event loop (pushes are about
// to be written by another goroutine).
func (c *conn) leaveLoop() {
	if lc, ok := c.nc.(*loopConn); ok {
		lc.leaveLoop()
	}
}

// count is how many event loops serve clients (0 without loops).
func (e *eventLoops) count() int {
	if e == nil {
		return 0
	}
	n := 0
	for _, l := range e.loops {
		if !l.dead.Load() {
			n++
		}
	}
	return n
}

// inLoop reports whether an event loop serves c (it has not been handed
// off to a goroutine of its own). Safe from any goroutine.
func (c *conn) inLoop() bool {
	lc, ok := c.nc.(*loopConn)
	return ok && lc.handed() == nil
}
