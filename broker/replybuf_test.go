package broker

import (
	"bytes"
	"errors"
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
