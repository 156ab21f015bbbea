//go:build !linux

package broker

import (
	"errors"
	"net"
)

// eventLoops need epoll: elsewhere every connection has a goroutine.
type eventLoops struct{}

func newEventLoops(*Server, int) (*eventLoops, error) {
	return nil, errors.New("broker: event loops need Linux")
}

func (*eventLoops) wrap(net.Conn) net.Conn { return nil }
func (*eventLoops) prepare(*conn)          {}
func (*eventLoops) add(*conn)              {}
func (*eventLoops) stop()                  {}
func (*eventLoops) count() int             { return 0 }

// leaveLoop: no connection is in a loop.
func (c *conn) leaveLoop() {}

// inLoop: no connection is in a loop.
func (c *conn) inLoop() bool { return false }

// withRawIO returns nc: raw socket calls are Linux's (rawio_linux.go).
func withRawIO(nc net.Conn) net.Conn { return nc }
