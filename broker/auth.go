package broker

import (
	"crypto/sha256"
	"crypto/subtle"
	"net"
)

// Authentication as a Redis 7.0 server without ACL users configured: one
// user, "default", with the password requirepass (Options.RequirePass,
// CONFIG SET requirepass), or nopass when it is empty. A connection opened
// while a password is set must AUTH (or HELLO ... AUTH) before any command
// but AUTH, HELLO, QUIT and RESET; it gets "NOAUTH Authentication
// required." otherwise. Setting a password leaves the connections already
// open authenticated, as in Redis. docs/security.md.

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

// checkAuth checks user and password against the default user: nil, or
// WRONGPASS for another user or a wrong password. The comparison takes the
// same time whatever the password's first difference.
func (s *Server) checkAuth(user, pass []byte) error {
	if string(user) != "default" {
		return errWrongPass
	}
	want := s.password()
	if want == "" {
		return nil // nopass: any password
	}
	a, b := sha256.Sum256(pass), sha256.Sum256([]byte(want))
	if subtle.ConstantTimeCompare(a[:], b[:]) != 1 {
		return errWrongPass
	}
	return nil
}

// AUTH [username] password. Reply: OK, WRONGPASS, or, for a password with
// no username while no password is set, Redis's "called without any
// password configured" error.
// https://redis.io/docs/latest/commands/auth/
func runAuth(x *exec) error {
	var user, pass []byte
	switch len(x.args) {
	case 2:
		if x.c.s.password() == "" {
			return errAuthNoPassword
		}
		user, pass = []byte("default"), x.args[1]
	case 3:
		user, pass = x.args[1], x.args[2]
	default:
		return errSyntax
	}
	if err := x.c.s.checkAuth(user, pass); err != nil {
		return err
	}
	x.c.authed = true
	x.reply().OK()
	return nil
}

// protectedDenied reports whether protected mode refuses a connection from
// addr: it is on, the default user has no password, and addr is not a
// loopback address (Redis 7.0's clientAcceptHandler).
func (s *Server) protectedDenied(addr net.Addr) bool {
	if s.opts.ProtectedModeOff || s.password() != "" {
		return false
	}
	ta, ok := addr.(*net.TCPAddr)
	return ok && !ta.IP.IsLoopback()
}
