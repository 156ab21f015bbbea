package rzset

import (
	"bytes"
	"math"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
)

// Flags are ZADD's options.
type Flags struct {
	NX, XX, GT, LT, Incr bool
}

// AddResult is what ZADD reports: members added, members whose score
// changed, and for INCR the new score (Found false when the member was
// not added or updated: ZADD's nil reply).
type AddResult struct {
	Added, Updated int64
	Score          float64
	Found          bool
}

// Add adds members or updates their scores (ZADD, ZINCRBY) with Redis's
// zsetAdd rules, in argument order (a member named twice is added, then
// updated). With Incr, the one member's score is incremented by its
// Score (a new member starts at 0). An increment to NaN is ErrNaN and
// changes nothing. A new key is created only when a member is added.
func Add(v *materialize.View, db uint8, key []byte, members []Member, f Flags) (AddResult, []codec.Event, error) {
	var res AddResult
	m, ok, events, err := metaForWrite(v, db, key)
	if err != nil {
		return res, nil, err
	}
	if !ok {
		m = codec.Meta{Type: codec.TypeZSet}
		if len(events) == 0 { // absent, not expired: no member to look up
			v.NoElements(codec.TagZMember, db, key)
		}
	}
	cur := map[string]float64{} // scores decided by earlier members of this call
	has := map[string]bool{}
	type original struct {
		score   float64
		existed bool
	}
	orig := map[string]original{} // the stored state of each member changed
	var triples [][]byte
	for _, mem := range members {
		old, found := cur[string(mem.Member)], has[string(mem.Member)]
		if _, seen := has[string(mem.Member)]; !seen && ok {
			if old, found, err = score(v, db, key, mem.Member); err != nil {
				return res, nil, err
			}
		}
		newScore := mem.Score
		if found {
			if f.NX {
				continue
			}
			if f.Incr {
				if newScore += old; math.IsNaN(newScore) {
					return AddResult{}, nil, ErrNaN
				}
			}
			if (f.LT && newScore >= old) || (f.GT && newScore <= old) {
				continue
			}
			res.Score, res.Found = newScore, true
			if newScore == old {
				continue
			}
			res.Updated++
			triples = append(triples, mem.Member, codec.ScoreArg(newScore), codec.ScoreArg(old))
			if _, ok := orig[string(mem.Member)]; !ok {
				orig[string(mem.Member)] = original{old, true}
			}
		} else {
			if f.XX {
				continue
			}
			res.Score, res.Found = newScore, true
			res.Added++
			triples = append(triples, mem.Member, codec.ScoreArg(newScore), nil)
			orig[string(mem.Member)] = original{}
		}
		cur[string(mem.Member)], has[string(mem.Member)] = newScore, true
	}
	if len(triples) == 0 {
		return res, events, nil
	}
	gone := map[string]bool{}
	var added [][]byte
	for mem, o := range orig {
		if o.existed {
			gone[string(suffix(o.score, []byte(mem)))] = true
		}
		added = append(added, suffix(cur[mem], []byte(mem)))
	}
	floor, err := floorAfter(v, codec.KeyPrefix(codec.TagZScore, db, key), m, gone, added)
	if err != nil {
		return AddResult{}, nil, err
	}
	return res, append(events, addEvents(db, key, m, res.Added, triples, floor)...), nil
}

// addEvents returns the events of an OpZAdd of triples to the set m (new
// when m.Count is 0) that adds added members and leaves it with floor:
// the adds, then the rank blocks built when the set reaches RankOn, then
// the metadata.
func addEvents(db uint8, key []byte, m codec.Meta, added int64, triples [][]byte, floor []byte) []codec.Event {
	prev := m.ExpireAtMs
	same := added == 0 && bytes.Equal(floor, m.Floor)
	m.Count += uint64(added)
	m.Floor = floor
	events := []codec.Event{codec.ZAddEvent(db, key, m.Ranked, triples)}
	if !m.Ranked && m.Count >= RankOn {
		m.Ranked = true
		events = append(events, codec.ZRanksEvent(db, key, true, floor))
	} else if same {
		return events // scores changed above the floor: the metadata did not
	}
	return append(events, codec.SetMetaEvent(db, key, m, prev))
}

// Rem removes members (ZREM) and returns how many were in the set;
// removing the last one deletes the key.
func Rem(v *materialize.View, db uint8, key []byte, members [][]byte) (int64, []codec.Event, error) {
	m, ok, events, err := metaForWrite(v, db, key)
	if err != nil || !ok {
		return 0, events, err
	}
	var gone []Member
	seen := map[string]bool{}
	for _, mem := range members {
		if seen[string(mem)] {
			continue
		}
		seen[string(mem)] = true
		s, found, err := score(v, db, key, mem)
		if err != nil {
			return 0, nil, err
		}
		if found {
			gone = append(gone, Member{mem, s})
		}
	}
	rm, err := remove(v, db, key, m, gone, nil)
	return int64(len(gone)), append(events, rm...), err
}

// pointDeleteMax is the largest set whose removal as a whole is point
// deletions; a larger one is the key's range deletion (DelKeyEvent).
const pointDeleteMax = 64

// remove returns the events that take gone (distinct members of the set
// m) out: the removals with the set's rank blocks kept or dropped, then
// the metadata (its floor moved past them); all of them deletes the key.
// next, when the caller read it, is the lowest member left: the new floor
// without a walk of the index.
func remove(v *materialize.View, db uint8, key []byte, m codec.Meta, gone []Member, next *Member) ([]codec.Event, error) {
	if len(gone) == 0 {
		return nil, nil
	}
	pairs := make([][]byte, 0, 2*len(gone))
	for _, g := range gone {
		pairs = append(pairs, g.Member, codec.ScoreArg(g.Score))
	}
	prev := m.ExpireAtMs
	if uint64(len(gone)) >= m.Count {
		if len(gone) > pointDeleteMax {
			return []codec.Event{codec.DelKeyEvent(db, key, codec.TypeZSet, prev)}, nil
		}
		// Point deletions, so a queue that empties on every pop leaves no
		// range tombstones over the key's prefix.
		return []codec.Event{codec.ZRemEvent(db, key, m.Ranked, pairs), codec.DelMetaEvent(db, key, prev)}, nil
	}
	var floor []byte
	if next != nil {
		s := suffix(next.Score, next.Member)
		floor = s[:min(len(s), codec.ZFloorMax)]
	} else {
		set := make(map[string]bool, len(gone))
		for _, g := range gone {
			set[string(suffix(g.Score, g.Member))] = true
		}
		var err error
		if floor, err = floorAfter(v, codec.KeyPrefix(codec.TagZScore, db, key), m, set, nil); err != nil {
			return nil, err
		}
	}
	m.Count -= uint64(len(gone))
	was := m.Floor
	m.Floor = floor
	if m.Ranked && m.Count < RankOff {
		// The drop walks from the floor before the removal: the removal
		// leaves the blocks as they were, and those wholly below the new
		// floor go too.
		m.Ranked = false
		return []codec.Event{codec.ZRemEvent(db, key, false, pairs), codec.ZRanksEvent(db, key, false, was), codec.SetMetaEvent(db, key, m, prev)}, nil
	}
	return []codec.Event{codec.ZRemEvent(db, key, m.Ranked, pairs), codec.SetMetaEvent(db, key, m, prev)}, nil
}

// RemRange removes the members q selects (ZREMRANGEBYRANK, ZREMRANGEBYSCORE,
// ZREMRANGEBYLEX) and returns how many.
func RemRange(v *materialize.View, db uint8, key []byte, q Query) (int64, []codec.Event, error) {
	m, ok, events, err := metaForWrite(v, db, key)
	if err != nil || !ok {
		return 0, events, err
	}
	gone, err := Range(v, db, key, q)
	if err != nil {
		return 0, nil, err
	}
	rm, err := remove(v, db, key, m, gone, nil)
	return int64(len(gone)), append(events, rm...), err
}

// Pop removes and returns up to count members with the lowest scores, or
// with max the highest, in that order (ZPOPMIN, ZPOPMAX, ZMPOP,
// BZPOPMIN); found is false when the key is missing.
func Pop(v *materialize.View, db uint8, key []byte, max bool, count int64) ([]Member, bool, []codec.Event, error) {
	m, ok, events, err := metaForWrite(v, db, key)
	if err != nil || !ok {
		return nil, false, events, err
	}
	// ZPOPMIN reads one member more: the lowest left, the set's new floor.
	stop := count
	if max {
		stop = count - 1
	}
	got, err := Range(v, db, key, Query{By: ByRank, Start: 0, Stop: stop, Rev: max})
	if err != nil {
		return nil, false, nil, err
	}
	var next *Member
	if int64(len(got)) > count {
		next, got = &got[count], got[:count]
	}
	rm, err := remove(v, db, key, m, got, next)
	return got, true, append(events, rm...), err
}

// Store writes members (distinct) as the sorted set dst, replacing any key
// there and its TTL (ZRANGESTORE, ZUNIONSTORE, ...); an empty result
// deletes dst.
func Store(v *materialize.View, db uint8, dst []byte, members []Member) ([]codec.Event, error) {
	m, ok, events, err := v.MetaForWrite(db, dst)
	if err != nil {
		return nil, err
	}
	if ok {
		events = append(events, codec.DelKeyEvent(db, dst, m.Type, m.ExpireAtMs))
	}
	if len(members) == 0 {
		return events, nil
	}
	triples := make([][]byte, 0, 3*len(members))
	var floor []byte
	for _, mem := range members {
		triples = append(triples, mem.Member, codec.ScoreArg(mem.Score), nil)
		if s := suffix(mem.Score, mem.Member); floor == nil || bytes.Compare(s, floor) < 0 {
			floor = s
		}
	}
	floor = floor[:min(len(floor), codec.ZFloorMax)]
	return append(events, addEvents(db, dst, codec.Meta{Type: codec.TypeZSet}, int64(len(members)), triples, floor)...), nil
}
