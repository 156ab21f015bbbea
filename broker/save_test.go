package broker

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sediment-dev/sediment/materialize"
)

// infoField returns one field of an INFO section.
func infoField(t *testing.T, c *redis.Client, section, field string) string {
	t.Helper()
	for _, line := range strings.Split(c.Info(context.Background(), section).Val(), "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	t.Fatalf("INFO %s has no %s", section, field)
	return ""
}

// TestSaveWritesCheckpoint: SAVE writes <dir>/checkpoint, a data directory
// holding what was written before it and not what came after; LASTSAVE
// and INFO persistence report it; a second SAVE replaces it.
func TestSaveWritesCheckpoint(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	c := ts.client(t)
	before := c.LastSave(ctx).Val()
	if before <= 0 || before > time.Now().Unix() {
		t.Fatalf("LASTSAVE before any save: %d", before)
	}
	if n := infoField(t, c, "persistence", "rdb_saves"); n != "0" {
		t.Fatalf("rdb_saves at start: %s", n)
	}
	c.Set(ctx, "before", "1", 0)
	c.XAdd(ctx, &redis.XAddArgs{Stream: "s", Values: []string{"f", "v"}})
	c.XGroupCreate(ctx, "s", "g", "0")
	c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "c", Streams: []string{"s", ">"}})
	if err := c.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	c.Set(ctx, "after", "1", 0)
	if n := infoField(t, c, "persistence", "rdb_saves"); n != "1" {
		t.Fatalf("rdb_saves after SAVE: %s", n)
	}
	if n := infoField(t, c, "persistence", "rdb_changes_since_last_save"); n != "1" {
		t.Fatalf("rdb_changes_since_last_save after one SET: %s", n)
	}
	if s := infoField(t, c, "persistence", "rdb_last_bgsave_status"); s != "ok" {
		t.Fatalf("rdb_last_bgsave_status: %s", s)
	}
	if got := c.LastSave(ctx).Val(); got < before {
		t.Fatalf("LASTSAVE after SAVE %d < %d", got, before)
	}

	// The checkpoint serves what was there at SAVE.
	ck := startTestServer(t, filepath.Join(ts.dir, materialize.CheckpointDirName))
	cc := ck.client(t)
	if v := cc.Get(ctx, "before").Val(); v != "1" {
		t.Fatalf("checkpoint: GET before = %q", v)
	}
	if n := cc.Exists(ctx, "after").Val(); n != 0 {
		t.Fatal("checkpoint holds a key written after SAVE")
	}
	if p := cc.XPending(ctx, "s", "g").Val(); p == nil || p.Count != 1 {
		t.Fatalf("checkpoint: XPENDING = %+v, want the one delivered entry", p)
	}
	ck.Close()

	// A second SAVE replaces it.
	if err := c.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	ck = startTestServer(t, filepath.Join(ts.dir, materialize.CheckpointDirName))
	if n := ck.client(t).Exists(ctx, "after").Val(); n != 1 {
		t.Fatal("the second checkpoint lacks the key written before it")
	}
}

// TestBgsave: BGSAVE replies at once and writes the checkpoint in the
// background; inside EXEC it replies "Background saving scheduled".
func TestBgsave(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	c := ts.client(t)
	c.Set(ctx, "k", "v", 0)
	if s, err := c.BgSave(ctx).Result(); err != nil || s != "Background saving started" {
		t.Fatalf("BGSAVE: %q %v", s, err)
	}
	for deadline := time.Now().Add(10 * time.Second); infoField(t, c, "persistence", "rdb_saves") != "1"; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no checkpoint 10 s after BGSAVE")
		}
	}
	if v := infoField(t, c, "persistence", "rdb_bgsave_in_progress"); v != "0" {
		t.Fatalf("rdb_bgsave_in_progress after it ended: %s", v)
	}
	cmds, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.BgSave(ctx)
		return nil
	})
	if err != nil || cmds[0].(*redis.StatusCmd).Val() != "Background saving scheduled" {
		t.Fatalf("BGSAVE in EXEC: %v %v", cmds, err)
	}
	for deadline := time.Now().Add(10 * time.Second); infoField(t, c, "persistence", "rdb_saves") != "2"; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no checkpoint 10 s after BGSAVE in EXEC")
		}
	}
	ck := startTestServer(t, filepath.Join(ts.dir, materialize.CheckpointDirName))
	if v := ck.client(t).Get(ctx, "k").Val(); v != "v" {
		t.Fatalf("checkpoint after BGSAVE: GET k = %q", v)
	}
}

// The replies both servers give to bad SAVE, BGSAVE and LASTSAVE calls
// and to SAVE inside MULTI (conformance cases: RESP2 and RESP3).
func init() {
	conformanceCases = append(conformanceCases, confCase{name: "save errors", steps: []confStep{
		cc("SAVE", "x"),
		cc("BGSAVE", "x"),
		cc("BGSAVE", "SCHEDULE", "x"),
		cc("LASTSAVE", "x"),
		cc("MULTI"),
		cc("SAVE"),
		cc("SET", "k", "v"),
		cc("EXEC"),
	}})
}

// TestShutdownSave: SHUTDOWN SAVE writes the checkpoint before the
// server stops.
func TestShutdownSave(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	c := ts.client(t)
	c.Set(ctx, "k", "v", 0)
	c.Do(ctx, "SHUTDOWN", "SAVE") // no reply: the connection closes
	ts.Close()
	ck := startTestServer(t, filepath.Join(ts.dir, materialize.CheckpointDirName))
	if v := ck.client(t).Get(ctx, "k").Val(); v != "v" {
		t.Fatalf("checkpoint of SHUTDOWN SAVE: GET k = %q", v)
	}
}
