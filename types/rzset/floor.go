package rzset

import (
	"bytes"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
)

// The floor (codec.Meta.Floor) is a lower bound of the set's score-index
// suffixes, kept exact (the lowest suffix, truncated to codec.ZFloorMax)
// by every write: a delayed-job queue pops or removes its lowest members
// and a leaderboard re-scores them upward, and the point tombstones they
// leave stay in Pebble until a compaction; reads that start at the floor
// rather than at the index's prefix never step over them.

// low returns where reads of the score index yp start: the prefix plus
// the set's floor.
func low(yp []byte, m codec.Meta) []byte {
	return append(yp[:len(yp):len(yp)], m.Floor...)
}

// maxKey returns the larger of a and b.
func maxKey(a, b []byte) []byte {
	if bytes.Compare(a, b) >= 0 {
		return a
	}
	return b
}

// suffix returns a member's score-index suffix: score(8)|member.
func suffix(score float64, member []byte) []byte {
	return append(codec.AppendScore(make([]byte, 0, codec.ScoreLen+len(member)), score), member...)
}

// floorAfter returns the floor of the set m (Count 0: a new set) once the
// members at the score-index suffixes in gone leave and those in added
// arrive: the lowest suffix left, truncated to codec.ZFloorMax; nil when
// none is left. With removals that may include the lowest member it walks
// the index from the floor past the removed members it meets (one seek,
// plus those members); removals all above it keep the floor.
func floorAfter(v *materialize.View, yp []byte, m codec.Meta, gone map[string]bool, added [][]byte) ([]byte, error) {
	cur, have := m.Floor, m.Count > 0
	if len(gone) > 0 && have && !atFloor(gone, cur) {
		// Every member leaving is above the lowest: it stays the floor.
		gone = nil
	}
	if len(gone) > 0 && have {
		have = false
		err := v.IterateNoValues(low(yp, m), codec.PrefixEnd(yp), false, func(k []byte) (bool, error) {
			s := k[len(yp):]
			if gone[string(s)] {
				return true, nil
			}
			cur, have = append([]byte(nil), s...), true
			return false, nil
		})
		if err != nil {
			return nil, err
		}
	}
	for _, a := range added {
		if !have || bytes.Compare(a, cur) < 0 {
			cur, have = a, true
		}
	}
	if !have {
		return nil, nil
	}
	return bytes.Clone(cur[:min(len(cur), codec.ZFloorMax)]), nil
}

// atFloor reports whether a suffix in gone may be the set's lowest, whose
// truncation (codec.ZFloorMax) is floor: one that starts with floor, as
// the lowest does, or sorts below it.
func atFloor(gone map[string]bool, floor []byte) bool {
	for g := range gone {
		if g < string(floor) || len(g) >= len(floor) && g[:len(floor)] == string(floor) {
			return true
		}
	}
	return false
}
