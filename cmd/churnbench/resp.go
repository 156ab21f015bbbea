package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// respConn is a bare RESP2 client connection: one command at a time, no
// pool, no hooks, no retries. The blocked workload opens one per worker, so
// a thousand workers cost the client a goroutine, a socket and a 1 KiB
// buffer each, and closing the socket ends a blocked read at once.
type respConn struct {
	nc net.Conn
	br *bufio.Reader
}

// respError is an error reply from the server.
type respError string

func (e respError) Error() string { return string(e) }

// dialRESP connects to addr within timeout.
func dialRESP(addr string, timeout time.Duration) (*respConn, error) {
	nc, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	return &respConn{nc: nc, br: bufio.NewReaderSize(nc, 1024)}, nil
}

func (c *respConn) close() error { return c.nc.Close() }

// encodeCommand returns args as a RESP array of bulk strings, ready for do.
func encodeCommand(args ...string) []byte {
	b := fmt.Appendf(nil, "*%d\r\n", len(args))
	for _, a := range args {
		b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b
}

// do sends req (from encodeCommand) and reads one reply, both within
// timeout. The reply is a string (simple or bulk), an int64, nil (a null
// bulk string or null array) or a []any of those. An error reply is
// returned as a respError.
func (c *respConn) do(req []byte, timeout time.Duration) (any, error) {
	if err := c.nc.SetDeadline(time.Now().Add(timeout)); err != nil {
		return nil, err
	}
	if _, err := c.nc.Write(req); err != nil {
		return nil, err
	}
	v, err := readReply(c.br, 0)
	if err != nil {
		return nil, err
	}
	if e, ok := v.(respError); ok {
		return nil, e
	}
	return v, nil
}

// Limits on what readReply accepts, far above anything the workloads get
// back: a reply beyond them is a broken stream, not data.
const (
	maxReplyDepth = 8
	maxReplyLen   = 1 << 20
)

var errProtocol = errors.New("malformed RESP reply")

// readReply reads one RESP2 reply; error replies are returned as values.
func readReply(br *bufio.Reader, depth int) (any, error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, fmt.Errorf("%w: line longer than %d bytes", errProtocol, br.Size())
		}
		return nil, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("%w: %q", errProtocol, line)
	}
	kind, body := line[0], string(line[1:len(line)-2])
	switch kind {
	case '+':
		return body, nil
	case '-':
		return respError(body), nil
	case ':':
		n, err := strconv.ParseInt(body, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: integer %q", errProtocol, body)
		}
		return n, nil
	case '$', '*':
		n, err := strconv.Atoi(body)
		if err != nil || n < -1 || n > maxReplyLen {
			return nil, fmt.Errorf("%w: length %q", errProtocol, body)
		}
		if n == -1 {
			return nil, nil
		}
		if kind == '$' {
			buf := make([]byte, n+2)
			if _, err := io.ReadFull(br, buf); err != nil {
				return nil, err
			}
			if buf[n] != '\r' || buf[n+1] != '\n' {
				return nil, fmt.Errorf("%w: bulk string not ended by CRLF", errProtocol)
			}
			return string(buf[:n]), nil
		}
		if depth >= maxReplyDepth {
			return nil, fmt.Errorf("%w: nested deeper than %d", errProtocol, maxReplyDepth)
		}
		arr := make([]any, n)
		for i := range arr {
			if arr[i], err = readReply(br, depth+1); err != nil {
				return nil, err
			}
		}
		return arr, nil
	}
	return nil, fmt.Errorf("%w: type byte %q", errProtocol, kind)
}
