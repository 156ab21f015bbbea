// Package keyspace is the semantics of commands over whole keys of any
// type: decisions over a materialize.View that return results and change
// events. Renaming and copying rewrite the key's sub-keys under the new
// name (codec.OpCopyKey), so they cost O(elements), where Redis's RENAME
// and MOVE are O(1); DEL stays one range deletion per sub-key tag.
// Semantics follow Redis 7.0's db.c.
package keyspace

import (
	"bytes"
	"errors"
	"math/rand/v2"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/internal/num"
	"github.com/sediment-dev/sediment/materialize"
)

// Errors.
var (
	// ErrNoSuchKey: RENAME of a missing key.
	ErrNoSuchKey = errors.New("keyspace: no such key")
	// ErrSameObject: COPY or MOVE onto the key itself.
	ErrSameObject = errors.New("keyspace: source and destination objects are the same")
	// ErrTimeOverflow: a relative expire time added to the decision time
	// leaves the int64 range of Unix milliseconds.
	ErrTimeOverflow = errors.New("keyspace: expire time overflows")
)

// move returns the events that put src's key (metadata m) at (dstDB, dst):
// its sub-keys copied, its metadata written with the same TTL. The caller
// deletes src for a move, and the previous dst first if there was one.
func move(m codec.Meta, srcDB uint8, src []byte, dstDB uint8, dst []byte) []codec.Event {
	var events []codec.Event
	if len(m.Type.SubTags()) > 0 {
		events = append(events, codec.CopyKeyEvent(dstDB, dst, m.Type, srcDB, src))
	}
	return append(events, codec.SetMetaEvent(dstDB, dst, m, 0))
}

// Rename moves src to dst in db (RENAME; with nx, RENAMENX only when dst is
// missing) and reports whether it did. dst is replaced whatever its type;
// the TTL moves with the key. Errors: ErrNoSuchKey.
func Rename(v *materialize.View, db uint8, src, dst []byte, nx bool) (bool, []codec.Event, error) {
	m, ok, events, err := v.MetaForWrite(db, src)
	if err != nil {
		return false, nil, err
	}
	if !ok {
		return false, nil, ErrNoSuchKey
	}
	if bytes.Equal(src, dst) {
		return !nx, events, nil
	}
	dm, dok, devents, err := v.MetaForWrite(db, dst)
	if err != nil {
		return false, nil, err
	}
	events = append(events, devents...)
	if dok {
		if nx {
			return false, events, nil
		}
		events = append(events, codec.DelKeyEvent(db, dst, dm.Type, dm.ExpireAtMs))
	}
	events = append(events, move(m, db, src, db, dst)...)
	return true, append(events, codec.DelKeyEvent(db, src, m.Type, m.ExpireAtMs)), nil
}

// Copy copies (srcDB, src) to (dstDB, dst) with its TTL (COPY) and reports
// whether it did: not when src is missing, nor when dst exists without
// replace. Errors: ErrSameObject.
func Copy(v *materialize.View, srcDB uint8, src []byte, dstDB uint8, dst []byte, replace bool) (bool, []codec.Event, error) {
	if srcDB == dstDB && bytes.Equal(src, dst) {
		return false, nil, ErrSameObject
	}
	m, ok, err := v.Meta(srcDB, src)
	if err != nil || !ok {
		return false, nil, err
	}
	dm, dok, events, err := v.MetaForWrite(dstDB, dst)
	if err != nil {
		return false, nil, err
	}
	if dok {
		if !replace {
			return false, events, nil
		}
		events = append(events, codec.DelKeyEvent(dstDB, dst, dm.Type, dm.ExpireAtMs))
	}
	return true, append(events, move(m, srcDB, src, dstDB, dst)...), nil
}

// Move moves key from db to dstDB (MOVE) and reports whether it did: not
// when it is missing, nor when dstDB has the key. Errors: ErrSameObject.
func Move(v *materialize.View, db uint8, key []byte, dstDB uint8) (bool, []codec.Event, error) {
	if db == dstDB {
		return false, nil, ErrSameObject
	}
	m, ok, events, err := v.MetaForWrite(db, key)
	if err != nil || !ok {
		return false, events, err
	}
	_, dok, devents, err := v.MetaForWrite(dstDB, key)
	if err != nil {
		return false, nil, err
	}
	events = append(events, devents...)
	if dok {
		return false, events, nil
	}
	events = append(events, move(m, db, key, dstDB, key)...)
	return true, append(events, codec.DelKeyEvent(db, key, m.Type, m.ExpireAtMs)), nil
}

// Random returns a random live key of db, or false when it has none
// (RANDOMKEY): a random hash slot, then the first populated slot from
// there (wrapping), then a random key of that slot. Keys in sparse slots
// are likelier than in crowded ones; Redis's pick is uniform over its
// hash table's buckets, which is not uniform either.
func Random(v *materialize.View, db uint8) ([]byte, bool, error) {
	start := uint16(rand.IntN(codec.NumSlots))
	for _, from := range []uint16{start, 0} {
		var slot uint16
		found := false
		err := v.SeekSlots(codec.TagMeta, db, from, func(s uint16) (bool, error) {
			slot, found = s, true
			return false, nil
		})
		if err != nil {
			return nil, false, err
		}
		if !found {
			continue
		}
		var keys [][]byte
		p := codec.SlotDBPrefix(codec.TagMeta, slot, db)
		err = v.IterateKeys(p, codec.PrefixEnd(p), func(k, val []byte) (bool, error) {
			m, err := codec.DecodeMeta(val)
			if err != nil {
				return false, err
			}
			if !v.Expired(m) {
				d, err := codec.DecodeKey(k)
				if err != nil {
					return false, err
				}
				keys = append(keys, append([]byte(nil), d.Key...))
			}
			return len(keys) < 1024, nil
		})
		if err != nil {
			return nil, false, err
		}
		if len(keys) > 0 {
			return keys[rand.IntN(len(keys))], true, nil
		}
	}
	return nil, false, nil
}

// Encoding returns the name Redis 7.0's OBJECT ENCODING gives key's value
// with default settings: strings "int" (a decimal int64), "embstr" (at most
// 44 bytes) or "raw"; hashes "listpack" (at most 128 fields, each field and
// value at most 64 bytes) or "hashtable"; sets "intset" (at most 512
// members, all decimal int64s) or "hashtable"; lists "quicklist"; streams
// "stream". ok is
// false when the key is missing.
func Encoding(v *materialize.View, db uint8, key []byte) (string, bool, error) {
	m, ok, err := v.Meta(db, key)
	if err != nil || !ok {
		return "", false, err
	}
	switch m.Type {
	case codec.TypeString:
		if _, isInt := num.ParseInt(m.Value); isInt {
			return "int", true, nil
		}
		if len(m.Value) <= 44 {
			return "embstr", true, nil
		}
		return "raw", true, nil
	case codec.TypeHash:
		if m.Count > 128 {
			return "hashtable", true, nil
		}
		small, err := allSmall(v, codec.KeyPrefix(codec.TagHash, db, key), func(elem, val []byte) bool { return len(elem) <= 64 && len(val) <= 64 })
		if err != nil || !small {
			return "hashtable", true, err
		}
		return "listpack", true, nil
	case codec.TypeSet:
		if m.Count > 512 {
			return "hashtable", true, nil
		}
		ints, err := allSmall(v, codec.KeyPrefix(codec.TagSet, db, key), func(elem, _ []byte) bool { _, ok := num.ParseInt(elem); return ok })
		if err != nil || !ints {
			return "hashtable", true, err
		}
		return "intset", true, nil
	case codec.TypeList:
		return "quicklist", true, nil
	case codec.TypeZSet:
		if m.Count > 128 {
			return "skiplist", true, nil
		}
		small, err := allSmall(v, codec.KeyPrefix(codec.TagZMember, db, key), func(elem, _ []byte) bool { return len(elem) <= 64 })
		if err != nil || !small {
			return "skiplist", true, err
		}
		return "listpack", true, nil
	}
	return "stream", true, nil
}

// allSmall reports whether ok holds for every element under p.
func allSmall(v *materialize.View, p []byte, ok func(elem, val []byte) bool) (bool, error) {
	all := true
	err := v.Iterate(p, codec.PrefixEnd(p), false, func(k, val []byte) (bool, error) {
		all = ok(k[len(p):], val)
		return all, nil
	})
	return all, err
}
