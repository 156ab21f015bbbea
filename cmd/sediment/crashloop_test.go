package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	loopCycles  = 20
	loopWriters = 4
	loopSeed    = 20261123
	// loopStrs is how many str keys a writer cycles through; loopFields
	// how many hash fields.
	loopStrs   = 50
	loopFields = 100
)

// TestCrashLoop checks that SIGKILL loses no acknowledged write across many
// kills of one store, including kills that land inside a Pebble memtable
// flush. Pebble keeps no WAL of its own (docs/rfcs/20261123_changelog_wal.md):
// the change log is the WAL, a flush syncs it first, and Open replays the
// records after the A that Pebble holds durably. A kill in the middle of a
// flush is where that hand-off could lose or repeat a write, and state
// accumulated over earlier kills is where a replay that skips or re-applies
// records would show.
//
// For each of --appendfsync always and everysec, one data dir goes through
// 20 cycles. In each, 4 writers (one connection each, keys of their own)
// load strings of 100 B to 8 KB (those of 4 KiB or more go to blob files),
// a counter, a hash, a set and a stream with a consumer group. The child is
// killed after a random delay in even cycles, and as soon as a new sstable
// appears (a flush has begun writing) in odd ones, then restarted on the
// same dir. Zero loss is asserted under both policies: a write's record
// reaches the OS before its reply is sent, and a SIGKILL, unlike a power
// loss, does not take what the OS holds.
//
// After each restart:
//   - every acknowledged effect of the killed cycle is there; the one
//     command each writer had in flight when its connection died is either
//     applied or not, never applied twice;
//   - the keys of earlier cycles hold what they held at the restart that
//     first verified them;
//   - counts equal recounts over the whole db: DBSIZE against SCAN, XLEN,
//     HLEN and SCARD against the elements listed, and each group's pending
//     count in XPENDING's summary, XPENDING's entries, XINFO GROUPS and
//     XINFO CONSUMERS.
func TestCrashLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the server and kills it 40 times")
	}
	bin := buildBinary(t)
	t.Logf("seed %d", loopSeed)
	for pi, policy := range []string{"always", "everysec"} {
		t.Run(policy, func(t *testing.T) {
			// The policies share nothing but the binary, and always waits
			// mostly on fsyncs, so running them side by side halves the
			// time on two cores.
			t.Parallel()
			l := &crashLoop{
				t:      t,
				bin:    bin,
				dir:    t.TempDir(),
				port:   freePort(t),
				policy: policy,
				rng:    rand.New(rand.NewSource(loopSeed + int64(pi))),
				snap:   map[string]string{},
			}
			l.child = startChildFsync(t, bin, l.dir, l.port, policy)
			start := time.Now()
			for c := range loopCycles {
				l.cycle(pi, c)
			}
			t.Logf("%s: %d cycles in %v, %d acknowledged ops, flushes caught in %d of %d cycles (%d of them unfinished at the kill)",
				policy, loopCycles, time.Since(start).Round(time.Millisecond), l.ops, l.caught, loopCycles/2, l.unfinished)
			if l.ops == 0 || l.caught == 0 {
				t.Errorf("%s: %d ops acknowledged and %d kills during a flush, want some of both", policy, l.ops, l.caught)
			}
		})
	}
}

// loopChild is a running child server. done is closed once it has exited.
type loopChild struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func (c *loopChild) kill() {
	c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.done
}

// startChildFsync is startChild with the fsync policy given. It fails at
// once if the child exits instead of serving, as it would if recovery
// failed.
func startChildFsync(t *testing.T, bin, dir string, port int, policy string) *loopChild {
	t.Helper()
	cmd := exec.Command(bin, "--dir", dir, "--port", strconv.Itoa(port), "--appendfsync", policy, "--log-level", "warn", "--nats-listen", "off", "--memtable-size", "4")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	child := &loopChild{cmd: cmd, done: make(chan struct{})}
	var exit error
	go func() {
		exit = cmd.Wait()
		close(child.done)
	}()
	t.Cleanup(child.kill)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-child.done:
			t.Fatalf("child server on %s exited while starting: %v", dir, exit)
		default:
		}
		// A bare dial first: go-redis backs off between failed dials,
		// which would add a tenth of a second to every restart.
		if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			conn.Close()
			if c.Ping(context.Background()).Err() == nil {
				return child
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("child server did not answer PING")
	return nil
}

// crashLoop is one policy's run: one data dir, one child at a time.
type crashLoop struct {
	t      *testing.T
	bin    string
	dir    string
	port   int
	policy string
	rng    *rand.Rand // kill delays
	child  *loopChild

	// snap holds each verified key's content (dump) as of the restart that
	// first verified it.
	snap map[string]string

	ops        int // acknowledged, over all cycles
	caught     int // odd cycles killed during a flush
	unfinished int // of those, the caught sstable was gone after the restart
}

func (l *crashLoop) addr() string { return "127.0.0.1:" + strconv.Itoa(l.port) }

func (l *crashLoop) cycle(pi, c int) {
	t := l.t
	before := sstNames(l.dir)
	ws := make([]*loopWriter, loopWriters)
	var wg sync.WaitGroup
	for w := range ws {
		ws[w] = newLoopWriter(c, w, loopSeed+int64(pi*10000+c*100+w))
		wg.Add(1)
		go func() {
			defer wg.Done()
			ws[w].run(l.addr())
		}()
	}
	var how, sst string
	if c%2 == 0 {
		d := time.Duration(150+l.rng.Intn(451)) * time.Millisecond
		time.Sleep(d)
		how = "after " + d.String()
	} else if sst = waitNewSST(l.dir, before, 3*time.Second); sst != "" {
		l.caught++
		how = "once " + sst + " appeared"
	} else {
		how = "after 3s: no flush caught"
	}
	l.child.kill()
	wg.Wait()
	l.child = startChildFsync(t, l.bin, l.dir, l.port, l.policy)

	ops := 0
	var inflight []string
	for _, w := range ws {
		ops += w.ops
		if w.err != nil {
			t.Errorf("%s cycle %d writer %d: %v", l.policy, c, w.w, w.err)
		}
		desc := "none"
		if w.inflight != nil {
			desc = w.inflight.String()
		}
		inflight = append(inflight, desc)
	}
	l.ops += ops
	if sst != "" {
		if _, err := os.Stat(filepath.Join(l.dir, sst)); errors.Is(err, fs.ErrNotExist) {
			l.unfinished++
			how += " (gone after the restart: the flush was unfinished)"
		}
	}
	t.Logf("%s cycle %d: killed %s; %d acknowledged ops; in flight: %s", l.policy, c, how, ops, strings.Join(inflight, ", "))

	ctx := context.Background()
	vc := redis.NewClient(&redis.Options{Addr: l.addr()})
	defer vc.Close()
	for _, w := range ws {
		l.verifyWriter(ctx, vc, c, w)
	}
	l.recount(ctx, vc, c)
	if t.Failed() {
		t.FailNow()
	}
}

// sstNames returns the sstables under dir, as paths relative to it.
func sstNames(dir string) map[string]bool {
	names := map[string]bool{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		// Files vanish under the walk as compactions finish; skip them.
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".sst") {
			rel, _ := filepath.Rel(dir, p)
			names[rel] = true
		}
		return nil
	})
	return names
}

// waitNewSST polls dir until an sstable not in before appears and returns
// its relative path, or "" after limit. Pebble creates a flush's sstable
// when the flush starts writing it, so killing at once lands in the flush.
func waitNewSST(dir string, before map[string]bool, limit time.Duration) string {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		for n := range sstNames(dir) {
			if !before[n] {
				return n
			}
		}
		time.Sleep(time.Millisecond)
	}
	return ""
}

// loopOp is one command a writer sends. Only the fields its kind uses are set.
type loopOp struct {
	kind string
	n    int    // SET, DEL: the str index; HSET: the field index
	val  string // SET, HSET: the value; SADD: the member; XADD: field i's value; XACK: the ID
}

func (o loopOp) String() string {
	switch o.kind {
	case "SET":
		return fmt.Sprintf("SET str:%d %s", o.n, valueDesc(o.val))
	case "DEL":
		return fmt.Sprintf("DEL str:%d", o.n)
	case "HSET":
		return fmt.Sprintf("HSET h f%d %s", o.n, valueDesc(o.val))
	case "SADD", "XACK":
		return o.kind + " " + o.val
	}
	return o.kind
}

// strState is a str key's last acknowledged state; the zero value is absent.
type strState struct {
	set bool
	val string
}

func (s strState) String() string {
	if !s.set {
		return "absent"
	}
	return valueDesc(s.val)
}

// loopWriter sends commands on one connection and models what was
// acknowledged. Its fields are its goroutine's until run returns.
type loopWriter struct {
	w      int
	prefix string
	rng    *rand.Rand

	strs      [loopStrs]strState
	ctr       int64
	hash      map[string]string
	set       map[string]string // members, each to "" (checkElems)
	xadds     []string          // acknowledged XADD IDs, ascending
	group     bool              // XGROUP CREATE acknowledged
	delivered []string          // IDs delivered by XREADGROUP, ascending
	unacked   []string          // delivered, not yet XACKed, oldest first
	xacked    map[string]bool

	ops      int
	inflight *loopOp // the command whose reply never came: applied or not, maybe never sent
	err      error   // an error reply: the server did not die, it refused
}

func newLoopWriter(c, w int, seed int64) *loopWriter {
	return &loopWriter{
		w:      w,
		prefix: fmt.Sprintf("c%d:w%d:", c, w),
		rng:    rand.New(rand.NewSource(seed)),
		hash:   map[string]string{},
		set:    map[string]string{},
		xacked: map[string]bool{},
	}
}

func (w *loopWriter) strKey(n int) string { return w.prefix + "str:" + strconv.Itoa(n) }
func (w *loopWriter) consumer() string    { return "c" + strconv.Itoa(w.w) }

func (w *loopWriter) run(addr string) {
	// Once a command fails the server is dead: redialing (go-redis does
	// when it finds its pooled connection closed) would only delay the stop.
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1, MaxRetries: -1, DialerRetries: 1})
	defer c.Close()
	ctx := context.Background()
	for i := 0; ; i++ {
		op := w.next(i)
		err := w.do(ctx, c, op)
		if err == nil {
			w.ops++
			continue
		}
		var rerr redis.Error
		if errors.As(err, &rerr) {
			w.err = fmt.Errorf("%s: %w", op, err)
		} else {
			w.inflight = &op
		}
		return
	}
}

// next picks op i. SETs are 5 in 12 and HSETs 1 in 12, of 100 to 8192
// and 100 to 16384 bytes: a flush starts only once the immutable
// memtables hold half of MemTableSize (2 MiB with the child's
// --memtable-size 4; at the default 16 a slow fsync under always left
// whole 3 s cycles without a flush), however small the first ones are. A SET value of 4 KiB or more stays in the change log (only a
// reference reaches the memtable), so the HSET values bring most of the
// bytes.
func (w *loopWriter) next(i int) loopOp {
	switch i % 12 {
	case 1:
		return loopOp{kind: "INCR"}
	case 3:
		return loopOp{kind: "HSET", n: i % loopFields, val: w.value(i, 16384)}
	case 4:
		return loopOp{kind: "SADD", val: "m" + strconv.Itoa(i)}
	case 6:
		return loopOp{kind: "XADD", val: strconv.Itoa(i)}
	case 8:
		if !w.group {
			return loopOp{kind: "XGROUP CREATE"}
		}
		return loopOp{kind: "XREADGROUP"}
	case 9:
		if len(w.unacked) == 0 {
			return loopOp{kind: "XADD", val: strconv.Itoa(i)}
		}
		return loopOp{kind: "XACK", val: w.unacked[0]}
	case 11:
		// The key SET 25 ops ago and SET again 25 ops from now: it spends
		// half its time deleted.
		return loopOp{kind: "DEL", n: (i + 25) % loopStrs}
	}
	return loopOp{kind: "SET", n: i % loopStrs, val: w.value(i, 8192)}
}

// value is a random value of 100 to max bytes that starts by naming the
// writer and op i (valueDesc).
func (w *loopWriter) value(i, max int) string {
	head := fmt.Sprintf("w%d i%d ", w.w, i)
	b := make([]byte, 100+w.rng.Intn(max-100+1))
	w.rng.Read(b[copy(b, head):])
	return string(b)
}

// do sends op and, only if it is acknowledged, applies it to the model.
func (w *loopWriter) do(ctx context.Context, c *redis.Client, op loopOp) error {
	x := w.prefix + "x"
	switch op.kind {
	case "SET":
		if err := c.Set(ctx, w.strKey(op.n), op.val, 0).Err(); err != nil {
			return err
		}
		w.strs[op.n] = strState{set: true, val: op.val}
	case "DEL":
		if err := c.Del(ctx, w.strKey(op.n)).Err(); err != nil {
			return err
		}
		w.strs[op.n] = strState{}
	case "INCR":
		v, err := c.Incr(ctx, w.prefix+"ctr").Result()
		if err != nil {
			return err
		}
		w.ctr = v
	case "HSET":
		f := "f" + strconv.Itoa(op.n)
		if err := c.HSet(ctx, w.prefix+"h", f, op.val).Err(); err != nil {
			return err
		}
		w.hash[f] = op.val
	case "SADD":
		if err := c.SAdd(ctx, w.prefix+"s", op.val).Err(); err != nil {
			return err
		}
		w.set[op.val] = ""
	case "XADD":
		id, err := c.XAdd(ctx, &redis.XAddArgs{Stream: x, Values: []any{"i", op.val}}).Result()
		if err != nil {
			return err
		}
		w.xadds = append(w.xadds, id)
	case "XGROUP CREATE":
		if err := c.XGroupCreateMkStream(ctx, x, "g", "0").Err(); err != nil && !redis.HasErrorPrefix(err, "BUSYGROUP") {
			return err
		}
		w.group = true
	case "XREADGROUP":
		res, err := c.XReadGroup(ctx, &redis.XReadGroupArgs{
			Group: "g", Consumer: w.consumer(), Streams: []string{x, ">"}, Count: 3, Block: -1,
		}).Result()
		if err != nil && err != redis.Nil {
			return err
		}
		for _, s := range res {
			for _, m := range s.Messages {
				w.delivered = append(w.delivered, m.ID)
				w.unacked = append(w.unacked, m.ID)
			}
		}
	case "XACK":
		n, err := c.XAck(ctx, x, "g", op.val).Result()
		if err != nil {
			return err
		}
		if n != 1 {
			return redis.Error(badReply(fmt.Sprintf("XACK %s acknowledged %d entries, want 1", op.val, n)))
		}
		w.xacked[op.val] = true
		w.unacked = w.unacked[1:]
	}
	return nil
}

// badReply is a reply that is well formed but wrong, reported as an error
// reply: the server answered, so the command's outcome is known.
type badReply string

func (e badReply) Error() string { return string(e) }
func (badReply) RedisError()     {}

// verifyWriter checks w's model against the restarted server.
func (l *crashLoop) verifyWriter(ctx context.Context, c *redis.Client, cyc int, w *loopWriter) {
	in := loopOp{}
	if w.inflight != nil {
		in = *w.inflight
	}
	fail := func(key, format string, args ...any) {
		l.t.Errorf("%s cycle %d writer %d key %s: %s; in flight: %s", l.policy, cyc, w.w, key, fmt.Sprintf(format, args...), in)
	}
	x := w.prefix + "x"
	pipe := c.Pipeline()
	var gets [loopStrs]*redis.StringCmd
	for n := range gets {
		gets[n] = pipe.Get(ctx, w.strKey(n))
	}
	ctr := pipe.Get(ctx, w.prefix+"ctr")
	hall := pipe.HGetAll(ctx, w.prefix+"h")
	smem := pipe.SMembers(ctx, w.prefix+"s")
	xr := pipe.XRange(ctx, x, "-", "+")
	var xp *redis.XPendingExtCmd
	if w.group {
		xp = pipe.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: x, Group: "g", Start: "-", End: "+", Count: 1000000})
	}
	pipe.Exec(ctx) // each reply is checked below; a missing key's redis.Nil is not a failure

	for n, cmd := range gets {
		v, err := cmd.Result()
		if err != nil && err != redis.Nil {
			fail(w.strKey(n), "GET: %v", err)
			continue
		}
		got := strState{set: err == nil, val: v}
		if got == w.strs[n] || in.n == n && (in.kind == "SET" && got == strState{set: true, val: in.val} || in.kind == "DEL" && !got.set) {
			continue
		}
		fail(w.strKey(n), "want %s (last acknowledged), got %s", w.strs[n], got)
	}

	var gotCtr int64
	if v, err := ctr.Result(); err == nil {
		gotCtr, _ = strconv.ParseInt(v, 10, 64)
	} else if err != redis.Nil {
		fail(w.prefix+"ctr", "GET: %v", err)
	}
	if gotCtr != w.ctr && !(in.kind == "INCR" && gotCtr == w.ctr+1) {
		fail(w.prefix+"ctr", "want %d (last acknowledged INCR), got %d", w.ctr, gotCtr)
	}

	var field, fieldVal, member string // of an in-flight HSET or SADD
	switch in.kind {
	case "HSET":
		field, fieldVal = "f"+strconv.Itoa(in.n), in.val
	case "SADD":
		member = in.val
	}
	if h, err := hall.Result(); err != nil {
		fail(w.prefix+"h", "HGETALL: %v", err)
	} else {
		checkElems(fail, w.prefix+"h", w.hash, h, field, fieldVal)
	}
	if ms, err := smem.Result(); err != nil {
		fail(w.prefix+"s", "SMEMBERS: %v", err)
	} else {
		got := make(map[string]string, len(ms))
		for _, m := range ms {
			got[m] = ""
		}
		checkElems(fail, w.prefix+"s", w.set, got, member, "")
	}

	if es, err := xr.Result(); err != nil {
		fail(x, "XRANGE: %v", err)
	} else {
		got := make(map[string]string, len(es))
		var last string
		for _, e := range es {
			got[e.ID] = ""
			last = e.ID
		}
		acked := make(map[string]string, len(w.xadds))
		for _, id := range w.xadds {
			acked[id] = ""
		}
		// An entry of the in-flight XADD can only be the last one.
		if _, ok := acked[last]; ok || in.kind != "XADD" {
			last = ""
		}
		checkElems(fail, x, acked, got, last, "")
	}

	if xp != nil {
		l.verifyPending(x, w, in, xp, fail)
	}
}

// checkElems checks a hash's fields, or a set's members or a stream's IDs
// (each to ""): every acknowledged one holds its value, and there is no
// other, except that the in-flight one (elem, set to val) may go either way.
func checkElems(fail func(key, format string, args ...any), key string, acked, got map[string]string, elem, val string) {
	for e, want := range acked {
		switch g, ok := got[e]; {
		case !ok:
			fail(key, "acknowledged %s missing (%d present, %d acknowledged)", e, len(got), len(acked))
		case g != want && !(e == elem && g == val):
			fail(key, "%s: want %q (acknowledged), got %q", e, want, g)
		}
	}
	for e, g := range got {
		switch _, ok := acked[e]; {
		case ok || e == elem && g == val:
		case g == "":
			fail(key, "%s was never acknowledged", e)
		default:
			fail(key, "%s = %q was never acknowledged", e, g)
		}
	}
}

// verifyPending checks the PEL of w's group g: delivered and not acked means
// pending for w's consumer, acked means not pending.
func (l *crashLoop) verifyPending(x string, w *loopWriter, in loopOp, xp *redis.XPendingExtCmd, fail func(key, format string, args ...any)) {
	ps, err := xp.Result()
	if err != nil {
		fail(x, "XPENDING g - + 1000000: %v", err)
		return
	}
	pend := make(map[string]string, len(ps))
	for _, p := range ps {
		pend[p.ID] = p.Consumer
	}
	delivered := make(map[string]bool, len(w.delivered))
	for _, id := range w.delivered {
		delivered[id] = true
		cons, ok := pend[id]
		switch {
		case w.xacked[id] && ok:
			fail(x, "acknowledged XACK of %s lost: still pending for %s", id, cons)
		case w.xacked[id] || in.kind == "XACK" && in.val == id:
		case !ok:
			fail(x, "delivered, unacknowledged %s is not pending (%d pending, want %d)", id, len(ps), len(w.delivered)-len(w.xacked))
		case cons != w.consumer():
			fail(x, "%s pending for %s, want %s", id, cons, w.consumer())
		}
	}
	added := make(map[string]bool, len(w.xadds))
	for _, id := range w.xadds {
		added[id] = true
	}
	last := ""
	if len(w.delivered) > 0 {
		last = w.delivered[len(w.delivered)-1]
	}
	var extra []string
	for _, p := range ps {
		if !delivered[p.ID] {
			extra = append(extra, p.ID)
			if in.kind != "XREADGROUP" || !added[p.ID] || last != "" && !idLess(last, p.ID) || p.Consumer != w.consumer() {
				fail(x, "%s pending for %s was never delivered (last delivered %s)", p.ID, p.Consumer, last)
			}
		}
	}
	if len(extra) > 3 {
		fail(x, "%d entries pending beyond those delivered, an XREADGROUP COUNT 3 in flight delivers at most 3: %v", len(extra), extra)
	}
}

// recount checks counts against recounts over the whole db and that the
// keys of earlier cycles are unchanged, then records cycle cyc's keys.
func (l *crashLoop) recount(ctx context.Context, c *redis.Client, cyc int) {
	fail := func(key, format string, args ...any) {
		l.t.Errorf("%s cycle %d key %s: %s", l.policy, cyc, key, fmt.Sprintf(format, args...))
	}
	seen := map[string]bool{}
	var keys []string
	it := c.Scan(ctx, 0, "", 1000).Iterator()
	for it.Next(ctx) {
		if k := it.Val(); !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	if err := it.Err(); err != nil {
		l.t.Fatalf("%s cycle %d: SCAN: %v", l.policy, cyc, err)
	}
	if n, err := c.DBSize(ctx).Result(); err != nil || n != int64(len(keys)) {
		l.t.Errorf("%s cycle %d: DBSIZE = %d (err %v), SCAN found %d keys", l.policy, cyc, n, err, len(keys))
	}
	dumps := make(map[string]string, len(keys))
	for chunk := range slices.Chunk(keys, 200) {
		for k, d := range dumpKeys(ctx, c, chunk, fail) {
			dumps[k] = d
		}
	}
	for k, was := range l.snap {
		now, ok := dumps[k]
		switch {
		case !ok:
			fail(k, "gone since it was verified (was %s)", short(was))
		case now != was:
			i := 0
			for i < min(len(was), len(now)) && was[i] == now[i] {
				i++
			}
			fail(k, "changed since it was verified, from byte %d of its dump: was %s, now %s",
				i, short(was[max(0, i-20):]), short(now[max(0, i-20):]))
		}
	}
	prefix := fmt.Sprintf("c%d:", cyc)
	for k, d := range dumps {
		if strings.HasPrefix(k, prefix) {
			l.snap[k] = d
		} else if _, ok := l.snap[k]; !ok {
			fail(k, "appeared after its cycle was verified: %s", short(d))
		}
	}
}

// keyProbe holds the replies read about one key.
type keyProbe struct {
	typ    *redis.StatusCmd
	get    *redis.StringCmd
	n      *redis.IntCmd // STRLEN, HLEN, SCARD or XLEN
	hall   *redis.MapStringStringCmd
	smem   *redis.StringSliceCmd
	xr     *redis.XMessageSliceCmd
	groups *redis.XInfoGroupsCmd
	pend   []groupProbe
	cmds   []redis.Cmder // all of the above that were sent, for their errors
}

type groupProbe struct {
	sum  *redis.XPendingCmd
	ext  *redis.XPendingExtCmd
	cons *redis.XInfoConsumersCmd
}

// dumpKeys checks each key's counts against its recounts and returns its
// content as a string that differs whenever the content does (pending
// entries' idle times and delivery counts left out).
func dumpKeys(ctx context.Context, c *redis.Client, keys []string, fail func(key, format string, args ...any)) map[string]string {
	ps := make([]keyProbe, len(keys))
	pipe := c.Pipeline()
	for i, k := range keys {
		ps[i].typ = pipe.Type(ctx, k)
	}
	pipe.Exec(ctx)
	pipe = c.Pipeline()
	for i, k := range keys {
		p := &ps[i]
		switch p.typ.Val() {
		case "string":
			p.get, p.n = pipe.Get(ctx, k), pipe.StrLen(ctx, k)
			p.cmds = []redis.Cmder{p.get, p.n}
		case "hash":
			p.hall, p.n = pipe.HGetAll(ctx, k), pipe.HLen(ctx, k)
			p.cmds = []redis.Cmder{p.hall, p.n}
		case "set":
			p.smem, p.n = pipe.SMembers(ctx, k), pipe.SCard(ctx, k)
			p.cmds = []redis.Cmder{p.smem, p.n}
		case "stream":
			p.xr, p.n, p.groups = pipe.XRange(ctx, k, "-", "+"), pipe.XLen(ctx, k), pipe.XInfoGroups(ctx, k)
			p.cmds = []redis.Cmder{p.xr, p.n, p.groups}
		default:
			fail(k, "TYPE = %q (err %v), the test writes no such key", p.typ.Val(), p.typ.Err())
		}
	}
	pipe.Exec(ctx)
	pipe = c.Pipeline()
	for i, k := range keys {
		p := &ps[i]
		if p.groups == nil {
			continue
		}
		for _, g := range p.groups.Val() {
			p.pend = append(p.pend, groupProbe{
				sum:  pipe.XPending(ctx, k, g.Name),
				ext:  pipe.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: k, Group: g.Name, Start: "-", End: "+", Count: 1000000}),
				cons: pipe.XInfoConsumers(ctx, k, g.Name),
			})
		}
	}
	pipe.Exec(ctx)

	dumps := make(map[string]string, len(keys))
	for i, k := range keys {
		p := &ps[i]
		var b strings.Builder
		var listed int
		switch {
		case p.get != nil:
			b.WriteString("string " + p.get.Val())
			listed = len(p.get.Val())
		case p.hall != nil:
			h := p.hall.Val()
			fields := make([]string, 0, len(h))
			for f, v := range h {
				fields = append(fields, f+"="+v)
			}
			slices.Sort(fields)
			b.WriteString("hash " + strings.Join(fields, ","))
			listed = len(h)
		case p.smem != nil:
			ms := slices.Sorted(slices.Values(p.smem.Val()))
			b.WriteString("set " + strings.Join(ms, ","))
			listed = len(ms)
		case p.xr != nil:
			es := p.xr.Val()
			b.WriteString("stream")
			for _, e := range es {
				fmt.Fprintf(&b, " %s%v", e.ID, e.Values)
			}
			listed = len(es)
			dumpGroups(&b, k, p, fail)
		default:
			continue
		}
		for _, cmd := range p.cmds {
			if cmd.Err() != nil {
				fail(k, "%s: %v", strings.ToUpper(cmd.Name()), cmd.Err())
			}
		}
		if n := p.n.Val(); n != int64(listed) {
			fail(k, "%s = %d, but %d listed", strings.ToUpper(p.n.Name()), n, listed)
		}
		dumps[k] = b.String()
	}
	return dumps
}

// dumpGroups appends each group's last delivered ID and PEL to b, checking
// that the four pending counts agree.
func dumpGroups(b *strings.Builder, k string, p *keyProbe, fail func(key, format string, args ...any)) {
	for gi, g := range p.groups.Val() {
		gp := p.pend[gi]
		sum, err1 := gp.sum.Result()
		ext, err2 := gp.ext.Result()
		cons, err3 := gp.cons.Result()
		if err := errors.Join(err1, err2, err3); err != nil {
			fail(k, "group %s: %v", g.Name, err)
			continue
		}
		var consSum int64
		for _, c := range cons {
			consSum += c.Pending
		}
		if sum.Count != int64(len(ext)) || sum.Count != g.Pending || sum.Count != consSum {
			fail(k, "group %s pending: XPENDING summary %d, XPENDING entries %d, XINFO GROUPS %d, XINFO CONSUMERS sum %d",
				g.Name, sum.Count, len(ext), g.Pending, consSum)
		}
		fmt.Fprintf(b, " group %s last %s pending", g.Name, g.LastDeliveredID)
		for _, e := range ext {
			fmt.Fprintf(b, " %s@%s", e.ID, e.Consumer)
		}
	}
}

// idLess reports whether stream ID a sorts before b.
func idLess(a, b string) bool {
	am, as := splitID(a)
	bm, bs := splitID(b)
	return am < bm || am == bm && as < bs
}

func splitID(id string) (ms, seq uint64) {
	m, s, _ := strings.Cut(id, "-")
	ms, _ = strconv.ParseUint(m, 10, 64)
	seq, _ = strconv.ParseUint(s, 10, 64)
	return ms, seq
}

// valueDesc names a SET or HSET value by the writer and op that made it.
func valueDesc(v string) string {
	f := strings.Fields(v[:min(len(v), 24)])
	if len(f) < 2 {
		return fmt.Sprintf("%q (%d bytes)", v[:min(len(v), 24)], len(v))
	}
	return fmt.Sprintf("%q (%d bytes)", f[0]+" "+f[1], len(v))
}

// short quotes the start of a key's dump, enough to see what it holds.
func short(d string) string {
	if v, ok := strings.CutPrefix(d, "string "); ok {
		return "string " + valueDesc(v)
	}
	if len(d) <= 80 {
		return fmt.Sprintf("%q", d)
	}
	return fmt.Sprintf("%q… (%d bytes)", d[:80], len(d))
}
