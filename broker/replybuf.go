package broker

import (
	"io"
	"net"
	"sync"

	"github.com/tidwall/redcon"
)

// maxKeptReplyCap is the largest buffer a replyBuf keeps for its next
// replies after a flush (256 KiB, as redcon's Writer): a connection that
// once sent a 100 MB reply does not hold 100 MB while idle.
const maxKeptReplyCap = 256 << 10

// replyBuf holds a connection's RESP replies until they are flushed, all
// of them in one write system call (one writev when it keeps references,
// per 1,024 slices). It does what redcon's Writer did for
// Sediment, and also reports its length and takes replies back without
// copying the buffer (redcon's Buffer returns a copy, which cost a fifth
// of the CPU of a 100 KB GET; docs/perf.md, "Replies without a copy of
// the buffer"). The first write error sticks: later writes are dropped
// and Flush returns it.
type replyBuf struct {
	w   io.Writer // nil for a buffer that is only copied elsewhere (EXEC's)
	b   []byte
	err error
	// refs are shared slices (WriteRef) that go between the bytes of b, in
	// order: each after b[:at]. refBytes is their length in all.
	refs     []replyRef
	refBytes int
	iov      [][]byte // Flush's scratch for the writev of b and refs
}

// replyRef is a slice that WriteRef kept, to be written after b[:at].
type replyRef struct {
	at int
	p  []byte
}

// vectorWriter writes bufs in order with as few system calls as it can
// (writev), all of them or an error: the event loop's connections
// (loopWriter, and loopConn once handed off). Other writers go through
// writeVec.
type vectorWriter interface {
	WriteVec(bufs [][]byte) error
}

// WriteRaw appends RESP bytes as they are.
func (r *replyBuf) WriteRaw(p []byte) {
	if r.err == nil {
		r.grow(len(p))
		r.b = append(r.b, p...)
	}
}

// WriteString appends a simple string reply ("+msg\r\n").
func (r *replyBuf) WriteString(msg string) {
	if r.err == nil {
		r.grow(len(msg) + 3)
		r.b = redcon.AppendString(r.b, msg)
	}
}

// WriteError appends an error reply ("-msg\r\n").
func (r *replyBuf) WriteError(msg string) {
	if r.err == nil {
		r.grow(len(msg) + 3)
		r.b = redcon.AppendError(r.b, msg)
	}
}

// WriteArray appends an array header of n elements.
func (r *replyBuf) WriteArray(n int) {
	if r.err == nil {
		r.grow(24) // '*', an int64, CRLF
		r.b = redcon.AppendArray(r.b, n)
	}
}

// WriteRef appends p without copying it: p must never change (a string
// value the metadata cache shares), and the buffer refers to it until it
// is flushed or taken back. Flush writes the bytes around it and p with
// one writev. A GET of a 100 KB value spent 15 % of its CPU copying the
// value into the buffer (docs/perf.md, "Large values written from the
// cache"). A buffer without a writer (EXEC's, whose bytes are copied
// out) copies p.
func (r *replyBuf) WriteRef(p []byte) {
	switch {
	case r.err != nil:
	case r.w == nil:
		r.b = append(r.b, p...)
	default:
		r.refs = append(r.refs, replyRef{at: len(r.b), p: p})
		r.refBytes += len(p)
	}
}

// Reserve appends n bytes and returns them, to be filled before the next
// write (reply.Reserver). After a write error they go nowhere.
func (r *replyBuf) Reserve(n int) []byte {
	if r.err != nil {
		return make([]byte, n)
	}
	at := len(r.b)
	r.grow(n)
	r.b = r.b[:at+n]
	return r.b[at:]
}

// Unreserve takes back the last n bytes Reserve appended.
func (r *replyBuf) Unreserve(n int) {
	if r.err == nil {
		r.Truncate(r.Len() - n)
	}
}

// Len is the number of bytes not flushed yet, kept references included.
func (r *replyBuf) Len() int { return len(r.b) + r.refBytes }

// Bytes returns the bytes not flushed yet, not a copy: valid until the
// next write, Truncate or Flush. Kept references are copied into the
// buffer first.
func (r *replyBuf) Bytes() []byte {
	if len(r.refs) > 0 {
		b := make([]byte, 0, r.Len())
		for _, v := range r.vec() {
			b = append(b, v...)
		}
		r.b = b
		r.dropRefs()
	}
	return r.b
}

// prepend puts p before the bytes not flushed yet (a loop's unsent
// replies, when its connection leaves the loop).
func (r *replyBuf) prepend(p []byte) {
	r.b = append(p, r.b...)
	for i := range r.refs {
		r.refs[i].at += len(p)
	}
}

// vec returns the bytes not flushed yet as slices in order, in r.iov.
func (r *replyBuf) vec() [][]byte {
	iov, at := r.iov[:0], 0
	for _, ref := range r.refs {
		if ref.at > at {
			iov = append(iov, r.b[at:ref.at])
		}
		iov = append(iov, ref.p)
		at = ref.at
	}
	if at < len(r.b) {
		iov = append(iov, r.b[at:])
	}
	r.iov = iov
	return iov
}

// dropRefs forgets the kept references (and Flush's scratch slices, which
// point into them).
func (r *replyBuf) dropRefs() {
	clear(r.refs)
	r.refs, r.refBytes = r.refs[:0], 0
	clear(r.iov)
	r.iov = r.iov[:0]
}

// Truncate takes back every byte after the first n; with n ≥ Len it does
// nothing (those bytes were flushed: they cannot be taken back).
func (r *replyBuf) Truncate(n int) {
	for len(r.refs) > 0 {
		last := &r.refs[len(r.refs)-1]
		start := last.at + r.refBytes - len(last.p) // where last begins in Len's bytes
		if n >= start+len(last.p) {
			break // the cut is in b, after last
		}
		r.b = r.b[:last.at]
		if n > start {
			r.refBytes -= start + len(last.p) - n
			last.p = last.p[:n-start]
			return
		}
		r.refBytes -= len(last.p)
		*last = replyRef{}
		r.refs = r.refs[:len(r.refs)-1]
	}
	if n -= r.refBytes; n < len(r.b) {
		r.b = r.b[:n]
	}
}

// Flush writes the buffered bytes with one Write (writev when it holds
// references: vectorWriter, writeVec) and empties the buffer, handing it
// to bigReplyBufs if it grew past maxKeptReplyCap.
func (r *replyBuf) Flush() error {
	if r.err != nil {
		return r.err
	}
	if len(r.refs) == 0 {
		_, r.err = r.w.Write(r.b)
	} else {
		iov := r.vec()
		if vw, ok := r.w.(vectorWriter); ok {
			r.err = vw.WriteVec(iov)
		} else {
			r.err = writeVec(r.w, iov)
		}
		r.dropRefs()
	}
	if cap(r.b) > maxKeptReplyCap || r.err != nil {
		putBigBuf(r.b)
		r.b = nil
	} else {
		r.b = r.b[:0]
	}
	return r.err
}

// grow makes room for n more bytes: every write grows the buffer through
// it (an append that outgrew a pooled buffer would leave it to the
// garbage collector). The new buffer is not zeroed
// (makeNoZero; the bytes past len are only exposed by appends and
// Reserve, whose caller fills them); one larger than maxKeptReplyCap
// comes from bigReplyBufs (a size class of 512 KiB or more), and the one
// it replaces goes there when its size fills a class. GET of a 300
// KB value spent a fifth of its CPU zeroing a new buffer for each reply,
// and more in page faults on new memory (docs/perf.md, "Large values
// written from the cache").
func (r *replyBuf) grow(n int) {
	if cap(r.b)-len(r.b) >= n {
		return
	}
	c := max(2*cap(r.b), len(r.b)+n, 512)
	var b []byte
	if c > maxKeptReplyCap {
		b = getBigBuf(c)
	} else {
		b = makeNoZero(c)
	}
	b = append(b, r.b...)
	if cap(r.b) > maxKeptReplyCap {
		putBigBuf(r.b)
	}
	r.b = b
}

// bigReplyBufs keep the reply buffers of 512 KiB or more that
// connections let go of, for the next large replies of any connection:
// class i holds buffers of at least bigBufMin<<i bytes (512 KiB to 64
// MiB; buffers of 128 MiB or more are not kept, and a request for more
// than 64 MiB allocates). A sync.Pool, so the garbage collector empties
// what stays unused.
var bigReplyBufs [bigBufClasses]sync.Pool

const (
	bigBufMin     = 2 * maxKeptReplyCap
	bigBufClasses = 8
)

// getBigBuf returns an empty buffer of capacity n or more, pooled when
// one is, else new (its class's size, not zeroed).
func getBigBuf(n int) []byte {
	i := 0
	for i < bigBufClasses && bigBufMin<<i < n {
		i++
	}
	if i == bigBufClasses {
		return makeNoZero(n)
	}
	if p, _ := bigReplyBufs[i].Get().(*[]byte); p != nil {
		return (*p)[:0]
	}
	return makeNoZero(bigBufMin << i)
}

// putBigBuf keeps b (whose bytes are no longer referred to) in the class
// its capacity fills.
func putBigBuf(b []byte) {
	if cap(b) < bigBufMin {
		return
	}
	i := 0
	for i+1 < bigBufClasses && bigBufMin<<(i+1) <= cap(b) {
		i++
	}
	if cap(b) >= bigBufMin<<bigBufClasses {
		return
	}
	bigReplyBufs[i].Put(&b)
}

// writeVec writes bufs to w in order: with w's own WriteVec when it has
// one (vectorWriter), with writev (net.Buffers) when w is a plain socket,
// else copied into one buffer for one Write (a TLS
// connection would make a record of each slice). It changes the slices
// of bufs.
func writeVec(w io.Writer, bufs [][]byte) error {
	if vw, ok := w.(vectorWriter); ok {
		return vw.WriteVec(bufs)
	}
	switch w.(type) {
	case *net.TCPConn, *net.UnixConn:
		nb := net.Buffers(bufs)
		_, err := nb.WriteTo(w)
		return err
	}
	n := 0
	for _, b := range bufs {
		n += len(b)
	}
	flat := make([]byte, 0, n)
	for _, b := range bufs {
		flat = append(flat, b...)
	}
	_, err := w.Write(flat)
	return err
}
