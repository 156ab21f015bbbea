package broker

import "time"

// errShutdownFailed is Redis's reply to a SHUTDOWN whose save failed.
var errShutdownFailed = wireError("ERR Errors trying to SHUTDOWN. Check logs.")

func init() {
	register(
		&cmdSpec{name: "shutdown", arity: -1, flags: flagAdmin | flagNoScript | flagLoading | flagStale | flagNoMulti, group: "server", since: "1.0.0", summary: "Synchronously saves the database(s) to disk and shuts down the Redis server.", run: runShutdown, ownGoroutine: true},
	)
}

// SHUTDOWN [NOSAVE | SAVE] [NOW] [FORCE] [ABORT]: stops the server as a
// SIGTERM does (Server.Close: connections finish what they read, the
// change log is synced, the store closed), then Options.OnShutdown tells
// the program to exit. The caller gets no reply: its connection closes, as
// with Redis. Every write acknowledged before it is durable either way
// (the change log is the data). SAVE writes the checkpoint of SAVE first
// (save.go; after a BGSAVE running ends); when it fails the server stays
// up and replies Redis's "Errors trying to SHUTDOWN. Check logs.", unless
// FORCE. NOSAVE and NOW change nothing. ABORT gets "No shutdown in
// progress." (a shutdown is never pending here). Inside MULTI it is
// refused when queued.
// https://redis.io/docs/latest/commands/shutdown/
func runShutdown(x *exec) error {
	save, nosave, abort, force := false, false, false, false
	for _, a := range x.args[1:] {
		switch {
		case equalFold(a, "NOSAVE"):
			nosave = true
		case equalFold(a, "SAVE"):
			save = true
		case equalFold(a, "FORCE"):
			force = true
		case equalFold(a, "NOW"):
		case equalFold(a, "ABORT"):
			abort = true
		default:
			return errSyntax
		}
	}
	if save && nosave || abort && len(x.args) > 2 {
		return errSyntax
	}
	if abort {
		return errNoShutdown
	}
	s := x.c.s
	if save {
		for s.saves.begin(false, s.opts.Now()) != nil {
			time.Sleep(10 * time.Millisecond) // a BGSAVE runs: it ends by itself
		}
		if _, err := s.checkpoint(); err != nil && !force {
			return errShutdownFailed
		}
	}
	s.opts.Logger.Info("SHUTDOWN requested", "client", x.c.id)
	x.c.closeAfter = true
	go func() {
		s.Close()
		if s.opts.OnShutdown != nil {
			s.opts.OnShutdown()
		}
	}()
	return nil
}
