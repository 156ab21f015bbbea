//go:build linux

package main

import (
	"golang.org/x/sys/unix"
)

// serveEpoll serves connections on 127.0.0.1:port from one epoll loop on
// the calling goroutine's thread. A reply the socket does not take whole
// is retried until it does (replies here are a few bytes a request).
func serveEpoll(port int) error {
	lfd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return err
	}
	if err := unix.SetsockoptInt(lfd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		return err
	}
	if err := unix.Bind(lfd, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return err
	}
	if err := unix.Listen(lfd, 1024); err != nil {
		return err
	}
	ep, err := unix.EpollCreate1(0)
	if err != nil {
		return err
	}
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, lfd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(lfd)}); err != nil {
		return err
	}
	type conn struct{ in, out []byte }
	conns := map[int]*conn{}
	evs := make([]unix.EpollEvent, 256)
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.EpollWait(ep, evs, -1)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		for _, ev := range evs[:n] {
			fd := int(ev.Fd)
			if fd == lfd {
				for {
					nfd, _, err := unix.Accept4(lfd, unix.SOCK_NONBLOCK)
					if err != nil {
						break
					}
					_ = unix.SetsockoptInt(nfd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
					if unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, nfd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(nfd)}) != nil {
						unix.Close(nfd)
						continue
					}
					conns[nfd] = &conn{}
				}
				continue
			}
			c := conns[fd]
			k, err := unix.Read(fd, buf)
			if err == unix.EAGAIN || err == unix.EINTR {
				continue
			}
			if k <= 0 {
				unix.Close(fd) // also leaves the epoll set
				delete(conns, fd)
				continue
			}
			c.in = append(c.in, buf[:k]...)
			var used int
			used, c.out = parse(c.in, c.out[:0])
			c.in = c.in[:copy(c.in, c.in[used:])]
			for out := c.out; len(out) > 0; {
				w, err := unix.Write(fd, out)
				if err != nil && err != unix.EAGAIN && err != unix.EINTR {
					break
				}
				if w > 0 {
					out = out[w:]
				}
			}
		}
	}
}
