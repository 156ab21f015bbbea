package groups

import (
	"bytes"
	"errors"
	"math"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/streams"
)

// NackMode is XNACK's mode: how the released entries' delivery counts
// change.
type NackMode int

// The modes (Redis 8.8).
const (
	NackSilent NackMode = iota // the delivery did not count: count - 1 (not below 0)
	NackFail                   // the consumer failed: count unchanged
	NackFatal                  // never retry: count set to the largest int64
)

// NackArgs are XNACK's arguments.
type NackArgs struct {
	Mode       NackMode
	IDs        []codec.ID
	RetryCount int64 // >= 0: the new delivery count, whatever the mode; -1: none
	Force      bool  // IDs not pending but in the stream enter the NACK zone too
}

// Nack releases pending entries of group without acknowledging them
// (XNACK): each loses its owner and goes to the end of the group's NACK
// zone (delivery time 0), where XREADGROUP CLAIM takes entries first, in
// the order they were released, and XCLAIM and XAUTOCLAIM find them idle.
// IDs not pending are skipped, unless Force and the entry exists (it then
// enters the zone with delivery count 0, or RetryCount, or the largest
// int64 for NackFatal). Delayed delivery: an entry not yet due is skipped,
// pending (parked) or not, since the NACK zone is claimable at once. It
// returns how many entries it released. Errors: ErrNoGroup,
// materialize.ErrWrongType.
// https://redis.io/docs/latest/commands/xnack/
func Nack(v *materialize.View, db uint8, key, group []byte, a NackArgs) (int, []codec.Event, error) {
	_, g, err := Lookup(v, db, key, group)
	if err != nil {
		return 0, nil, err
	}
	edit := newPELEdit(v, db, key, group, g)
	n := 0
	for _, id := range a.IDs {
		prev, pending, err := edit.entry(id)
		if err != nil {
			return 0, nil, err
		}
		var count uint64
		switch {
		case pending && !claimable(prev, v.NowMs()):
			continue // parked, not yet due (delayed delivery): it stays parked
		case pending:
			count = prev.DeliveryCount
			switch a.Mode {
			case NackSilent:
				count = max(count, 1) - 1
			case NackFatal:
				count = math.MaxInt64
			}
		case !a.Force:
			continue
		default:
			e, exists, err := streams.Get(v, db, key, id)
			if err != nil {
				return 0, nil, err
			}
			if !exists || !e.Due(v.NowMs()) {
				continue // gone, or not yet due (delayed delivery)
			}
			if a.Mode == NackFatal {
				count = math.MaxInt64
			}
		}
		if a.RetryCount >= 0 {
			count = uint64(a.RetryCount)
		}
		edit.g.NackNext = max(edit.g.NackNext, 1)
		pe := codec.PELEntry{DeliveryCount: count, NackSeq: edit.g.NackNext}
		edit.g.NackNext++
		edit.gDirty = true
		var was *codec.PELEntry
		if pending {
			was = &prev
		}
		if err := edit.set(id, pe, was); err != nil {
			return 0, nil, err
		}
		n++
	}
	if n == 0 {
		return 0, nil, nil
	}
	events, err := edit.finish()
	return n, events, err
}

// redelivered returns a delivery count after one more delivery, kept
// within int64 (XNACK FATAL sets the largest; clients read counts as
// signed 64-bit integers).
func redelivered(n uint64) uint64 {
	if n >= math.MaxInt64 {
		return math.MaxInt64
	}
	return n + 1
}

// ErrDeadLetterSelf: a group's dead-letter stream is its own stream.
var ErrDeadLetterSelf = errors.New("groups: the dead-letter stream is the group's own stream")

// SetDeadLetter turns dead letters on for group (XGROUP DEADLETTER, a
// Sediment extension): from then on a claim (XREADGROUP CLAIM, XCLAIM,
// XAUTOCLAIM) that meets a pending entry delivered maxDeliveries times
// moves it to the stream dlq instead. maxDeliveries 0 turns them off.
// Errors: ErrNoGroup, ErrDeadLetterSelf, materialize.ErrWrongType.
// docs/rfcs/20261126_dead_letters_delayed_delivery.md
func SetDeadLetter(v *materialize.View, db uint8, key, group, dlq []byte, maxDeliveries uint64) ([]codec.Event, error) {
	_, g, err := Lookup(v, db, key, group)
	if err != nil {
		return nil, err
	}
	if maxDeliveries > 0 && bytes.Equal(dlq, key) {
		return nil, ErrDeadLetterSelf
	}
	g.MaxDeliveries, g.DeadLetterKey = maxDeliveries, string(dlq)
	if maxDeliveries == 0 {
		g.DeadLetterKey = ""
	}
	return []codec.Event{codec.GroupSetEvent(db, key, group, g)}, nil
}
