package ldouble

import (
	"math/big"
)

const (
	// prec is the long double significand width in bits.
	prec = 64

	// maxLen is the longest argument string2ld accepts: it copies the
	// argument into a buffer of MAX_LONG_DOUBLE_CHARS (5*1024) bytes with
	// its terminating NUL.
	maxLen = 5*1024 - 1

	// maxExp is the largest big.Float exponent (x = mant × 2^exp with
	// 0.5 <= |mant| < 1) of a finite long double: LDBL_MAX is
	// (1 - 2^-64) × 2^16384.
	maxExp = 16384

	// zeroBelow: strtold rounds a nonzero value to zero, and string2ld then
	// rejects it, when its magnitude is at most 2^zeroBelow, half the
	// smallest subnormal 2^-16445 (the tie rounds to even, that is to zero).
	zeroBelow = -16446

	// expCap bounds the exponents we accumulate from text. Anything past
	// it is far outside the long double range whatever the digits, so the
	// saturated value decides the same overflow or underflow.
	expCap = 1 << 30
)

// newFloat returns a long double zero: precision 64, round to nearest even.
func newFloat() *big.Float {
	return new(big.Float).SetPrec(prec).SetMode(big.ToNearestEven)
}

// Parse parses b as Redis 7.0's string2ld does: C strtold over the whole of
// b, in the C locale. It accepts, with an optional leading '+' or '-':
//
//   - decimal: digits with an optional '.', at least one digit, then an
//     optional exponent 'e' or 'E', optional sign, one digit or more
//     ("1", "-.5", "5.", "1e-3", "007");
//   - hexadecimal: "0x" or "0X", hex digits with an optional '.', at least
//     one hex digit, then an optional binary exponent 'p' or 'P', optional
//     sign, one decimal digit or more ("0x1.8p3" is 12, "0x1e3" is 483);
//   - "inf" and "infinity", in any case, which give ±Inf.
//
// It rejects, as Redis does: the empty string, strings longer than 5119
// bytes, a leading C space (one of " \t\n\v\f\r", though strtold would skip
// it), anything after the number (trailing spaces, a NUL byte, a dangling
// "e"), NaN in any spelling, values that overflow the long double range
// (strtold's ERANGE with ±HUGE_VAL) and nonzero values that round to zero
// (ERANGE with a zero result): magnitudes up to 2^-16446, half the smallest
// subnormal, plus the one value glibc wrongly rounds to zero,
// 2^-16446 × (1 + 2^-64) ("0x1.0000000000000001p-16446"). Zero itself is
// accepted with any exponent ("-0e99999999999" is -0).
//
// On success v is the value correctly rounded, once, to a long double (see
// the package doc for subnormals); it is newly allocated and b is not
// retained. On failure v is nil and ok false.
//
// Cost: the 5119-byte limit bounds the exact arithmetic; the worst texts
// (5000 digits with an extreme exponent) take about 0.3 ms and 100 KB.
func Parse(b []byte) (v *big.Float, ok bool) {
	if len(b) == 0 || len(b) > maxLen || isCSpace(b[0]) {
		return nil, false
	}
	neg := false
	s := b
	if s[0] == '+' || s[0] == '-' {
		neg = s[0] == '-'
		s = s[1:]
	}
	switch {
	case equalFold(s, "inf") || equalFold(s, "infinity"):
		v = newFloat().SetInf(neg)
		return v, true
	case len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'):
		v, ok = parseHex(s[2:])
	default:
		v, ok = parseDec(s)
	}
	if !ok {
		return nil, false
	}
	if neg {
		v.Neg(v)
	}
	return v, true
}

// Add returns a+b rounded once to a long double, as the x87 adds two long
// doubles. inf is true when the sum is infinite or NaN in long double
// arithmetic: either operand is ±Inf, or the rounded sum exceeds LDBL_MAX.
// sum is then nil. An exact zero sum is +0 (-0 only for -0 + -0), as in
// IEEE 754. a and b are not modified; sum is newly allocated.
func Add(a, b *big.Float) (sum *big.Float, inf bool) {
	if a.IsInf() || b.IsInf() {
		return nil, true
	}
	sum = newFloat().Add(a, b)
	if sum.MantExp(nil) > maxExp {
		return nil, true
	}
	return sum, false
}

// Format renders v as Redis 7.0's ld2string(LD_STR_HUMAN): printf "%.17Lf"
// (exact decimal expansion, rounded half to even at the 17th fractional
// digit, as glibc does), then trailing zeros after the '.' removed, then a
// trailing '.' removed, and "-0" replaced by "0". So 0.3 gives "0.3", 5200
// gives "5200", -1e-20 gives "0", and LDBL_MAX gives its 4933 integer
// digits. ±Inf gives "inf" and "-inf" (Redis's explicit case; INCRBYFLOAT
// never stores it).
//
// Redis's buffer is MAX_LONG_DOUBLE_CHARS bytes and the longest text, that
// of -LDBL_MAX, is 4952 bytes, so ld2string's "no room" failure cannot
// happen for a long double and has no counterpart here. A v of more than 64
// bits of precision is formatted from its exact value. The returned slice
// is newly allocated and owned by the caller; v is not modified.
func Format(v *big.Float) []byte {
	if v.IsInf() {
		if v.Signbit() {
			return []byte("-inf")
		}
		return []byte("inf")
	}
	// |v| < 2^-58 < 5e-18 rounds to 0.00000000000000000 (or its negative,
	// which ends as "0" too). This also spares the exact decimal expansion
	// of tiny values, thousands of digits long.
	if v.Sign() == 0 || v.MantExp(nil) <= -58 {
		return []byte("0")
	}
	buf := v.Append(make([]byte, 0, 32), 'f', 17)
	l := len(buf)
	for buf[l-1] == '0' {
		l--
	}
	if buf[l-1] == '.' {
		l--
	}
	buf = buf[:l]
	if l == 2 && buf[0] == '-' && buf[1] == '0' {
		return []byte("0")
	}
	return buf
}

// parseDec parses an unsigned decimal number that must span all of s and
// returns its rounded value, or ok false when s is not one or the value
// overflows or rounds to zero.
func parseDec(s []byte) (v *big.Float, ok bool) {
	digits, frac, i := scanMantissa(s, isDigit)
	if i < 0 {
		return nil, false
	}
	var exp int64
	if i < len(s) {
		if s[i] != 'e' && s[i] != 'E' {
			return nil, false
		}
		var eok bool
		exp, eok = parseExp(s[i+1:])
		if !eok {
			return nil, false
		}
	}
	// Trailing zeros become a smaller frac: fewer digits to multiply.
	for len(digits) > 0 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
		frac--
	}
	if len(digits) == 0 {
		return newFloat(), true
	}
	e10 := exp - frac // value = digits × 10^e10
	nd := int64(len(digits))
	// 10^(nd-1+e10) <= value < 10^(nd+e10).
	if nd-1+e10 > 4932 { // >= 1e4933 > LDBL_MAX
		return nil, false
	}
	if nd+e10 <= -4951 { // < 1e-4951 < 2^-16446 (about 1.82e-4951)
		return nil, false
	}
	m, _ := new(big.Int).SetString(string(digits), 10)
	v = newFloat()
	if e10 >= 0 {
		m.Mul(m, pow10(e10))
		v.SetInt(m)
	} else {
		den := pow10(-e10)
		// Quo of two exact operands rounds once.
		v.Quo(new(big.Float).SetInt(m), new(big.Float).SetInt(den))
		// Rounding moves the exponent by one at most, so only these can be
		// at or below 2^-16446 exactly.
		if v.MantExp(nil) <= zeroBelow+2 {
			// value <= 2^-16446  <=>  m × 2^16446 <= 10^-e10
			if new(big.Int).Lsh(m, -zeroBelow).Cmp(den) <= 0 {
				return nil, false
			}
		}
	}
	if v.MantExp(nil) > maxExp {
		return nil, false
	}
	return v, true
}

// parseHex parses the part of an unsigned hexadecimal number after its
// "0x", which must span all of s, like parseDec.
func parseHex(s []byte) (v *big.Float, ok bool) {
	// "0x" with no digit is, to strtold, "0" followed by junk.
	digits, frac, i := scanMantissa(s, isHex)
	if i < 0 {
		return nil, false
	}
	var exp int64
	if i < len(s) {
		if s[i] != 'p' && s[i] != 'P' {
			return nil, false
		}
		var eok bool
		exp, eok = parseExp(s[i+1:])
		if !eok {
			return nil, false
		}
	}
	if len(digits) == 0 {
		return newFloat(), true
	}
	m, _ := new(big.Int).SetString(string(digits), 16)
	e2 := exp - 4*frac // value = m × 2^e2
	// 2^(bits-1+e2) <= value < 2^(bits+e2).
	top := int64(m.BitLen()) + e2
	if top-1 > maxExp { // >= 2^16384 > LDBL_MAX
		return nil, false
	}
	// value <= 2^-16446 when it is below 2^top <= 2^-16446, or when it is
	// exactly 2^(top-1) = 2^-16446.
	if top <= zeroBelow || (top-1 == zeroBelow && isPow2(m)) {
		return nil, false
	}
	// glibc's strtold (round_and_return, the shift == MANT_DIG case) drops
	// the 65th significant bit when it rounds a value of [2^-16446,
	// 2^-16445) to a subnormal, so it rounds 2^-16446 × (1 + 2^-64) to
	// zero as if it were the tie 2^-16446, where the correctly rounded
	// result is 2^-16445. Redis 7.0.15 then rejects it; so do we. A decimal
	// text cannot be that value within 5119 bytes.
	if top-1 == zeroBelow && isGlibcZero(m) {
		return nil, false
	}
	v = newFloat().SetInt(m)
	v.SetMantExp(v, int(e2))
	if v.MantExp(nil) > maxExp {
		return nil, false
	}
	return v, true
}

// scanMantissa reads the digits (as told by isDigit) of s with at most one
// '.' among them, up to the first other byte, at index end; end is -1 when
// there is no digit. digits are the digits read without their leading
// zeros; frac counts those after the '.'.
func scanMantissa(s []byte, isDigit func(byte) bool) (digits []byte, frac int64, end int) {
	seen, dot := false, false
	for end = 0; end < len(s); end++ {
		c := s[end]
		if c == '.' && !dot {
			dot = true
			continue
		}
		if !isDigit(c) {
			break
		}
		seen = true
		if dot {
			frac++
		}
		if c != '0' || len(digits) > 0 {
			digits = append(digits, c)
		}
	}
	if !seen {
		return nil, 0, -1
	}
	return digits, frac, end
}

// parseExp parses an exponent: an optional sign and one decimal digit or
// more, spanning all of s. Its magnitude saturates at expCap.
func parseExp(s []byte) (exp int64, ok bool) {
	neg := false
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	if len(s) == 0 {
		return 0, false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		if exp < expCap {
			exp = exp*10 + int64(c-'0')
		}
	}
	if neg {
		exp = -exp
	}
	return exp, true
}

// pow10 returns 10^n for n >= 0.
func pow10(n int64) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(n), nil)
}

// isGlibcZero reports whether m > 0 is (2^64 + 1) × 2^j for some j >= 0.
func isGlibcZero(m *big.Int) bool {
	odd := new(big.Int).Rsh(m, m.TrailingZeroBits())
	return odd.Cmp(twoTo64Plus1) == 0
}

var twoTo64Plus1 = new(big.Int).Add(new(big.Int).Lsh(big.NewInt(1), 64), big.NewInt(1))

// isPow2 reports whether m > 0 is a power of two.
func isPow2(m *big.Int) bool {
	return m.TrailingZeroBits() == uint(m.BitLen()-1)
}

// isCSpace reports whether c is a space in the C locale's isspace.
func isCSpace(c byte) bool {
	return c == ' ' || (c >= '\t' && c <= '\r')
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// equalFold reports whether s equals the lower-case ASCII word w, ignoring
// ASCII case.
func equalFold(s []byte, w string) bool {
	if len(s) != len(w) {
		return false
	}
	for i := range s {
		if s[i]|0x20 != w[i] {
			return false
		}
	}
	return true
}
