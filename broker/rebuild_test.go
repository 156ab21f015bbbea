package broker

import (
	"context"
	"fmt"
	"math/rand"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
)

// esWorkload is one client of the event-sourcing test: random commands
// over every type, consumer groups, TTLs (short ones that expire during the
// run, long ones that do not), RENAME/COPY/MOVE, FLUSHDB, SWAPDB and
// transactions, on a small set of keys so that commands meet each other's
// keys (WRONGTYPE and other errors are part of the workload).
func esWorkload(ctx context.Context, c *redis.Client, seed int64, n int) {
	r := rand.New(rand.NewSource(seed))
	key := func(kind string) string { return kind + strconv.Itoa(r.Intn(6)) }
	val := func() string { return strconv.Itoa(r.Intn(1000)) }
	stream := func() string { return "x" + strconv.Itoa(r.Intn(3)) }
	for i := 0; i < n && ctx.Err() == nil; i++ {
		switch r.Intn(34) {
		case 0:
			c.Set(ctx, key("s"), val(), 0)
		case 1:
			c.Set(ctx, key("s"), val(), time.Duration(1+r.Intn(40))*time.Millisecond)
		case 2: // values past codec.SplitValueMin travel beside their metadata
			c.Set(ctx, key("s"), strings.Repeat(val(), 50+r.Intn(200)), time.Hour)
		case 3:
			c.Incr(ctx, key("n"))
		case 4:
			c.Append(ctx, key("s"), val())
		case 5:
			c.Del(ctx, key("s"), key("h"), key("l"))
		case 6:
			c.PExpire(ctx, key("h"), time.Duration(1+r.Intn(40))*time.Millisecond)
		case 7:
			c.Expire(ctx, key("z"), time.Hour)
		case 8:
			c.Persist(ctx, key("z"))
		case 9:
			c.HSet(ctx, key("h"), "f"+val(), val(), "g", val())
		case 10:
			c.HDel(ctx, key("h"), "g", "f1")
		case 11:
			c.HIncrBy(ctx, key("h"), "cnt", 3)
		case 12:
			c.SAdd(ctx, key("t"), val(), val(), val())
		case 13:
			c.SRem(ctx, key("t"), val())
		case 14:
			c.SPop(ctx, key("t"))
		case 15:
			c.ZAdd(ctx, key("z"), redis.Z{Score: float64(r.Intn(50)), Member: val()}, redis.Z{Score: r.Float64(), Member: "m"})
		case 16:
			c.ZRem(ctx, key("z"), "m")
		case 17:
			c.ZPopMin(ctx, key("z"), 2)
		case 18:
			c.LPush(ctx, key("l"), val(), val())
			c.RPush(ctx, key("l"), val())
		case 19:
			c.LPop(ctx, key("l"))
			c.LInsertBefore(ctx, key("l"), "5", val())
		case 20:
			c.LRem(ctx, key("l"), 1, "7")
			c.LTrim(ctx, key("l"), 0, 20)
		case 21, 22, 23:
			args := &redis.XAddArgs{Stream: stream(), Values: []any{"f", val(), "g", val()}}
			if r.Intn(4) == 0 {
				args.MaxLen, args.Approx = 20, r.Intn(2) == 0
			}
			c.XAdd(ctx, args)
		case 24:
			c.XGroupCreateMkStream(ctx, stream(), "g"+strconv.Itoa(r.Intn(2)), "0")
		case 25, 26:
			res, err := c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g" + strconv.Itoa(r.Intn(2)),
				Consumer: "c" + strconv.Itoa(r.Intn(3)), Streams: []string{stream(), ">"}, Count: int64(1 + r.Intn(4)), Block: -1}).Result()
			if err == nil && len(res) > 0 && len(res[0].Messages) > 0 && r.Intn(2) == 0 {
				c.XAck(ctx, res[0].Stream, "g0", res[0].Messages[0].ID)
				c.XAck(ctx, res[0].Stream, "g1", res[0].Messages[0].ID)
			}
		case 27:
			c.XAutoClaim(ctx, &redis.XAutoClaimArgs{Stream: stream(), Group: "g0", Consumer: "c9", Start: "0", Count: 3})
		case 28:
			c.XTrimMaxLen(ctx, stream(), int64(r.Intn(30)))
		case 29:
			if ids, err := c.XRangeN(ctx, stream(), "-", "+", 3).Result(); err == nil && len(ids) > 0 {
				c.XDel(ctx, stream(), ids[r.Intn(len(ids))].ID)
			}
		case 30:
			switch r.Intn(4) {
			case 0:
				c.Rename(ctx, key("h"), key("h"))
			case 1:
				c.Copy(ctx, key("z"), key("z"), 0, true)
			case 2:
				c.Copy(ctx, stream(), stream(), 0, true) // with its node keys
			default:
				c.Move(ctx, key("t"), 1)
			}
		case 31:
			c.XGroupCreateConsumer(ctx, stream(), "g0", "c"+strconv.Itoa(r.Intn(5)))
			c.XGroupDelConsumer(ctx, stream(), "g1", "c"+strconv.Itoa(r.Intn(5)))
		case 32:
			c.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.HSet(ctx, key("h"), "tx", val())
				p.SAdd(ctx, key("t"), "tx")
				p.XAdd(ctx, &redis.XAddArgs{Stream: stream(), Values: []any{"tx", val()}})
				p.Incr(ctx, key("n"))
				return nil
			})
		case 33:
			if r.Intn(40) == 0 {
				c.Do(ctx, "FLUSHDB")
			} else if r.Intn(4) == 0 {
				c.Do(ctx, "SWAPDB", 0, 1)
			}
		}
	}
}

// dbClient returns a client of ts's db, closed at the end of the test.
func dbClient(t *testing.T, ts *testServer, db int) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: ts.addr, DB: db, Protocol: 2, DisableIdentity: true, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return c
}

// sameStores fails unless a and b hold the same Pebble keys and values
// (materialize.CompareStores), naming the first that differ.
func sameStores(t *testing.T, a, b *materialize.Store) {
	t.Helper()
	diffs, n, err := materialize.CompareStores(a, b, 5)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range diffs {
		t.Error(d)
	}
	if n > 0 {
		t.Fatalf("%d Pebble keys differ between the live and the rebuilt store", n)
	}
}

// dumpStore returns every key and value of a store.
func dumpStore(t *testing.T, s *materialize.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	if err := s.View().Iterate(nil, nil, false, func(k, v []byte) (bool, error) {
		out[string(k)] = string(v)
		return true, nil
	}); err != nil {
		t.Fatalf("Iterate: %v", err)
	}
	return out
}

// quiesce waits until the store has committed nothing for a while and no
// key with a short TTL is left to expire, touching every key of each db so
// that lazy expiry removes the ones whose TTL passed. It returns the last
// record.
func quiesce(t *testing.T, ts *testServer) uint64 {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(20 * time.Second)
	for {
		last := ts.store.LastSeq()
		short := 0
		for db := range 2 {
			c := dbClient(t, ts, db)
			keys, err := c.Keys(ctx, "*").Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				if ttl := c.PTTL(ctx, k).Val(); ttl > 0 && ttl < time.Minute {
					short++
				}
			}
		}
		time.Sleep(300 * time.Millisecond)
		if short == 0 && ts.store.LastSeq() == last {
			return last
		}
		if time.Now().After(deadline) {
			t.Fatalf("the store does not settle: %d short TTLs left, record %d", short, ts.store.LastSeq())
		}
	}
}

// TestRebuildEqualsLiveStore is the event-sourcing test: 4 clients run a
// random workload over every type, consumer groups, expiry, FLUSHDB and
// SWAPDB while a snapshot is taken; then the snapshot plus the change log
// after it, rebuilt into an empty directory (materialize.Rebuild, the
// path of `sediment replay`), hold the live store's every Pebble key and
// value, byte for byte, and a server on the rebuilt directory replies
// XINFO STREAM FULL, XPENDING and each key's value as the live one does.
func TestRebuildEqualsLiveStore(t *testing.T) {
	ts := newTestServer(t, func(o *Options) { o.Retention = 200 })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Small nodes: streams get node keys, written, trimmed and dropped.
	mustDo(t, ts.client(t), "CONFIG", "SET", "stream-node-max-entries", 3)
	var wg sync.WaitGroup
	run := func(round int) {
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := ts.client(t)
				esWorkload(ctx, c, int64(100*round+w), 400)
			}()
		}
	}
	run(0)
	wg.Wait()
	run(1)
	time.Sleep(20 * time.Millisecond)
	snap, err := ts.store.TakeSnapshot() // while the clients write
	if err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	run(2)
	wg.Wait()
	last := quiesce(t, ts)
	if last <= snap.Seq+200 {
		t.Fatalf("only %d records after the snapshot at %d: the retention of 200 would not have been tested", last-snap.Seq, snap.Seq)
	}

	to := filepath.Join(t.TempDir(), "rebuilt")
	info, err := materialize.Rebuild(snap.Path, ts.dir, to, materialize.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Last != last {
		t.Fatalf("rebuilt up to record %d, the live store is at %d", info.Last, last)
	}
	rs, err := materialize.Open(materialize.Options{Dir: to})
	if err != nil {
		t.Fatal(err)
	}
	sameStores(t, ts.store, rs)
	if ts.store.LastSeq() != last {
		t.Fatal("the live store changed while it was compared")
	}
	if err := rs.Close(); err != nil {
		t.Fatal(err)
	}
	dump := dumpStore(t, ts.store)
	if len(dump) < 100 {
		t.Fatalf("only %d Pebble keys compared", len(dump))
	}
	nodeKeys := 0
	for k := range dump {
		if k[0] == byte(codec.TagStreamNode) {
			nodeKeys++
		}
	}
	if nodeKeys == 0 {
		t.Fatalf("no stream node keys compared")
	}
	if rep, err := ts.store.Check(0); err != nil || rep.NumViolations > 0 {
		t.Fatalf("sediment check of the live store: %v, %v", err, rep.Violations)
	}

	// The same through RESP: every key's value, and each stream's groups,
	// consumers and PEL.
	rts := startTestServer(t, to)
	streams := 0
	for db := range 2 {
		c, rc := dbClient(t, ts, db), dbClient(t, rts, db)
		keys := c.Keys(ctx, "*").Val()
		slices.Sort(keys)
		got := rc.Keys(ctx, "*").Val()
		slices.Sort(got)
		if !slices.Equal(got, keys) {
			t.Fatalf("db %d keys: live %q, rebuilt %q", db, keys, got)
		}
		for _, k := range keys {
			a, b := esDescribe(ctx, c, k), esDescribe(ctx, rc, k)
			if a != b {
				t.Errorf("db %d key %q:\nlive    %s\nrebuilt %s", db, k, a, b)
			}
			if c.Type(ctx, k).Val() == "stream" {
				streams++
			}
		}
	}
	if streams == 0 {
		t.Fatal("no stream left to compare")
	}
	t.Logf("snapshot at record %d, %d records applied after it, %d streams compared", snap.Seq, info.Applied, streams)
}

// esDescribe renders a key's type, TTL presence and value; for a stream,
// XINFO STREAM FULL and the extended XPENDING of each group (without idle
// times, which depend on when they are asked).
func esDescribe(ctx context.Context, c *redis.Client, k string) string {
	typ := c.Type(ctx, k).Val()
	out := typ + fmt.Sprintf(" ttl>0:%v ", c.PTTL(ctx, k).Val() > 0)
	switch typ {
	case "string":
		out += c.Get(ctx, k).Val()
	case "hash":
		out += fmt.Sprint(c.HGetAll(ctx, k).Val())
	case "set":
		m := c.SMembers(ctx, k).Val()
		slices.Sort(m)
		out += fmt.Sprint(m)
	case "zset":
		out += fmt.Sprint(c.ZRangeWithScores(ctx, k, 0, -1).Val())
	case "list":
		out += fmt.Sprint(c.LRange(ctx, k, 0, -1).Val())
	case "stream":
		out += fmt.Sprint(c.Do(ctx, "XINFO", "STREAM", k, "FULL").Val())
		for _, g := range c.XInfoGroups(ctx, k).Val() {
			for _, p := range c.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: k, Group: g.Name, Start: "-", End: "+", Count: 1000}).Val() {
				out += fmt.Sprintf(" %s:%s/%s/%d", g.Name, p.ID, p.Consumer, p.RetryCount)
			}
		}
	}
	return out
}
