package broker

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The blocking sorted-set pops (BZPOPMIN, BZPOPMAX, BZMPOP) are checked by
// scenarios that run unchanged against a real redis-server and against
// Sediment (blockingListScenario, which is not list-specific): each asserts
// what Redis 7.0 does. As for lists, Redis serves the clients blocked on a
// key first come first served, right after the command (or the whole EXEC)
// that made the key ready, and a client blocked for a sorted set is served
// only by a sorted set (blocked.c serveClientsBlockedOnSortedSetKey).
//
// The helpers are the list tests' (blocking_list_test.go): clients are
// sequenced by INFO blocked_clients (blBlocked), never by sleeps, and every
// wait for a reply is bounded. Timeouts go on the wire as strings.

// bzWantZRange checks key's members and scores (ZRANGE key 0 -1
// WITHSCORES), given as member, score, member, score, ...
func bzWantZRange(t testing.TB, c *redis.Client, key string, want ...string) {
	t.Helper()
	got := mustDo(t, c, "ZRANGE", key, "0", "-1", "WITHSCORES").([]any)
	wantAny := make([]any, len(want))
	for i, s := range want {
		wantAny[i] = s
	}
	if !reflect.DeepEqual(got, wantAny) {
		t.Fatalf("ZRANGE %q 0 -1 WITHSCORES = %#v, want %#v", key, got, wantAny)
	}
}

// Scenario 1: three clients blocked on one key are served in the order they
// blocked, all by one ZADD of three members, each the lowest (BZPOPMIN) or
// highest (BZPOPMAX) member left when its turn comes.
func TestBlockingZsetFIFO(t *testing.T) {
	blockingListScenario(t, func(t *testing.T, addr string) {
		admin := blClient(t, addr)
		for _, tc := range []struct {
			cmd  string
			want [][]string
		}{
			{"BZPOPMIN", [][]string{{"a", "1"}, {"b", "2"}, {"c", "3"}}},
			{"BZPOPMAX", [][]string{{"c", "3"}, {"b", "2"}, {"a", "1"}}},
		} {
			var chans []<-chan blReply
			for i := range 3 {
				chans = append(chans, blGo(blClient(t, addr), tc.cmd, "k", "0"))
				blBlocked(t, admin, int64(i+1), chans...)
			}
			mustInt(t, admin, 3, "ZADD", "k", "2", "b", "3", "c", "1", "a")
			for i, w := range tc.want {
				blWant(t, chans[i], fmt.Sprint(tc.cmd, " k 0 of client ", i+1), []any{"k", w[0], w[1]})
			}
			mustInt(t, admin, 0, "EXISTS", "k")
			waitBlocked(t, admin, 0)
		}
	})
}

// Scenario 2: BZPOPMIN and BZPOPMAX clients on one key, served in order by a
// ZADD of more members than there are clients; the rest stays.
func TestBlockingZsetMinAndMaxOnOneKey(t *testing.T) {
	blockingListScenario(t, func(t *testing.T, addr string) {
		admin := blClient(t, addr)
		minCh := blGo(blClient(t, addr), "BZPOPMIN", "k", "0")
		blBlocked(t, admin, 1, minCh)
		maxCh := blGo(blClient(t, addr), "BZPOPMAX", "k", "0")
		blBlocked(t, admin, 2, minCh, maxCh)
		mustInt(t, admin, 4, "ZADD", "k", "1", "a", "2", "b", "3", "c", "2.5", "bc")
		blWant(t, minCh, "BZPOPMIN k 0", []any{"k", "a", "1"})
		blWant(t, maxCh, "BZPOPMAX k 0", []any{"k", "c", "3"})
		bzWantZRange(t, admin, "k", "b", "2", "bc", "2.5")
		waitBlocked(t, admin, 0)
	})
}

// Scenario 3: ZADD then ZPOPMIN in one pipeline of another client. The
// blocked client is served right after the ZADD, before the ZPOPMIN runs,
// so the ZPOPMIN finds nothing (then, with two members, only the second).
func TestBlockingZsetPipelinedAddThenPop(t *testing.T) {
	blockingListScenario(t, func(t *testing.T, addr string) {
		admin := blClient(t, addr)
		ctx := context.Background()
		for _, tc := range []struct {
			add     []any
			wantPop []any
		}{
			{[]any{"ZADD", "k", "1", "x"}, []any{}},
			{[]any{"ZADD", "k", "1", "x", "2", "y"}, []any{"y", "2"}},
		} {
			ch := blGo(blClient(t, addr), "BZPOPMIN", "k", "0")
			blBlocked(t, admin, 1, ch)
			var add, pop *redis.Cmd
			_, err := blClient(t, addr).Pipelined(ctx, func(p redis.Pipeliner) error {
				add = p.Do(ctx, tc.add...)
				pop = p.Do(ctx, "ZPOPMIN", "k")
				return nil
			})
			if err != nil {
				t.Fatalf("pipeline: %v", err)
			}
			if v, err := add.Result(); err != nil || v != int64(len(tc.add)/2-1) {
				t.Fatalf("pipelined %q = %#v, %v", tc.add, v, err)
			}
			if v, err := pop.Result(); err != nil || !reflect.DeepEqual(v, tc.wantPop) {
				t.Fatalf("pipelined ZPOPMIN k after %q = %#v, %v; want %#v (the blocked client took x)", tc.add, v, err, tc.wantPop)
			}
			blWant(t, ch, "BZPOPMIN k 0", []any{"k", "x", "1"})
			mustInt(t, admin, 0, "EXISTS", "k")
			waitBlocked(t, admin, 0)
		}
	})
}

// Scenario 4: ZADD then ZPOPMIN in one MULTI/EXEC. Blocked clients are
// served only after the whole EXEC, so the ZPOPMIN inside it takes x and
// the blocked client stays blocked until a later ZADD.
func TestBlockingZsetMultiAddThenPop(t *testing.T) {
	blockingListScenario(t, func(t *testing.T, addr string) {
		admin := blClient(t, addr)
		ch := blGo(blClient(t, addr), "BZPOPMAX", "k", "0")
		blBlocked(t, admin, 1, ch)
		ctx := context.Background()
		var add, pop *redis.Cmd
		_, err := blClient(t, addr).TxPipelined(ctx, func(p redis.Pipeliner) error {
			add = p.Do(ctx, "ZADD", "k", "1", "x")
			pop = p.Do(ctx, "ZPOPMIN", "k")
			return nil
		})
		if err != nil {
			t.Fatalf("MULTI/EXEC: %v", err)
		}
		if v, err := add.Result(); err != nil || v != int64(1) {
			t.Fatalf("ZADD k 1 x in EXEC = %#v, %v; want 1", v, err)
		}
		if v, err := pop.Result(); err != nil || !reflect.DeepEqual(v, []any{"x", "1"}) {
			t.Fatalf("ZPOPMIN k after ZADD k 1 x in one EXEC = %#v, %v; want [x 1]", v, err)
		}
		mustInt(t, admin, 0, "EXISTS", "k")
		blStillBlocked(t, ch, "BZPOPMAX k 0")
		// Had the blocked client been served x, y would stay in the set.
		mustInt(t, admin, 1, "ZADD", "k", "2", "y")
		blWant(t, ch, "BZPOPMAX k 0", []any{"k", "y", "2"})
		mustInt(t, admin, 0, "EXISTS", "k")
	})
}

// Scenario 5: a MULTI that adds and then deletes the key wakes no one: the
// client stays blocked and a later ZADD serves it.
func TestBlockingZsetMultiAddThenDel(t *testing.T) {
	blockingListScenario(t, func(t *testing.T, addr string) {
		admin := blClient(t, addr)
		ch := blGo(blClient(t, addr), "BZPOPMIN", "k", "0")
		blBlocked(t, admin, 1, ch)
		ctx := context.Background()
		var add, del *redis.Cmd
		_, err := blClient(t, addr).TxPipelined(ctx, func(p redis.Pipeliner) error {
			add = p.Do(ctx, "ZADD", "k", "1", "x", "2", "y")
			del = p.Do(ctx, "DEL", "k")
			return nil
		})
		if err != nil {
			t.Fatalf("MULTI/EXEC: %v", err)
		}
		if v, err := add.Result(); err != nil || v != int64(2) {
			t.Fatalf("ZADD k 1 x 2 y in EXEC = %#v, %v; want 2", v, err)
		}
		if v, err := del.Result(); err != nil || v != int64(1) {
			t.Fatalf("DEL k in EXEC = %#v, %v; want 1", v, err)
		}
		mustInt(t, admin, 0, "EXISTS", "k")
		blBlocked(t, admin, 1, ch)
		// The same with the set emptied by ZREM instead of DEL.
		_, err = blClient(t, addr).TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Do(ctx, "ZADD", "k", "1", "x")
			p.Do(ctx, "ZREM", "k", "x")
			return nil
		})
		if err != nil {
			t.Fatalf("MULTI/EXEC: %v", err)
		}
		blBlocked(t, admin, 1, ch)
		mustInt(t, admin, 1, "ZADD", "k", "3", "z")
		blWant(t, ch, "BZPOPMIN k 0", []any{"k", "z", "3"})
		mustInt(t, admin, 0, "EXISTS", "k")
	})
}

// Scenario 6: fractional timeouts end with a nil reply, no earlier than the
// timeout, for every blocking sorted-set pop.
func TestBlockingZsetFractionalTimeout(t *testing.T) {
	blockingListScenario(t, func(t *testing.T, addr string) {
		c := blClient(t, addr)
		admin := blClient(t, addr)
		for _, tc := range []struct {
			args []any
			min  time.Duration
		}{
			{[]any{"BZPOPMIN", "k", "0.2"}, 200 * time.Millisecond},
			{[]any{"BZPOPMAX", "k", "0.05"}, 50 * time.Millisecond},
			{[]any{"BZPOPMIN", "a", "b", "0.05"}, 50 * time.Millisecond},
			{[]any{"BZMPOP", "0.05", "2", "a", "b", "MIN"}, 50 * time.Millisecond},
			{[]any{"BZMPOP", "0.1", "1", "a", "MAX", "COUNT", "3"}, 100 * time.Millisecond},
		} {
			start := time.Now()
			r := blAwait(t, blGo(c, tc.args...))
			elapsed := time.Since(start)
			if r.err != redis.Nil {
				t.Fatalf("%q = %#v, %v; want nil after the timeout", tc.args, r.v, r.err)
			}
			// Redis's clock is in ms: allow 10 ms of rounding below.
			if elapsed < tc.min-10*time.Millisecond {
				t.Errorf("%q answered after %v, before its timeout", tc.args, elapsed)
			}
			if elapsed > 2*time.Second {
				t.Errorf("%q answered only after %v", tc.args, elapsed)
			}
		}
		waitBlocked(t, admin, 0)
		mustInt(t, admin, 0, "EXISTS", "k", "a", "b")
	})
}

// Scenario 7: a client blocked on several keys is served by the one that
// becomes ready (the second here), and is then no longer registered on the
// others.
func TestBlockingZsetMultipleKeys(t *testing.T) {
	blockingListScenario(t, func(t *testing.T, addr string) {
		admin := blClient(t, addr)
		ch := blGo(blClient(t, addr), "BZPOPMIN", "a", "b", "c", "0")
		blBlocked(t, admin, 1, ch)
		mustInt(t, admin, 2, "ZADD", "b", "5", "v", "6", "w")
		blWant(t, ch, "BZPOPMIN a b c 0", []any{"b", "v", "5"})
		bzWantZRange(t, admin, "b", "w", "6")
		waitBlocked(t, admin, 0)
		mustInt(t, admin, 1, "DEL", "b")

		first := blGo(blClient(t, addr), "BZPOPMAX", "a", "b", "0")
		blBlocked(t, admin, 1, first)
		second := blGo(blClient(t, addr), "BZPOPMAX", "a", "0")
		blBlocked(t, admin, 2, first, second)
		mustInt(t, admin, 1, "ZADD", "b", "1", "x")
		blWant(t, first, "BZPOPMAX a b 0", []any{"b", "x", "1"})
		// The first client, served from b, must not also wait on a.
		mustInt(t, admin, 1, "ZADD", "a", "2", "y")
		blWant(t, second, "BZPOPMAX a 0", []any{"a", "y", "2"})
		mustInt(t, admin, 0, "EXISTS", "a", "b")
		waitBlocked(t, admin, 0)

		// BZMPOP takes from the first ready key in its own order, here the
		// second one named.
		mp := blGo(blClient(t, addr), "BZMPOP", "0", "3", "a", "b", "c", "MAX", "COUNT", "2")
		blBlocked(t, admin, 1, mp)
		mustInt(t, admin, 3, "ZADD", "b", "1", "p", "2", "q", "3", "r")
		blWant(t, mp, "BZMPOP 0 3 a b c MAX COUNT 2", []any{"b", []any{[]any{"r", "3"}, []any{"q", "2"}}})
		bzWantZRange(t, admin, "b", "p", "1")
		waitBlocked(t, admin, 0)
	})
}

// Scenario 8: a client that disconnects while blocked consumes nothing.
func TestBlockingZsetDisconnectWhileBlocked(t *testing.T) {
	blockingListScenario(t, func(t *testing.T, addr string) {
		admin := blClient(t, addr)
		for _, cmd := range []string{"BZPOPMIN k 0\r\n", "BZMPOP 0 1 k MAX COUNT 5\r\n"} {
			nc, _ := dialRaw(t, addr)
			rawSend(t, nc, cmd)
			waitBlocked(t, admin, 1)
			nc.Close()
			waitBlocked(t, admin, 0)
			mustInt(t, admin, 2, "ZADD", "k", "1", "v", "2", "w")
			mustInt(t, admin, 2, "ZCARD", "k")
			bzWantZRange(t, admin, "k", "v", "1", "w", "2")
			mustInt(t, admin, 1, "DEL", "k")
		}
	})
}

// Scenario 9: the key changes type while a client waits on it. Redis 7.0
// keeps a BZPOPMIN client blocked while the key is a string or a list (it
// is not a sorted set to pop); once the key is deleted and a sorted set is
// added there, the client is served.
func TestBlockingZsetKeyTypeChanges(t *testing.T) {
	blockingListScenario(t, func(t *testing.T, addr string) {
		admin := blClient(t, addr)
		ch := blGo(blClient(t, addr), "BZPOPMIN", "k", "0")
		blBlocked(t, admin, 1, ch)
		mustStr(t, admin, "OK", "SET", "k", "str")
		blBlocked(t, admin, 1, ch)
		mustInt(t, admin, 1, "DEL", "k")
		mustInt(t, admin, 1, "RPUSH", "k", "elem")
		blBlocked(t, admin, 1, ch)
		mustErr(t, admin, "WRONGTYPE Operation against a key holding the wrong kind of value", "ZADD", "k", "1", "v")
		blBlocked(t, admin, 1, ch)
		mustInt(t, admin, 1, "DEL", "k")
		mustInt(t, admin, 1, "ZADD", "k", "1", "v")
		blWant(t, ch, "BZPOPMIN k 0", []any{"k", "v", "1"})
		mustInt(t, admin, 0, "EXISTS", "k")
		waitBlocked(t, admin, 0)
	})
}

// Scenario 10: a list client (BLPOP) and a sorted-set client (BZPOPMIN)
// blocked on one key: a sorted set serves only the sorted-set client, and
// a list only the list client, whatever the order they blocked in.
func TestBlockingZsetAndListOnOneKey(t *testing.T) {
	blockingListScenario(t, func(t *testing.T, addr string) {
		admin := blClient(t, addr)
		listCh := blGo(blClient(t, addr), "BLPOP", "k", "0")
		blBlocked(t, admin, 1, listCh)
		zCh := blGo(blClient(t, addr), "BZPOPMIN", "k", "0")
		blBlocked(t, admin, 2, listCh, zCh)
		mustInt(t, admin, 1, "ZADD", "k", "1", "m")
		blWant(t, zCh, "BZPOPMIN k 0", []any{"k", "m", "1"})
		blBlocked(t, admin, 1, listCh)
		mustInt(t, admin, 0, "EXISTS", "k")
		mustInt(t, admin, 1, "RPUSH", "k", "e")
		blWant(t, listCh, "BLPOP k 0", []any{"k", "e"})
		mustInt(t, admin, 0, "EXISTS", "k")
		waitBlocked(t, admin, 0)
	})
}

// Scenario 11: every command that creates a sorted set serves a client
// blocked on it, not only ZADD.
func TestBlockingZsetServedByOtherWrites(t *testing.T) {
	blockingListScenario(t, func(t *testing.T, addr string) {
		admin := blClient(t, addr)
		for _, tc := range []struct {
			setup []any // run before the client blocks; nil for none
			write []any
			want  []any
		}{
			{nil, []any{"ZINCRBY", "k", "5", "m"}, []any{"k", "m", "5"}},
			{nil, []any{"ZADD", "k", "INCR", "2.5", "m"}, []any{"k", "m", "2.5"}},
			{nil, []any{"ZADD", "k", "NX", "CH", "3", "m"}, []any{"k", "m", "3"}},
			{[]any{"ZADD", "src", "1", "a", "2", "b"}, []any{"ZUNIONSTORE", "k", "1", "src"}, []any{"k", "a", "1"}},
			{[]any{"ZADD", "src", "1", "a", "2", "b"}, []any{"ZINTERSTORE", "k", "2", "src", "src"}, []any{"k", "a", "2"}},
			{[]any{"ZADD", "src", "1", "a", "2", "b"}, []any{"ZDIFFSTORE", "k", "1", "src"}, []any{"k", "a", "1"}},
			{[]any{"ZADD", "src", "1", "a", "2", "b"}, []any{"ZRANGESTORE", "k", "src", "1", "1"}, []any{"k", "b", "2"}},
			{[]any{"SADD", "set", "a"}, []any{"ZUNIONSTORE", "k", "1", "set"}, []any{"k", "a", "1"}},
			{[]any{"ZADD", "src", "7", "r"}, []any{"RENAME", "src", "k"}, []any{"k", "r", "7"}},
			{[]any{"ZADD", "src", "8", "c"}, []any{"COPY", "src", "k"}, []any{"k", "c", "8"}},
		} {
			mustStr(t, admin, "OK", "FLUSHALL")
			if tc.setup != nil {
				mustDo(t, admin, tc.setup...)
			}
			ch := blGo(blClient(t, addr), "BZPOPMIN", "k", "0")
			blBlocked(t, admin, 1, ch)
			mustDo(t, admin, tc.write...)
			blWant(t, ch, fmt.Sprintf("BZPOPMIN k 0 after %q", tc.write), tc.want)
			waitBlocked(t, admin, 0)
		}
		// Writes that leave the key empty serve no one.
		mustStr(t, admin, "OK", "FLUSHALL")
		ch := blGo(blClient(t, addr), "BZPOPMAX", "k", "0")
		blBlocked(t, admin, 1, ch)
		mustInt(t, admin, 0, "ZADD", "k", "XX", "1", "m")
		mustInt(t, admin, 0, "ZUNIONSTORE", "k", "1", "nokey")
		mustInt(t, admin, 0, "ZRANGESTORE", "k", "nokey", "0", "-1")
		mustInt(t, admin, 0, "ZINTERSTORE", "k", "2", "nokey", "nokey2")
		blBlocked(t, admin, 1, ch)
		mustInt(t, admin, 0, "EXISTS", "k")
		mustInt(t, admin, 1, "ZADD", "k", "9", "last")
		blWant(t, ch, "BZPOPMAX k 0", []any{"k", "last", "9"})
	})
}

// Scenario 12: BZMPOP with COUNT takes up to COUNT members from the end it
// names of the first ready key.
func TestBlockingZsetBZMPOPCount(t *testing.T) {
	blockingListScenario(t, func(t *testing.T, addr string) {
		admin := blClient(t, addr)
		ch := blGo(blClient(t, addr), "BZMPOP", "0", "2", "a", "b", "MIN", "COUNT", "2")
		blBlocked(t, admin, 1, ch)
		mustInt(t, admin, 3, "ZADD", "b", "1", "x", "2", "y", "3", "z")
		blWant(t, ch, "BZMPOP 0 2 a b MIN COUNT 2", []any{"b", []any{[]any{"x", "1"}, []any{"y", "2"}}})
		bzWantZRange(t, admin, "b", "z", "3")
		waitBlocked(t, admin, 0)

		// Without COUNT, one member.
		ch = blGo(blClient(t, addr), "BZMPOP", "0", "1", "c", "MAX")
		blBlocked(t, admin, 1, ch)
		mustInt(t, admin, 2, "ZADD", "c", "1", "x", "2", "y")
		blWant(t, ch, "BZMPOP 0 1 c MAX", []any{"c", []any{[]any{"y", "2"}}})
		bzWantZRange(t, admin, "c", "x", "1")

		// COUNT larger than the set takes it all.
		ch = blGo(blClient(t, addr), "BZMPOP", "0", "1", "d", "MAX", "COUNT", "10")
		blBlocked(t, admin, 1, ch)
		mustInt(t, admin, 2, "ZADD", "d", "1.5", "x", "-2", "y")
		blWant(t, ch, "BZMPOP 0 1 d MAX COUNT 10", []any{"d", []any{[]any{"x", "1.5"}, []any{"y", "-2"}}})
		mustInt(t, admin, 0, "EXISTS", "d")

		// Two BZMPOP clients share one ZADD in the order they blocked.
		first := blGo(blClient(t, addr), "BZMPOP", "0", "1", "e", "MIN", "COUNT", "2")
		blBlocked(t, admin, 1, first)
		second := blGo(blClient(t, addr), "BZMPOP", "0", "1", "e", "MIN", "COUNT", "2")
		blBlocked(t, admin, 2, first, second)
		mustInt(t, admin, 3, "ZADD", "e", "1", "p", "2", "q", "3", "r")
		blWant(t, first, "first BZMPOP 0 1 e MIN COUNT 2", []any{"e", []any{[]any{"p", "1"}, []any{"q", "2"}}})
		blWant(t, second, "second BZMPOP 0 1 e MIN COUNT 2", []any{"e", []any{[]any{"r", "3"}}})
		mustInt(t, admin, 0, "EXISTS", "e")
		waitBlocked(t, admin, 0)
	})
}

// Scenario 13: CLIENT UNBLOCK ends a sorted-set wait with a nil reply
// (TIMEOUT) or an error (ERROR); the unblocked client no longer waits.
func TestBlockingZsetClientUnblock(t *testing.T) {
	blockingListScenario(t, func(t *testing.T, addr string) {
		admin := blClient(t, addr)
		for _, how := range []string{"TIMEOUT", "ERROR"} {
			for _, args := range [][]any{{"BZPOPMIN", "k", "0"}, {"BZMPOP", "0", "1", "k", "MIN"}} {
				c := blClient(t, addr)
				id := mustDo(t, c, "CLIENT", "ID").(int64)
				ch := blGo(c, args...)
				blBlocked(t, admin, 1, ch)
				mustInt(t, admin, 1, "CLIENT", "UNBLOCK", id, how)
				what := fmt.Sprintf("%q after CLIENT UNBLOCK %s", args, how)
				if how == "TIMEOUT" {
					blWantErr(t, ch, what, redis.Nil.Error())
				} else {
					blWantErr(t, ch, what, "UNBLOCKED client unblocked via CLIENT UNBLOCK")
				}
				waitBlocked(t, admin, 0)
			}
		}
		mustInt(t, admin, 1, "ZADD", "k", "1", "v")
		bzWantZRange(t, admin, "k", "v", "1")
	})
}

// Scenario 14: a wait is per database: a ZADD to the same key name in
// another database serves no one.
func TestBlockingZsetOtherDatabase(t *testing.T) {
	blockingListScenario(t, func(t *testing.T, addr string) {
		admin := blClient(t, addr)
		waiter := blClient(t, addr)
		mustStr(t, waiter, "OK", "SELECT", "1")
		ch := blGo(waiter, "BZPOPMIN", "k", "0")
		blBlocked(t, admin, 1, ch)
		mustInt(t, admin, 1, "ZADD", "k", "1", "db0")
		blBlocked(t, admin, 1, ch)
		bzWantZRange(t, admin, "k", "db0", "1")
		other := blClient(t, addr)
		mustStr(t, other, "OK", "SELECT", "1")
		mustInt(t, other, 1, "ZADD", "k", "2", "db1")
		blWant(t, ch, "BZPOPMIN k 0 in db 1", []any{"k", "db1", "2"})
		mustInt(t, other, 0, "EXISTS", "k")
		bzWantZRange(t, admin, "k", "db0", "1")
	})
}

// Scenario 15: a negative or unparsable timeout is refused before anything
// blocks.
func TestBlockingZsetBadTimeout(t *testing.T) {
	blockingListScenario(t, func(t *testing.T, addr string) {
		c := blClient(t, addr)
		for _, tc := range []struct {
			args []any
			want string
		}{
			{[]any{"BZPOPMIN", "k", "-1"}, "ERR timeout is negative"},
			{[]any{"BZPOPMAX", "k", "-0.5"}, "ERR timeout is negative"},
			{[]any{"BZMPOP", "-1", "1", "k", "MIN"}, "ERR timeout is negative"},
			{[]any{"BZPOPMIN", "k", "x"}, "ERR timeout is not a float or out of range"},
			{[]any{"BZMPOP", "x", "1", "k", "MIN"}, "ERR timeout is not a float or out of range"},
			{[]any{"BZMPOP", "0", "0", "k", "MIN"}, "ERR numkeys should be greater than 0"},
			{[]any{"BZMPOP", "0", "1", "k", "MIN", "COUNT", "0"}, "ERR count should be greater than 0"},
		} {
			mustErr(t, c, tc.want, tc.args...)
		}
		if n := blockedClients(t, c); n != 0 {
			t.Fatalf("blocked_clients after refused waits = %d", n)
		}
	})
}
