package broker

import (
	"strconv"
	"sync"
	"sync/atomic"
)

// MONITOR, as Redis 7.0: a monitoring connection receives one line per
// command run by any client of this process, after it ran:
//
//	+<unix seconds>.<microseconds> [<db> <client address>] "cmd" "arg" ...
//
// with Redis's escaping (sdscatrepr) and AUTH's and HELLO AUTH's secrets
// "(redacted)". Commands that fail their checks (unknown, wrong number of
// arguments, NOAUTH) and admin commands (CONFIG, SLOWLOG, MONITOR ...) are
// not shown. Lines are pushes queued like pub/sub messages (pubsub.go), so
// a slow monitor never slows the server; it is cut off at the pubsub output
// buffer limit.

func init() {
	register(
		&cmdSpec{name: "monitor", arity: 1, flags: flagAdmin | flagNoScript | flagLoading | flagStale, group: "server", since: "1.0.0", summary: "Listens for all requests received by the server in real-time.", run: runMonitor, ownGoroutine: true},
	)
}

// monitors is the set of monitoring connections.
type monitors struct {
	n  atomic.Int32
	mu sync.Mutex
	m  map[*conn]struct{}
}

// MONITOR. Reply: OK, then a line per command until QUIT, RESET or the
// connection closes. While monitoring, commands that touch the keyspace get
// Redis's "Replica can't interact with the keyspace".
// https://redis.io/docs/latest/commands/monitor/
func runMonitor(x *exec) error {
	c := x.c
	if c.monitor.Load() {
		return nil // already monitoring: Redis replies nothing
	}
	s := c.s
	s.pubsub.mu.Lock()
	c.pubSubLocked()
	s.pubsub.mu.Unlock()
	s.mons.mu.Lock()
	if s.mons.m == nil {
		s.mons.m = map[*conn]struct{}{}
	}
	s.mons.m[c] = struct{}{}
	s.mons.n.Add(1)
	s.mons.mu.Unlock()
	c.monitor.Store(true)
	x.reply().OK()
	return nil
}

// stopMonitor ends c's monitoring (RESET, disconnection).
func (s *Server) stopMonitor(c *conn) {
	if !c.monitor.Load() {
		return
	}
	c.monitor.Store(false)
	s.mons.mu.Lock()
	delete(s.mons.m, c)
	s.mons.n.Add(-1)
	s.mons.mu.Unlock()
}

// feedMonitors sends the line of a command c ran to every monitor.
func (s *Server) feedMonitors(c *conn, cmd *cmdSpec, args [][]byte) {
	if s.mons.n.Load() == 0 || cmd.flags&flagAdmin != 0 {
		return
	}
	now := s.opts.Now()
	c.mu.Lock()
	db := c.db
	c.mu.Unlock()
	b := make([]byte, 0, 64)
	b = append(b, '+')
	b = strconv.AppendInt(b, now.Unix(), 10)
	b = append(b, '.')
	us := strconv.AppendInt(nil, int64(now.Nanosecond()/1000), 10)
	for range 6 - len(us) {
		b = append(b, '0')
	}
	b = append(b, us...)
	b = append(b, " ["...)
	b = strconv.AppendUint(b, uint64(db), 10)
	b = append(b, ' ')
	b = append(b, c.nc.RemoteAddr().String()...)
	b = append(b, ']')
	redact := redactedArgs(cmd, args)
	for i, a := range args {
		b = append(b, ' ')
		if redact[i] {
			b = append(b, `"(redacted)"`...)
			continue
		}
		b = appendRepr(b, a)
	}
	b = append(b, '\r', '\n')
	s.mons.mu.Lock()
	targets := make([]*conn, 0, len(s.mons.m))
	for m := range s.mons.m {
		targets = append(targets, m)
	}
	s.mons.mu.Unlock()
	for _, m := range targets {
		if p := m.ps.Load(); p != nil {
			p.push(m, b)
		}
	}
}

// redactedArgs returns the positions of the secrets a log must not show:
// AUTH's arguments, HELLO's AUTH username and password (Redis's
// redactClientCommandArgument).
func redactedArgs(cmd *cmdSpec, args [][]byte) map[int]bool {
	red := map[int]bool{}
	switch cmd.name {
	case "auth":
		for i := 1; i < len(args); i++ {
			red[i] = true
		}
	case "hello":
		for i := 2; i+2 < len(args); i++ {
			if equalFold(args[i], "AUTH") {
				red[i+1], red[i+2] = true, true
			}
		}
	}
	return red
}

// appendRepr appends a quoted as Redis's sdscatrepr does: printable bytes
// as they are, \\ \" \n \r \t \a \b escaped, others as \xHH.
func appendRepr(b, a []byte) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for _, c := range a {
		switch c {
		case '\\', '"':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\a':
			b = append(b, '\\', 'a')
		case '\b':
			b = append(b, '\\', 'b')
		default:
			if c >= 0x20 && c < 0x7f {
				b = append(b, c)
			} else {
				b = append(b, '\\', 'x', hex[c>>4], hex[c&15])
			}
		}
	}
	return append(b, '"')
}
