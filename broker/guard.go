package broker

// guardEvery is how many keys a scan visits between two checks that its
// client is still there.
const guardEvery = 256

// clientGuard is the command.Guard of a connection: it lets a long scan
// of the keyspace (KEYS, SCAN with a large COUNT) stop once its client
// has gone. Every guardEvery keys it checks the connection's context, which
// a server shutdown cancels; from the first check on, the non-consuming
// close watcher (watchClose) also cancels it when the client closes its
// end. Short scans thus start no watcher.
//
// Like a blocked command, the scan stops on end of file from the client, so
// a client that half-closes its socket right after a long KEYS gets no
// reply; Redis, which reads nothing while KEYS runs, would still answer it.
type clientGuard struct {
	c    *conn
	n    int
	stop func() // stops the watcher; nil until the first check
	left bool   // the client has gone (or the server is closing)
}

// Gone counts one visited key and reports whether the client has gone.
func (g *clientGuard) Gone() bool {
	if g.left {
		return true
	}
	g.n++
	if g.n%guardEvery != 0 {
		return false
	}
	if g.stop == nil {
		g.stop = g.c.watchClose()
	}
	g.left = g.c.ctx.Err() != nil
	return g.left
}

// Release stops the watcher, if Gone started one.
func (g *clientGuard) Release() {
	if g.stop != nil {
		g.stop()
	}
}
