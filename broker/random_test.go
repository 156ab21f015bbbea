package broker

import (
	"context"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestRandomPicksRepeatInChunks: HRANDFIELD, SRANDMEMBER and ZRANDMEMBER
// with a negative count stream their picks in chunks (elements.Repeat):
// a reply of more picks than one chunk holds comes whole, every pick an
// element of the collection with its own value or score.
func TestRandomPicksRepeatInChunks(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	ctx := context.Background()
	const picks = 150_000 // more than two chunks of 65,536
	c.HSet(ctx, "h", "a", "1", "b", "2", "c", "3")
	c.SAdd(ctx, "s", "a", "b", "c")
	c.ZAdd(ctx, "z", redis.Z{Score: 1, Member: "a"}, redis.Z{Score: 2, Member: "b"}, redis.Z{Score: 3, Member: "c"})
	want := map[string]string{"a": "1", "b": "2", "c": "3"}
	check := func(name string, got []string, pairs bool) {
		t.Helper()
		step := 1
		if pairs {
			step = 2
		}
		if len(got) != picks*step {
			t.Fatalf("%s: %d elements, want %d", name, len(got), picks*step)
		}
		seen := map[string]int{}
		for i := 0; i < len(got); i += step {
			v, ok := want[got[i]]
			if !ok || (pairs && got[i+1] != v) {
				t.Fatalf("%s: pick %d = %q (%v)", name, i/step, got[i:i+step], pairs)
			}
			seen[got[i]]++
		}
		for m := range want {
			if seen[m] < picks/4 { // each is a third of the picks, give or take
				t.Fatalf("%s: %q picked %d times of %d", name, m, seen[m], picks)
			}
		}
	}
	strs := func(args ...any) []string {
		t.Helper()
		v, err := c.Do(ctx, args...).StringSlice()
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return v
	}
	check("HRANDFIELD", strs("HRANDFIELD", "h", -picks), false)
	check("HRANDFIELD WITHVALUES", strs("HRANDFIELD", "h", -picks, "WITHVALUES"), true)
	check("SRANDMEMBER", strs("SRANDMEMBER", "s", -picks), false)
	check("ZRANDMEMBER", strs("ZRANDMEMBER", "z", -picks), false)
	check("ZRANDMEMBER WITHSCORES", strs("ZRANDMEMBER", "z", -picks, "WITHSCORES"), true)
	for _, cmd := range [][]any{{"HRANDFIELD", "nokey", -5}, {"HRANDFIELD", "nokey", -5, "WITHVALUES"}, {"SRANDMEMBER", "nokey", -5}, {"ZRANDMEMBER", "nokey", -5, "WITHSCORES"}} {
		if got := strs(cmd...); len(got) != 0 {
			t.Fatalf("%v = %q, want an empty array", cmd, got)
		}
	}
}

// TestZRandMemberOnRankedSet: on a set with rank blocks, a few picks seek
// their ranks (rzset.atRanks) and many walk once; both reach every part of
// the set.
func TestZRandMemberOnRankedSet(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t)
	ctx := context.Background()
	const n = 6000 // ranked: more than rzset.RankOn
	zs := make([]redis.Z, n)
	for i := range zs {
		zs[i] = redis.Z{Score: float64(i), Member: "m" + strconv.Itoa(i)}
	}
	if err := c.ZAdd(ctx, "z", zs...).Err(); err != nil {
		t.Fatal(err)
	}
	lo, hi := n, -1
	for i := 0; i < 300; i++ {
		ws, err := c.ZRandMemberWithScores(ctx, "z", 2).Result()
		if err != nil || len(ws) != 2 || ws[0].Member == ws[1].Member {
			t.Fatalf("ZRANDMEMBER z 2 WITHSCORES = %v, %v", ws, err)
		}
		for _, w := range ws {
			r := int(w.Score)
			if w.Member != "m"+strconv.Itoa(r) {
				t.Fatalf("pick %v: member and score do not match", w)
			}
			lo, hi = min(lo, r), max(hi, r)
		}
	}
	if lo > n/10 || hi < n-n/10 {
		t.Fatalf("600 picks spanned ranks %d..%d of %d", lo, hi, n)
	}
	all, err := c.ZRandMember(ctx, "z", n/2).Result()
	if err != nil || len(all) != n/2 {
		t.Fatalf("ZRANDMEMBER z %d: %d members, %v", n/2, len(all), err)
	}
	distinct := map[string]bool{}
	for _, m := range all {
		distinct[m] = true
	}
	if len(distinct) != n/2 {
		t.Fatalf("ZRANDMEMBER z %d: %d distinct members", n/2, len(distinct))
	}
}
