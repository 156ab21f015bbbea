package broker

// The sorted-set part of TestConformanceRandom's generator. Sets stay
// small (Redis's listpack encoding), where Redis's lexicographic ranges
// over mixed scores walk the set as Sediment does; scores never are -0,
// which Redis prints by encoding; ZRANDMEMBER asks for the whole set only
// (its order is then fixed).

import "strconv"

var (
	// crScores are few, so that members tie and GT/LT often compare equal.
	crScores  = []string{"1", "2", "0", "-1", "1.5", "0.1", "inf", "-inf", "3", "1e3", "x", "-2.5"}
	crMembers = []string{"a", "b", "c", "d", "", "\x00", "x\x00y", "1"}
	crZBounds = []string{"-inf", "+inf", "(1", "1", "(0", "2", "(1.5", "-1", "x", "(inf", ""}
	crLex     = []string{"-", "+", "[a", "(b", "[c", "(", "[", "a", "[x\x00y"}
)

func (g *crGen) score() string { return g.pick(crScores) }

// zpairs returns 1..n score member pairs.
func (g *crGen) zpairs(n int) []string {
	var out []string
	for range 1 + g.rng.Intn(n) {
		out = append(out, g.score(), g.pick(crMembers))
	}
	return out
}

// zset returns a sorted-set command. The blocking pops come only inside
// MULTI, where they reply at once.
func (g *crGen) zset() confStep {
	k := g.key("zset")
	if g.inMulti && g.chance(5) {
		timeout := g.pick([]string{"0.01", "0.1"})
		if g.chance(2) {
			return cc(append(append([]string{g.pick([]string{"BZPOPMIN", "BZPOPMAX"})}, g.keys("zset", 3)...), timeout)...)
		}
		keys := g.keys("zset", 3)
		return cc(append(append([]string{"BZMPOP", timeout, strconv.Itoa(len(keys))}, keys...), g.pick([]string{"MIN", "MAX"}))...)
	}
	n := g.rng.Intn(30)
	if g.types[k] == "none" && g.chance(2) {
		n = 0
	}
	rng := func() []string {
		switch g.rng.Intn(3) {
		case 0:
			return []string{g.pick(crZBounds), g.pick(crZBounds), "BYSCORE"}
		case 1:
			return []string{g.pick(crLex), g.pick(crLex), "BYLEX"}
		}
		return []string{strconv.Itoa(g.rng.Intn(9) - 4), strconv.Itoa(g.rng.Intn(9) - 4)}
	}
	switch n {
	case 0, 1, 2, 3, 4:
		args := []string{"ZADD", k}
		for _, f := range []string{"NX", "XX", "GT", "LT", "CH"} {
			if g.chance(7) {
				args = append(args, f)
			}
		}
		if g.chance(6) {
			return cc(append(append(args, "INCR"), g.zpairs(1)...)...)
		}
		return cc(append(args, g.zpairs(4)...)...)
	case 5:
		return cc("ZINCRBY", k, g.score(), g.pick(crMembers))
	case 6, 7:
		return cc("ZREM", k, g.pick(crMembers), g.pick(crMembers))
	case 8:
		return cc("ZCARD", k)
	case 9:
		return cc("ZMSCORE", k, g.pick(crMembers), g.pick(crMembers))
	case 10:
		return cc(g.pick([]string{"ZRANK", "ZREVRANK", "ZSCORE"}), k, g.pick(crMembers))
	case 11:
		return cc("ZCOUNT", k, g.pick(crZBounds), g.pick(crZBounds))
	case 12:
		return cc("ZLEXCOUNT", k, g.pick(crLex), g.pick(crLex))
	case 13, 14, 15:
		r := rng()
		args := append([]string{"ZRANGE", k}, r...)
		if g.chance(3) {
			args = append(args, "REV")
		}
		if g.chance(3) {
			args = append(args, "LIMIT", strconv.Itoa(g.rng.Intn(4)-1), strconv.Itoa(g.rng.Intn(5)-1))
		}
		if g.chance(2) {
			args = append(args, "WITHSCORES")
		}
		return cc(args...)
	case 16:
		return cc(g.pick([]string{"ZRANGEBYSCORE", "ZREVRANGEBYSCORE"}), k, g.pick(crZBounds), g.pick(crZBounds), "WITHSCORES")
	case 17:
		return cc(g.pick([]string{"ZRANGEBYLEX", "ZREVRANGEBYLEX"}), k, g.pick(crLex), g.pick(crLex))
	case 18:
		return cc("ZREMRANGEBYRANK", k, strconv.Itoa(g.rng.Intn(7)-3), strconv.Itoa(g.rng.Intn(7)-3))
	case 19:
		return cc("ZREMRANGEBYSCORE", k, g.pick(crZBounds), g.pick(crZBounds))
	case 20:
		return cc("ZREMRANGEBYLEX", k, g.pick(crLex), g.pick(crLex))
	case 21, 22:
		args := []string{g.pick([]string{"ZPOPMIN", "ZPOPMAX"}), k}
		if g.chance(2) {
			args = append(args, g.popCount())
		}
		return cc(args...)
	case 23:
		keys := g.keys("zset", 3)
		args := append([]string{"ZMPOP", strconv.Itoa(len(keys))}, keys...)
		args = append(args, g.pick([]string{"MIN", "MAX", "min"}))
		if g.chance(2) {
			args = append(args, "COUNT", strconv.Itoa(1+g.rng.Intn(4)))
		}
		return cc(args...)
	case 24, 25:
		keys := g.keys("zset", 3)
		op := g.pick([]string{"ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE"})
		args := append([]string{op, g.key("zset"), strconv.Itoa(len(keys))}, keys...)
		if op != "ZDIFFSTORE" && g.chance(2) {
			args = append(args, "WEIGHTS")
			for range keys {
				args = append(args, g.pick([]string{"1", "2", "-1", "0.5", "0"}))
			}
		}
		if op != "ZDIFFSTORE" && g.chance(2) {
			args = append(args, "AGGREGATE", g.pick([]string{"SUM", "MIN", "MAX"}))
		}
		return cc(args...)
	case 26:
		keys := g.keys("zset", 3)
		op := g.pick([]string{"ZUNION", "ZINTER", "ZDIFF"})
		return cc(append(append([]string{op, strconv.Itoa(len(keys))}, keys...), "WITHSCORES")...)
	case 27:
		keys := g.keys("zset", 3)
		return cc(append(append([]string{"ZINTERCARD", strconv.Itoa(len(keys))}, keys...), "LIMIT", strconv.Itoa(g.rng.Intn(3)))...)
	case 28:
		return cc(append([]string{"ZRANGESTORE", g.key("zset"), k}, rng()...)...)
	default:
		return cc("ZRANDMEMBER", k, "100", "WITHSCORES")
	}
}
