package streams

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"math"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
)

// Config is the server's stream settings that decisions read (CONFIG SET
// changes them for the streams that follow).
type Config struct {
	// IDMPDurationS and IDMPMaxSize are stream-idmp-duration (seconds,
	// 1..86400) and stream-idmp-maxsize (1..10000): a stream's idempotent
	// IDs expire after the duration and a producer keeps at most maxsize.
	IDMPDurationS, IDMPMaxSize int64
	// NodeMaxEntries and NodeMaxBytes are stream-node-max-entries and
	// stream-node-max-bytes: XADD opens a new node as Redis does when the
	// tail node holds NodeMaxEntries entries (0: no limit) or its listpack
	// would reach NodeMaxBytes (0: 1 GiB) (streams/nodes.go). The zero
	// Config means DefaultConfig's.
	NodeMaxEntries, NodeMaxBytes int64
}

// DefaultConfig is Redis's defaults (8.6's for IDMP).
var DefaultConfig = Config{IDMPDurationS: 100, IDMPMaxSize: 100, NodeMaxEntries: DefaultNodeMaxEntries, NodeMaxBytes: 4096}

// NodeSize returns stream-node-max-entries, or the default (100) for 0:
// 100 times it is the default LIMIT of '~' trims, and it is the node size
// of the entry-count model that migrates streams written before node keys
// (migrate).
func (c Config) NodeSize() uint64 {
	if c.NodeMaxEntries <= 0 {
		return DefaultNodeMaxEntries
	}
	return uint64(c.NodeMaxEntries)
}

// The ranges XCFGSET and CONFIG SET accept (Redis 8.6).
const (
	IDMPDurationMax = 86400
	IDMPMaxSizeMax  = 10000
)

// IDMP is XADD's IDMP pid iid, or IDMPAUTO pid (Auto: the iid is derived
// from the entry's fields and values, whatever their order: AutoIID).
// https://redis.io/docs/latest/commands/xadd/
type IDMP struct {
	PID, IID []byte
	Auto     bool
}

// AutoIID returns IDMPAUTO's idempotent ID for the fields fv (field, value,
// ...): 16 bytes, the lane-wise sum of each pair's SHA-256 (truncated), so
// the order of the pairs does not matter and a repeated pair counts twice.
// Redis 8.6 derives its own 128-bit hash; only equality is observable.
func AutoIID(fv [][]byte) []byte {
	var lo, hi uint64
	var n [8]byte
	for i := 0; i+1 < len(fv); i += 2 {
		h := sha256.New()
		binary.BigEndian.PutUint64(n[:], uint64(len(fv[i])))
		h.Write(n[:])
		h.Write(fv[i])
		binary.BigEndian.PutUint64(n[:], uint64(len(fv[i+1])))
		h.Write(n[:])
		h.Write(fv[i+1])
		sum := h.Sum(nil)
		hi += binary.BigEndian.Uint64(sum)
		lo += binary.BigEndian.Uint64(sum[8:])
	}
	out := binary.BigEndian.AppendUint64(nil, hi)
	return binary.BigEndian.AppendUint64(out, lo)
}

// IDMPInfo is XINFO STREAM's idempotent-production fields (Redis 8.6).
type IDMPInfo struct {
	DurationS, MaxSize int64
	Pids, IIDs         uint64
	Added, Duplicates  uint64
}

// LoadIDMPInfo returns the stream key's IDMP settings and counters: the
// server's settings and zeros for a stream that never used IDMP.
func LoadIDMPInfo(v *materialize.View, db uint8, key []byte, cfg Config) (IDMPInfo, error) {
	e := newIDMPEdit(v, db, key, cfg)
	if err := e.load(); err != nil {
		return IDMPInfo{}, err
	}
	s := e.st
	return IDMPInfo{int64(s.DurationS), int64(s.MaxSize), s.Pids, s.IIDs, s.Added, s.Duplicates}, nil
}

// idmpEdit stages one decision's changes to one stream's IDMP records: its
// J value and the producers' counts, and the records it removed (which the
// view still shows).
type idmpEdit struct {
	v      *materialize.View
	db     uint8
	key    []byte
	cfg    Config
	loaded bool
	empty  bool // a stream being created: no records, whatever the view shows
	st     codec.IDMPState
	dirty  bool
	prods  map[string]*producer
	gone   map[string]bool // V keys removed by the edit
	events []codec.Event
}

func newIDMPEdit(v *materialize.View, db uint8, key []byte, cfg Config) *idmpEdit {
	return &idmpEdit{v: v, db: db, key: key, cfg: cfg, prods: map[string]*producer{}, gone: map[string]bool{}}
}

// load reads the J value; a stream without one takes the server's
// settings, which the first write stores (Redis copies them into a new
// stream).
func (e *idmpEdit) load() error {
	if e.loaded {
		return nil
	}
	e.loaded = true
	b, ok, err := e.v.Get(codec.IDMPStateKey(e.db, e.key))
	if err != nil {
		return err
	}
	if ok {
		if e.st, err = codec.DecodeIDMPState(b); err != nil {
			return err
		}
	}
	if e.st.DurationS == 0 {
		e.st.DurationS = uint32(e.cfg.IDMPDurationS)
	}
	if e.st.MaxSize == 0 {
		e.st.MaxSize = uint32(e.cfg.IDMPMaxSize)
	}
	return nil
}

// fresh starts the edit of a stream being created: the server's settings,
// no records.
func (e *idmpEdit) fresh() {
	e.loaded, e.empty = true, true
	e.st = codec.IDMPState{DurationS: uint32(e.cfg.IDMPDurationS), MaxSize: uint32(e.cfg.IDMPMaxSize)}
	e.dirty = true
}

func (e *idmpEdit) deadline(id codec.ID) int64 {
	ms := int64(min(id.Ms, math.MaxInt64/2))
	return ms + int64(e.st.DurationS)*1000
}

// producer is one producer's O value as the edit leaves it: how many
// records it has and the entry ID of its oldest.
type producer struct {
	n     uint64
	first codec.ID
	// front caches the producer's oldest records (up to frontLen, none
	// removed by the edit), read with one iterator: expiring or evicting
	// the oldest, then finding the next first, costs one seek.
	front  []record
	loaded bool // front was read (and is exact while it is not empty)
}

type record struct {
	id  codec.ID
	iid []byte
}

const frontLen = 4

func (e *idmpEdit) producer(pid []byte) (*producer, error) {
	if p, ok := e.prods[string(pid)]; ok {
		return p, nil
	}
	p := &producer{}
	e.prods[string(pid)] = p
	if e.empty {
		return p, nil
	}
	b, ok, err := e.v.Get(codec.IDMPProducerKey(e.db, e.key, pid))
	if err != nil || !ok {
		return p, err
	}
	p.n, p.first, err = codec.DecodeIDMPProducer(b)
	return p, err
}

// del removes one record (evicted or expired).
func (e *idmpEdit) del(pid, iid []byte, id codec.ID) error {
	p, err := e.producer(pid)
	if err != nil {
		return err
	}
	if p.n == 0 || e.st.IIDs == 0 {
		return codec.ErrCorrupt
	}
	p.n--
	e.gone[string(codec.IDMPByIDKey(e.db, e.key, pid, id))] = true
	if len(p.front) > 0 && p.front[0].id == id {
		p.front = p.front[1:]
	}
	if p.n > 0 && id == p.first {
		next, _, err := e.oldest(pid)
		if err != nil {
			return err
		}
		p.first = next.id
	}
	e.events = append(e.events, codec.IDMPDelEvent(e.db, e.key, pid, iid, id, e.deadline(id), p.n, p.first))
	e.st.IIDs--
	if p.n == 0 {
		e.st.Pids--
	}
	e.dirty = true
	return nil
}

// oldest returns the producer's oldest record not removed by the edit.
// Records are read from the producer's first ID: the V keys below it are
// deletions.
func (e *idmpEdit) oldest(pid []byte) (record, bool, error) {
	pr, err := e.producer(pid)
	if err != nil || pr.n == 0 {
		return record{}, false, err
	}
	if len(pr.front) == 0 {
		p := codec.IDMPProducerPrefix(codec.TagIDMPByID, e.db, e.key, pid)
		lower := codec.IDMPByIDKey(e.db, e.key, pid, pr.first)
		err := e.v.Iterate(lower, codec.PrefixEnd(p), false, func(k, val []byte) (bool, error) {
			if e.gone[string(k)] {
				return true, nil
			}
			id, err := codec.DecodeID(k[len(p):])
			if err != nil {
				return false, err
			}
			pr.front = append(pr.front, record{id, append([]byte(nil), val...)})
			return len(pr.front) < frontLen, nil
		})
		if err != nil {
			return record{}, false, err
		}
		if len(pr.front) == 0 {
			return record{}, false, codec.ErrCorrupt // the count says records remain
		}
	}
	return pr.front[0], true, nil
}

// expireHead removes the producer's records whose deadline passed at now,
// oldest first (the sweep may not have reached them yet).
func (e *idmpEdit) expireHead(pid []byte, now int64) error {
	if p, err := e.producer(pid); err != nil || p.n == 0 || e.deadline(p.first) > now {
		return err // the oldest record has not expired: no read of the V keys
	}
	for {
		r, ok, err := e.oldest(pid)
		if err != nil || !ok || e.deadline(r.id) > now {
			return err
		}
		if err := e.del(pid, r.iid, r.id); err != nil {
			return err
		}
	}
}

// lookup returns the entry ID pid recorded for iid.
func (e *idmpEdit) lookup(pid, iid []byte) (codec.ID, bool, error) {
	b, ok, err := e.v.Get(codec.IDMPByIIDKey(e.db, e.key, pid, iid))
	if err != nil || !ok {
		return codec.ID{}, false, err
	}
	id, err := codec.DecodeID(b)
	if err != nil || e.gone[string(codec.IDMPByIDKey(e.db, e.key, pid, id))] {
		return codec.ID{}, false, err
	}
	return id, true, nil
}

// add records iid for the entry id, evicting the producer's oldest
// records while it holds maxsize.
func (e *idmpEdit) add(pid, iid []byte, id codec.ID) error {
	p, err := e.producer(pid)
	if err != nil {
		return err
	}
	for p.n >= uint64(e.st.MaxSize) && p.n > 0 {
		r, _, err := e.oldest(pid)
		if err != nil {
			return err
		}
		if err := e.del(pid, r.iid, r.id); err != nil {
			return err
		}
	}
	if p.n == 0 {
		e.st.Pids++
		p.first = id
	}
	if p.n < frontLen && (len(p.front) == int(p.n) || p.n == 0) {
		p.front = append(p.front, record{id, iid}) // the front stays exact
	}
	p.n++
	e.events = append(e.events, codec.IDMPSetEvent(e.db, e.key, pid, iid, id, e.deadline(id), p.n, p.first))
	e.st.IIDs++
	e.st.Added++
	e.dirty = true
	return nil
}

// finish returns the edit's events, the J value last.
func (e *idmpEdit) finish() []codec.Event {
	if e.dirty {
		e.events = append(e.events, codec.IDMPStateEvent(e.db, e.key, e.st))
	}
	return e.events
}

// SetIDMPConfig sets the stream key's idmp-duration and idmp-maxsize
// (XCFGSET; nil: unchanged). When either changes, every producer's
// records are dropped (pids-tracked and iids-tracked become 0;
// iids-added and iids-duplicates stay). It returns false when key does not
// exist. Errors: materialize.ErrWrongType.
// https://redis.io/docs/latest/commands/xcfgset/
func SetIDMPConfig(v *materialize.View, db uint8, key []byte, durationS, maxSize *int64, cfg Config) (bool, []codec.Event, error) {
	_, ok, evs, err := metaForWrite(v, db, key)
	if err != nil || !ok {
		return false, evs, err
	}
	e := newIDMPEdit(v, db, key, cfg)
	if err := e.load(); err != nil {
		return true, nil, err
	}
	changed := false
	if durationS != nil && uint32(*durationS) != e.st.DurationS {
		e.st.DurationS, changed = uint32(*durationS), true
	}
	if maxSize != nil && uint32(*maxSize) != e.st.MaxSize {
		e.st.MaxSize, changed = uint32(*maxSize), true
	}
	var events []codec.Event
	if changed {
		events = append(events, codec.IDMPClearEvent(db, key))
		e.st.Pids, e.st.IIDs = 0, 0
	}
	return true, append(events, codec.IDMPStateEvent(db, key, e.st)), nil
}

// RecordIDMP records that producer pid's idempotent ID iid names the
// entry id of the stream key (XIDMPRECORD, Redis 8.6.2: what an AOF
// rewrite emits for each record), as an IDMP XADD that added id would
// have: the producer's oldest records are evicted past idmp-maxsize,
// iids-added counts it, and it expires idmp-duration seconds after id's
// time. A pair that already names id changes nothing. It returns false
// when key does not exist. Errors: ErrNoSuchEntry (id is not an entry of
// the stream, or was deleted), ErrIIDConflict (the pair names another
// entry), materialize.ErrWrongType.
// https://redis.io/docs/latest/commands/xidmprecord/
func RecordIDMP(v *materialize.View, db uint8, key, pid, iid []byte, id codec.ID, cfg Config) (bool, []codec.Event, error) {
	_, ok, events, err := metaForWrite(v, db, key)
	if err != nil || !ok {
		return false, events, err
	}
	if _, found, err := Get(v, db, key, id); err != nil || !found {
		if err == nil {
			err = ErrNoSuchEntry
		}
		return true, nil, err
	}
	e := newIDMPEdit(v, db, key, cfg)
	if err := e.load(); err != nil {
		return true, nil, err
	}
	// Records past their time are gone whether or not the sweep reached
	// them, as for XADD.
	if err := e.expireHead(pid, v.NowMs()); err != nil {
		return true, nil, err
	}
	prev, dup, err := e.lookup(pid, iid)
	switch {
	case err != nil:
		return true, nil, err
	case dup && prev != id:
		return true, nil, ErrIIDConflict
	case !dup:
		if err := e.add(pid, iid, id); err != nil {
			return true, nil, err
		}
	}
	return true, append(events, e.finish()...), nil
}

// XIDMPRECORD's errors.
var (
	// ErrNoSuchEntry: the ID names no entry of the stream.
	ErrNoSuchEntry = errors.New("streams: no such entry")
	// ErrIIDConflict: the producer's idempotent ID names another entry.
	ErrIIDConflict = errors.New("streams: idempotent ID names another entry")
)

// ExpireIDMP is one round of the idempotent-ID sweep: it walks the M index
// from the deadline *from up to the decision time and removes, through
// events, up to limit records whose deadline passed, as Redis's cron does
// about once a second. M keys whose record is gone (its stream deleted,
// renamed or cleared by XCFGSET) are removed too. It moves *from to the
// last deadline it reached: the keys below it are deletions the next round
// need not walk again (every new M key's deadline is later: an ID's time
// plus at least a second). Its cost is the keys it removes. *from starts
// at 0 (a restart walks the index once).
func ExpireIDMP(v *materialize.View, from *int64, limit int) ([]codec.Event, error) {
	lower := binary.BigEndian.AppendUint64([]byte{byte(codec.TagIDMPExpiry)}, uint64(max(*from, 0)))
	upper := binary.BigEndian.AppendUint64([]byte{byte(codec.TagIDMPExpiry)}, uint64(max(v.NowMs(), 0)+1))
	type streamKey struct {
		db  uint8
		key string
	}
	edits := map[streamKey]*idmpEdit{}
	var order []*idmpEdit
	var stale []codec.Event
	n := 0
	err := v.IterateNoValues(lower, upper, false, func(k []byte) (bool, error) {
		if n >= limit {
			return false, nil
		}
		n++
		deadline, db, key, pid, id, err := codec.DecodeIDMPExpiryKey(k)
		if err != nil {
			return false, err
		}
		*from = deadline
		sk := streamKey{db, string(key)}
		e := edits[sk]
		if e == nil {
			e = newIDMPEdit(v, db, append([]byte(nil), key...), Config{})
			if err := e.load(); err != nil {
				return false, err
			}
			edits[sk] = e
			order = append(order, e)
		}
		pid = append([]byte(nil), pid...)
		vk := codec.IDMPByIDKey(db, key, pid, id)
		iid, ok, err := v.Get(vk)
		if err != nil {
			return false, err
		}
		if !ok || e.gone[string(vk)] || e.deadline(id) != deadline {
			// Stale: only the M key goes (an empty iid).
			stale = append(stale, codec.IDMPDelEvent(db, e.key, pid, nil, id, deadline, 0, codec.ID{}))
			return true, nil
		}
		return true, e.del(pid, iid, id)
	})
	if err != nil {
		return nil, err
	}
	events := stale
	for _, e := range order {
		events = append(events, e.finish()...)
	}
	return events, nil
}
