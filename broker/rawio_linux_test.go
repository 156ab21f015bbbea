package broker

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestRawSocketCalls checks the event loops' raw system calls
// (rawio_linux.go) on a socket pair, directly: under the race detector
// the loops use syscall's instead, so the loop tests alone would not
// reach them there.
func TestRawSocketCalls(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	a, b := fds[0], fds[1]
	aOpen := true
	defer func() {
		if aOpen {
			unix.Close(a)
		}
		unix.Close(b)
	}()
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(ep)
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, b, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(b)}); err != nil {
		t.Fatal(err)
	}
	evs := make([]unix.EpollEvent, 4)
	buf := make([]byte, 64<<10)

	// Nothing sent: no event, and a read that would block.
	if n, err := rawEpollWait0(ep, evs); n != 0 || err != nil {
		t.Fatalf("epoll with nothing sent: %d, %v", n, err)
	}
	if n, err := rawRead(b, buf); n != 0 || err != syscall.EAGAIN {
		t.Fatalf("read with nothing sent: %d, %v; want EAGAIN", n, err)
	}

	if n, err := rawWrite(a, []byte("+PONG\r\n")); n != 7 || err != nil {
		t.Fatalf("write: %d, %v", n, err)
	}
	if n, err := rawEpollWait0(ep, evs); n != 1 || err != nil || evs[0].Fd != int32(b) || evs[0].Events&unix.EPOLLIN == 0 {
		t.Fatalf("epoll after a write: %d, %v, %+v", n, err, evs[0])
	}
	if n, err := rawRead(b, buf); err != nil || string(buf[:n]) != "+PONG\r\n" {
		t.Fatalf("read: %q, %v", buf[:n], err)
	}

	// writev passes at most rawWritevMax slices, skipping empty ones.
	var bufs [][]byte
	var want []byte
	for i := range rawWritevMax + 10 {
		s := []byte{byte('a' + i%26)}
		if i%7 == 3 {
			bufs = append(bufs, nil)
		}
		bufs = append(bufs, s)
		want = append(want, s...)
	}
	n, err := rawWritev(a, bufs)
	if err != nil || n != rawWritevMax {
		t.Fatalf("writev of %d slices: %d, %v; want %d", len(bufs), n, err, rawWritevMax)
	}
	got := make([]byte, 0, n)
	for len(got) < n {
		k, err := rawRead(b, buf)
		if err != nil {
			t.Fatalf("read after writev: %v", err)
		}
		got = append(got, buf[:k]...)
	}
	if !bytes.Equal(got, want[:n]) {
		t.Fatalf("writev sent %q, want %q", got, want[:n])
	}

	// A full socket: the write is short or would block, never waits.
	big := make([]byte, 8<<20)
	total := 0
	for {
		k, err := rawWrite(a, big)
		if err == syscall.EAGAIN {
			break
		}
		if err != nil {
			t.Fatalf("write to a filling socket: %v", err)
		}
		total += k
		if total > 64<<20 {
			t.Fatal("a socket pair took 64 MiB without blocking")
		}
	}
	if total == 0 {
		t.Fatal("no bytes written before EAGAIN")
	}

	// The peer gone: end of stream on read.
	unix.Close(a)
	aOpen = false
	for {
		k, err := rawRead(b, buf)
		if err != nil {
			t.Fatalf("read to end of stream: %v", err)
		}
		if k == 0 {
			break
		}
	}
}

// TestRawSock checks the goroutine path's raw socket (rawSock) against
// net.Conn's contract: whole writes, partial reads, a read deadline's
// timeout error, io.EOF at the peer's close, and writev of many slices.
func TestRawSock(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	peer, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	nc, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	defer nc.Close()
	rc, err := nc.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	s := &rawSock{Conn: nc, rc: rc}

	// A read waits in the poller until the peer writes.
	go peer.Write([]byte("*1\r\n$4\r\nPING\r\n"))
	buf := make([]byte, 4)
	got := []byte{}
	for len(got) < 14 {
		n, err := s.Read(buf)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		got = append(got, buf[:n]...)
	}
	if string(got) != "*1\r\n$4\r\nPING\r\n" {
		t.Fatalf("read %q", got)
	}

	// A deadline ends a read that waits, with a timeout error.
	s.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if n, err := s.Read(buf); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past a deadline: %d, %v", n, err)
	} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("read past a deadline: %v is not a timeout", err)
	}
	s.SetReadDeadline(time.Time{})

	// A write larger than the socket's buffers waits for the peer's
	// reads and writes all of it.
	big := bytes.Repeat([]byte("0123456789"), 1<<20)
	done := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(peer, int64(len(big)+3*rawWritevMax)))
		done <- b
	}()
	if n, err := s.Write(big); n != len(big) || err != nil {
		t.Fatalf("write of %d bytes: %d, %v", len(big), n, err)
	}
	var bufs [][]byte
	var want []byte
	for i := range 3 * rawWritevMax {
		b := []byte{byte('a' + i%26)}
		bufs = append(bufs, b)
		want = append(want, b...)
	}
	if err := s.WriteVec(bufs); err != nil {
		t.Fatalf("writev: %v", err)
	}
	if b := <-done; !bytes.Equal(b, append(big, want...)) {
		t.Fatalf("the peer read %d bytes, want %d", len(b), len(big)+len(want))
	}

	// The peer's close: io.EOF.
	peer.Close()
	if n, err := s.Read(buf); n != 0 || err != io.EOF {
		t.Fatalf("read after the peer closed: %d, %v", n, err)
	}
}
