package broker

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sediment-dev/sediment/internal/redistest"
)

// The blocking list pops (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP) are
// checked by scenarios that run unchanged against a real redis-server and
// against Sediment: each asserts what Redis 7.0 does. Redis serves the
// clients blocked on a key first come first served, right after the command
// (or the whole EXEC) that made the key ready, before any later command of
// any client is decided (blocked.c handleClientsBlockedOnKeys).
//
// Clients are sequenced by INFO blocked_clients (blBlocked), never by
// sleeps, and every wait for a reply is bounded so that a hang fails.
// Timeouts go on the wire as strings: go-redis's typed BLPop rounds a
// duration under a second up to 1 s.

// blockingListScenario runs scenario as the subtests "redis" and
// "sediment", each against a server of its own (blocked_clients is global
// to a server).
func blockingListScenario(t *testing.T, scenario func(t *testing.T, addr string)) {
	t.Parallel()
	t.Run("redis", func(t *testing.T) {
		t.Parallel()
		scenario(t, redistest.Start(t))
	})
	t.Run("sediment", func(t *testing.T) {
		t.Parallel()
		scenario(t, newTestServer(t).addr)
	})
}

// blClient returns a client of addr with one connection, so that every
// command runs on the same connection (CLIENT ID names the one that
// blocks), closed at the end of the test.
func blClient(t testing.TB, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1,
		ReadTimeout: 10 * time.Second, PoolSize: 1})
	t.Cleanup(func() { c.Close() })
	return c
}

// blReply is the outcome of one command: the reply, or the error
// (redis.Nil for a nil reply).
type blReply struct {
	v   any
	err error
}

// blGo runs a (blocking) command in a goroutine and returns where its
// outcome arrives.
func blGo(c *redis.Client, args ...any) <-chan blReply {
	ch := make(chan blReply, 1)
	go func() {
		v, err := c.Do(context.Background(), args...).Result()
		ch <- blReply{v, err}
	}()
	return ch
}

// blAwait waits up to 5 s for the outcome on ch.
func blAwait(t testing.TB, ch <-chan blReply) blReply {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("blocked command not answered within 5s")
	}
	return blReply{}
}

// blWant waits for the outcome on ch and checks that it is the reply want.
func blWant(t testing.TB, ch <-chan blReply, what string, want any) {
	t.Helper()
	r := blAwait(t, ch)
	if r.err != nil || !reflect.DeepEqual(r.v, want) {
		t.Fatalf("%s = %#v, %v; want %#v", what, r.v, r.err, want)
	}
}

// blWantErr waits for the outcome on ch and checks that it is the error
// want (redis.Nil.Error() for a nil reply).
func blWantErr(t testing.TB, ch <-chan blReply, what string, want string) {
	t.Helper()
	r := blAwait(t, ch)
	if r.err == nil || r.err.Error() != want {
		t.Fatalf("%s = %#v, %v; want error %q", what, r.v, r.err, want)
	}
}

// blBlocked waits up to 5 s until INFO blocked_clients is n, like
// waitBlocked, but fails at once with the reply when one of pending (the
// commands that should be blocked) has answered instead.
func blBlocked(t testing.TB, admin *redis.Client, n int64, pending ...<-chan blReply) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		for i, ch := range pending {
			select {
			case r := <-ch:
				t.Fatalf("command %d of %d answered instead of blocking: %#v, %v", i+1, len(pending), r.v, r.err)
			default:
			}
		}
		got := blockedClients(t, admin)
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("blocked_clients = %d, want %d", got, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// blStillBlocked checks that ch has no outcome yet.
func blStillBlocked(t testing.TB, ch <-chan blReply, what string) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("%s answered while it should block: %#v, %v", what, r.v, r.err)
	default:
	}
}

// blWantList checks key's contents.
func blWantList(t testing.TB, c *redis.Client, key string, want ...string) {
	t.Helper()
	got := mustDo(t, c, "LRANGE", key, "0", "-1").([]any)
	wantAny := make([]any, len(want))
	for i, s := range want {
		wantAny[i] = s
	}
	if !reflect.DeepEqual(got, wantAny) {
		t.Fatalf("LRANGE %q = %#v, want %#v", key, got, wantAny)
	}
}

// Scenario 1: three clients blocked on one key are served in the order they
// blocked, all by one RPUSH of three elements.
func TestBlockingListFIFO(t *testing.T) {
	blockingListScenario(t, func(t *testing.T, addr string) {
		admin := blClient(t, addr)
		var chans []<-chan blReply
		for i := range 3 {
			chans = append(chans, blGo(blClient(t, addr), "BLPOP", "k", "0"))
			blBlocked(t, admin, int64(i+1), chans...)
		}
		mustInt(t, admin, 3, "RPUSH", "k", "a", "b", "c")
		for i, want := range []string{"a", "b", "c"} {
			blWant(t, chans[i], fmt.Sprint("BLPOP k 0 of client ", i+1), []any{"k", want})
		}
		mustInt(t, admin, 0, "EXISTS", "k")
		waitBlocked(t, admin, 0)
	})
}

// Scenario 2: LPUSH then RPOP in one pipeline. The blocked client is served
// right after the LPUSH, before the RPOP runs, so the RPOP finds nothing.
func TestBlockingListPipelinedPushThenPop(t *testing.T) {
	blockingListScenario(t, func(t *testing.T, addr string) {
		admin := blClient(t, addr)
		ch := blGo(blClient(t, addr), "BLPOP", "k", "0")
		blBlocked(t, admin, 1, ch)
		ctx := context.Background()
		var push, pop *redis.Cmd
		_, err := blClient(t, addr).Pipelined(ctx, func(p redis.Pipeliner) error {
			push = p.Do(ctx, "LPUSH", "k", "x")
			pop = p.Do(ctx, "RPOP", "k")
			return nil
		})
		if err != nil && err != redis.Nil {
			t.Fatalf("pipeline: %v", err)
		}
		if v, err := push.Result(); err != nil || v != int64(1) {
			t.Fatalf("pipelined LPUSH k x = %#v, %v; want 1", v, err)
		}
		if v, err := pop.Result(); err != redis.Nil {
			t.Fatalf("pipelined RPOP k after LPUSH k x = %#v, %v; want nil (the blocked client took x)", v, err)
		}
		blWant(t, ch, "BLPOP k 0", []any{"k", "x"})
		mustInt(t, admin, 0, "EXISTS", "k")
	})
}

// Scenario 3: LPUSH then RPOP in one MULTI/EXEC. Blocked clients are served
// only after the whole EXEC, so the RPOP inside it takes x and the blocked
// client stays blocked until a later push.
func TestBlockingListMultiPushThenPop(t *testing.T) {
	blockingListScenario(t, func(t *testing.T, addr string) {
		admin := blClient(t, addr)
		ch := blGo(blClient(t, addr), "BLPOP", "k", "0")
		blBlocked(t, admin, 1, ch)
		ctx := context.Background()
		var push, pop *redis.Cmd
		_, err := blClient(t, addr).TxPipelined(ctx, func(p redis.Pipeliner) error {
			push = p.Do(ctx, "LPUSH", "k", "x")
			pop = p.Do(ctx, "RPOP", "k")
			return nil
		})
		if err != nil {
			t.Fatalf("MULTI/EXEC: %v", err)
		}
		if v, err := push.Result(); err != nil || v != int64(1) {
			t.Fatalf("LPUSH k x in EXEC = %#v, %v; want 1", v, err)
		}
		if v, err := pop.Result(); err != nil || v != "x" {
			t.Fatalf("RPOP k after LPUSH k x in one EXEC = %#v, %v; want \"x\"", v, err)
		}
		mustInt(t, admin, 0, "EXISTS", "k")
		blStillBlocked(t, ch, "BLPOP k 0")
		// Had the blocked client been served x, y would stay in the list.
		mustInt(t, admin, 1, "RPUSH", "k", "y")
		blWant(t, ch, "BLPOP k 0", []any{"k", "y"})
		mustInt(t, admin, 0, "EXISTS", "k")
	})
}

// Scenario 4: a MULTI that pushes and then deletes the key leaves nothing to
// serve; the client stays blocked and a later push serves it.
func TestBlockingListMultiPushThenDel(t *testing.T) {
	blockingListScenario(t, func(t *testing.T, addr string) {
		admin := blClient(t, addr)
		ch := blGo(blClient(t, addr), "BLPOP", "k", "0")
		blBlocked(t, admin, 1, ch)
		ctx := context.Background()
		var push, del *redis.Cmd
		_, err := blClient(t, addr).TxPipelined(ctx, func(p redis.Pipeliner) error {
			push = p.Do(ctx, "LPUSH", "k", "x")
			del = p.Do(ctx, "DEL", "k")
			return nil
		})
		if err != nil {
			t.Fatalf("MULTI/EXEC: %v", err)
		}
		if v, err := push.Result(); err != nil || v != int64(1) {
			t.Fatalf("LPUSH k x in EXEC = %#v, %v; want 1", v, err)
		}
		if v, err := del.Result(); err != nil || v != int64(1) {
			t.Fatalf("DEL k in EXEC = %#v, %v; want 1", v, err)
		}
		mustInt(t, admin, 0, "EXISTS", "k")
		blBlocked(t, admin, 1, ch)
		mustInt(t, admin, 1, "RPUSH", "k", "y")
		blWant(t, ch, "BLPOP k 0", []any{"k", "y"})
		mustInt(t, admin, 0, "EXISTS", "k")
	})
}

// Scenario 5: fractional timeouts end with a nil reply, no earlier than the
// timeout, for every blocking pop.
func TestBlockingListFractionalTimeout(t *testing.T) {
	blockingListScenario(t, func(t *testing.T, addr string) {
		c := blClient(t, addr)
		admin := blClient(t, addr)
		for _, tc := range []struct {
			args []any
			min  time.Duration
		}{
			{[]any{"BLPOP", "k", "0.2"}, 200 * time.Millisecond},
			{[]any{"BLPOP", "a", "b", "0.05"}, 50 * time.Millisecond},
			{[]any{"BRPOP", "a", "b", "0.05"}, 50 * time.Millisecond},
			{[]any{"BLMOVE", "a", "b", "LEFT", "RIGHT", "0.05"}, 50 * time.Millisecond},
			{[]any{"BRPOPLPUSH", "a", "b", "0.05"}, 50 * time.Millisecond},
			{[]any{"BLMPOP", "0.05", "2", "a", "b", "LEFT"}, 50 * time.Millisecond},
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

// Scenario 6: a client blocked on two keys is served by the one that becomes
// ready, and is then no longer registered on the other.
func TestBlockingListMultipleKeys(t *testing.T) {
	blockingListScenario(t, func(t *testing.T, addr string) {
		admin := blClient(t, addr)
		ch := blGo(blClient(t, addr), "BLPOP", "a", "b", "0")
		blBlocked(t, admin, 1, ch)
		mustInt(t, admin, 1, "RPUSH", "b", "v")
		blWant(t, ch, "BLPOP a b 0", []any{"b", "v"})
		waitBlocked(t, admin, 0)

		first := blGo(blClient(t, addr), "BLPOP", "a", "b", "0")
		blBlocked(t, admin, 1, first)
		second := blGo(blClient(t, addr), "BLPOP", "b", "0")
		blBlocked(t, admin, 2, first, second)
		mustInt(t, admin, 1, "RPUSH", "a", "x")
		blWant(t, first, "BLPOP a b 0", []any{"a", "x"})
		// The first client, served from a, must not also wait on b.
		mustInt(t, admin, 1, "RPUSH", "b", "y")
		blWant(t, second, "BLPOP b 0", []any{"b", "y"})
		mustInt(t, admin, 0, "EXISTS", "a", "b")
	})
}

// Scenario 7: a served BLMOVE pushes onto its destination, which serves a
// client blocked there in the same round.
func TestBlockingListBLMOVEChain(t *testing.T) {
	blockingListScenario(t, func(t *testing.T, addr string) {
		blMoveChain(t, addr, []any{"BLMOVE", "a", "b", "LEFT", "RIGHT", "0"}, []any{"BLPOP", "b", "0"})
	})
}

// Scenario 7, with BRPOPLPUSH.
func TestBlockingListBRPOPLPUSHChain(t *testing.T) {
	blockingListScenario(t, func(t *testing.T, addr string) {
		blMoveChain(t, addr, []any{"BRPOPLPUSH", "a", "b", "0"}, []any{"BRPOP", "b", "0"})
	})
}

// blMoveChain blocks popDest (a pop on b), then move (from a to b), then
// pushes v onto a: move answers v and popDest [b v].
func blMoveChain(t *testing.T, addr string, move, popDest []any) {
	admin := blClient(t, addr)
	onB := blGo(blClient(t, addr), popDest...)
	blBlocked(t, admin, 1, onB)
	mover := blGo(blClient(t, addr), move...)
	blBlocked(t, admin, 2, onB, mover)
	mustInt(t, admin, 1, "RPUSH", "a", "v")
	blWant(t, mover, fmt.Sprint(move), "v")
	blWant(t, onB, fmt.Sprint(popDest), []any{"b", "v"})
	mustInt(t, admin, 0, "EXISTS", "a", "b")
	waitBlocked(t, admin, 0)
}

// Scenario 8: a client that disconnects while blocked consumes nothing.
func TestBlockingListDisconnectWhileBlocked(t *testing.T) {
	blockingListScenario(t, func(t *testing.T, addr string) {
		admin := blClient(t, addr)
		nc, _ := dialRaw(t, addr)
		rawSend(t, nc, "BLPOP k 0\r\n")
		waitBlocked(t, admin, 1)
		nc.Close()
		waitBlocked(t, admin, 0)
		mustInt(t, admin, 1, "RPUSH", "k", "v")
		mustInt(t, admin, 1, "LLEN", "k")
		blWantList(t, admin, "k", "v")
	})
}

// Scenario 9: the key becomes a string while a client waits on it. Redis 7.0
// keeps the client blocked (a string is not a list to pop); once the key is
// deleted and pushed as a list again, it is served.
func TestBlockingListKeyTypeChanges(t *testing.T) {
	blockingListScenario(t, func(t *testing.T, addr string) {
		admin := blClient(t, addr)
		ch := blGo(blClient(t, addr), "BLPOP", "k", "0")
		blBlocked(t, admin, 1, ch)
		mustStr(t, admin, "OK", "SET", "k", "str")
		blBlocked(t, admin, 1, ch)
		mustInt(t, admin, 1, "DEL", "k")
		mustInt(t, admin, 1, "RPUSH", "k", "v")
		blWant(t, ch, "BLPOP k 0", []any{"k", "v"})
		mustInt(t, admin, 0, "EXISTS", "k")
		waitBlocked(t, admin, 0)
	})
}

// Scenario 10: BLMPOP with COUNT takes up to COUNT elements from the end it
// names of the first ready key.
func TestBlockingListBLMPOPCount(t *testing.T) {
	blockingListScenario(t, func(t *testing.T, addr string) {
		admin := blClient(t, addr)
		ch := blGo(blClient(t, addr), "BLMPOP", "0", "2", "a", "b", "LEFT", "COUNT", "2")
		blBlocked(t, admin, 1, ch)
		mustInt(t, admin, 3, "RPUSH", "b", "1", "2", "3")
		blWant(t, ch, "BLMPOP 0 2 a b LEFT COUNT 2", []any{"b", []any{"1", "2"}})
		blWantList(t, admin, "b", "3")
		waitBlocked(t, admin, 0)

		ch = blGo(blClient(t, addr), "BLMPOP", "0", "2", "a", "c", "RIGHT", "COUNT", "2")
		blBlocked(t, admin, 1, ch)
		mustInt(t, admin, 3, "RPUSH", "a", "1", "2", "3")
		blWant(t, ch, "BLMPOP 0 2 a c RIGHT COUNT 2", []any{"a", []any{"3", "2"}})
		blWantList(t, admin, "a", "1")

		// COUNT larger than the list takes it all.
		ch = blGo(blClient(t, addr), "BLMPOP", "0", "1", "d", "RIGHT", "COUNT", "10")
		blBlocked(t, admin, 1, ch)
		mustInt(t, admin, 2, "RPUSH", "d", "x", "y")
		blWant(t, ch, "BLMPOP 0 1 d RIGHT COUNT 10", []any{"d", []any{"y", "x"}})
		mustInt(t, admin, 0, "EXISTS", "d")
	})
}

// Scenario 11: CLIENT UNBLOCK ends a list wait with a nil reply (TIMEOUT) or
// an error (ERROR); the unblocked client no longer waits.
func TestBlockingListClientUnblock(t *testing.T) {
	blockingListScenario(t, func(t *testing.T, addr string) {
		admin := blClient(t, addr)
		for _, how := range []string{"TIMEOUT", "ERROR"} {
			c := blClient(t, addr)
			id := mustDo(t, c, "CLIENT", "ID").(int64)
			ch := blGo(c, "BLPOP", "k", "0")
			blBlocked(t, admin, 1, ch)
			mustInt(t, admin, 1, "CLIENT", "UNBLOCK", id, how)
			if how == "TIMEOUT" {
				blWantErr(t, ch, "BLPOP k 0 after CLIENT UNBLOCK TIMEOUT", redis.Nil.Error())
			} else {
				blWantErr(t, ch, "BLPOP k 0 after CLIENT UNBLOCK ERROR", "UNBLOCKED client unblocked via CLIENT UNBLOCK")
			}
			waitBlocked(t, admin, 0)
			// A client that is not blocked is not unblocked.
			mustInt(t, admin, 0, "CLIENT", "UNBLOCK", id, how)
		}
		mustInt(t, admin, 1, "RPUSH", "k", "v")
		blWantList(t, admin, "k", "v")
	})
}

// Scenario 12: INFO blocked_clients counts the clients waiting on lists.
func TestBlockingListBlockedClientsCount(t *testing.T) {
	blockingListScenario(t, func(t *testing.T, addr string) {
		admin := blClient(t, addr)
		if n := blockedClients(t, admin); n != 0 {
			t.Fatalf("blocked_clients before any wait = %d", n)
		}
		ch := blGo(blClient(t, addr), "BLPOP", "k", "0")
		blBlocked(t, admin, 1, ch)
		mover := blGo(blClient(t, addr), "BLMOVE", "a", "b", "RIGHT", "LEFT", "0")
		blBlocked(t, admin, 2, ch, mover)
		mustInt(t, admin, 1, "RPUSH", "k", "v")
		blWant(t, ch, "BLPOP k 0", []any{"k", "v"})
		blBlocked(t, admin, 1, mover)
		mustInt(t, admin, 1, "RPUSH", "a", "w")
		blWant(t, mover, "BLMOVE a b RIGHT LEFT 0", "w")
		waitBlocked(t, admin, 0)
		blWantList(t, admin, "b", "w")
	})
}

// Scenario 13: a negative timeout is refused before anything blocks.
func TestBlockingListNegativeTimeout(t *testing.T) {
	blockingListScenario(t, func(t *testing.T, addr string) {
		c := blClient(t, addr)
		for _, args := range [][]any{
			{"BLPOP", "k", "-1"},
			{"BLPOP", "k", "-0.5"},
			{"BRPOP", "k", "-1"},
			{"BLMOVE", "a", "b", "LEFT", "LEFT", "-1"},
			{"BRPOPLPUSH", "a", "b", "-1"},
			{"BLMPOP", "-1", "1", "k", "LEFT"},
		} {
			mustErr(t, c, "ERR timeout is negative", args...)
		}
		if n := blockedClients(t, c); n != 0 {
			t.Fatalf("blocked_clients after refused waits = %d", n)
		}
	})
}
