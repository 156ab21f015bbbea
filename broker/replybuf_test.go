package broker

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	f.n++
	return 0, errors.New("broken pipe")
}

func TestReplyBuf(t *testing.T) {
	var out bytes.Buffer
	r := &replyBuf{w: &out}
	r.WriteString("OK")
	mark := r.Len()
	r.WriteError("ERR no")
	r.WriteArray(2)
	if got := string(r.Bytes()); got != "+OK\r\n-ERR no\r\n*2\r\n" {
		t.Fatalf("buffered %q", got)
	}
	r.Truncate(mark)
	r.Truncate(100) // beyond the buffer: those bytes were never there to take back
	if got := string(r.Bytes()); got != "+OK\r\n" {
		t.Fatalf("after Truncate %q", got)
	}
	r.WriteRaw(make([]byte, maxKeptReplyCap+1))
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	if out.Len() != 5+maxKeptReplyCap+1 || r.Len() != 0 || r.b != nil {
		t.Fatalf("flush wrote %d bytes, kept %d (cap %d)", out.Len(), r.Len(), cap(r.b))
	}
	r.WriteString("OK")
	if err := r.Flush(); err != nil || cap(r.b) == 0 {
		t.Fatalf("a small buffer should be kept for the next replies: err %v cap %d", err, cap(r.b))
	}

	f := &failWriter{}
	r = &replyBuf{w: f}
	r.WriteString("OK")
	if err := r.Flush(); err == nil {
		t.Fatal("Flush hid the write error")
	}
	r.WriteString("OK")
	if err := r.Flush(); err == nil || f.n != 1 || r.Len() != 0 {
		t.Fatalf("after an error: err %v, writes %d, buffered %d", err, f.n, r.Len())
	}
}

// TestReplyBufRefs: slices kept by WriteRef go out in their place among
// the copied bytes, and Truncate, Bytes and prepend treat them as bytes of
// the buffer; a buffer without a writer copies them.
func TestReplyBufRefs(t *testing.T) {
	build := func(w io.Writer) (*replyBuf, string) {
		r := &replyBuf{w: w}
		r.WriteString("A")
		r.WriteRef([]byte("1111"))
		r.WriteRef([]byte("22"))
		r.WriteString("B")
		r.WriteRef([]byte("333"))
		return r, "+A\r\n111122+B\r\n333"
	}
	var out bytes.Buffer
	r, want := build(&out)
	if r.Len() != len(want) || len(r.refs) != 3 {
		t.Fatalf("Len %d with %d refs, want %d bytes with 3 refs", r.Len(), len(r.refs), len(want))
	}
	if err := r.Flush(); err != nil || out.String() != want || r.Len() != 0 || len(r.refs) != 0 {
		t.Fatalf("flushed %q (err %v), %d bytes and %d refs left; want %q", out.String(), err, r.Len(), len(r.refs), want)
	}
	for n := 0; n <= len(want)+1; n++ {
		r, _ := build(&out)
		r.Truncate(n)
		if w := want[:min(n, len(want))]; r.Len() != len(w) || string(r.Bytes()) != w {
			t.Fatalf("Truncate(%d): %q (Len %d), want %q", n, r.Bytes(), r.Len(), w)
		}
		r.prepend([]byte("<"))
		r.WriteRef([]byte(">"))
		out.Reset()
		if err := r.Flush(); err != nil || out.String() != "<"+want[:min(n, len(want))]+">" {
			t.Fatalf("Truncate(%d), prepend, WriteRef: flushed %q, %v", n, out.String(), err)
		}
	}
	exec := &replyBuf{}
	exec.WriteRef([]byte("x"))
	if len(exec.refs) != 0 || string(exec.Bytes()) != "x" {
		t.Fatalf("a buffer without a writer kept %d refs, holds %q", len(exec.refs), exec.Bytes())
	}
}
