// Package ldouble reproduces, in pure Go, the C long double arithmetic that
// Redis 7.0 uses for INCRBYFLOAT and HINCRBYFLOAT, so that Sediment replies
// and stores the same text byte for byte. It is a leaf package: standard
// library only (math/big), no I/O, no RESP.
//
// Redis on x86-64 computes these commands in the x87 80-bit extended format:
// a 64-bit significand (explicit leading bit), a 15-bit exponent, round to
// nearest even. float64 gives other text: SET a 0.1 then INCRBYFLOAT a 0.2
// replies "0.3" from Redis but 0.30000000000000004 in float64. Here a long
// double is a *big.Float of precision 64 in mode big.ToNearestEven, whose
// exponent is checked against the long double range after every rounding.
//
// The three functions follow three pieces of Redis 7.0 (src/util.c and
// src/t_string.c, src/t_hash.c):
//
//	Parse   string2ld: strtold on the whole argument, with Redis's rejections
//	Add     value += incr, in long double
//	Format  ld2string(LD_STR_HUMAN): "%.17Lf", trailing zeros and '.' cut,
//	        "-0" made "0"
//
// Composed, as Redis 7.0.15 does it (the error texts belong in the broker's
// errors.go, not here):
//
//	INCRBYFLOAT key incr
//	  cur := Parse(stored value), or 0 when the key is missing
//	                               failure: "ERR value is not a valid float"
//	  inc := Parse(incr)           failure: "ERR value is not a valid float"
//	  sum, inf := Add(cur, inc)    inf:     "ERR increment would produce NaN or Infinity"
//	  store and reply Format(sum)
//
//	HINCRBYFLOAT key field incr
//	  inc := Parse(incr)           failure: "ERR value is not a valid float"
//	  inc is ±Inf                  "ERR value is NaN or Infinity"
//	  cur := Parse(field value), or 0 when the field is missing
//	                               failure: "ERR hash value is not a float"
//	  sum, inf := Add(cur, inc)    inf:     "ERR increment would produce NaN or Infinity"
//	  store and reply Format(sum)
//
// Note the order: INCRBYFLOAT parses the stored value first, HINCRBYFLOAT
// the increment first; and Parse accepts "inf", which only Add (or
// HINCRBYFLOAT's own check) turns into an error.
//
// Invariants: every *big.Float returned by Parse and Add has precision 64,
// mode ToNearestEven, and is finite (or, from Parse only, ±Inf) with
// magnitude at most LDBL_MAX (about 1.18973149535723176502e+4932). Nothing
// here modifies its arguments, and every function is safe for concurrent use.
//
// Exactness. Parse rounds the exact value of the text once (decimal text
// goes through big.Int and one big.Float.Quo; big.Float.Parse is not used:
// it scales by a rounded power of five and misrounds near-ties); Add
// rounds once and Format expands exactly. Two long double details are
// handled specially:
//
//   - Subnormals (magnitudes below 2^-16382, about 3.36e-4932) keep 64
//     significant bits here where the x87 keeps fewer. Which strings Parse
//     accepts in that range is exact, and the kept bits never reach
//     Format's text: any sum below 5e-18 in magnitude formats as "0", and a
//     subnormal added to anything larger is absorbed, as on the x87.
//   - glibc's strtold rounds 2^-16446 × (1 + 2^-64) to zero (it drops the
//     65th bit in that one subnormal case), so Redis rejects it; Parse
//     copies that bug, see Parse.
//
// The differential tests in this package check all of this against a real
// redis-server 7.0 (glibc, x86-64) when one is on PATH.
package ldouble
