package broker

import (
	"bytes"
	"syscall"
	"testing"

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
