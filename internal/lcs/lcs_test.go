package lcs

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"reflect"
	"testing"
)

// m builds a Match from Redis's reply order: a's range, then b's.
func m(a0, a1, b0, b1 int) Match {
	return Match{A: [2]int{a0, a1}, B: [2]int{b0, b1}, Len: a1 - a0 + 1}
}

func TestCompute(t *testing.T) {
	for _, tc := range []struct {
		a, b    string
		opts    Options
		lcs     string
		matches []Match
	}{
		// The examples of https://redis.io/docs/latest/commands/lcs/.
		{a: "ohmytext", b: "mynewtext", lcs: "mytext"},
		{a: "ohmytext", b: "mynewtext", opts: Options{Idx: true}, lcs: "mytext",
			matches: []Match{m(4, 7, 5, 8), m(2, 3, 0, 1)}},
		{a: "ohmytext", b: "mynewtext", opts: Options{Idx: true, MinMatchLen: 4}, lcs: "mytext",
			matches: []Match{m(4, 7, 5, 8)}},
		{a: "ohmytext", b: "mynewtext", opts: Options{Idx: true, MinMatchLen: 5}, lcs: "mytext"},

		// MINMATCHLEN at or below 1 keeps everything; Redis turns a
		// negative value into 0.
		{a: "ohmytext", b: "mynewtext", opts: Options{Idx: true, MinMatchLen: -3}, lcs: "mytext",
			matches: []Match{m(4, 7, 5, 8), m(2, 3, 0, 1)}},
		{a: "ohmytext", b: "mynewtext", opts: Options{Idx: true, MinMatchLen: 2}, lcs: "mytext",
			matches: []Match{m(4, 7, 5, 8), m(2, 3, 0, 1)}},
		{a: "ohmytext", b: "mynewtext", opts: Options{Idx: true, MinMatchLen: math.MaxInt64}, lcs: "mytext"},

		// Empty and disjoint strings: an empty LCS, no matches.
		{a: "", b: "", opts: Options{Idx: true}, lcs: ""},
		{a: "abc", b: "", opts: Options{Idx: true}, lcs: ""},
		{a: "", b: "abc", opts: Options{Idx: true}, lcs: ""},
		{a: "abc", b: "xyz", opts: Options{Idx: true}, lcs: ""},

		// Equal strings: one range, ended by offset 0.
		{a: "abc", b: "abc", opts: Options{Idx: true}, lcs: "abc", matches: []Match{m(0, 2, 0, 2)}},
		{a: "a", b: "a", opts: Options{Idx: true}, lcs: "a", matches: []Match{m(0, 0, 0, 0)}},

		// Ties drop b's byte, so the LCS ends with a's last possible byte:
		// "b" for "ab"/"ba" but "a" for "ba"/"ab".
		{a: "ab", b: "ba", opts: Options{Idx: true}, lcs: "b", matches: []Match{m(1, 1, 0, 0)}},
		{a: "ba", b: "ab", opts: Options{Idx: true}, lcs: "a", matches: []Match{m(1, 1, 0, 0)}},
		{a: "abc", b: "cab", opts: Options{Idx: true}, lcs: "ab", matches: []Match{m(0, 1, 1, 2)}},

		// A range reaching offset 0 of one string ends the walk even though
		// the other string has bytes left.
		{a: "xxab", b: "ab", opts: Options{Idx: true}, lcs: "ab", matches: []Match{m(2, 3, 0, 1)}},
		{a: "ab", b: "xxab", opts: Options{Idx: true}, lcs: "ab", matches: []Match{m(0, 1, 2, 3)}},

		// Runs of the LCS that are adjacent in a but not in b are two
		// ranges.
		{a: "abcd", b: "abXcd", opts: Options{Idx: true}, lcs: "abcd",
			matches: []Match{m(2, 3, 3, 4), m(0, 1, 0, 1)}},

		// Bytes are bytes: NUL and 0xff compare like any other.
		{a: "\x00\xff\x00", b: "\xff\x00", opts: Options{Idx: true}, lcs: "\xff\x00",
			matches: []Match{m(1, 2, 0, 1)}},

		// Without Idx there are no matches, whatever MinMatchLen says.
		{a: "ohmytext", b: "mynewtext", opts: Options{MinMatchLen: 1}, lcs: "mytext"},
	} {
		name := fmt.Sprintf("%q/%q/%+v", tc.a, tc.b, tc.opts)
		got, err := Compute([]byte(tc.a), []byte(tc.b), tc.opts)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got.LCS == nil || string(got.LCS) != tc.lcs || got.Len != len(tc.lcs) {
			t.Errorf("%s: LCS %q (nil %v), Len %d; want %q, %d", name, got.LCS, got.LCS == nil, got.Len, tc.lcs, len(tc.lcs))
		}
		if !reflect.DeepEqual(got.Matches, tc.matches) {
			t.Errorf("%s: Matches %v; want %v", name, got.Matches, tc.matches)
		}
	}
}

func TestComputeDoesNotModifyInput(t *testing.T) {
	a, b := []byte("ohmytext"), []byte("mynewtext")
	if _, err := Compute(a, b, Options{Idx: true}); err != nil {
		t.Fatal(err)
	}
	if string(a) != "ohmytext" || string(b) != "mynewtext" {
		t.Errorf("inputs changed to %q, %q", a, b)
	}
}

// TestComputeTableLimit checks MaxTable at its boundary: the table has
// (len(a)+1)*(len(b)+1) cells of 4 bytes, and only a table above the limit
// is refused, in every mode.
func TestComputeTableLimit(t *testing.T) {
	const limit = 1 << 20 // Redis's smallest proto-max-bulk-len
	for _, tc := range []struct {
		alen, blen int
		err        error
	}{
		{511, 511, nil},         // 512*512*4 = limit
		{512, 511, ErrTooBig},   // 513*512*4
		{0, 262143, nil},        // 1*262144*4 = limit
		{0, 262144, ErrTooBig},  // one cell more
		{262144, 0, ErrTooBig},  // either side
		{1, 131071, nil},        // 2*131072*4 = limit
		{1, 131072, ErrTooBig},  // 2*131073*4
		{1000, 1000, ErrTooBig}, // far above
	} {
		a, b := bytes.Repeat([]byte("x"), tc.alen), bytes.Repeat([]byte("x"), tc.blen)
		for _, opts := range []Options{{MaxTable: limit}, {Idx: true, MaxTable: limit}} {
			res, err := Compute(a, b, opts)
			if !errors.Is(err, tc.err) {
				t.Errorf("%d×%d %+v: err %v; want %v", tc.alen, tc.blen, opts, err, tc.err)
			}
			if err == nil && res.Len != min(tc.alen, tc.blen) {
				t.Errorf("%d×%d: Len %d", tc.alen, tc.blen, res.Len)
			}
		}
	}

	// The default limit, 512 MiB, is checked before anything is allocated.
	big := bytes.Repeat([]byte("x"), 11585)
	if _, err := Compute(big, big, Options{}); !errors.Is(err, ErrTooBig) {
		t.Errorf("11585×11585 with the default limit: err %v; want ErrTooBig", err)
	}
}

// TestTableCells covers the size checks at lengths no test can allocate.
func TestTableCells(t *testing.T) {
	const u32 = math.MaxUint32
	for _, tc := range []struct {
		alen, blen uint64
		maxTable   int64
		cells      int
		err        error
	}{
		{0, 0, 0, 1, nil},
		{3, 4, 0, 20, nil},
		{11584, 11584, 0, 11585 * 11585, nil},
		{11585, 11585, 0, 0, ErrTooBig},
		{11585, 11585, -1, 0, ErrTooBig}, // negative is the default too
		{11585, 11585, math.MaxInt64, 11586 * 11586, nil},
		{u32 - 2, 0, math.MaxInt64, u32 - 1, nil},
		{u32 - 1, 0, math.MaxInt64, 0, ErrTooLong}, // Redis: sdslen >= UINT32_MAX-1
		{0, u32 - 1, math.MaxInt64, 0, ErrTooLong},
		{u32 - 1, 5, 1 << 20, 0, ErrTooLong},              // checked before the size
		{1 << 31, 1 << 31, math.MaxInt64, 0, ErrNoMemory}, // 4*(2^31+1)^2 overflows 64 bits
		{1 << 30, 1 << 30, 1 << 62, 0, ErrTooBig},         // 4*(2^30+1)^2 does not
	} {
		cells, err := tableCells(tc.alen, tc.blen, tc.maxTable)
		if cells != tc.cells || !errors.Is(err, tc.err) {
			t.Errorf("tableCells(%d, %d, %d) = %d, %v; want %d, %v", tc.alen, tc.blen, tc.maxTable, cells, err, tc.cells, tc.err)
		}
	}
}

// TestComputeProperties checks, on random strings, what holds whichever
// common subsequence Redis picks: Len is the LCS length of a textbook DP,
// LCS is a subsequence of both strings, every match is a range where the
// strings agree, the matches run backwards without overlap, and they spell
// LCS; MinMatchLen only filters them.
func TestComputeProperties(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for n := 0; n < 3000; n++ {
		alpha := []string{"ab", "abc", "abcdefgh", "\x00\xff"}[rng.Intn(4)]
		a, b := randString(rng, alpha, rng.Intn(40)), randString(rng, alpha, rng.Intn(40))
		res, err := Compute(a, b, Options{Idx: true})
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("%q/%q", a, b)
		if want := refLen(a, b); res.Len != want || len(res.LCS) != want {
			t.Fatalf("%s: Len %d, LCS %q; want length %d", name, res.Len, res.LCS, want)
		}
		if !isSubseq(res.LCS, a) || !isSubseq(res.LCS, b) {
			t.Fatalf("%s: %q is not a common subsequence", name, res.LCS)
		}
		var spelled []byte
		for k, mt := range res.Matches {
			sa, sb := a[mt.A[0]:mt.A[1]+1], b[mt.B[0]:mt.B[1]+1]
			if mt.Len < 1 || len(sa) != mt.Len || !bytes.Equal(sa, sb) {
				t.Fatalf("%s: bad match %v", name, mt)
			}
			if k > 0 {
				prev := res.Matches[k-1]
				if mt.A[1] >= prev.A[0] || mt.B[1] >= prev.B[0] {
					t.Fatalf("%s: match %v not before %v", name, mt, prev)
				}
			}
			spelled = append(append([]byte(nil), sa...), spelled...)
		}
		if !bytes.Equal(spelled, res.LCS) {
			t.Fatalf("%s: matches %v spell %q, not %q", name, res.Matches, spelled, res.LCS)
		}
		plain, _ := Compute(a, b, Options{})
		if !bytes.Equal(plain.LCS, res.LCS) || plain.Matches != nil {
			t.Fatalf("%s: without Idx: %+v", name, plain)
		}
		k := int64(rng.Intn(5))
		filtered, _ := Compute(a, b, Options{Idx: true, MinMatchLen: k})
		var want []Match
		for _, mt := range res.Matches {
			if int64(mt.Len) >= k {
				want = append(want, mt)
			}
		}
		if !reflect.DeepEqual(filtered.Matches, want) || !bytes.Equal(filtered.LCS, res.LCS) {
			t.Fatalf("%s: MinMatchLen %d: %v; want %v", name, k, filtered.Matches, want)
		}
	}
}

func randString(rng *rand.Rand, alpha string, n int) []byte {
	s := make([]byte, n)
	for i := range s {
		s[i] = alpha[rng.Intn(len(alpha))]
	}
	return s
}

// refLen is the LCS length by the textbook two-row DP.
func refLen(a, b []byte) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for i := range a {
		for j := range b {
			if a[i] == b[j] {
				cur[j+1] = prev[j] + 1
			} else {
				cur[j+1] = max(prev[j+1], cur[j])
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func isSubseq(s, of []byte) bool {
	for _, c := range of {
		if len(s) > 0 && s[0] == c {
			s = s[1:]
		}
	}
	return len(s) == 0
}

func ExampleCompute() {
	res, err := Compute([]byte("ohmytext"), []byte("mynewtext"), Options{Idx: true})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%q len=%d\n", res.LCS, res.Len)
	for _, mt := range res.Matches {
		fmt.Println(mt.A, mt.B, mt.Len)
	}
	// Output:
	// "mytext" len=6
	// [4 7] [5 8] 4
	// [2 3] [0 1] 2
}

func BenchmarkCompute(b *testing.B) {
	rng := rand.New(rand.NewSource(1))
	x, y := randString(rng, "abcd", 2000), randString(rng, "abcd", 2000)
	b.ReportAllocs()
	b.SetBytes(int64(len(x) * len(y)))
	for b.Loop() {
		if _, err := Compute(x, y, Options{Idx: true}); err != nil {
			b.Fatal(err)
		}
	}
}
