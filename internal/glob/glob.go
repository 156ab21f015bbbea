package glob

// Match reports whether subject matches the glob pattern. Both are raw
// bytes: any byte, '\0' included, is an ordinary character, and bytes
// compare exactly (no case folding). The pattern language:
//
//	token    matches
//	*        any run of bytes, the empty run included
//	?        any one byte
//	[abc]    one byte of the class; [^abc] one byte not in it
//	[a-z]    a range, bounds included; [z-a] is the same range
//	\x       the byte x itself, outside or inside a class
//
// Edge cases follow Redis 7.0 exactly:
//   - The empty subject matches only the empty pattern: "*" does not match
//     "". (KEYS * and SCAN MATCH * still return the empty key in Redis,
//     through a fast path that skips matching; callers keep that path.)
//   - A class runs to the first ']' that is not escaped and not the upper
//     bound of a range: in "[a-]]" the range is 'a'..']'. "[]" is an empty
//     class and matches nothing; "[^]" matches any byte.
//   - A class with no closing ']' ends at the end of the pattern, which then
//     ends: "[ab" matches "a" and "b"; "[" matches nothing; "[^" any byte.
//   - A '\' that is the last byte of the pattern, or of a class, is a
//     literal '\'.
//   - Range bounds compare as C chars, which are signed on x86-64: bytes
//     0x80..0xff sort before 0x00..0x7f. So "[a-\xff]" is the range
//     0xff..'a' ("\xff", "\x00".."a"), and "[\x80-\xff]" is 0x80..0xff.
//     Redis on arm64, where char is unsigned, orders them as unsigned bytes;
//     we follow x86-64, the platform our differential tests run against.
//
// Differs from Redis: Redis's matcher recurses once per '*' run and, since
// 7.0.9 (the CVE-2022-36021 fix), gives up past 1000 levels, answering "no
// match" even when the subject matches: "*a" repeated 1001 times does not
// match 1001 'a's on Redis 7.0.15. Match has no such limit and returns the
// correct result, in bounded time; we prefer that to copying a safeguard
// that Match does not need.
//
// Cost: O(len(pattern) × len(subject)) time in the worst case, O(1) extra
// memory, no allocation. It is the classic greedy matcher: every token but
// '*' matches exactly one byte, so the segments between stars have fixed
// widths. Each segment is placed at its leftmost fit after the previous one,
// which leaves the most subject for what follows; so when the rest fails,
// only the last '*' need take one byte more and the rest be retried. Each
// retry rescans at most the pattern, and the retry position only moves
// forward, hence the bound.
func Match(pattern, subject []byte) bool {
	if len(subject) == 0 {
		return len(pattern) == 0
	}
	p, s := 0, 0
	star := -1 // pattern index just past the last '*' run, -1 before any
	starS := 0 // subject index where that run's match currently ends
	for s < len(subject) {
		if p < len(pattern) {
			if pattern[p] == '*' {
				for p < len(pattern) && pattern[p] == '*' {
					p++
				}
				if p == len(pattern) {
					return true // a trailing '*' takes the rest
				}
				star, starS = p, s
				continue
			}
			if next, ok := one(pattern, p, subject[s]); ok {
				p, s = next, s+1
				continue
			}
		}
		if star < 0 {
			return false
		}
		// Let the last '*' take one byte more and retry what follows it.
		starS++
		p, s = star, starS
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// one matches the token at pattern[p] (anything but '*') against the byte
// c, and returns the index just past the token.
func one(pattern []byte, p int, c byte) (next int, ok bool) {
	switch pattern[p] {
	case '?':
		return p + 1, true
	case '[':
		return class(pattern, p+1, c)
	case '\\':
		if p+1 < len(pattern) {
			p++
		}
	}
	return p + 1, pattern[p] == c
}

// class matches the class whose body starts at pattern[i], just past its
// '[', against c, and returns the index just past the class: past its ']',
// or len(pattern) when the class is unterminated.
func class(pattern []byte, i int, c byte) (next int, ok bool) {
	not := i < len(pattern) && pattern[i] == '^'
	if not {
		i++
	}
	in := false
	for ; ; i++ {
		switch {
		case i == len(pattern):
			return i, in != not // unterminated: the end of the pattern closes it
		case pattern[i] == '\\' && i+1 < len(pattern):
			i++
			in = in || pattern[i] == c
		case pattern[i] == ']':
			return i + 1, in != not
		case i+2 < len(pattern) && pattern[i+1] == '-':
			lo, hi := int8(pattern[i]), int8(pattern[i+2])
			if lo > hi {
				lo, hi = hi, lo
			}
			in = in || lo <= int8(c) && int8(c) <= hi
			i += 2
		default:
			in = in || pattern[i] == c
		}
	}
}
