package stream

import (
	"fmt"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/streams"
)

// XCFGSET's errors (Redis 8.6).
var (
	errXCfgSetNoParam  command.WireError = "ERR At least one parameter (IDMP-DURATION or IDMP-MAXSIZE) is required"
	errXCfgSetDuration                   = command.WireError(fmt.Sprintf("ERR IDMP-DURATION must be between 1 and %d seconds", streams.IDMPDurationMax))
	errXCfgSetMaxSize                    = command.WireError(fmt.Sprintf("ERR IDMP-MAXSIZE must be between 1 and %d entries", streams.IDMPMaxSizeMax))
)

// XCFGSET key [IDMP-DURATION duration] [IDMP-MAXSIZE maxsize] (Redis 8.6)
// Reply: OK. Sets the stream's idempotent-production settings: the
// seconds an idempotent ID is kept (1..86400) and how many a producer
// keeps (1..10000). A change of either drops every producer's recorded IDs
// (the same values again drop nothing). Options are checked in order
// before the key; a missing key is ERR no such key.
// https://redis.io/docs/latest/commands/xcfgset/
func runXCfgSet(x *command.Ctx) error {
	if len(x.Args) == 2 {
		return errXCfgSetNoParam
	}
	var durationS, maxSize *int64
	for i := 2; i < len(x.Args); i += 2 {
		a := x.Args[i]
		isDuration, isMax := command.EqualFold(a, "IDMP-DURATION"), command.EqualFold(a, "IDMP-MAXSIZE")
		if (!isDuration && !isMax) || i+1 >= len(x.Args) {
			return command.ErrSyntax
		}
		n, err := command.IntArg(x.Args[i+1])
		if err != nil {
			return err
		}
		switch {
		case isDuration && (n < 1 || n > streams.IDMPDurationMax):
			return errXCfgSetDuration
		case isMax && (n < 1 || n > streams.IDMPMaxSizeMax):
			return errXCfgSetMaxSize
		case isDuration:
			durationS = &n
		default:
			maxSize = &n
		}
	}
	cfg := x.StreamConfig()
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		ok, evs, err := streams.SetIDMPConfig(v, x.DB, x.Args[1], durationS, maxSize, cfg)
		if err == nil && !ok {
			err = command.ErrNoSuchKey
		}
		return evs, err
	}, func() { x.Reply.OK() })
}
