package lcs

// The differential test: random string pairs go to a real redis-server and
// through Compute, in every LCS mode and in RESP2 and RESP3, and Redis's
// reply must equal the one rendered from the Result.

import (
	"context"
	"fmt"
	"github.com/sediment-dev/sediment/internal/redistest"
	"math/rand"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// replyForm selects one LCS command line: the options after the two keys.
type replyForm struct {
	len, idx, withMatchLen bool
	minMatchLen            *int64 // nil: no MINMATCHLEN
}

// args returns the LCS command for keys ka and kb.
func (f replyForm) args(ka, kb string) []any {
	args := []any{"LCS", ka, kb}
	if f.len {
		args = append(args, "LEN")
	}
	if f.idx {
		args = append(args, "IDX")
	}
	if f.minMatchLen != nil {
		args = append(args, "MINMATCHLEN", strconv.FormatInt(*f.minMatchLen, 10))
	}
	if f.withMatchLen {
		args = append(args, "WITHMATCHLEN")
	}
	return args
}

// options returns what the command layer would pass to Compute for f.
func (f replyForm) options() Options {
	o := Options{Idx: f.idx}
	if f.minMatchLen != nil {
		o.MinMatchLen = *f.minMatchLen
	}
	return o
}

// forms returns the six command shapes the brief asks for, with MINMATCHLEN k.
func forms(k int64) []replyForm {
	return []replyForm{
		{},
		{len: true},
		{idx: true},
		{idx: true, minMatchLen: &k},
		{idx: true, withMatchLen: true},
		{idx: true, minMatchLen: &k, withMatchLen: true},
	}
}

// render shapes res the way go-redis returns Redis's LCS reply for f under
// protocol proto (2 or 3):
//
//	plain        bulk string: the LCS, "" when empty (never null)
//	LEN          integer: Len
//	IDX, RESP2   array of 4: "matches", [match...], "len", Len
//	IDX, RESP3   map of 2:   "matches" → [match...], "len" → Len
//	match        array of 2: [A0, A1], [B0, B1]; of 3 with WITHMATCHLEN: ..., Len
func render(res Result, f replyForm, proto int) any {
	switch {
	case f.idx:
		matches := make([]any, 0, len(res.Matches))
		for _, m := range res.Matches {
			one := []any{
				[]any{int64(m.A[0]), int64(m.A[1])},
				[]any{int64(m.B[0]), int64(m.B[1])},
			}
			if f.withMatchLen {
				one = append(one, int64(m.Len))
			}
			matches = append(matches, one)
		}
		if proto == 3 {
			return map[any]any{"matches": matches, "len": int64(res.Len)}
		}
		return []any{"matches", matches, "len", int64(res.Len)}
	case f.len:
		return int64(res.Len)
	default:
		return string(res.LCS)
	}
}

// redisText is Redis 7.0's error reply for each of Compute's errors.
var redisText = map[error]string{
	ErrTooLong:  "ERR String too long for LCS",
	ErrTooBig:   "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len",
	ErrNoMemory: "ERR Insufficient memory, failed allocating transient memory for LCS",
}

// pair is one differential case: the strings of two keys, and the
// MINMATCHLEN value to try.
type pair struct {
	a, b    string
	missing bool // a is empty and left unset in Redis (a missing key)
	k       int64
}

func TestComputeAgainstRedis(t *testing.T) {
	addr := startRedis(t)
	var pairs []pair
	for _, seed := range []int64{1, 2, 3} {
		rng := rand.New(rand.NewSource(seed))
		for n := 0; n < 1000; n++ {
			pairs = append(pairs, randomPair(rng, rng.Intn(61), false))
		}
	}
	// A few long pairs, both strings exactly 2000 bytes: each table costs
	// about 0.2 s under -race.
	rng := rand.New(rand.NewSource(4))
	for n := 0; n < 4; n++ {
		pairs = append(pairs, randomPair(rng, 2000, true))
	}

	// One Compute per distinct Options of a pair, shared by its forms and
	// by both protocols.
	results := make([]map[Options]Result, len(pairs))
	many, filtered := 0, 0
	for i, p := range pairs {
		results[i] = map[Options]Result{}
		for _, f := range forms(p.k) {
			o := f.options()
			if _, ok := results[i][o]; ok {
				continue
			}
			res, err := Compute([]byte(p.a), []byte(p.b), o)
			if err != nil {
				t.Fatalf("Compute(%q, %q, %+v): %v", p.a, p.b, o, err)
			}
			results[i][o] = res
		}
		all := results[i][Options{Idx: true}].Matches
		if len(all) > 1 {
			many++
		}
		if len(results[i][Options{Idx: true, MinMatchLen: p.k}].Matches) < len(all) {
			filtered++
		}
	}
	checkPairs(t, newClient(t, addr, 2), 2, pairs, results, 1)
	// RESP3 changes only the IDX reply's outer container (a map): every
	// fourth pair is plenty.
	checkPairs(t, newClient(t, addr, 3), 3, pairs, results, 4)
	t.Logf("%d pairs × 6 forms in RESP2, a quarter of them in RESP3; %d with several matches, %d where MINMATCHLEN drops some",
		len(pairs), many, filtered)
	if many < len(pairs)/4 || filtered < len(pairs)/10 {
		t.Errorf("the generator no longer tests much: %d pairs, %d with several matches, %d filtered", len(pairs), many, filtered)
	}
}

// checkPairs runs every form of every step-th pair on c, pipelined, and
// compares the replies with results, rendered for proto.
func checkPairs(t *testing.T, c *redis.Client, proto int, pairs []pair, results []map[Options]Result, step int) {
	t.Helper()
	ctx := context.Background()
	batch := 200 * step
	type pending struct {
		i    int // index in pairs
		f    replyForm
		args []any
		cmd  *redis.Cmd
	}
	for start := 0; start < len(pairs); start += batch {
		pipe := c.Pipeline()
		var sent []pending
		for i := start; i < min(start+batch, len(pairs)); i += step {
			ka := "k1"
			if pairs[i].missing {
				ka = "missing"
			}
			pipe.Do(ctx, "MSET", "k1", pairs[i].a, "k2", pairs[i].b)
			for _, f := range forms(pairs[i].k) {
				args := f.args(ka, "k2")
				sent = append(sent, pending{i: i, f: f, args: args, cmd: pipe.Do(ctx, args...)})
			}
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatalf("pipeline: %v", err)
		}
		for _, q := range sent {
			got, err := q.cmd.Result()
			if err != nil {
				t.Fatalf("%s: %v", fmtArgs(q.args), err)
			}
			p := pairs[q.i]
			if want := render(results[q.i][q.f.options()], q.f, proto); !reflect.DeepEqual(got, want) {
				t.Errorf("RESP%d a=%q b=%q %s\n--- redis:   %#v\n--- compute: %#v", proto, p.a, p.b, fmtArgs(q.args), got, want)
			}
		}
	}
}

// TestComputeTableLimitAgainstRedis checks the table limit at its boundary
// against Redis with proto-max-bulk-len at its minimum, 1 MiB, in the LEN
// and IDX forms.
func TestComputeTableLimitAgainstRedis(t *testing.T) {
	addr := startRedis(t)
	c := newClient(t, addr, 2)
	ctx := context.Background()
	const limit = 1 << 20
	if err := c.Do(ctx, "CONFIG", "SET", "proto-max-bulk-len", strconv.Itoa(limit)).Err(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ alen, blen int }{
		{511, 511}, {512, 511}, {511, 512}, {512, 512}, {0, 262143}, {0, 262144}, {1, 131071}, {1, 131072}, {300, 2000},
	} {
		a, b := strings.Repeat("x", tc.alen), strings.Repeat("xy", tc.blen)[:tc.blen]
		ka := "k1"
		if tc.alen == 0 {
			ka = "missing"
		}
		if err := c.Do(ctx, "MSET", "k1", a, "k2", b).Err(); err != nil {
			t.Fatal(err)
		}
		for _, f := range []replyForm{{len: true}, {idx: true}} {
			args := f.args(ka, "k2")
			got, err := c.Do(ctx, args...).Result()
			res, cerr := Compute([]byte(a), []byte(b), Options{Idx: f.idx, MaxTable: limit})
			switch {
			case cerr != nil:
				if err == nil || err.Error() != redisText[cerr] {
					t.Errorf("%d×%d %s: Compute: %v; redis: %#v, %v", tc.alen, tc.blen, fmtArgs(args), cerr, got, err)
				}
			case err != nil:
				t.Errorf("%d×%d %s: redis: %v; Compute: Len %d", tc.alen, tc.blen, fmtArgs(args), err, res.Len)
			case !reflect.DeepEqual(got, render(res, f, 2)):
				t.Errorf("%d×%d %s: redis %#v; Compute %#v", tc.alen, tc.blen, fmtArgs(args), got, render(res, f, 2))
			}
		}
	}
}

// randomPair returns two strings of up to n bytes (exactly n with exact)
// over a small alphabet, often with b an edited copy of a so that long
// matches occur.
func randomPair(rng *rand.Rand, n int, exact bool) pair {
	alpha := []string{"ab", "abc", "abcd", "\x00\x01", "\x00\xff\x80a", ""}[rng.Intn(6)]
	if alpha == "" {
		alpha = string(randBytes(rng, 256))
	}
	size := func() int {
		if exact {
			return n
		}
		return rng.Intn(n + 1)
	}
	a := randString(rng, alpha, size())
	var b []byte
	if rng.Intn(2) == 0 {
		b = randString(rng, alpha, size())
	} else {
		b = edit(rng, a, alpha, n)
		for exact && len(b) < n {
			b = append(b, alpha[rng.Intn(len(alpha))])
		}
	}
	if rng.Intn(2) == 0 {
		a, b = b, a
	}
	ks := []int64{-1, 0, 1, 2, 3, 4, 5, 8, 1 << 40}
	return pair{a: string(a), b: string(b), missing: len(a) == 0 && rng.Intn(2) == 0, k: ks[rng.Intn(len(ks))]}
}

// edit returns a copy of s with a few random insertions, deletions and
// substitutions, at most n bytes long.
func edit(rng *rand.Rand, s []byte, alpha string, n int) []byte {
	out := append([]byte(nil), s...)
	for e := rng.Intn(len(s)/4 + 2); e > 0; e-- {
		p := rng.Intn(len(out) + 1)
		c := alpha[rng.Intn(len(alpha))]
		switch rng.Intn(3) {
		case 0:
			out = append(out[:p], append([]byte{c}, out[p:]...)...)
		case 1:
			if p < len(out) {
				out = append(out[:p], out[p+1:]...)
			}
		default:
			if p < len(out) {
				out[p] = c
			}
		}
	}
	return out[:min(len(out), n)]
}

// randBytes returns n distinct random bytes.
func randBytes(rng *rand.Rand, n int) []byte {
	perm := rng.Perm(256)[:n]
	out := make([]byte, n)
	for i, v := range perm {
		out[i] = byte(v)
	}
	return out
}

func fmtArgs(args []any) string {
	s := make([]string, len(args))
	for i, a := range args {
		s[i] = fmt.Sprint(a)
	}
	return strings.Join(s, " ")
}

// newClient returns a go-redis client of addr speaking RESP proto, closed
// when the test ends.
func newClient(t *testing.T, addr string, proto int) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: proto, DisableIdentity: true, MaxRetries: -1, ReadTimeout: 10 * time.Second})
	t.Cleanup(func() { c.Close() })
	return c
}

// startRedis runs redis-server until the test ends and returns its
// address (redistest.Start).
func startRedis(t *testing.T) string { return redistest.Start(t) }
