package stream

import (
	"errors"
	"fmt"
	"math"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/groups"
	"github.com/sediment-dev/sediment/materialize"
)

// XNACK's errors (Redis 8.8). Only the mode's text is Redis's code as
// published; the others follow client libraries' and other servers' tests
// of 8.8.
const (
	errNackMode       command.WireError = "ERR mode must be SILENT, FAIL, or FATAL"
	errNackNumIDs     command.WireError = "ERR numids must be a positive integer"
	errNackNumIDsLess command.WireError = "ERR number of IDs doesn't match numids"
	errNackRetryCount command.WireError = "ERR Invalid RETRYCOUNT value, must be >= 0"
	errNackNoIDS      command.WireError = "ERR syntax error, expected IDS keyword"
)

// XNACK key group <SILENT | FAIL | FATAL> IDS numids id [id ...] [RETRYCOUNT count] [FORCE] (Redis 8.8)
// Reply: integer, the number of entries released (IDs not pending are
// skipped unless FORCE). The mode comes third; IDS, RETRYCOUNT and FORCE
// follow in any order. Then the key and group (NOGROUP), then the IDs, all
// checked before anything changes (groups.Nack).
// https://redis.io/docs/latest/commands/xnack/
func runXNack(x *command.Ctx) error {
	a := groups.NackArgs{RetryCount: -1}
	switch m := x.Args[3]; {
	case command.EqualFold(m, "SILENT"):
		a.Mode = groups.NackSilent
	case command.EqualFold(m, "FAIL"):
		a.Mode = groups.NackFail
	case command.EqualFold(m, "FATAL"):
		a.Mode = groups.NackFatal
	default:
		return errNackMode
	}
	var idArgs [][]byte
	for i := 4; i < len(x.Args); i++ {
		o, more := x.Args[i], len(x.Args)-i-1
		switch {
		case command.EqualFold(o, "IDS") && more > 0:
			n, ok := command.ParseInt(x.Args[i+1])
			if !ok || n < 1 || n > math.MaxInt32 {
				return errNackNumIDs
			}
			if n > int64(more-1) {
				return errNackNumIDsLess
			}
			idArgs = x.Args[i+2 : i+2+int(n)]
			i += 1 + int(n)
		case command.EqualFold(o, "RETRYCOUNT") && more > 0:
			n, ok := command.ParseInt(x.Args[i+1])
			if !ok || n < 0 {
				return errNackRetryCount
			}
			a.RetryCount = n
			i++
		case command.EqualFold(o, "FORCE"):
			a.Force = true
		default:
			return command.WireError(fmt.Sprintf("ERR Unrecognized XNACK option '%s'", command.Sanitize(o, 128)))
		}
	}
	if idArgs == nil {
		return errNackNoIDS
	}
	key, group := x.Args[1], x.Args[2]
	var n int
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		if _, _, err := groups.Lookup(v, x.DB, key, group); err != nil {
			if errors.Is(err, groups.ErrNoGroup) {
				return nil, command.ErrNoGroup(key, group)
			}
			return nil, err
		}
		var err error
		if a.IDs, err = parseIDs(idArgs); err != nil {
			return nil, err
		}
		var evs []codec.Event
		n, evs, err = groups.Nack(v, x.DB, key, group, a)
		return evs, err
	}, func() { x.Reply.Int(int64(n)) })
}
