package materialize

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"strconv"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/sediment-dev/sediment/codec"
)

// Consistency check (`sediment check`): one scan of the whole keyspace
// that recounts what the metadata and the indexes claim
// (docs/key-format.md) and reports every disagreement.
//
// Checked, per user key (its T key against its sub-keys):
//
//   - T: the key decodes (slot matches the key), the value decodes, no
//     suffix; expire-at is not negative, and when set its E key exists;
//     a hash, set, list or sorted set has a count above 0.
//   - Sub-keys: every sub-key (B C G H I J N O P Q S U V W X Y Z) has the
//     metadata of its user key, of a type that owns its tag
//     (Type.SubTags; a string owns none); keys decode (length prefix,
//     slot).
//   - Hash: fields (H) = count. Set: members (S) = count, S values empty.
//   - List: elements (I) = count; positions are exactly head, head+1, ….
//   - Sorted set: members (Z) = count; every Z value is 8 bytes, not NaN,
//     not -0; score-index keys (Y) = members, each with an empty value and
//     the score its Z key holds; the floor is the lowest Y suffix truncated
//     to codec.ZFloorMax; a ranked set's rank blocks (B) chain from an
//     empty lower fence to codec.ZBlockEnd, each counts exactly the Y keys
//     in [lower, upper), holds 1..ZBlockMax, and no two neighbours hold
//     ZBlockMerge or fewer together; an unranked set has no B keys.
//   - Stream: entries (X) = length, each value decodes; first-id = the
//     first entry (0-0 when empty); last-id >= the last entry;
//     entries-added >= length (max-deleted-id may be above last-id after
//     XSETID).
//   - Stream nodes: node keys (N) decode and lie below the tail's first
//     ID; every entry lies in the node of the greatest first ID at or
//     below it (the tail from its first ID on), within that node's last
//     ID, and each node's live count is its entries, so the live counts
//     of the node keys and the tail sum to the length; a node's range
//     reaches past last-id only with a deleted entry (or as a migrated
//     record), and into the next node's only so and without a next ID
//     (as after an XSETID below deleted entries); the node keys' counts
//     plus the tail's are the metadata's node count; the head summary is
//     the first node key's (first ID when kept, last ID, live count,
//     migrated) or zero without node keys. A legacy stream (not
//     migrated) has no node keys.
//   - Consumer groups: G and C values decode; every C, P, Q and W key
//     belongs to a group with a G key, every Q key to a consumer with a C
//     key. Each pending entry (P) decodes; an owned one names an existing
//     consumer and has its Q key; every pending entry has its W key at
//     its IndexTime (required when the group is TimeIndexed; counted as
//     unindexed otherwise). Every Q key has a P entry owned by that
//     consumer (not NACKed); every W key has a P entry with that time.
//     Group (unless a legacy value, PELUnknown): pel-count and pel-first =
//     the P keys; nacked = the NACKed entries; nack-next above every NACK
//     sequence; time-first, when TimeIndexed and entries are pending, is
//     the first W key or 0 (unknown). Consumer (unless legacy): pel-count
//     and pel-first = its Q keys.
//   - Delayed delivery: a parked pending entry (a P value marked 'D') has
//     no owner (codec rejects a 'D' after a consumer name; the check names
//     that fault), delivery count 0, no Q key under any consumer, and its
//     W key at its delivery time whether or not the group is TimeIndexed
//     (parking always writes one); it counts in the group's nacked, so
//     nack-next is at least 1; when its stream entry still exists, the X
//     value's delay tail holds a due time equal to that delivery time.
//   - Idempotent production: J, O, U, V values decode; every U key's
//     record has the V key naming it and back; every V key has its M key
//     at the deadline J's duration gives; per producer, the O count = its
//     U keys = its V keys and the O first ID = its first V key; J's pids =
//     the O keys and iids = the V keys; no records without a J key.
//
// Store-wide: every E key decodes and its slot matches its key; E keys
// whose metadata is gone or has another expire-at are stale, which
// FLUSHDB leaves for active expiry by design: counted (StaleTTL), not
// violations. M keys decode; those without their V key (or at another
// deadline) are stale by design likewise (StaleIDMP). Each db's K key
// holds its T keys and those with a TTL (no K key for an empty db). A
// holds 8 bytes, the store's last applied sequence. D decodes to a
// permutation. No L key is left (Open moves them to the change-log
// files). No key has a tag outside those of docs/key-format.md.
//
// Not checked: string values (any bytes); hash field and list element
// values; stream entries-read, last-delivered-id, max-deleted-id against
// the deletions (the history is gone), node-origin; consumer seen and
// active times; delivery counts (but a parked entry's); dead-letter
// settings; whether a delayed entry a group's reads passed is still
// parked (XACK and claims remove it, XGROUP SETID moves the group back);
// a parked entry's due time against the clock; whether a ranked flag
// matches the thresholds (rzset.RankOn/RankOff, with hysteresis);
// IDMP counters added and duplicates; the deadline of M keys without a J
// duration; whether the change-log files hold every record after A
// (Open replays them, and fails on a corrupt one); values' blob files
// beyond reading those the checks read; Pebble's own sstable checksums
// beyond the blocks read. The offline Check opens the store first, and
// Open repairs two things before the scan can see them: a store with no K
// key at all is recounted (as one from before the counts), and L keys are
// moved to the change-log files; an A key set too low makes Open replay
// records the state already holds.

// DefaultMaxViolations is how many violations a CheckReport lists when the
// caller's limit is 0 or less; every violation is counted.
const DefaultMaxViolations = 100

// ErrInUse is returned by Check when another Store (a running server) holds
// the data directory's lock.
var ErrInUse = errors.New("materialize: data directory in use")

// ErrNoStore is returned by Check when the directory holds no store.
var ErrNoStore = errors.New("materialize: no store in directory")

// Violation is one disagreement between what the store claims and what a
// recount found.
type Violation struct {
	// DB is the storage db (the db byte of keys: the logical db unless a
	// SWAPDB swapped it) and Key the user key, when the violation is about
	// one key (Key nil: a store-wide key, K, A, D, L or an unknown one).
	DB  uint8
	Key []byte
	// Raw is the Pebble key at fault, when there is one (nil for a count).
	Raw []byte
	// Check names what was checked; Stored is what the metadata or index
	// says, Counted what the recount found.
	Check, Stored, Counted string
}

// String formats v on one line, keys quoted as Go strings.
func (v Violation) String() string {
	var b []byte
	if v.Key != nil {
		b = fmt.Appendf(b, "db %d key %s: ", v.DB, strconv.Quote(string(v.Key)))
	}
	b = fmt.Appendf(b, "%s: stored %s, counted %s", v.Check, v.Stored, v.Counted)
	if v.Raw != nil {
		b = fmt.Appendf(b, " (pebble key %s)", strconv.Quote(string(v.Raw)))
	}
	return string(b)
}

// CheckReport is the result of a check. The maps are keyed by type.
type CheckReport struct {
	Applied  uint64               // the A key: the last change-log record the state holds
	Keys     map[codec.Type]int64 // user keys (T keys) per type
	Elements map[codec.Type]int64 // hash fields, set and zset members, list elements, stream entries
	Expiring int64                // keys with a TTL
	// Groups, Consumers and Pending count consumer groups, consumers and
	// pending entries (P keys); Unindexed the pending entries of groups
	// from before the W index that have no W key (allowed).
	Groups, Consumers, Pending, Unindexed int64
	// StaleTTL counts E keys without metadata of that deadline, StaleIDMP
	// M keys without their record: both allowed (see Check).
	StaleTTL, StaleIDMP int64
	// Violations lists the first violations found (at most the limit);
	// NumViolations counts them all.
	Violations    []Violation
	NumViolations int64
}

// Check opens the store of opts.Dir (a stopped server's data directory),
// checks it as Store.Check does and closes it. Opening replays the
// change-log records Pebble lacks (after a crash), as a server's start
// would. It returns ErrNoStore if opts.Dir holds no store (it creates
// none) and ErrInUse if a running server holds it.
func Check(opts Options, maxViolations int) (CheckReport, error) {
	if opts.InMemory || opts.Dir == "" {
		return CheckReport{}, errors.New("materialize: check needs a data directory")
	}
	fsys := opts.FS
	if fsys == nil {
		fsys = vfs.Default
	}
	desc, err := pebble.Peek(opts.Dir, fsys)
	if err != nil {
		return CheckReport{}, fmt.Errorf("%w: %s: %v", ErrNoStore, opts.Dir, err)
	}
	if !desc.Exists {
		return CheckReport{}, fmt.Errorf("%w: %s", ErrNoStore, opts.Dir)
	}
	lock, err := pebble.LockDirectory(opts.Dir, fsys)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return CheckReport{}, fmt.Errorf("materialize: locking %s: %w", opts.Dir, err)
		}
		return CheckReport{}, fmt.Errorf("%w: %s (is a server running on it?): %v", ErrInUse, opts.Dir, err)
	}
	if err := lock.Close(); err != nil {
		return CheckReport{}, err
	}
	s, err := Open(opts)
	if err != nil {
		return CheckReport{}, err
	}
	rep, err := s.Check(maxViolations)
	return rep, errors.Join(err, s.Close())
}

// Check scans the whole store at one consistent state (a Pebble snapshot;
// writes may go on meanwhile) and verifies the invariants listed in this
// file's comment against a recount. It lists up to maxViolations
// violations (DefaultMaxViolations when 0 or less) and counts them all.
// An error means the scan could not read the store (an I/O error, a
// value Pebble could not fetch), not a violation.
//
// Cost: one pass over every key, plus a point read per pending entry (two
// per parked one: its stream entry), PEL index key, sorted-set member, IDMP record and E key.
func (s *Store) Check(maxViolations int) (CheckReport, error) {
	if maxViolations <= 0 {
		maxViolations = DefaultMaxViolations
	}
	// No segment goes while the references are read (retention).
	hold := s.HoldLog(1)
	defer hold.Release()
	lo := s.committed.Load() // applied before the snapshot: A >= lo
	snap := s.db.NewSnapshot()
	defer snap.Close()
	hi := s.applying.Load() // no commit past hi had begun: A <= hi
	c := &checker{r: snap, vlog: s.log, max: maxViolations, rep: CheckReport{Keys: map[codec.Type]int64{}, Elements: map[codec.Type]int64{}}}
	if err := c.run(); err != nil {
		return c.rep, err
	}
	if err := c.checkApplied(lo, hi); err != nil {
		return c.rep, err
	}
	if err := c.checkFormat(); err != nil {
		return c.rep, err
	}
	return c.rep, nil
}

// checker is one check's state.
type checker struct {
	r     pebble.Reader
	vlog  *changeLog // where value references point
	max   int
	rep   CheckReport
	tally [256][2]int64 // per db: T keys, those with a TTL
}

func (c *checker) report(v Violation) {
	c.rep.NumViolations++
	if len(c.rep.Violations) < c.max {
		c.rep.Violations = append(c.rep.Violations, v)
	}
}

// keyViolation reports a violation about the user key of header h
// (slot · db · keylen · key).
func (c *checker) keyViolation(h []byte, check, stored, counted string, raw []byte) {
	db, key := splitHeader(h)
	if raw != nil {
		raw = bytes.Clone(raw)
	}
	c.report(Violation{DB: db, Key: bytes.Clone(key), Raw: raw, Check: check, Stored: stored, Counted: counted})
}

// splitHeader returns the db and user key of a header.
func splitHeader(h []byte) (uint8, []byte) { return h[2], h[7:] }

// get returns a copy of k's value; ok is false when k is absent.
func (c *checker) get(k []byte) ([]byte, bool, error) {
	v, closer, err := c.r.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	out := bytes.Clone(v)
	if out == nil {
		out = []byte{}
	}
	return out, true, closer.Close()
}

func (c *checker) has(k []byte) (bool, error) {
	_, ok, err := c.get(k)
	return ok, err
}

// keyedTags are the sub-key tags under a user key's header (all but T).
var keyedTags = []codec.Tag{codec.TagZBlock, codec.TagConsumer, codec.TagGroup, codec.TagHash, codec.TagList,
	codec.TagIDMPState, codec.TagStreamNode, codec.TagIDMPProducer, codec.TagPEL, codec.TagConsumerPEL, codec.TagSet,
	codec.TagIDMPByIID, codec.TagIDMPByID, codec.TagPELTime, codec.TagStreamEntry, codec.TagZScore, codec.TagZMember}

// knownTags are every tag of docs/key-format.md.
var knownTags = func() (t [256]bool) {
	for _, tag := range append([]codec.Tag{codec.TagMeta, codec.TagTTL, codec.TagIDMPExpiry, codec.TagChangeLog,
		codec.TagApplied, codec.TagFormat, codec.TagCount, codec.TagDBMap, codec.TagValueRef}, keyedTags...) {
		t[tag] = true
	}
	return t
}()

// cursor walks one tag's region in step with the T keys: user keys sort
// the same way (slot, db, keylen, key) under every tag.
type cursor struct {
	c      *checker
	tag    codec.Tag
	it     *pebble.Iterator
	value  bool   // read values
	ok     bool   // positioned on a decodable key
	hdr    []byte // the current key's header: k[1 : 8+keylen]
	suffix []byte
}

func (c *checker) newCursor(tag codec.Tag) (*cursor, error) {
	it, err := c.r.NewIter(&pebble.IterOptions{LowerBound: []byte{byte(tag)}, UpperBound: []byte{byte(tag) + 1}})
	if err != nil {
		return nil, err
	}
	cu := &cursor{c: c, tag: tag, it: it, value: tag != codec.TagHash && tag != codec.TagList}
	cu.advance(it.First())
	return cu, nil
}

// advance settles on the first decodable key from the iterator's
// position, reporting the others.
func (cu *cursor) advance(ok bool) {
	for ; ok; ok = cu.it.Next() {
		k := cu.it.Key()
		d, err := codec.DecodeKey(k)
		if err == nil {
			cu.hdr, cu.suffix, cu.ok = k[1:len(k)-len(d.Suffix)], d.Suffix, true
			return
		}
		cu.c.report(Violation{Raw: bytes.Clone(k), Check: "undecodable key", Stored: err.Error(), Counted: "-"})
	}
	cu.ok = false
}

// each calls fn for every key of header h, moving past them.
func (cu *cursor) each(h []byte, fn func(k, suffix, val []byte) error) error {
	for cu.ok && bytes.Equal(cu.hdr, h) {
		var val []byte
		if cu.value {
			v, err := cu.it.ValueAndErr()
			if err != nil {
				return err
			}
			val = v
		}
		if err := fn(cu.it.Key(), cu.suffix, val); err != nil {
			return err
		}
		cu.advance(cu.it.Next())
	}
	return nil
}

// skip moves past the keys of header h and reports them, if any, as check
// with stored.
func (cu *cursor) skip(h []byte, check, stored string) {
	var n int64
	var first []byte
	for cu.ok && bytes.Equal(cu.hdr, h) {
		if n == 0 {
			first = bytes.Clone(cu.it.Key())
		}
		n++
		cu.advance(cu.it.Next())
	}
	if n > 0 {
		cu.c.keyViolation(h, check, stored, fmt.Sprintf("%d %c keys", n, cu.tag), first)
	}
}

// orphansBefore reports the keys before header h (every key left, for
// nil): their user keys have no metadata.
func (cu *cursor) orphansBefore(h []byte) {
	for cu.ok && (h == nil || bytes.Compare(cu.hdr, h) < 0) {
		cu.skip(bytes.Clone(cu.hdr), "sub-keys without metadata", "no metadata")
	}
}

func (c *checker) run() error {
	curs := map[codec.Tag]*cursor{}
	defer func() {
		for _, cu := range curs {
			cu.it.Close()
		}
	}()
	for _, tag := range keyedTags {
		cu, err := c.newCursor(tag)
		if err != nil {
			return err
		}
		curs[tag] = cu
	}
	it, err := c.r.NewIter(&pebble.IterOptions{LowerBound: []byte{byte(codec.TagMeta)}, UpperBound: []byte{byte(codec.TagMeta) + 1}})
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		d, err := codec.DecodeKey(k)
		if err != nil || len(d.Suffix) != 0 {
			c.report(Violation{Raw: bytes.Clone(k), Check: "undecodable key", Stored: "metadata key", Counted: fmt.Sprint(err)})
			continue
		}
		h := k[1:]
		for _, tag := range keyedTags {
			curs[tag].orphansBefore(h)
		}
		val, err := it.ValueAndErr()
		if err != nil {
			return err
		}
		if err := c.checkKey(curs, h, d.DB, d.Key, val); err != nil {
			return err
		}
		stored := "undecodable metadata"
		if len(val) >= 2 && codec.Type(val[1]).String() != "none" {
			stored = "type " + codec.Type(val[1]).String()
		}
		for _, tag := range keyedTags {
			curs[tag].skip(h, "sub-keys of another type", stored)
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	for _, tag := range keyedTags {
		cu := curs[tag]
		cu.orphansBefore(nil)
		if err := cu.it.Error(); err != nil {
			return err
		}
	}
	for _, f := range []func() error{c.checkTTL, c.checkIDMPExpiry, c.checkCounts, c.checkDBMap, c.checkLegacyLog, c.checkTags} {
		if err := f(); err != nil {
			return err
		}
	}
	return nil
}

// checkKey checks one user key: its metadata (val) and, through the
// cursors, its sub-keys.
func (c *checker) checkKey(curs map[codec.Tag]*cursor, h []byte, db uint8, key, val []byte) error {
	// The K counts count T keys, whatever their value: from the header.
	c.tally[db][0]++
	if len(val) >= 10 && binary.BigEndian.Uint64(val[2:10]) != 0 {
		c.tally[db][1]++
	}
	m, err := codec.DecodeMeta(val)
	if err != nil {
		c.keyViolation(h, "undecodable metadata", err.Error(), "-", nil)
		return nil // its sub-keys are reported as of another type
	}
	c.rep.Keys[m.Type]++
	if m.ExpireAtMs != 0 {
		c.rep.Expiring++
		if m.ExpireAtMs < 0 {
			c.keyViolation(h, "negative expire-at", strconv.FormatInt(m.ExpireAtMs, 10), "-", nil)
		} else if ok, err := c.has(codec.TTLKey(db, key, m.ExpireAtMs)); err != nil {
			return err
		} else if !ok {
			c.keyViolation(h, "TTL index entry missing", "expire-at "+strconv.FormatInt(m.ExpireAtMs, 10), "no E key", codec.TTLKey(db, key, m.ExpireAtMs))
		}
	}
	if !m.Ref.IsZero() {
		if err := c.checkValueRef(h, db, key, m.Ref); err != nil {
			return err
		}
	}
	switch m.Type {
	case codec.TypeHash, codec.TypeSet, codec.TypeList, codec.TypeZSet:
		if m.Count == 0 {
			c.keyViolation(h, "empty collection", "count 0", "-", nil)
		}
	}
	switch m.Type {
	case codec.TypeHash:
		return c.checkElements(curs[codec.TagHash], h, m, "hash field count")
	case codec.TypeSet:
		return c.checkElements(curs[codec.TagSet], h, m, "set member count")
	case codec.TypeList:
		return c.checkList(curs[codec.TagList], h, m)
	case codec.TypeZSet:
		return c.checkZSet(curs, h, db, key, m)
	case codec.TypeStream:
		return c.checkStream(curs, h, db, key, m)
	}
	return nil
}

func u64(n uint64) string { return strconv.FormatUint(n, 10) }

// checkElements counts a hash's fields or a set's members.
func (c *checker) checkElements(cu *cursor, h []byte, m codec.Meta, check string) error {
	var n uint64
	err := cu.each(h, func(k, _, val []byte) error {
		if cu.tag == codec.TagSet && len(val) != 0 {
			c.keyViolation(h, "set member value", "empty", fmt.Sprintf("%d bytes", len(val)), k)
		}
		n++
		return nil
	})
	c.rep.Elements[m.Type] += int64(n)
	if err == nil && n != m.Count {
		c.keyViolation(h, check, u64(m.Count), u64(n), nil)
	}
	return err
}

// checkList checks that a list's positions are head, head+1, ….
func (c *checker) checkList(cu *cursor, h []byte, m codec.Meta) error {
	var n uint64
	var first, next int64
	gap := false
	err := cu.each(h, func(k, suffix, _ []byte) error {
		pos, err := codec.DecodeListPos(suffix)
		if err != nil {
			c.keyViolation(h, "list element key", "8-byte position", err.Error(), k)
			return nil
		}
		if n == 0 {
			first = pos
		} else if pos != next && !gap {
			gap = true
			c.keyViolation(h, "list positions", "dense: position "+strconv.FormatInt(next, 10)+" next", "position "+strconv.FormatInt(pos, 10), k)
		}
		next = pos + 1
		n++
		return nil
	})
	c.rep.Elements[codec.TypeList] += int64(n)
	if err != nil {
		return err
	}
	if n != m.Count {
		c.keyViolation(h, "list element count", u64(m.Count), u64(n), nil)
	}
	if n > 0 && first != m.Head {
		c.keyViolation(h, "list head", strconv.FormatInt(m.Head, 10), "first position "+strconv.FormatInt(first, 10), nil)
	}
	return nil
}

// checkZSet checks a sorted set's members, score index, floor and rank
// blocks.
func (c *checker) checkZSet(curs map[codec.Tag]*cursor, h []byte, db uint8, key []byte, m codec.Meta) error {
	var nz uint64
	err := curs[codec.TagZMember].each(h, func(k, _, val []byte) error {
		nz++
		if len(val) != 8 {
			c.keyViolation(h, "zset member score value", "8 bytes", fmt.Sprintf("%d bytes", len(val)), k)
			return nil
		}
		bits := binary.BigEndian.Uint64(val)
		if f := math.Float64frombits(bits); math.IsNaN(f) || bits == 1<<63 {
			c.keyViolation(h, "zset member score value", "a score, not NaN or -0", strconv.FormatFloat(f, 'g', -1, 64), k)
		}
		return nil
	})
	if err != nil {
		return err
	}
	type block struct {
		raw, hi, lo []byte
		n, counted  uint64
	}
	var blocks []block
	err = curs[codec.TagZBlock].each(h, func(k, suffix, val []byte) error {
		n, lo, err := codec.DecodeZBlock(val)
		if err != nil {
			c.keyViolation(h, "rank block value", "count and lower fence", err.Error(), k)
			n = math.MaxUint64
		}
		blocks = append(blocks, block{raw: bytes.Clone(k), hi: bytes.Clone(suffix), lo: bytes.Clone(lo), n: n})
		return nil
	})
	if err != nil {
		return err
	}
	fenced := len(blocks) > 0
	for i, bl := range blocks {
		want := []byte(nil)
		if i > 0 {
			want = blocks[i-1].hi
		}
		if !bytes.Equal(bl.lo, want) || (i == len(blocks)-1 && !bytes.Equal(bl.hi, codec.ZBlockEnd)) {
			fenced = false
			c.keyViolation(h, "rank block fences", "a chain from an empty lower fence to ff ff", fmt.Sprintf("block %d of %d: lower %x, upper %x", i, len(blocks), bl.lo, bl.hi), bl.raw)
			break
		}
	}
	var ny uint64
	var floor []byte
	bi := 0
	zk := codec.ZMemberKey(db, key, nil)
	zp := len(zk)
	err = curs[codec.TagZScore].each(h, func(k, suffix, val []byte) error {
		f, member, err := codec.DecodeZScoreSuffix(suffix)
		if err != nil {
			c.keyViolation(h, "zset score index key", "score and member", err.Error(), k)
			return nil
		}
		if ny == 0 {
			floor = bytes.Clone(suffix[:min(len(suffix), codec.ZFloorMax)])
		}
		ny++
		if len(val) != 0 {
			c.keyViolation(h, "zset score index value", "empty", fmt.Sprintf("%d bytes", len(val)), k)
		}
		zk = append(zk[:zp], member...)
		zv, ok, err := c.get(zk)
		if err != nil {
			return err
		}
		if f == 0 {
			f = 0
		}
		switch {
		case !ok:
			c.keyViolation(h, "zset score index entry without member", "member "+strconv.Quote(string(member)), "no Z key", k)
		case len(zv) == 8 && binary.BigEndian.Uint64(zv) != math.Float64bits(f):
			c.keyViolation(h, "zset score", "Z "+strconv.FormatFloat(math.Float64frombits(binary.BigEndian.Uint64(zv)), 'g', -1, 64),
				"Y "+strconv.FormatFloat(f, 'g', -1, 64)+" for member "+strconv.Quote(string(member)), k)
		}
		if fenced {
			for bi < len(blocks) && bytes.Compare(suffix, blocks[bi].hi) >= 0 {
				bi++
			}
			if bi < len(blocks) {
				blocks[bi].counted++
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	c.rep.Elements[codec.TypeZSet] += int64(nz)
	if nz != m.Count {
		c.keyViolation(h, "zset member count", u64(m.Count), u64(nz)+" Z keys", nil)
	}
	if ny != nz {
		c.keyViolation(h, "zset score index count", u64(nz)+" Z keys", u64(ny)+" Y keys", nil)
	}
	if ny > 0 && !bytes.Equal(m.Floor, floor) {
		c.keyViolation(h, "zset floor", fmt.Sprintf("%x", m.Floor), fmt.Sprintf("%x (the first Y suffix)", floor), nil)
	}
	if !m.Ranked {
		if len(blocks) > 0 {
			c.keyViolation(h, "rank blocks of an unranked zset", "unranked", fmt.Sprintf("%d B keys", len(blocks)), blocks[0].raw)
		}
		return nil
	}
	if len(blocks) == 0 {
		if nz > 0 {
			c.keyViolation(h, "rank blocks", "ranked", "no B keys", nil)
		}
		return nil
	}
	if !fenced {
		return nil
	}
	for i, bl := range blocks {
		if bl.n != bl.counted {
			c.keyViolation(h, "rank block count", u64(bl.n), u64(bl.counted)+" Y keys in its fences", bl.raw)
		}
		if bl.counted == 0 || bl.counted > ZBlockMax {
			c.keyViolation(h, "rank block size", fmt.Sprintf("1..%d members", ZBlockMax), u64(bl.counted), bl.raw)
		}
		if i > 0 && blocks[i-1].counted+bl.counted <= ZBlockMerge {
			c.keyViolation(h, "rank blocks unmerged", fmt.Sprintf("neighbours above %d members together", ZBlockMerge),
				fmt.Sprintf("%d + %d", blocks[i-1].counted, bl.counted), bl.raw)
		}
	}
	return nil
}

// scan calls fn for every key of tag's region.
func (c *checker) scan(tag codec.Tag, fn func(k, val []byte) error) error {
	it, err := c.r.NewIter(&pebble.IterOptions{LowerBound: []byte{byte(tag)}, UpperBound: []byte{byte(tag) + 1}})
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		val, err := it.ValueAndErr()
		if err == nil {
			err = fn(it.Key(), val)
		}
		if err != nil {
			it.Close()
			return err
		}
	}
	return errors.Join(it.Error(), it.Close())
}

// checkTTL checks the E keys against the metadata.
func (c *checker) checkTTL() error {
	return c.scan(codec.TagTTL, func(k, val []byte) error {
		slot, deadline, db, key, err := codec.DecodeTTLKey(k)
		if err == nil && slot != codec.Slot(key) {
			err = fmt.Errorf("slot %d, the key's is %d", slot, codec.Slot(key))
		}
		if err == nil && len(val) != 0 {
			err = fmt.Errorf("value of %d bytes", len(val))
		}
		if err != nil {
			c.report(Violation{Raw: bytes.Clone(k), Check: "TTL index key", Stored: err.Error(), Counted: "-"})
			return nil
		}
		mv, closer, err := c.r.Get(codec.MetaKey(db, key))
		if errors.Is(err, pebble.ErrNotFound) {
			c.rep.StaleTTL++
			return nil
		}
		if err != nil {
			return err
		}
		if len(mv) < 10 || int64(binary.BigEndian.Uint64(mv[2:10])) != deadline {
			c.rep.StaleTTL++ // (an undecodable one was reported)
		}
		return closer.Close()
	})
}

// checkIDMPExpiry checks that the M keys decode and counts the stale ones.
func (c *checker) checkIDMPExpiry() error {
	return c.scan(codec.TagIDMPExpiry, func(k, val []byte) error {
		deadline, db, key, pid, id, err := codec.DecodeIDMPExpiryKey(k)
		if err == nil && len(val) != 0 {
			err = fmt.Errorf("value of %d bytes", len(val))
		}
		if err != nil {
			c.report(Violation{Raw: bytes.Clone(k), Check: "IDMP expiry key", Stored: err.Error(), Counted: "-"})
			return nil
		}
		ok, err := c.has(codec.IDMPByIDKey(db, key, pid, id))
		if err != nil {
			return err
		}
		if ok {
			var sv []byte
			if sv, ok, err = c.get(codec.IDMPStateKey(db, key)); err != nil {
				return err
			}
			st, derr := codec.DecodeIDMPState(sv)
			ok = ok && derr == nil && int64(min(id.Ms, math.MaxInt64/2))+int64(st.DurationS)*1000 == deadline
		}
		if !ok {
			c.rep.StaleIDMP++
		}
		return nil
	})
}

// checkCounts checks the K keys against the T keys counted.
func (c *checker) checkCounts() error {
	var seen [256]bool
	err := c.scan(codec.TagCount, func(k, val []byte) error {
		if len(k) != 2 || len(val) != 16 {
			c.report(Violation{Raw: bytes.Clone(k), Check: "key counts", Stored: fmt.Sprintf("a %d-byte value", len(val)), Counted: "a 2-byte key, a 16-byte value"})
			return nil
		}
		db := k[1]
		seen[db] = true
		keys, ttls := int64(binary.BigEndian.Uint64(val)), int64(binary.BigEndian.Uint64(val[8:]))
		switch t := c.tally[db]; {
		case keys != t[0] || ttls != t[1]:
			c.report(Violation{Raw: bytes.Clone(k), Check: fmt.Sprintf("key counts of db %d", db),
				Stored: fmt.Sprintf("%d keys, %d with a TTL", keys, ttls), Counted: fmt.Sprintf("%d keys, %d with a TTL", t[0], t[1])})
		case keys == 0 && ttls == 0:
			c.report(Violation{Raw: bytes.Clone(k), Check: fmt.Sprintf("key counts of db %d", db), Stored: "0 keys", Counted: "0 keys: the K key should be gone"})
		}
		return nil
	})
	for db, t := range c.tally {
		if !seen[db] && t[0] != 0 {
			c.report(Violation{Check: fmt.Sprintf("key counts of db %d", db), Stored: "no K key",
				Counted: fmt.Sprintf("%d keys, %d with a TTL", t[0], t[1])})
		}
	}
	return err
}

// checkDBMap checks that the D key decodes to a permutation.
func (c *checker) checkDBMap() error {
	v, ok, err := c.get(codec.DBMapKey())
	if err != nil || !ok {
		return err
	}
	if len(v) > 256 {
		c.report(Violation{Raw: codec.DBMapKey(), Check: "db map", Stored: fmt.Sprintf("%d bytes", len(v)), Counted: "at most 256"})
		return nil
	}
	if _, err := decodeDBMap(v); err != nil {
		c.report(Violation{Raw: codec.DBMapKey(), Check: "db map", Stored: fmt.Sprintf("%x", v), Counted: err.Error()})
	}
	return nil
}

// checkLegacyLog reports L keys: Open moves them to the change-log files.
func (c *checker) checkLegacyLog() error {
	var n int64
	var first []byte
	err := c.scan(codec.TagChangeLog, func(k, _ []byte) error {
		if n == 0 {
			first = bytes.Clone(k)
		}
		n++
		return nil
	})
	if n > 0 {
		c.report(Violation{Raw: first, Check: "legacy change-log keys", Stored: "none (moved to the change-log files at Open)", Counted: fmt.Sprintf("%d L keys", n)})
	}
	return err
}

// checkValueRef checks a string value kept in the change log: its R key
// names the key, and the bytes it locates are there and check.
func (c *checker) checkValueRef(h []byte, db uint8, key []byte, r codec.ValueRef) error {
	rk := codec.ValueRefKey(r.Segment, r.Offset)
	owner, ok, err := c.get(rk)
	if err != nil {
		return err
	}
	at := fmt.Sprintf("segment %d offset %d", r.Segment, r.Offset)
	if !ok || len(owner) == 0 || owner[0] != db || !bytes.Equal(owner[1:], key) {
		c.keyViolation(h, "value reference without its R key", at, fmt.Sprintf("R key %q", owner), rk)
	}
	if _, err := c.vlog.readValue(r, nil); err != nil {
		c.keyViolation(h, "value reference unreadable", at, err.Error(), nil)
	}
	return nil
}

// checkTags reports keys whose tag is none of docs/key-format.md's,
// seeking past each known tag's region.
func (c *checker) checkTags() error {
	it, err := c.r.NewIter(nil)
	if err != nil {
		return err
	}
	for ok := it.First(); ok; {
		k := it.Key()
		if len(k) > 0 && knownTags[k[0]] {
			if k[0] == 0xff {
				break
			}
			ok = it.SeekGE([]byte{k[0] + 1})
			continue
		}
		c.report(Violation{Raw: bytes.Clone(k), Check: "unknown tag", Stored: "a tag of docs/key-format.md", Counted: fmt.Sprintf("%q", k[:min(len(k), 1)])})
		ok = it.Next()
	}
	return errors.Join(it.Error(), it.Close())
}

// checkFormat checks the F key: the flags of an open store are
// codec.FormatCurrent (Open sets them).
func (c *checker) checkFormat() error {
	v, ok, err := c.get(codec.FormatKey())
	if err != nil {
		return err
	}
	want := u64(codec.FormatCurrent)
	switch {
	case !ok:
		c.report(Violation{Raw: codec.FormatKey(), Check: "format flags", Stored: "missing", Counted: want})
	case len(v) != 8:
		c.report(Violation{Raw: codec.FormatKey(), Check: "format flags", Stored: fmt.Sprintf("%d bytes", len(v)), Counted: "8 bytes"})
	case binary.BigEndian.Uint64(v) != codec.FormatCurrent:
		c.report(Violation{Raw: codec.FormatKey(), Check: "format flags", Stored: u64(binary.BigEndian.Uint64(v)), Counted: want})
	}
	return nil
}

// checkApplied checks the A key: the last record applied, between lo
// (committed before the snapshot) and hi (begun before it ended).
func (c *checker) checkApplied(lo, hi uint64) error {
	v, ok, err := c.get(codec.AppliedKey())
	if err != nil {
		return err
	}
	var a uint64
	if ok {
		if len(v) != 8 {
			c.report(Violation{Raw: codec.AppliedKey(), Check: "applied sequence", Stored: fmt.Sprintf("%d bytes", len(v)), Counted: "8 bytes"})
			return nil
		}
		a = binary.BigEndian.Uint64(v)
	}
	c.rep.Applied = a
	if a < lo || a > hi {
		c.report(Violation{Raw: codec.AppliedKey(), Check: "applied sequence", Stored: u64(a), Counted: fmt.Sprintf("the store's last commit, %d..%d", lo, hi)})
	}
	return nil
}
