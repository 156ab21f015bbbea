package broker

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math"

	"github.com/sediment-dev/sediment/command"
)

// Default request limits. They match the Redis 7.0 defaults of the same
// settings (proto-max-bulk-len, the INT_MAX multibulk check,
// PROTO_INLINE_MAX_SIZE and client-query-buffer-limit).
const (
	readerDefaultMaxBulkLen     = 512 << 20
	readerDefaultMaxMultibulk   = math.MaxInt32
	readerDefaultMaxInline      = 64 << 10
	readerDefaultMaxQueryBuffer = 1 << 30

	// readerBufferSize is the size of the internal bufio.Reader.
	readerBufferSize = 32 << 10
	// readerTrustedChunk is how much of a declared bulk length is trusted
	// before any of its bytes have arrived. Beyond that, the argument buffer
	// grows only in proportion to what has actually been received.
	readerTrustedChunk = 1 << 20
	// readerMinArgCap is the smallest backing allocation for a multibulk
	// request whose arguments are still arriving.
	readerMinArgCap = 32
	// readerMaxRetainedScratch caps the scratch memory a Reader keeps between
	// requests; larger scratch buffers are dropped after use.
	readerMaxRetainedScratch = 64 << 10
)

// Limits bounds what one client may send. Zero (or negative) fields take the
// defaults documented on each field.
type Limits struct {
	// MaxBulkLen is the largest accepted bulk argument ($<len>), like Redis's
	// proto-max-bulk-len. Default 512 MiB.
	MaxBulkLen int64
	// MaxMultibulk is the largest accepted element count in one *<n>
	// request. Default and upper bound: math.MaxInt32, the INT_MAX check of
	// Redis; larger values are clamped to it.
	MaxMultibulk int64
	// MaxInline is the longest accepted inline request line and the longest
	// *<n> / $<len> header line, in bytes before the '\n', like Redis's
	// PROTO_INLINE_MAX_SIZE. Default 64 KiB.
	MaxInline int
	// MaxQueryBuffer bounds the bytes of one request (all arguments plus
	// framing), like Redis's client-query-buffer-limit. Default 1 GiB.
	MaxQueryBuffer int64
}

func (l Limits) withDefaults() Limits {
	if l.MaxBulkLen <= 0 {
		l.MaxBulkLen = readerDefaultMaxBulkLen
	}
	if l.MaxMultibulk <= 0 || l.MaxMultibulk > readerDefaultMaxMultibulk {
		l.MaxMultibulk = readerDefaultMaxMultibulk
	}
	if l.MaxInline <= 0 {
		l.MaxInline = readerDefaultMaxInline
	}
	if l.MaxQueryBuffer <= 0 {
		l.MaxQueryBuffer = readerDefaultMaxQueryBuffer
	}
	return l
}

// ProtocolError is returned for malformed or over-limit input. Msg (and
// Error()) is the exact Redis wire text without the leading '-', e.g.
// "ERR Protocol error: invalid bulk length". After one, the caller should
// send it as an error reply and close the connection: the rest of the
// stream can no longer be framed.
type ProtocolError struct{ Msg string }

func (e *ProtocolError) Error() string { return e.Msg }

func readerProtoErr(msg string) error { return &ProtocolError{Msg: msg} }

// Reader reads RESP requests, both multibulk (*<n>\r\n$<len>\r\n<bytes>\r\n...)
// and inline (PING\r\n), from a client connection.
//
// It replaces the request parser of redcon, which has no request limits (a
// declared bulk length near MaxInt64 overflows its arithmetic and panics, a
// huge *<n> makes it spin, and bulk sizes are unbounded). Reader enforces the
// Limits while reading, following Redis 7.0 (networking.c,
// processMultibulkBuffer / processInlineBuffer):
//
//   - *<n> counts and $<len> lengths are parsed like Redis's string2ll (no
//     sign other than a leading '-', no leading zeros, overflow-checked), so
//     values such as $9223372036854775800 or $99999999999999999999999 are
//     rejected, never wrapped. Counts above MaxMultibulk give "invalid
//     multibulk length"; lengths that are negative or above MaxBulkLen give
//     "invalid bulk length".
//   - Header and inline lines longer than MaxInline are rejected as soon as
//     that many bytes are buffered without a '\n', without waiting for more.
//   - Nothing is allocated according to a client-declared size before the
//     bytes have arrived: the argument slice starts small and grows as
//     arguments arrive, and a bulk payload's buffer grows geometrically with
//     the bytes actually received (trusting at most 1 MiB of a declaration
//     up front). A client that declares $536870912 and sends 10 bytes costs
//     about 1 MiB, not 512 MiB.
//   - The total size of one request, counting framing, is bounded by
//     MaxQueryBuffer; it is checked against each declared bulk length before
//     the payload is read ("query buffer limit exceeded").
//
// Deviations from Redis, all of them stricter: header lines must end in
// "\r\n" (a bare '\n' makes the number invalid); a bulk payload must be
// followed by "\r\n" (Redis skips any two bytes); an inline request is split
// at its first NUL byte as Redis's sdssplitargs does, rather than never being
// found complete; a request that cannot fit in MaxQueryBuffer gets an error
// reply instead of a silent close.
//
// After ReadCommand returns an error the Reader is finished: the error is
// sticky and returned by every later call.
//
// A Reader is not safe for concurrent use.
type Reader struct {
	br   *bufio.Reader
	lim  Limits
	line []byte // scratch: the current header / inline line
	ends []int  // scratch: end offsets of the current multibulk's arguments
	err  error  // sticky error
	// inline: the last request returned was an inline command (its
	// arguments share an array sized to the line, not to them).
	inline bool
}

// Inline reports whether the last request ReadCommand returned was an
// inline command rather than a multibulk one.
func (r *Reader) Inline() bool { return r.inline }

// NewReader returns a Reader that reads requests from rd, typically a
// net.Conn, with the given limits (zero fields take the defaults).
func NewReader(rd io.Reader, lim Limits) *Reader {
	return &Reader{
		br:  bufio.NewReaderSize(rd, readerBufferSize),
		lim: lim.withDefaults(),
	}
}

// Buffered returns the number of bytes already read from the connection but
// not yet consumed. After ReadCommand returns a command, these bytes belong
// to further (pipelined) requests, so a caller may execute commands until
// Buffered() == 0 before flushing its replies.
func (r *Reader) Buffered() int { return r.br.Buffered() }

// ReadCommand returns the arguments of the next request. Empty inline lines
// and *0 / *-1 (any count <= 0) requests are skipped, never returned, so a
// returned command always has at least one argument, and every argument is a
// non-nil slice (possibly empty).
//
// The returned slices are owned by the caller and may be retained: the
// Reader never reuses their memory. All arguments of one command share one
// backing array, each capped to its own length (appending to one argument
// cannot overwrite another), so retaining a small argument of a large
// command keeps the whole command's memory alive; copy it if that matters.
//
// It returns io.EOF when the connection ends cleanly between requests,
// io.ErrUnexpectedEOF when it ends in the middle of one, a *ProtocolError for
// malformed or over-limit input, and other errors from the underlying reader
// as they are.
func (r *Reader) ReadCommand() ([][]byte, error) {
	if r.err != nil {
		return nil, r.err
	}
	for {
		args, err := r.readRequest()
		if err == errWouldBlock {
			return nil, err // between requests: nothing is lost
		}
		if err != nil {
			r.err = err
			return nil, err
		}
		if len(args) > 0 {
			return args, nil
		}
	}
}

// readRequest reads one request; it returns no arguments and no error for
// requests that are to be skipped.
func (r *Reader) readRequest() ([][]byte, error) {
	b, err := r.br.Peek(1)
	if err != nil {
		return nil, err // io.EOF here is a clean end
	}
	r.inline = b[0] != '*'
	if !r.inline {
		return r.readMultibulk()
	}
	return r.readInline()
}

func (r *Reader) readInline() ([][]byte, error) {
	line, err := r.readLine(readerErrTooBigInline)
	if err != nil {
		return nil, err
	}
	if int64(len(line)) >= r.lim.MaxQueryBuffer { // line plus its '\n'
		return nil, readerProtoErr(readerErrQueryBuffer)
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return readerSplitArgs(line)
}

func (r *Reader) readMultibulk() ([][]byte, error) {
	line, err := r.readLine(readerErrTooBigMbulk)
	if err != nil {
		return nil, err
	}
	n, ok := readerParseHeader(line) // line[0] == '*'
	if !ok || n > r.lim.MaxMultibulk {
		return nil, readerProtoErr(readerErrMultibulkLen)
	}
	total := int64(len(line)) + 1 // bytes of this request so far
	if total > r.lim.MaxQueryBuffer {
		return nil, readerProtoErr(readerErrQueryBuffer)
	}
	if n <= 0 {
		return nil, nil
	}

	ends := r.ends[:0]
	var data []byte
	for i := int64(0); i < n; i++ {
		line, err := r.readLine(readerErrTooBigBulk)
		if err != nil {
			return nil, err
		}
		if len(line) == 0 || line[0] != '$' {
			got := byte('\n') // an empty line: the first byte was its '\n'
			if len(line) > 0 {
				got = line[0]
			}
			if got == '\r' || got == '\n' { // as Redis: no newlines in errors
				got = ' '
			}
			return nil, readerProtoErr("ERR Protocol error: expected '$', got '" + string([]byte{got}) + "'")
		}
		ll, ok := readerParseHeader(line)
		if !ok || ll < 0 || ll > r.lim.MaxBulkLen {
			return nil, readerProtoErr(readerErrBulkLen)
		}
		total += int64(len(line)) + 1
		// total <= MaxQueryBuffer here, so the right side cannot overflow.
		if total > r.lim.MaxQueryBuffer || ll > r.lim.MaxQueryBuffer-total-2 {
			return nil, readerProtoErr(readerErrQueryBuffer)
		}
		total += ll + 2
		data, err = r.readBulk(data, ll, i == n-1)
		if err != nil {
			return nil, err
		}
		ends = append(ends, len(data))
	}

	if data == nil {
		data = []byte{} // every argument was empty; keep them non-nil
	}
	args := make([][]byte, len(ends))
	start := 0
	for i, end := range ends {
		args[i] = data[start:end:end]
		start = end
	}
	if cap(ends) > readerMaxRetainedScratch/8 {
		ends = nil
	}
	r.ends = ends[:0]
	return args, nil
}

// readBulk appends a bulk payload of ll bytes to data, followed by checking
// its trailing "\r\n". last reports whether it is the request's last
// argument, in which case data is never grown beyond what it needs.
func (r *Reader) readBulk(data []byte, ll int64, last bool) ([]byte, error) {
	for remaining := ll; remaining > 0; {
		if len(data) == cap(data) {
			data = readerGrow(data, remaining, last)
		}
		k := int64(cap(data) - len(data))
		if k > remaining {
			k = remaining
		}
		start := len(data)
		data = data[:start+int(k)]
		if _, err := io.ReadFull(r.br, data[start:]); err != nil {
			return nil, readerUnexpected(err)
		}
		remaining -= k
	}
	crlf, err := r.br.Peek(2)
	if err != nil {
		if len(crlf) > 0 && crlf[0] != '\r' {
			return nil, readerProtoErr(readerErrBulkCRLF)
		}
		return nil, readerUnexpected(err)
	}
	if crlf[0] != '\r' || crlf[1] != '\n' {
		return nil, readerProtoErr(readerErrBulkCRLF)
	}
	if _, err := r.br.Discard(2); err != nil {
		return nil, readerUnexpected(err)
	}
	return data, nil
}

// readerGrow returns data (full: len == cap) with more capacity, for an
// argument of which remaining > 0 bytes are still to come. It trusts the
// declared remaining size only up to max(len(data), 1 MiB), so memory is
// bounded by about twice the bytes actually received plus 1 MiB; growth is
// at least geometric so that many small arguments cost amortized O(1) each.
func readerGrow(data []byte, remaining int64, last bool) []byte {
	have := int64(len(data))
	trust := have
	if trust < readerTrustedChunk {
		trust = readerTrustedChunk
	}
	add := remaining
	if add > trust {
		add = trust
	}
	newCap := have + add
	if c := 2 * int64(cap(data)); newCap < c {
		newCap = c
	}
	if newCap < readerMinArgCap {
		newCap = readerMinArgCap
	}
	if last && newCap > have+remaining {
		newCap = have + remaining // nothing follows this argument
	}
	// Not zeroed: readBulk fills every byte it extends the slice over, or fails.
	return append(makeNoZero(int(newCap)), data...)
}

// readLine reads one line and returns its bytes before the '\n' (including
// any '\r'). The result is valid until the next readLine call. If more than
// MaxInline bytes arrive without a '\n' it fails with the ProtocolError
// tooBig, as soon as those bytes are buffered.
func (r *Reader) readLine(tooBig string) ([]byte, error) {
	limit := r.lim.MaxInline
	if cap(r.line) > readerMaxRetainedScratch {
		r.line = nil
	}
	r.line = r.line[:0]
	scanned := 0 // buffered bytes already known to hold no '\n'
	for {
		n := r.br.Buffered()
		if n == 0 {
			if _, err := r.br.Peek(1); err != nil {
				return nil, readerUnexpected(err)
			}
			n = r.br.Buffered()
			scanned = 0
		}
		buf, _ := r.br.Peek(n)
		if i := bytes.IndexByte(buf[scanned:], '\n'); i >= 0 {
			i += scanned
			if len(r.line)+i > limit {
				return nil, readerProtoErr(tooBig)
			}
			r.line = append(r.line, buf[:i]...)
			if _, err := r.br.Discard(i + 1); err != nil {
				return nil, readerUnexpected(err)
			}
			return r.line, nil
		}
		if len(r.line)+n > limit {
			return nil, readerProtoErr(tooBig)
		}
		if n >= r.br.Size() {
			// The line is longer than the buffer: move what we have aside.
			r.line = append(r.line, buf...)
			if _, err := r.br.Discard(n); err != nil {
				return nil, readerUnexpected(err)
			}
			scanned = 0
			continue
		}
		scanned = n
		// Wait for at least one more byte (bufio slides the data to the
		// front of its buffer if needed; n+1 <= Size here).
		if _, err := r.br.Peek(n + 1); err != nil {
			return nil, readerUnexpected(err)
		}
	}
}

// readerUnexpected maps io.EOF inside a request to io.ErrUnexpectedEOF,
// and errWouldBlock to errTornRequest.
func readerUnexpected(err error) error {
	switch err {
	case io.EOF:
		return io.ErrUnexpectedEOF
	case errWouldBlock:
		return errTornRequest
	}
	return err
}

// readerParseHeader parses a "*<n>\r" or "$<len>\r" line (its '\n' already
// stripped): the first byte is skipped and the line must end in '\r'.
func readerParseHeader(line []byte) (int64, bool) {
	if len(line) < 2 || line[len(line)-1] != '\r' {
		return 0, false
	}
	return command.ParseInt(line[1 : len(line)-1])
}

// readerIsSpace is C's isspace in the "C" locale.
func readerIsSpace(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\v', '\f', '\r':
		return true
	}
	return false
}

func readerIsHex(c byte) bool {
	return ('0' <= c && c <= '9') || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

func readerHexVal(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

// readerSplitArgs splits an inline request like Redis's sdssplitargs:
// arguments are separated by whitespace; "double quotes" support \n \r \t \b
// \a \xHH and \<any char> escapes; 'single quotes' support only \'; a closing
// quote must be followed by whitespace or the end of the line. As
// sdssplitargs works on a C string, the line ends at its first NUL byte. An
// unterminated quote or a closing quote followed by another character gives
// "unbalanced quotes in request". A blank line gives no arguments.
func readerSplitArgs(line []byte) ([][]byte, error) {
	if i := bytes.IndexByte(line, 0); i >= 0 {
		line = line[:i]
	}
	n := len(line)
	at := func(i int) byte { // NUL past the end, like the C string
		if i < n {
			return line[i]
		}
		return 0
	}
	var args [][]byte
	var out []byte // the decoded output is never longer than the line
	p := 0
	for {
		for p < n && readerIsSpace(line[p]) {
			p++
		}
		if p >= n {
			return args, nil
		}
		if out == nil {
			out = make([]byte, 0, n)
		}
		start := len(out)
		inq, insq, done := false, false, false
		for !done {
			c := at(p)
			switch {
			case inq:
				switch {
				case c == '\\' && at(p+1) == 'x' && readerIsHex(at(p+2)) && readerIsHex(at(p+3)):
					out = append(out, readerHexVal(at(p+2))<<4|readerHexVal(at(p+3)))
					p += 3
				case c == '\\' && at(p+1) != 0:
					p++
					e := line[p]
					switch e {
					case 'n':
						e = '\n'
					case 'r':
						e = '\r'
					case 't':
						e = '\t'
					case 'b':
						e = '\b'
					case 'a':
						e = '\a'
					}
					out = append(out, e)
				case c == '"':
					if nx := at(p + 1); nx != 0 && !readerIsSpace(nx) {
						return nil, readerProtoErr(readerErrUnbalanced)
					}
					done = true
				case c == 0:
					return nil, readerProtoErr(readerErrUnbalanced)
				default:
					out = append(out, c)
				}
			case insq:
				switch {
				case c == '\\' && at(p+1) == '\'':
					p++
					out = append(out, '\'')
				case c == '\'':
					if nx := at(p + 1); nx != 0 && !readerIsSpace(nx) {
						return nil, readerProtoErr(readerErrUnbalanced)
					}
					done = true
				case c == 0:
					return nil, readerProtoErr(readerErrUnbalanced)
				default:
					out = append(out, c)
				}
			default:
				switch c {
				case ' ', '\n', '\r', '\t', 0:
					done = true
				case '"':
					inq = true
				case '\'':
					insq = true
				default:
					out = append(out, c)
				}
			}
			if at(p) != 0 {
				p++
			}
		}
		end := len(out)
		args = append(args, out[start:end:end])
	}
}

// errWouldBlock is what an event loop's connection gives a Reader when it
// has no more bytes without waiting for them (loopConn.Read). Between
// requests ReadCommand returns it without ending the Reader.
var errWouldBlock = errors.New("broker: read would block")

// errTornRequest ends a Reader whose source had no more bytes in the
// middle of a request that Ready reported whole: a bug, which closes the
// connection rather than lose its framing.
var errTornRequest = errors.New("broker: request torn by a non-blocking read")

// Fill reads from the source once into the Reader's buffer, if the
// buffer has room, and returns the source's error (errWouldBlock, io.EOF,
// ...). It consumes nothing: the event loop (loop_linux.go) fills, then
// runs the requests Ready finds whole.
func (r *Reader) Fill() error {
	n := r.br.Buffered()
	if n >= r.br.Size() {
		return nil
	}
	_, err := r.br.Peek(n + 1)
	return err
}

// readiness is what Ready finds in the buffered bytes.
type readiness uint8

const (
	// readyNone: no whole request yet (more bytes may complete one).
	readyNone readiness = iota
	// readyRequest: ReadCommand returns a request, a protocol error, or
	// errWouldBlock after requests it skips, from the buffered bytes alone.
	readyRequest
	// readyTooBig: the first request cannot fit in the buffer; only a
	// blocking Reader (a connection's goroutine) can read it.
	readyTooBig
)

// Ready reports whether ReadCommand can return without reading from the
// source. It frames the buffered bytes as ReadCommand does (requests it
// skips, *0 and blank inline lines, are passed over) and answers
// readyRequest as soon as ReadCommand would reply a protocol error, with
// the same limits, so a malformed or over-limit request gets its error
// without waiting for bytes that may never come. A full buffer without a
// whole request is readyTooBig: Fill cannot add to it.
func (r *Reader) Ready() readiness {
	st := r.ready()
	if st == readyNone && r.br.Buffered() >= r.br.Size() {
		return readyTooBig
	}
	return st
}

// ready is Ready before the full-buffer check.
func (r *Reader) ready() readiness {
	b, _ := r.br.Peek(r.br.Buffered())
	size := r.br.Size()
	i := 0
	// line returns the end of the line at b[i:] (the index of its '\n');
	// or -1 and what Ready answers: readyNone when the line is not buffered
	// whole, readyRequest when the Reader fails on it (too long).
	line := func() (int, readiness) {
		j := bytes.IndexByte(b[i:], '\n')
		switch {
		case j > r.lim.MaxInline || j < 0 && len(b)-i > r.lim.MaxInline:
			return -1, readyRequest
		case j < 0:
			return -1, readyNone
		}
		return i + j, readyNone
	}
	for {
		start := i
		end, st := line()
		if end < 0 {
			return st
		}
		if b[i] != '*' {
			l := b[i:end]
			if k := bytes.IndexByte(l, 0); k >= 0 {
				l = l[:k]
			}
			if len(bytes.TrimLeft(l, " \t\n\v\f\r")) > 0 || int64(end-i) >= r.lim.MaxQueryBuffer {
				return readyRequest // an inline request, or its error
			}
			i = end + 1 // a blank line: skipped
			continue
		}
		n, ok := readerParseHeader(b[i:end])
		total := int64(end-i) + 1
		if !ok || n > r.lim.MaxMultibulk || total > r.lim.MaxQueryBuffer {
			return readyRequest
		}
		i = end + 1
		for k := int64(0); k < n; k++ {
			end, st := line()
			if end < 0 {
				return st
			}
			ll, ok := readerParseHeader(b[i:end])
			if b[i] != '$' || !ok || ll < 0 || ll > r.lim.MaxBulkLen {
				return readyRequest
			}
			total += int64(end-i) + 1
			if total > r.lim.MaxQueryBuffer || ll > r.lim.MaxQueryBuffer-total-2 {
				return readyRequest
			}
			total += ll + 2
			i = end + 1
			if int64(len(b)-i) < ll+2 {
				if int64(i-start)+ll+2 > int64(size) {
					return readyTooBig
				}
				if int64(len(b)-i) == ll+1 && b[len(b)-1] != '\r' {
					return readyRequest // the payload's CRLF is wrong: the Reader's error
				}
				return readyNone
			}
			i += int(ll)
			if b[i] != '\r' || b[i+1] != '\n' {
				return readyRequest // the Reader's error
			}
			i += 2
		}
		if n > 0 {
			return readyRequest
		}
		// *0 and *-1: skipped
	}
}
