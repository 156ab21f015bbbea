package ldouble

import (
	"context"
	"errors"
	"fmt"
	"github.com/sediment-dev/sediment/internal/redistest"
	"math/big"
	"math/rand"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// HINCRBYFLOAT's own errors, Redis 7.0's texts.
const (
	errIncrNaNInf  = "ERR value is NaN or Infinity"
	errHashNotFlot = "ERR hash value is not a float"
)

// hincrByFloat computes HINCRBYFLOAT over the field's text cur (nil: no
// field) as Redis 7.0 does: the increment is checked first.
func hincrByFloat(cur []byte, incr []byte) (string, string) {
	inc, ok := Parse(incr)
	if !ok {
		return "", errNotFloat
	}
	if inc.IsInf() {
		return "", errIncrNaNInf
	}
	v := newFloat()
	if cur != nil {
		if v, ok = Parse(cur); !ok {
			return "", errHashNotFlot
		}
	}
	sum, inf := Add(v, inc)
	if inf {
		return "", errNaNInf
	}
	return string(Format(sum)), ""
}

// diffCase is one INCRBYFLOAT (or HINCRBYFLOAT) on a fresh key.
type diffCase struct {
	cur  []byte // the value set first; nil: the key (or field) is missing
	incr []byte
	hash bool
}

// TestIncrByFloatDifferential sends random INCRBYFLOAT and HINCRBYFLOAT
// cases, from fixed seeds, to a real redis-server and compares every
// reply, value or exact error text, and the value stored afterwards, with
// what Parse, Add and Format compute.
func TestIncrByFloatDifferential(t *testing.T) {
	rc := redisClient(t)
	ctx := context.Background()

	counts := map[string]int{}
	for _, seed := range []int64{1, 2, 3} {
		rng := rand.New(rand.NewSource(seed))
		cases := make([]diffCase, 2000)
		for i := range cases {
			cases[i] = randomCase(rng)
		}
		for start := 0; start < len(cases); start += 500 {
			batch := cases[start:min(start+500, len(cases))]
			pipe := rc.Pipeline()
			incrs := make([]*redis.Cmd, len(batch))
			gets := make([]*redis.Cmd, len(batch))
			for i, c := range batch {
				key := fmt.Sprintf("k:%d:%d", seed, start+i)
				switch {
				case c.hash:
					pipe.Do(ctx, "HSET", key, "other", "1")
					if c.cur != nil {
						pipe.Do(ctx, "HSET", key, "f", string(c.cur))
					}
					incrs[i] = pipe.Do(ctx, "HINCRBYFLOAT", key, "f", string(c.incr))
					gets[i] = pipe.Do(ctx, "HGET", key, "f")
				default:
					if c.cur != nil {
						pipe.Do(ctx, "SET", key, string(c.cur))
					}
					incrs[i] = pipe.Do(ctx, "INCRBYFLOAT", key, string(c.incr))
					gets[i] = pipe.Do(ctx, "GET", key)
				}
			}
			if _, err := pipe.Exec(ctx); err != nil && !isRedisError(err) {
				t.Fatalf("pipeline: %v", err)
			}
			for i, c := range batch {
				var want, wantErr string
				if c.hash {
					want, wantErr = hincrByFloat(c.cur, c.incr)
				} else {
					want, wantErr = incrByFloat(c.cur, c.incr)
				}
				counts[outcome(c.hash, wantErr)]++
				got, gotErr := replyText(t, incrs[i])
				if gotErr != wantErr || got != want {
					t.Errorf("seed %d case %d: %s %s + %s:\n redis %s\n ours  %s",
						seed, start+i, cmdName(c.hash), show(c.cur), show(c.incr),
						showReply(got, gotErr), showReply(want, wantErr))
					continue
				}
				// The reply is what is stored; on error the value is left
				// as it was.
				stored, storedErr := replyText(t, gets[i])
				wantStored := want
				if wantErr != "" {
					wantStored = string(c.cur)
				}
				if storedErr != "" || stored != wantStored || (c.cur == nil && wantErr != "" && gets[i].Val() != nil) {
					t.Errorf("seed %d case %d: stored %s, want %q", seed, start+i, showReply(stored, storedErr), wantStored)
				}
			}
		}
	}
	t.Logf("outcomes: %v", counts)
}

// TestIncrByFloatChains increments one key many times, so that each step
// parses the text the previous step formatted, and compares each reply.
func TestIncrByFloatChains(t *testing.T) {
	rc := redisClient(t)
	ctx := context.Background()
	for _, seed := range []int64{10, 11, 12, 13} {
		rng := rand.New(rand.NewSource(seed))
		key := fmt.Sprintf("chain:%d", seed)
		incrs := make([][]byte, 300)
		for i := range incrs {
			switch rng.Intn(4) {
			case 0:
				incrs[i] = []byte("0.1")
			case 1:
				incrs[i] = []byte(randDecimal(rng, 1+rng.Intn(3), 1+rng.Intn(20)))
			case 2:
				incrs[i] = []byte(fmt.Sprintf("%de%d", rng.Intn(2000)-1000, rng.Intn(40)-30))
			default:
				incrs[i] = randomNumber(rng)
			}
		}
		pipe := rc.Pipeline()
		cmds := make([]*redis.Cmd, len(incrs))
		for i, inc := range incrs {
			cmds[i] = pipe.Do(ctx, "INCRBYFLOAT", key, string(inc))
		}
		if _, err := pipe.Exec(ctx); err != nil && !isRedisError(err) {
			t.Fatalf("pipeline: %v", err)
		}
		var cur []byte
		for i, inc := range incrs {
			want, wantErr := incrByFloat(cur, inc)
			got, gotErr := replyText(t, cmds[i])
			if got != want || gotErr != wantErr {
				t.Fatalf("seed %d step %d: %s + %s:\n redis %s\n ours  %s",
					seed, i, show(cur), show(inc), showReply(got, gotErr), showReply(want, wantErr))
			}
			if wantErr == "" {
				cur = []byte(want)
			}
		}
	}
}

// ---- random operands ---------------------------------------------------------

// randomCase draws a (current, increment) pair: mostly independent random
// numbers, sometimes a missing key, an exact cancellation or two operands
// of the same magnitude.
func randomCase(rng *rand.Rand) diffCase {
	c := diffCase{hash: rng.Intn(4) == 0}
	switch r := rng.Intn(20); {
	case r == 0:
		c.incr = randomNumber(rng)
	case r == 1: // x + -x
		c.cur = randomNumber(rng)
		c.incr = negate(c.cur)
	case r <= 4: // same magnitude, many digits: rounding of the sum
		e := rng.Intn(60) - 30
		c.cur = []byte(fmt.Sprintf("%se%d", randDecimal(rng, 1, 1+rng.Intn(25)), e))
		c.incr = []byte(fmt.Sprintf("%se%d", randDecimal(rng, 1, 1+rng.Intn(25)), e+rng.Intn(5)-2))
	default:
		c.cur = randomNumber(rng)
		c.incr = randomNumber(rng)
	}
	return c
}

// randomNumber returns operand text of one of the shapes Redis must
// accept or reject.
func randomNumber(rng *rand.Rand) []byte {
	switch rng.Intn(13) {
	case 0, 1: // small decimals with many digits
		return []byte(randDecimal(rng, rng.Intn(4), 1+rng.Intn(30)))
	case 2: // integers, some past 64 bits, some with leading zeros
		s := randDigits(rng, 1+rng.Intn(25))
		if rng.Intn(5) == 0 {
			s = "00" + s
		}
		return []byte(randSign(rng) + s)
	case 3: // huge and tiny exponents, around the range's edges
		exps := []int{300, 308, 309, 4000, 4931, 4932, 4933, 4950, 4951, 4952, 5000, rng.Intn(5000), rng.Intn(400)}
		e := exps[rng.Intn(len(exps))]
		if rng.Intn(2) == 0 {
			e = -e
		}
		mark := []string{"e", "E", "e+"}[rng.Intn(3)]
		if e < 0 {
			mark = "e"
		}
		return []byte(randDecimal(rng, 1, rng.Intn(20)) + mark + strconv.Itoa(e))
	case 4: // zeros
		zeros := []string{"0", "-0", "+0", "0.0", "-0.000", "-0e10", "0e-99999999999999999999", "-0x0p0", "000", ".0", "0."}
		return []byte(zeros[rng.Intn(len(zeros))])
	case 5: // infinities and NaNs
		words := []string{"inf", "-inf", "+inf", "Infinity", "-INFINITY", "iNf", "nan", "NaN", "-nan", "nan(1)", "infinit", "infinityy", "in"}
		return []byte(words[rng.Intn(len(words))])
	case 6: // hex floats
		s := randSign(rng) + []string{"0x", "0X"}[rng.Intn(2)] + randHex(rng, 1+rng.Intn(20))
		if rng.Intn(2) == 0 {
			s += "." + randHex(rng, rng.Intn(20))
		}
		if rng.Intn(3) > 0 {
			exps := []int{rng.Intn(80) - 40, 16380 + rng.Intn(10), -16380 - rng.Intn(80), rng.Intn(40000) - 20000}
			s += []string{"p", "P"}[rng.Intn(2)] + strconv.Itoa(exps[rng.Intn(len(exps))])
		}
		return []byte(s)
	case 7: // garbage: a good number spoiled, or a bad shape
		if rng.Intn(2) == 0 {
			return spoil(rng, []byte(randDecimal(rng, 1+rng.Intn(3), rng.Intn(6))))
		}
		bad := []string{"", " ", "abc", "1,5", "--1", "+-1", "1e+", "1e", ".", "e5", "0x", "0x.", "0xp1",
			"1.2.3", "1 2", "١", "\x00", "1\x00", "0x1p", "1e5e5", "0b101", "1_000", "١٢"}
		return []byte(bad[rng.Intn(len(bad))])
	case 8: // long text, around the 5119-byte limit
		n := 5100 + rng.Intn(30)
		switch rng.Intn(4) {
		case 3:
			return []byte("0x" + randHex(rng, n-7) + "p-9999")
		case 0:
			return []byte("0." + randDigits(rng, n-2))
		case 1:
			s := randDigits(rng, n-6)
			return []byte(s[:len(s)-1] + "1e-5000")[:n]
		default:
			return []byte("-" + strings.Repeat("0", n-5) + "1.25")
		}
	case 9: // the edges of the range, exactly
		edges := []string{"1.18973149535723176502e4932", "1.18973149535723176503e4932", "-1.1897314953572317650e+4932",
			"3.6e-4951", "1.8e-4951", "1.83e-4951", "1.82e-4951", "3.3621031431120935063e-4932",
			"0x1p-16445", "0x1p-16446", "0x1.0000000000000001p-16446", "0x8.0000000000000008p-16449",
			"0x1.00000000000000008p-16446", "0x1.00000000000000018p-16446", "0x1p16383", "0x1.fffffffffffffffep16383",
			"0x1.ffffffffffffffffp16383", "0x1.fffffffffffffffe8p16383", "0x1p16384", "-0x1.fffffffffffffffep16383"}
		edges = append(edges, edgeDecimals...)
		return []byte(edges[rng.Intn(len(edges))])
	case 10: // binary fractions whose 18th decimal is a 5: printf's ties
		return []byte(fmt.Sprintf("%s0x%xp-%d", randSign(rng), rng.Uint64()>>uint(rng.Intn(64))|1, 18+rng.Intn(45)))
	case 11: // exact midpoints between long doubles, and near misses
		m := new(big.Int).SetUint64(1<<63 | rng.Uint64())
		mid := new(big.Int).Lsh(m, 1)
		mid.Add(mid, big.NewInt(1))
		e := rng.Intn(400) - 300
		if rng.Intn(4) == 0 { // out to the ends of the range and of maxLen
			e = rng.Intn(16384+7000) - 7000
		}
		s := exactDecimal(mid, e)
		switch rng.Intn(3) {
		case 1:
			s = nudge(s, -1)
		case 2:
			s = nudge(s, +1)
		}
		return []byte(randSign(rng) + s)
	default: // plain numbers in a float64-like range
		return []byte(fmt.Sprintf("%s%se%d", randSign(rng), randDecimal(rng, 1+rng.Intn(3), rng.Intn(8)), rng.Intn(80)-40))
	}
}

// edgeDecimals are decimal texts at the long double range's ends: the
// overflow threshold (LDBL_MAX + half an ulp, a tie that overflows) exactly
// and a hair below, and 30-digit values just below and above 2^-16446 (at
// or below it, strtold rounds to zero).
var edgeDecimals = func() []string {
	// LDBL_MAX + 2^16319 = (2^64 - 1) × 2^16320 + 2^16319 = (2^65 - 1) × 2^16319
	over := exactDecimal(new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 65), big.NewInt(1)), 16319)
	tiny := exactDecimal(big.NewInt(1), -16446)
	mant, exp, _ := strings.Cut(tiny, "e")
	down := mant[:31] + "e" + exp
	upDigits := []byte(mant[:31])
	upDigits[30]++ // the 31st digit of 2^-16446 is not a 9
	return []string{over, nudge(over, -1), down, string(upDigits) + "e" + exp, "-" + down}
}()

// randDecimal returns intDigits digits, then '.' and fracDigits digits
// (no '.' when fracDigits is 0), with a random sign.
func randDecimal(rng *rand.Rand, intDigits, fracDigits int) string {
	s := randSign(rng) + randDigits(rng, intDigits)
	if fracDigits > 0 {
		s += "." + randDigits(rng, fracDigits)
	}
	return s
}

func randSign(rng *rand.Rand) string {
	return []string{"", "", "-", "+"}[rng.Intn(4)]
}

func randDigits(rng *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('0' + rng.Intn(10))
	}
	return string(b)
}

func randHex(rng *rand.Rand, n int) string {
	const hex = "0123456789abcdefABCDEF"
	b := make([]byte, n)
	for i := range b {
		b[i] = hex[rng.Intn(len(hex))]
	}
	return string(b)
}

// spoil adds a space or a stray byte before, inside or after s.
func spoil(rng *rand.Rand, s []byte) []byte {
	junk := []string{" ", "\t", "\n", "\v", "\f", "\r", "x", "\x00", "e", ".", "+", "\xff"}
	j := junk[rng.Intn(len(junk))]
	switch rng.Intn(3) {
	case 0:
		return append([]byte(j), s...)
	case 1:
		return append(s, j...)
	default:
		i := rng.Intn(len(s) + 1)
		return []byte(string(s[:i]) + j + string(s[i:]))
	}
}

// negate returns s with its sign flipped.
func negate(s []byte) []byte {
	switch {
	case len(s) > 0 && s[0] == '-':
		return append([]byte("+"), s[1:]...)
	case len(s) > 0 && s[0] == '+':
		return append([]byte("-"), s[1:]...)
	default:
		return append([]byte("-"), s...)
	}
}

// ---- reporting ---------------------------------------------------------------

func cmdName(hash bool) string {
	if hash {
		return "HINCRBYFLOAT"
	}
	return "INCRBYFLOAT"
}

func outcome(hash bool, err string) string {
	if err == "" {
		err = "ok"
	}
	return cmdName(hash) + " " + err
}

// show quotes operand text, cut short when long.
func show(b []byte) string {
	if b == nil {
		return "(missing)"
	}
	if len(b) > 80 {
		return fmt.Sprintf("%q…(%d bytes)", b[:80], len(b))
	}
	return fmt.Sprintf("%q", b)
}

func showReply(v, err string) string {
	if err != "" {
		return "error " + strconv.Quote(err)
	}
	return show([]byte(v))
}

// ---- a real redis-server -----------------------------------------------------

// isRedisError reports whether err is an error reply (as opposed to a
// transport failure).
func isRedisError(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}

// replyText returns a bulk reply's text or an error reply's text; a nil
// reply is "". Transport failures end the test.
func replyText(t *testing.T, c *redis.Cmd) (string, string) {
	t.Helper()
	v, err := c.Result()
	switch {
	case errors.Is(err, redis.Nil):
		return "", ""
	case err != nil && isRedisError(err):
		return "", err.Error()
	case err != nil:
		t.Fatalf("%v: %v", c.Args(), err)
	}
	s, ok := v.(string)
	if !ok {
		t.Fatalf("%v: reply %T %v, want a bulk string", c.Args(), v, v)
	}
	return s, ""
}

// redisClient starts redis-server for this test (redistest.Start) and
// returns a client for it.
func redisClient(t *testing.T) *redis.Client {
	t.Helper()
	rc := redis.NewClient(&redis.Options{Addr: redistest.Start(t), Protocol: 2, DisableIdentity: true, MaxRetries: -1,
		ReadTimeout: 10 * time.Second})
	t.Cleanup(func() { rc.Close() })
	return rc
}
