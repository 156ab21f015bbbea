package groups

import (
	"bytes"
	"errors"
	"sort"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/streams"
)

// Errors returned by this package.
var (
	// ErrNoGroup: the key or the group does not exist (Redis's NOGROUP).
	ErrNoGroup = errors.New("groups: no such key or consumer group")
	// ErrGroupExists: XGROUP CREATE of an existing group (BUSYGROUP).
	ErrGroupExists = errors.New("groups: consumer group name already exists")
	// ErrNoKey: an XGROUP subcommand on a missing key (without MKSTREAM).
	ErrNoKey = errors.New("groups: the key does not exist")
)

// InvalidEntriesRead is Redis's SCG_INVALID_ENTRIES_READ: entries-read unknown.
const InvalidEntriesRead = -1

// CreateArgs are XGROUP CREATE's arguments.
type CreateArgs struct {
	ID          codec.ID // last-delivered-id, unless Dollar
	Dollar      bool     // "$": the stream's last ID
	MkStream    bool
	EntriesRead int64 // ENTRIESREAD; InvalidEntriesRead when not given
}

// Create creates group on key (XGROUP CREATE). Errors: ErrNoKey,
// ErrGroupExists, materialize.ErrWrongType.
// https://redis.io/docs/latest/commands/xgroup-create/
func Create(v *materialize.View, db uint8, key, group []byte, a CreateArgs) ([]codec.Event, error) {
	m, ok, events, err := streams.MetaForWrite(v, db, key)
	if err != nil {
		return nil, err
	}
	if !ok {
		if !a.MkStream {
			return nil, ErrNoKey
		}
		m = streams.NewStreamMeta()
		events = append(events, codec.SetMetaEvent(db, key, m, 0))
	}
	exists, err := v.Has(codec.GroupKey(db, key, group))
	if err != nil {
		return nil, err
	}
	if exists && ok {
		return nil, ErrGroupExists
	}
	id := a.ID
	if a.Dollar {
		id = m.Stream.LastID
	}
	events = append(events, codec.GroupSetEvent(db, key, group, codec.Group{LastDeliveredID: id, EntriesRead: a.EntriesRead, TimeIndexed: true, PELBounded: true}))
	return events, nil
}

// Destroy removes group with its consumers and PEL (XGROUP DESTROY) and
// reports whether it existed. Errors: ErrNoKey, materialize.ErrWrongType.
// https://redis.io/docs/latest/commands/xgroup-destroy/
func Destroy(v *materialize.View, db uint8, key, group []byte) (bool, []codec.Event, error) {
	if _, ok, err := streams.Meta(v, db, key); err != nil || !ok {
		if err == nil {
			err = ErrNoKey
		}
		return false, nil, err
	}
	exists, err := v.Has(codec.GroupKey(db, key, group))
	if err != nil || !exists {
		return false, nil, err
	}
	return true, []codec.Event{codec.GroupDelEvent(db, key, group)}, nil
}

// SetID sets the group's last-delivered-id (XGROUP SETID) to id, or to the
// stream's last ID when dollar is set, and its entries-read to entriesRead
// (InvalidEntriesRead when not given). Errors: ErrNoGroup,
// materialize.ErrWrongType.
// https://redis.io/docs/latest/commands/xgroup-setid/
func SetID(v *materialize.View, db uint8, key, group []byte, id codec.ID, dollar bool, entriesRead int64) ([]codec.Event, error) {
	m, g, err := Lookup(v, db, key, group)
	if err != nil {
		return nil, err
	}
	if dollar {
		id = m.Stream.LastID
	}
	if id.Less(g.LastDeliveredID) && g.PEL.Count > 0 {
		g.PELBounded = false // pending entries may now lie past it
	}
	g.LastDeliveredID, g.EntriesRead = id, entriesRead
	return []codec.Event{codec.GroupSetEvent(db, key, group, g)}, nil
}

// CreateConsumer creates consumer in group (XGROUP CREATECONSUMER) and
// reports whether it was created (false: it existed). Errors: ErrNoGroup,
// materialize.ErrWrongType.
// https://redis.io/docs/latest/commands/xgroup-createconsumer/
func CreateConsumer(v *materialize.View, db uint8, key, group, consumer []byte) (bool, []codec.Event, error) {
	if _, _, err := Lookup(v, db, key, group); err != nil {
		return false, nil, err
	}
	exists, err := v.Has(codec.ConsumerKey(db, key, group, consumer))
	if err != nil || exists {
		return false, nil, err
	}
	c := codec.Consumer{SeenTimeMs: v.NowMs(), ActiveTimeMs: -1}
	return true, []codec.Event{codec.ConsumerSetEvent(db, key, group, consumer, c)}, nil
}

// ConsumerExists reports whether group of the stream key has consumer.
func ConsumerExists(v *materialize.View, db uint8, key, group, consumer []byte) (bool, error) {
	return v.Has(codec.ConsumerKey(db, key, group, consumer))
}

// DelConsumer removes consumer and its pending entries from group (XGROUP
// DELCONSUMER) and returns how many entries it had pending (0 when it did
// not exist). Errors: ErrNoGroup, materialize.ErrWrongType.
// https://redis.io/docs/latest/commands/xgroup-delconsumer/
func DelConsumer(v *materialize.View, db uint8, key, group, consumer []byte) (int, []codec.Event, error) {
	_, g, err := Lookup(v, db, key, group)
	if err != nil {
		return 0, nil, err
	}
	c, exists, err := loadConsumer(v, db, key, group, consumer)
	if err != nil || !exists {
		return 0, nil, err
	}
	edit := newPELEdit(v, db, key, group, g)
	ids, err := pendingIDs(v, codec.ConsumerPELPrefix(db, key, group, consumer), c.PEL, codec.ID{}, codec.MaxID)
	if err != nil {
		return 0, nil, err
	}
	n := 0
	for _, id := range ids {
		// A Q key whose P entry another consumer owns is stale (left by
		// versions before the PEL stats); the consumer's deletion clears it.
		pe, pending, err := edit.entry(id)
		if err != nil {
			return 0, nil, err
		}
		if !pending || !bytes.Equal(pe.Consumer, consumer) {
			continue
		}
		if err := edit.del(id, pe); err != nil {
			return 0, nil, err
		}
		n++
	}
	if err := edit.drop(consumer); err != nil {
		return 0, nil, err
	}
	events, err := edit.finish()
	if err != nil {
		return 0, nil, err
	}
	return n, append(events, codec.ConsumerDelEvent(db, key, group, consumer)), nil
}

// Lookup returns the group's state; ErrNoGroup when the key or the group is
// missing, materialize.ErrWrongType when key is not a stream.
func Lookup(v *materialize.View, db uint8, key, group []byte) (codec.Meta, codec.Group, error) {
	m, ok, err := streams.Meta(v, db, key)
	if err != nil {
		return m, codec.Group{}, err
	}
	if !ok {
		return m, codec.Group{}, ErrNoGroup
	}
	g, ok, err := loadGroup(v, db, key, group)
	if err != nil {
		return m, codec.Group{}, err
	}
	if !ok {
		return m, codec.Group{}, ErrNoGroup
	}
	return m, g, nil
}

// ReadArgs are XREADGROUP's per-call options.
type ReadArgs struct {
	Group, Consumer []byte
	Count           int // <= 0: no limit
	NoAck           bool
	// MinIdleMs is CLAIM's min-idle-time (Redis 8.4), for Session.ReadClaim.
	MinIdleMs int64
	// Bytes, when not nil, is MAXSIZE's budget (Redis 8.10): reads return
	// entries while they fit in it (the first entry of the whole command
	// always) and take their size from it.
	Bytes *Budget
}

// Budget is the bytes an XREAD or XREADGROUP MAXSIZE may still return
// across its streams. An entry's size is its ID's text plus its fields
// and values (EntrySize).
type Budget struct {
	Left  int64
	Taken bool // an entry was returned: the next must fit
	Full  bool // an entry did not fit: nothing more is returned
}

// EntrySize is an entry's size for MAXSIZE: its ID as text plus the bytes
// of its fields and values (Sediment's measure; Redis counts its reply's
// bytes, protocol included, which it does not document).
func EntrySize(e streams.Entry) int64 {
	n := int64(len(e.ID.String()))
	for _, f := range e.Fields {
		n += int64(len(f))
	}
	return n
}

// Fits reports whether e fits the budget, and takes its size if so. A nil
// budget takes everything.
func (b *Budget) Fits(e streams.Entry) bool {
	if b == nil {
		return true
	}
	size := EntrySize(e)
	if b.Full || (b.Taken && size > b.Left) {
		b.Full = true
		return false
	}
	b.Left -= size
	b.Taken = true
	return true
}

// Cut returns the longest prefix of entries that fits the budget.
func (b *Budget) Cut(entries []streams.Entry) []streams.Entry {
	for i, e := range entries {
		if !b.Fits(e) {
			return entries[:i]
		}
	}
	return entries
}

// ReadNew is Session.ReadNew alone in its decision, with its events.
func ReadNew(v *materialize.View, db uint8, key []byte, a ReadArgs) ([]streams.Entry, []codec.Event, error) {
	s := NewSession(v, db)
	entries, err := s.ReadNew(key, a)
	if err != nil {
		return nil, nil, err
	}
	events, err := s.Finish()
	return entries, events, err
}

// advance moves the group's last-delivered-id to id, delivered just now,
// and keeps entries-read as Redis's streamReplyWithRange does: counted while
// it is known and no deletion lies ahead, otherwise re-estimated with
// streamEstimateDistanceFromFirstEverEntry.
func advance(s codec.StreamMeta, g *codec.Group, id codec.ID) {
	if !g.LastDeliveredID.Less(id) {
		return
	}
	switch {
	case g.EntriesRead != InvalidEntriesRead && !hasTombstones(s, id):
		g.EntriesRead++
	case s.EntriesAdded != 0:
		g.EntriesRead = estimateEntriesRead(s, id)
	}
	g.LastDeliveredID = id
}

// hasTombstones reports whether an entry in [start, last-id] was deleted, as
// far as max-deleted-entry-id tells (Redis's streamRangeHasTombstones).
func hasTombstones(s codec.StreamMeta, start codec.ID) bool {
	d := s.MaxDeletedID
	if s.Length == 0 || d.IsZero() {
		return false
	}
	return !d.Less(start) && !s.LastID.Less(d)
}

// estimateEntriesRead is Redis's streamEstimateDistanceFromFirstEverEntry:
// the number of entries added up to and including id, or
// InvalidEntriesRead when deletions make it unknowable.
func estimateEntriesRead(s codec.StreamMeta, id codec.ID) int64 {
	if s.EntriesAdded == 0 {
		return 0
	}
	added := int64(s.EntriesAdded)
	if s.Length == 0 && !s.LastID.Less(id) {
		return added
	}
	switch c := id.Compare(s.LastID); {
	case c == 0:
		return added
	case c > 0:
		return InvalidEntriesRead
	}
	if s.MaxDeletedID.IsZero() || s.MaxDeletedID.Less(s.FirstID) {
		switch id.Compare(s.FirstID) {
		case -1:
			return added - int64(s.Length)
		case 0:
			return added - int64(s.Length) + 1
		}
	}
	return InvalidEntriesRead
}

// ReadHistory is Session.ReadHistory alone in its decision, with its events.
func ReadHistory(v *materialize.View, db uint8, key []byte, a ReadArgs, after codec.ID) ([]streams.Entry, []codec.Event, error) {
	s := NewSession(v, db)
	entries, err := s.ReadHistory(key, a, after)
	if err != nil {
		return nil, nil, err
	}
	events, err := s.Finish()
	return entries, events, err
}

func pelEntry(v *materialize.View, db uint8, key, group []byte, id codec.ID) (codec.PELEntry, bool, error) {
	b, ok, err := v.Get(codec.PELKey(db, key, group, id))
	if err != nil || !ok {
		return codec.PELEntry{}, false, err
	}
	pe, err := codec.DecodePELEntry(b)
	return pe, err == nil, err
}

// Ack removes ids from the group's PEL (XACK) and returns how many were
// pending. A missing key or group acknowledges nothing (0), as in Redis.
// https://redis.io/docs/latest/commands/xack/
func Ack(v *materialize.View, db uint8, key, group []byte, ids []codec.ID) (int, []codec.Event, error) {
	_, g, err := Lookup(v, db, key, group)
	if err != nil {
		if errors.Is(err, ErrNoGroup) {
			return 0, nil, nil
		}
		return 0, nil, err
	}
	edit := newPELEdit(v, db, key, group, g)
	n := 0
	for _, id := range ids {
		pe, pending, err := edit.entry(id) // an ID named twice is pending once

		if err != nil {
			return 0, nil, err
		}
		if pending {
			if err := edit.del(id, pe); err != nil {
				return 0, nil, err
			}
			n++
		}
	}
	if n == 0 {
		return 0, nil, nil
	}
	events, err := edit.finish()
	return n, events, err
}

// ConsumerCount is one line of the XPENDING summary.
type ConsumerCount struct {
	Consumer []byte
	Count    int64
}

// Summary is XPENDING's summary form: the PEL size, its smallest and largest
// IDs, and the pending count of each consumer with pending entries, ordered
// by consumer name.
type Summary struct {
	Count     int64
	Min, Max  codec.ID
	Consumers []ConsumerCount
}

// PendingSummary returns the XPENDING summary. The count and the smallest
// ID come from the group's PEL stats; the largest ID is one reverse seek,
// and the per-consumer counts one pass over the group's consumers (only
// when something is pending). Errors: ErrNoGroup, materialize.ErrWrongType.
// https://redis.io/docs/latest/commands/xpending/
func PendingSummary(v *materialize.View, db uint8, key, group []byte) (Summary, error) {
	var s Summary
	_, g, err := Lookup(v, db, key, group)
	if err != nil || g.PEL.Count == 0 {
		return s, err
	}
	s.Count, s.Min = int64(g.PEL.Count), g.PEL.First
	p := codec.GroupPrefix(codec.TagPEL, db, key, group)
	lower, upper, _ := pendingBounds(p, g.PEL, codec.ID{}, codec.MaxID)
	err = v.IterateNoValues(lower, upper, true, func(k []byte) (bool, error) {
		s.Max, err = codec.DecodeID(k[len(p):])
		return false, err
	})
	if err != nil {
		return s, err
	}
	cp := codec.GroupPrefix(codec.TagConsumer, db, key, group)
	err = v.IterateKeys(cp, codec.PrefixEnd(cp), func(k, val []byte) (bool, error) {
		name, _, err := codec.SplitName(k[len(cp):])
		if err != nil {
			return false, err
		}
		c, err := codec.DecodeConsumer(val)
		if err != nil {
			return false, err
		}
		if err := fillConsumerPEL(v, db, key, group, name, &c); err != nil {
			return false, err
		}
		if c.PEL.Count > 0 {
			s.Consumers = append(s.Consumers, ConsumerCount{append([]byte(nil), name...), int64(c.PEL.Count)})
		}
		return true, nil
	})
	sort.Slice(s.Consumers, func(i, j int) bool {
		return bytes.Compare(s.Consumers[i].Consumer, s.Consumers[j].Consumer) < 0
	})
	return s, err
}

// Pending is one line of XPENDING's extended form.
type Pending struct {
	ID             codec.ID
	Consumer       []byte
	IdleMs         int64
	DeliveryTimeMs int64 // Unix ms of the last delivery (XINFO STREAM FULL)
	DeliveryCount  uint64
}

// RangeArgs are XPENDING's extended-form arguments.
type RangeArgs struct {
	MinIdleMs  int64
	Start, End codec.ID // inclusive
	Count      int64    // <= 0: empty result
	Consumer   []byte   // nil: every consumer
}

// PendingRange returns XPENDING's extended form. Unowned entries have an
// empty Consumer: one released by XNACK has IdleMs -1 and passes any
// MinIdleMs; one parked by delayed delivery has IdleMs -1 before its due
// time (and passes only MinIdleMs 0), then the time since it. Errors:
// ErrNoGroup, materialize.ErrWrongType.
func PendingRange(v *materialize.View, db uint8, key, group []byte, a RangeArgs) ([]Pending, error) {
	_, g, err := Lookup(v, db, key, group)
	if err != nil {
		return nil, err
	}
	out := []Pending{}
	if a.Count <= 0 {
		return out, nil
	}
	p, stats := codec.GroupPrefix(codec.TagPEL, db, key, group), g.PEL
	if a.Consumer != nil {
		c, ok, err := loadConsumer(v, db, key, group, a.Consumer)
		if err != nil || !ok {
			return out, err
		}
		p, stats = codec.ConsumerPELPrefix(db, key, group, a.Consumer), c.PEL
	}
	lower, upper, ok := pendingBounds(p, stats, a.Start, a.End)
	if !ok {
		return out, nil
	}
	now := v.NowMs()
	err = v.Iterate(lower, upper, false, func(k, val []byte) (bool, error) {
		id, err := codec.DecodeID(k[len(p):])
		if err != nil {
			return false, err
		}
		if a.Consumer != nil {
			var ok bool
			if val, ok, err = v.Get(codec.PELKey(db, key, group, id)); err != nil || !ok {
				return err == nil, err
			}
		}
		pe, err := codec.DecodePELEntry(val)
		if err != nil {
			return false, err
		}
		idle := now - pe.DeliveryTimeMs
		if idle < 0 {
			idle = 0
		}
		ok := idle >= a.MinIdleMs
		switch {
		case pe.Parked && !claimable(pe, now):
			// Parked (delayed delivery), not yet due: idle -1, as an
			// unowned entry, and idle enough for no IDLE filter.
			idle, ok = -1, a.MinIdleMs <= 0
		case pe.Parked:
			// Due: idle since its due time (its delivery time), as claims see it.
		case pe.Nacked():
			// Released by XNACK: idle -1 (the XNACK page's XPENDING
			// example), and claimable whatever IDLE asks.
			idle, ok = -1, true
		}
		if ok {
			out = append(out, Pending{id, append([]byte(nil), pe.Consumer...), idle, pe.DeliveryTimeMs, pe.DeliveryCount})
		}
		return int64(len(out)) < a.Count, nil
	})
	return out, err
}

// GroupInfo is one group of XINFO GROUPS.
type GroupInfo struct {
	Name            []byte
	Consumers       int64
	Pending         int64
	LastDeliveredID codec.ID
	EntriesRead     int64 // InvalidEntriesRead: unknown
	Lag             int64 // valid only when LagKnown
	LagKnown        bool
	Nacked          int64 // entries in the NACK zone (Redis 8.8's nacked-count)
}

// Infos returns every group of key in name order (XINFO GROUPS), with its
// consumer and pending counts and Redis 7.0's entries-read and lag
// (streamGetLag: entries added minus entries read, when that is knowable).
// key must exist. Errors: materialize.ErrWrongType.
// https://redis.io/docs/latest/commands/xinfo-groups/
func Infos(v *materialize.View, db uint8, key []byte, m codec.StreamMeta) ([]GroupInfo, error) {
	var out []GroupInfo
	err := eachGroup(v, db, key, func(name []byte, g codec.Group) {
		out = append(out, GroupInfo{Name: name, LastDeliveredID: g.LastDeliveredID,
			EntriesRead: g.EntriesRead, Pending: int64(g.PEL.Count), Nacked: int64(g.Nacked)})
	})
	if err != nil {
		return nil, err
	}
	for i := range out {
		gi := &out[i]
		if gi.Consumers, err = countPrefix(v, codec.GroupPrefix(codec.TagConsumer, db, key, gi.Name)); err != nil {
			return nil, err
		}
		gi.Lag, gi.LagKnown = lag(m, codec.Group{LastDeliveredID: gi.LastDeliveredID, EntriesRead: gi.EntriesRead})
	}
	sort.Slice(out, func(i, j int) bool { return bytes.Compare(out[i].Name, out[j].Name) < 0 })
	return out, nil
}

// eachGroup calls fn with every group of key (a copy of its name, and its
// value with the PEL stats of a legacy value recounted), in key order.
func eachGroup(v *materialize.View, db uint8, key []byte, fn func(name []byte, g codec.Group)) error {
	p := codec.KeyPrefix(codec.TagGroup, db, key)
	return v.IterateKeys(p, codec.PrefixEnd(p), func(k, val []byte) (bool, error) {
		name, _, err := codec.SplitName(k[len(p):])
		if err != nil {
			return false, err
		}
		g, err := codec.DecodeGroup(val)
		if err != nil {
			return false, err
		}
		name = append([]byte(nil), name...)
		if err := fillGroupPEL(v, db, key, name, &g); err != nil {
			return false, err
		}
		fn(name, g)
		return true, nil
	})
}

// Count returns how many consumer groups key has (XINFO STREAM's groups).
func Count(v *materialize.View, db uint8, key []byte) (int64, error) {
	return countPrefix(v, codec.KeyPrefix(codec.TagGroup, db, key))
}

// lag is Redis 7.0's streamGetLag.
func lag(s codec.StreamMeta, g codec.Group) (int64, bool) {
	if s.EntriesAdded == 0 {
		return 0, true
	}
	if g.EntriesRead != InvalidEntriesRead && !hasTombstones(s, g.LastDeliveredID) {
		return int64(s.EntriesAdded) - g.EntriesRead, true
	}
	if read := estimateEntriesRead(s, g.LastDeliveredID); read != InvalidEntriesRead {
		return int64(s.EntriesAdded) - read, true
	}
	return 0, false
}

func countPrefix(v *materialize.View, p []byte) (int64, error) {
	var n int64
	err := v.IterateKeys(p, codec.PrefixEnd(p), func(_, _ []byte) (bool, error) { n++; return true, nil })
	return n, err
}

// ConsumerInfo is one consumer of XINFO CONSUMERS.
type ConsumerInfo struct {
	Name         []byte
	Pending      int64
	IdleMs       int64 // ms since the last attempted interaction (seen-time)
	InactiveMs   int64 // ms since the last successful interaction (active-time); -1: never
	SeenTimeMs   int64 // Unix ms of the last attempted interaction (XINFO STREAM FULL's seen-time)
	ActiveTimeMs int64 // Unix ms of the last successful interaction; -1: never (active-time)
}

// ConsumerInfos returns the group's consumers in name order (XINFO
// CONSUMERS), with Redis 7.2's seen-time (any XREADGROUP, XCLAIM or
// XAUTOCLAIM, claimed or not) and active-time (entries entered the consumer's
// PEL: XREADGROUP '>' without NOACK, a claim). Errors: ErrNoGroup, materialize.ErrWrongType.
// https://redis.io/docs/latest/commands/xinfo-consumers/
func ConsumerInfos(v *materialize.View, db uint8, key, group []byte) ([]ConsumerInfo, error) {
	if _, _, err := Lookup(v, db, key, group); err != nil {
		return nil, err
	}
	var out []ConsumerInfo
	p := codec.GroupPrefix(codec.TagConsumer, db, key, group)
	err := v.IterateKeys(p, codec.PrefixEnd(p), func(k, val []byte) (bool, error) {
		name, _, err := codec.SplitName(k[len(p):])
		if err != nil {
			return false, err
		}
		c, err := codec.DecodeConsumer(val)
		if err != nil {
			return false, err
		}
		if err := fillConsumerPEL(v, db, key, group, name, &c); err != nil {
			return false, err
		}
		inactive := int64(-1)
		if c.ActiveTimeMs >= 0 {
			inactive = max(v.NowMs()-c.ActiveTimeMs, 0)
		}
		out = append(out, ConsumerInfo{Name: append([]byte(nil), name...), IdleMs: max(v.NowMs()-c.SeenTimeMs, 0),
			InactiveMs: inactive, SeenTimeMs: c.SeenTimeMs, ActiveTimeMs: c.ActiveTimeMs, Pending: int64(c.PEL.Count)})
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return bytes.Compare(out[i].Name, out[j].Name) < 0 })
	return out, nil
}
