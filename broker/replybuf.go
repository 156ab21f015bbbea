package broker

import (
	"io"

	"github.com/tidwall/redcon"
)

// maxKeptReplyCap is the largest buffer a replyBuf keeps for its next
// replies after a flush (256 KiB, as redcon's Writer): a connection that
// once sent a 100 MB reply does not hold 100 MB while idle.
const maxKeptReplyCap = 256 << 10

// replyBuf holds a connection's RESP replies until they are flushed, all
// of them in one write system call. It does what redcon's Writer did for
// Sediment, and also reports its length and takes replies back without
// copying the buffer (redcon's Buffer returns a copy, which cost a fifth
// of the CPU of a 100 KB GET; docs/perf.md, "Replies without a copy of
// the buffer"). The first write error sticks: later writes are dropped
// and Flush returns it.
type replyBuf struct {
	w   io.Writer // nil for a buffer that is only copied elsewhere (EXEC's)
	b   []byte
	err error
}

// WriteRaw appends RESP bytes as they are.
func (r *replyBuf) WriteRaw(p []byte) {
	if r.err == nil {
		r.b = append(r.b, p...)
	}
}

// WriteString appends a simple string reply ("+msg\r\n").
func (r *replyBuf) WriteString(msg string) {
	if r.err == nil {
		r.b = redcon.AppendString(r.b, msg)
	}
}

// WriteError appends an error reply ("-msg\r\n").
func (r *replyBuf) WriteError(msg string) {
	if r.err == nil {
		r.b = redcon.AppendError(r.b, msg)
	}
}

// WriteArray appends an array header of n elements.
func (r *replyBuf) WriteArray(n int) {
	if r.err == nil {
		r.b = redcon.AppendArray(r.b, n)
	}
}

// Len is the number of bytes not flushed yet.
func (r *replyBuf) Len() int { return len(r.b) }

// Bytes returns the bytes not flushed yet, not a copy: valid until the
// next write, Truncate or Flush.
func (r *replyBuf) Bytes() []byte { return r.b }

// Truncate takes back every byte after the first n; with n ≥ Len it does
// nothing (those bytes were flushed: they cannot be taken back).
func (r *replyBuf) Truncate(n int) {
	if n < len(r.b) {
		r.b = r.b[:n]
	}
}

// Flush writes the buffered bytes with one Write and empties the buffer,
// dropping it if it grew past maxKeptReplyCap.
func (r *replyBuf) Flush() error {
	if r.err != nil {
		return r.err
	}
	_, r.err = r.w.Write(r.b)
	if cap(r.b) > maxKeptReplyCap || r.err != nil {
		r.b = nil
	} else {
		r.b = r.b[:0]
	}
	return r.err
}
