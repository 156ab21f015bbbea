//go:build unix

package broker

import (
	"syscall"
	"time"
)

// watchClose watches the connection while a command blocks, without
// consuming input: it cancels c.ctx when the client closes its end, so a
// client that left is unblocked at once and consumes nothing. The returned
// func stops watching. When requests are already buffered behind the
// blocking one (a pipeline), or the connection cannot be polled, it does not
// watch; the client's departure is then noticed at the next read.
func (c *conn) watchClose() (stop func()) {
	sc, ok := c.nc.(syscall.Conn)
	if !ok || c.rd.Buffered() > 0 {
		return func() {}
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var b [1]byte
		rc.Read(func(fd uintptr) bool {
			n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			switch {
			case err == syscall.EAGAIN || err == syscall.EINTR:
				return false // nothing yet: wait for readiness
			case n > 0:
				return true // more requests arrived: the client is alive
			}
			c.cancel() // EOF or a socket error: the client is gone
			return true
		})
	}()
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.nc.SetReadDeadline(time.Now()) // ends rc.Read's wait
		<-done
		if !c.closing {
			c.nc.SetReadDeadline(time.Time{})
		}
	}
}
