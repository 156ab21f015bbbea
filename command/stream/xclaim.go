package stream

import (
	"errors"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/groups"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/streams"
)

// lookupGroupFor checks key's type and group's existence the way XCLAIM and
// XAUTOCLAIM report them: WRONGTYPE, or NOGROUP with XPENDING's text.
func lookupGroupFor(v *materialize.View, db uint8, key, group []byte) error {
	_, _, err := groups.Lookup(v, db, key, group)
	if errors.Is(err, groups.ErrNoGroup) {
		return command.ErrNoGroup(key, group)
	}
	return err
}

// parseXClaim parses XCLAIM's arguments after the consumer, in Redis 7.0's
// order: min-idle-time, the IDs (up to the first argument that is not one),
// then the options.
func parseXClaim(args [][]byte, nowMs int64) (groups.ClaimArgs, error) {
	a := groups.ClaimArgs{Group: args[2], Consumer: args[3], DeliveryTimeMs: -1, RetryCount: -1}
	minIdle, ok := command.ParseInt(args[4])
	if !ok {
		return a, command.ErrXClaimMinIdle
	}
	a.MinIdleMs = max(minIdle, 0)
	i := 5
	for ; i < len(args); i++ {
		id, _, _, err := codec.ParseID(args[i], 0, false)
		if err != nil {
			break
		}
		a.IDs = append(a.IDs, id)
	}
	for ; i < len(args); i++ {
		opt, more := args[i], i+1 < len(args)
		switch {
		case command.EqualFold(opt, "FORCE"):
			a.Force = true
		case command.EqualFold(opt, "JUSTID"):
			a.JustID = true
		case command.EqualFold(opt, "IDLE") && more:
			i++
			n, ok := command.ParseInt(args[i])
			if !ok {
				return a, command.ErrXClaimIdle
			}
			a.DeliveryTimeMs = nowMs - n
		case command.EqualFold(opt, "TIME") && more:
			i++
			n, ok := command.ParseInt(args[i])
			if !ok {
				return a, command.ErrXClaimTime
			}
			a.DeliveryTimeMs = n
		case command.EqualFold(opt, "RETRYCOUNT") && more:
			i++
			n, ok := command.ParseInt(args[i])
			if !ok {
				return a, command.ErrXClaimRetryCount
			}
			a.RetryCount = n
		case command.EqualFold(opt, "LASTID") && more:
			i++
			id, err := ParseID(args[i], 0)
			if err != nil {
				return a, err
			}
			a.LastID = id
		default:
			return a, command.ErrXClaimOption(opt)
		}
	}
	return a, nil
}

// XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms]
// [TIME unix-time-milliseconds] [RETRYCOUNT count] [FORCE] [JUSTID] [LASTID id]
// Reply: the claimed entries, or with JUSTID their IDs.
// https://redis.io/docs/latest/commands/xclaim/
func runXClaim(x *command.Ctx) error {
	var (
		entries []streams.Entry
		justID  bool
	)
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		if err := lookupGroupFor(v, x.DB, x.Args[1], x.Args[2]); err != nil {
			return nil, err
		}
		a, err := parseXClaim(x.Args, v.NowMs())
		if err != nil {
			return nil, err
		}
		justID = a.JustID
		var evs []codec.Event
		entries, evs, err = groups.Claim(v, x.DB, x.Args[1], a)
		return evs, wire(err)
	}, func() {
		x.Delivered(x.Args[1], x.Args[2], entries)
		if justID {
			WriteIDs(x.Reply, entries)
			return
		}
		WriteEntries(x.Reply, entries)
	})
}

// XAUTOCLAIM key group consumer min-idle-time start [COUNT count] [JUSTID]
// Reply: [next start ID, claimed entries (or IDs with JUSTID), IDs of
// pending entries that no longer exist and were dropped from the PEL].
// Checks run in Redis 7.0's order: arguments, then type and group.
// https://redis.io/docs/latest/commands/xautoclaim/
func runXAutoClaim(x *command.Ctx) error {
	args := x.Args
	a := groups.AutoClaimArgs{Group: args[2], Consumer: args[3], Count: 100}
	var (
		next    codec.ID
		entries []streams.Entry
		deleted []codec.ID
	)
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		minIdle, ok := command.ParseInt(args[4])
		if !ok {
			return nil, command.ErrXAutoClaimMinIdle
		}
		a.MinIdleMs = max(minIdle, 0)
		start, err := RangeBound(args[5], true)
		if err != nil {
			return nil, err
		}
		a.Start = start
		for i := 6; i < len(args); i++ {
			switch {
			case command.EqualFold(args[i], "COUNT") && i+1 < len(args):
				i++
				n, ok := command.ParseInt(args[i])
				if !ok || n < 1 || n > maxAutoClaimCount {
					return nil, command.ErrXAutoClaimCount
				}
				a.Count = int(n)
			case command.EqualFold(args[i], "JUSTID"):
				a.JustID = true
			default:
				return nil, command.ErrSyntax
			}
		}
		if err := lookupGroupFor(v, x.DB, args[1], args[2]); err != nil {
			return nil, err
		}
		if a.Count >= autoClaimAllocFails {
			return nil, command.ErrXAutoClaimMemory
		}
		var evs []codec.Event
		next, entries, deleted, evs, err = groups.AutoClaim(v, x.DB, args[1], a)
		return evs, wire(err)
	}, func() {
		x.Delivered(args[1], args[2], entries)
		w := x.Reply
		w.Array(3)
		WriteID(w, next)
		if a.JustID {
			WriteIDs(w, entries)
		} else {
			WriteEntries(w, entries)
		}
		w.Array(len(deleted))
		for _, id := range deleted {
			WriteID(w, id)
		}
	})
}

// maxAutoClaimCount is Redis's bound on XAUTOCLAIM's COUNT: LONG_MAX divided
// by the larger of its attempts factor and the size of a stream ID (16), as
// Redis allocates COUNT IDs for the deleted entries' list.
const maxAutoClaimCount = (1<<63 - 1) / max(groups.AutoClaimAttemptsFactor, 16)

// autoClaimAllocFails is the smallest COUNT for which Redis's allocation of
// COUNT stream IDs (2^47 bytes: the whole user address space of x86-64 and
// arm64 Linux) always fails, and it replies ErrXAutoClaimMemory after its
// key and group checks. Sediment allocates nothing by COUNT; it replies the
// same error so that its replies do not depend on the count's size. Smaller
// counts may fail on a given Redis host too (docs/commands.md, XAUTOCLAIM).
const autoClaimAllocFails = 1 << 43
