package broker

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestKeptArg(t *testing.T) {
	big := make([]byte, keptArgMin)
	for _, tc := range []struct {
		name string
		args [][]byte
		kept bool
	}{
		{"SET of a large value", [][]byte{[]byte("SET"), []byte("k"), big}, true},
		{"value below keptArgMin", [][]byte{[]byte("SET"), []byte("k"), big[:keptArgMin-1]}, false},
		{"large value not last", [][]byte{[]byte("SET"), []byte("k"), big, []byte("EX"), []byte("10")}, false},
		{"large other arguments", [][]byte{[]byte("SET"), make([]byte, keptArgMin/8), big}, false},
		{"other arguments at the limit", [][]byte{[]byte("SET"), make([]byte, keptArgMin/8-3), big}, true},
		{"a 64 KiB value, 4 KiB of others", [][]byte{[]byte("SET"), make([]byte, keptArgRest-3), make([]byte, 64<<10)}, true},
		{"a 64 KiB value, more than 4 KiB of others", [][]byte{[]byte("SET"), make([]byte, keptArgRest), make([]byte, 64<<10)}, false},
	} {
		if got := keptArg(tc.args); (got != nil) != tc.kept || (got != nil && &got[0] != &tc.args[len(tc.args)-1][0]) {
			t.Errorf("%s: keptArg returned %d bytes, want kept %v", tc.name, len(got), tc.kept)
		}
	}
}

// TestKeptValuesStayIntact: large SET values held by the metadata cache as
// the requests' own memory (keptArg) read back whole after the connection
// has read many more pipelined requests, after APPEND and SETRANGE on
// them, and after a restart.
func TestKeptValuesStayIntact(t *testing.T) {
	dir := t.TempDir()
	ts := startTestServer(t, dir)
	c := ts.client(t)
	ctx := context.Background()
	const n = 40
	val := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i%26)}, keptArgMin+1000*i) }
	if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range n {
			p.Set(ctx, fmt.Sprint("k", i), val(i), 0)
			p.Set(ctx, fmt.Sprint("small", i), "x", 0)
			p.Get(ctx, fmt.Sprint("k", i))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	c.Append(ctx, "k1", "tail")
	c.SetRange(ctx, "k2", 5, "XYZ")
	check := func(c *redis.Client, when string) {
		t.Helper()
		for i := range n {
			want := val(i)
			switch i {
			case 1:
				want = append(want, "tail"...)
			case 2:
				copy(want[5:], "XYZ")
			}
			got, err := c.Get(ctx, fmt.Sprint("k", i)).Bytes()
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s: GET k%d: %d bytes (want %d), err %v", when, i, len(got), len(want), err)
			}
		}
	}
	check(c, "before the restart")
	c.Close()
	ts.Close()
	ts = startTestServer(t, dir)
	check(ts.client(t), "after the restart")
}

// TestInlineRequestNotKept: an inline command's large last argument is
// never kept (its array is sized to the line: exec.keptArg), a multibulk
// one's is; and an inline SET of a large value reads back whole.
func TestInlineRequestNotKept(t *testing.T) {
	args := [][]byte{[]byte("SET"), []byte("k"), make([]byte, keptArgMin)}
	if got := (&exec{args: args, inline: true}).keptArg(); got != nil {
		t.Fatal("an inline command's argument kept")
	}
	if got := (&exec{args: args}).keptArg(); got == nil {
		t.Fatal("a multibulk command's argument not kept")
	}

	ts := newTestServer(t)
	nc, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	val := strings.Repeat("v", keptArgMin+10)
	if _, err := fmt.Fprintf(nc, "SET k %s\r\n", val); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(nc).ReadString('\n')
	if err != nil || line != "+OK\r\n" {
		t.Fatalf("inline SET: %q, %v", line, err)
	}
	if got := ts.client(t).Get(context.Background(), "k").Val(); got != val {
		t.Fatalf("GET k: %d bytes", len(got))
	}
}

func TestReaderInline(t *testing.T) {
	r := NewReader(strings.NewReader("SET k v\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"), Limits{})
	for _, want := range []bool{true, false} {
		if _, err := r.ReadCommand(); err != nil {
			t.Fatal(err)
		}
		if r.Inline() != want {
			t.Fatalf("Inline() = %v, want %v", r.Inline(), want)
		}
	}
}
