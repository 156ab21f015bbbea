package glob

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, subject string
		want             bool
	}{
		// The empty pattern and the empty subject.
		{"", "", true},
		{"", "a", false},
		{"*", "", false},
		{"**", "", false},
		{"?", "", false},
		{"[a", "", false},
		{"\\", "", false},

		// Stars.
		{"*", "a", true},
		{"*", "abc", true},
		{"a*", "a", true},
		{"a**", "a", true},
		{"a*b", "a", false},
		{"*a", "a", true},
		{"*a", "ba", true},
		{"*a", "ab", false},
		{"a*b*c", "abc", true},
		{"a*b*c", "aXbYc", true},
		{"a*b*c", "acb", false},
		{"*ab", "aab", true},
		{"*aab", "aaab", true},
		{"*a*", "bab", true},
		{"*a*", "bbb", false},
		{"a*", "b", false},

		// '?'.
		{"?", "a", true},
		{"??", "a", false},
		{"h?llo", "hello", true},
		{"*?*?*?", "abc", true},
		{"*?*?*?", "ab", false},

		// Classes, negation, ranges.
		{"h[ae]llo", "hallo", true},
		{"h[ae]llo", "hillo", false},
		{"h[^e]llo", "hello", false},
		{"h[^e]llo", "hallo", true},
		{"h[a-b]llo", "hbllo", true},
		{"[a-c]", "d", false},
		{"[z-a]", "m", true},
		{"[a-a]", "a", true},
		{"[a-a]", "b", false},
		{"[^a-c]", "b", false},
		{"[^a-c]", "d", true},
		{"[ab-]", "-", false}, // the range 'b'..']', unterminated
		{"[ab-]", "_", true},
		{"a[-]b", "a-b", true},
		{"[]", "]", false},
		{"[]]", "]", false},
		{"[]]", "]]", false},
		{"[^]", "x", true},
		{"[^]", "]", true},
		{"[^]]", "x]", true},
		{"[a-]]", "^", true}, // the range 'a'..']', closed by the second ']'
		{"[a-]]", "^]", false},
		{"[a-]]", "-", false},

		// Escapes.
		{`\*`, "*", true},
		{`\*`, "a", false},
		{`\?`, "?", true},
		{`\?`, "a", false},
		{`\\`, `\`, true},
		{`\[a]`, "[a]", true},
		{`\a`, "a", true},
		{`h\*llo`, "h*llo", true},
		{`h\*llo`, "hello", false},
		{`[\]]`, "]", true},
		{`[\^a]`, "^", true},
		{`[a\-z]`, "-", true},
		{`[a\-z]`, "b", false},
		{`[\a-z]`, "-", true}, // the escape ends the first item: no range
		{`[\a-z]`, "b", false},

		// A trailing '\' is a literal '\', outside or inside a class.
		{`\`, `\`, true},
		{`a\`, `a\`, true},
		{`a\`, "a", false},
		{`[\`, `\`, true},
		{`[\`, "a", false},

		// Unterminated classes end with the pattern.
		{"[", "[", false},
		{"[", "a", false},
		{"[a", "a", true},
		{"[a", "ab", false},
		{"[ab", "b", true},
		{"[^", "x", true},
		{"[^", "xy", false},
		{"[^a", "a", false},
		{"[a-", "-", true},
		{"[a-", "b", false},
		{"[a-]", "]", true}, // the range 'a'..']', unterminated
		{"[a-]", "^", true},
		{"[a-]", "-", false},
		{"*[a", "xxa", true},
		{"*[a", "xxab", false},

		// Binary subjects and patterns: '\0' is an ordinary byte.
		{"a\x00b", "a\x00b", true},
		{"a?b", "a\x00b", true},
		{"[\x00]", "\x00", true},
		{"*\x00*", "x\x00y", true},
		{"a", "a\x00", false},
		{"a*", "a\x00", true},

		// No case folding.
		{"A", "a", false},
		{"[A-Z]", "a", false},

		// Range bounds are signed chars, as Redis on x86-64.
		{"[a-\xff]", "\xff", true},
		{"[a-\xff]", "\x00", true},
		{"[a-\xff]", "a", true},
		{"[a-\xff]", "z", false},
		{"[a-\xff]", "\x80", false},
		{"[\x80-\xff]", "\x90", true},
		{"[\x80-\xff]", "a", false},
		{"[\x00-\xff]", "a", false},
		{"[\x00-\xff]", "\xff", true},
		{"[\x7f-\x80]", "a", true},
		{"[\x7f-\x80]", "\xc0", true},

		// The exponential cases of a backtracking matcher.
		{strings.Repeat("*a", 12) + "b", strings.Repeat("a", 44), false},
		{strings.Repeat("*a", 12) + "b", strings.Repeat("a", 44) + "b", true},
		{strings.Repeat("*?", 30) + "b", strings.Repeat("a", 60), false},
		// Redis 7.0.9+ answers no match past 1000 nested stars; we match.
		{strings.Repeat("*a", 1001), strings.Repeat("a", 1001), true},
		{strings.Repeat("*a", 1001), strings.Repeat("a", 1000), false},
	} {
		if got := Match([]byte(tc.pattern), []byte(tc.subject)); got != tc.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tc.pattern, tc.subject, got, tc.want)
		}
		if strings.Count(tc.pattern, "*") > 6 {
			continue // the reference would take exponential time
		}
		if got := redisMatch([]byte(tc.pattern), []byte(tc.subject)); got != tc.want {
			t.Errorf("redisMatch(%q, %q) = %v, want %v (the table or the reference is wrong)", tc.pattern, tc.subject, got, tc.want)
		}
	}
}

// TestMatchAgainstReference compares Match with redisMatch, a line by line
// transcription of Redis's recursive matcher, on random short patterns and
// subjects over an alphabet made of the pattern syntax and a few bytes.
func TestMatchAgainstReference(t *testing.T) {
	const alphabet = "ab*?[]^-\\\x00\x7f\x80\xff"
	rng := rand.New(rand.NewSource(1))
	gen := func(max int) []byte {
		b := make([]byte, rng.Intn(max+1))
		for i := range b {
			b[i] = alphabet[rng.Intn(len(alphabet))]
		}
		return b
	}
	n := 200000
	if testing.Short() {
		n = 20000
	}
	for i := 0; i < n; i++ {
		p, s := gen(10), gen(8)
		if got, want := Match(p, s), redisMatch(p, s); got != want {
			t.Fatalf("Match(%q, %q) = %v, Redis's algorithm says %v", p, s, got, want)
		}
	}
}

// FuzzMatch checks Match against redisMatch. Inputs are cut short: the
// reference is exponential in the number of stars.
//
//	go test ./internal/glob -run '^$' -fuzz FuzzMatch -fuzztime 30s
func FuzzMatch(f *testing.F) {
	for _, s := range [][2]string{
		{"h*llo", "hello"}, {"[a-]]", "^"}, {`[\`, `\`}, {"[^", "x"}, {"*[a", "xxa"},
		{"[a-\xff]", "\x00"}, {"*a*a*ab", "aaaa"}, {"", ""}, {"**", ""},
	} {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, p, s []byte) {
		if len(p) > 24 {
			p = p[:24]
		}
		if len(s) > 24 {
			s = s[:24]
		}
		if got, want := Match(p, s), redisMatch(p, s); got != want {
			t.Fatalf("Match(%q, %q) = %v, Redis's algorithm says %v", p, s, got, want)
		}
	})
}

// redisMatch is Redis 7.0's stringmatchlen (src/util.c, nocase off)
// transcribed statement by statement, indices standing for its pointers,
// without its depth limit. at stands for reading past the pattern's length,
// where a C string has its terminating NUL. It is exponential in the number
// of stars: a reference for tests only.
func redisMatch(pat, str []byte) bool {
	return redisMatchAt(pat, 0, str, 0)
}

func redisMatchAt(pat []byte, p int, str []byte, s int) bool {
	at := func(i int) byte {
		if i < len(pat) {
			return pat[i]
		}
		return 0
	}
	plen, slen := len(pat)-p, len(str)-s
	for plen > 0 && slen > 0 {
		switch pat[p] {
		case '*':
			for plen > 0 && at(p+1) == '*' {
				p++
				plen--
			}
			if plen == 1 {
				return true
			}
			for slen > 0 {
				if redisMatchAt(pat, p+1, str, s) {
					return true
				}
				s++
				slen--
			}
			return false
		case '?':
			s++
			slen--
		case '[':
			p++
			plen--
			not := at(p) == '^'
			if not {
				p++
				plen--
			}
			match := false
			for {
				if at(p) == '\\' && plen >= 2 {
					p++
					plen--
					if pat[p] == str[s] {
						match = true
					}
				} else if at(p) == ']' {
					break
				} else if plen == 0 {
					p--
					plen++
					break
				} else if plen >= 3 && at(p+1) == '-' {
					start, end, c := int8(pat[p]), int8(pat[p+2]), int8(str[s])
					if start > end {
						start, end = end, start
					}
					p += 2
					plen -= 2
					if c >= start && c <= end {
						match = true
					}
				} else if pat[p] == str[s] {
					match = true
				}
				p++
				plen--
			}
			if not {
				match = !match
			}
			if !match {
				return false
			}
			s++
			slen--
		case '\\':
			if plen >= 2 {
				p++
				plen--
			}
			fallthrough
		default:
			if pat[p] != str[s] {
				return false
			}
			s++
			slen--
		}
		p++
		plen--
		if slen == 0 {
			for at(p) == '*' {
				p++
				plen--
			}
			break
		}
	}
	return plen == 0 && slen == 0
}

// BenchmarkMatchWorstCase runs the families that make a backtracking
// matcher exponential, and the greedy matcher's own worst case, over runs of
// 'a'. None of them match. cells is len(pattern) × len(subject): ns/cell
// stays flat (or falls) as the sizes grow, so the cost is at most
// proportional to the product.
func BenchmarkMatchWorstCase(b *testing.B) {
	families := []struct {
		name    string
		pattern func(k int) string
	}{
		{"stars", func(k int) string { return strings.Repeat("*a", k) + "b" }},        // *a*a...*ab
		{"anys", func(k int) string { return strings.Repeat("*?", k) + "b" }},         // *?*?...*?b
		{"segment", func(k int) string { return "*" + strings.Repeat("a", k) + "b" }}, // *aa...ab
	}
	for _, f := range families {
		for _, k := range []int{2, 10, 12, 64} {
			for _, n := range []int{44, 256, 4096} {
				p, s := []byte(f.pattern(k)), []byte(strings.Repeat("a", n))
				b.Run(fmt.Sprintf("%s/k=%d/n=%d", f.name, k, n), func(b *testing.B) {
					b.ReportAllocs()
					for i := 0; i < b.N; i++ {
						if Match(p, s) {
							b.Fatal("matched")
						}
					}
					ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
					b.ReportMetric(ns/float64(len(p)*len(s)), "ns/cell")
				})
			}
		}
	}
}
