package ldouble

import (
	"math/big"
	"strings"
	"testing"
)

// Errors of the INCRBYFLOAT emulation below, Redis 7.0's texts.
const (
	errNotFloat = "ERR value is not a valid float"
	errNaNInf   = "ERR increment would produce NaN or Infinity"
)

// incrByFloat computes INCRBYFLOAT over the stored text cur (nil: no key)
// as Redis 7.0 does, returning the new text or the error reply.
func incrByFloat(cur []byte, incr []byte) (string, string) {
	v := newFloat()
	if cur != nil {
		var ok bool
		if v, ok = Parse(cur); !ok {
			return "", errNotFloat
		}
	}
	inc, ok := Parse(incr)
	if !ok {
		return "", errNotFloat
	}
	sum, inf := Add(v, inc)
	if inf {
		return "", errNaNInf
	}
	return string(Format(sum)), ""
}

// hexFloat returns the exact value of a C hex float literal, for
// expectations; it panics on bad input.
func hexFloat(s string) *big.Float {
	v, _, err := new(big.Float).SetPrec(200).Parse(s, 0)
	if err != nil {
		panic(err)
	}
	return v
}

// ldblMax is LDBL_MAX, (1 - 2^-64) × 2^16384.
var ldblMax = hexFloat("0x1.fffffffffffffffep16383")

// TestIncrByFloat pins hand-checked INCRBYFLOAT results; each was also
// checked against redis-server 7.0.15 (x86-64).
func TestIncrByFloat(t *testing.T) {
	long5119 := "0.1" + strings.Repeat("0", 5116)
	for _, tc := range []struct {
		cur, incr string // cur "<nil>": no key
		want, err string
	}{
		// float64 would give 0.30000000000000004 and 10.600000000000001.
		{"0.1", "0.2", "0.3", ""},
		{"0.1", "0.7", "0.8", ""},
		{"10.5", "0.1", "10.6", ""},
		{"<nil>", "0.1", "0.1", ""},
		{"5.0e3", "2.0e2", "5200", ""},
		{"3.0e3", "2.0e3", "5000", ""},
		{"1", "-1", "0", ""},
		{"-0", "0", "0", ""},
		{"-0", "-0", "0", ""},
		{"0", "-1e-20", "0", ""}, // "-0.00000000000000000" becomes "0"
		{"0", "-1e-17", "-0.00000000000000001", ""},
		{"0", "4.9e-18", "0", ""},
		{"0", "5.1e-18", "0.00000000000000001", ""},
		{"1.5", "-3", "-1.5", ""},
		{"17179869184", "1.5", "17179869185.5", ""},
		// 1 + 2^-64 is a tie at 64 bits and rounds to even.
		{"1", "0x1p-64", "1", ""},
		{"1", "0x1.0000000000000002p-64", "1", ""}, // rounds up, prints as 1
		{"1e20", "0.1", "100000000000000000000", ""},
		// printf rounds the 18th decimal half to even: 2^-18 is
		// 0.000003814697265625.
		{"0", "0x1p-18", "0.00000381469726562", ""},
		{"0", "0x3p-18", "0.00001144409179688", ""},
		{"0", "0x3p-19", "0.00000572204589844", ""},
		// Hex floats, infinity spellings, signs.
		{"0x1.8p3", "0X10", "28", ""},
		{"+.5", "5.", "5.5", ""},
		{"-0x.8", "0", "-0.5", ""},
		{"0", "0x1e3", "483", ""},
		{"007", "1e0010", "10000000007", ""},
		{"0", "inf", "", errNaNInf},
		{"0", "-Infinity", "", errNaNInf},
		{"inf", "-inf", "", errNaNInf}, // NaN
		{"INF", "1", "", errNaNInf},
		{"0", "nan", "", errNotFloat},
		{"nan", "0", "", errNotFloat},
		{"0", "infin", "", errNotFloat},
		// The long double range: 1e308*10 and 1e4000 are fine. An empty
		// want with no error only checks success.
		{"1e308", "9e308", "9999999999999999999863494245812564547663077632499060486997229336644073637421164316354271666004182454093987023823041527499719573284024231723411264840323703757727469747886572146256936514449840127391331132688694964423110348175711204067635574980216556424259415434688509397832286590304536596214462076434231140024" + "32", ""},
		{"0", "1e4932", "", ""},
		{"0", "1e4933", "", errNotFloat},
		{"1.18973149535723176502e4932", "1.18973149535723176502e4932", "", errNaNInf},
		{"1.18973149535723176502e4932", "-1.18973149535723176502e4932", "0", ""},
		{"0", "0x1.fffffffffffffffep16383", "", ""},
		{"0", "0x1.ffffffffffffffffp16383", "", errNotFloat}, // the tie overflows
		{"0", "0x1.fffffffffffffffefp16383", "", ""},
		// Half the smallest subnormal and below round to zero: rejected.
		{"0", "2e-4951", "0", ""},
		{"0", "1.8e-4951", "", errNotFloat},
		{"0", "1e-5000", "", errNotFloat},
		{"0", "0e-99999999999999999999", "0", ""},
		{"0", "0x1p-16446", "", errNotFloat},
		{"0", "0x1.000001p-16446", "0", ""},
		{"0", "0x1p-16445", "0", ""},
		// glibc's strtold loses the 65th bit here and rounds to zero.
		{"0", "0x1.0000000000000001p-16446", "", errNotFloat},
		{"0", "-0x8.0000000000000008p-16449", "", errNotFloat},
		{"0", "0x1.00000000000000008p-16446", "0", ""},
		{"0", "0x1.00000000000000018p-16446", "0", ""},
		{"0", "0x1.0000000000000001p-16445", "0", ""},
		// Rejected shapes.
		{"0", "", "", errNotFloat},
		{"", "1", "", errNotFloat},
		{"0", " 1", "", errNotFloat},
		{"0", "\v1", "", errNotFloat},
		{"0", "1 ", "", errNotFloat},
		{"0", "1\x00", "", errNotFloat},
		{"0", "1e", "", errNotFloat},
		{"0", "1e+", "", errNotFloat},
		{"0", ".", "", errNotFloat},
		{"0", "0x", "", errNotFloat},
		{"0", "0xp1", "", errNotFloat},
		{"0", "0x1p", "", errNotFloat},
		{"0", "+-1", "", errNotFloat},
		{"0", "1.2.3", "", errNotFloat},
		{"0", long5119, "0.1", ""},
		{"0", long5119 + "0", "", errNotFloat},
		{"abc", "1", "", errNotFloat},
	} {
		var cur []byte
		if tc.cur != "<nil>" {
			cur = []byte(tc.cur)
		}
		got, err := incrByFloat(cur, []byte(tc.incr))
		if err != tc.err {
			t.Errorf("%q + %q: error %q, want %q", tc.cur, tc.incr, err, tc.err)
			continue
		}
		if tc.want != "" && got != tc.want {
			t.Errorf("%q + %q = %q, want %q", tc.cur, tc.incr, got, tc.want)
		}
	}
}

// TestParseRounding checks that Parse rounds decimal text once, to 64
// bits, ties to even, where big.Float.Parse itself is not exact (it scales
// by a rounded power of five).
func TestParseRounding(t *testing.T) {
	two64 := new(big.Float).SetMantExp(big.NewFloat(1), 64)
	for _, tc := range []struct {
		in   string
		want *big.Float
	}{
		{"18446744073709551616", two64},
		// 2^64+1: a tie between 2^64 and 2^64+2, to the even 2^64.
		{"18446744073709551617", two64},
		{"18446744073709551617.0000000000000000000000000000001", hexFloat("0x1.0000000000000002p64")},
		// 2^64+3: a tie between 2^64+2 and 2^64+4, to the even 2^64+4.
		{"18446744073709551619", hexFloat("0x1.0000000000000004p64")},
		{"1.8446744073709551617e19", two64},
		{"0.1", hexFloat("0xc.ccccccccccccccdp-7")},
		{"-0x1.8p3", big.NewFloat(-12)},
		{"1e4932", newFloat().SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(4932), nil))},
		{"1e-30", newFloat().Quo(big.NewFloat(1), new(big.Float).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(30), nil)))},
	} {
		v, ok := Parse([]byte(tc.in))
		if !ok {
			t.Errorf("Parse(%q) failed", tc.in)
			continue
		}
		if v.Cmp(tc.want) != 0 {
			t.Errorf("Parse(%q) = %s, want %s", tc.in, v.Text('p', 0), tc.want.Text('p', 0))
		}
		if v.Prec() != prec || v.Mode() != big.ToNearestEven {
			t.Errorf("Parse(%q): prec %d mode %v", tc.in, v.Prec(), v.Mode())
		}
	}

	// Exact decimal expansions of midpoints between adjacent long doubles,
	// written with exponents, must round to the even neighbour; a hair
	// above or below must round away from it.
	for _, e := range []int{-5000, -301, -70, 0, 70, 301, 5000} {
		m := new(big.Int).SetUint64(0xfedcba9876543211) // odd: the tie goes up
		mid := new(big.Int).Lsh(m, 1)
		mid.Add(mid, big.NewInt(1)) // (2m+1) × 2^(e-1)
		text := exactDecimal(mid, e-1)
		up := new(big.Float).SetInt(new(big.Int).Add(m, big.NewInt(1)))
		up.SetMantExp(up, e)
		down := new(big.Float).SetInt(m)
		down.SetMantExp(down, e)
		for _, tc := range []struct {
			in   string
			want *big.Float
		}{
			{text, up},
			{nudge(text, -1), down},
			{nudge(text, +1), up},
		} {
			v, ok := Parse([]byte(tc.in))
			if !ok || v.Cmp(tc.want) != 0 {
				t.Errorf("e=%d: Parse(%.40s…) = %v %v, want %s", e, tc.in, v, ok, tc.want.Text('p', 0))
			}
		}
	}
}

// exactDecimal writes n × 2^e exactly in "d.ddde±x" form.
func exactDecimal(n *big.Int, e int) string {
	digits := new(big.Int).Set(n)
	exp10 := 0
	if e >= 0 {
		digits.Lsh(digits, uint(e))
	} else {
		// n / 2^k = n × 5^k / 10^k
		digits.Mul(digits, new(big.Int).Exp(big.NewInt(5), big.NewInt(int64(-e)), nil))
		exp10 = e
	}
	s := digits.String()
	return s[:1] + "." + s[1:] + "e" + itoa(exp10+len(s)-1)
}

// nudge moves the decimal text s (d.ddde±x form) a tiny bit up or down by
// changing its last mantissa digit or appending a digit.
func nudge(s string, dir int) string {
	mant, exp, _ := strings.Cut(s, "e")
	if dir > 0 {
		return mant + "0000001e" + exp
	}
	// The last digit of an exact expansion of an odd multiple of a power
	// of two is never 0, so decrementing it borrows nothing.
	b := []byte(mant)
	b[len(b)-1]--
	return string(b) + "e" + exp
}

func itoa(i int) string { return big.NewInt(int64(i)).String() }

func TestParseShapes(t *testing.T) {
	for _, in := range []string{
		"0", "-0", "+0", "1", "-1", ".5", "5.", "-.5e-3", "1E5", "1e+5", "00012", "1e0010",
		"inf", "INF", "-inf", "+Infinity", "iNfInItY", "0x1", "0X1P3", "0x1.", "0x.8", "0x1p-3",
		"+0x1p+3", "-0x0p0", "0x1e3",
	} {
		if _, ok := Parse([]byte(in)); !ok {
			t.Errorf("Parse(%q) rejected", in)
		}
	}
	for _, in := range []string{
		"", " ", " 1", "\t1", "\n1", "\v1", "\f1", "\r1", "1 ", "1\n", "1\x00", "+", "-", ".", "e5", ".e5",
		"1e", "1e+", "1e-", "1ee5", "1.2.3", "1,5", "--1", "+-1", "+ 1", "0x", "0x.", "0xp1", "0x1p", "0x1p+",
		"0xg", "0x1.8q", "nan", "NaN", "-nan", "nan(1)", "in", "infin", "infinityy", "inf ", "1_000", "١",
		"1e5000", "-1e5000", "1e-5000", "0x1p16384", "0x1p-16500", strings.Repeat("1", 5120),
	} {
		if v, ok := Parse([]byte(in)); ok {
			t.Errorf("Parse(%q) = %v, want rejection", in, v)
		}
	}
	if v, _ := Parse([]byte("-0")); !v.Signbit() || v.Sign() != 0 {
		t.Errorf("Parse(-0) = %v, want -0", v)
	}
	if v, _ := Parse([]byte("-0e99999999999999999999")); !v.Signbit() {
		t.Errorf("Parse(-0e99999999999999999999) lost the sign")
	}
}

func TestAdd(t *testing.T) {
	inf := newFloat().SetInf(false)
	ninf := newFloat().SetInf(true)
	halfUlp := hexFloat("0x1p16319") // half an ulp of LDBL_MAX
	for _, tc := range []struct {
		a, b    *big.Float
		wantInf bool
		want    *big.Float
	}{
		{inf, ninf, true, nil}, // NaN, without big.ErrNaN's panic
		{inf, inf, true, nil},
		{ninf, big.NewFloat(1), true, nil},
		{ldblMax, ldblMax, true, nil},
		{ldblMax, new(big.Float).Neg(ldblMax), false, newFloat()},
		{ldblMax, big.NewFloat(1), false, ldblMax},
		// A tie with the odd LDBL_MAX rounds up, out of range.
		{ldblMax, halfUlp, true, nil},
		{ldblMax, new(big.Float).Mul(halfUlp, big.NewFloat(0.75)), false, ldblMax},
		{new(big.Float).Neg(ldblMax), new(big.Float).Neg(halfUlp), true, nil},
	} {
		got, gotInf := Add(tc.a, tc.b)
		if gotInf != tc.wantInf {
			t.Errorf("Add(%v, %v): inf %v, want %v", tc.a, tc.b, gotInf, tc.wantInf)
			continue
		}
		if !gotInf && got.Cmp(tc.want) != 0 {
			t.Errorf("Add(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
	z, _ := Add(big.NewFloat(1), big.NewFloat(-1))
	if z.Signbit() {
		t.Errorf("1 + -1 = -0, want +0")
	}
}

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		in   *big.Float
		want string
	}{
		{newFloat(), "0"},
		{new(big.Float).Neg(newFloat()), "0"},
		{newFloat().SetInf(false), "inf"},
		{newFloat().SetInf(true), "-inf"},
		{big.NewFloat(1.5), "1.5"},
		{big.NewFloat(-2), "-2"},
		{big.NewFloat(100), "100"},
		{hexFloat("0x1p-57"), "0.00000000000000001"}, // 6.9e-18
		{hexFloat("-0x1p-57"), "-0.00000000000000001"},
		{hexFloat("-0x1p-58"), "0"}, // 3.5e-18
		{hexFloat("0x1p-18"), "0.00000381469726562"},
		{hexFloat("0x1p-16445"), "0"},
		{ldblMax, ldblMax.Text('f', 0)},
	} {
		if got := string(Format(tc.in)); got != tc.want {
			t.Errorf("Format(%s) = %q, want %q", tc.in.Text('p', 0), got, tc.want)
		}
	}
	if n := len(Format(new(big.Float).Neg(ldblMax))); n != 4934 {
		t.Errorf("len(Format(-LDBL_MAX)) = %d, want 4934", n)
	}
}

// FuzzParse: Parse never panics, and what it accepts formats to text that
// Parse accepts again.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"0.1", "-0", "inf", "0x1.8p3", "1e4932", "2e-4951", " 1", "1e", "nan"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, ok := Parse(b)
		if !ok {
			return
		}
		out := Format(v)
		if v.IsInf() {
			return
		}
		if _, ok := Parse(out); !ok {
			t.Fatalf("Parse(%q) ok, but Parse(Format) = Parse(%q) fails", b, out)
		}
	})
}

func BenchmarkIncrByFloat(b *testing.B) {
	b.ReportAllocs()
	cur, incr := []byte("10.5"), []byte("0.1")
	for i := 0; i < b.N; i++ {
		incrByFloat(cur, incr)
	}
}
