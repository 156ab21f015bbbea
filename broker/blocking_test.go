package broker

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sediment-dev/sediment/materialize"
)

// blockedClients returns INFO's blocked_clients.
func blockedClients(t testing.TB, c *redis.Client) int64 {
	t.Helper()
	info := mustDo(t, c, "INFO", "clients").(string)
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "blocked_clients:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("blocked_clients %q", v)
			}
			return n
		}
	}
	t.Fatalf("INFO clients has no blocked_clients:\n%s", info)
	return 0
}

// waitBlocked polls INFO until blocked_clients is n.
func waitBlocked(t testing.TB, c *redis.Client, n int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := blockedClients(t, c)
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("blocked_clients = %d, want %d", got, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type readResult struct {
	res []redis.XStream
	err error
}

// goRead runs a (blocking) read in a goroutine and returns its result channel.
func goRead(f func() ([]redis.XStream, error)) <-chan readResult {
	ch := make(chan readResult, 1)
	go func() {
		res, err := f()
		ch <- readResult{res, err}
	}()
	return ch
}

func xreadGroupBlock(c *redis.Client, group, consumer string, block time.Duration, streams ...string) func() ([]redis.XStream, error) {
	return func() ([]redis.XStream, error) {
		return c.XReadGroup(context.Background(), &redis.XReadGroupArgs{Group: group, Consumer: consumer, Streams: streams, Block: block}).Result()
	}
}

func xreadBlock(c *redis.Client, block time.Duration, streams ...string) func() ([]redis.XStream, error) {
	return func() ([]redis.XStream, error) {
		return c.XRead(context.Background(), &redis.XReadArgs{Streams: streams, Block: block}).Result()
	}
}

// awaitRead waits up to 5 s for a read's result.
func awaitRead(t testing.TB, ch <-chan readResult) readResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("blocked read not woken within 5s")
	}
	return readResult{}
}

// assertStillBlocked checks that ch has no result yet.
func assertStillBlocked(t testing.TB, ch <-chan readResult) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("read returned while it should block: %v, %v", r.res, r.err)
	default:
	}
}

// oneEntry checks that r delivered exactly entry id of stream key.
func oneEntry(t testing.TB, r readResult, key, id string) {
	t.Helper()
	if r.err != nil || len(r.res) != 1 || r.res[0].Stream != key || len(r.res[0].Messages) != 1 || r.res[0].Messages[0].ID != id {
		t.Fatalf("read = %+v, %v; want %s %s", r.res, r.err, key, id)
	}
}

func TestBlockXReadGroupWokenByXAdd(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	admin := ts.client(t)
	mustStr(t, admin, "OK", "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
	ch := goRead(xreadGroupBlock(ts.client(t), "g", "c", 5*time.Second, "s", ">"))
	waitBlocked(t, admin, 1)
	assertStillBlocked(t, ch)
	mustStr(t, ts.client(t), "1-1", "XADD", "s", "1-1", "f", "v")
	r := awaitRead(t, ch)
	oneEntry(t, r, "s", "1-1")
	if v := r.res[0].Messages[0].Values["f"]; v != "v" {
		t.Errorf("fields = %v", r.res[0].Messages[0].Values)
	}
	waitBlocked(t, admin, 0)
	// The woken delivery is pending for c.
	if rows := xpendingExt(t, admin, "s", "g", "-", "+", "10"); len(rows) != 1 || rows[0] != (pendingRow{"1-1", "c", 1}) {
		t.Fatalf("XPENDING = %v", rows)
	}
}

func TestBlockXReadGroupMultipleStreams(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	admin := ts.client(t)
	mustStr(t, admin, "OK", "XGROUP", "CREATE", "a", "g", "$", "MKSTREAM")
	mustStr(t, admin, "OK", "XGROUP", "CREATE", "b", "g", "$", "MKSTREAM")
	ch := goRead(xreadGroupBlock(ts.client(t), "g", "c", 5*time.Second, "a", "b", ">", ">"))
	waitBlocked(t, admin, 1)
	mustStr(t, admin, "7-0", "XADD", "b", "7-0", "f", "v")
	oneEntry(t, awaitRead(t, ch), "b", "7-0")
}

func TestBlockXReadDollarWoken(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	admin := ts.client(t)
	mustDo(t, admin, "XADD", "s", "1-0", "f", "old")
	ch := goRead(xreadBlock(ts.client(t), 5*time.Second, "s", "$"))
	waitBlocked(t, admin, 1)
	mustDo(t, admin, "XADD", "s", "2-0", "f", "new")
	oneEntry(t, awaitRead(t, ch), "s", "2-0")
}

func TestBlockXReadBlockZeroWoken(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	admin := ts.client(t)
	// BLOCK 0 on a stream that does not exist yet.
	ch := goRead(xreadBlock(ts.client(t), 0, "s", "0"))
	waitBlocked(t, admin, 1)
	assertStillBlocked(t, ch)
	mustDo(t, admin, "XADD", "s", "3-0", "f", "v")
	oneEntry(t, awaitRead(t, ch), "s", "3-0")
	waitBlocked(t, admin, 0)
}

func TestBlockTimeout(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	c := ts.client(t)
	mustStr(t, c, "OK", "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
	const timeout = 400 * time.Millisecond
	for name, read := range map[string]func() ([]redis.XStream, error){
		"XREAD":      xreadBlock(c, timeout, "s", "$"),
		"XREADGROUP": xreadGroupBlock(c, "g", "c", timeout, "s", ">"),
	} {
		start := time.Now()
		res, err := read()
		elapsed := time.Since(start)
		if err != redis.Nil {
			t.Fatalf("%s BLOCK timeout = %v, %v; want redis.Nil", name, res, err)
		}
		if elapsed < timeout {
			t.Errorf("%s BLOCK %v returned after %v", name, timeout, elapsed)
		}
		if elapsed > 5*time.Second {
			t.Errorf("%s BLOCK %v returned only after %v", name, timeout, elapsed)
		}
	}
	if n := blockedClients(t, c); n != 0 {
		t.Errorf("blocked_clients after timeouts = %d", n)
	}
	// Nothing was delivered by the timed-out XREADGROUP.
	if sum := mustDo(t, c, "XPENDING", "s", "g").([]any); sum[0] != int64(0) {
		t.Errorf("XPENDING = %#v", sum)
	}
}

func TestBlockFirstComeFirstServed(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	admin := ts.client(t)
	mustStr(t, admin, "OK", "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
	first := goRead(xreadGroupBlock(ts.client(t), "g", "first", 5*time.Second, "s", ">"))
	waitBlocked(t, admin, 1)
	// Let the first reader finish registering (blocked_clients is counted
	// just before it does) so that the arrival order is well defined.
	time.Sleep(100 * time.Millisecond)
	second := goRead(xreadGroupBlock(ts.client(t), "g", "second", 5*time.Second, "s", ">"))
	waitBlocked(t, admin, 2)
	time.Sleep(100 * time.Millisecond)

	mustDo(t, admin, "XADD", "s", "1-0", "f", "v")
	oneEntry(t, awaitRead(t, first), "s", "1-0")
	waitBlocked(t, admin, 1)
	assertStillBlocked(t, second)

	mustDo(t, admin, "XADD", "s", "2-0", "f", "v")
	oneEntry(t, awaitRead(t, second), "s", "2-0")
	waitBlocked(t, admin, 0)
	want := []pendingRow{{"1-0", "first", 1}, {"2-0", "second", 1}}
	if rows := xpendingExt(t, admin, "s", "g", "-", "+", "10"); len(rows) != 2 || rows[0] != want[0] || rows[1] != want[1] {
		t.Fatalf("XPENDING = %v, want %v", rows, want)
	}
}

func TestBlockXReadAllWokenTogether(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	admin := ts.client(t)
	// Plain XREAD readers all receive the same entry.
	var chans []<-chan readResult
	for i := 0; i < 3; i++ {
		chans = append(chans, goRead(xreadBlock(ts.client(t), 5*time.Second, "s", "$")))
	}
	waitBlocked(t, admin, 3)
	mustDo(t, admin, "XADD", "s", "1-0", "f", "v")
	for _, ch := range chans {
		oneEntry(t, awaitRead(t, ch), "s", "1-0")
	}
}

func TestBlockUnblockedByDel(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	admin := ts.client(t)
	mustStr(t, admin, "OK", "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
	ch := goRead(xreadGroupBlock(ts.client(t), "g", "c", 5*time.Second, "s", ">"))
	waitBlocked(t, admin, 1)
	mustInt(t, admin, 1, "DEL", "s")
	r := awaitRead(t, ch)
	if r.err == nil || r.err.Error() != "UNBLOCKED the stream key no longer exists" {
		t.Fatalf("blocked XREADGROUP after DEL = %v, %v", r.res, r.err)
	}
	waitBlocked(t, admin, 0)
}

func TestBlockUnblockedByGroupDestroy(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	admin := ts.client(t)
	mustStr(t, admin, "OK", "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
	ch := goRead(xreadGroupBlock(ts.client(t), "g", "c", 5*time.Second, "s", ">"))
	waitBlocked(t, admin, 1)
	mustInt(t, admin, 1, "XGROUP", "DESTROY", "s", "g")
	r := awaitRead(t, ch)
	if r.err == nil || !strings.HasPrefix(r.err.Error(), "NOGROUP") {
		t.Fatalf("blocked XREADGROUP after XGROUP DESTROY = %v, %v", r.res, r.err)
	}
	waitBlocked(t, admin, 0)
	mustInt(t, admin, 0, "XLEN", "s")
}

func TestBlockUnblockedByFlushAll(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	admin := ts.client(t)
	mustStr(t, admin, "OK", "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
	ch := goRead(xreadGroupBlock(ts.client(t), "g", "c", 5*time.Second, "s", ">"))
	waitBlocked(t, admin, 1)
	mustStr(t, admin, "OK", "FLUSHALL")
	r := awaitRead(t, ch)
	if r.err == nil || r.err.Error() != "UNBLOCKED the stream key no longer exists" {
		t.Fatalf("blocked XREADGROUP after FLUSHALL = %v, %v", r.res, r.err)
	}
	waitBlocked(t, admin, 0)
}

func TestBlockDisconnectedClientConsumesNothing(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	admin := ts.client(t)
	mustStr(t, admin, "OK", "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
	nc, _ := dialRaw(t, ts.addr)
	rawSend(t, nc, "XREADGROUP GROUP g dead BLOCK 0 STREAMS s >\r\n")
	waitBlocked(t, admin, 1)
	nc.Close()
	waitBlocked(t, admin, 0)

	mustDo(t, admin, "XADD", "s", "1-0", "f", "v")
	if sum := mustDo(t, admin, "XPENDING", "s", "g").([]any); sum[0] != int64(0) {
		t.Fatalf("XPENDING after the blocked client left = %#v", sum)
	}
	rs := rawStreams(t, mustDo(t, admin, "XREADGROUP", "GROUP", "g", "alive", "STREAMS", "s", ">"))
	if e := rs["s"]; len(e) != 1 || e[0].ID != "1-0" {
		t.Fatalf("XREADGROUP by another consumer = %+v", rs)
	}
	if rows := xpendingExt(t, admin, "s", "g", "-", "+", "10"); len(rows) != 1 || rows[0].Consumer != "alive" {
		t.Fatalf("XPENDING = %v", rows)
	}
}

func TestBlockPipelinedRepliesNotHeldBack(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	admin := ts.client(t)
	nc, br := dialRaw(t, ts.addr)
	start := time.Now()
	rawSend(t, nc, "PING\r\nXREAD BLOCK 3000 STREAMS s $\r\n")
	if l := rawLine(t, nc, br, 1*time.Second); l != "+PONG" {
		t.Fatalf("PING reply = %q", l)
	}
	if time.Since(start) >= 3*time.Second {
		t.Fatalf("PONG only after the block ended")
	}
	// The XREAD is still blocked; wake it.
	waitBlocked(t, admin, 1)
	mustDo(t, admin, "XADD", "s", "1-0", "f", "v")
	if l := rawLine(t, nc, br, 5*time.Second); l != "*1" {
		t.Fatalf("XREAD reply header = %q", l)
	}
}

func TestBlockDoesNotBlockOthers(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	admin := ts.client(t)
	blocked := goRead(xreadBlock(ts.client(t), 5*time.Second, "s", "$"))
	waitBlocked(t, admin, 1)
	other := ts.client(t)
	mustStr(t, other, "OK", "SET", "k", "v")
	mustStr(t, other, "v", "GET", "k")
	mustDo(t, other, "XADD", "t", "1-0", "f", "v")
	mustInt(t, other, 1, "XLEN", "t")
	mustStr(t, other, "PONG", "PING")
	// Another blocking read with a short timeout also completes meanwhile.
	if _, err := xreadBlock(other, 50*time.Millisecond, "u", "$")(); err != redis.Nil {
		t.Fatalf("second blocked read = %v", err)
	}
	assertStillBlocked(t, blocked)
	mustDo(t, other, "XADD", "s", "1-0", "f", "v")
	oneEntry(t, awaitRead(t, blocked), "s", "1-0")
}

func TestBlockWakeIsPerDatabase(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	admin := ts.client(t)
	c1 := clientDB(t, ts, 1)
	ch := goRead(xreadBlock(c1, 5*time.Second, "s", "$"))
	waitBlocked(t, admin, 1)
	mustDo(t, admin, "XADD", "s", "1-0", "f", "db0")
	// Give a wrong wake every chance to arrive.
	time.Sleep(100 * time.Millisecond)
	assertStillBlocked(t, ch)
	mustDo(t, clientDB(t, ts, 1), "XADD", "s", "9-0", "f", "db1")
	oneEntry(t, awaitRead(t, ch), "s", "9-0")
}

func TestBlockServerCloseEndsWait(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	admin := ts.client(t)
	ch := goRead(xreadBlock(ts.client(t), 0, "s", "$"))
	waitBlocked(t, admin, 1)
	closed := make(chan error, 1)
	go func() { closed <- ts.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close hangs while a client is blocked")
	}
	r := awaitRead(t, ch)
	if r.err != redis.Nil {
		t.Errorf("blocked XREAD at shutdown = %v, %v; want nil reply", r.res, r.err)
	}
}

func TestBlockUnblockedByTypeChange(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	admin := ts.client(t)
	mustStr(t, admin, "OK", "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
	ch := goRead(xreadGroupBlock(ts.client(t), "g", "c", 5*time.Second, "s", ">"))
	waitBlocked(t, admin, 1)
	mustStr(t, admin, "OK", "SET", "s", "now a string")
	r := awaitRead(t, ch)
	if r.err == nil {
		t.Fatalf("blocked XREADGROUP after SET over the stream = %v, want an error", r.res)
	}
	waitBlocked(t, admin, 0)
	// Redis 7.0 (blocked.c handleClientsBlockedOnKeys): a key that is no
	// longer a stream unblocks XREADGROUP clients as a deleted key does.
	if r.err.Error() != "UNBLOCKED the stream key no longer exists" {
		t.Fatalf("blocked XREADGROUP, then SET s over the stream: got %q, want %q", r.err, "UNBLOCKED the stream key no longer exists")
	}
}

func TestBlockNoAckAndCount(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	admin := ts.client(t)
	mustStr(t, admin, "OK", "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
	c := ts.client(t)
	ch := goRead(func() ([]redis.XStream, error) {
		return c.XReadGroup(context.Background(), &redis.XReadGroupArgs{Group: "g", Consumer: "c", Streams: []string{"s", ">"},
			Block: 5 * time.Second, NoAck: true, Count: 2}).Result()
	})
	waitBlocked(t, admin, 1)
	// One write adds three entries at once (a pipeline is one batch).
	_, err := admin.Pipelined(context.Background(), func(p redis.Pipeliner) error {
		for i := 1; i <= 3; i++ {
			p.XAdd(context.Background(), &redis.XAddArgs{Stream: "s", ID: strconv.Itoa(i) + "-0", Values: []string{"f", "v"}})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	r := awaitRead(t, ch)
	if r.err != nil || len(r.res) != 1 || len(r.res[0].Messages) < 1 || len(r.res[0].Messages) > 2 || r.res[0].Messages[0].ID != "1-0" {
		t.Fatalf("woken NOACK COUNT 2 read = %+v, %v", r.res, r.err)
	}
	delivered := len(r.res[0].Messages)
	if sum := mustDo(t, admin, "XPENDING", "s", "g").([]any); sum[0] != int64(0) {
		t.Fatalf("XPENDING after NOACK = %#v", sum)
	}
	// The rest is still there for the group.
	rs := rawStreams(t, mustDo(t, admin, "XREADGROUP", "GROUP", "g", "d", "STREAMS", "s", ">"))
	if len(rs["s"]) != 3-delivered || rs["s"][len(rs["s"])-1].ID != "3-0" {
		t.Fatalf("remaining entries = %+v (woken read took %d)", rs, delivered)
	}
}

func TestBlockBinaryAndLongKeys(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	admin := ts.client(t)
	for _, key := range []string{"", "k\x00\r\n", strings.Repeat("L", 200) + "\x00", strings.Repeat("L", 200) + "\x01"} {
		mustStr(t, admin, "OK", "XGROUP", "CREATE", key, "g", "$", "MKSTREAM")
	}
	for _, key := range []string{"", "k\x00\r\n", strings.Repeat("L", 200) + "\x00"} {
		ch := goRead(xreadGroupBlock(ts.client(t), "g", "c", 5*time.Second, key, ">"))
		waitBlocked(t, admin, 1)
		// A write to a key sharing a long prefix does not serve this reader.
		mustDo(t, admin, "XADD", strings.Repeat("L", 200)+"\x01", "*", "f", "v")
		mustDo(t, admin, "XADD", key, "1-0", "f", "v")
		r := awaitRead(t, ch)
		oneEntry(t, r, key, "1-0")
		waitBlocked(t, admin, 0)
	}
}

func TestBlockPipelinedCommandsAfterBlockingOne(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	nc, br := dialRaw(t, ts.addr)
	rawSend(t, nc, "XREAD BLOCK 100 STREAMS s $\r\nPING\r\nECHO done\r\n")
	for _, want := range []string{"*-1", "+PONG", "$4", "done"} {
		if l := rawLine(t, nc, br, 5*time.Second); l != want {
			t.Fatalf("reply line = %q, want %q", l, want)
		}
	}
}

func TestBlockWokenDeliveryDurable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	always := func(o *Options) { o.AppendFsync = materialize.SyncAlways }
	ts := startTestServer(t, dir, always)
	admin := ts.client(t)
	mustStr(t, admin, "OK", "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
	ch := goRead(xreadGroupBlock(ts.client(t), "g", "c", 5*time.Second, "s", ">"))
	waitBlocked(t, admin, 1)
	mustDo(t, admin, "XADD", "s", "1-0", "f", "v")
	oneEntry(t, awaitRead(t, ch), "s", "1-0")
	if err := ts.Close(); err != nil {
		t.Fatal(err)
	}
	ts2 := startTestServer(t, dir, always)
	if rows := xpendingExt(t, ts2.client(t), "s", "g", "-", "+", "10"); len(rows) != 1 || rows[0] != (pendingRow{"1-0", "c", 1}) {
		t.Fatalf("XPENDING after restart = %v", rows)
	}
}

func TestBlockFlushDBUnblocksOnlyItsDatabase(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	admin := ts.client(t)
	db1 := clientDB(t, ts, 1)
	mustStr(t, admin, "OK", "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
	mustStr(t, db1, "OK", "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
	in0 := goRead(xreadGroupBlock(ts.client(t), "g", "c", 5*time.Second, "s", ">"))
	in1 := goRead(xreadGroupBlock(clientDB(t, ts, 1), "g", "c", 5*time.Second, "s", ">"))
	waitBlocked(t, admin, 2)
	mustStr(t, admin, "OK", "FLUSHDB")
	r := awaitRead(t, in0)
	if r.err == nil || r.err.Error() != "UNBLOCKED the stream key no longer exists" {
		t.Fatalf("db0 reader after FLUSHDB = %v, %v", r.res, r.err)
	}
	waitBlocked(t, admin, 1)
	assertStillBlocked(t, in1)
	mustDo(t, db1, "XADD", "s", "1-0", "f", "v")
	oneEntry(t, awaitRead(t, in1), "s", "1-0")
}
