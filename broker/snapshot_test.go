package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/redis/go-redis/v9"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/feed"
	"github.com/sediment-dev/sediment/internal/glob"
	"github.com/sediment-dev/sediment/materialize"
)

// liveFeed keeps every message of a NATS subscription, however many: a
// consumer that must miss nothing buffers while it reads the snapshot.
type liveFeed struct {
	mu   sync.Mutex
	msgs []feed.Message
	max  uint64
	err  error
}

func subscribeLive(t *testing.T, ts *testServer, subject string) *liveFeed {
	t.Helper()
	nc, err := nats.Connect("", nats.InProcessServer(ts.wake.ns))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	l := &liveFeed{}
	if _, err := nc.Subscribe(subject, func(m *nats.Msg) {
		msg, err := feed.Decode(m.Data)
		l.mu.Lock()
		defer l.mu.Unlock()
		if err != nil {
			l.err = err
			return
		}
		l.msgs = append(l.msgs, msg)
		l.max = max(l.max, msg.Seq)
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return l
}

// upTo waits until the feed delivered record seq, then returns its messages.
func (l *liveFeed) upTo(t *testing.T, seq uint64) []feed.Message {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		l.mu.Lock()
		done, err := l.max >= seq, l.err
		msgs := l.msgs
		l.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		if done {
			return msgs
		}
		if time.Now().After(deadline) {
			t.Fatalf("the live feed reached %d, want %d", l.max, seq)
		}
	}
}

// snapWriter writes random commands of every type to keys k:<type>:<n>
// (the pattern the test follows) and o:<type>:<n> (outside it).
type snapWriter struct {
	c       *redis.Client
	rng     *rand.Rand
	pending map[string][]string // stream key → IDs read by a group and not acknowledged
	ops     int
}

func (w *snapWriter) key(typ string) string {
	prefix := "k:"
	if w.rng.IntN(5) == 0 {
		prefix = "o:"
	}
	if typ == "string" && w.rng.IntN(8) == 0 {
		return prefix + "bin:\x00\xff." // a key that is not UTF-8, with \0 and a subject separator
	}
	return fmt.Sprintf("%s%s:%d", prefix, typ, w.rng.IntN(4))
}

func (w *snapWriter) step(ctx context.Context) {
	r, c := w.rng, w.c
	w.ops++
	do := func(args ...any) *redis.Cmd { return c.Do(ctx, args...) }
	member := func() string { return fmt.Sprintf("m%d", r.IntN(12)) }
	switch r.IntN(24) {
	case 0:
		do("SET", w.key("string"), fmt.Sprintf("v%d", r.IntN(1000)))
	case 1:
		// Short TTLs (expired by the end) and long ones.
		if r.IntN(2) == 0 {
			do("SET", w.key("string"), "ttl", "PX", 20+r.IntN(200))
		} else {
			do("SET", w.key("string"), "long", "EX", 1000)
		}
	case 2:
		do("APPEND", w.key("string"), "+")
	case 3:
		do("HSET", w.key("hash"), member(), r.IntN(100), member(), "x")
	case 4:
		do("HDEL", w.key("hash"), member(), member())
	case 5:
		do("SADD", w.key("set"), member(), member())
	case 6:
		do("SREM", w.key("set"), member())
	case 7:
		do("ZADD", w.key("zset"), r.IntN(50)-25, member(), r.Float64(), member())
	case 8:
		do("ZREM", w.key("zset"), member())
	case 9:
		if r.IntN(2) == 0 {
			do("LPUSH", w.key("list"), member(), member())
		} else {
			do("RPUSH", w.key("list"), member())
		}
	case 10:
		switch r.IntN(4) {
		case 0:
			do("LPOP", w.key("list"))
		case 1:
			do("RPOP", w.key("list"), 2)
		case 2:
			do("LREM", w.key("list"), 1, member())
		default:
			do("LINSERT", w.key("list"), "BEFORE", member(), "ins")
		}
	case 11:
		do("LSET", w.key("list"), 0, "first")
	case 12, 13:
		if r.IntN(3) == 0 {
			do("XADD", w.key("stream"), "MAXLEN", "~", 30, "*", "f", r.IntN(100))
		} else {
			do("XADD", w.key("stream"), "*", "f", r.IntN(100), "g", "x")
		}
	case 14:
		k := w.key("stream")
		if ids := c.XRevRangeN(ctx, k, "+", "-", 3).Val(); len(ids) > 0 {
			do("XDEL", k, ids[r.IntN(len(ids))].ID)
		}
	case 15:
		do("XTRIM", w.key("stream"), "MAXLEN", 10+r.IntN(20))
	case 16:
		do("XGROUP", "CREATE", w.key("stream"), fmt.Sprintf("g%d", r.IntN(2)), "0", "MKSTREAM")
	case 17:
		k := w.key("stream")
		res, err := c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: fmt.Sprintf("g%d", r.IntN(2)), Consumer: fmt.Sprintf("c%d", r.IntN(3)),
			Streams: []string{k, ">"}, Count: 3, Block: -1}).Result()
		if err == nil {
			for _, s := range res {
				for _, m := range s.Messages {
					w.pending[k] = append(w.pending[k], m.ID)
				}
			}
		}
	case 18:
		k := w.key("stream")
		if ids := w.pending[k]; len(ids) > 0 {
			do("XACK", k, "g0", ids[0])
			do("XACK", k, "g1", ids[0])
			w.pending[k] = ids[1:]
		}
	case 19:
		do("XAUTOCLAIM", w.key("stream"), fmt.Sprintf("g%d", r.IntN(2)), fmt.Sprintf("c%d", r.IntN(3)), 0, "0-0", "COUNT", 2)
	case 20:
		switch r.IntN(3) {
		case 0:
			do("XGROUP", "DELCONSUMER", w.key("stream"), "g0", fmt.Sprintf("c%d", r.IntN(3)))
		case 1:
			do("XGROUP", "DESTROY", w.key("stream"), "g1")
		default:
			do("DEL", w.key([]string{"string", "hash", "set", "zset", "list", "stream"}[r.IntN(6)]))
		}
	case 21:
		// EXPIRE: short or long; PERSIST.
		k := w.key([]string{"string", "hash", "set", "zset", "list", "stream"}[r.IntN(6)])
		switch r.IntN(3) {
		case 0:
			do("PEXPIRE", k, 20+r.IntN(200))
		case 1:
			do("EXPIRE", k, 1000)
		default:
			do("PERSIST", k)
		}
	case 22:
		// RENAME within one type's keys, and within one side of the
		// pattern (a copy-key names its source: a consumer of a pattern
		// has the source only when it matches too).
		typ := []string{"string", "hash", "set", "zset", "list", "stream"}[r.IntN(6)]
		src := w.key(typ)
		prefix := src[:2]
		do("RENAME", src, fmt.Sprintf("%s%s:%d", prefix, typ, r.IntN(4)))
	case 23:
		// A transaction: one record with several keys' events.
		c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.HSet(ctx, w.key("hash"), member(), "tx")
			p.ZIncrBy(ctx, w.key("zset"), 1, member())
			p.RPush(ctx, w.key("list"), "tx")
			p.Del(ctx, w.key("set"))
			return nil
		})
	}
}

// TestSnapshotThenStream: with four clients writing every type (TTLs,
// hashes, sets, sorted sets, lists, streams with XDEL, XTRIM, consumer
// groups and claims, DEL, EXPIRE, RENAME, transactions) in two dbs, a
// snapshot of k:* is taken and read page by page while they write. Then
// the snapshot's events followed by CHANGES FROM S+1, and separately the
// snapshot followed by the live NATS feed's events above S, applied to an
// in-memory model, give exactly the server's keys once the writers stopped:
// nothing missed, nothing doubled.
func TestSnapshotThenStream(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	live := subscribeLive(t, ts, "sediment.chg.>") // before the snapshot
	admin := ts.client(t)
	// Large keys, so that keys span events and pages: a sorted set that
	// keeps rank blocks, a hash of many fields.
	p := admin.Pipeline()
	for i := range 2100 {
		p.ZAdd(ctx, "k:zset:big", redis.Z{Score: float64(i % 97), Member: fmt.Sprintf("m%d", i)})
		if i < 600 {
			p.HSet(ctx, "k:hash:big", fmt.Sprintf("f%d", i), i)
		}
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}

	var stop atomic.Bool
	var wg sync.WaitGroup
	writers := make([]*snapWriter, 4)
	for i := range writers {
		db := 0
		if i == 3 {
			db = 1
		}
		c := redis.NewClient(&redis.Options{Addr: ts.addr, DB: db, Protocol: 2, DisableIdentity: true, MaxRetries: -1})
		t.Cleanup(func() { c.Close() })
		w := &snapWriter{c: c, rng: rand.New(rand.NewPCG(uint64(i), 7)), pending: map[string][]string{}}
		writers[i] = w
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				w.step(ctx)
				if w.ops%50 == 0 {
					c.ZAdd(ctx, "k:zset:big", redis.Z{Score: float64(w.rng.IntN(97)), Member: fmt.Sprintf("m%d", w.rng.IntN(2200))})
					c.ZRem(ctx, "k:zset:big", fmt.Sprintf("m%d", w.rng.IntN(2200)))
					c.HSet(ctx, "k:hash:big", fmt.Sprintf("f%d", w.rng.IntN(700)), "w")
				}
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)

	// The snapshot, read slowly while the writers go on.
	before := ts.store.LastSeq()
	seq, snap, pages := readSnapshot(t, admin, 7, func() { time.Sleep(3 * time.Millisecond) }, "MATCH", "k:*")
	during := ts.store.LastSeq()
	time.Sleep(300 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	ops := 0
	for _, w := range writers {
		ops += w.ops
	}
	if seq < before || seq > during || during-before < 10 {
		t.Fatalf("snapshot at %d; the log was at %d before it and %d after its %d pages (the writers must write meanwhile)", seq, before, during, pages)
	}
	t.Logf("%d commands written; snapshot at %d: %d events in %d pages, while %d records committed", ops, seq, len(snap), pages, during-before)

	// Every short TTL has passed; the state stops changing once active
	// expiry has deleted those keys.
	time.Sleep(500 * time.Millisecond)
	last := ts.store.LastSeq()
	for deadline := time.Now().Add(10 * time.Second); ; {
		time.Sleep(300 * time.Millisecond)
		n := ts.store.LastSeq()
		if n == last {
			break
		}
		last = n
		if time.Now().After(deadline) {
			t.Fatal("the log does not settle")
		}
	}

	// The snapshot's events: each once, in order, all at seq, marked.
	for i, p := range snap {
		m, err := feed.Decode(p)
		if err != nil || !m.Snapshot || m.Seq != seq || m.I != i || m.N != 0 {
			t.Fatalf("snapshot event %d: %v %s", i, err, p)
		}
		k, _ := m.KeyBytes()
		if !glob.Match([]byte("k:*"), k) {
			t.Fatalf("snapshot event %d is of %q, outside k:*", i, k)
		}
	}

	// The snapshot is the state after record S exactly: the log's records
	// up to S (all retained) make the same keys, and S+1 on follow it.
	snapModel, logModel := newFeedModel(), newFeedModel()
	for _, p := range snap {
		snapModel.apply(t, p)
	}
	for _, p := range replayFrom(t, admin, 1, seq, "MATCH", "k:*") {
		if m, _ := feed.Decode(p); m.Seq <= seq {
			logModel.apply(t, p)
		}
	}
	if diffs := diffModels(snapModel, logModel); len(diffs) > 0 {
		t.Fatalf("the snapshot at %d differs from the log's records up to it:\n%s", seq, strings.Join(diffs, "\n"))
	}

	// Snapshot, then CHANGES FROM S+1: each event once, after S.
	replayed := newFeedModel()
	for _, p := range snap {
		replayed.apply(t, p)
	}
	seen := map[[2]uint64]bool{}
	for _, p := range replayFrom(t, admin, seq+1, last, "MATCH", "k:*") {
		m, _ := feed.Decode(p)
		if m.Seq <= seq || seen[[2]uint64{m.Seq, uint64(m.I)}] {
			t.Fatalf("CHANGES FROM %d: event %d/%d", seq+1, m.Seq, m.I)
		}
		seen[[2]uint64{m.Seq, uint64(m.I)}] = true
		replayed.apply(t, p)
	}
	now := nowMs()
	if diffs := compareModel(t, ts.addr, replayed, "k:*", []int{0, 1}, now); len(diffs) > 0 {
		t.Fatalf("snapshot + CHANGES FROM %d differ from the server:\n%s", seq+1, strings.Join(diffs, "\n"))
	}

	// Snapshot, then the live feed above S.
	followed := newFeedModel()
	for _, p := range snap {
		followed.apply(t, p)
	}
	n := 0
	for _, m := range live.upTo(t, last) {
		k, _ := m.KeyBytes()
		if m.Seq <= seq || m.DB == nil || !glob.Match([]byte("k:*"), k) {
			continue
		}
		followed.applyMsg(t, m)
		n++
	}
	if diffs := compareModel(t, ts.addr, followed, "k:*", []int{0, 1}, now); len(diffs) > 0 {
		t.Fatalf("snapshot + the live feed above %d differ from the server:\n%s", seq, strings.Join(diffs, "\n"))
	}
	t.Logf("models checked: %d keys; %d live events applied after the snapshot", len(followed.keys), n)
}

// TestSnapshotContents: what a snapshot holds for each type, in order;
// pages of one event give the same events as one page; MATCH, TYPE and
// DB filter (DB names the logical db, through SWAPDB); binary keys come
// in key64.
func TestSnapshotContents(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	mustDo(t, c, "SET", "s", "v", "EX", 1000)
	mustDo(t, c, "HSET", "h", "f1", "a", "f2", "b")
	mustDo(t, c, "SADD", "set", "x")
	mustDo(t, c, "ZADD", "z", 2, "b", 1, "a")
	mustDo(t, c, "LPUSH", "l", "b", "a") // head -2
	mustDo(t, c, "XADD", "x", "1-1", "f", "v")
	mustDo(t, c, "XADD", "x", "2-1", "f", "w")
	mustDo(t, c, "XGROUP", "CREATE", "x", "g", "0")
	mustDo(t, c, "XREADGROUP", "GROUP", "g", "c", "COUNT", 1, "STREAMS", "x", ">")
	mustDo(t, c, "SET", "bin\x00\xff", "1")
	c2 := redis.NewClient(&redis.Options{Addr: ts.addr, DB: 2, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { c2.Close() })
	mustDo(t, c2, "SET", "in2", "x")

	decode := func(ps [][]byte) []feed.Message {
		var out []feed.Message
		for _, p := range ps {
			m, err := feed.Decode(p)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, m)
		}
		return out
	}
	describe := func(ms []feed.Message) string {
		var b strings.Builder
		for _, m := range ms {
			k, _ := m.KeyBytes()
			fmt.Fprintf(&b, "%d %s %q %s;", *m.DB, m.Type, k, m.Op)
		}
		return b.String()
	}
	seq, all, pages := readSnapshot(t, c, 10000, nil)
	if pages != 1 || seq != ts.store.LastSeq() {
		t.Fatalf("%d pages at %d (last %d)", pages, seq, ts.store.LastSeq())
	}
	ms := decode(all)
	byKey := map[string]string{}
	for _, m := range ms {
		k, _ := m.KeyBytes()
		byKey[fmt.Sprintf("%d/%s", *m.DB, k)] += m.Op + " "
	}
	want := map[string]string{
		"0/s": "set-meta ", "0/h": "hset set-meta ", "0/set": "sadd set-meta ", "0/z": "zadd set-meta ",
		"0/l": "lset set-meta ", "0/x": "xadd xadd group-set consumer-set pel-set set-meta ",
		"0/bin\x00\xff": "set-meta ", "2/in2": "set-meta ",
	}
	if fmt.Sprint(byKey) != fmt.Sprint(want) {
		t.Fatalf("snapshot events by key:\n%v\nwant\n%v", byKey, want)
	}
	for _, m := range ms {
		k, _ := m.KeyBytes()
		args, _ := m.ArgBytes()
		switch string(k) {
		case "s":
			if m.Meta.ExpireAtMs == 0 || m.Meta.Value64 != "dg==" {
				t.Fatalf("string: %+v", m.Meta)
			}
		case "z":
			if m.Op == "zadd" && (len(args) != 7 || string(args[1]) != "a" || string(args[4]) != "b" || len(args[3]) != 0) {
				t.Fatalf("zadd: %q (ranked byte, then member, score, empty previous score, in score order)", args)
			}
		case "l":
			if first, _ := codec.DecodeInt64Arg(args[0]); m.Op == "lset" && (first != -2 || string(args[1]) != "a" || string(args[2]) != "b") {
				t.Fatalf("lset: %d %q", first, args)
			}
		case "bin\x00\xff":
			if m.Key != nil || m.Key64 == "" {
				t.Fatalf("a binary key: %+v", m)
			}
		}
	}

	// Pages of one event each: the same events.
	_, paged, pages := readSnapshot(t, c, 1, nil)
	if pages != len(all) {
		t.Fatalf("COUNT 1: %d pages for %d events", pages, len(all))
	}
	for i := range all {
		// Equal but for the time each snapshot was pinned.
		if a, b := jsonNoMs(t, all[i]), jsonNoMs(t, paged[i]); a != b {
			t.Fatalf("event %d: %s, paged %s", i, a, b)
		}
	}

	// Filters.
	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"MATCH", "[hs]*"}, `0 string "s" set-meta;0 hash "h" hset;0 hash "h" set-meta;0 set "set" sadd;0 set "set" set-meta;`},
		{[]any{"TYPE", "stream"}, `0 stream "x" xadd;0 stream "x" xadd;0 stream "x" group-set;0 stream "x" consumer-set;0 stream "x" pel-set;0 stream "x" set-meta;`},
		{[]any{"DB", 2}, `2 string "in2" set-meta;`},
		{[]any{"DB", 3}, ``},
		{[]any{"MATCH", "h", "TYPE", "set"}, ``},
	} {
		_, got, _ := readSnapshot(t, c, 100, nil, tc.args...)
		ms := decode(got)
		// Keys come in storage order: compare them sorted by key.
		var lines []string
		for _, l := range strings.Split(describe(ms), ";") {
			if l != "" {
				lines = append(lines, l+";")
			}
		}
		var wantLines []string
		for _, l := range strings.Split(tc.want, ";") {
			if l != "" {
				wantLines = append(wantLines, l+";")
			}
		}
		if fmt.Sprint(sortedStable(lines)) != fmt.Sprint(sortedStable(wantLines)) {
			t.Fatalf("%v: %v, want %v", tc.args, lines, wantLines)
		}
	}
	// SWAPDB: DB 0 is the former db 2 now, and its events say db 0.
	mustDo(t, c, "SWAPDB", 0, 2)
	_, got, _ := readSnapshot(t, c, 100, nil, "DB", 0)
	if d := describe(decode(got)); d != `0 string "in2" set-meta;` {
		t.Fatalf("DB 0 after SWAPDB 0 2: %s", d)
	}
}

// sortedStable sorts lines, keeping each key's events in their order
// (lines of one key are sorted by key only).
func sortedStable(lines []string) []string {
	out := append([]string(nil), lines...)
	keyOf := func(l string) string { return l[:strings.LastIndexByte(strings.TrimSuffix(l, ";"), ' ')] }
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && keyOf(out[j-1]) > keyOf(out[j]); j-- {
			out[j-1], out[j] = out[j], out[j-1]
		}
	}
	return out
}

// TestSnapshotRebuildsTheStore: a snapshot's events, written to an empty
// store, make the same stored keys as the original's at the snapshot's
// sequence: metadata and TTL index, hash fields, set members, list
// positions, sorted-set members and score index (and rank blocks), stream
// entries, groups, consumers, the PEL with its two indexes (NACKed entries
// included), idempotent-production records, node keys. So the snapshot holds
// everything a stored key is, not only what the model reads.
func TestSnapshotRebuildsTheStore(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	c := ts.client(t)
	mustDo(t, c, "CONFIG", "SET", "stream-node-max-entries", 8) // x gets node keys
	p := c.Pipeline()
	for i := range 2100 {
		p.ZAdd(ctx, "zbig", redis.Z{Score: float64(i % 13), Member: fmt.Sprintf("m%04d", i)})
	}
	for i := range 300 {
		p.HSet(ctx, "hbig", fmt.Sprintf("f%d", i), strings.Repeat("v", i))
		p.LPush(ctx, "list", i)
		p.SAdd(ctx, "set", i)
	}
	for i := range 50 {
		p.XAdd(ctx, &redis.XAddArgs{Stream: "x", Values: []any{"f", i}})
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	mustDo(t, c, "SET", "ttl", "v", "EX", 1000)
	mustDo(t, c, "HSET", "httl", "f", "v")
	mustDo(t, c, "EXPIRE", "httl", 2000)
	mustDo(t, c, "LPOP", "list", 3)
	mustDo(t, c, "XADD", "x", "DELAY", 3600000, "*", "delayed", "1") // its due time in the entry's tail
	mustDo(t, c, "XGROUP", "CREATE", "x", "g1", "0")
	mustDo(t, c, "XGROUP", "CREATE", "x", "g2", "$")
	mustDo(t, c, "XREADGROUP", "GROUP", "g1", "alice", "COUNT", 10, "STREAMS", "x", ">")
	mustDo(t, c, "XREADGROUP", "GROUP", "g1", "bob", "COUNT", 5, "STREAMS", "x", ">")
	rng := mustDo(t, c, "XRANGE", "x", "-", "+", "COUNT", 3).([]any)
	first := rng[0].([]any)[0].(string)
	mustDo(t, c, "XACK", "x", "g1", first)
	third := rng[2].([]any)[0].(string)
	mustDo(t, c, "XNACK", "x", "g1", "SILENT", "IDS", 1, third)
	mustDo(t, c, "XGROUP", "CREATECONSUMER", "x", "g2", "idle")
	mustDo(t, c, "XADD", "x", "IDMP", "p1", "i1", "*", "f", "idmp")
	mustDo(t, c, "XADD", "x", "IDMP", "p2", "i2", "*", "f", "idmp")
	mustDo(t, c, "XDEL", "x", first)
	mustDo(t, c, "XTRIM", "x", "MINID", rng[1].([]any)[0].(string))

	seq, payloads, pages := readSnapshot(t, c, 20, nil)
	t.Logf("%d events in %d pages", len(payloads), pages)
	orig, err := ts.store.PinState()
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	if orig.Seq() != seq {
		t.Fatalf("the state moved: %d, snapshot %d", orig.Seq(), seq)
	}

	st, err := materialize.Open(materialize.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var events []codec.Event
	for _, p := range payloads {
		m, err := feed.Decode(p)
		if err != nil {
			t.Fatal(err)
		}
		e, err := m.Event()
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, e)
	}
	if _, err := st.Write(func(*materialize.View) ([]codec.Event, error) { return events, nil }); err != nil {
		t.Fatal(err)
	}

	dump := func(v *materialize.View, tag codec.Tag) map[string]string {
		out := map[string]string{}
		if err := v.Iterate([]byte{byte(tag)}, []byte{byte(tag) + 1}, false, func(k, val []byte) (bool, error) {
			out[string(k)] = string(val)
			return true, nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	rebuilt := st.View()
	for _, tag := range codec.DataTags {
		a, b := dump(orig.View(), tag), dump(rebuilt, tag)
		if tag == codec.TagZBlock {
			// Derived: built in runs from the score index, where the
			// original split and merged as members came and went.
			if len(a) == 0 || len(b) == 0 {
				t.Fatalf("rank blocks: %d in the original, %d rebuilt", len(a), len(b))
			}
			continue
		}
		if len(a) == 0 {
			t.Fatalf("tag %c: nothing in the original (the test must cover it)", tag)
		}
		for k, v := range a {
			if w, ok := b[k]; !ok || w != v {
				t.Fatalf("tag %c: key %x: original %x, rebuilt %x (present %v)", tag, k, v, w, ok)
			}
		}
		for k := range b {
			if _, ok := a[k]; !ok {
				t.Fatalf("tag %c: key %x rebuilt, not in the original", tag, k)
			}
		}
	}
}

// TestSnapshotSessions: a page asked again with its cursor (a lost reply)
// comes again; a snapshot read to its end frees its place; at most
// snapshotMaxOpen (here 2) are open; an idle one expires; open ones are
// closed at shutdown.
func TestSnapshotSessions(t *testing.T) {
	ts := newTestServer(t)
	ts.snaps.max, ts.snaps.idle = 2, 300*time.Millisecond
	c := ts.client(t)
	for i := range 20 {
		mustDo(t, c, "SET", fmt.Sprintf("k%d", i), i)
	}
	// A retry of the last page, then on.
	_, cur, first := snapshotPage(t, c, "CHANGES", "SNAPSHOT", "COUNT", 2, "MATCH", "k?")
	_, next, p1 := snapshotPage(t, c, "CHANGES", "SNAPSHOT", "CONTINUE", cur, "COUNT", 2)
	_, next2, again := snapshotPage(t, c, "CHANGES", "SNAPSHOT", "CONTINUE", cur, "COUNT", 2)
	if fmt.Sprint(p1) != fmt.Sprint(again) || next2 == next || len(first) != 2 {
		t.Fatalf("a retried page: %q then %q (cursors %s, %s)", p1, again, next, next2)
	}
	// The cursor given before the retry is gone; the retry's goes on.
	mustErr(t, c, string(errNoSnapshot), "CHANGES", "SNAPSHOT", "CONTINUE", next)
	_, end, p3 := snapshotPage(t, c, "CHANGES", "SNAPSHOT", "CONTINUE", next2, "COUNT", 10)
	if end != "0" || len(p3) != 6 {
		t.Fatalf("last page: cursor %s, %d events", end, len(p3))
	}
	if n := ts.snaps.count(); n != 0 {
		t.Fatalf("%d snapshots open after one was read to its end", n)
	}
	mustErr(t, c, string(errNoSnapshot), "CHANGES", "SNAPSHOT", "CONTINUE", next2)

	// A snapshot that ends on its first page keeps no place.
	if _, cur, _ := snapshotPage(t, c, "CHANGES", "SNAPSHOT", "MATCH", "nothing"); cur != "0" || ts.snaps.count() != 0 {
		t.Fatalf("an empty snapshot left cursor %s, %d open", cur, ts.snaps.count())
	}
	// Two open at most.
	_, a, _ := snapshotPage(t, c, "CHANGES", "SNAPSHOT", "COUNT", 1)
	_, b, _ := snapshotPage(t, c, "CHANGES", "SNAPSHOT", "COUNT", 1)
	mustErr(t, c, "ERR too many open snapshots (2): read one to its end, or wait for one to expire (300ms idle)", "CHANGES", "SNAPSHOT", "COUNT", 1)
	// Idle ones expire; a page read keeps one open.
	for range 4 {
		time.Sleep(100 * time.Millisecond)
		_, b, _ = snapshotPage(t, c, "CHANGES", "SNAPSHOT", "CONTINUE", b, "COUNT", 1)
	}
	mustErr(t, c, string(errNoSnapshot), "CHANGES", "SNAPSHOT", "CONTINUE", a)
	if n := ts.snaps.count(); n != 1 {
		t.Fatalf("%d open after one expired, want 1", n)
	}
	// Shutdown with one open: the store closes cleanly.
	if err := ts.Close(); err != nil {
		t.Fatalf("Close with an open snapshot: %v", err)
	}
}

// TestSnapshotErrors: arity and syntax, as CHANGES FROM's; a cursor that
// is not a number, or names no snapshot; not inside MULTI.
func TestSnapshotErrors(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	mustDo(t, c, "SET", "k", "v")
	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"CHANGES"}, "ERR wrong number of arguments for 'changes' command"},
		{[]any{"CHANGES", "SNAPSHOT", "COUNT"}, "ERR syntax error"},
		{[]any{"CHANGES", "SNAPSHOT", "COUNT", "0"}, "ERR value is out of range, value must between 1 and 10000"},
		{[]any{"CHANGES", "SNAPSHOT", "COUNT", "x"}, "ERR value is out of range, value must between 1 and 10000"},
		{[]any{"CHANGES", "SNAPSHOT", "DB", "x"}, "ERR value is not an integer or out of range"},
		{[]any{"CHANGES", "SNAPSHOT", "DB", "16"}, "ERR DB index is out of range"},
		{[]any{"CHANGES", "SNAPSHOT", "DB", "-1"}, "ERR DB index is out of range"},
		{[]any{"CHANGES", "SNAPSHOT", "BOGUS", "1"}, "ERR syntax error"},
		{[]any{"CHANGES", "SNAPSHOT", "CONTINUE"}, "ERR wrong number of arguments for 'changes' command"},
		{[]any{"CHANGES", "SNAPSHOT", "CONTINUE", "x"}, "ERR invalid cursor"},
		{[]any{"CHANGES", "SNAPSHOT", "CONTINUE", "-1"}, "ERR invalid cursor"},
		{[]any{"CHANGES", "SNAPSHOT", "CONTINUE", "0"}, string(errNoSnapshot)},
		{[]any{"CHANGES", "SNAPSHOT", "CONTINUE", "12345"}, string(errNoSnapshot)},
		{[]any{"CHANGES", "SNAPSHOT", "CONTINUE", "12345", "MATCH", "*"}, "ERR syntax error"},
	} {
		mustErr(t, c, tc.want, tc.args...)
	}
	// COUNT above the bound is the bound, as CHANGES FROM's.
	if _, cur, _ := snapshotPage(t, c, "CHANGES", "SNAPSHOT", "COUNT", 1000000); cur != "0" {
		t.Fatal("COUNT 1000000")
	}
	cc := confDial(t, ts.addr)
	cc.do("MULTI")
	if r, _ := cc.do("CHANGES", "SNAPSHOT"); r.kind != confError || r.str != "ERR Command not allowed inside a transaction" {
		t.Fatalf("CHANGES SNAPSHOT inside MULTI: %v", r)
	}
}

// TestSnapshotOverNATS: <prefix>.snapshot pages a snapshot in replies
// within NATS's max_payload (an event too large for one comes truncated),
// with the same events as CHANGES SNAPSHOT; the feed user may ask for one.
func TestSnapshotOverNATS(t *testing.T) {
	addr := freeAddr(t)
	ts := newTestServer(t, func(o *Options) { o.NATSListen = addr; o.NATSFeedPassword = "fp" })
	ctx := context.Background()
	c := ts.client(t)
	p := c.Pipeline()
	for i := range 3000 {
		p.Set(ctx, fmt.Sprintf("key:<%d>&", i), strings.Repeat("v", 500), 0)
		p.HSet(ctx, "h", fmt.Sprintf("f%d", i), strings.Repeat("x", 100))
	}
	p.Set(ctx, "huge", strings.Repeat("h", 2<<20), 0) // above max_payload
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect("nats://"+addr, nats.UserInfo("feed", "fp"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	type reply struct {
		Seq    uint64            `json:"seq"`
		Cursor string            `json:"cursor"`
		Events []json.RawMessage `json:"events"`
		Error  string            `json:"error"`
	}
	request := func(body string) reply {
		msg, err := nc.Request("sediment.snapshot", []byte(body), 10*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if len(msg.Data) > int(nc.MaxPayload()) {
			t.Fatalf("a reply of %d bytes, over max_payload %d", len(msg.Data), nc.MaxPayload())
		}
		var r reply
		if err := json.Unmarshal(msg.Data, &r); err != nil {
			t.Fatalf("%v: %.200s", err, msg.Data)
		}
		return r
	}
	r := request(`{"count":10000}`)
	var events []json.RawMessage
	pages, truncated := 1, 0
	for {
		if r.Error != "" {
			t.Fatal(r.Error)
		}
		events = append(events, r.Events...)
		if r.Cursor == "0" {
			break
		}
		r = request(`{"cursor":"` + r.Cursor + `","count":10000}`)
		pages++
	}
	for _, e := range events {
		if bytes.Contains(e, []byte(`"truncated":true`)) {
			truncated++
		}
	}
	_, resp, _ := readSnapshot(t, c, 10000, nil)
	if len(events) != len(resp) || truncated != 1 || pages < 3 {
		t.Fatalf("NATS: %d events in %d pages (%d truncated); RESP: %d events", len(events), pages, truncated, len(resp))
	}
	for i := range resp {
		a, b := jsonNoMs(t, events[i]), jsonNoMs(t, resp[i])
		if !strings.Contains(a, `"truncated":true`) && a != b {
			t.Fatalf("event %d: NATS %.200s, RESP %.200s", i, events[i], resp[i])
		}
	}
	if !bytes.Contains(events[0], []byte(`"snapshot":true`)) {
		t.Fatalf("not marked: %s", events[0])
	}
	t.Logf("%d events in %d NATS pages", len(events), pages)
	// Errors.
	for body, want := range map[string]string{
		`nope`:                "bad request",
		`{"cursor":"77"}`:     string(errNoSnapshot),
		`{"db":99}`:           "DB index is out of range",
		`{"count":-1}`:        "count must be between 1 and 10000",
		`{"match":"zz*"}`:     "",
		`{"type":"nothing"}`:  "",
		`{"cursor":"x1"}`:     string(errNoSnapshot),
		`{"db":0,"count":10}`: "",
	} {
		r := request(body)
		if !strings.Contains(r.Error, want) || (want == "" && r.Error != "") {
			t.Fatalf("%s: error %q, want %q", body, r.Error, want)
		}
		if want == "" && r.Cursor != "0" {
			// Read it to its end: it would hold a place.
			for r.Cursor != "0" {
				r = request(`{"cursor":"` + r.Cursor + `"}`)
			}
		}
	}
}

// jsonNoMs returns a payload as JSON with its time left out.
func jsonNoMs(t *testing.T, p []byte) string {
	t.Helper()
	m, err := feed.Decode(p)
	if err != nil {
		t.Fatal(err)
	}
	m.Ms = 0
	b, _ := json.Marshal(m)
	return string(b)
}

// freeAddr returns a free 127.0.0.1 TCP address.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
