package materialize_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sediment-dev/sediment/broker"
	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
)

// fillEveryType starts a server on dir, writes every type through real
// commands (go-redis), and stops it: a store written by the real write
// path, to check.
// fillServer is a server on a data directory that a test fills through
// real commands (go-redis) before checking the directory.
type fillServer struct {
	t      *testing.T
	srv    *broker.Server
	addr   string
	served chan error
	c      *redis.Client
}

// startFill serves opts.Dir; fill.c is a client of it.
func startFill(t *testing.T, opts broker.Options) *fillServer {
	t.Helper()
	srv, err := broker.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fillServer{t: t, srv: srv, addr: ln.Addr().String(), served: make(chan error, 1)}
	go func() { f.served <- srv.Serve(ln) }()
	f.c = f.client()
	return f
}

// client opens another connection.
func (f *fillServer) client() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: f.addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1, PoolSize: 1, ReadTimeout: 10 * time.Second})
}

// do runs a command, failing the test on any error but a nil reply.
func (f *fillServer) do(args ...any) any {
	f.t.Helper()
	v, err := f.c.Do(context.Background(), args...).Result()
	if err != nil && err != redis.Nil {
		f.t.Fatalf("%v: %v", args, err)
	}
	return v
}

// stop closes the client and the server, leaving the directory to check.
func (f *fillServer) stop() {
	f.t.Helper()
	f.c.Close()
	if err := f.srv.Close(); err != nil {
		f.t.Fatal(err)
	}
	if err := <-f.served; err != nil {
		f.t.Fatal(err)
	}
}

func fillEveryType(t *testing.T, dir string) {
	t.Helper()
	f := startFill(t, broker.Options{Dir: dir})
	do := f.do
	// Strings: plain, with a TTL, expired (kept until deleted), large (a
	// blob value), binary key.
	do("SET", "s1", "v")
	do("SET", "s2", "v", "EX", 1000)
	do("SET", "gone", "v", "PX", 1)
	do("SET", "big", strings.Repeat("x", 10<<10))
	do("SET", "bin\x00\xff{tag}", "v")
	do("INCR", "n")
	// Hashes.
	do("HSET", "h", "f1", "v1", "f2", "v2", "f3", "v3", "\x00\xff", "bin")
	do("HDEL", "h", "f2")
	do("HSET", "h", "f1", "again")
	do("EXPIRE", "h", 5000)
	// Sets.
	do("SADD", "set", "a", "b", "c", "d")
	do("SREM", "set", "b")
	do("SPOP", "set")
	// Sorted sets: small, with -0, re-scored, popped, removed; a large
	// ranked one, shrunk by removals and pops (merges, the floor moves).
	do("ZADD", "z", 1, "a", 2, "b", 3, "c", "-0", "negzero", "-inf", "ninf")
	do("ZINCRBY", "z", 10, "a")
	do("ZREM", "z", "b")
	do("ZPOPMIN", "z")
	do("PEXPIRE", "z", 900000)
	args := []any{"ZADD", "zbig"}
	for i := range 3000 {
		args = append(args, i%97, fmt.Sprintf("m%04d", i))
	}
	do(args...)
	args = []any{"ZREM", "zbig"}
	for i := 0; i < 3000; i += 3 {
		args = append(args, fmt.Sprintf("m%04d", i))
	}
	do(args...)
	do("ZPOPMIN", "zbig", 50)
	do("ZADD", "zbig", "XX", 1000, "m0001", -5, "m2999")
	do("ZREMRANGEBYSCORE", "zbig", 10, 30)
	// Lists: pushes both ways, LINSERT and LREM on both sides, pops, LSET.
	do("RPUSH", "l", "a", "b", "c", "d", "e")
	do("LPUSH", "l", "x", "y")
	do("LINSERT", "l", "BEFORE", "c", "new")
	do("LINSERT", "l", "AFTER", "y", "new2")
	do("LREM", "l", 1, "a")
	do("LPOP", "l")
	do("RPOP", "l")
	do("LSET", "l", 1, "set")
	args = []any{"RPUSH", "lbig"}
	for i := range 300 {
		args = append(args, fmt.Sprintf("e%d", i%7))
	}
	do(args...)
	do("LREM", "lbig", 0, "e3")
	do("LINSERT", "lbig", "BEFORE", "e5", "ins")
	do("LTRIM", "lbig", 10, -10)
	// Streams: entries, deletions, trims, two groups with pending entries,
	// claims, acks, NACKs, a deleted consumer, IDMP records.
	for i := range 30 {
		do("XADD", "st", fmt.Sprintf("%d-1", 1000+i), "f", i)
	}
	do("XDEL", "st", "1003-1")
	do("XTRIM", "st", "MAXLEN", 25)
	do("XGROUP", "CREATE", "st", "g1", "0")
	do("XGROUP", "CREATE", "st", "g2", "0")
	do("XREADGROUP", "GROUP", "g1", "c1", "COUNT", 6, "STREAMS", "st", ">")
	do("XREADGROUP", "GROUP", "g1", "c2", "COUNT", 4, "STREAMS", "st", ">")
	do("XREADGROUP", "GROUP", "g2", "c1", "COUNT", 3, "STREAMS", "st", ">")
	do("XACK", "st", "g1", "1005-1", "1006-1")
	do("XCLAIM", "st", "g1", "c2", 0, "1007-1")
	do("XNACK", "st", "g1", "SILENT", "IDS", 1, "1008-1")
	do("XGROUP", "CREATECONSUMER", "st", "g1", "idle")
	do("XGROUP", "CREATECONSUMER", "st", "g2", "doomed")
	do("XREADGROUP", "GROUP", "g2", "doomed", "COUNT", 2, "STREAMS", "st", ">")
	do("XGROUP", "DELCONSUMER", "st", "g2", "doomed")
	do("XAUTOCLAIM", "st", "g2", "c3", 0, "0", "COUNT", 1)
	do("XADD", "st", "MAXLEN", 20, "*", "f", "last")
	// A stream of several nodes (node keys): a middle node emptied by
	// XDEL, '~' and exact trims, the tail dropped and the node before it
	// made the tail again.
	do("CONFIG", "SET", "stream-node-max-entries", 4)
	for i := range 40 {
		do("XADD", "sn", fmt.Sprintf("%d-1", 1000+i), "f", i)
	}
	do("XDEL", "sn", "1012-1", "1013-1", "1014-1", "1015-1")
	do("XTRIM", "sn", "MAXLEN", "~", 30)
	do("XTRIM", "sn", "MINID", "1009-1")
	do("XDEL", "sn", "1036-1", "1037-1", "1038-1", "1039-1")
	do("XADD", "sn", "1040-1", "f", "again")
	do("CONFIG", "SET", "stream-node-max-entries", 100)
	do("XADD", "q", "IDMP", "p1", "i1", "*", "f", "v")
	do("XADD", "q", "IDMP", "p1", "i2", "*", "f", "v")
	do("XADD", "q", "IDMPAUTO", "p2", "*", "f", "v")
	do("XADD", "q", "IDMP", "p1", "i1", "*", "f", "v") // a duplicate
	do("XGROUP", "CREATE", "empty", "g", "$", "MKSTREAM")
	// Keyspace: COPY and RENAME of every collection kind, another db, a
	// SWAPDB, a FLUSHDB that leaves stale TTL entries.
	do("COPY", "h", "hcopy")
	do("COPY", "st", "stcopy")
	do("COPY", "sn", "sncopy")
	do("COPY", "q", "qcopy")
	do("RENAME", "l", "lrenamed")
	do("RENAME", "zbig", "zbig2")
	do("SELECT", 3)
	do("SET", "t3", "v", "EX", 1000)
	do("HSET", "h3", "f", "v")
	do("FLUSHDB")
	do("SET", "t3", "v", "EX", 2000)
	do("SELECT", 1)
	do("SET", "in1", "v")
	do("SWAPDB", 1, 2)
	f.stop()
}

// filledDir returns a directory holding a store of every type
// (fillEveryType).
func filledDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	fillEveryType(t, dir)
	return dir
}

func check(t *testing.T, s *materialize.Store, limit int) materialize.CheckReport {
	t.Helper()
	rep, err := s.Check(limit)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	return rep
}

func mustClean(t *testing.T, rep materialize.CheckReport) {
	t.Helper()
	if rep.NumViolations != 0 {
		var b strings.Builder
		for _, v := range rep.Violations {
			b.WriteString("\n" + v.String())
		}
		t.Fatalf("%d violations:%s", rep.NumViolations, b.String())
	}
}

// TestCheckCleanStore: a store of every type written by real commands has
// no violation, and the report counts what was written.
func TestCheckCleanStore(t *testing.T) {
	dir := filledDir(t)
	rep, err := materialize.Check(materialize.Options{Dir: dir}, 0)
	if err != nil {
		t.Fatal(err)
	}
	mustClean(t, rep)
	for _, typ := range []codec.Type{codec.TypeString, codec.TypeHash, codec.TypeSet, codec.TypeZSet, codec.TypeList, codec.TypeStream} {
		if rep.Keys[typ] == 0 {
			t.Errorf("no %s key counted: %+v", typ, rep.Keys)
		}
		if typ != codec.TypeString && rep.Elements[typ] == 0 {
			t.Errorf("no %s element counted: %+v", typ, rep.Elements)
		}
	}
	// zbig2 (renamed) and zbig's 3000 members less the removed ones.
	if rep.Keys[codec.TypeStream] != 7 || rep.Groups != 5 || rep.Pending == 0 || rep.Consumers == 0 {
		t.Errorf("streams: %d keys, %d groups, %d consumers, %d pending", rep.Keys[codec.TypeStream], rep.Groups, rep.Consumers, rep.Pending)
	}
	if rep.Expiring < 4 || rep.StaleTTL != 1 {
		t.Errorf("%d keys with a TTL, %d stale TTL entries; want at least 4 and 1 (FLUSHDB's)", rep.Expiring, rep.StaleTTL)
	}
	if rep.Applied == 0 {
		t.Error("applied sequence 0")
	}
	t.Logf("%+v", rep)
}

// corruption is one deliberate change to a clean store and the violation
// it must cause.
type corruption struct {
	name string
	edit func(t *testing.T, s *materialize.Store) // through materialize.RawSet and RawDelete
	// want is the violation that must be reported (Raw and the string
	// fields compared when set); others lists every Check the corruption
	// may also cause, and nothing else may be reported.
	want   materialize.Violation
	others []string
}

func rawSet(t *testing.T, s *materialize.Store, k, v []byte) {
	t.Helper()
	if err := materialize.RawSet(s, k, v); err != nil {
		t.Fatal(err)
	}
}

func rawDel(t *testing.T, s *materialize.Store, k []byte) {
	t.Helper()
	if err := materialize.RawDelete(s, k); err != nil {
		t.Fatal(err)
	}
}

// editNode rewrites the i-th node key of stream key (db 0) through edit.
func editNode(t *testing.T, s *materialize.Store, key string, i int, edit func(*codec.StreamNode)) {
	t.Helper()
	k := rawKeys(t, s, codec.KeyPrefix(codec.TagStreamNode, 0, []byte(key)))[i]
	d, err := codec.DecodeKey(k)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := codec.DecodeID(d.Suffix)
	n, err := codec.DecodeStreamNode(first, rawGet(t, s, k))
	if err != nil {
		t.Fatal(err)
	}
	edit(&n)
	rawSet(t, s, k, codec.AppendStreamNode(nil, n))
}

func rawGet(t *testing.T, s *materialize.Store, k []byte) []byte {
	t.Helper()
	v, ok, err := materialize.RawGet(s, k)
	if err != nil || !ok {
		t.Fatalf("%q: %v, found %v", k, err, ok)
	}
	return v
}

func rawKeys(t *testing.T, s *materialize.Store, prefix []byte) [][]byte {
	t.Helper()
	kvs, err := materialize.RawScan(s, prefix)
	if err != nil || len(kvs) == 0 {
		t.Fatalf("keys under %q: %v (%d)", prefix, err, len(kvs))
	}
	ks := make([][]byte, len(kvs))
	for i, kv := range kvs {
		ks[i] = kv[0]
	}
	return ks
}

// editMeta rewrites the metadata of db 0's key with fn.
func editMeta(t *testing.T, s *materialize.Store, key string, fn func(m *codec.Meta)) {
	t.Helper()
	k := codec.MetaKey(0, []byte(key))
	m, err := codec.DecodeMeta(rawGet(t, s, k))
	if err != nil {
		t.Fatal(err)
	}
	fn(&m)
	rawSet(t, s, k, codec.AppendMeta(nil, m))
}

func b(s string) []byte { return []byte(s) }

var corruptions = []corruption{
	{
		name: "stray sub-key without metadata",
		edit: func(t *testing.T, s *materialize.Store) {
			rawSet(t, s, codec.ElementKey(codec.TagHash, 0, b("nokey"), b("f")), b("v"))
		},
		want: materialize.Violation{Key: b("nokey"), Check: "sub-keys without metadata", Stored: "no metadata", Counted: "1 H keys"},
	},
	{
		name: "stray sub-key of another type",
		edit: func(t *testing.T, s *materialize.Store) {
			rawSet(t, s, codec.ElementKey(codec.TagSet, 0, b("h"), b("m")), nil)
		},
		want: materialize.Violation{Key: b("h"), Check: "sub-keys of another type", Stored: "type hash", Counted: "1 S keys"},
	},
	{
		name: "stray list element after the tail",
		edit: func(t *testing.T, s *materialize.Store) {
			rawSet(t, s, codec.ListKey(0, b("lrenamed"), 1000), b("x"))
		},
		want:   materialize.Violation{Key: b("lrenamed"), Check: "list element count"},
		others: []string{"list positions"},
	},
	{
		name: "hash count changed in metadata",
		edit: func(t *testing.T, s *materialize.Store) {
			editMeta(t, s, "h", func(m *codec.Meta) { m.Count++ })
		},
		want: materialize.Violation{Key: b("h"), Check: "hash field count", Stored: "4", Counted: "3"},
	},
	{
		name: "set count changed in metadata",
		edit: func(t *testing.T, s *materialize.Store) {
			editMeta(t, s, "set", func(m *codec.Meta) { m.Count = 7 })
		},
		want: materialize.Violation{Key: b("set"), Check: "set member count", Stored: "7", Counted: "2"},
	},
	{
		name: "list head moved",
		edit: func(t *testing.T, s *materialize.Store) {
			editMeta(t, s, "lrenamed", func(m *codec.Meta) { m.Head-- })
		},
		want: materialize.Violation{Key: b("lrenamed"), Check: "list head"},
	},
	{
		name: "list element deleted in the middle",
		edit: func(t *testing.T, s *materialize.Store) {
			ks := rawKeys(t, s, codec.KeyPrefix(codec.TagList, 0, b("lbig")))
			rawDel(t, s, ks[len(ks)/2])
		},
		want:   materialize.Violation{Key: b("lbig"), Check: "list positions"},
		others: []string{"list element count"},
	},
	{
		name: "PEL key deleted, its W and Q keys left",
		edit: func(t *testing.T, s *materialize.Store) {
			rawDel(t, s, codec.PELKey(0, b("st"), b("g1"), codec.ID{Ms: 1009, Seq: 1}))
		},
		want: materialize.Violation{Key: b("st"), Check: "W key without pending entry", Stored: `group "g1" ID 1009-1`, Counted: "no P key"},
		others: []string{"Q key without pending entry", "group pending count", "group first pending ID",
			"group first delivery-time key", "group pending IDs after the first"},
	},
	{
		name: "bounded group with an entry pending past last-delivered-id",
		edit: func(t *testing.T, s *materialize.Store) {
			k := codec.GroupKey(0, b("st"), b("g1"))
			g, err := codec.DecodeGroup(rawGet(t, s, k))
			if err != nil || !g.PELBounded {
				t.Fatalf("group g1: %v, bounded %v", err, g.PELBounded)
			}
			g.LastDeliveredID = codec.ID{Ms: 1}
			rawSet(t, s, k, codec.AppendGroup(nil, g))
		},
		want: materialize.Violation{Key: b("st"), Check: "pending entry past last-delivered-id"},
	},
	{
		name: "W key deleted",
		edit: func(t *testing.T, s *materialize.Store) {
			ks := rawKeys(t, s, codec.GroupPrefix(codec.TagPELTime, 0, b("st"), b("g2")))
			rawDel(t, s, ks[len(ks)-1])
		},
		want:   materialize.Violation{Key: b("st"), Check: "pending entry without W key", Counted: "no W key"},
		others: []string{"group W keys after the first"}, // the group's run holds the deleted key
	},
	{
		name: "Q key moved to another consumer",
		edit: func(t *testing.T, s *materialize.Store) {
			ks := rawKeys(t, s, codec.ConsumerPELPrefix(0, b("st"), b("g1"), b("c1")))
			rawDel(t, s, ks[0])
			id, _ := codec.DecodeID(ks[0][len(ks[0])-16:])
			rawSet(t, s, codec.ConsumerPELKey(0, b("st"), b("g1"), b("idle"), id), nil)
		},
		want:   materialize.Violation{Key: b("st"), Check: "Q key of another owner", Stored: `consumer "idle"`},
		others: []string{"pending entry without Q key", "consumer pending count", "consumer first pending ID"},
	},
	{
		name: "consumer pending count changed",
		edit: func(t *testing.T, s *materialize.Store) {
			k := codec.ConsumerKey(0, b("st"), b("g1"), b("c2"))
			cv, err := codec.DecodeConsumer(rawGet(t, s, k))
			if err != nil {
				t.Fatal(err)
			}
			cv.PEL.Count += 2
			rawSet(t, s, k, codec.AppendConsumer(nil, cv))
		},
		want: materialize.Violation{Key: b("st"), Check: "consumer pending count"},
	},
	{
		name: "group NACKed count changed",
		edit: func(t *testing.T, s *materialize.Store) {
			k := codec.GroupKey(0, b("st"), b("g1"))
			g, err := codec.DecodeGroup(rawGet(t, s, k))
			if err != nil {
				t.Fatal(err)
			}
			if g.Nacked != 1 {
				t.Fatalf("group g1 has %d NACKed entries, want 1", g.Nacked)
			}
			g.Nacked = 0
			rawSet(t, s, k, codec.AppendGroup(nil, g))
		},
		want: materialize.Violation{Key: b("st"), Check: "group NACKed count", Stored: `group "g1": 0`, Counted: "1 NACKed P entries"},
	},
	{
		name: "stream length changed",
		edit: func(t *testing.T, s *materialize.Store) {
			editMeta(t, s, "st", func(m *codec.Meta) { m.Stream.Length++ })
		},
		want: materialize.Violation{Key: b("st"), Check: "stream length", Stored: "21", Counted: "20 X keys"},
	},
	{
		name: "stream first entry deleted",
		edit: func(t *testing.T, s *materialize.Store) {
			rawDel(t, s, rawKeys(t, s, codec.KeyPrefix(codec.TagStreamEntry, 0, b("st")))[0])
		},
		want:   materialize.Violation{Key: b("st"), Check: "stream first ID"},
		others: []string{"stream length", "stream tail live count"},
	},
	{
		name: "stream node key dropped",
		edit: func(t *testing.T, s *materialize.Store) {
			rawDel(t, s, rawKeys(t, s, codec.KeyPrefix(codec.TagStreamNode, 0, b("sn")))[1])
		},
		want:   materialize.Violation{Key: b("sn"), Check: "stream entries in no node"},
		others: []string{"stream node count"},
	},
	{
		name: "stream head node key dropped",
		edit: func(t *testing.T, s *materialize.Store) {
			rawDel(t, s, rawKeys(t, s, codec.KeyPrefix(codec.TagStreamNode, 0, b("sn")))[0])
		},
		want:   materialize.Violation{Key: b("sn"), Check: "stream head summary"},
		others: []string{"stream node count", "stream entries in no node"},
	},
	{
		name: "stream node live count",
		edit: func(t *testing.T, s *materialize.Store) {
			editNode(t, s, "sncopy", 1, func(n *codec.StreamNode) {
				n.Live++
				n.Inner = "" // which would have to list the entry added
			})
		},
		want: materialize.Violation{Key: b("sncopy"), Check: "stream node live count"},
	},
	{
		name: "stream node last ID",
		edit: func(t *testing.T, s *materialize.Store) {
			editNode(t, s, "sncopy", 1, func(n *codec.StreamNode) {
				n.Last = codec.ID{Ms: 1 << 40} // above every entry, none deleted
				n.Next, n.Inner = codec.ID{}, ""
			})
		},
		want:   materialize.Violation{Key: b("sncopy"), Check: "stream node last ID"},
		others: []string{"stream node order"},
	},
	{
		name: "stream node inner IDs",
		edit: func(t *testing.T, s *materialize.Store) {
			editNode(t, s, "sncopy", 1, func(n *codec.StreamNode) {
				inner, err := n.InnerIDs(nil)
				if err != nil || len(inner) < 2 || inner[0].Ms == inner[1].Ms {
					t.Fatalf("node %+v: inner IDs %v, %v", n, inner, err)
				}
				inner[0].Seq++ // an ID between two entries, of none
				n.Inner = string(codec.AppendInnerIDs(nil, n.First, inner))
			})
		},
		want: materialize.Violation{Key: b("sncopy"), Check: "stream node inner IDs"},
	},
	{
		name: "stream node overlapping",
		edit: func(t *testing.T, s *materialize.Store) {
			k := rawKeys(t, s, codec.KeyPrefix(codec.TagStreamNode, 0, b("sn")))[1]
			v := rawGet(t, s, k)
			rawDel(t, s, k)
			rawSet(t, s, append(codec.KeyPrefix(codec.TagStreamNode, 0, b("sn")), codec.AppendID(nil, codec.ID{Ms: 1010, Seq: 1})...), v)
		},
		// The node before reaches into it with no deleted entry (ranges
		// overlap only after an XSETID below a deleted last entry), and
		// the moved node's entries are counted in that one.
		want:   materialize.Violation{Key: b("sn"), Check: "stream node order"},
		others: []string{"stream node live count", "stream node next ID", "stream node inner IDs", "stream node count", "stream entries in no node"},
	},
	{
		name: "stream node count",
		edit: func(t *testing.T, s *materialize.Store) {
			m, err := codec.DecodeMeta(rawGet(t, s, codec.MetaKey(0, b("sn"))))
			if err != nil {
				t.Fatal(err)
			}
			m.Stream.Nodes++
			rawSet(t, s, codec.MetaKey(0, b("sn")), codec.AppendMeta(nil, m))
		},
		want: materialize.Violation{Key: b("sn"), Check: "stream node count"},
	},
	{
		name: "TTL key dropped",
		edit: func(t *testing.T, s *materialize.Store) {
			m, err := codec.DecodeMeta(rawGet(t, s, codec.MetaKey(0, b("s2"))))
			if err != nil {
				t.Fatal(err)
			}
			rawDel(t, s, codec.TTLKey(0, b("s2"), m.ExpireAtMs))
		},
		want: materialize.Violation{Key: b("s2"), Check: "TTL index entry missing", Counted: "no E key"},
	},
	{
		name: "zset score index entry deleted",
		edit: func(t *testing.T, s *materialize.Store) {
			rawDel(t, s, codec.ZScoreKey(0, b("z"), 3, b("c")))
		},
		want: materialize.Violation{Key: b("z"), Check: "zset score index count", Stored: "3 Z keys", Counted: "2 Y keys"},
	},
	{
		name: "zset member score changed",
		edit: func(t *testing.T, s *materialize.Store) {
			rawSet(t, s, codec.ZMemberKey(0, b("z"), b("c")), codec.ScoreArg(4))
		},
		want: materialize.Violation{Key: b("z"), Check: "zset score", Stored: "Z 4", Counted: `Y 3 for member "c"`},
	},
	{
		name: "zset floor moved",
		edit: func(t *testing.T, s *materialize.Store) {
			editMeta(t, s, "z", func(m *codec.Meta) { m.Floor = codec.AppendScore(nil, -1) })
		},
		want: materialize.Violation{Key: b("z"), Check: "zset floor"},
	},
	{
		name: "rank block count changed",
		edit: func(t *testing.T, s *materialize.Store) {
			k := rawKeys(t, s, codec.KeyPrefix(codec.TagZBlock, 0, b("zbig2")))[0]
			v := rawGet(t, s, k)
			binary.BigEndian.PutUint64(v, binary.BigEndian.Uint64(v)+1)
			rawSet(t, s, k, v)
		},
		want: materialize.Violation{Key: b("zbig2"), Check: "rank block count"},
	},
	{
		name: "IDMP expiry key dropped",
		edit: func(t *testing.T, s *materialize.Store) {
			rawDel(t, s, rawKeys(t, s, []byte{byte(codec.TagIDMPExpiry)})[0])
		},
		want: materialize.Violation{Check: "IDMP expiry key missing", Counted: "no M key"},
	},
	{
		name: "IDMP producer count changed",
		edit: func(t *testing.T, s *materialize.Store) {
			k := codec.IDMPProducerKey(0, b("q"), b("p1"))
			n, first, err := codec.DecodeIDMPProducer(rawGet(t, s, k))
			if err != nil {
				t.Fatal(err)
			}
			rawSet(t, s, k, codec.AppendIDMPProducer(nil, n+1, first))
		},
		want: materialize.Violation{Key: b("q"), Check: "IDMP producer count", Stored: `producer "p1": 3 (O key present true)`, Counted: "2 V keys, 2 U keys"},
	},
	{
		name: "key count changed",
		edit: func(t *testing.T, s *materialize.Store) {
			v := rawGet(t, s, codec.CountKey(0))
			binary.BigEndian.PutUint64(v, binary.BigEndian.Uint64(v)+1)
			rawSet(t, s, codec.CountKey(0), v)
		},
		want: materialize.Violation{Check: "key counts of db 0"},
	},
	{
		name: "key of an unknown tag",
		edit: func(t *testing.T, s *materialize.Store) {
			rawSet(t, s, b("rstray"), b("v"))
		},
		want: materialize.Violation{Raw: b("rstray"), Check: "unknown tag"},
	},
	{
		name: "undecodable metadata",
		edit: func(t *testing.T, s *materialize.Store) {
			rawSet(t, s, codec.MetaKey(0, b("s1")), b("\x01?garbage"))
		},
		want: materialize.Violation{Key: b("s1"), Check: "undecodable metadata"},
	},
	{
		name: "sub-key under a string",
		edit: func(t *testing.T, s *materialize.Store) {
			rawSet(t, s, codec.ElementKey(codec.TagHash, 0, b("s1"), b("f")), b("v"))
		},
		want: materialize.Violation{Key: b("s1"), Check: "sub-keys of another type", Stored: "type string", Counted: "1 H keys"},
	},
	{
		name: "group key deleted, its consumers and PEL left",
		edit: func(t *testing.T, s *materialize.Store) {
			rawDel(t, s, codec.GroupKey(0, b("st"), b("g2")))
		},
		want:   materialize.Violation{Key: b("st"), Check: "pending entry of a missing group", Stored: `group "g2"`, Counted: "no G key"},
		others: []string{"consumer of a missing group", "Q key of a missing consumer", "W key of a missing group"},
	},
	{
		name: "metadata key with the wrong slot",
		edit: func(t *testing.T, s *materialize.Store) {
			k := codec.MetaKey(0, b("s1"))
			k[1] ^= 1
			rawSet(t, s, k, rawGet(t, s, codec.MetaKey(0, b("s1"))))
		},
		want: materialize.Violation{Check: "undecodable key"},
	},
}

// matches reports whether got is want, comparing the fields want sets.
func matches(got, want materialize.Violation) bool {
	return got.Check == want.Check &&
		(want.Key == nil || bytes.Equal(got.Key, want.Key)) &&
		(want.Raw == nil || bytes.Equal(got.Raw, want.Raw)) &&
		(want.Stored == "" || got.Stored == want.Stored) &&
		(want.Counted == "" || got.Counted == want.Counted)
}

// TestCheckFindsCorruptions: each deliberate corruption of a clean store
// (raw Pebble writes under the store) is reported as its specific
// violation, with nothing unrelated; undoing them all leaves the store
// clean again.
func TestCheckFindsCorruptions(t *testing.T) {
	dir := filledDir(t)
	s := openStore(t, materialize.Options{Dir: dir})
	runCorruptions(t, s, corruptions)
}

// runCorruptions checks that s is clean, applies each corruption in turn
// (undoing it after), checks that it is reported as its specific violation
// with nothing unrelated, and that s is clean again at the end.
func runCorruptions(t *testing.T, s *materialize.Store, corruptions []corruption) {
	t.Helper()
	mustClean(t, check(t, s, 0))
	for _, tc := range corruptions {
		t.Run(tc.name, func(t *testing.T) {
			undo := snapshotRaw(t, s)
			tc.edit(t, s)
			rep := check(t, s, 0)
			found := false
			for _, v := range rep.Violations {
				switch {
				case matches(v, tc.want):
					found = true
				case !contains(tc.others, v.Check):
					t.Errorf("unexpected violation: %v", v)
				}
			}
			if !found {
				t.Errorf("no violation %+v; got %d:", tc.want, rep.NumViolations)
				for _, v := range rep.Violations {
					t.Log(v)
				}
			}
			if int(rep.NumViolations) != len(rep.Violations) {
				t.Errorf("%d violations counted, %d listed (limit %d)", rep.NumViolations, len(rep.Violations), materialize.DefaultMaxViolations)
			}
			undo() // a failed undo would show as unexpected violations in the next case
		})
	}
	mustClean(t, check(t, s, 0))
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// snapshotRaw returns a function that puts every key of s back as it is
// now.
func snapshotRaw(t *testing.T, s *materialize.Store) func() {
	t.Helper()
	kvs, err := materialize.RawScan(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	before := map[string][]byte{}
	for _, kv := range kvs {
		before[string(kv[0])] = kv[1]
	}
	return func() {
		t.Helper()
		now, err := materialize.RawScan(s, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range now {
			if v, ok := before[string(kv[0])]; !ok {
				rawDel(t, s, kv[0])
			} else if !bytes.Equal(v, kv[1]) {
				rawSet(t, s, kv[0], v)
			}
			delete(before, string(kv[0]))
		}
		for k, v := range before {
			rawSet(t, s, []byte(k), v)
		}
	}
}

// TestCheckLimit: violations past the limit are counted, not listed.
func TestCheckLimit(t *testing.T) {
	s := openStore(t, materialize.Options{Dir: t.TempDir()})
	for i := range 10 {
		rawSet(t, s, codec.ElementKey(codec.TagSet, 0, fmt.Appendf(nil, "orphan%d", i), b("m")), nil)
	}
	rep := check(t, s, 3)
	if rep.NumViolations != 10 || len(rep.Violations) != 3 {
		t.Fatalf("%d violations counted, %d listed; want 10 and 3", rep.NumViolations, len(rep.Violations))
	}
	if rep := check(t, s, 0); len(rep.Violations) != 10 {
		t.Fatalf("limit 0 (the default, %d) listed %d", materialize.DefaultMaxViolations, len(rep.Violations))
	}
}

// TestCheckOffline: Check on a directory opens the store, reports what it
// finds and closes it; it refuses a directory a Store holds and one that
// holds no store (creating nothing there).
func TestCheckOffline(t *testing.T) {
	dir := filledDir(t)
	s, err := materialize.Open(materialize.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := materialize.Check(materialize.Options{Dir: dir}, 0); !errors.Is(err, materialize.ErrInUse) {
		t.Fatalf("Check of a directory in use: %v, want ErrInUse", err)
	}
	rawDel(t, s, codec.ElementKey(codec.TagHash, 0, b("h"), b("f1")))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := materialize.Check(materialize.Options{Dir: dir}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if rep.NumViolations != 1 || !matches(rep.Violations[0], materialize.Violation{Key: b("h"), Check: "hash field count", Stored: "3", Counted: "2"}) {
		t.Fatalf("violations %v", rep.Violations)
	}
	if got := rep.Violations[0].String(); got != `db 0 key "h": hash field count: stored 3, counted 2` {
		t.Fatalf("String() = %q", got)
	}
	empty := t.TempDir()
	for _, d := range []string{empty, filepath.Join(empty, "missing")} {
		if _, err := materialize.Check(materialize.Options{Dir: d}, 0); !errors.Is(err, materialize.ErrNoStore) {
			t.Fatalf("Check of %s: %v, want ErrNoStore", d, err)
		}
	}
	if names, _ := os.ReadDir(empty); len(names) != 0 {
		t.Fatalf("Check created %d files in an empty directory", len(names))
	}
}

// TestCheckLive: a check of a store being written sees one consistent
// state (a snapshot): no violation while writers create, expire-date and
// delete keys of several types concurrently.
func TestCheckLive(t *testing.T) {
	s := openStore(t, materialize.Options{Dir: t.TempDir()})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Appendf(nil, "k%d-%d", w, i%50)
				_, err := s.Write(func(v *materialize.View) ([]codec.Event, error) {
					m, ok, err := v.Meta(0, key)
					if err != nil {
						return nil, err
					}
					if ok && i%3 == 0 {
						return []codec.Event{codec.DelKeyEvent(0, key, m.Type, m.ExpireAtMs)}, nil
					}
					if ok && m.Type == codec.TypeHash {
						field := fmt.Appendf(nil, "f%d", i%7)
						has, err := v.Has(codec.ElementKey(codec.TagHash, 0, key, field))
						if err != nil {
							return nil, err
						}
						if !has {
							m.Count++
						}
						return []codec.Event{{Op: codec.OpHSet, DB: 0, Key: key, Args: [][]byte{field, b("v")}},
							codec.SetMetaEvent(0, key, m, m.ExpireAtMs)}, nil
					}
					if ok {
						return nil, nil
					}
					var exp int64
					if i%2 == 0 {
						exp = time.Now().Add(time.Hour).UnixMilli() + int64(i)
					}
					if w == 0 {
						return []codec.Event{codec.SetMetaEvent(0, key, strMeta("v", exp), 0)}, nil
					}
					return []codec.Event{{Op: codec.OpHSet, DB: 0, Key: key, Args: [][]byte{b("f"), b("v")}},
						codec.SetMetaEvent(0, key, codec.Meta{Type: codec.TypeHash, Count: 1, ExpireAtMs: exp}, 0)}, nil
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	deadline := time.Now().Add(time.Second)
	checks := 0
	for ; time.Now().Before(deadline) || checks < 5; checks++ {
		mustClean(t, check(t, s, 0))
	}
	close(stop)
	wg.Wait()
	mustClean(t, check(t, s, 0))
	t.Logf("%d checks, last sequence %d", checks, s.LastSeq())
}

// TestCheckAfterRandomCommands: a store written by a few thousand random
// commands of every family (seeded; blocking readers served by the writer
// meanwhile) has no violation.
func TestCheckAfterRandomCommands(t *testing.T) {
	dir := t.TempDir()
	f := startFill(t, broker.Options{Dir: dir})
	ctx := context.Background()
	c := f.c
	n := 3000
	if testing.Short() {
		n = 500
	}
	seed := time.Now().UnixNano()
	if v := os.Getenv("SEDIMENT_CHECK_SEED"); v != "" { // the commands again (the blocked readers race them)
		fmt.Sscan(v, &seed)
	}
	t.Logf("seed %d (SEDIMENT_CHECK_SEED)", seed)
	rnd := rand.New(rand.NewPCG(uint64(seed), 0))
	w := &randomWorkload{rnd: rnd}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 { // blocked readers, served by the writer after the writes that wake them
		wg.Add(1)
		go func() {
			defer wg.Done()
			bc := f.client()
			defer bc.Close()
			r := rand.New(rand.NewPCG(uint64(seed), 1))
			bw := &randomWorkload{rnd: r}
			for {
				select {
				case <-stop:
					return
				default:
				}
				bc.Do(ctx, bw.blocking()...)
			}
		}()
	}
	var errs int
	for i := 0; i < n; i++ {
		if rnd.IntN(20) == 0 { // MULTI/EXEC: one record for several commands
			cmds, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
				for range 2 + rnd.IntN(4) {
					p.Do(ctx, w.next()...)
					i++
				}
				return nil
			})
			for _, cmd := range cmds {
				if cmd.Err() != nil && cmd.Err() != redis.Nil {
					errs++
				}
			}
			if _, ok := err.(redis.Error); err != nil && err != redis.Nil && !ok {
				t.Fatalf("MULTI: %v", err)
			}
			continue
		}
		args := w.next()
		if err := c.Do(ctx, args...).Err(); err != nil && err != redis.Nil {
			if _, ok := err.(redis.Error); !ok {
				t.Fatalf("%q: %v", args, err)
			}
			errs++
		}
	}
	close(stop)
	wg.Wait()
	f.stop()
	rep, err := materialize.Check(materialize.Options{Dir: dir}, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d commands (%d error replies): keys %v, elements %v, %d groups, %d consumers, %d pending, %d stale TTL, %d stale IDMP",
		n, errs, rep.Keys, rep.Elements, rep.Groups, rep.Consumers, rep.Pending, rep.StaleTTL, rep.StaleIDMP)
	mustClean(t, rep)
}

// randomWorkload makes random commands over a few keys of each type.
type randomWorkload struct {
	rnd *rand.Rand
	seq int // the last stream ID's ms handed out: XADD IDs grow, so most are valid
}

func (w *randomWorkload) pick(s ...string) string { return s[w.rnd.IntN(len(s))] }
func (w *randomWorkload) n(max int) int           { return w.rnd.IntN(max) }
func (w *randomWorkload) key(prefix string) string {
	return fmt.Sprintf("%s%d", prefix, w.rnd.IntN(3))
}
func (w *randomWorkload) anyKey() string {
	return w.key(w.pick("s", "h", "S", "z", "l", "x", "{t}"))
}
func (w *randomWorkload) member() string { return fmt.Sprintf("m%d", w.rnd.IntN(40)) }
func (w *randomWorkload) id() string {
	return fmt.Sprintf("%d-%d", 1+w.rnd.IntN(w.seq+1), w.rnd.IntN(2))
}

func (w *randomWorkload) blocking() []any {
	switch w.n(4) {
	case 0:
		return []any{"BLPOP", w.key("l"), w.key("l"), 0.05}
	case 1:
		return []any{"BZPOPMIN", w.key("z"), 0.05}
	case 2:
		return []any{"BLMOVE", w.key("l"), w.key("l"), "LEFT", "RIGHT", 0.05}
	}
	return []any{"XREADGROUP", "GROUP", "g" + fmt.Sprint(w.n(2)), "b" + fmt.Sprint(w.n(2)), "COUNT", 2, "BLOCK", 50, "STREAMS", w.key("x"), ">"}
}

func (w *randomWorkload) next() []any {
	switch w.n(9) {
	case 0:
		return w.keyspace()
	case 1:
		k := w.key("s")
		switch w.n(5) {
		case 0:
			return []any{"SET", k, "v", "EX", 1 + w.n(1000)}
		case 1:
			return []any{"SET", k, "v", "PX", 1 + w.n(5)}
		case 2:
			return []any{"GETDEL", k}
		case 3:
			return []any{"SET", k, "w", "KEEPTTL"}
		}
		return []any{"INCR", k}
	case 2:
		k := w.key("h")
		switch w.n(3) {
		case 0:
			return []any{"HSET", k, w.member(), "v", w.member(), "w"}
		case 1:
			return []any{"HDEL", k, w.member(), w.member()}
		}
		return []any{"HINCRBY", k, w.member(), 1}
	case 3:
		k := w.key("S")
		switch w.n(5) {
		case 0, 1:
			return []any{"SADD", k, w.member(), w.member(), w.member()}
		case 2:
			return []any{"SREM", k, w.member(), w.member()}
		case 3:
			return []any{"SPOP", k, 1 + w.n(3)}
		}
		return []any{w.pick("SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE", "SMOVE"), w.key("S"), w.key("S"), w.key("S")}
	case 4:
		return w.zset()
	case 5:
		return w.list()
	}
	return w.stream() // 7, 8
}

func (w *randomWorkload) keyspace() []any {
	switch w.n(9) {
	case 0:
		return []any{"DEL", w.anyKey()}
	case 1:
		return []any{"RENAME", w.anyKey(), w.anyKey()}
	case 2:
		return []any{"COPY", w.anyKey(), w.anyKey(), "REPLACE"}
	case 3:
		return []any{"MOVE", w.anyKey(), 1}
	case 4:
		return []any{"PEXPIRE", w.anyKey(), 1 + w.n(3000)}
	case 5:
		return []any{"PERSIST", w.anyKey()}
	case 6:
		if w.n(20) == 0 {
			return []any{"SWAPDB", 0, 1}
		}
		return []any{"EXPIRE", w.anyKey(), 100 + w.n(1000)}
	case 7:
		if w.n(40) == 0 {
			return []any{"FLUSHDB"}
		}
		return []any{"COPY", w.anyKey(), w.anyKey(), "DB", 1}
	}
	return []any{"UNLINK", w.anyKey(), w.anyKey()}
}

func (w *randomWorkload) zset() []any {
	k := w.key("z")
	switch w.n(10) {
	case 0:
		if w.n(10) == 0 { // a large set: rank blocks
			args := []any{"ZADD", k}
			for i := range 2100 + w.n(600) {
				args = append(args, w.n(500), fmt.Sprintf("big%d", i))
			}
			return args
		}
		return []any{"ZADD", k, w.n(20), w.member(), w.n(20), w.member()}
	case 1:
		return []any{"ZADD", k, w.n(20) - 10, w.member(), "-inf", w.member(), "-0", w.member()}
	case 2:
		return []any{"ZINCRBY", k, w.n(7) - 3, w.member()}
	case 3:
		return []any{"ZREM", k, w.member(), w.member()}
	case 4:
		return []any{w.pick("ZPOPMIN", "ZPOPMAX"), k, 1 + w.n(600)}
	case 5:
		return []any{"ZREMRANGEBYRANK", k, w.n(10), w.n(1500)}
	case 6:
		return []any{"ZREMRANGEBYSCORE", k, w.n(300), w.n(500)}
	case 7:
		return []any{"ZREMRANGEBYLEX", k, "[m1", "[m3"}
	case 8:
		return []any{w.pick("ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE"), k, 2, w.key("z"), w.key("z")}
	}
	return []any{"ZRANGESTORE", k, w.key("z"), 0, w.n(3000)}
}

func (w *randomWorkload) list() []any {
	k := w.key("l")
	switch w.n(10) {
	case 0:
		args := []any{w.pick("LPUSH", "RPUSH"), k}
		for range 1 + w.n(3)*w.n(80) {
			args = append(args, w.member())
		}
		return args
	case 1:
		return []any{w.pick("LPOP", "RPOP"), k, 1 + w.n(100)}
	case 2:
		return []any{"LSET", k, w.n(10) - 5, "set"}
	case 3:
		return []any{"LINSERT", k, w.pick("BEFORE", "AFTER"), w.member(), "ins"}
	case 4:
		return []any{"LREM", k, w.n(5) - 2, w.member()}
	case 5:
		return []any{"LTRIM", k, w.n(80) - 10, w.n(200) - 50}
	case 6:
		return []any{"LMOVE", k, w.key("l"), w.pick("LEFT", "RIGHT"), w.pick("LEFT", "RIGHT")}
	case 7:
		return []any{"LMPOP", 2, k, w.key("l"), w.pick("LEFT", "RIGHT"), "COUNT", 1 + w.n(100)}
	case 8:
		return []any{"RPOPLPUSH", k, w.key("l")}
	}
	return []any{"RPUSH", k, w.member(), w.member()}
}

func (w *randomWorkload) stream() []any {
	k := w.key("x")
	g := "g" + fmt.Sprint(w.n(2))
	c := "c" + fmt.Sprint(w.n(3))
	switch w.n(16) {
	case 0, 1:
		args := []any{"XADD", k}
		switch w.n(4) {
		case 0:
			args = append(args, "IDMP", "p"+fmt.Sprint(w.n(2)), "i"+fmt.Sprint(w.n(20)))
		case 1:
			args = append(args, "MAXLEN", w.pick("=", "~"), w.n(80))
		}
		w.seq++
		if w.n(10) == 0 {
			return append(args, w.id(), "f", "v") // mostly refused: at or below the top
		}
		return append(args, fmt.Sprintf("%d-%d", w.seq, w.n(2)), "f", "v")
	case 2:
		return []any{"XDEL", k, w.id(), w.id()}
	case 3:
		return []any{"XTRIM", k, w.pick("MAXLEN", "MINID"), w.pick("=", "~"), w.pick(fmt.Sprint(w.n(80)), w.id()), w.pick("KEEPREF", "DELREF", "ACKED")}
	case 4:
		return []any{"XGROUP", "CREATE", k, g, w.pick("0", "$"), "MKSTREAM"}
	case 5:
		switch w.n(6) {
		case 0:
			return []any{"XGROUP", "DESTROY", k, g}
		case 1:
			return []any{"XGROUP", "DEADLETTER", k, g, "dlq" + fmt.Sprint(w.n(2)), "MAXDELIVERIES", w.n(4)}
		}
		return []any{"XGROUP", "SETID", k, g, w.pick("0", "$", w.id())}
	case 6:
		return []any{"XGROUP", w.pick("CREATECONSUMER", "DELCONSUMER"), k, g, c}
	case 7, 8:
		args := []any{"XREADGROUP", "GROUP", g, c, "COUNT", 1 + w.n(10)}
		if w.n(3) == 0 {
			args = append(args, "CLAIM", 1+w.n(50))
		}
		if w.n(5) == 0 {
			args = append(args, "NOACK")
		}
		return append(args, "STREAMS", k, w.pick(">", ">", "0"))
	case 9:
		return []any{"XACK", k, g, w.id(), w.id(), w.id()}
	case 10:
		return []any{"XCLAIM", k, g, c, w.n(20), w.id(), w.id()}
	case 11:
		return []any{"XAUTOCLAIM", k, g, c, w.n(20), "0", "COUNT", 1 + w.n(5)}
	case 12:
		return []any{"XNACK", k, g, w.pick("SILENT", "FAIL", "FATAL"), "IDS", 2, w.id(), w.id()}
	case 13:
		return []any{w.pick("XACKDEL", "XDELEX"), k, g, w.pick("KEEPREF", "DELREF", "ACKED"), "IDS", 1, w.id()}
	case 14:
		return []any{"XCFGSET", k, "IDMP-DURATION", 1 + w.n(3), "IDMP-MAXSIZE", 1 + w.n(5)}
	}
	w.seq += 5
	return []any{"XSETID", k, fmt.Sprintf("%d-5", w.seq)}
}
