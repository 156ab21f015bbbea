package reply

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

type buf struct{ b []byte }

func (s *buf) WriteRaw(b []byte) { s.b = append(s.b, b...) }

// TestRESP2 pins each kind's RESP2 bytes (Redis 7.0's rendering for a RESP2
// client).
func TestRESP2(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func(w Writer)
		want string
	}{
		{"array", func(w Writer) { w.Array(2); w.Int(1); w.Int(-2) }, "*2\r\n:1\r\n:-2\r\n"},
		{"map", func(w Writer) { w.Map(1); w.BulkString("len"); w.Int(3) }, "*2\r\n$3\r\nlen\r\n:3\r\n"},
		{"set", func(w Writer) { w.Set(1); w.Bulk([]byte("a\x00b")) }, "*1\r\n$3\r\na\x00b\r\n"},
		{"empty bulk", func(w Writer) { w.Bulk(nil) }, "$0\r\n\r\n"},
		{"large bulk", func(w Writer) { w.Array(2); w.Bulk(bytes.Repeat([]byte{'x'}, largeBulk)); w.Bulk([]byte("y")) },
			"*2\r\n$4096\r\n" + strings.Repeat("x", largeBulk) + "\r\n$1\r\ny\r\n"},
		{"simple", func(w Writer) { w.OK(); w.Simple("QUEUED") }, "+OK\r\n+QUEUED\r\n"},
		{"uint", func(w Writer) { w.Uint(1 << 63) }, ":9223372036854775808\r\n"},
		{"bool", func(w Writer) { w.Bool(true); w.Bool(false) }, ":1\r\n:0\r\n"},
		{"nulls", func(w Writer) { w.NullBulk(); w.NullArray() }, "$-1\r\n*-1\r\n"},
		{"error", func(w Writer) { w.Error("ERR a\r\nb") }, "-ERR a  b\r\n"},
		{"double", func(w Writer) { w.Double(1.5); w.Double(3); w.Double(math.Inf(-1)) }, "$3\r\n1.5\r\n$1\r\n3\r\n$4\r\n-inf\r\n"},
		{"double 17 digits", func(w Writer) { w.Double(0.1) }, "$19\r\n0.10000000000000001\r\n"},
		{"verbatim and big number", func(w Writer) { w.Verbatim("txt", []byte("hi")); w.BigNumber("123") }, "$2\r\nhi\r\n$3\r\n123\r\n"},
		{"pairs", func(w Writer) { w.Pairs(1); w.Pair(); w.BulkString("m"); w.Double(2) }, "*2\r\n$1\r\nm\r\n$1\r\n2\r\n"},
		{"array map", func(w Writer) { w.ArrayMap(1); w.Entry(); w.BulkString("k"); w.Array(0) }, "*1\r\n*2\r\n$1\r\nk\r\n*0\r\n"},
		{"push", func(w Writer) { w.Push(1); w.Int(1) }, "*1\r\n:1\r\n"},
	} {
		s := &buf{b: []byte("pre")}
		tc.f(New(s))
		if got := string(s.b); got != "pre"+tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, "pre"+tc.want)
		}
	}
}

// TestRESP3 pins each kind's RESP3 bytes (Redis 7.0's rendering after
// HELLO 3, read off redis-server 7.0.15).
func TestRESP3(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func(w Writer)
		want string
	}{
		{"array", func(w Writer) { w.Array(2); w.Int(1); w.Int(-2) }, "*2\r\n:1\r\n:-2\r\n"},
		{"map", func(w Writer) { w.Map(1); w.BulkString("len"); w.Int(3) }, "%1\r\n$3\r\nlen\r\n:3\r\n"},
		{"set", func(w Writer) { w.Set(1); w.Bulk([]byte("a\x00b")) }, "~1\r\n$3\r\na\x00b\r\n"},
		{"push", func(w Writer) { w.Push(1); w.Int(1) }, ">1\r\n:1\r\n"},
		{"bool", func(w Writer) { w.Bool(true); w.Bool(false) }, "#t\r\n#f\r\n"},
		{"nulls", func(w Writer) { w.NullBulk(); w.NullArray() }, "_\r\n_\r\n"},
		{"double", func(w Writer) { w.Double(1.5); w.Double(3); w.Double(math.Inf(-1)); w.Double(math.Inf(1)) }, ",1.5\r\n,3\r\n,-inf\r\n,inf\r\n"},
		{"double 17 digits", func(w Writer) { w.Double(0.1) }, ",0.10000000000000001\r\n"},
		{"verbatim", func(w Writer) { w.Verbatim("txt", []byte("a\nb")) }, "=7\r\ntxt:a\nb\r\n"},
		{"big number", func(w Writer) { w.BigNumber("-123") }, "(-123\r\n"},
		{"pairs", func(w Writer) {
			w.Pairs(2)
			w.Pair()
			w.BulkString("m")
			w.Double(2)
			w.Pair()
			w.BulkString("n")
			w.Double(3)
		},
			"*2\r\n*2\r\n$1\r\nm\r\n,2\r\n*2\r\n$1\r\nn\r\n,3\r\n"},
		{"array map", func(w Writer) { w.ArrayMap(1); w.Entry(); w.BulkString("k"); w.Array(0) }, "%1\r\n$1\r\nk\r\n*0\r\n"},
		{"unchanged kinds", func(w Writer) { w.OK(); w.Int(7); w.Bulk([]byte("x")); w.Error("ERR e") }, "+OK\r\n:7\r\n$1\r\nx\r\n-ERR e\r\n"},
	} {
		s := &buf{b: []byte("pre")}
		var scratch []byte
		w := NewScratch(s, &scratch, RESP3)
		if !w.RESP3() {
			t.Fatal("NewScratch(RESP3).RESP3() = false")
		}
		tc.f(w)
		if got := string(s.b); got != "pre"+tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, "pre"+tc.want)
		}
	}
}

// reserving is a Reserver and RefSink over buf.
type reserving struct{ buf }

func (s *reserving) Reserve(n int) []byte {
	s.b = append(s.b, make([]byte, n)...)
	return s.b[len(s.b)-n:]
}
func (s *reserving) Unreserve(n int)   { s.b = s.b[:len(s.b)-n] }
func (s *reserving) WriteRef(b []byte) { s.b = append(s.b, b...) }

// TestBulkFillAndShared: BulkFill renders the same bytes as Bulk into a
// Reserver and into a plain sink, and a failed fill leaves nothing of its
// reply; BulkShared renders as Bulk whatever the sink.
func TestBulkFillAndShared(t *testing.T) {
	big := bytes.Repeat([]byte{'v'}, largeBulk+1)
	fill := func(v []byte) func([]byte) error {
		return func(dst []byte) error {
			if len(dst) != len(v) {
				return fmt.Errorf("fill got %d bytes, want %d", len(dst), len(v))
			}
			copy(dst, v)
			return nil
		}
	}
	failed := errors.New("read failed")
	for _, s := range []interface {
		Sink
		bytes() []byte
	}{&plain{buf{b: []byte("pre")}}, &reserved{reserving{buf{b: []byte("pre")}}}} {
		w := New(s)
		for _, v := range [][]byte{nil, []byte("a\r\n"), big} {
			if err := w.BulkFill(len(v), fill(v)); err != nil {
				t.Fatal(err)
			}
			if err := w.BulkFill(7, func([]byte) error { return failed }); err != failed {
				t.Fatalf("%T: a failed fill returned %v", s, err)
			}
			w.BulkShared(v)
		}
		ref := buf{b: []byte("pre")}
		want := New(&ref)
		for _, v := range [][]byte{nil, []byte("a\r\n"), big} {
			want.Bulk(v)
			want.Bulk(v)
		}
		if !bytes.Equal(s.bytes(), ref.b) {
			t.Fatalf("%T: %q..., want %q...", s, s.bytes()[:min(40, len(s.bytes()))], ref.b[:40])
		}
	}
}

type plain struct{ buf }

func (p *plain) bytes() []byte { return p.b }

type reserved struct{ reserving }

func (r *reserved) bytes() []byte { return r.b }
