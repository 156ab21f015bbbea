package materialize

import (
	"bytes"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sediment-dev/sediment/codec"
)

// View reads committed state. Inside Write it is the decide function's view
// (stable: no other write commits while it runs); from Store.View it reads
// the latest state. A View carries the time of its decision, used for lazy
// expiry. A View must not be retained after the call that produced it.
type View struct {
	r       reader     // nil in a ReadView until its first read (pinned)
	vlog    *changeLog // where values that metadata locates are (codec.ValueRef)
	pin     *readPin   // a ReadView's state (&pinned); nil in other views
	pinned_ readPin
	nowMs   int64
	// clock, when not nil, gives nowMs at its first use (NowMs): a read
	// view reads the clock only when a key with a TTL asks (a GET of a
	// key without one read it for every request: 3.5 % of pipelined GET).
	clock func() time.Time
	cache *metaCache // committed metadata cache; nil: read Pebble only
	// rfields answers read views' lookups of hash fields, set members and
	// sorted-set scores from committed groups (readfields.go); nil in the
	// writer's views, which use fcache.
	rfields *readFields
	staged  *overlay // the commit group's staged metadata; nil outside Write
	iters   *iterCounters

	counts       *[256]dbCounts // committed key counts
	stagedCounts *stagedCounts  // the group's; nil outside Write

	dbm     *dbMap      // committed db map when the view was made (dbmap.go)
	filters *keyFilters // nil: always look keys up
	// gcache answers Gets of consumer-group values (groupcache.go); set in
	// the writer's decision view only.
	gcache *groupCache
	// fcache answers lookups of hash fields, set members, sorted-set
	// scores and list elements (fieldcache.go); set in the writer's
	// decision view only.
	fcache  *fieldCache
	tailKey []byte   // streamOf's scratch
	lookups *Lookups // counts Meta and MetaWith results; nil: none
}

// Lookups counts the key lookups of reads, found or not: Redis's
// keyspace_hits and keyspace_misses (INFO stats), which count
// lookupKeyRead's results. Views count into it once CountLookups names it.
type Lookups struct {
	Hits, Misses atomic.Int64
}

// CountLookups makes Meta and MetaWith count their results into l (nil:
// stop counting).
func (v *View) CountLookups(l *Lookups) { v.lookups = l }

// counted records one read lookup's result in v.lookups.
func (v *View) counted(found bool) {
	switch {
	case v.lookups == nil:
	case found:
		v.lookups.Hits.Add(1)
	default:
		v.lookups.Misses.Add(1)
	}
}

// NowMs returns the decision time in Unix milliseconds (a read view's:
// the time of its first use of it).
func (v *View) NowMs() int64 {
	if v.clock != nil {
		v.nowMs, v.clock = v.clock().UnixMilli(), nil
	}
	return v.nowMs
}

// Get returns a copy of the value at k, and false if k is absent.
func (v *View) Get(k []byte) ([]byte, bool, error) {
	gc := v.gcache
	if gc != nil && !groupCached(k) {
		gc = nil
	}
	if gc != nil {
		if val, exists, ok := gc.get(k); ok {
			v.iters.groupHit()
			return append([]byte(nil), val...), exists, nil
		}
	}
	fc := v.fieldCache(k)
	if fc != nil {
		if val, exists, ok := fc.get(k, true); ok {
			v.iters.fieldHit()
			return append([]byte(nil), val...), exists, nil
		}
	}
	if val, exists, ok, err := v.readField(k); err != nil || ok {
		return append([]byte(nil), val...), exists, err
	}
	v.iters.get()
	val, closer, err := v.get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		if gc != nil {
			gc.fill(k, nil, false)
		}
		if fc != nil {
			fc.fill(k, nil, false, true)
		}
		v.fillReadField(k, nil, false)
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	out := append([]byte(nil), val...)
	closer.Close()
	if gc != nil {
		gc.fill(k, bytes.Clone(out), true)
	}
	if fc != nil {
		fc.fill(k, out, true, true)
	}
	v.fillReadField(k, out, true)
	return out, true, nil
}

// GetRun is Get of k, the first of the keys of [lower, upper) that the
// caller reads one at a time from k on, upwards (reverse: downwards): the
// head or tail elements of a list that LPOP or RPOP takes. In the
// writer's decision view, a lookup the field cache cannot answer reads
// ahead with one iterator, up to listRunMax keys and listRunBytes of
// values, and keeps them in the cache, so that the next reads of the run
// need no Pebble lookup. Elsewhere, and for a collection whose values are
// too large to cache, it is Get.
func (v *View) GetRun(k, lower, upper []byte, reverse bool) ([]byte, bool, error) {
	fc := v.fieldCache(k)
	if fc == nil {
		return v.Get(k)
	}
	if val, exists, ok := fc.get(k, true); ok {
		v.iters.fieldHit()
		return append([]byte(nil), val...), exists, nil
	}
	coll, _, ok := splitFieldKey(k)
	if !ok {
		return v.Get(k)
	}
	if !fc.readsAhead(coll) {
		return v.Get(k)
	}
	if reverse {
		upper = append(k[:len(k):len(k)], 0) // the smallest key above k
	} else {
		lower = k
	}
	var (
		out          []byte
		found, large bool
		n, size      int
	)
	err := v.iterate(lower, upper, reverse, true, func(key, val []byte) (bool, error) {
		if n == 0 && bytes.Equal(key, k) {
			out, found = append([]byte(nil), val...), true
		}
		if len(val) > valueMax(coll) {
			large = true
			return false, nil
		}
		c, f, _ := splitFieldKey(key)
		fc.put(c, f, val, true, true)
		n++
		size += len(val)
		return n < listRunMax && size < listRunBytes, nil
	})
	if err != nil {
		return nil, false, err
	}
	if !found {
		fc.fill(k, nil, false, true)
	}
	if large {
		fc.markNoRun(coll)
	}
	return out, found, nil
}

// fieldCache returns the field cache when it holds keys like k: in the
// writer's decision view, for H, S, Z and I keys.
func (v *View) fieldCache(k []byte) *fieldCache {
	if v.fcache == nil || !fieldCached(k) {
		return nil
	}
	return v.fcache
}

// NoElements tells the writer's field cache that key has no elements of
// the collection type tag (codec.TagHash, codec.TagSet or
// codec.TagZMember): a decision found the key's metadata absent, not
// merely expired (an expired key's elements stay in Pebble until its
// deletion is staged). From then on the cache answers the lookup of an
// element it does not hold as absent, without reading Pebble, while it
// holds the collection whole (docs/perf.md, "New fields and members
// without lookups"). It does nothing in a read view.
func (v *View) NoElements(tag codec.Tag, db uint8, key []byte) {
	if v.fcache == nil || (tag != codec.TagHash && tag != codec.TagSet && tag != codec.TagZMember) {
		return // (a list is never held whole: GetRun reads positions ahead)
	}
	v.fcache.empty(codec.KeyPrefix(tag, db, key))
}

// cachedHas answers an existence check of k from the field cache; ok is
// false when it must read Pebble.
func (v *View) cachedHas(fc *fieldCache, k []byte) (exists, ok bool) {
	if fc == nil {
		_, exists, ok, _ = v.readField(k)
		return exists, ok
	}
	if _, exists, ok = fc.get(k, false); ok {
		v.iters.fieldHit()
	}
	return exists, ok
}

// fillReadField records in the committed elements what a read view read
// from Pebble at k: its value (when exists) or its absence, as of the
// view's pinned state.
func (v *View) fillReadField(k, val []byte, exists bool) {
	if v.rfields == nil || v.pin == nil || !readFieldCached(k) {
		return
	}
	if seq, useCache := v.cacheSeq(); useCache {
		v.rfields.fill(k, val, exists, seq)
	}
}

// readField answers a read view's lookup of the element key k from the
// committed elements (readfields.go): ok is false when the view must read
// Pebble. val is shared: the caller copies it.
func (v *View) readField(k []byte) (val []byte, exists, ok bool, err error) {
	if v.rfields == nil || !readFieldCached(k) {
		return nil, false, false, nil
	}
	if err := v.softPinned(); err != nil {
		return nil, false, false, err
	}
	seq, useCache := v.cacheSeq()
	if !useCache {
		return nil, false, false, nil
	}
	if val, exists, ok = v.rfields.get(k, seq); ok {
		v.iters.readFieldHit()
	}
	return val, exists, ok, nil
}

// filledHas records an existence check's answer in the writer's field
// cache, or a read view's committed elements: a set member's value is
// always empty, other values stay unknown.
func (v *View) filledHas(fc *fieldCache, k []byte, exists bool) {
	known := !exists || codec.Tag(k[0]) == codec.TagSet
	if fc != nil {
		fc.fill(k, nil, exists, known)
	} else if known {
		v.fillReadField(k, nil, exists)
	}
}

// Has reports whether k exists.
func (v *View) Has(k []byte) (bool, error) {
	fc := v.fieldCache(k)
	if exists, ok := v.cachedHas(fc, k); ok {
		return exists, nil
	}
	v.iters.get()
	val, closer, err := v.get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		v.filledHas(fc, k, false)
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if fc == nil {
		v.fillReadField(k, val, true) // copies val
	} else {
		v.filledHas(fc, k, true)
	}
	closer.Close()
	return true, nil
}

// HasKey reports whether k exists without reading its value. Has is a
// Pebble Get, which reads the value; a value of 4 KiB or more lives in a
// blob file, so Has reads and checksums its blob block (a block the cache
// rarely holds when the value is being overwritten). HasKey seeks an
// iterator to k by prefix, so the sstables' Bloom filters answer for the
// files without k as they do for a Get (a bounded First consults none;
// each level's file is still opened), and leaves the value unread. Use it
// where the value is likely large (docs/perf.md, "Field existence by
// prefix seek").
func (v *View) HasKey(k []byte) (bool, error) {
	fc := v.fieldCache(k)
	if exists, ok := v.cachedHas(fc, k); ok {
		return exists, nil
	}
	v.iters.get()
	if err := v.pinned(); err != nil {
		return false, err
	}
	it, err := v.newIter(nil, k)
	if err != nil {
		return false, err
	}
	ok := it.SeekPrefixGE(k) && bytes.Equal(it.Key(), k)
	if err := it.Error(); err != nil {
		it.Close()
		return false, err
	}
	if err := it.Close(); err != nil {
		return false, err
	}
	v.filledHas(fc, k, ok)
	return ok, nil
}

// rawMeta returns the stored metadata of key, expired or not.
func (v *View) rawMeta(db uint8, key []byte) (codec.Meta, bool, error) {
	return v.rawMetaOpt(db, key, true)
}

// rawMetaOpt is rawMeta; without needValue, a large string's metadata may
// come with a nil Value (from the cache), which spares reading the value.
func (v *View) rawMetaOpt(db uint8, key []byte, needValue bool) (codec.Meta, bool, error) {
	m, ok, _, err := v.rawMetaPartial(db, key, needValue, false)
	return m, ok, err
}

// rawMetaPartial is rawMetaOpt, reporting partial when the metadata came
// from a cache entry without its value (needValue false only). With
// lend, a reader's lookup that would go to Pebble is left to the caller,
// who can read the value without copying it: it reports partial with
// exists false and no metadata.
func (v *View) rawMetaPartial(db uint8, key []byte, needValue, lend bool) (codec.Meta, bool, bool, error) {
	if err := v.softPinned(); err != nil {
		return codec.Meta{}, false, false, err
	}
	seq, useCache := v.cacheSeq()
	if v.staged != nil {
		if e, ok := v.staged.get(db, key); ok {
			v.iters.metaHit()
			return e.meta, e.exists, false, nil
		}
		useCache = useCache && !v.staged.flushed
	}
	if useCache {
		if e, ok := v.cache.get(db, key); ok && (!e.noValue || !needValue) && e.seq <= seq {
			v.iters.metaHit()
			if v.staged != nil {
				v.staged.noteLooked(db, key, e.exists, e.meta.ExpireAtMs)
			}
			return e.meta, e.exists, e.noValue, nil
		}
	}
	if v.filters != nil && v.filters.absent(db, key, seq) {
		v.iters.metaAbsentHit()
		if v.staged != nil {
			v.staged.noteLooked(db, key, false, 0)
		}
		return codec.Meta{}, false, false, nil // not cached: the filter answers again
	}
	v.iters.metaLookup()
	if lend && v.staged == nil {
		return codec.Meta{}, false, true, nil
	}
	var m codec.Meta
	var ok, partial bool
	var err error
	for retried := false; ; retried = true {
		var b []byte
		if b, ok, err = v.Get(codec.MetaKey(db, key)); err != nil {
			return codec.Meta{}, false, false, err
		}
		if !ok {
			break
		}
		if m, err = codec.DecodeMeta(b); err != nil {
			return codec.Meta{}, false, false, err
		}
		if m.Ref.IsZero() {
			break
		}
		if !needValue {
			partial = true
			break
		}
		err = v.loadValue(&m)
		if err == nil {
			break
		}
		if retried || !errors.Is(err, errValueGone) || !v.readsLatest() {
			return codec.Meta{}, false, false, err
		}
		// Retention moved the value into the store since the lookup.
	}
	if useCache && v.staged != nil {
		// Only the writer fills the cache: no commit can race with its read.
		v.cache.put(db, key, &m, ok, v.staged.base)
	}
	if v.staged != nil {
		v.staged.noteLooked(db, key, ok, m.ExpireAtMs)
	}
	return m, ok, partial, nil
}

// existedForCount returns whether (db, key) exists before the event being
// staged, and its deadline (Unix ms, 0: none), expired keys included: the
// group's staged metadata, else what a decision of the group looked up a
// moment before (overlay.lookedUp), else a lookup.
func (v *View) existedForCount(db uint8, key []byte) (bool, int64, error) {
	if v.staged != nil {
		if e, ok := v.staged.get(db, key); ok {
			return e.exists, e.meta.ExpireAtMs, nil
		}
		if exists, expireAtMs, ok := v.staged.lookedUp(db, key); ok {
			return exists, expireAtMs, nil
		}
	}
	m, ok, err := v.rawMetaOpt(db, key, false) // the deadline only
	return ok, m.ExpireAtMs, err
}

// LoadValue returns m, metadata decoded from the store
// (codec.DecodeMeta), with the value its Ref locates in the change log
// read into Value (a buffer of its own) and Ref cleared; other metadata as
// it is. Errors: codec.ErrCorrupt for a value whose CRC-32C does not
// check.
func (v *View) LoadValue(m codec.Meta) (codec.Meta, error) {
	if m.Ref.IsZero() {
		return m, nil
	}
	err := v.loadValue(&m)
	return m, err
}

// loadValue reads the value that m.Ref locates in the change log into
// m.Value (a buffer of its own) and clears m.Ref.
func (v *View) loadValue(m *codec.Meta) error {
	val, err := v.vlog.readValue(m.Ref, nil)
	if err != nil {
		return v.valueErr(err)
	}
	m.Value, m.Ref = val, codec.ValueRef{}
	return nil
}

// valueErr is the error of a value read: a soft read view that met a
// reference whose segment retention removed since its lookup must run
// again pinned (readPin), which finds the value in the store.
func (v *View) valueErr(err error) error {
	if errors.Is(err, errValueGone) && v.pin != nil && v.pin.state == soft {
		return ErrStateMoved
	}
	return err
}

// readsLatest reports whether each read of v reads the latest state
// (Store.View): a lookup made again may find what retention changed.
func (v *View) readsLatest() bool {
	_, db := v.r.(*pebble.DB)
	return db && v.pin == nil && v.staged == nil
}

// MetaWith is Meta for a read that uses the metadata only while fn runs: a
// string's value the cache does not hold (one over metaCacheMaxCopied, one
// dropped past the cache's budget, or any when the key is not cached at
// all, as after a restart) is not copied out of the store. An inline one
// aliases Pebble's buffer until fn returns; for one kept in the change
// log, m.Ref stays set (m.Value nil) and fn reads it with ReadValue into
// a buffer of its choosing (GET: its reply buffer). It reports whether the
// key exists; fn is not called otherwise. GET of a 10 KB value spent a
// tenth of its CPU on that copy; GET of 100 KB values after a restart, a
// third (docs/perf.md, "GET of large values after a restart"). shared
// tells fn that m.Value never changes and may be kept after fn returns:
// the committed cache's value or a copy made for this lookup, in a view
// other than the writer's; not a buffer lent for the call. When fn's
// ReadValue finds the value's segment removed by retention since the
// lookup, fn's error says so; in a view that reads the latest state the
// lookup then runs once more and finds the value in the store (a soft
// pinned view's ReadValue returns ErrStateMoved instead: its command
// runs again pinned).
func (v *View) MetaWith(db uint8, key []byte, fn func(m codec.Meta, shared bool) error) (bool, error) {
	return v.metaWith(db, key, fn, false)
}

// metaWith is MetaWith; retried: the lookup is a second one, made after
// retention moved the value it first found into the store.
func (v *View) metaWith(db uint8, key []byte, fn func(m codec.Meta, shared bool) error, retried bool) (bool, error) {
	m, ok, partial, err := v.rawMetaPartial(db, key, false, true)
	if err != nil {
		return false, err
	}
	if partial {
		// ok: a cache entry without its value, so the key must be stored.
		if ok {
			v.iters.get()
		}
		raw, closer, err := v.get(codec.MetaKey(db, key))
		switch {
		case errors.Is(err, pebble.ErrNotFound) && ok:
			return false, fmt.Errorf("materialize: metadata of %q gone within one view: %w", key, codec.ErrCorrupt)
		case errors.Is(err, pebble.ErrNotFound):
		case err != nil:
			return false, err
		default:
			defer closer.Close()
			if m, err = codec.DecodeMeta(raw); err != nil {
				return false, err
			}
			ok = true
		}
	}
	if !ok || v.expired(m) {
		v.counted(false)
		return false, nil
	}
	// The writer's staged values may be a request's value, valid until its
	// group commits: not shared.
	err = fn(m, !partial && v.staged == nil)
	if errors.Is(err, errValueGone) && v.readsLatest() && !retried {
		// Retention moved the value into the store since the lookup: read
		// it there (and count the key's hit or miss there).
		return v.metaWith(db, key, fn, true)
	}
	v.counted(true)
	return true, err
}

// ReadValue reads the string value that r (a Meta.Ref that MetaWith
// handed over) locates in the change log into dst, which holds exactly
// r.Len bytes, and checks its CRC-32C. Errors: codec.ErrCorrupt when the
// value does not check; one for MetaWith to act on when retention removed
// its segment since the lookup (ErrStateMoved for a soft read view).
func (v *View) ReadValue(r codec.ValueRef, dst []byte) error {
	if len(dst) != int(r.Len) {
		return fmt.Errorf("materialize: a value of %d bytes read into %d", r.Len, len(dst))
	}
	if _, err := v.vlog.readValue(r, dst); err != nil {
		return v.valueErr(err)
	}
	return nil
}

// Expired reports whether m's TTL has passed at the decision time: as in
// Redis, a key expires once the time is past its deadline, not at it.
func (v *View) Expired(m codec.Meta) bool { return v.expired(m) }

func (v *View) expired(m codec.Meta) bool { return m.ExpireAtMs != 0 && m.ExpireAtMs < v.NowMs() }

// Meta returns key's metadata, and false if the key does not exist or its
// TTL has passed (lazy expiry: an expired key reads as absent).
func (v *View) Meta(db uint8, key []byte) (codec.Meta, bool, error) {
	m, ok, err := v.rawMeta(db, key)
	if err != nil {
		return m, false, err
	}
	if !ok || v.expired(m) {
		v.counted(false)
		return codec.Meta{}, false, nil
	}
	v.counted(true)
	return m, true, nil
}

// MetaForWrite is Meta for a write's decision. When the stored key has
// expired it also returns the OpDelKey event that removes it, which the
// write must emit before its own events.
func (v *View) MetaForWrite(db uint8, key []byte) (codec.Meta, bool, []codec.Event, error) {
	return v.metaForWrite(db, key, true)
}

// MetaHeaderForWrite is MetaForWrite for a decision that does not read a
// string's value (SET without GET, the type and TTL checks): for a string
// larger than the metadata cache holds, Value may be nil, which spares
// reading the value from Pebble.
func (v *View) MetaHeaderForWrite(db uint8, key []byte) (codec.Meta, bool, []codec.Event, error) {
	return v.metaForWrite(db, key, false)
}

func (v *View) metaForWrite(db uint8, key []byte, needValue bool) (codec.Meta, bool, []codec.Event, error) {
	m, ok, err := v.rawMetaOpt(db, key, needValue)
	if !ok || err != nil {
		return m, false, nil, err
	}
	if v.expired(m) {
		return codec.Meta{}, false, []codec.Event{codec.ExpiredKeyEvent(db, key, m.Type, m.ExpireAtMs)}, nil
	}
	return m, true, nil, nil
}

// StreamTail calls fn for the entries of stream (db, key) with IDs at or
// above start, in ID order, from the writer's cache of each stream's
// newest entries (groupcache.go, streamTail), until fn returns false or an
// error. ok is false, and fn is not called, when the cache cannot answer:
// a view other than the writer's, a stream not cached, or entries older
// than the cache's (and on a nil View). The entries' fields are shared:
// never modify them. The caller has checked that the stream exists
// (expired keys included).
func (v *View) StreamTail(db uint8, key []byte, start codec.ID, fn func(TailEntry) (bool, error)) (ok bool, err error) {
	if v == nil || v.gcache == nil {
		return false, nil
	}
	ok, err = v.gcache.eachTail(v.streamOf(db, key), start, fn)
	if ok {
		v.iters.tailHit()
	}
	return ok, err
}

// streamOf returns the group cache's key of stream (db, key) (its
// streamOf), built in the view's scratch buffer: valid until the next call.
func (v *View) streamOf(db uint8, key []byte) []byte {
	v.tailKey = codec.AppendKeyPrefix(v.tailKey[:0], codec.TagGroup, db, key)
	return v.tailKey[3:]
}

// StreamHeadHint returns the first ID last noted (NoteStreamHead) for the
// head node key of stream (db, key): a hint, which the caller checks
// against the node key it names (that it exists and ends at the stream's
// HeadLast) before using it. ok is false without one, and in views other
// than the writer's (or a nil View).
func (v *View) StreamHeadHint(db uint8, key []byte) (first codec.ID, ok bool) {
	if v == nil || v.gcache == nil {
		return codec.ID{}, false
	}
	first, ok = v.gcache.heads[string(v.streamOf(db, key))]
	return first, ok
}

// NoteStreamHead records first as the hint of stream (db, key)'s head
// node key (StreamHeadHint). A no-op in views other than the writer's
// (and on a nil View).
func (v *View) NoteStreamHead(db uint8, key []byte, first codec.ID) {
	if v == nil || v.gcache == nil {
		return
	}
	v.gcache.noteHead(v.streamOf(db, key), first)
}

// KeepValue tells the writer that b, an argument of the request being
// decided, never changes and may be kept as it is: when b becomes a
// string's value (the same first byte and length), the metadata cache
// holds b itself rather than a copy, which for a 100 KB SET was 12 % of
// its CPU (docs/perf.md, "Large values kept without a copy"). Whatever
// else shares b's backing array stays in memory with it, uncounted, so the
// caller passes only an argument that is nearly all of it. A no-op outside
// the writer's views.
func (v *View) KeepValue(b []byte) {
	if v != nil && v.staged != nil {
		v.staged.keepValue(b)
	}
}

// Iterate calls fn for every key in [lower, upper) in ascending order, or
// descending when reverse is set, until fn returns false or an error. k and
// val are valid only during the call. A nil upper means no upper bound.
func (v *View) Iterate(lower, upper []byte, reverse bool, fn func(k, val []byte) (bool, error)) error {
	return v.iterate(lower, upper, reverse, true, fn)
}

// IterateNoValues is Iterate for a walk that needs the keys only: it never
// reads a value. A value of 4 KiB or more lives in a blob file, so reading
// it (as Iterate does for every key) reads, checks and decompresses its
// blob block; a capped XADD of 10 KB entries spent a sixth of its CPU
// reading the values of the entries its trim walked (docs/perf.md,
// "Trim walks without values").
func (v *View) IterateNoValues(lower, upper []byte, reverse bool, fn func(k []byte) (bool, error)) error {
	return v.iterate(lower, upper, reverse, false, func(k, _ []byte) (bool, error) { return fn(k) })
}

func (v *View) iterate(lower, upper []byte, reverse, values bool, fn func(k, val []byte) (bool, error)) error {
	if err := v.pinned(); err != nil {
		return err
	}
	if it := v.borrowRoot(lower, upper); it != nil {
		defer v.returnRoot()
		return walk(it, reverse, values, fn)
	}
	it, err := v.newIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper}, nil)
	if err != nil {
		return err
	}
	err = walk(it, reverse, values, fn)
	v.iters.record(it)
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	return err
}

// borrowRoot lends a pinned read view's root iterator to one iteration,
// bounded by lower and upper, when no other holds it: a clone of the root
// and its closing were a fifth of an XRANGE's CPU (docs/perf.md, "One
// iterator per read"). It returns nil when the view has no root to lend
// (the caller clones one). Point lookups made while it is lent read
// through a clone (pinnedReader). returnRoot ends the loan.
func (v *View) borrowRoot(lower, upper []byte) *pebble.Iterator {
	p := v.pin
	if p == nil || p.state != hard || p.lent {
		return nil
	}
	p.lent = true
	p.root.SetBounds(lower, upper)
	p.root.ResetStats()
	return p.root
}

// returnRoot ends borrowRoot's loan: the root is unbounded again.
func (v *View) returnRoot() {
	p := v.pin
	v.iters.record(p.root)
	p.root.SetBounds(nil, nil)
	p.lent = false
}

// walk runs an iteration over it (see iterate) without closing it.
func walk(it *pebble.Iterator, reverse, values bool, fn func(k, val []byte) (bool, error)) error {
	var valid bool
	if reverse {
		valid = it.Last()
	} else {
		valid = it.First()
	}
	for ; valid; valid = step(it, reverse) {
		var val []byte
		if values {
			val = it.Value()
		}
		more, err := fn(it.Key(), val)
		if err != nil {
			return err
		}
		if !more {
			break
		}
	}
	return it.Error()
}

// IterateKeys is Iterate in ascending order for ranges of few keys that are
// rewritten often (metadata, groups, consumers): it moves from one key to
// the next with a seek past the current key rather than a step, so it never
// walks the current key's older versions still in the memtable. A step
// would cost one internal step per rewrite since the last flush; a seek
// costs the same however often the key was rewritten.
func (v *View) IterateKeys(lower, upper []byte, fn func(k, val []byte) (bool, error)) error {
	if err := v.pinned(); err != nil {
		return err
	}
	it, err := v.newIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper}, nil)
	if err != nil {
		return err
	}
	var next []byte
	for valid := it.First(); valid; valid = it.SeekGE(next) {
		more, err := fn(it.Key(), it.Value())
		if err != nil || !more {
			v.iters.record(it)
			it.Close()
			return err
		}
		next = append(append(next[:0], it.Key()...), 0) // the smallest key after it
	}
	v.iters.record(it)
	if err := it.Error(); err != nil {
		it.Close()
		return err
	}
	return it.Close()
}

// versionStepMax is how many internal steps one step of
// IterateCheapSteps may cost before it seeks instead.
const versionStepMax = 8

// IterateCheapSteps is IterateKeys for a range of many keys of which only
// some are rewritten often (a large sorted set's rank blocks): it steps
// from key to key, which costs a fraction of a seek, until one step costs
// more than versionStepMax internal steps (a key with many versions in the
// memtable), and from then on seeks past each key as IterateKeys does. A
// walk over k keys costs at most k steps plus versionStepMax internal
// steps before it turns to seeks.
func (v *View) IterateCheapSteps(lower, upper []byte, fn func(k, val []byte) (bool, error)) error {
	if err := v.pinned(); err != nil {
		return err
	}
	it, err := v.newIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper}, nil)
	if err != nil {
		return err
	}
	seek := false
	var next []byte
	for valid := it.First(); valid; {
		more, err := fn(it.Key(), it.Value())
		if err != nil || !more {
			v.iters.record(it)
			it.Close()
			return err
		}
		if seek {
			next = append(append(next[:0], it.Key()...), 0)
			valid = it.SeekGE(next)
			continue
		}
		before := it.Stats().ForwardStepCount[pebble.InternalIterCall]
		valid = it.Next()
		seek = it.Stats().ForwardStepCount[pebble.InternalIterCall]-before > versionStepMax
	}
	v.iters.record(it)
	if err := it.Error(); err != nil {
		it.Close()
		return err
	}
	return it.Close()
}

func step(it *pebble.Iterator, reverse bool) bool {
	if reverse {
		return it.Prev()
	}
	return it.Next()
}

// SeekSlots calls fn with each slot that holds at least one key with the
// given tag in db, in slot order, visiting only populated slots, starting at
// slot from. fn returns false to stop.
func (v *View) SeekSlots(tag codec.Tag, db uint8, from uint16, fn func(slot uint16) (bool, error)) error {
	if err := v.pinned(); err != nil {
		return err
	}
	it, err := v.newIter(&pebble.IterOptions{
		LowerBound: codec.SlotPrefix(tag, from),
		UpperBound: []byte{byte(tag) + 1},
	}, nil)
	if err != nil {
		return err
	}
	defer it.Close()
	defer v.iters.record(it)
	for slot := uint32(from); slot < codec.NumSlots; {
		if !it.SeekGE(codec.SlotDBPrefix(tag, uint16(slot), db)) {
			break
		}
		k := it.Key()
		if len(k) < 4 {
			return codec.ErrCorrupt
		}
		s := uint32(k[1])<<8 | uint32(k[2])
		switch {
		case s > slot:
			slot = s // next populated slot: seek to our db within it
		case k[3] == db:
			more, err := fn(uint16(s))
			if err != nil || !more {
				return err
			}
			slot++
		default:
			slot++
		}
	}
	return it.Error()
}

// ErrWrongType is returned when a command meets a key of another data type
// (Redis's WRONGTYPE).
var ErrWrongType = errors.New("materialize: wrong type")

// newIter opens an iterator on the view's reader. In the writer's view it
// first writes the group's deferred M keys (overlay.deferMeta) into the
// batch when the iterator could see one: its bounds o reach the M keys,
// or, with no bounds, point (the key a prefix seek will look for; nil:
// any) is one.
func (v *View) newIter(o *pebble.IterOptions, point []byte) (*pebble.Iterator, error) {
	if v.staged != nil && len(v.staged.pend) > 0 && mayReadMeta(o, point) {
		if err := v.staged.flushMeta(nil); err != nil {
			return nil, err
		}
	}
	return v.r.NewIter(o)
}

// mayReadMeta reports whether an iterator with bounds o (nil: none) can
// meet an M key; point is as for newIter.
func mayReadMeta(o *pebble.IterOptions, point []byte) bool {
	lo, hi := []byte{byte(codec.TagMeta)}, []byte{byte(codec.TagMeta) + 1}
	if o == nil {
		return point == nil || bytes.HasPrefix(point, lo)
	}
	return (o.UpperBound == nil || bytes.Compare(o.UpperBound, lo) > 0) &&
		(o.LowerBound == nil || bytes.Compare(o.LowerBound, hi) < 0)
}
