package broker

import (
	"net"
)

// Authentication as Redis 7.0's: a connection starts as the default user,
// authenticated when that user is on and has nopass; otherwise it must
// AUTH (or HELLO ... AUTH) before any command but AUTH, HELLO, QUIT and
// RESET, and gets "NOAUTH Authentication required." The default user's
// password is requirepass (Options.RequirePass, CONFIG SET requirepass)
// or ACL SETUSER's; other users come from ACL SETUSER (acl.go). Changing a
// password leaves the connections already open authenticated, as in
// Redis. docs/security.md.

func init() {
	register(
		&cmdSpec{name: "auth", arity: -2, flags: flagNoScript | flagLoading | flagStale | flagFast, group: "connection", since: "1.0.0", summary: "Authenticates the connection.", run: runAuth},
	)
}

// noAuthOK reports whether cmd runs before authentication (Redis's
// CMD_NO_AUTH, plus QUIT and RESET).
func noAuthOK(cmd *cmdSpec) bool {
	switch cmd.name {
	case "auth", "hello", "quit", "reset":
		return true
	}
	return false
}

// password returns the default user's password; empty: nopass.
func (s *Server) password() string {
	if p := s.requirepass.Load(); p != nil {
		return *p
	}
	return ""
}

// authenticate makes the connection user's if the user exists, is on and
// pass is one of its passwords (any, with nopass); else WRONGPASS, logged
// in ACL LOG (reason "auth"). Digests are compared in constant time.
func (c *conn) authenticate(user, pass []byte) error {
	slot := c.s.acl.slot(string(user))
	var u *aclUser
	if slot != nil {
		u = slot.u.Load()
	}
	if u == nil || !u.on || !u.checkPassword(pass) {
		context := "toplevel"
		if c.multi != nil {
			context = "multi"
		}
		c.s.acl.logDenial("auth", context, "AUTH", string(user), c.info(), c.s.opts.Now())
		return errWrongPass
	}
	c.user.Store(slot)
	c.authed = true
	return nil
}

// defaultAuthed reports whether a new connection is authenticated as this
// (default) user: on, with nopass.
func (u *aclUser) defaultAuthed() bool { return u.on && u.nopass }

// AUTH [username] password. Reply: OK, WRONGPASS, or, for a password with
// no username while no password is set, Redis's "called without any
// password configured" error.
// https://redis.io/docs/latest/commands/auth/
func runAuth(x *exec) error {
	var user, pass []byte
	switch len(x.args) {
	case 2:
		if x.c.s.acl.def.u.Load().nopass {
			return errAuthNoPassword
		}
		user, pass = []byte("default"), x.args[1]
	case 3:
		user, pass = x.args[1], x.args[2]
	default:
		return errSyntax
	}
	if err := x.c.authenticate(user, pass); err != nil {
		return err
	}
	x.reply().OK()
	return nil
}

// protectedDenied reports whether protected mode refuses a connection from
// addr: it is on, the default user has no password, and addr is not a
// loopback address (Redis 7.0's clientAcceptHandler).
func (s *Server) protectedDenied(addr net.Addr) bool {
	if s.opts.ProtectedModeOff || !s.acl.def.u.Load().nopass {
		return false
	}
	ta, ok := addr.(*net.TCPAddr)
	return ok && !ta.IP.IsLoopback()
}
