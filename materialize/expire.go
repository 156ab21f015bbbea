package materialize

import (
	"github.com/cockroachdb/pebble/v2"

	"github.com/sediment-dev/sediment/codec"
)

// ExpiredKey names a key removed by active expiry.
type ExpiredKey struct {
	DB  uint8
	Key []byte
}

// ExpireCycle is one round of active expiry: it walks the TTL index of each
// populated slot up to the current time and deletes, through Write, up to
// limit keys whose deadline has passed. TTL index entries that no longer
// match their key's metadata (left by FLUSHDB or an overwrite) are removed
// too. It returns the keys it deleted.
func (s *Store) ExpireCycle(limit int) ([]ExpiredKey, error) {
	var out []ExpiredKey
	_, err := s.Write(func(v *View) ([]codec.Event, error) {
		out = out[:0]
		it, err := v.r.NewIter(&pebble.IterOptions{
			LowerBound: []byte{byte(codec.TagTTL)},
			UpperBound: []byte{byte(codec.TagTTL) + 1},
		})
		if err != nil {
			return nil, err
		}
		defer it.Close()
		defer v.iters.record(it)
		var events []codec.Event
		for valid := it.First(); valid && len(events) < limit; {
			slot, deadline, db, key, err := codec.DecodeTTLKey(it.Key())
			if err != nil {
				return nil, err
			}
			if deadline >= v.NowMs() {
				if slot == codec.NumSlots-1 {
					break
				}
				valid = it.SeekGE(codec.SlotPrefix(codec.TagTTL, slot+1))
				continue
			}
			key = append([]byte(nil), key...)
			m, ok, err := v.rawMeta(db, key)
			if err != nil {
				return nil, err
			}
			switch {
			case ok && m.ExpireAtMs == deadline:
				events = append(events, codec.DelKeyEvent(db, key, m.Type, deadline))
				out = append(out, ExpiredKey{db, key})
			default:
				events = append(events, codec.TTLDelEvent(db, key, deadline))
			}
			valid = it.Next()
		}
		return events, it.Error()
	})
	return out, err
}
