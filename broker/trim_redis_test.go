package broker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestRedisStreamTrimTests runs the trimming tests of Redis 7.0's
// tests/unit/type/stream.tcl that need no CONFIG SET of
// stream-node-max-entries (Sediment's node size is fixed at Redis's default
// of 100), with the same assertions. Before trims sought from the stream's
// first ID, "XADD with MAXLEN option" alone took 35 s here.
func TestRedisStreamTrimTests(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(7, 0))
	field := func() string {
		if r.Float64() < 0.9 {
			return "xitem"
		}
		return "yitem"
	}
	xlen := func(key string) int64 { return mustDo(t, c, "XLEN", key).(int64) }
	values := func(key string) []string {
		msgs, err := c.XRange(ctx, key, "-", "+").Result()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range msgs {
			for _, v := range m.Values {
				out = append(out, fmt.Sprint(v))
			}
		}
		return out
	}
	want := func(name string, got []string, from, n int) {
		t.Helper()
		if len(got) != n {
			t.Fatalf("%s: %d entries %v, want %d", name, len(got), got, n)
		}
		for i, v := range got {
			if v != fmt.Sprint(from+i) {
				t.Fatalf("%s: values %v, want %d.. in order", name, got, from)
			}
		}
	}

	t.Run("XADD with MAXLEN option", func(t *testing.T) {
		mustDo(t, c, "DEL", "mystream")
		for j := range 1000 {
			mustDo(t, c, "XADD", "mystream", "MAXLEN", 5, "*", field(), j)
		}
		want("MAXLEN 5", values("mystream"), 995, 5)
	})
	t.Run("XADD with MAXLEN option and the '=' argument", func(t *testing.T) {
		mustDo(t, c, "DEL", "mystream")
		for j := range 1000 {
			mustDo(t, c, "XADD", "mystream", "MAXLEN", "=", 5, "*", field(), j)
		}
		if n := xlen("mystream"); n != 5 {
			t.Fatalf("XLEN %d, want 5", n)
		}
	})
	t.Run("XADD with MAXLEN option and the '~' argument", func(t *testing.T) {
		mustDo(t, c, "DEL", "mystream")
		for j := range 1000 {
			mustDo(t, c, "XADD", "mystream", "MAXLEN", "~", 555, "*", field(), j)
		}
		if n := xlen("mystream"); n != 600 {
			t.Fatalf("XLEN %d, want 600", n)
		}
	})
	t.Run("XADD with MINID option", func(t *testing.T) {
		mustDo(t, c, "DEL", "mystream")
		for j := 1; j < 1001; j++ {
			minid := 1000
			if j >= 5 {
				minid = j - 5
			}
			mustDo(t, c, "XADD", "mystream", "MINID", minid, j, field(), j)
		}
		want("MINID", values("mystream"), 995, 6)
	})
	t.Run("XTRIM with MINID option", func(t *testing.T) {
		mustDo(t, c, "DEL", "mystream")
		for j := 1; j <= 5; j++ {
			mustDo(t, c, "XADD", "mystream", fmt.Sprint(j, "-0"), "f", "v")
		}
		mustDo(t, c, "XTRIM", "mystream", "MINID", "=", "3-0")
		msgs, _ := c.XRange(ctx, "mystream", "-", "+").Result()
		if len(msgs) != 3 || msgs[0].ID != "3-0" || msgs[2].ID != "5-0" {
			t.Fatalf("XRANGE = %v", msgs)
		}
	})
	t.Run("XTRIM with MINID option, big delta from master record", func(t *testing.T) {
		mustDo(t, c, "DEL", "mystream")
		for _, id := range []string{"1-0", "1641544570597-0", "1641544570597-1"} {
			mustDo(t, c, "XADD", "mystream", id, "f", "v")
		}
		mustDo(t, c, "XTRIM", "mystream", "MINID", "1641544570597-0")
		msgs, _ := c.XRange(ctx, "mystream", "-", "+").Result()
		if len(msgs) != 2 || msgs[0].ID != "1641544570597-0" || msgs[1].ID != "1641544570597-1" {
			t.Fatalf("XRANGE = %v", msgs)
		}
	})
	t.Run("XADD with LIMIT delete entries no more than limit", func(t *testing.T) {
		mustDo(t, c, "DEL", "yourstream")
		for range 3 {
			mustDo(t, c, "XADD", "yourstream", "*", "xitem", "v")
		}
		mustDo(t, c, "XADD", "yourstream", "MAXLEN", "~", 0, "LIMIT", 1, "*", "xitem", "v")
		if n := xlen("yourstream"); n != 4 {
			t.Fatalf("XLEN %d, want 4", n)
		}
	})
	t.Run("XTRIM with MAXLEN option basic test", func(t *testing.T) {
		mustDo(t, c, "DEL", "mystream")
		for j := range 1000 {
			mustDo(t, c, "XADD", "mystream", "*", field(), j)
		}
		for _, step := range []struct {
			args []any
			want int64
		}{
			{[]any{"MAXLEN", 666}, 666},
			{[]any{"MAXLEN", "=", 555}, 555},
			{[]any{"MAXLEN", "~", 444}, 500},
			{[]any{"MAXLEN", "~", 400}, 400},
		} {
			mustDo(t, c, append([]any{"XTRIM", "mystream"}, step.args...)...)
			if n := xlen("mystream"); n != step.want {
				t.Fatalf("XTRIM %v: XLEN %d, want %d", step.args, n, step.want)
			}
		}
	})
	t.Run("XTRIM without ~ and with LIMIT", func(t *testing.T) {
		mustDo(t, c, "DEL", "mystream")
		mustDo(t, c, "XADD", "mystream", "*", "xitem", "v")
		if _, err := do(t, c, "XTRIM", "mystream", "MAXLEN", 1, "LIMIT", 30); err == nil {
			t.Fatal("XTRIM MAXLEN 1 LIMIT 30 succeeded")
		}
	})
	t.Run("XADD can CREATE an empty stream", func(t *testing.T) {
		mustDo(t, c, "DEL", "mystream")
		mustDo(t, c, "XADD", "mystream", "MAXLEN", 0, "*", "a", "b")
		info, err := c.XInfoStream(ctx, "mystream").Result()
		if err != nil || info.Length != 0 {
			t.Fatalf("XINFO STREAM = %+v, %v", info, err)
		}
	})
	_ = redis.Nil
}
