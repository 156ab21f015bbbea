package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrCorrupt marks every decode failure: errors.Is(err, ErrCorrupt) holds for
// any error a decoder in this package returns for malformed bytes.
var ErrCorrupt = errors.New("codec: corrupt")

func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}

// Tag is the first byte of every key and names its kind.
type Tag byte

// The key tags. Their values are part of the on-disk format.
const (
	TagMeta        Tag = 'T' // T|slot|db|key → Meta value
	TagStreamEntry Tag = 'X' // X|slot|db|key|ID(16) → entry fields
	TagGroup       Tag = 'G' // G|slot|db|key|group → Group value
	TagConsumer    Tag = 'C' // C|slot|db|key|group|consumer → Consumer value
	TagPEL         Tag = 'P' // P|slot|db|key|group|ID(16) → PELEntry value
	TagConsumerPEL Tag = 'Q' // Q|slot|db|key|group|consumer|ID(16) → empty
	TagPELTime     Tag = 'W' // W|slot|db|key|group|delivery time(8)|ID(16) → empty
	TagHash        Tag = 'H' // H|slot|db|key|field → value
	TagSet         Tag = 'S' // S|slot|db|key|member → empty
	TagList        Tag = 'I' // I|slot|db|key|position(8) → element
	TagZMember     Tag = 'Z' // Z|slot|db|key|member → score (8)
	TagZScore      Tag = 'Y' // Y|slot|db|key|score(8)|member → empty
	TagZBlock      Tag = 'B' // B|slot|db|key|upper fence → member count | lower fence
	TagTTL         Tag = 'E' // E|slot|deadline(8)|db|key → empty
	TagChangeLog   Tag = 'L' // L|seq(8) → change-log Record
	TagCount       Tag = 'K' // K|db → key counts (keys, keys with a TTL)
	TagDBMap       Tag = 'D' // D → the db map: storage db of each logical db
	TagApplied     Tag = 'A' // A → the sequence of the last change-log record applied
	TagFormat      Tag = 'F' // F → the store's format flags (u64)
	TagValueRef    Tag = 'R' // R|segment(8)|offset(8) → db(1)|key
)

// StreamTags lists the tags of a stream's sub-keys other than its metadata.
var StreamTags = []Tag{TagStreamEntry, TagGroup, TagConsumer, TagPEL, TagConsumerPEL, TagPELTime, TagIDMPState, TagIDMPProducer, TagIDMPByIID, TagIDMPByID, TagStreamNode}

// DataTags lists every tag that holds user data (everything but the change
// log). Note that TTL keys (TagTTL) put the db after the deadline, so a
// per-db prefix of TagTTL does not select one db's entries.
var DataTags = []Tag{TagMeta, TagStreamEntry, TagGroup, TagConsumer, TagPEL, TagConsumerPEL, TagPELTime, TagIDMPState, TagIDMPProducer, TagIDMPByIID, TagIDMPByID, TagIDMPExpiry, TagStreamNode, TagHash, TagSet, TagList, TagZMember, TagZScore, TagZBlock, TagTTL}

// keyHeaderLen is tag(1) + slot(2) + db(1) + keylen(4).
const keyHeaderLen = 8

// KeyPrefix returns tag|slot|db|keylen|key: the prefix shared by all of the
// user key's sub-keys under tag. For TagMeta it is the whole metadata key.
func KeyPrefix(tag Tag, db uint8, key []byte) []byte {
	return AppendKeyPrefix(make([]byte, 0, keyHeaderLen+len(key)+IDLen), tag, db, key)
}

// AppendKeyPrefix appends tag|slot|db|keylen|key to b.
func AppendKeyPrefix(b []byte, tag Tag, db uint8, key []byte) []byte {
	b = append(b, byte(tag))
	b = binary.BigEndian.AppendUint16(b, Slot(key))
	b = append(b, db)
	b = binary.BigEndian.AppendUint32(b, uint32(len(key)))
	return append(b, key...)
}

// AppendName appends a length-prefixed name (uint32 big-endian length, then
// the bytes): the form groups and consumers take inside keys.
func AppendName(b []byte, name []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(name)))
	return append(b, name...)
}

// SlotDBPrefix returns tag|slot|db: the span of every key of one db in one slot.
func SlotDBPrefix(tag Tag, slot uint16, db uint8) []byte {
	b := []byte{byte(tag)}
	b = binary.BigEndian.AppendUint16(b, slot)
	return append(b, db)
}

// SlotPrefix returns tag|slot.
func SlotPrefix(tag Tag, slot uint16) []byte {
	return binary.BigEndian.AppendUint16([]byte{byte(tag)}, slot)
}

// MetaKey returns the metadata key of (db, key).
func MetaKey(db uint8, key []byte) []byte { return KeyPrefix(TagMeta, db, key) }

// AppendMetaKey appends the metadata key of (db, key) to b.
func AppendMetaKey(b []byte, db uint8, key []byte) []byte {
	return AppendKeyPrefix(b, TagMeta, db, key)
}

// CountKey returns K|db: the key under which db's key counts are kept (two
// int64s, big-endian: keys, keys with a TTL).
func CountKey(db uint8) []byte { return []byte{byte(TagCount), db} }

// AppliedKey returns A: the key under which every commit records the
// sequence number (u64, big-endian) of the last change-log record it
// applied, so that after a crash the records after it are replayed from
// the change-log files.
func AppliedKey() []byte { return []byte{byte(TagApplied)} }

// FormatKey returns F: the key of the store's format flags, a u64
// (big-endian) of Format* bits naming the rules its keys follow, which a
// store written by an earlier version may not. A missing key means 0.
func FormatKey() []byte { return []byte{byte(TagFormat)} }

// Format flags (the value of FormatKey).
const (
	// FormatPELSingleDelete: each P key was set once since its last
	// deletion (a rewrite removes it first), so that it may be removed
	// with Pebble's SingleDelete (docs/key-format.md, "PEL keys: removed
	// with SingleDelete"). Versions before it rewrote a P key in place.
	FormatPELSingleDelete uint64 = 1 << 0

	// FormatValueRefs: a string's metadata may locate its value in the
	// change log (ValueRef), with an R key per reference (ValueRefKey).
	// Versions before it cannot read such a value.
	FormatValueRefs uint64 = 1 << 1

	// FormatCurrent is every flag this version's stores have.
	FormatCurrent = FormatPELSingleDelete | FormatValueRefs
)

// ValueRefKey returns R|segment(8)|offset(8), big-endian: the key set
// beside each string metadata value that locates its value in the change
// log (ValueRef), where offset is the value's in the segment file
// (ValueRef.Offset). Its value is db(1)|key. Change-log retention
// reads them to find the values it must move into the store before it
// removes a segment; an R key whose key no longer refers to it is stale
// and is removed then.
func ValueRefKey(segment uint64, offset int64) []byte {
	b := make([]byte, 0, valueRefKeyLen)
	b = append(b, byte(TagValueRef))
	b = binary.BigEndian.AppendUint64(b, segment)
	return binary.BigEndian.AppendUint64(b, uint64(offset))
}

const valueRefKeyLen = 17

// DecodeValueRefKey returns the segment and offset of an R key
// (ValueRefKey). ErrCorrupt for any other key.
func DecodeValueRefKey(k []byte) (segment uint64, offset int64, err error) {
	if len(k) != valueRefKeyLen || k[0] != byte(TagValueRef) {
		return 0, 0, corruptf("R key of %d bytes", len(k))
	}
	return binary.BigEndian.Uint64(k[1:]), int64(binary.BigEndian.Uint64(k[9:])), nil
}

// DBMapKey returns D: the key of the db map, which SWAPDB changes. Its
// value holds one byte per logical db, in order: the storage db (the db
// byte of keys and events) that logical db reads and writes. A missing key
// or a value shorter than a db's number means the identity for that db.
func DBMapKey() []byte { return []byte{byte(TagDBMap)} }

// ElementKey returns tag|slot|db|keylen|key|elem: a hash field's key
// (TagHash) or a set member's (TagSet). The element is the key's last
// component, unprefixed: the user key's length prefix bounds it.
func ElementKey(tag Tag, db uint8, key, elem []byte) []byte {
	b := make([]byte, 0, keyHeaderLen+len(key)+len(elem))
	return append(AppendKeyPrefix(b, tag, db, key), elem...)
}

// ListPosLen is the length of a list element's position in its key.
const ListPosLen = 8

// ListKey returns I|slot|db|keylen|key|position: the key of the list
// element at position pos. The position is an int64 with its sign bit
// flipped, big-endian (AppendListPos), so byte order is position order.
func ListKey(db uint8, key []byte, pos int64) []byte {
	return AppendListPos(newKey(TagList, db, key, ListPosLen), pos)
}

// AppendListPos appends pos in ListKey's order-preserving form.
func AppendListPos(b []byte, pos int64) []byte {
	return binary.BigEndian.AppendUint64(b, uint64(pos)^(1<<63))
}

// DecodeListPos decodes AppendListPos's 8 bytes.
func DecodeListPos(b []byte) (int64, error) {
	if len(b) != ListPosLen {
		return 0, corruptf("list position of %d bytes", len(b))
	}
	return int64(binary.BigEndian.Uint64(b) ^ (1 << 63)), nil
}

// newKey returns tag|slot|db|keylen|key in a buffer with room for extra
// more bytes: each key builder below allocates once.
func newKey(tag Tag, db uint8, key []byte, extra int) []byte {
	return AppendKeyPrefix(make([]byte, 0, keyHeaderLen+len(key)+extra), tag, db, key)
}

// nameLen is AppendName's length for name.
func nameLen(name []byte) int { return 4 + len(name) }

// StreamEntryKey returns X|slot|db|key|id.
func StreamEntryKey(db uint8, key []byte, id ID) []byte {
	return AppendID(newKey(TagStreamEntry, db, key, IDLen), id)
}

// GroupKey returns G|slot|db|key|group.
func GroupKey(db uint8, key, group []byte) []byte {
	return AppendGroupKey(make([]byte, 0, keyHeaderLen+len(key)+nameLen(group)), db, key, group)
}

// AppendGroupKey appends GroupKey(db, key, group) to b.
func AppendGroupKey(b []byte, db uint8, key, group []byte) []byte {
	return AppendName(AppendKeyPrefix(b, TagGroup, db, key), group)
}

// GroupPrefix returns tag|slot|db|key|group, the prefix of a group's consumers
// (TagConsumer), PEL (TagPEL) or per-consumer PELs (TagConsumerPEL).
func GroupPrefix(tag Tag, db uint8, key, group []byte) []byte {
	return AppendName(newKey(tag, db, key, nameLen(group)+IDLen), group)
}

// ConsumerKey returns C|slot|db|key|group|consumer.
func ConsumerKey(db uint8, key, group, consumer []byte) []byte {
	return AppendConsumerKey(make([]byte, 0, keyHeaderLen+len(key)+nameLen(group)+nameLen(consumer)), db, key, group, consumer)
}

// AppendConsumerKey appends ConsumerKey(db, key, group, consumer) to b.
func AppendConsumerKey(b []byte, db uint8, key, group, consumer []byte) []byte {
	return AppendName(AppendName(AppendKeyPrefix(b, TagConsumer, db, key), group), consumer)
}

// PELKey returns P|slot|db|key|group|id.
func PELKey(db uint8, key, group []byte, id ID) []byte {
	return AppendPELKey(make([]byte, 0, keyHeaderLen+len(key)+nameLen(group)+IDLen), db, key, group, id)
}

// AppendPELKey appends PELKey(db, key, group, id) to b.
func AppendPELKey(b []byte, db uint8, key, group []byte, id ID) []byte {
	return AppendID(AppendName(AppendKeyPrefix(b, TagPEL, db, key), group), id)
}

// PELTimeKey returns W|slot|db|key|group|time|id: the group's PEL in
// delivery-time order (time: Unix ms, big-endian, negative times as 0), for
// XREADGROUP CLAIM.
func PELTimeKey(db uint8, key, group []byte, timeMs int64, id ID) []byte {
	return AppendPELTimeKey(make([]byte, 0, keyHeaderLen+len(key)+nameLen(group)+8+IDLen), db, key, group, timeMs, id)
}

// AppendPELTimeKey appends PELTimeKey(db, key, group, timeMs, id) to b.
func AppendPELTimeKey(b []byte, db uint8, key, group []byte, timeMs int64, id ID) []byte {
	b = AppendName(AppendKeyPrefix(b, TagPELTime, db, key), group)
	b = binary.BigEndian.AppendUint64(b, uint64(max(timeMs, 0)))
	return AppendID(b, id)
}

// ConsumerPELPrefix returns Q|slot|db|key|group|consumer.
func ConsumerPELPrefix(db uint8, key, group, consumer []byte) []byte {
	b := newKey(TagConsumerPEL, db, key, nameLen(group)+nameLen(consumer)+IDLen)
	return AppendName(AppendName(b, group), consumer)
}

// ConsumerPELKey returns Q|slot|db|key|group|consumer|id.
func ConsumerPELKey(db uint8, key, group, consumer []byte, id ID) []byte {
	return AppendConsumerPELKey(make([]byte, 0, keyHeaderLen+len(key)+nameLen(group)+nameLen(consumer)+IDLen), db, key, group, consumer, id)
}

// AppendConsumerPELKey appends ConsumerPELKey(db, key, group, consumer, id)
// to b.
func AppendConsumerPELKey(b []byte, db uint8, key, group, consumer []byte, id ID) []byte {
	return AppendID(AppendName(AppendName(AppendKeyPrefix(b, TagConsumerPEL, db, key), group), consumer), id)
}

// TTLKey returns E|slot|deadline|db|keylen|key, where deadline is Unix
// milliseconds (big-endian, so byte order is deadline order within a slot).
func TTLKey(db uint8, key []byte, deadlineMs int64) []byte {
	b := make([]byte, 0, 16+len(key))
	b = append(b, byte(TagTTL))
	b = binary.BigEndian.AppendUint16(b, Slot(key))
	b = binary.BigEndian.AppendUint64(b, uint64(deadlineMs))
	b = append(b, db)
	b = binary.BigEndian.AppendUint32(b, uint32(len(key)))
	return append(b, key...)
}

// DecodeTTLKey splits a TTL index key into its parts. key aliases k.
func DecodeTTLKey(k []byte) (slot uint16, deadlineMs int64, db uint8, key []byte, err error) {
	if len(k) < 16 || Tag(k[0]) != TagTTL {
		return 0, 0, 0, nil, corruptf("TTL key of %d bytes", len(k))
	}
	slot = binary.BigEndian.Uint16(k[1:])
	deadlineMs = int64(binary.BigEndian.Uint64(k[3:]))
	db = k[11]
	n := binary.BigEndian.Uint32(k[12:])
	if uint64(len(k)-16) != uint64(n) {
		return 0, 0, 0, nil, corruptf("TTL key length %d, want %d", len(k)-16, n)
	}
	return slot, deadlineMs, db, k[16:], nil
}

// ChangeLogKey returns L|seq.
func ChangeLogKey(seq uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{byte(TagChangeLog)}, seq)
}

// DecodeChangeLogKey returns the sequence number of an L key.
func DecodeChangeLogKey(k []byte) (uint64, error) {
	if len(k) != 9 || Tag(k[0]) != TagChangeLog {
		return 0, corruptf("change-log key of %d bytes", len(k))
	}
	return binary.BigEndian.Uint64(k[1:]), nil
}

// SplitKeyPrefix splits a user-key compound key tag|slot|db|keylen|key|suffix
// after its user key: prefix is KeyPrefix's bytes, suffix the rest (both
// alias k). ok is false when k is shorter than its length prefix says.
// Unlike DecodeKey it does not hash the key to check the slot: it is for
// hot paths over keys the store itself built.
func SplitKeyPrefix(k []byte) (prefix, suffix []byte, ok bool) {
	if len(k) < keyHeaderLen {
		return nil, nil, false
	}
	end := keyHeaderLen + uint64(binary.BigEndian.Uint32(k[4:]))
	if uint64(len(k)) < end {
		return nil, nil, false
	}
	return k[:end:end], k[end:], true
}

// DecodedKey is a user-key compound key split into its parts. Key and Suffix
// alias the decoded bytes.
type DecodedKey struct {
	Tag    Tag
	Slot   uint16
	DB     uint8
	Key    []byte
	Suffix []byte
}

// DecodeKey splits tag|slot|db|keylen|key|suffix. It returns ErrCorrupt when
// the length prefix runs past the end or the slot does not match the key.
func DecodeKey(k []byte) (DecodedKey, error) {
	if len(k) < keyHeaderLen {
		return DecodedKey{}, corruptf("key of %d bytes", len(k))
	}
	n := binary.BigEndian.Uint32(k[4:])
	if uint64(n) > uint64(len(k)-keyHeaderLen) {
		return DecodedKey{}, corruptf("key length %d past end", n)
	}
	d := DecodedKey{
		Tag:    Tag(k[0]),
		Slot:   binary.BigEndian.Uint16(k[1:]),
		DB:     k[3],
		Key:    k[keyHeaderLen : keyHeaderLen+int(n) : keyHeaderLen+int(n)],
		Suffix: k[keyHeaderLen+int(n):],
	}
	if Slot(d.Key) != d.Slot {
		return DecodedKey{}, corruptf("slot %d does not match key", d.Slot)
	}
	return d, nil
}

// SplitName splits a length-prefixed name off the front of b.
func SplitName(b []byte) (name, rest []byte, err error) {
	if len(b) < 4 {
		return nil, nil, corruptf("name of %d bytes", len(b))
	}
	n := binary.BigEndian.Uint32(b)
	if uint64(n) > uint64(len(b)-4) {
		return nil, nil, corruptf("name length %d past end", n)
	}
	return b[4 : 4+n : 4+n], b[4+n:], nil
}

// PrefixEnd returns the smallest key greater than every key with prefix p,
// or nil when there is none (p is all 0xff).
func PrefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}
