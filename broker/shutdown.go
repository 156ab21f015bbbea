package broker

func init() {
	register(
		&cmdSpec{name: "shutdown", arity: -1, flags: flagAdmin | flagNoScript | flagLoading | flagStale, group: "server", since: "1.0.0", summary: "Synchronously saves the database(s) to disk and shuts down the Redis server.", run: runShutdown},
	)
}

// SHUTDOWN [NOSAVE | SAVE] [NOW] [FORCE] [ABORT]: stops the server as a
// SIGTERM does (Server.Close: connections finish what they read, the
// change log is synced, the store closed), then Options.OnShutdown tells
// the program to exit. The caller gets no reply: its connection closes, as
// with Redis. Every write acknowledged before it is durable either way
// (the change log is the data), so NOSAVE and SAVE change nothing; NOW and
// FORCE are accepted. ABORT gets "No shutdown in progress." (a shutdown is
// never pending here). Inside MULTI it is refused when queued.
// https://redis.io/docs/latest/commands/shutdown/
func runShutdown(x *exec) error {
	save, nosave, abort := false, false, false
	for _, a := range x.args[1:] {
		switch {
		case equalFold(a, "NOSAVE"):
			nosave = true
		case equalFold(a, "SAVE"):
			save = true
		case equalFold(a, "NOW"), equalFold(a, "FORCE"):
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
