package codec

import (
	"encoding/binary"
	"math"
)

// Sorted sets (docs/key-format.md §3.6c). A sorted set is its metadata
// (TypeZSet: member count and flags) plus, per member, two keys:
//
//	Z|slot|db|keylen|key|member            → score (8 bytes: the IEEE-754 bits, big-endian)
//	Y|slot|db|keylen|key|score(8)|member   → empty
//
// The Z key answers ZSCORE with one point read; the Y key (the score index)
// orders members by (score, member) for ranges and ranks: its score is
// AppendScore's order-preserving form. Stored scores are never -0: Redis
// 7.0 stores a -0 score as 0, and so does rzset.
//
// A large set also has rank blocks, which split the score index into runs
// of consecutive members and count each run, so a rank costs the blocks
// before it plus one run rather than every member before it:
//
//	B|slot|db|keylen|key|hi → count (8 bytes, big-endian) | lo
//
// A block holds the score-index suffixes (score(8)|member) in [lo, hi): its
// key names its upper fence hi (ZBlockEnd for the last block), its value
// its lower fence lo (empty for the first block), which is the previous
// block's hi. Keying by the upper fence makes every lookup a forward seek
// (the block of a member is the first whose hi is above it; the next block
// the first above hi; the previous one a point read of lo). Blocks are
// derived data: the materializer maintains them while applying OpZAdd and
// OpZRem events flagged ranked, and OpZRanks builds or drops them.

// ZBlockEnd is the upper fence of a set's last rank block: above every
// score-index suffix (the highest encoded score, +inf, starts 0xfff0).
var ZBlockEnd = []byte{0xff, 0xff}

// AppendZBlock appends a rank block's value: its count, then its lower
// fence.
func AppendZBlock(b []byte, n uint64, lo []byte) []byte {
	return append(binary.BigEndian.AppendUint64(b, n), lo...)
}

// DecodeZBlock decodes AppendZBlock's output; lo aliases b.
func DecodeZBlock(b []byte) (n uint64, lo []byte, err error) {
	if len(b) < 8 {
		return 0, nil, corruptf("rank block of %d bytes", len(b))
	}
	return binary.BigEndian.Uint64(b), b[8:], nil
}

// ZFloorMax is the longest floor a sorted set's metadata keeps: a score
// and 64 bytes of member. A longer lowest suffix is truncated, which keeps
// it a lower bound (a prefix sorts first).
const ZFloorMax = ScoreLen + 64

// ScoreLen is the length of a score in a Y key.
const ScoreLen = 8

// AppendScore appends f in its order-preserving 8-byte form: byte order
// is numeric order, -inf first, +inf last; -0 is encoded as +0. NaN never
// reaches it (Redis rejects NaN scores).
func AppendScore(b []byte, f float64) []byte {
	if f == 0 {
		f = 0 // -0 orders as +0
	}
	u := math.Float64bits(f)
	if u&(1<<63) != 0 {
		u = ^u
	} else {
		u |= 1 << 63
	}
	return binary.BigEndian.AppendUint64(b, u)
}

// DecodeScore decodes AppendScore's 8 bytes.
func DecodeScore(b []byte) (float64, error) {
	if len(b) < ScoreLen {
		return 0, corruptf("score of %d bytes", len(b))
	}
	u := binary.BigEndian.Uint64(b)
	if u&(1<<63) != 0 {
		u &^= 1 << 63
	} else {
		u = ^u
	}
	return math.Float64frombits(u), nil
}

// ScoreArg encodes f's bits (8 bytes, big-endian), -0 as +0: a Z key's
// value and a score in an event.
func ScoreArg(f float64) []byte {
	if f == 0 {
		f = 0 // a stored score is never -0, as in Redis 7.0
	}
	return binary.BigEndian.AppendUint64(nil, math.Float64bits(f))
}

// DecodeScoreArg decodes ScoreArg's output.
func DecodeScoreArg(b []byte) (float64, error) {
	if len(b) != 8 {
		return 0, corruptf("score argument of %d bytes", len(b))
	}
	return math.Float64frombits(binary.BigEndian.Uint64(b)), nil
}

// ZMemberKey returns Z|slot|db|keylen|key|member.
func ZMemberKey(db uint8, key, member []byte) []byte {
	return append(newKey(TagZMember, db, key, len(member)), member...)
}

// ZScoreKey returns Y|slot|db|keylen|key|score|member.
func ZScoreKey(db uint8, key []byte, score float64, member []byte) []byte {
	return append(AppendScore(newKey(TagZScore, db, key, ScoreLen+len(member)), score), member...)
}

// DecodeZScoreSuffix splits a Y key's suffix (after its user key) into
// score and member; member aliases suffix.
func DecodeZScoreSuffix(suffix []byte) (float64, []byte, error) {
	f, err := DecodeScore(suffix)
	if err != nil {
		return 0, nil, err
	}
	return f, suffix[ScoreLen:], nil
}

// ZAddEvent builds an OpZAdd event. pairs is member, score (ScoreArg),
// previous score (ScoreArg, or nil for a new member), repeated.
func ZAddEvent(db uint8, key []byte, ranked bool, triples [][]byte) Event {
	return Event{Op: OpZAdd, DB: db, Key: key, Args: append([][]byte{rankedArg(ranked)}, triples...)}
}

// ZRemEvent builds an OpZRem event. pairs is member, score (ScoreArg),
// repeated: the members removed with the scores they had.
func ZRemEvent(db uint8, key []byte, ranked bool, pairs [][]byte) Event {
	return Event{Op: OpZRem, DB: db, Key: key, Args: append([][]byte{rankedArg(ranked)}, pairs...)}
}

// ZRanksEvent builds an OpZRanks event: on builds the set's rank blocks
// from its score index, off drops them. Both walk from floor (a Meta.Floor,
// at most ZFloorMax bytes), not over the tombstones of the members popped
// below it: for on, the set's floor once the record has applied; for off,
// its floor before the removal that drops the blocks, at or below every
// live block's upper fence (the removal's own members leave the blocks as
// they were, so blocks wholly below the new floor are still live). Records
// written before the floor argument have only the first: their walks start
// at the prefix.
func ZRanksEvent(db uint8, key []byte, on bool, floor []byte) Event {
	return Event{Op: OpZRanks, DB: db, Key: key, Args: [][]byte{rankedArg(on), floor}}
}

func rankedArg(on bool) []byte {
	if on {
		return []byte{1}
	}
	return []byte{0}
}
