package broker

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sediment-dev/sediment/materialize"
)

// TestPipelinedLargeReplies: a pipeline whose replies pass flushAt is
// flushed part way (conn.serve), so every reply must still arrive whole and
// in request order, writes interleaved with the reads included, and under
// appendfsync always a write's reply still waits for its fsync.
func TestPipelinedLargeReplies(t *testing.T) {
	for _, policy := range []materialize.SyncPolicy{materialize.SyncEverySec, materialize.SyncAlways} {
		t.Run(policy.String(), func(t *testing.T) {
			ts := newTestServer(t, func(o *Options) { o.AppendFsync = policy })
			c := ts.client(t)
			ctx := context.Background()
			val := func(i int) string { return strings.Repeat(strconv.Itoa(i%10), 60_000+i) }
			pipe := c.Pipeline()
			var gets []*redis.StringCmd
			var sets []*redis.StatusCmd
			for i := 0; i < 40; i++ {
				sets = append(sets, pipe.Set(ctx, "k"+strconv.Itoa(i), val(i), 0))
				gets = append(gets, pipe.Get(ctx, "k"+strconv.Itoa(i)))
				if i > 0 {
					gets = append(gets, pipe.Get(ctx, "k"+strconv.Itoa(i-1)))
				}
			}
			if _, err := pipe.Exec(ctx); err != nil {
				t.Fatal(err)
			}
			for i, s := range sets {
				if s.Val() != "OK" {
					t.Fatalf("SET %d replied %q", i, s.Val())
				}
			}
			for j, g := range gets {
				i := (j + 1) / 2 // gets: k0, then k(i), k(i-1) for each i
				if j > 0 && j%2 == 0 {
					i--
				}
				if got := g.Val(); got != val(i) {
					t.Fatalf("GET %d (k%d): %d bytes, want %d", j, i, len(got), len(val(i)))
				}
			}
		})
	}
}

// TestSharedValuesToSlowReader: GET replies of cached large values refer
// to the cache's values (replyBuf.WriteRef) until they are written; a
// client that reads nothing for a while fills its socket, and its replies
// wait in the connection's buffer while SETs from another client replace
// those values. Every reply still arrives whole, in order, with a value
// the key held: the old one until the GET ran after the SET (a connection
// whose socket is full stops taking requests), then the new one.
func TestSharedValuesToSlowReader(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	ctx := context.Background()
	val := func(gen, i int) string { return strings.Repeat(string(rune('a'+gen*3+i)), 100_000+i) }
	for i := range 3 {
		mustDo(t, c, "SET", "k"+strconv.Itoa(i), val(0, i))
		mustDo(t, c, "GET", "k"+strconv.Itoa(i)) // cached
	}
	raw, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	const n = 300
	var req strings.Builder
	for j := range n {
		fmt.Fprintf(&req, "*2\r\n$3\r\nGET\r\n$2\r\nk%d\r\n*1\r\n$4\r\nPING\r\n", j%3)
	}
	if _, err := raw.Write([]byte(req.String())); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the server fills the socket
	for i := range 3 {
		if err := c.Set(ctx, "k"+strconv.Itoa(i), val(1, i), 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	raw.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(raw)
	var gen [3]int // the newest value each key's replies have shown
	for j := range n {
		i := j % 3
		head, err := br.ReadString('\n')
		if err != nil || head != "$"+strconv.Itoa(len(val(0, i)))+"\r\n" {
			t.Fatalf("reply %d: header %q, %v", j, head, err)
		}
		got := make([]byte, len(val(0, i))+2)
		if _, err := io.ReadFull(br, got); err != nil {
			t.Fatalf("reply %d: %v", j, err)
		}
		switch string(got) {
		case val(gen[i], i) + "\r\n":
		case val(1, i) + "\r\n":
			gen[i] = 1
		default:
			t.Fatalf("reply %d: %d bytes beginning %q, after the value of generation %d; want a whole value of k%d", j, len(got), got[:4], gen[i], i)
		}
		if pong, err := br.ReadString('\n'); err != nil || pong != "+PONG\r\n" {
			t.Fatalf("reply %d: PING got %q, %v", j, pong, err)
		}
	}
	if gen != [3]int{1, 1, 1} {
		t.Fatalf("the last replies hold the values of generations %v, want the new ones", gen)
	}
}

// TestGetValuesFromChangeLog: after a restart no value is cached, and GET
// reads a value of 4 KiB or more from the change log straight into the
// reply buffer (reply.Writer.BulkFill): alone, pipelined among other
// replies, inside MULTI/EXEC, and as a value too large for the cache.
func TestGetValuesFromChangeLog(t *testing.T) {
	dir := t.TempDir()
	ts := startTestServer(t, dir)
	c := ts.client(t)
	ctx := context.Background()
	sizes := []int{10, 4095, 4096, 10_000, 100_000, 300_000}
	val := func(i int) string { return strings.Repeat(strconv.Itoa(i%10), sizes[i]) }
	for i := range sizes {
		mustDo(t, c, "SET", "k"+strconv.Itoa(i), val(i))
	}
	if err := ts.Close(); err != nil {
		t.Fatal(err)
	}
	c = startTestServer(t, dir).client(t)
	for i := range sizes {
		if got, err := c.Get(ctx, "k"+strconv.Itoa(i)).Result(); err != nil || got != val(i) {
			t.Fatalf("GET k%d: %d bytes, %v; want %d", i, len(got), err, sizes[i])
		}
	}
	pipe := c.Pipeline()
	var gets []*redis.StringCmd
	for j := range 3 * len(sizes) {
		pipe.Ping(ctx)
		gets = append(gets, pipe.Get(ctx, "k"+strconv.Itoa(j%len(sizes))))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for j, g := range gets {
		if i := j % len(sizes); g.Val() != val(i) {
			t.Fatalf("pipelined GET %d (k%d): %d bytes, want %d", j, i, len(g.Val()), sizes[i])
		}
	}
	tx := c.TxPipeline()
	var txGets []*redis.StringCmd
	for i := range sizes {
		txGets = append(txGets, tx.Get(ctx, "k"+strconv.Itoa(i)))
	}
	if _, err := tx.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for i, g := range txGets {
		if g.Val() != val(i) {
			t.Fatalf("GET k%d in EXEC: %d bytes, want %d", i, len(g.Val()), sizes[i])
		}
	}
}
