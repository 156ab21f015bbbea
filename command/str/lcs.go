package str

import (
	"errors"

	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/internal/lcs"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/types/rstring"
)

// bigLCS admits one LCS at a time whose table is over 64 MiB: Redis runs
// one command at a time, Sediment one per connection, and a table may take
// up to proto-max-bulk-len bytes.
var bigLCS = make(chan struct{}, 1)

const bigLCSTable = 64 << 20

// LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]. Reply: the
// longest common subsequence (bulk string); with LEN its length; with IDX a
// map: "matches" → [[[a0, a1], [b0, b1](, len)], ...] from the strings' ends
// back, "len" → the length. Checks in Redis 7.0's order: the keys' types,
// the options, LEN with IDX, then the sizes.
// https://redis.io/docs/latest/commands/lcs/
func runLCS(x *command.Ctx) error {
	v := x.View()
	var vals [2][]byte
	for i, k := range x.Args[1:3] {
		val, _, err := rstring.Get(v, x.DB, k)
		if errors.Is(err, materialize.ErrWrongType) {
			return command.ErrLCSNotString
		}
		if err != nil {
			return err
		}
		vals[i] = val
	}
	var (
		opts              lcs.Options
		onlyLen, withLens bool
	)
	for i := 3; i < len(x.Args); i++ {
		a := x.Args[i]
		switch {
		case command.EqualFold(a, "IDX"):
			opts.Idx = true
		case command.EqualFold(a, "LEN"):
			onlyLen = true
		case command.EqualFold(a, "WITHMATCHLEN"):
			withLens = true
		case command.EqualFold(a, "MINMATCHLEN") && i+1 < len(x.Args):
			n, err := command.IntArg(x.Args[i+1])
			if err != nil {
				return err
			}
			opts.MinMatchLen = max(n, 0)
			i++
		default:
			return command.ErrSyntax
		}
	}
	if opts.Idx && onlyLen {
		return command.ErrLCSLenAndIdx
	}
	opts.MaxTable = x.Limits.MaxBulkLen
	if (int64(len(vals[0]))+1)*(int64(len(vals[1]))+1)*4 > bigLCSTable {
		bigLCS <- struct{}{}
		defer func() { <-bigLCS }()
	}
	r, err := lcs.Compute(vals[0], vals[1], opts)
	switch {
	case errors.Is(err, lcs.ErrTooLong):
		return command.ErrLCSTooLong
	case errors.Is(err, lcs.ErrTooBig):
		return command.ErrLCSTooBig
	case errors.Is(err, lcs.ErrNoMemory):
		return command.ErrLCSNoMemory
	case err != nil:
		return err
	}
	switch {
	case onlyLen:
		x.Reply.Int(int64(r.Len))
	case opts.Idx:
		x.Reply.Map(2)
		x.Reply.BulkString("matches")
		x.Reply.Array(len(r.Matches))
		for _, m := range r.Matches {
			if withLens {
				x.Reply.Array(3)
			} else {
				x.Reply.Array(2)
			}
			for _, rg := range [][2]int{m.A, m.B} {
				x.Reply.Array(2)
				x.Reply.Int(int64(rg[0]))
				x.Reply.Int(int64(rg[1]))
			}
			if withLens {
				x.Reply.Int(int64(m.Len))
			}
		}
		x.Reply.BulkString("len")
		x.Reply.Int(int64(r.Len))
	default:
		x.Reply.Bulk(r.LCS)
	}
	return nil
}
