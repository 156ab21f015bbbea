package lcs

import (
	"errors"
	"math"
)

// DefaultMaxTable is the largest table Compute builds when Options.MaxTable
// is zero: 512 MiB, Redis's default proto-max-bulk-len.
const DefaultMaxTable = 512 << 20

// Errors returned by Compute, before any work is done. Redis's replies for
// the same conditions are, in the order Redis checks them:
//
//	ErrTooLong   "ERR String too long for LCS"
//	ErrTooBig    "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len"
//	ErrNoMemory  "ERR Insufficient memory, failed allocating transient memory for LCS"
var (
	// ErrTooLong is returned when a or b has 2^32-2 bytes or more, so that
	// its indexes would not fit the table's uint32 values.
	ErrTooLong = errors.New("lcs: string too long")
	// ErrTooBig is returned when the table, (len(a)+1) × (len(b)+1) × 4
	// bytes, would exceed Options.MaxTable. Redis checks this for every
	// mode, LEN included, and counts a missing key as an empty string.
	ErrTooBig = errors.New("lcs: table exceeds the memory limit")
	// ErrNoMemory is returned when the table's size in bytes overflows
	// 64 bits, or does not fit in an int on this platform. Redis gives the
	// same answer for the overflow and for a failed allocation; Compute
	// cannot report the latter (Go aborts the process instead), which is
	// why MaxTable must stay well below the memory available.
	ErrNoMemory = errors.New("lcs: cannot allocate the table")
)

// Options selects what Compute returns. The zero value is Redis's plain
// LCS, which also serves LEN.
type Options struct {
	// Idx asks for Result.Matches, Redis's IDX mode.
	Idx bool
	// MinMatchLen drops matches shorter than this many bytes from
	// Result.Matches (MINMATCHLEN). Zero and negative values keep every
	// match, as in Redis, which turns a negative value into 0.
	MinMatchLen int64
	// MaxTable is the largest table Compute will build, in bytes; the
	// broker passes its proto-max-bulk-len (Limits.MaxBulkLen). Zero or
	// negative means DefaultMaxTable.
	MaxTable int64
}

// Match is one range where a and b agree byte for byte: a[A[0]:A[1]+1]
// equals b[B[0]:B[1]+1]. A and B are inclusive, zero-based byte offsets,
// as Redis reports them, and Len = A[1]-A[0]+1 = B[1]-B[0]+1 (what
// WITHMATCHLEN adds).
type Match struct {
	A, B [2]int
	Len  int
}

// Result is Compute's answer.
type Result struct {
	// LCS is the longest common subsequence that Redis picks: the plain
	// reply. It is never nil (an empty LCS is an empty bulk string, not a
	// null), is freshly allocated and may be retained.
	LCS []byte
	// Len is len(LCS): the LEN reply, and the "len" entry of the IDX reply.
	// MinMatchLen does not change it.
	Len int
	// Matches, with Options.Idx, holds the maximal runs of consecutive LCS
	// bytes, from the end of the strings backwards (the last match first),
	// as Redis emits them, without those shorter than MinMatchLen. It is
	// nil without Idx or when no match is kept. Concatenating the runs in
	// reverse order gives LCS when MinMatchLen <= 1.
	Matches []Match
}

// Compute returns what Redis's LCS replies for strings a and b; a missing
// key is the empty string. It does not modify or retain a and b. It is safe
// for concurrent use.
//
// The errors are ErrTooLong, ErrTooBig and ErrNoMemory; see their docs.
// Option errors (LEN with IDX, a bad MINMATCHLEN) and the key type check
// belong to the command layer, which Redis runs first.
//
// Redis's choices, which decide which common subsequence and which ranges
// come back:
//   - table[i][j] is the LCS length of a[:i] and b[:j];
//   - the walk starts at (len(a), len(b)); on equal bytes it takes both
//     (the byte joins the LCS and the current range grows backwards); on
//     different bytes it drops a's last byte when table[i-1][j] >
//     table[i][j-1], and b's otherwise, so ties drop b's byte;
//   - a range ends at the first step that is not a match, or when it
//     reaches offset 0 in either string, where the walk stops.
func Compute(a, b []byte, opts Options) (Result, error) {
	cells, err := tableCells(uint64(len(a)), uint64(len(b)), opts.MaxTable)
	if err != nil {
		return Result{}, err
	}

	// table[i*w+j] is the LCS length of a[:i] and b[:j]; row 0 and column
	// 0 stay 0.
	w := len(b) + 1
	table := make([]uint32, cells)
	for i, ai := range a {
		// prev is row i of the table and row is row i+1, both without
		// column 0, so prev[j] is table[i][j+1].
		prev := table[i*w+1 : (i+1)*w][:len(b)]
		row := table[(i+1)*w+1 : (i+2)*w][:len(b)]
		var left, diag uint32 // table[i+1][j] and table[i][j]
		for j, bj := range b {
			up := prev[j]
			v := left
			if ai == bj {
				v = diag + 1
			} else if up > left {
				v = up
			}
			row[j] = v
			left, diag = v, up
		}
	}

	n := int(table[len(a)*w+len(b)])
	res := Result{LCS: make([]byte, n), Len: n}
	k := n
	var m Match
	inRange := false
	emit := func() {
		inRange = false
		m.Len = m.A[1] - m.A[0] + 1
		if opts.Idx && int64(m.Len) >= opts.MinMatchLen {
			res.Matches = append(res.Matches, m)
		}
	}
	for i, j := len(a), len(b); i > 0 && j > 0; {
		if a[i-1] == b[j-1] {
			k--
			res.LCS[k] = a[i-1]
			i--
			j--
			// Redis also handles a match that does not extend the range in
			// progress (it emits the range and drops that byte from the
			// ranges), but none can occur: a mismatch step ends the range,
			// and a match step leaves the walk just before it.
			if inRange {
				m.A[0], m.B[0] = i, j
			} else {
				m = Match{A: [2]int{i, i}, B: [2]int{j, j}}
				inRange = true
			}
			if i == 0 || j == 0 {
				emit()
			}
			continue
		}
		if table[(i-1)*w+j] > table[i*w+j-1] {
			i--
		} else {
			j--
		}
		if inRange {
			emit()
		}
	}
	return res, nil
}

// tableCells returns the number of cells of the table for strings of alen
// and blen bytes, or the error Redis gives for that size: Compute's checks,
// in Redis's order, apart so that tests can reach sizes no test can
// allocate. maxTable is Options.MaxTable.
func tableCells(alen, blen uint64, maxTable int64) (int, error) {
	if alen >= math.MaxUint32-1 || blen >= math.MaxUint32-1 {
		return 0, ErrTooLong
	}
	if maxTable <= 0 {
		maxTable = DefaultMaxTable
	}
	// Both factors are below 2^32, so cells cannot overflow; its size in
	// bytes can, as in Redis.
	cells := (alen + 1) * (blen + 1)
	size := cells * 4
	if size/4 != cells {
		return 0, ErrNoMemory
	}
	if size > uint64(maxTable) {
		return 0, ErrTooBig
	}
	if cells > math.MaxInt {
		return 0, ErrNoMemory
	}
	return int(cells), nil
}
