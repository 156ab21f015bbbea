package command

import (
	"math"

	"github.com/sediment-dev/sediment/internal/glob"
	"github.com/sediment-dev/sediment/internal/num"
)

// ScanArgs are the arguments of HSCAN and SSCAN (and later ZSCAN):
// key cursor [MATCH pattern] [COUNT count] [NOVALUES].
type ScanArgs struct {
	Cursor   uint64
	Count    int               // default 10
	Match    func([]byte) bool // nil: every element
	NoValues bool              // HSCAN only (Redis 7.4)
}

// ParseScan parses args[2:] of a key scan (args[0] the command, args[1]
// the key). noValues allows NOVALUES. Errors, in Redis's order: ERR invalid
// cursor, then ErrSyntax / ErrNotInteger for the options (COUNT < 1 is a
// syntax error).
func ParseScan(args [][]byte, noValues bool) (ScanArgs, error) {
	a := ScanArgs{Count: 10}
	cur, ok := num.ParseCursor(args[2])
	if !ok {
		return a, ErrInvalidCursor
	}
	a.Cursor = cur
	for i := 3; i < len(args); i++ {
		switch {
		case noValues && EqualFold(args[i], "NOVALUES"):
			a.NoValues = true
		case i+1 >= len(args):
			return a, ErrSyntax
		case EqualFold(args[i], "MATCH"):
			pattern := args[i+1]
			if len(pattern) == 1 && pattern[0] == '*' {
				a.Match = nil
			} else {
				a.Match = func(e []byte) bool { return glob.Match(pattern, e) }
			}
			i++
		case EqualFold(args[i], "COUNT"):
			n, err := IntArg(args[i+1])
			if err != nil {
				return a, err
			}
			if n < 1 {
				return a, ErrSyntax
			}
			a.Count = int(min(n, math.MaxInt32))
			i++
		default:
			return a, ErrSyntax
		}
	}
	return a, nil
}

// EmptyScan replies a scan of a missing key: cursor 0, no elements.
func EmptyScan(x *Ctx) {
	x.Reply.Array(2)
	x.Reply.BulkString("0")
	x.Reply.Array(0)
}
