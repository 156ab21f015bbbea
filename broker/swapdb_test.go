package broker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// swapTarget is one server the SWAPDB scenarios run on: Sediment, and
// redis-server as the reference.
type swapTarget struct {
	name   string
	client func(t *testing.T, db int) *redis.Client
}

func swapTargets(t *testing.T) []swapTarget {
	redisAddr := confStartRedis(t)
	ts := newTestServer(t)
	dial := func(addr string) func(t *testing.T, db int) *redis.Client {
		return func(t *testing.T, db int) *redis.Client {
			c := redis.NewClient(&redis.Options{Addr: addr, DB: db, Protocol: 2, DisableIdentity: true, MaxRetries: -1, ReadTimeout: 10 * time.Second})
			t.Cleanup(func() { c.Close() })
			return c
		}
	}
	return []swapTarget{{"redis", dial(redisAddr)}, {"sediment", dial(ts.addr)}}
}

// TestSwapDBWatch: SWAPDB touches the keys watched in either db that exist
// in either (Redis's touchAllWatchedKeysInDb); EXEC aborts exactly when
// redis-server's does.
func TestSwapDBWatch(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name     string
		in0, in1 bool // the watched key exists in db 0, in db 1
		watchDB  int
	}{
		{"in watched db", true, false, 0},
		{"in other db", false, true, 0},
		{"in both", true, true, 0},
		{"in neither", false, false, 0},
		{"watch db1, in db0", true, false, 1},
		{"watch db1, in neither", false, false, 1},
	}
	for _, tg := range swapTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			c0, c1 := tg.client(t, 0), tg.client(t, 1)
			for _, tc := range cases {
				mustDo(t, c0, "FLUSHALL")
				if tc.in0 {
					mustDo(t, c0, "SET", "k", "0")
				}
				if tc.in1 {
					mustDo(t, c1, "SET", "k", "1")
				}
				mustDo(t, c0, "SET", "other", "x")
				watcher := tg.client(t, tc.watchDB)
				err := watcher.Watch(ctx, func(tx *redis.Tx) error {
					mustDo(t, c0, "SWAPDB", "0", "1")
					_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
						p.Set(ctx, "done", "1", 0)
						return nil
					})
					return err
				}, "k")
				aborted := errors.Is(err, redis.TxFailedErr)
				if err != nil && !aborted {
					t.Fatalf("%s: EXEC: %v", tc.name, err)
				}
				// Redis aborts when the key exists in either db.
				if want := tc.in0 || tc.in1; aborted != want {
					t.Errorf("%s: EXEC aborted %v, want %v", tc.name, aborted, want)
				}
			}
		})
	}
}

// TestSwapDBServesBlocked: a client blocked on a key of db 0 is served when
// SWAPDB brings in a db whose key has what it waits for, as Redis's SWAPDB
// signals the keys of both dbs; one whose new key has nothing stays
// blocked.
func TestSwapDBServesBlocked(t *testing.T) {
	for _, tg := range swapTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			c0, c1 := tg.client(t, 0), tg.client(t, 1)
			mustDo(t, c0, "FLUSHALL")
			// db 0: s has a group and nothing new; db 1: s has two entries
			// the group has not read.
			mustDo(t, c0, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
			mustDo(t, c1, "XADD", "s", "5-1", "f", "v")
			mustDo(t, c1, "XGROUP", "CREATE", "s", "g", "0")
			mustDo(t, c1, "XADD", "s", "5-2", "f", "v")
			group := goRead(xreadGroupBlock(tg.client(t, 0), "g", "c", 5*time.Second, "s", ">"))
			plain := goRead(xreadBlock(tg.client(t, 0), 5*time.Second, "s", "$"))
			idle := goRead(xreadBlock(tg.client(t, 0), 300*time.Millisecond, "nothing", "$"))
			waitBlocked(t, c0, 3)
			mustDo(t, c0, "SWAPDB", "1", "0")
			r := awaitRead(t, group)
			if r.err != nil || len(r.res) != 1 || fmt.Sprint(ids(r.res[0].Messages)) != "[5-1 5-2]" {
				t.Errorf("XREADGROUP after SWAPDB: %v %v", r.res, r.err)
			}
			r = awaitRead(t, plain)
			if r.err != nil || len(r.res) != 1 || fmt.Sprint(ids(r.res[0].Messages)) != "[5-1 5-2]" {
				t.Errorf("XREAD after SWAPDB: %v %v", r.res, r.err)
			}
			if r := awaitRead(t, idle); !errors.Is(r.err, redis.Nil) {
				t.Errorf("XREAD of a key no db holds: %v %v, want a timeout", r.res, r.err)
			}
			// The group's deliveries were recorded in the db the client
			// now reads, the former db 1.
			if n := mustDo(t, c0, "XPENDING", "s", "g").([]any)[0]; n != int64(2) {
				t.Errorf("pending after the served read: %v", n)
			}
		})
	}
}

func ids(msgs []redis.XMessage) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.ID
	}
	return out
}

// TestSwapDBRestart: the db map is stored with the data: after a restart
// each db still reads what SWAPDB gave it, and new writes go there.
func TestSwapDBRestart(t *testing.T) {
	dir := t.TempDir()
	ts := startTestServer(t, dir)
	c0, c3 := ts.client(t), clientDB(t, ts, 3)
	mustStr(t, c0, "OK", "SET", "a", "zero")
	mustStr(t, c3, "OK", "SET", "a", "three")
	mustInt(t, c3, 1, "HSET", "h", "f", "v")
	mustStr(t, c0, "OK", "SWAPDB", "0", "3")
	mustStr(t, c0, "OK", "SWAPDB", "3", "5") // db 5 now holds what db 0 held
	if err := ts.Close(); err != nil {
		t.Fatal(err)
	}
	ts2 := startTestServer(t, dir)
	c0, c3, c5 := ts2.client(t), clientDB(t, ts2, 3), clientDB(t, ts2, 5)
	mustStr(t, c0, "three", "GET", "a")
	mustStr(t, c0, "v", "HGET", "h", "f")
	mustStr(t, c5, "zero", "GET", "a")
	mustInt(t, c3, 0, "DBSIZE")
	mustInt(t, c0, 2, "DBSIZE")
	mustStr(t, c3, "OK", "SET", "new", "1")
	mustStr(t, c0, "OK", "SWAPDB", "0", "3")
	mustStr(t, c0, "1", "GET", "new")
	mustStr(t, c3, "three", "GET", "a")
	info := mustDo(t, c0, "INFO", "keyspace").(string)
	for _, want := range []string{"\r\ndb0:keys=1,", "\r\ndb3:keys=2,", "\r\ndb5:keys=1,"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO keyspace %q lacks %q", info, want)
		}
	}
}
