package broker

import (
	"github.com/sediment-dev/sediment/command/reply"
)

func init() {
	register(
		&cmdSpec{name: "hello", arity: -1, flags: flagNoScript | flagLoading | flagStale | flagFast, group: "connection", since: "6.0.0", summary: "Handshakes with the Redis server.", run: runHello},
		&cmdSpec{name: "reset", arity: 1, flags: flagNoScript | flagLoading | flagStale | flagFast, group: "connection", since: "6.2.0", summary: "Resets the connection.", run: runReset},
	)
}

// HELLO [protover [AUTH username password] [SETNAME clientname]]
// switches the connection's reply protocol (2: RESP2, 3: RESP3), and
// replies with a map describing the server in the protocol chosen: server,
// version (Version), proto, id (CLIENT ID), mode, role, modules.
//
// Errors as Redis 7.0's helloCommand: a protover that is not an integer,
// "ERR Protocol version is not an integer or out of range"; one other than
// 2 or 3, "NOPROTO unsupported protocol version"; an unknown option or one
// without its arguments, "ERR Syntax error in HELLO option '<opt>'". Every
// check runs before anything changes.
//
// AUTH authenticates as AUTH username password does (auth.go); without it
// an unauthenticated connection gets Redis's NOAUTH error for HELLO.
//
// https://redis.io/docs/latest/commands/hello/
func runHello(x *exec) error {
	proto := 0
	next := 1
	if len(x.args) >= 2 {
		v, ok := parseInt(x.args[1])
		if !ok {
			return errProtoVersion
		}
		if v < reply.RESP2 || v > reply.RESP3 {
			return errNoProto
		}
		proto = int(v)
		next = 2
	}
	var user, pass []byte
	var name []byte
	setName := false
	for i := next; i < len(x.args); i++ {
		more := len(x.args) - 1 - i
		switch opt := x.args[i]; {
		case equalFold(opt, "AUTH") && more >= 2:
			user, pass = x.args[i+1], x.args[i+2]
			i += 2
		case equalFold(opt, "SETNAME") && more >= 1:
			name, setName = x.args[i+1], true
			i++
		default:
			return errHelloOption(opt)
		}
	}
	if user != nil {
		if err := x.c.authenticate(user, pass); err != nil {
			return err
		}
	}
	if !x.c.authed {
		return errHelloNoAuth
	}
	if setName {
		if !validClientName(name) {
			return errBadClientName
		}
	}
	c := x.c
	c.mu.Lock()
	if setName {
		c.name = string(name)
	}
	if proto != 0 {
		c.proto = proto
	}
	proto = c.proto
	c.mu.Unlock()

	w := x.reply()
	w.Map(7)
	w.BulkString("server")
	w.BulkString("redis")
	w.BulkString("version")
	w.BulkString(Version)
	w.BulkString("proto")
	w.Int(int64(proto))
	w.BulkString("id")
	w.Int(c.id)
	w.BulkString("mode")
	w.BulkString("standalone")
	w.BulkString("role")
	w.BulkString("master")
	w.BulkString("modules")
	w.Array(0)
	return nil
}

// RESET ends the connection's transaction (as DISCARD) and its WATCHes,
// selects db 0, goes back to RESP2 and clears the client name, as Redis's
// clearClientConnectionState. Reply: the status RESET. It runs at once
// even inside MULTI (notQueued).
//
// https://redis.io/docs/latest/commands/reset/
func runReset(x *exec) error {
	c := x.c
	c.multi = nil
	c.multiLen.Store(-1)
	c.s.watch.clear(c)
	c.s.pubsub.drop(c)
	if p := c.ps.Load(); p != nil {
		p.mu.Lock()
		p.buf = p.buf[:0] // messages of the subscriptions RESET ended
		p.mu.Unlock()
	}
	c.s.track.disable(c)
	c.s.stopMonitor(c)
	c.mu.Lock()
	c.db = 0
	c.proto = reply.RESP2
	c.name = ""
	c.mu.Unlock()
	c.user.Store(nil) // back to the default user, unauthenticated if it has a password
	c.authed = c.s.acl.def.u.Load().defaultAuthed()
	x.reply().Simple("RESET")
	return nil
}

// validClientName reports whether name may be a client name: printable
// ASCII without spaces (Redis's validateClientName); empty clears it.
func validClientName(name []byte) bool {
	for _, ch := range name {
		if ch < '!' || ch > '~' {
			return false
		}
	}
	return true
}
