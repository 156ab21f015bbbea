package broker

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sediment-dev/sediment/materialize"
)

// TestPipelinedLargeReplies: a pipeline whose replies pass flushAt is
// flushed part way (conn.serve), so every reply must still arrive whole and
// in request order, writes interleaved with the reads included, and under
// appendfsync always a write's reply still waits for its fsync.
func TestPipelinedLargeReplies(t *testing.T) {
	for _, policy := range []materialize.SyncPolicy{materialize.SyncEverySec, materialize.SyncAlways} {
		t.Run(policy.String(), func(t *testing.T) {
			ts := newTestServer(t, func(o *Options) { o.AppendFsync = policy })
			c := ts.client(t)
			ctx := context.Background()
			val := func(i int) string { return strings.Repeat(strconv.Itoa(i%10), 60_000+i) }
			pipe := c.Pipeline()
			var gets []*redis.StringCmd
			var sets []*redis.StatusCmd
			for i := 0; i < 40; i++ {
				sets = append(sets, pipe.Set(ctx, "k"+strconv.Itoa(i), val(i), 0))
				gets = append(gets, pipe.Get(ctx, "k"+strconv.Itoa(i)))
				if i > 0 {
					gets = append(gets, pipe.Get(ctx, "k"+strconv.Itoa(i-1)))
				}
			}
			if _, err := pipe.Exec(ctx); err != nil {
				t.Fatal(err)
			}
			for i, s := range sets {
				if s.Val() != "OK" {
					t.Fatalf("SET %d replied %q", i, s.Val())
				}
			}
			for j, g := range gets {
				i := (j + 1) / 2 // gets: k0, then k(i), k(i-1) for each i
				if j > 0 && j%2 == 0 {
					i--
				}
				if got := g.Val(); got != val(i) {
					t.Fatalf("GET %d (k%d): %d bytes, want %d", j, i, len(got), len(val(i)))
				}
			}
		})
	}
}
