package broker

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/sediment-dev/sediment/command"
)

// readerAll reads commands until an error and returns them with that error.
func readerAll(r *Reader) ([][][]byte, error) {
	var cmds [][][]byte
	for {
		args, err := r.ReadCommand()
		if err != nil {
			return cmds, err
		}
		cmds = append(cmds, args)
	}
}

// readerStrs converts commands to strings for comparison.
func readerStrs(cmds [][][]byte) [][]string {
	out := make([][]string, 0, len(cmds))
	for _, c := range cmds {
		s := make([]string, len(c))
		for i, a := range c {
			s[i] = string(a)
		}
		out = append(out, s)
	}
	return out
}

// readerEncode encodes a command as a RESP multibulk request.
func readerEncode(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

func readerErrText(err error) string {
	var pe *ProtocolError
	if errors.As(err, &pe) {
		return pe.Msg
	}
	if err == nil {
		return "<nil>"
	}
	return "non-protocol: " + err.Error()
}

func TestReaderCommands(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want [][]string
	}{
		{"multibulk", "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n", [][]string{{"SET", "key", "value"}}},
		{"multibulk empty arg", "*2\r\n$4\r\nECHO\r\n$0\r\n\r\n", [][]string{{"ECHO", ""}}},
		{"all args empty", "*2\r\n$0\r\n\r\n$0\r\n\r\n", [][]string{{"", ""}}},
		{"binary", "*2\r\n$4\r\nECHO\r\n$7\r\na\x00b\r\nc\xff\r\n", [][]string{{"ECHO", "a\x00b\r\nc\xff"}}},
		{"bulk that looks like a request", readerEncode("ECHO", "*1\r\n$4\r\nPING\r\n"), [][]string{{"ECHO", "*1\r\n$4\r\nPING\r\n"}}},
		{"pipeline", readerEncode("PING") + readerEncode("GET", "k") + "PING\r\n", [][]string{{"PING"}, {"GET", "k"}, {"PING"}}},
		{"star zero and minus one skipped", "*0\r\n*-1\r\n*-5\r\n" + readerEncode("PING"), [][]string{{"PING"}}},
		{"inline", "SET key value\r\n", [][]string{{"SET", "key", "value"}}},
		{"inline bare newline", "PING\nECHO hi\n", [][]string{{"PING"}, {"ECHO", "hi"}}},
		{"inline only one CR stripped", "ECHO a\r\r\n", [][]string{{"ECHO", "a"}}},
		{"inline whitespace", " \t SET \t k \v\f v \r\n", [][]string{{"SET", "k", "v"}}},
		{"inline vt inside token", "ECHO a\vb\r\n", [][]string{{"ECHO", "a\vb"}}},
		{"empty lines skipped", "\r\n\n   \r\n\t\r\nPING\r\n\r\n", [][]string{{"PING"}}},
		{"inline double quotes", `SET "hello world" "a\"b"` + "\r\n", [][]string{{"SET", "hello world", `a"b`}}},
		{"inline escapes", `ECHO "\n\r\t\b\a\\\q\x41\x4a\xzz"` + "\r\n", [][]string{{"ECHO", "\n\r\t\b\a\\q" + "AJ" + "xzz"}}},
		{"inline hex zero", `ECHO "a\x00b"` + "\r\n", [][]string{{"ECHO", "a\x00b"}}},
		{"inline single quotes", `ECHO 'it\'s "x" \n'` + "\r\n", [][]string{{"ECHO", `it's "x" \n`}}},
		{"inline empty quoted", `SET k ""` + "\r\n", [][]string{{"SET", "k", ""}}},
		{"inline quote mid token", `ECHO ab"c d"` + "\r\n", [][]string{{"ECHO", "abc d"}}},
		{"inline NUL ends line", "ECHO a\x00 b c\r\nPING\r\n", [][]string{{"ECHO", "a"}, {"PING"}}},
		{"inline NUL only", "\x00 x\r\nPING\r\n", [][]string{{"PING"}}},
		{"inline after multibulk", readerEncode("A") + "B C\r\n" + readerEncode("D"), [][]string{{"A"}, {"B", "C"}, {"D"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, mode := range []string{"whole", "onebyte"} {
				var src io.Reader = strings.NewReader(tc.in)
				if mode == "onebyte" {
					src = iotest.OneByteReader(src)
				}
				cmds, err := readerAll(NewReader(src, Limits{}))
				if err != io.EOF {
					t.Fatalf("%s: err = %v, want io.EOF", mode, err)
				}
				got := readerStrs(cmds)
				if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", tc.want) {
					t.Fatalf("%s: got %q, want %q", mode, got, tc.want)
				}
				for _, c := range cmds {
					for i, a := range c {
						if a == nil {
							t.Fatalf("%s: arg %d is nil", mode, i)
						}
					}
				}
			}
		})
	}
}

func TestReaderErrors(t *testing.T) {
	long := strings.Repeat("x", 70<<10)
	tests := []struct {
		name string
		in   string
		lim  Limits
		want string
	}{
		{"mbulk not a number", "*x\r\n", Limits{}, readerErrMultibulkLen},
		{"mbulk empty", "*\r\n", Limits{}, readerErrMultibulkLen},
		{"mbulk plus sign", "*+1\r\n", Limits{}, readerErrMultibulkLen},
		{"mbulk leading zero", "*01\r\n", Limits{}, readerErrMultibulkLen},
		{"mbulk space", "*1 \r\n", Limits{}, readerErrMultibulkLen},
		{"mbulk bare LF", "*1\n$4\r\nPING\r\n", Limits{}, readerErrMultibulkLen},
		{"mbulk huge", "*1000000000000\r\n", Limits{}, readerErrMultibulkLen},
		{"mbulk above INT_MAX", "*2147483648\r\n", Limits{}, readerErrMultibulkLen},
		{"mbulk overflow", "*99999999999999999999999\r\n", Limits{}, readerErrMultibulkLen},
		{"mbulk above limit", "*3\r\n", Limits{MaxMultibulk: 2}, readerErrMultibulkLen},
		{"expected dollar", "*1\r\n:4\r\nPING\r\n", Limits{}, "ERR Protocol error: expected '$', got ':'"},
		{"expected dollar CR", "*1\r\n\r\n", Limits{}, "ERR Protocol error: expected '$', got ' '"},
		{"expected dollar LF", "*1\r\n\n", Limits{}, "ERR Protocol error: expected '$', got ' '"},
		{"expected dollar inline in mbulk", "*2\r\n$4\r\nECHO\r\nhi\r\n", Limits{}, "ERR Protocol error: expected '$', got 'h'"},
		{"bulk not a number", "*1\r\n$abc\r\n", Limits{}, readerErrBulkLen},
		{"bulk empty", "*1\r\n$\r\n", Limits{}, readerErrBulkLen},
		{"bulk negative", "*1\r\n$-1\r\n", Limits{}, readerErrBulkLen},
		{"bulk minus zero", "*1\r\n$-0\r\n\r\n", Limits{}, readerErrBulkLen},
		{"bulk near int64 max", "*1\r\n$9223372036854775800\r\n", Limits{}, readerErrBulkLen},
		{"bulk int64 max", "*1\r\n$9223372036854775807\r\n", Limits{}, readerErrBulkLen},
		{"bulk int64 min", "*1\r\n$-9223372036854775808\r\n", Limits{}, readerErrBulkLen},
		{"bulk overflow", "*1\r\n$99999999999999999999999\r\n", Limits{}, readerErrBulkLen},
		{"bulk above default", "*1\r\n$536870913\r\n", Limits{}, readerErrBulkLen},
		{"bulk above limit", "*1\r\n$11\r\n", Limits{MaxBulkLen: 10}, readerErrBulkLen},
		{"bulk bare LF", "*1\r\n$4\nPING\r\n", Limits{}, readerErrBulkLen},
		{"bulk without CRLF", "*1\r\n$4\r\nPINGxx", Limits{}, readerErrBulkCRLF},
		{"bulk with LF only", "*1\r\n$4\r\nPING\n\r", Limits{}, readerErrBulkCRLF},
		{"bulk too long", "*1\r\n$3\r\nPING\r\n", Limits{}, readerErrBulkCRLF},
		{"bulk CR then junk", "*1\r\n$4\r\nPING\rx", Limits{}, readerErrBulkCRLF},
		{"bulk junk then EOF", "*1\r\n$4\r\nPINGx", Limits{}, readerErrBulkCRLF},
		{"mbulk count string too big", "*" + long, Limits{}, readerErrTooBigMbulk},
		{"mbulk count string too big with LF", "*" + long + "\r\n", Limits{}, readerErrTooBigMbulk},
		{"bulk count string too big", "*1\r\n$" + long, Limits{}, readerErrTooBigBulk},
		{"inline too big", long, Limits{}, readerErrTooBigInline},
		{"inline too big with LF", long + "\n", Limits{}, readerErrTooBigInline},
		{"inline small limit", "PING PING\r\n", Limits{MaxInline: 8}, readerErrTooBigInline},
		{"unbalanced double", `ECHO "abc` + "\r\n", Limits{}, readerErrUnbalanced},
		{"unbalanced single", `ECHO 'abc` + "\r\n", Limits{}, readerErrUnbalanced},
		{"quote followed by char", `ECHO "abc"d` + "\r\n", Limits{}, readerErrUnbalanced},
		{"single quote followed by char", `ECHO 'abc'd` + "\r\n", Limits{}, readerErrUnbalanced},
		{"backslash at end in quotes", `ECHO "abc\` + "\r\n", Limits{}, readerErrUnbalanced},
		{"NUL inside quotes", "ECHO \"a\x00b\"\r\n", Limits{}, readerErrUnbalanced},
		{"query buffer by declared bulk", readerEncode("SET", "k", strings.Repeat("v", 100)), Limits{MaxQueryBuffer: 64}, readerErrQueryBuffer},
		{"query buffer by many args", readerEncode(strings.Split(strings.Repeat("a", 20), "")...), Limits{MaxQueryBuffer: 100}, readerErrQueryBuffer},
		{"query buffer by header", "*1\r\n", Limits{MaxQueryBuffer: 3}, readerErrQueryBuffer},
		{"query buffer inline", "PING PING PING\r\n", Limits{MaxQueryBuffer: 10}, readerErrQueryBuffer},
		{"error after good command", readerEncode("PING") + "*1\r\n$x\r\n", Limits{}, readerErrBulkLen},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReader(strings.NewReader(tc.in), tc.lim)
			_, err := readerAll(r)
			if got := readerErrText(err); got != tc.want {
				t.Fatalf("err = %q, want %q", got, tc.want)
			}
			var pe *ProtocolError
			if !errors.As(err, &pe) || pe.Error() != tc.want {
				t.Fatalf("Error() = %v", err)
			}
			// The error is sticky.
			if _, err2 := r.ReadCommand(); err2 != err {
				t.Fatalf("second call: %v, want the same error %v", err2, err)
			}
		})
	}
}

func TestReaderLimitsBoundaries(t *testing.T) {
	// Exactly at the limits is accepted.
	in := readerEncode("0123456789") + readerEncode("a", "b")
	cmds, err := readerAll(NewReader(strings.NewReader(in), Limits{MaxBulkLen: 10, MaxMultibulk: 2, MaxQueryBuffer: int64(len(readerEncode("0123456789")))}))
	if err != io.EOF || len(cmds) != 2 {
		t.Fatalf("cmds=%q err=%v", readerStrs(cmds), err)
	}
	// One byte over the query buffer limit is not.
	lim := Limits{MaxQueryBuffer: int64(len(readerEncode("0123456789"))) - 1}
	if _, err := readerAll(NewReader(strings.NewReader(in), lim)); readerErrText(err) != readerErrQueryBuffer {
		t.Fatalf("err = %v", err)
	}
	// An inline line of exactly MaxInline bytes before '\n' is accepted.
	line := "ECHO " + strings.Repeat("y", 59)
	cmds, err = readerAll(NewReader(strings.NewReader(line+"\n"), Limits{MaxInline: 64}))
	if err != io.EOF || len(cmds) != 1 || len(cmds[0][1]) != 59 {
		t.Fatalf("cmds=%d err=%v", len(cmds), err)
	}
	if _, err := readerAll(NewReader(strings.NewReader(line+"\r\n"), Limits{MaxInline: 64})); readerErrText(err) != readerErrTooBigInline {
		t.Fatalf("err = %v", err)
	}
	// Default inline limit: 64 KiB of content is fine, one more byte is not.
	ok := "ECHO " + strings.Repeat("z", 64<<10-5)
	if cmds, err := readerAll(NewReader(strings.NewReader(ok+"\n"), Limits{})); err != io.EOF || len(cmds) != 1 {
		t.Fatalf("64KiB inline: cmds=%d err=%v", len(cmds), err)
	}
	if _, err := readerAll(NewReader(strings.NewReader(ok+"z\n"), Limits{})); readerErrText(err) != readerErrTooBigInline {
		t.Fatalf("64KiB+1 inline: err = %v", err)
	}
	// Values above INT_MAX are clamped.
	if _, err := readerAll(NewReader(strings.NewReader("*2147483648\r\n"), Limits{MaxMultibulk: 1 << 40})); readerErrText(err) != readerErrMultibulkLen {
		t.Fatalf("err = %v", err)
	}
}

func TestReaderPipelineBuffered(t *testing.T) {
	in := readerEncode("SET", "a", "1") + readerEncode("GET", "a") + "PING\r\n"
	r := NewReader(strings.NewReader(in), Limits{})
	want := [][]string{{"SET", "a", "1"}, {"GET", "a"}, {"PING"}}
	for i, w := range want {
		args, err := r.ReadCommand()
		if err != nil {
			t.Fatalf("cmd %d: %v", i, err)
		}
		if fmt.Sprintf("%q", readerStrs([][][]byte{args})[0]) != fmt.Sprintf("%q", w) {
			t.Fatalf("cmd %d: got %q want %q", i, args, w)
		}
		if last := i == len(want)-1; last != (r.Buffered() == 0) {
			t.Fatalf("cmd %d: Buffered() = %d", i, r.Buffered())
		}
	}
	if _, err := r.ReadCommand(); err != io.EOF {
		t.Fatalf("err = %v, want io.EOF", err)
	}
}

func TestReaderOwnership(t *testing.T) {
	r := NewReader(strings.NewReader(readerEncode("SET", "k", "v")+readerEncode("SET", "x", "y")+"ECHO a b\r\n"), Limits{})
	first, err := r.ReadCommand()
	if err != nil {
		t.Fatal(err)
	}
	// Appending to one argument must not clobber the next one.
	_ = append(first[0], "XXXXXXXX"...)
	_ = append(first[1], "YYYYYYYY"...)
	second, err := r.ReadCommand()
	if err != nil {
		t.Fatal(err)
	}
	third, err := r.ReadCommand()
	if err != nil {
		t.Fatal(err)
	}
	_ = append(third[1], "ZZZZ"...)
	if got := fmt.Sprintf("%q %q %q", first, second, third); got != `["SET" "k" "v"] ["SET" "x" "y"] ["ECHO" "a" "b"]` {
		t.Fatalf("got %s", got)
	}
}

func TestReaderEOF(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want error
	}{
		{"empty", "", io.EOF},
		{"after command", "PING\r\n", io.EOF},
		{"after empty lines", "PING\r\n\r\n\n", io.EOF},
		{"partial inline", "PING", io.ErrUnexpectedEOF},
		{"partial mbulk header", "*2", io.ErrUnexpectedEOF},
		{"missing args", "*2\r\n$4\r\nECHO\r\n", io.ErrUnexpectedEOF},
		{"partial bulk header", "*1\r\n$4", io.ErrUnexpectedEOF},
		{"partial bulk", "*1\r\n$4\r\nPI", io.ErrUnexpectedEOF},
		{"missing CRLF", "*1\r\n$4\r\nPING", io.ErrUnexpectedEOF},
		{"missing LF", "*1\r\n$4\r\nPING\r", io.ErrUnexpectedEOF},
		{"huge count then nothing", "*2000000000\r\n", io.ErrUnexpectedEOF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readerAll(NewReader(strings.NewReader(tc.in), Limits{}))
			if err != tc.want {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestReaderUnderlyingError(t *testing.T) {
	boom := errors.New("boom")
	r := NewReader(io.MultiReader(strings.NewReader(readerEncode("PING")+"*1\r\n$4\r\nPI"), iotest.ErrReader(boom)), Limits{})
	if args, err := r.ReadCommand(); err != nil || string(args[0]) != "PING" {
		t.Fatalf("args=%q err=%v", args, err)
	}
	if _, err := r.ReadCommand(); err != boom {
		t.Fatalf("err = %v, want boom", err)
	}
}

// TestReaderLongLineNoWait checks that an over-long line is rejected as soon
// as the bytes are there, without waiting for a newline or EOF.
func TestReaderLongLineNoWait(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"inline", strings.Repeat("a", 70<<10), readerErrTooBigInline},
		{"mbulk", "*" + strings.Repeat("1", 70<<10), readerErrTooBigMbulk},
		{"bulk", "*1\r\n$" + strings.Repeat("1", 70<<10), readerErrTooBigBulk},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr, pw := io.Pipe()
			defer pw.Close()
			go pw.Write([]byte(tc.in)) // never closed: the reader must not need EOF
			done := make(chan error, 1)
			go func() {
				_, err := NewReader(pr, Limits{}).ReadCommand()
				done <- err
			}()
			select {
			case err := <-done:
				if readerErrText(err) != tc.want {
					t.Fatalf("err = %v, want %q", err, tc.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("ReadCommand blocked on an over-long line")
			}
			pr.Close()
		})
	}
}

// TestReaderHugeDeclaredBulk declares a 400 MB bulk, sends 5 bytes and EOF;
// the reader must not have allocated anything near the declared size.
func TestReaderHugeDeclaredBulk(t *testing.T) {
	in := []byte("*2\r\n$3\r\nSET\r\n$400000000\r\nhello")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r := NewReader(bytes.NewReader(in), Limits{})
	_, err := r.ReadCommand()
	runtime.ReadMemStats(&after)
	if err != io.ErrUnexpectedEOF {
		t.Fatalf("err = %v, want io.ErrUnexpectedEOF", err)
	}
	if d := after.TotalAlloc - before.TotalAlloc; d > 50<<20 {
		t.Fatalf("allocated %d bytes for a 5-byte payload", d)
	}

	// A huge count followed by a few arguments costs nothing either.
	allocs := testing.AllocsPerRun(5, func() {
		r := NewReader(strings.NewReader("*2000000000\r\n$1\r\na\r\n"), Limits{})
		if _, err := r.ReadCommand(); err != io.ErrUnexpectedEOF {
			t.Fatalf("err = %v", err)
		}
	})
	if allocs > 20 {
		t.Fatalf("%v allocations", allocs)
	}
	runtime.GC()
	runtime.ReadMemStats(&before)
	r = NewReader(strings.NewReader("*2000000000\r\n$1\r\na\r\n"), Limits{})
	_, _ = r.ReadCommand()
	runtime.ReadMemStats(&after)
	if d := after.TotalAlloc - before.TotalAlloc; d > 1<<20 {
		t.Fatalf("allocated %d bytes for *2000000000", d)
	}
}

func TestReaderLargeBulks(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), (3<<20)/16+7)
	var in bytes.Buffer
	in.WriteString("*4\r\n$3\r\nSET\r\n$1\r\nk\r\n")
	in.WriteString("$" + strconv.Itoa(len(big)) + "\r\n")
	in.Write(big)
	in.WriteString("\r\n$" + strconv.Itoa(len(big)) + "\r\n")
	in.Write(big)
	in.WriteString("\r\n")
	in.WriteString(readerEncode("PING"))
	for _, mode := range []string{"whole", "half", "dataerr"} {
		var src io.Reader = bytes.NewReader(in.Bytes())
		switch mode {
		case "half":
			src = iotest.HalfReader(src)
		case "dataerr":
			src = iotest.DataErrReader(src)
		}
		cmds, err := readerAll(NewReader(src, Limits{}))
		if err != io.EOF || len(cmds) != 2 {
			t.Fatalf("%s: %d cmds, err %v", mode, len(cmds), err)
		}
		c := cmds[0]
		if len(c) != 4 || string(c[0]) != "SET" || string(c[1]) != "k" || !bytes.Equal(c[2], big) || !bytes.Equal(c[3], big) {
			t.Fatalf("%s: bad command", mode)
		}
		if cap(c[3]) != len(c[3]) {
			t.Fatalf("%s: arg cap %d len %d", mode, cap(c[3]), len(c[3]))
		}
	}
}

func TestReaderManyArgs(t *testing.T) {
	const n = 100000
	var in strings.Builder
	fmt.Fprintf(&in, "*%d\r\n", n)
	for i := 0; i < n; i++ {
		s := strconv.Itoa(i)
		fmt.Fprintf(&in, "$%d\r\n%s\r\n", len(s), s)
	}
	args, err := NewReader(strings.NewReader(in.String()), Limits{}).ReadCommand()
	if err != nil || len(args) != n {
		t.Fatalf("%d args, err %v", len(args), err)
	}
	for i, a := range args {
		if string(a) != strconv.Itoa(i) {
			t.Fatalf("arg %d = %q", i, a)
		}
	}
}

func TestReaderParseInt(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"1", 1, true}, {"-1", -1, true}, {"123", 123, true},
		{"9223372036854775807", 9223372036854775807, true},
		{"-9223372036854775808", -9223372036854775808, true},
		{"9223372036854775808", 0, false}, {"-9223372036854775809", 0, false},
		{"18446744073709551615", 0, false}, {"18446744073709551616", 0, false},
		{"99999999999999999999", 0, false}, {"99999999999999999999999", 0, false},
		{"", 0, false}, {"-", 0, false}, {"-0", 0, false}, {"00", 0, false}, {"01", 0, false},
		{"+1", 0, false}, {" 1", 0, false}, {"1 ", 0, false}, {"1a", 0, false}, {"1_0", 0, false},
	}
	for _, tc := range tests {
		got, ok := command.ParseInt([]byte(tc.in))
		if got != tc.want || ok != tc.ok {
			t.Errorf("command.ParseInt(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func FuzzReader(f *testing.F) {
	seeds := []string{
		readerEncode("SET", "k", "v"),
		readerEncode("PING") + readerEncode("GET", "a") + "PING\r\n",
		"*1\r\n$9223372036854775800\r\n",
		"*1000000000000\r\n",
		"*2000000000\r\n$1\r\na\r\n",
		"*1\r\n$400000000\r\nhello",
		"ECHO \"a\\x41\\n\" 'b\\'c'\r\n\r\n",
		"ECHO \"abc\r\n",
		"*0\r\n*-1\r\n\n\n",
		"*1\r\n$0\r\n\r\n",
		"*1\r\n:1\r\n",
		"*2\r\n$4\r\nECHO\r\n$5\r\na\x00\r\nb\r\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, small bool) {
		lim := Limits{}
		if small {
			lim = Limits{MaxBulkLen: 64, MaxMultibulk: 8, MaxInline: 32, MaxQueryBuffer: 256}
		}
		run := func(src io.Reader) ([][][]byte, error) {
			r := NewReader(src, lim)
			var cmds [][][]byte
			for i := 0; ; i++ {
				if i > len(data)+1 {
					t.Fatalf("more commands than input bytes")
				}
				args, err := r.ReadCommand()
				if err != nil {
					var pe *ProtocolError
					if err != io.EOF && err != io.ErrUnexpectedEOF && !errors.As(err, &pe) {
						t.Fatalf("unexpected error type %T: %v", err, err)
					}
					if pe != nil && (!strings.HasPrefix(pe.Msg, "ERR Protocol error: ") || strings.ContainsAny(pe.Msg, "\r\n")) {
						t.Fatalf("bad protocol error text %q", pe.Msg)
					}
					return cmds, err
				}
				if len(args) == 0 {
					t.Fatalf("empty command returned")
				}
				for j, a := range args {
					if a == nil {
						t.Fatalf("arg %d is nil", j)
					}
				}
				cmds = append(cmds, args)
			}
		}
		cmds, err := run(bytes.NewReader(data))
		// Chunking of the input must not change the result.
		cmds2, err2 := run(iotest.OneByteReader(bytes.NewReader(data)))
		if readerErrText(err) != readerErrText(err2) || fmt.Sprintf("%q", cmds) != fmt.Sprintf("%q", cmds2) {
			t.Fatalf("whole: %q %v; one byte at a time: %q %v", cmds, err, cmds2, err2)
		}
		// Nor does reading it as an event loop does, in chunks.
		for _, chunk := range []int{1, 3, 7, len(data) + 1} {
			cmds4, err4 := readerLoopRun(t, data, lim, chunk)
			if readerErrText(err) != readerErrText(err4) || fmt.Sprintf("%q", cmds) != fmt.Sprintf("%q", cmds4) {
				t.Fatalf("whole: %q %v; as an event loop in chunks of %d: %q %v", cmds, err, chunk, cmds4, err4)
			}
		}
		// Re-encoding the commands as multibulk gives them back.
		var enc bytes.Buffer
		for _, c := range cmds {
			fmt.Fprintf(&enc, "*%d\r\n", len(c))
			for _, a := range c {
				fmt.Fprintf(&enc, "$%d\r\n%s\r\n", len(a), a)
			}
		}
		cmds3, err3 := run(bytes.NewReader(enc.Bytes()))
		if err3 != io.EOF && !small {
			t.Fatalf("re-encoded: %v", err3)
		}
		if err3 == io.EOF && fmt.Sprintf("%q", cmds) != fmt.Sprintf("%q", cmds3) {
			t.Fatalf("re-encoded: got %q want %q", cmds3, cmds)
		}
	})
}

// readerLoopSource gives a Reader chunk bytes of data per Fill and
// errWouldBlock at any other read, as loopConn does; once blocking (a
// hand-off), everything left.
type readerLoopSource struct {
	data            []byte
	chunk           int
	filling, blocks bool
}

func (s *readerLoopSource) Read(p []byte) (int, error) {
	if !s.filling && !s.blocks {
		return 0, errWouldBlock
	}
	if len(s.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(s.data))
	if !s.blocks {
		n = min(n, s.chunk)
	}
	copy(p, s.data[:n])
	s.data = s.data[n:]
	return n, nil
}

// readerLoopRun reads data as an event loop does (loop.serveReadable):
// Fill, then ReadCommand while Ready finds a whole request; a request too
// big for the buffer is read as a connection's goroutine does. Once the
// input ended, the Reader must find no request Ready missed: only its
// final error.
func readerLoopRun(t *testing.T, data []byte, lim Limits, chunk int) ([][][]byte, error) {
	src := &readerLoopSource{data: data, chunk: chunk}
	r := NewReader(src, lim)
	var cmds [][][]byte
	blocking := func(missed bool) ([][][]byte, error) {
		src.blocks = true
		for {
			args, err := r.ReadCommand()
			if err != nil {
				return cmds, err
			}
			if missed {
				t.Fatalf("Ready missed the whole request %q", args)
			}
			cmds = append(cmds, args)
		}
	}
	for {
		before := r.Buffered()
		src.filling = true
		ferr := r.Fill()
		src.filling = false
		if ferr == nil && r.Buffered() == before && r.Ready() == readyNone {
			t.Fatalf("no progress: %d bytes buffered, none read, no whole request", before)
		}
		for {
			st := r.Ready()
			if st == readyTooBig {
				return blocking(false)
			}
			if st == readyNone {
				break
			}
			args, err := r.ReadCommand()
			if err == errWouldBlock {
				continue
			}
			if err == errTornRequest {
				t.Fatalf("Ready reported a whole request that was not")
			}
			if err != nil {
				return cmds, err
			}
			cmds = append(cmds, args)
		}
		if ferr != nil {
			return blocking(true)
		}
	}
}

// TestReaderReadyFullBuffer: a request larger than the Reader's buffer,
// whether an argument ends exactly at the buffer's end or skipped requests
// fill its front, is reported readyTooBig (read by a blocking Reader), not
// readyNone for ever (readerLoopRun fails on no progress).
func TestReaderReadyFullBuffer(t *testing.T) {
	var exact strings.Builder
	exact.WriteString("*10000\r\n") // 8 bytes, then 8-byte arguments: one ends at 32768
	for range 10000 {
		exact.WriteString("$2\r\nxx\r\n")
	}
	prefixed := strings.Repeat("\n", 30000) + readerEncode("SET", "k", strings.Repeat("v", 3000))
	for name, data := range map[string]string{"exact": exact.String(), "prefixed": prefixed} {
		for _, chunk := range []int{1000, 64 << 10} {
			cmds, err := readerLoopRun(t, []byte(data), Limits{}, chunk)
			if err != io.EOF || len(cmds) != 1 {
				t.Fatalf("%s, chunks of %d: %d commands, %v", name, chunk, len(cmds), err)
			}
		}
	}
}
