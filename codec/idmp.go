package codec

import "encoding/binary"

// Idempotent production (Redis 8.6's XADD IDMP / IDMPAUTO) keeps, per
// stream, its settings and counters (J), and per producer the idempotent
// IDs it recorded: the ID of the entry each one added (U), the same in
// order of that entry's ID (V, the oldest first, for eviction at
// idmp-maxsize), the producer's count (O), and, across the store, every
// recorded ID in order of its expiry deadline (M, for the sweep).
const (
	TagIDMPState    Tag = 'J' // J|slot|db|key → IDMPState
	TagIDMPProducer Tag = 'O' // O|slot|db|key|pid → count (8) | first stream ID (16)
	TagIDMPByIID    Tag = 'U' // U|slot|db|key|pid|iid → stream ID (16)
	TagIDMPByID     Tag = 'V' // V|slot|db|key|pid|stream ID (16) → iid
	TagIDMPExpiry   Tag = 'M' // M|deadline(8)|db|keylen|key|pid|stream ID (16) → empty
)

// IDMPState is a stream's idempotent-production state (the J value):
//
//	| duration s (u32) | maxsize (u32) | pids (u64) | iids (u64) | added (u64) | duplicates (u64) |
//
// Duration and MaxSize are 0 until XCFGSET sets them: the server's
// stream-idmp-duration and stream-idmp-maxsize apply then. Pids and IIDs
// count what is tracked now (XINFO's pids-tracked, iids-tracked); Added and
// Duplicates count for the stream's life (iids-added, iids-duplicates).
type IDMPState struct {
	DurationS, MaxSize uint32
	Pids, IIDs         uint64
	Added, Duplicates  uint64
}

const idmpStateLen = 4 + 4 + 4*8

// AppendIDMPState appends the encoding of s.
func AppendIDMPState(b []byte, s IDMPState) []byte {
	b = binary.BigEndian.AppendUint32(b, s.DurationS)
	b = binary.BigEndian.AppendUint32(b, s.MaxSize)
	for _, n := range []uint64{s.Pids, s.IIDs, s.Added, s.Duplicates} {
		b = binary.BigEndian.AppendUint64(b, n)
	}
	return b
}

// DecodeIDMPState decodes an IDMPState value.
func DecodeIDMPState(b []byte) (IDMPState, error) {
	if len(b) != idmpStateLen {
		return IDMPState{}, corruptf("IDMP state of %d bytes", len(b))
	}
	u := func(i int) uint64 { return binary.BigEndian.Uint64(b[8+8*i:]) }
	return IDMPState{
		DurationS: binary.BigEndian.Uint32(b), MaxSize: binary.BigEndian.Uint32(b[4:]),
		Pids: u(0), IIDs: u(1), Added: u(2), Duplicates: u(3),
	}, nil
}

// IDMPStateKey returns J|slot|db|key.
func IDMPStateKey(db uint8, key []byte) []byte { return KeyPrefix(TagIDMPState, db, key) }

// IDMPProducerKey returns O|slot|db|key|pid.
func IDMPProducerKey(db uint8, key, pid []byte) []byte {
	return AppendName(newKey(TagIDMPProducer, db, key, nameLen(pid)), pid)
}

// IDMPProducerPrefix returns tag|slot|db|key|pid: the prefix of one
// producer's U or V keys.
func IDMPProducerPrefix(tag Tag, db uint8, key, pid []byte) []byte {
	return AppendName(newKey(tag, db, key, nameLen(pid)+IDLen), pid)
}

// IDMPByIIDKey returns U|slot|db|key|pid|iid.
func IDMPByIIDKey(db uint8, key, pid, iid []byte) []byte {
	return append(IDMPProducerPrefix(TagIDMPByIID, db, key, pid), iid...)
}

// IDMPByIDKey returns V|slot|db|key|pid|id.
func IDMPByIDKey(db uint8, key, pid []byte, id ID) []byte {
	return AppendID(IDMPProducerPrefix(TagIDMPByID, db, key, pid), id)
}

// IDMPExpiryKey returns M|deadline|db|keylen|key|pid|id; deadline is Unix
// ms (negative as 0), big-endian, so the index is in deadline order.
func IDMPExpiryKey(deadlineMs int64, db uint8, key, pid []byte, id ID) []byte {
	b := make([]byte, 0, 1+8+1+nameLen(key)+nameLen(pid)+IDLen)
	b = append(b, byte(TagIDMPExpiry))
	b = binary.BigEndian.AppendUint64(b, uint64(max(deadlineMs, 0)))
	b = append(b, db)
	b = AppendName(b, key)
	b = AppendName(b, pid)
	return AppendID(b, id)
}

// DecodeIDMPExpiryKey splits an M key. key and pid alias k.
func DecodeIDMPExpiryKey(k []byte) (deadlineMs int64, db uint8, key, pid []byte, id ID, err error) {
	if len(k) < 10 || Tag(k[0]) != TagIDMPExpiry {
		return 0, 0, nil, nil, ID{}, corruptf("IDMP expiry key of %d bytes", len(k))
	}
	deadlineMs, db = int64(binary.BigEndian.Uint64(k[1:])), k[9]
	key, rest, err := SplitName(k[10:])
	if err == nil {
		pid, rest, err = SplitName(rest)
	}
	if err == nil {
		id, err = DecodeID(rest)
	}
	return deadlineMs, db, key, pid, id, err
}

// IDMPSetEvent builds an OpIDMPSet event: the producer pid recorded iid
// for the entry id, to expire at deadlineMs; count and first are the
// producer's count and oldest recorded entry ID after it (the O value,
// AppendIDMPProducer).
func IDMPSetEvent(db uint8, key, pid, iid []byte, id ID, deadlineMs int64, count uint64, first ID) Event {
	return Event{Op: OpIDMPSet, DB: db, Key: key, Args: [][]byte{pid, iid, IDArg(id), Int64Arg(deadlineMs), AppendIDMPProducer(nil, count, first)}}
}

// AppendIDMPProducer appends an O value: | count (8) | first entry ID (16) |.
// The first ID lets the producer's V keys be read from their first live
// one, past the deletions that evictions and expiries leave before it.
func AppendIDMPProducer(b []byte, count uint64, first ID) []byte {
	return AppendID(binary.BigEndian.AppendUint64(b, count), first)
}

// DecodeIDMPProducer decodes an O value.
func DecodeIDMPProducer(b []byte) (count uint64, first ID, err error) {
	if len(b) != 8+IDLen {
		return 0, ID{}, corruptf("IDMP producer of %d bytes", len(b))
	}
	first, err = DecodeID(b[8:])
	return binary.BigEndian.Uint64(b), first, err
}

// IDMPDelEvent builds an OpIDMPDel event: the record of IDMPSetEvent with
// the same arguments goes (evicted or expired); count and first are the
// producer's after it (count 0: the producer goes). An empty iid removes only the M
// key (a stale one, whose record is already gone).
func IDMPDelEvent(db uint8, key, pid, iid []byte, id ID, deadlineMs int64, count uint64, first ID) Event {
	return Event{Op: OpIDMPDel, DB: db, Key: key, Args: [][]byte{pid, iid, IDArg(id), Int64Arg(deadlineMs), AppendIDMPProducer(nil, count, first)}}
}

// IDMPStateEvent builds an OpIDMPState event setting the stream's J value.
func IDMPStateEvent(db uint8, key []byte, s IDMPState) Event {
	return Event{Op: OpIDMPState, DB: db, Key: key, Args: [][]byte{AppendIDMPState(make([]byte, 0, idmpStateLen), s)}}
}

// IDMPClearEvent builds an OpIDMPClear event: every producer's records of
// the stream go (XCFGSET changed a setting); their M keys are left for the
// sweep, which finds them stale.
func IDMPClearEvent(db uint8, key []byte) Event {
	return Event{Op: OpIDMPClear, DB: db, Key: key}
}
