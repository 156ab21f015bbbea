package broker

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The event loops' socket system calls (read, write, writev and
// epoll_wait with no timeout) are made without the runtime's system-call
// bookkeeping. syscall.Read and its kind call entersyscall first: the
// goroutine's processor is marked as in a system call that may block, and
// the runtime's monitor thread (sysmon) takes a processor back from a
// call that spans one of its ticks (20 µs or more) and hands it to another
// thread to run the writer or the other loop; sysmon sleeps its shortest
// while it finds such work. On a loaded two-processor VM (inferred from
// the counts, not traced per call): 0.6 context switches per unpipelined
// SET, 14 % of the server's CPU samples under the kernel's task switch,
// sysmon's nanosleep alone 4.8 % (docs/perf.md, "Socket calls without the
// scheduler"). The loops' sockets are non-blocking, so
// these calls never wait: a raw call, which the scheduler does not see,
// costs the kernel's work alone.
//
// Under the race detector the calls go through syscall.Read and
// syscall.Write instead, whose annotations give the detector the same
// ordering of socket I/O as net.Conn's (the loop's read was syscall's,
// not unix's, for that reason before these calls existed).

// sockRead is read(2) of a non-blocking socket: n bytes, EAGAIN when
// nothing is there, 0 bytes and no error at the end of the stream.
func sockRead(fd int, p []byte) (int, error) {
	if raceEnabled {
		return syscall.Read(fd, p)
	}
	return rawRead(fd, p)
}

// sockWrite is write(2) of a non-blocking socket.
func sockWrite(fd int, p []byte) (int, error) {
	if raceEnabled {
		return syscall.Write(fd, p)
	}
	return rawWrite(fd, p)
}

// sockWritev is writev(2) of a non-blocking socket: at most len(bufs) of
// the slices, fewer when more than rawWritevMax (the rest is the caller's
// next call, as after a short write).
func sockWritev(fd int, bufs [][]byte) (int, error) {
	if raceEnabled {
		return unix.Writev(fd, bufs)
	}
	return rawWritev(fd, bufs)
}

// pollReady is epoll_wait(2) of ep with a zero timeout: the events ready
// now, never waiting.
func pollReady(ep int, evs []unix.EpollEvent) (int, error) {
	if raceEnabled {
		return unix.EpollWait(ep, evs, 0)
	}
	return rawEpollWait0(ep, evs)
}

func rawRead(fd int, p []byte) (int, error)  { return rawReadWrite(unix.SYS_READ, fd, p) }
func rawWrite(fd int, p []byte) (int, error) { return rawReadWrite(unix.SYS_WRITE, fd, p) }

// rawReadWrite is read(2) or write(2) (trap) of p on fd.
func rawReadWrite(trap uintptr, fd int, p []byte) (int, error) {
	var ptr unsafe.Pointer
	if len(p) > 0 {
		ptr = unsafe.Pointer(&p[0])
	}
	n, _, e := syscall.RawSyscall(trap, uintptr(fd), uintptr(ptr), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// rawWritevMax is the most slices rawWritev passes at once (its vector is
// on the stack).
const rawWritevMax = 64

func rawWritev(fd int, bufs [][]byte) (int, error) {
	var iov [rawWritevMax]unix.Iovec
	k := 0
	for _, b := range bufs {
		if k == len(iov) {
			break
		}
		if len(b) == 0 {
			continue
		}
		iov[k].Base = &b[0]
		iov[k].SetLen(len(b))
		k++
	}
	if k == 0 {
		return 0, nil
	}
	n, _, e := syscall.RawSyscall(unix.SYS_WRITEV, uintptr(fd), uintptr(unsafe.Pointer(&iov[0])), uintptr(k))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

func rawEpollWait0(ep int, evs []unix.EpollEvent) (int, error) {
	n, _, e := syscall.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(ep), uintptr(unsafe.Pointer(&evs[0])), uintptr(len(evs)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// rawSock is a connected TCP or Unix socket served by a goroutine (a
// connection handed off by its event loop, or any plain connection when
// there are no loops) whose reads and writes are raw system calls too:
// only a socket that is not ready waits, in the runtime's poller
// (syscall.RawConn), as net.Conn's would. Deadlines, Close and the other
// methods are the socket's own.
type rawSock struct {
	net.Conn
	rc syscall.RawConn
}

// withRawIO returns nc reading and writing with raw system calls, or nc
// itself under the race detector or when nc is not a plain socket.
func withRawIO(nc net.Conn) net.Conn {
	if raceEnabled {
		return nc
	}
	switch nc.(type) {
	case *net.TCPConn, *net.UnixConn:
	default:
		return nc
	}
	rc, err := nc.(syscall.Conn).SyscallConn()
	if err != nil {
		return nc
	}
	return &rawSock{Conn: nc, rc: rc}
}

// SyscallConn is the socket's (socketFD, the peer watch).
func (s *rawSock) SyscallConn() (syscall.RawConn, error) { return s.rc, nil }

func (s *rawSock) opError(op string, err error) error {
	if errno, ok := err.(syscall.Errno); ok {
		err = os.NewSyscallError(op, errno)
	}
	return &net.OpError{Op: op, Net: s.LocalAddr().Network(), Source: s.LocalAddr(), Addr: s.RemoteAddr(), Err: err}
}

// Read is net.Conn's: at most len(p) bytes, io.EOF at the end of the
// stream, an error after a deadline or Close.
func (s *rawSock) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var err error
	if werr := s.rc.Read(func(fd uintptr) bool {
		for {
			n, err = rawRead(int(fd), p)
			if err != syscall.EINTR {
				return err != syscall.EAGAIN
			}
		}
	}); werr != nil {
		return 0, werr // a deadline or Close (net's OpError)
	}
	switch {
	case err != nil:
		return 0, s.opError("read", err)
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// Write is net.Conn's: all of p, or the bytes written before an error.
func (s *rawSock) Write(p []byte) (int, error) {
	n := 0
	var err error
	if werr := s.rc.Write(func(fd uintptr) bool {
		for n < len(p) {
			k, e := rawWrite(int(fd), p[n:])
			switch e {
			case nil:
				n += k
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false
			default:
				err = e
				return true
			}
		}
		return true
	}); werr != nil {
		return n, werr
	}
	if err != nil {
		return n, s.opError("write", err)
	}
	return n, nil
}

// WriteVec writes the slices of bufs in order (vectorWriter), with
// writev: all of them, or an error. It changes the slices of bufs.
func (s *rawSock) WriteVec(bufs [][]byte) error {
	var err error
	if werr := s.rc.Write(func(fd uintptr) bool {
		for len(bufs) > 0 {
			k, e := rawWritev(int(fd), bufs)
			switch e {
			case nil:
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false
			default:
				err = e
				return true
			}
			bufs = dropWritten(bufs, k)
		}
		return true
	}); werr != nil {
		return werr
	}
	if err != nil {
		return s.opError("writev", err)
	}
	return nil
}

// dropWritten returns bufs without its first k bytes, which a write took
// (the first slice left shortened in place), and without empty slices
// at its front.
func dropWritten(bufs [][]byte, k int) [][]byte {
	for k > 0 {
		if k < len(bufs[0]) {
			bufs[0] = bufs[0][k:]
			break
		}
		k -= len(bufs[0])
		bufs = bufs[1:]
	}
	for len(bufs) > 0 && len(bufs[0]) == 0 {
		bufs = bufs[1:]
	}
	return bufs
}
