package broker

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// clientPause is CLIENT PAUSE's state (Redis 7.0's pauseClients): until
// end, every command of every client (ALL), or only the writes (WRITE),
// wait before they run. A later pause only extends the end and only
// widens WRITE to ALL; CLIENT UNPAUSE ends it.
type clientPause struct {
	on atomic.Bool // a pause was set and not yet seen over: the commands' fast check

	mu      sync.Mutex
	end     time.Time
	all     bool
	changed chan struct{} // closed when the pause changes; nil until a command waits
}

// mayReplicate are Redis's commands flagged may-replicate that Sediment
// has: CLIENT PAUSE WRITE holds them with the writes.
var mayReplicate = []string{"publish", "spublish"}

// pause sets or extends the pause to end.
func (p *clientPause) pause(now, end time.Time, all bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !now.Before(p.end) {
		p.end, p.all = end, all
	} else {
		p.end, p.all = maxTime(p.end, end), p.all || all
	}
	p.on.Store(true)
	p.signal()
}

// unpause ends the pause.
func (p *clientPause) unpause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.end, p.all = time.Time{}, false
	p.on.Store(false)
	p.signal()
}

func (p *clientPause) signal() {
	if p.changed != nil {
		close(p.changed)
		p.changed = nil
	}
}

// holds reports how long a command must still wait at now (0: it may run)
// and a channel closed when the pause changes. write: the command writes
// (or may replicate), so WRITE pauses hold it too.
func (p *clientPause) holds(now time.Time, write bool) (time.Duration, <-chan struct{}) {
	if !p.on.Load() {
		return 0, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !now.Before(p.end) {
		p.on.Store(false)
		return 0, nil
	}
	if !p.all && !write {
		return 0, nil
	}
	if p.changed == nil {
		p.changed = make(chan struct{})
	}
	return p.end.Sub(now), p.changed
}

// writesHeld reports whether writes are paused at now (active expiry
// waits too, as Redis's does under a pause).
func (p *clientPause) writesHeld(now time.Time) bool {
	d, _ := p.holds(now, true)
	return d > 0
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// pausedWrite reports whether CLIENT PAUSE WRITE holds cmd: a write, a
// may-replicate command, or EXEC of a transaction holding a write
// (Redis's processCommand).
func (c *conn) pausedWrite(cmd *cmdSpec) bool {
	switch {
	case cmd.flags&flagWrite != 0:
		return true
	case cmd.name == "exec":
		return c.multi != nil && (c.multi.writes || c.multi.mayReplicate)
	}
	return slices.Contains(mayReplicate, cmd.name)
}

// waitPause holds cmd while a CLIENT PAUSE holds it, and reports whether
// it may run. The replies of the commands before it are sent first. A
// connection that closes meanwhile (the client goes away, CLIENT KILL,
// ACL DELUSER, a shutdown) drops the command: Redis drops a postponed
// command with its client.
func (c *conn) waitPause(cmd *cmdSpec) bool {
	p := &c.s.pause
	if !p.on.Load() {
		return true
	}
	var stopWatch func()
	defer func() {
		if stopWatch != nil {
			stopWatch()
		}
	}()
	for {
		d, changed := p.holds(c.s.opts.Now(), c.pausedWrite(cmd))
		if d <= 0 {
			return c.ctx.Err() == nil
		}
		if c.notifier != nil && stopWatch == nil {
			// In an event loop, whose other connections must not wait:
			// the command runs again on a goroutine of the connection's
			// own (loop_linux.go).
			c.mustLeave = true
			return false
		}
		if stopWatch == nil {
			if c.flush() != nil {
				return false
			}
			stopWatch = c.watchClose() // a client that goes away ends the wait
		}
		t := time.NewTimer(d)
		select {
		case <-changed:
		case <-t.C:
		case <-c.ctx.Done():
			t.Stop()
			return false
		}
		t.Stop()
	}
}

// CLIENT PAUSE timeout [WRITE | ALL]: timeout in milliseconds.
func runClientPause(x *exec) error {
	all := true // the mode is checked first, as Redis does
	if len(x.args) == 4 {
		switch {
		case equalFold(x.args[3], "WRITE"):
			all = false
		case equalFold(x.args[3], "ALL"):
		default:
			return errPauseMode
		}
	}
	ms, ok := parseInt(x.args[2])
	switch {
	case !ok:
		return errPauseTimeout
	case ms < 0:
		return errPauseNegative
	}
	now := x.c.s.opts.Now()
	x.c.s.pause.pause(now, now.Add(time.Duration(min(ms, int64(time.Duration(1<<62)/time.Millisecond)))*time.Millisecond), all)
	x.reply().OK()
	return nil
}

var (
	errPauseTimeout  = wireError("ERR timeout is not an integer or out of range")
	errPauseNegative = wireError("ERR timeout is negative")
	errPauseMode     = wireError("ERR CLIENT PAUSE mode must be WRITE or ALL")
	errReplyInMulti  = wireError("ERR CLIENT REPLY is not allowed inside a transaction")
)

// Reply modes of CLIENT REPLY, as Redis's client flags: off drops every
// reply; skip drops the reply of the command running; skipNext becomes
// skip for the next command. Replies of SUBSCRIBE and its kin, messages
// and other pushes are sent whatever the mode, as in Redis 7.0.
type replyMode struct {
	off, skip, skipNext bool
}

// silenced reports whether a command starting now may have its reply
// dropped: it runs on executeSilenced's path.
func (m replyMode) silenced() bool { return m.off || m.skip }

// CLIENT REPLY ON | OFF | SKIP. OFF and SKIP reply nothing; ON replies OK
// (its own reply is sent even after OFF or SKIP). Inside a transaction it
// is refused: Redis 7.0 writes an EXEC reply with an element missing.
func runClientReply(x *exec) error {
	if x.tx != nil {
		return errReplyInMulti
	}
	m := &x.c.replyMode
	switch {
	case equalFold(x.args[2], "ON"):
		m.off, m.skip = false, false
		x.reply().OK()
	case equalFold(x.args[2], "OFF"):
		m.off = true
	case equalFold(x.args[2], "SKIP"):
		if !m.off {
			m.skipNext = true
		}
	default:
		return errSyntax
	}
	return nil
}

// pushReplies are the commands whose replies Redis sends as pushes, never
// dropped by CLIENT REPLY.
var pushReplies = []string{"subscribe", "unsubscribe", "psubscribe", "punsubscribe", "ssubscribe", "sunsubscribe"}

// executeSilenced runs a request under CLIENT REPLY OFF or SKIP: the
// replies before it are written first, its reply is written and then cut
// from the buffer unless the mode no longer drops it (CLIENT REPLY ON),
// and pushes that arrive meanwhile stay queued for the next flush.
func (c *conn) executeSilenced(cmd *cmdSpec, args [][]byte) {
	c.drain()
	if c.ps.Load() != nil {
		c.takePushes(false)
	}
	c.silenced = true
	c.replyMark = c.w.Len()
	c.execute(cmd, args)
	if c.mustLeave {
		c.silenced = false
		return // it runs again, silenced there
	}
	c.drain()
	c.silenced = false
	if c.replyMode.silenced() && (cmd == nil || !slices.Contains(pushReplies, cmd.name)) {
		c.w.Truncate(c.replyMark)
		c.buffered = c.replyMark // the replies before it are still to flush
	}
	c.endReply()
}

// endReply moves the reply mode on after a command, as Redis's
// resetClient: a skip ends, a SKIP run by the command starts one.
func (c *conn) endReply() {
	c.replyMode.skip = false
	if c.replyMode.skipNext {
		c.replyMode.skip, c.replyMode.skipNext = true, false
	}
}

// runClientNoTouch is CLIENT NO-TOUCH ON | OFF (Redis 7.2): flag T in
// CLIENT LIST. Sediment keeps no access times (OBJECT IDLETIME is 0), so
// it changes nothing else.
func runClientNoTouch(x *exec) error {
	on, ok := parseBool(x.args[2], "ON", "OFF")
	if !ok {
		return errSyntax
	}
	x.c.mu.Lock()
	x.c.noTouch = on
	x.c.mu.Unlock()
	x.reply().OK()
	return nil
}

// clientHelp is CLIENT HELP's text, Redis 7.0's.
var clientHelp = []string{
	"CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"CACHING (YES|NO)",
	"    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
	"GETREDIR",
	"    Return the client ID we are redirecting to when tracking is enabled.",
	"GETNAME",
	"    Return the name of the current connection.",
	"ID",
	"    Return the ID of the current connection.",
	"INFO",
	"    Return information about the current client connection.",
	"KILL <ip:port>",
	"    Kill connection made from <ip:port>.",
	"KILL <option> <value> [<option> <value> [...]]",
	"    Kill connections. Options are:",
	"    * ADDR (<ip:port>|<unixsocket>:0)",
	"      Kill connections made from the specified address",
	"    * LADDR (<ip:port>|<unixsocket>:0)",
	"      Kill connections made to specified local address",
	"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
	"      Kill connections by type.",
	"    * USER <username>",
	"      Kill connections authenticated by <username>.",
	"    * SKIPME (YES|NO)",
	"      Skip killing current connection (default: yes).",
	"LIST [options ...]",
	"    Return information about client connections. Options:",
	"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
	"      Return clients of specified type.",
	"UNPAUSE",
	"    Stop the current client pause, resuming traffic.",
	"PAUSE <timeout> [WRITE|ALL]",
	"    Suspend all, or just write, clients for <timeout> milliseconds.",
	"REPLY (ON|OFF|SKIP)",
	"    Control the replies sent to the current connection.",
	"SETNAME <name>",
	"    Assign the name <name> to the current connection.",
	"UNBLOCK <clientid> [TIMEOUT|ERROR]",
	"    Unblock the specified blocked client.",
	"TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
	"         [OPTIN] [OPTOUT] [NOLOOP]",
	"    Control server assisted client side caching.",
	"TRACKINGINFO",
	"    Report tracking status for the current connection.",
	"NO-EVICT (ON|OFF)",
	"    Protect current client connection from eviction.",
	"HELP",
	"    Prints this help.",
}
