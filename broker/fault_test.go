package broker

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestStorageFaultRefusesWrites: while a storage fault is set (here: the
// reserve of free disk space raised above what any disk has), the server
// answers as Redis 7.0 does after a failed AOF write (checked by hand
// against redis-server 7.0.15 on a full tmpfs; docs/rfcs/
// 20261127_storage_faults.md): commands with the write flag, PING, and EXEC
// of a transaction holding a write get MISCONF; a write queued in MULTI
// makes EXEC reply EXECABORT; reads, transactions of reads, ECHO, PUBLISH
// and SELECT are served, and the data written before is intact. Lowering
// the reserve clears the fault at once.
func TestStorageFaultRefusesWrites(t *testing.T) {
	ctx := context.Background()
	ts := newTestServer(t)
	c := ts.client(t)
	mustStr(t, c, "OK", "SET", "k", "v")
	mustDo(t, c, "XADD", "s", "1-0", "f", "v")
	tx := c.Conn()
	defer tx.Close()
	if err := tx.Do(ctx, "MULTI").Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := tx.Do(ctx, "SET", "queued", "1").Result(); err != nil || v != "QUEUED" {
		t.Fatalf("SET in MULTI = %v, %v", v, err)
	}

	mustStr(t, c, "OK", "CONFIG", "SET", "min-free-disk", "1000000000gb")
	const misconf = "MISCONF Errors writing to the change log: no space left on device ("
	refused := func(c interface {
		Do(context.Context, ...any) *redis.Cmd
	}, args ...any) {
		t.Helper()
		err := c.Do(ctx, args...).Err()
		if err == nil || !strings.HasPrefix(err.Error(), misconf) || !strings.HasSuffix(err.Error(), "below the reserve of 1024000000000 MiB)") {
			t.Fatalf("%v: %v, want %q...", args, err, misconf)
		}
	}
	// EXEC of the transaction queued before the fault: discarded.
	if err := tx.Do(ctx, "EXEC").Err(); err == nil || !strings.HasPrefix(err.Error(), "EXECABORT Transaction discarded because of: "+misconf) {
		t.Fatalf("EXEC of a write: %v", err)
	}
	if err := tx.Do(ctx, "GET", "queued").Err(); err != redis.Nil {
		t.Fatalf("GET of the discarded transaction's key: %v, want nil", err)
	}
	for _, args := range [][]any{
		{"SET", "a", "1"}, {"DEL", "k"}, {"INCR", "n"}, {"EXPIRE", "k", "100"}, {"HSET", "h", "f", "v"},
		{"XADD", "s", "*", "f", "v"}, {"XGROUP", "CREATE", "s", "g", "0"}, {"FLUSHALL"}, {"PING"},
	} {
		refused(c, args...)
	}
	mustStr(t, c, "v", "GET", "k")
	if n := len(mustDo(t, c, "XRANGE", "s", "-", "+").([]any)); n != 1 {
		t.Fatalf("XRANGE: %d entries, want 1", n)
	}
	mustStr(t, c, "x", "ECHO", "x")
	mustInt(t, c, 0, "PUBLISH", "ch", "m")
	if err := tx.Do(ctx, "SELECT", "1").Err(); err != nil {
		t.Fatalf("SELECT: %v", err)
	}
	if err := tx.Do(ctx, "SELECT", "0").Err(); err != nil {
		t.Fatalf("SELECT: %v", err)
	}
	// A write in MULTI aborts the EXEC; a transaction of reads runs.
	tx.Do(ctx, "MULTI")
	refused(tx, "SET", "a", "1")
	if err := tx.Do(ctx, "EXEC").Err(); err == nil || err.Error() != "EXECABORT Transaction discarded because of previous errors." {
		t.Fatalf("EXEC after a refused write: %v", err)
	}
	tx.Do(ctx, "MULTI")
	tx.Do(ctx, "GET", "k")
	if v, err := tx.Do(ctx, "EXEC").Result(); err != nil || len(v.([]any)) != 1 || v.([]any)[0] != "v" {
		t.Fatalf("EXEC of a read: %v, %v", v, err)
	}
	// A pipeline gets each reply in its place.
	cmds, _ := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "a", "1", 0)
		p.Get(ctx, "k")
		p.Set(ctx, "b", "2", 0)
		return nil
	})
	if !strings.HasPrefix(errText(cmds[0].Err()), misconf) || cmds[1].(*redis.StringCmd).Val() != "v" || !strings.HasPrefix(errText(cmds[2].Err()), misconf) {
		t.Fatalf("pipeline: %v", cmds)
	}
	info := mustDo(t, c, "INFO", "persistence").(string)
	for _, want := range []string{"aof_last_write_status:err", "sediment_storage_fault:change log: no space left on device (", "sediment_min_free_disk:1073741824000000000"} {
		if !strings.Contains(info, want) {
			t.Fatalf("INFO persistence lacks %q:\n%s", want, info)
		}
	}

	mustStr(t, c, "OK", "CONFIG", "SET", "min-free-disk", "0")
	mustStr(t, c, "OK", "SET", "k", "v2")
	mustStr(t, c, "PONG", "PING")
	info = mustDo(t, c, "INFO", "persistence").(string)
	for _, want := range []string{"aof_last_write_status:ok", "sediment_storage_fault:none", "sediment_min_free_disk:0"} {
		if !strings.Contains(info, want) {
			t.Fatalf("INFO persistence lacks %q after the fault cleared:\n%s", want, info)
		}
	}
	if v := mustDo(t, c, "CONFIG", "GET", "min-free-disk").([]any); len(v) != 2 || v[1] != "0" {
		t.Fatalf("CONFIG GET min-free-disk = %v", v)
	}
	mustStr(t, c, "OK", "CONFIG", "SET", "min-free-disk", "64mb")
	mustStr(t, c, "OK", "SET", "k", "v3") // this disk has 64 MiB free
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
