package broker

import (
	"context"
	"testing"
	"time"
)

// Differential keyspace-notification scenarios, run by
// TestPubSubConformance: a subscriber to every keyspace and keyevent
// channel receives, after each command, exactly Redis's notifications, in
// Redis's order.

func init() {
	pubsubCases = append(pubsubCases, notifyCases...)
}

// notifySteps runs each command on conn 0 and reads conn 1's
// notifications after it.
func notifySteps(cmds ...[]string) []psStep {
	var out []psStep
	for _, c := range cmds {
		out = append(out, on(0, c...), recvAll(1))
	}
	return out
}

func cmds(c ...string) []string { return c }

var notifyCases = []psCase{
	{name: "keyspace notifications: strings and generic", conns: 2, steps: append(append([]psStep{
		on(1, "PSUBSCRIBE", "__key*__:*"),
		on(0, "CONFIG", "SET", "notify-keyspace-events", "KEAn"),
		on(0, "CONFIG", "GET", "notify-keyspace-events"),
	}, notifySteps(
		cmds("SET", "k", "v"),
		cmds("SET", "k", "v2", "EX", "100"),
		cmds("SET", "k", "v3", "NX"),
		cmds("SET", "k", "v3", "KEEPTTL"),
		cmds("SETEX", "k2", "10", "v"),
		cmds("PSETEX", "k3", "10000", "v"),
		cmds("SETNX", "k", "x"),
		cmds("SETNX", "n", "x"),
		cmds("GETSET", "n", "y"),
		cmds("MSET", "a", "1", "b", "2"),
		cmds("MSETNX", "a", "1", "c", "2"),
		cmds("MSETNX", "c", "1", "d", "2"),
		cmds("INCR", "i"),
		cmds("INCRBY", "i", "2"),
		cmds("DECR", "i"),
		cmds("DECRBY", "i", "2"),
		cmds("INCRBYFLOAT", "f", "1.5"),
		cmds("APPEND", "k", "x"),
		cmds("SETRANGE", "k", "1", "yy"),
		cmds("GETDEL", "n"),
		cmds("GETDEL", "n"),
		cmds("GETEX", "k", "EX", "100"),
		cmds("GETEX", "k", "PERSIST"),
		cmds("GETEX", "k"),
		cmds("EXPIRE", "k", "100"),
		cmds("PEXPIRE", "k", "100000"),
		cmds("EXPIREAT", "k", "9999999999"),
		cmds("PERSIST", "k"),
		cmds("PERSIST", "k"),
		cmds("EXPIRE", "nosuch", "100"),
		cmds("EXPIRE", "a", "-1"),
		cmds("DEL", "b", "nosuch", "c"),
		cmds("UNLINK", "d"),
		cmds("RENAME", "k", "k9"),
		cmds("RENAMENX", "k9", "i"),
		cmds("RENAMENX", "k9", "k8"),
		cmds("COPY", "k8", "k7"),
		cmds("MOVE", "k7", "1"),
		cmds("FLUSHALL"),
	)...), on(0, "CONFIG", "SET", "notify-keyspace-events", ""), on(1, "PUNSUBSCRIBE"))},
	{name: "keyspace notifications: hashes sets lists", conns: 2, steps: append(append([]psStep{
		on(1, "PSUBSCRIBE", "__key*__:*"),
		on(0, "CONFIG", "SET", "notify-keyspace-events", "AKEn"),
	}, notifySteps(
		cmds("HSET", "h", "f", "v", "g", "w"),
		cmds("HSET", "h", "f", "v"),
		cmds("HMSET", "h", "x", "1"),
		cmds("HSETNX", "h", "f", "v"),
		cmds("HSETNX", "h", "n", "v"),
		cmds("HINCRBY", "h", "c", "1"),
		cmds("HINCRBYFLOAT", "h", "d", "1.5"),
		cmds("HDEL", "h", "f", "nosuch"),
		cmds("HDEL", "h", "g", "x", "n", "c", "d"),
		cmds("SADD", "s", "a", "b", "c"),
		cmds("SADD", "s", "a"),
		cmds("SREM", "s", "a"),
		cmds("SMOVE", "s", "s2", "b"),
		cmds("SINTERSTORE", "dst", "s", "s"),
		cmds("SUNIONSTORE", "dst", "nosuch"),
		cmds("SPOP", "s"),
		cmds("SMOVE", "s2", "s3", "b"),
		cmds("RPUSH", "l", "a", "b", "c", "d"),
		cmds("LPUSH", "l", "z"),
		cmds("LPUSHX", "nosuch", "z"),
		cmds("RPUSHX", "l", "e"),
		cmds("LPOP", "l"),
		cmds("RPOP", "l", "1"),
		cmds("LINSERT", "l", "BEFORE", "b", "x"),
		cmds("LSET", "l", "0", "y"),
		cmds("LREM", "l", "0", "x"),
		cmds("LTRIM", "l", "0", "1"),
		cmds("LMOVE", "l", "l2", "LEFT", "RIGHT"),
		cmds("RPOPLPUSH", "l2", "l"),
		cmds("LMPOP", "1", "l", "RIGHT", "COUNT", "5"),
		cmds("LPOP", "nosuch"),
	)...), on(0, "CONFIG", "SET", "notify-keyspace-events", ""), on(1, "PUNSUBSCRIBE"))},
	{name: "keyspace notifications: sorted sets streams transactions", conns: 2, steps: append(append([]psStep{
		on(1, "PSUBSCRIBE", "__key*__:*"),
		on(0, "CONFIG", "SET", "notify-keyspace-events", "KEAn"),
	}, notifySteps(
		cmds("ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d"),
		cmds("ZADD", "z", "INCR", "1", "a"),
		cmds("ZADD", "z", "NX", "1", "a"),
		cmds("ZINCRBY", "z", "1", "b"),
		cmds("ZREM", "z", "a", "nosuch"),
		cmds("ZREMRANGEBYSCORE", "z", "100", "200"),
		cmds("ZREMRANGEBYRANK", "z", "0", "0"),
		cmds("ZADD", "z", "0", "p", "0", "q"),
		cmds("ZREMRANGEBYLEX", "z", "[p", "[p"),
		cmds("ZPOPMIN", "z"),
		cmds("ZPOPMAX", "z", "1"),
		cmds("ZADD", "z", "5", "m"),
		cmds("ZUNIONSTORE", "zu", "1", "z"),
		cmds("ZRANGESTORE", "zr", "z", "0", "-1"),
		cmds("ZINTERSTORE", "zr", "2", "z", "nosuch"),
		cmds("ZMPOP", "1", "z", "MAX", "COUNT", "10"),
		cmds("XADD", "x", "1-1", "f", "v"),
		cmds("XADD", "x", "MAXLEN", "1", "2-1", "f", "v"),
		cmds("XADD", "x", "3-1", "f", "v"),
		cmds("XTRIM", "x", "MAXLEN", "1"),
		cmds("XTRIM", "x", "MAXLEN", "1"),
		cmds("XDEL", "x", "3-1"),
		cmds("XSETID", "x", "5-0"),
		cmds("XGROUP", "CREATE", "x", "g", "0"),
		cmds("XGROUP", "CREATECONSUMER", "x", "g", "c"),
		cmds("XGROUP", "SETID", "x", "g", "$"),
		cmds("XGROUP", "DELCONSUMER", "x", "g", "c"),
		cmds("XGROUP", "DESTROY", "x", "g"),
		cmds("XGROUP", "CREATE", "x2", "g", "$", "MKSTREAM"),
		cmds("XADD", "x2", "1-1", "f", "v"),
		cmds("XREADGROUP", "GROUP", "g", "c1", "STREAMS", "x2", ">"),
		cmds("XREADGROUP", "GROUP", "g", "c1", "STREAMS", "x2", ">"),
		cmds("XREADGROUP", "GROUP", "g", "c2", "STREAMS", "x2", "0"),
		cmds("XCLAIM", "x2", "g", "c3", "0", "1-1"),
		cmds("XAUTOCLAIM", "x2", "g", "c4", "0", "0"),
		cmds("XACK", "x2", "g", "1-1"),
		cmds("MULTI"),
		cmds("SET", "t1", "v"),
		cmds("HSET", "t2", "f", "v"),
		cmds("DEL", "t1"),
		cmds("EXEC"),
	)...), on(0, "CONFIG", "SET", "notify-keyspace-events", ""), on(1, "PUNSUBSCRIBE"))},
	{name: "keyspace notifications: key misses", conns: 2, steps: append(append([]psStep{
		on(1, "PSUBSCRIBE", "__key*__:*"),
		on(0, "CONFIG", "SET", "notify-keyspace-events", "KEm"),
		on(0, "SET", "k", "v"),
		on(0, "HSET", "h", "f", "v"),
	}, notifySteps(
		cmds("GET", "nosuch"),
		cmds("GET", "k"),
		cmds("MGET", "a", "k", "a"),
		cmds("HGET", "h", "f"),
		cmds("HGET", "nosuch", "f"),
		cmds("EXISTS", "a", "k"),
		cmds("TYPE", "a"),
		cmds("TTL", "a"),
		cmds("STRLEN", "a"),
		cmds("LRANGE", "a", "0", "-1"),
		cmds("SMEMBERS", "a"),
		cmds("SINTER", "a", "b"),
		cmds("ZRANGE", "a", "0", "-1"),
		cmds("ZUNION", "2", "a", "b"),
		cmds("XRANGE", "a", "-", "+"),
		cmds("XREAD", "STREAMS", "a", "b", "0", "0"),
		cmds("OBJECT", "ENCODING", "a"),
		cmds("LCS", "a", "k"),
		cmds("HGETALL", "a"),
		cmds("SET", "n", "v"),
		cmds("DBSIZE"),
		cmds("MULTI"),
		cmds("GET", "a"),
		cmds("GET", "k"),
		cmds("EXEC"),
	)...), on(0, "CONFIG", "SET", "notify-keyspace-events", ""), on(1, "PUNSUBSCRIBE"))},
	{name: "keyspace notifications: classes", conns: 2, steps: append(append([]psStep{
		on(1, "SUBSCRIBE", "__keyevent@0__:set", "__keyevent@0__:del", "__keyspace@0__:k", "__keyevent@0__:hset"),
		on(0, "CONFIG", "SET", "notify-keyspace-events", "E$"),
		on(0, "CONFIG", "GET", "notify-keyspace-events"),
	}, notifySteps(
		cmds("SET", "k", "v"),
		cmds("DEL", "k"),
		cmds("CONFIG", "SET", "notify-keyspace-events", "Kg"),
		cmds("SET", "k", "v"),
		cmds("DEL", "k"),
		cmds("CONFIG", "SET", "notify-keyspace-events", "Eh"),
		cmds("HSET", "k", "f", "v"),
		cmds("CONFIG", "SET", "notify-keyspace-events", "QQ"),
		cmds("CONFIG", "SET", "nosuch-parameter", "x"),
		cmds("CONFIG", "SET", "notify-keyspace-events"),
		cmds("CONFIG", "SET", "notify-keyspace-events", "A", "nosuch", "x"),
		cmds("CONFIG", "GET", "notify-keyspace-events"),
		cmds("CONFIG", "SET", "notify-keyspace-events", "gKEmn"),
		cmds("CONFIG", "GET", "notify-keyspace-events"),
	)...), on(0, "CONFIG", "SET", "notify-keyspace-events", ""), onN(1, 4, "UNSUBSCRIBE"))},
}

// TestNotifyExpired: a key deleted by active expiry is notified as
// "expired" (class x), on Sediment alone (Redis also expires on reads, at
// a time of its own).
func TestNotifyExpired(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	c := ts.client(t)
	mustDo(t, c, "CONFIG", "SET", "notify-keyspace-events", "Ex")
	sub := ts.client(t).Subscribe(ctx, "__keyevent@0__:expired")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	mustDo(t, c, "SET", "gone", "v", "PX", "10")
	select {
	case m := <-sub.Channel():
		if m.Payload != "gone" {
			t.Fatalf("expired notification for %q, want gone", m.Payload)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no expired notification")
	}
}

// TestNotifyServedPop: a BLPOP served by another client's LPUSH notifies
// the push and the served pop (and the emptied list's del), as Redis does;
// the two clients' notifications are published by their own connections,
// so their relative order is not fixed (docs/keyspace-notifications.md).
func TestNotifyServedPop(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	c := ts.client(t)
	mustDo(t, c, "CONFIG", "SET", "notify-keyspace-events", "Elg")
	sub := ts.client(t).PSubscribe(ctx, "__keyevent@0__:*")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	popper := ts.client(t)
	popped := make(chan error, 1)
	go func() { popped <- popper.BLPop(ctx, 5*time.Second, "q").Err() }()
	waitBlocked(t, c, 1)
	mustDo(t, c, "LPUSH", "q", "job")
	if err := <-popped; err != nil {
		t.Fatalf("BLPOP: %v", err)
	}
	got := map[string]string{}
	for range 3 {
		select {
		case m := <-sub.Channel():
			got[m.Channel] = m.Payload
		case <-time.After(5 * time.Second):
			t.Fatalf("notifications so far %v, want lpush, lpop and del of q", got)
		}
	}
	for _, ev := range []string{"lpush", "lpop", "del"} {
		if got["__keyevent@0__:"+ev] != "q" {
			t.Fatalf("notifications %v, want lpush, lpop and del of q", got)
		}
	}
}
