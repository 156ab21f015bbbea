package groups

import (
	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/streams"
)

// ClaimArgs are XCLAIM's arguments, parsed.
type ClaimArgs struct {
	Group, Consumer []byte
	MinIdleMs       int64      // only entries idle at least this long move (0: any)
	IDs             []codec.ID //
	DeliveryTimeMs  int64      // the claimed entries' new delivery time; -1: now
	RetryCount      int64      // the new delivery count; -1: incremented (unless JustID)
	Force           bool       // create PEL entries for existing entries not pending
	JustID          bool       // do not increment the delivery count
	LastID          codec.ID   // raise last-delivered-id to this, if greater
}

// Claim moves pending entries to a.Consumer (XCLAIM) and returns the claimed
// entries in argument order. As in Redis (t_stream.c xclaimCommand):
// pending entries whose stream entry was deleted are dropped from the PEL
// and not returned; IDs not pending are skipped unless Force creates them
// (with delivery count 1, then counted like any claim); MinIdleMs applies to
// entries that were pending, but not to entries released by XNACK (8.8).
// The consumer is created, and its seen-time set, whether or not anything
// is claimed; its active-time only when something is (Redis 7.2 on; 7.0
// created it only on a claim). Delayed delivery: a parked entry is claimed
// only from its due time on (idle since then), and FORCE skips an entry
// not yet due. Errors: ErrNoGroup, materialize.ErrWrongType.
// https://redis.io/docs/latest/commands/xclaim/
func Claim(v *materialize.View, db uint8, key []byte, a ClaimArgs) ([]streams.Entry, []codec.Event, error) {
	_, g, err := Lookup(v, db, key, a.Group)
	if err != nil {
		return nil, nil, err
	}
	now := v.NowMs()
	delivery := a.DeliveryTimeMs
	if delivery < 0 || delivery > now {
		delivery = now
	}
	edit := newPELEdit(v, db, key, a.Group, g)
	if g.LastDeliveredID.Less(a.LastID) {
		g.LastDeliveredID = a.LastID
		edit.setGroup(g)
	}
	// Every attempt creates the consumer and moves its seen-time.
	if err := edit.touch(a.Consumer, now, false); err != nil {
		return nil, nil, err
	}
	var out []streams.Entry
	// An ID named twice is claimed twice, as in Redis, the second time
	// seeing the first claim (edit.entry).
	for _, id := range a.IDs {
		pe, pending, err := edit.entry(id)
		if err != nil {
			return nil, nil, err
		}
		e, exists, err := streams.Get(v, db, key, id)
		if err != nil {
			return nil, nil, err
		}
		if !exists {
			if pending {
				if err := edit.del(id, pe); err != nil {
					return nil, nil, err
				}
			}
			continue
		}
		var prev *codec.PELEntry
		if pending {
			old := pe
			prev = &old
		}
		switch {
		case pending:
			if !idleEnough(pe, a.MinIdleMs, now) {
				continue
			}
			if edit.deadLetters(pe) {
				if err := edit.deadLetter(id, e.Fields, pe); err != nil {
					return nil, nil, err
				}
				continue
			}
		case a.Force:
			if !e.Due(now) {
				continue // delayed delivery: never delivered before its due time
			}
			pe = codec.PELEntry{DeliveryCount: 1}
		default:
			continue
		}
		pe.DeliveryTimeMs = delivery
		switch {
		case a.RetryCount >= 0:
			pe.DeliveryCount = uint64(a.RetryCount)
		case !a.JustID:
			pe.DeliveryCount = redelivered(pe.DeliveryCount)
		}
		pe.Consumer, pe.NackSeq, pe.Parked = a.Consumer, 0, false
		if err := edit.set(id, pe, prev); err != nil {
			return nil, nil, err
		}
		out = append(out, e)
	}
	if len(out) > 0 {
		if err := edit.touch(a.Consumer, now, true); err != nil {
			return nil, nil, err
		}
	}
	events, err := edit.finish()
	return out, events, err
}

// idleEnough reports whether XCLAIM or XAUTOCLAIM with min-idle-time
// minIdle (ms) may claim the pending entry pe at now: an entry released
// by XNACK whatever minIdle (Redis 8.8 tests the owner before the idle
// time), a parked one from its due time on (claimable), any other once
// idle minIdle ms.
func idleEnough(pe codec.PELEntry, minIdle, now int64) bool {
	switch {
	case pe.NackSeq > 0:
		return true
	case !claimable(pe, now):
		return false
	}
	return minIdle <= 0 || now-pe.DeliveryTimeMs >= minIdle
}

// claimable reports whether the pending entry pe may be claimed at now,
// whatever the min-idle-time: a parked entry (delayed delivery) not before
// its due time. Its idle time runs from then (its delivery time is its due
// time), so a min-idle-time asks that long after it.
func claimable(pe codec.PELEntry, now int64) bool {
	return !pe.Parked || pe.DeliveryTimeMs <= now
}

// AutoClaimArgs are XAUTOCLAIM's arguments, parsed.
type AutoClaimArgs struct {
	Group, Consumer []byte
	MinIdleMs       int64
	Start           codec.ID
	Count           int // entries to claim (deleted ones count too); Redis's default is 100
	JustID          bool
}

// AutoClaimAttemptsFactor is Redis's attempts_factor: XAUTOCLAIM looks at
// no more than Count times this many PEL entries per call.
const AutoClaimAttemptsFactor = 10

// AutoClaim scans the group's PEL from a.Start and claims for a.Consumer
// the entries idle at least a.MinIdleMs (XAUTOCLAIM), as Redis 7.0's
// xautoclaimCommand: it stops after Count claimed-or-deleted entries or
// Count*10 scanned ones; entries deleted from the stream are dropped from
// the PEL and reported in deleted. next is where the following call should
// start, 0-0 when the scan reached the end. A parked entry (delayed
// delivery) is claimed only from its due time on, idle since then; one
// released by XNACK whatever a.MinIdleMs. The consumer is created, and its
// seen-time set, whether or not anything is claimed (Redis 7.2 on).
// Errors: ErrNoGroup, materialize.ErrWrongType.
// https://redis.io/docs/latest/commands/xautoclaim/
func AutoClaim(v *materialize.View, db uint8, key []byte, a AutoClaimArgs) (next codec.ID, claimed []streams.Entry, deleted []codec.ID, events []codec.Event, err error) {
	_, g, err := Lookup(v, db, key, a.Group)
	if err != nil {
		return codec.ID{}, nil, nil, nil, err
	}
	now := v.NowMs()
	count, attempts := a.Count, a.Count*AutoClaimAttemptsFactor
	p := codec.GroupPrefix(codec.TagPEL, db, key, a.Group)
	type pending struct {
		id codec.ID
		pe codec.PELEntry
	}
	var scanned []pending
	more := false
	if lower, upper, ok := pendingBounds(p, g.PEL, a.Start, codec.MaxID); ok {
		err = v.Iterate(lower, upper, false, func(k, val []byte) (bool, error) {
			id, err := codec.DecodeID(k[len(p):])
			if err != nil {
				return false, err
			}
			if len(scanned) == attempts {
				next, more = id, true
				return false, nil
			}
			pe, err := codec.DecodePELEntry(val)
			if err != nil {
				return false, err
			}
			pe.Consumer = append([]byte(nil), pe.Consumer...)
			scanned = append(scanned, pending{id, pe})
			return true, nil
		})
		if err != nil {
			return codec.ID{}, nil, nil, nil, err
		}
	}
	edit := newPELEdit(v, db, key, a.Group, g)
	// Every attempt creates the consumer and moves its seen-time.
	if err := edit.touch(a.Consumer, now, false); err != nil {
		return codec.ID{}, nil, nil, nil, err
	}
	for _, s := range scanned {
		if count == 0 {
			next, more = s.id, true
			break
		}
		e, exists, err := streams.Get(v, db, key, s.id)
		if err != nil {
			return codec.ID{}, nil, nil, nil, err
		}
		if !exists {
			if err := edit.del(s.id, s.pe); err != nil {
				return codec.ID{}, nil, nil, nil, err
			}
			deleted = append(deleted, s.id)
			count--
			continue
		}
		if !idleEnough(s.pe, a.MinIdleMs, now) {
			continue
		}
		if edit.deadLetters(s.pe) {
			if err := edit.deadLetter(s.id, e.Fields, s.pe); err != nil {
				return codec.ID{}, nil, nil, nil, err
			}
			continue // does not take COUNT
		}
		pe, prev := s.pe, s.pe
		pe.DeliveryTimeMs = now
		if !a.JustID {
			pe.DeliveryCount = redelivered(pe.DeliveryCount)
		}
		pe.Consumer, pe.NackSeq, pe.Parked = a.Consumer, 0, false
		if err := edit.set(s.id, pe, &prev); err != nil {
			return codec.ID{}, nil, nil, nil, err
		}
		claimed = append(claimed, e)
		count--
	}
	if !more {
		next = codec.ID{}
	}
	if len(claimed) > 0 {
		if err := edit.touch(a.Consumer, now, true); err != nil {
			return codec.ID{}, nil, nil, nil, err
		}
	}
	events, err = edit.finish()
	return next, claimed, deleted, events, err
}
