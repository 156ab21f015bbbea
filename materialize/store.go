package materialize

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/oklog/ulid/v2"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/internal/ratelog"
)

// logEvery is the least interval between two log lines of one repeating
// error.
const logEvery = 10 * time.Second

// SyncPolicy is Redis's appendfsync setting applied to the change log (the
// store's write-ahead log).
type SyncPolicy int

const (
	// SyncEverySec fsyncs the change log once a second in the background (the default).
	SyncEverySec SyncPolicy = iota
	// SyncAlways makes WaitDurable fsync before a write is acknowledged.
	SyncAlways
	// SyncNo never fsyncs explicitly.
	SyncNo
)

// ParseSyncPolicy parses "always", "everysec" or "no".
func ParseSyncPolicy(s string) (SyncPolicy, error) {
	switch s {
	case "always":
		return SyncAlways, nil
	case "everysec", "":
		return SyncEverySec, nil
	case "no":
		return SyncNo, nil
	}
	return 0, fmt.Errorf("materialize: unknown appendfsync %q (want always, everysec or no)", s)
}

func (p SyncPolicy) String() string {
	switch p {
	case SyncAlways:
		return "always"
	case SyncNo:
		return "no"
	}
	return "everysec"
}

// Options configures a Store. The zero value (plus Dir or InMemory) is valid.
type Options struct {
	// Dir is the data directory. Ignored when InMemory is set.
	Dir string
	// InMemory keeps everything in memory (tests).
	InMemory bool
	// FS, when set, is the file system Dir is on (tests: a crashable
	// in-memory one). The default is the operating system's.
	FS vfs.FS
	// Sync is the fsync policy. The default is SyncEverySec.
	Sync SyncPolicy
	// Logger receives Pebble's log lines. The default discards them.
	Logger *slog.Logger
	// CacheSize is Pebble's block cache in bytes. The default is 64 MiB.
	CacheSize int64
	// MemTableSize is Pebble's memtable size in bytes. The default is 16 MiB:
	// smaller memtables make point lookups of absent keys (every new key)
	// cheaper; in make bench, SET went from 0.38 (32 MiB) to 0.48 (16 MiB)
	// of redis-server's rate, XADD stayed the same.
	MemTableSize uint64
	// ChangeLogRetention is how many change-log records are kept: older
	// ones are dropped a whole segment file at a time (so somewhat more
	// are kept), once Pebble holds their effects durably. The default is
	// 1<<20; math.MaxUint64 keeps every record (then only
	// ChangeLogRetentionAge drops any).
	ChangeLogRetention uint64
	// ChangeLogRetentionAge, when above 0, also drops the records older
	// than this (by their decision time), a segment at a time, checked
	// after commits (at most once a second) and every minute: a record
	// goes once either limit says so.
	ChangeLogRetentionAge time.Duration
	// ChangeLogSegmentSize is the size in bytes past which a change-log
	// segment file is closed and a new one started. The default is 64 MiB.
	ChangeLogSegmentSize int64
	// Now is the clock. The default is time.Now.
	Now func() time.Time
	// Observer, when set, is told of every commit group and change-log
	// sync (telemetry); nil costs nothing.
	Observer Observer
	// Fatal, when set, is called with Pebble's message when Pebble cannot
	// go on (its Logger.Fatalf: a MANIFEST write that failed on a full
	// disk, a broken invariant) and must not return: a server logs it and
	// exits. Every acknowledged write is in the change log, replayed at
	// the next Open. The default panics.
	Fatal func(msg string)
	// MinFreeDisk is the reserve in bytes: while the data directory's
	// filesystem has less free space, writes are refused (a StorageFault),
	// so that Pebble's flushes and MANIFEST edits never meet a full disk.
	// The default is 64 MiB; negative turns the check off.
	MinFreeDisk int64
	// SnapshotEvery, when above 0, writes a periodic snapshot of a store
	// on disk this often (TakeSnapshot, when records were committed since
	// the last); SnapshotKeep is how many are kept (at least 1, the
	// default). The change log keeps every record after the newest
	// snapshot, whatever ChangeLogRetention says: Rebuild needs them.
	SnapshotEvery time.Duration
	SnapshotKeep  int
	// ValueLogMin is the shortest string value kept only in the change
	// log, its metadata locating it there (codec.ValueRef), instead of
	// also in Pebble. The default is 4 KiB; negative keeps every value in
	// Pebble.
	ValueLogMin int

	// pebbleOptions, set by tests, changes Pebble's options last.
	pebbleOptions func(*pebble.Options)
}

// Observer sees the write path's commit groups and change-log syncs. Commit
// runs on the writer goroutine and Sync on the syncing goroutine: both must
// return quickly and must not call the Store.
type Observer interface {
	// Commit is told of one commit group, committed or failed.
	Commit(g GroupInfo)
	// Sync is told of one fsync of the change log: how long it took, and
	// its error.
	Sync(d time.Duration, err error)
}

// GroupInfo describes one commit group for an Observer. Its Tags slice is
// reused by the next group: an Observer must not keep it.
type GroupInfo struct {
	Start, End time.Time // when the writer began deciding the group, and when its commit ended
	Writes     int       // requests in the group (decided, whether or not they wrote)
	Records    int       // change-log records committed (0 when no request wrote)
	LogBytes   int       // bytes written to the change log
	Sync       bool      // the policy is SyncAlways: the writes' replies wait for an fsync after the commit (WaitDurable)
	Tags       []any     // the non-nil tags of the group's requests (SubmitTagged), in order
	Err        error     // why the group failed; nil when it committed
}

func (o *Options) withDefaults() Options {
	c := *o
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.CacheSize == 0 {
		c.CacheSize = 64 << 20
	}
	if c.MemTableSize == 0 {
		c.MemTableSize = 16 << 20
	}
	if c.ChangeLogRetention == 0 {
		c.ChangeLogRetention = 1 << 20
	}
	if c.ChangeLogSegmentSize == 0 {
		c.ChangeLogSegmentSize = 64 << 20
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.MinFreeDisk == 0 {
		c.MinFreeDisk = 64 << 20
	}
	if c.ValueLogMin == 0 {
		c.ValueLogMin = 4 << 10
	}
	return c
}

// ErrClosed is returned by operations on a closed Store.
var ErrClosed = errors.New("materialize: store closed")

// Store is Sediment's Pebble database. It is safe for concurrent use.
type Store struct {
	db   *pebble.DB
	log  *changeLog // the write-ahead change log (changelog.go)
	opts Options
	// policy is the fsync policy (a SyncPolicy): Options.Sync until
	// SetPolicy.
	policy atomic.Int32
	// logBytes counts the change-log bytes written since Open (the
	// denominator of StorageStats.WriteAmp).
	logBytes atomic.Int64
	fs       vfs.FS // the data directory's filesystem
	dir      string // the data directory on fs ("" in memory)

	faults faults // storage faults: writes refused (fault.go)
	// Errors that repeat while a fault lasts are logged at a bounded rate.
	logGroup, logSync, logProbe, logPebble *ratelog.Limited

	reqs         chan *writeReq // to the writer goroutine
	cache        *metaCache     // committed metadata; filled by the writer goroutine only
	rfields      *readFields    // committed elements for read views: filled by their reads, kept current by the writer
	gcache       *groupCache    // consumer-group values; the writer goroutine's only
	zblocks      *zBlockCache   // rank blocks of ranked sorted sets; the writer goroutine's only
	fields       *fieldCache    // hash fields, set members, sorted-set scores; the writer goroutine's only
	staged       overlay        // the current group's metadata; writer goroutine only
	counts       [256]dbCounts  // committed key counts (counts.go)
	stagedCounts stagedCounts   // the current group's; writer goroutine only
	run          groupRun       // the group being decided; writer goroutine only
	writerDone   chan struct{}  // closed when the writer goroutine exits
	iters        iterCounters   // storage work of every view's iterators
	ttl          ttlSlots       // which slots active expiry visits, and from where
	ready        atomic.Pointer[ReadyFunc]
	dbm          atomic.Pointer[dbMap] // committed db map (dbmap.go)
	filters      keyFilters            // absent keys without a lookup (keyfilter.go)

	// mu guards seq and entropy (held by the writer goroutine while it
	// commits a group) and closed.
	mu      sync.Mutex
	seq     uint64 // last committed change-log sequence
	entropy *ulid.MonotonicEntropy
	ulidBuf ulid.ULID // scratch: a ULID read in place (ulid.New's escapes to the heap)
	// vrefs locates in the change log the large values of the records
	// staged in the current group or replay batch (noteValueRefs), by the
	// value's first byte; seal writes their metadata as references.
	// Writer goroutine only.
	vrefs   map[valueAt]codec.ValueRef
	ulidMs  uint64      // timestamp of the last ULID
	pruning atomic.Bool // a change-log pruning runs (pruneLog)
	// pins counts the pinned views, for pruneLog (valuelog.go).
	pins pinEpochs
	// valuesInlined counts the values retention moved from the change
	// log into the store (StorageStats.ValuesInlined).
	valuesInlined atomic.Int64
	// groups and groupRecords count the commit groups committed and the
	// change-log records they held (GroupStats).
	groups, groupRecords atomic.Uint64
	// expiredKeys counts the keys deleted because their TTL passed, by
	// active expiry or by a write that found them expired (ExpiredKeys).
	expiredKeys atomic.Int64
	swaps       swapIndex  // the records holding a SWAPDB (SwapRecords)
	holds       logHolds   // records kept whatever the retention (HoldLog)
	snapMu      sync.Mutex // one TakeSnapshot at a time
	snapHold    *LogHold   // the records after the newest snapshot (rebuild.go); under snapMu, or in Open
	ageChecked  time.Time  // when a commit last checked the retention's age limit (writer goroutine)
	broken      error      // set when a Pebble apply failed after its log write: every later write fails
	closed      bool

	committed atomic.Uint64 // == seq, readable without mu; stored once a group is applied and published
	applying  atomic.Uint64 // the last group's seq, stored before its Pebble commit (readPin)
	commitCh  chan struct{} // CommitNotify
	// committedDBs is the last committed sequence with the db map as of
	// it, stored together (CommittedDBMap).
	committedDBs atomic.Pointer[committedDBs]
	synced       atomic.Uint64 // every seq <= synced is on stable storage
	syncMu       sync.Mutex    // one change-log fsync at a time; waiters coalesce behind it

	stop chan struct{}
	wg   sync.WaitGroup
}

// Open opens (creating if needed) the store described by opts.
func Open(opts Options) (*Store, error) {
	o := opts.withDefaults()
	cache := pebble.NewCache(o.CacheSize)
	defer cache.Unref()
	po := &pebble.Options{
		FormatMajorVersion: pebble.FormatNewest,
		Cache:              cache,
		MemTableSize:       o.MemTableSize,
		Logger:             pebbleLogger{o.Logger, o.Fatal},
	}
	// Bloom filters spare point lookups of absent keys (a new key's
	// metadata, an entry not in the PEL) a read of every level.
	for i := range po.Levels {
		po.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	// MinLZ at its fastest level on every level, where Pebble's default is
	// Snappy: on a 32 KiB block of values that do not compress (random
	// bytes, redis-benchmark's -d values) it gives up in 3.7 µs where
	// Snappy takes 4.9-5.3 (a copy alone: 1.0), and it compresses JSON
	// (0.114 of its size against 0.129) and runs of one byte better at
	// Snappy's speed (docs/perf.md, "Compression").
	po.ApplyCompressionSettings(func() pebble.DBCompressionSettings { return pebble.DBCompressionFastest })
	// Churn (capped streams, acknowledged PELs) leaves point tombstones
	// below each live range. Reads never visit them (they seek from the
	// metadata), so they cost only disk space until compaction drops them:
	// tombstone-dense compactions (an sstable with >= 10% of its blocks
	// holding >= 100 tombstones, or tombstones >= half a block's bytes) are
	// what reclaims it soonest. These are Pebble's defaults, set here so a
	// change of default does not pass unnoticed; docs/perf.md has the
	// measurements (no effect on operation cost at 1M capped XADDs).
	po.Experimental.TombstoneDenseCompactionThreshold = 0.10
	po.Experimental.NumDeletionsThreshold = 100
	po.Experimental.DeletionSizeRatioThreshold = 0.5
	// Values of 4 KiB or more (large strings, which live in their T key,
	// large hash fields, entries) go to blob files, so that compactions move
	// a reference instead of rewriting them. Measured with 10 KB and 100 KB
	// SETs over 1,000 keys (docs/perf.md): less CPU, fewer disk bytes per
	// value byte, faster GETs. Every flush writes a blob file that spans
	// the keyspace, so a compaction's output references one per flush it
	// merged; past MaxBlobReferenceDepth the compaction rewrites the values
	// into new blob files. At 10, a run of 1 GB of 100 KB SETs over 1,000
	// keys had Pebble write 1.5 bytes per value byte beside the change
	// log's 1.0; at 64, 0.9 (docs/perf.md, "Blob reference depth"). A
	// point read still reads one blob file.
	po.Experimental.ValueSeparationPolicy = func() pebble.ValueSeparationPolicy {
		return pebble.ValueSeparationPolicy{
			Enabled:               true,
			MinimumSize:           4 << 10,
			MaxBlobReferenceDepth: 64,
			RewriteMinimumAge:     5 * time.Minute,
			TargetGarbageRatio:    0.2,
		}
	}
	dir := o.Dir
	po.FS = vfs.Default
	if o.FS != nil {
		po.FS = o.FS
	}
	if o.InMemory {
		po.FS = vfs.NewMem()
		dir = ""
	}
	// The change-log files are the write-ahead log (changelog.go): Pebble
	// keeps none, and syncs them before each flush makes its own state
	// durable.
	po.DisableWAL = true
	if o.pebbleOptions != nil {
		o.pebbleOptions(po)
	}
	s := &Store{
		opts:    o,
		fs:      po.FS,
		dir:     dir,
		entropy: ulid.Monotonic(rand.Reader, 0),
		stop:    make(chan struct{}),
		reqs:    make(chan *writeReq, maxGroup),

		writerDone: make(chan struct{}),
		commitCh:   make(chan struct{}, 1),
		cache:      newMetaCache(),
		rfields:    newReadFields(),
		gcache:     newGroupCache(),
		zblocks:    newZBlockCache(),
		fields:     newFieldCache(),
		staged:     overlay{m: map[string]int32{}},
		logGroup:   ratelog.New(logEvery),
		logSync:    ratelog.New(logEvery),
		logProbe:   ratelog.New(logEvery),
		logPebble:  ratelog.New(logEvery),
	}
	s.holds.init()
	s.policy.Store(int32(o.Sync))
	s.faults.free.Store(-1)
	s.faults.reserve.Store(max(o.MinFreeDisk, 0))
	var logRef atomic.Pointer[changeLog]
	po.EventListener = s.pebbleEvents(&logRef)
	po.FS = backoffFS{po.FS, s} // failed flushes are retried at a bounded rate (fault.go)
	db, err := pebble.Open(dir, po)
	if err != nil {
		return nil, fmt.Errorf("materialize: open %q: %w", dir, err)
	}
	log, err := openChangeLog(po.FS, po.FS.PathJoin(dir, "changelog"), o.ChangeLogSegmentSize)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("materialize: change log: %w", err)
	}
	logRef.Store(log)
	s.db, s.log = db, log
	if dir != "" {
		s.cleanCheckpoints() // after a crash in the middle of a SAVE
	}
	s.run.s = s
	s.run.serveFn = s.run.serve
	s.stagedCounts.m = map[uint8]*[2]int64{}
	dbm, err := readDBMap(db)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("materialize: db map: %w", err)
	}
	s.dbm.Store(dbm)
	if err := s.loadCounts(); err != nil {
		db.Close()
		return nil, fmt.Errorf("materialize: key counts: %w", err)
	}
	var keys int64
	for i := range s.counts {
		keys += s.counts[i].keys.Load()
	}
	f := newKeyFilter(2 * keys)
	s.filters.cur.Store(f) // tracking before the writer starts and before the scan
	if err := s.recover(); err != nil {
		log.close()
		db.Close()
		return nil, fmt.Errorf("materialize: replaying the change log: %w", err)
	}
	if err := s.restoreULIDTime(); err != nil {
		log.close()
		db.Close()
		return nil, err
	}
	s.committedDBs.Store(&committedDBs{seq: s.seq, m: s.dbm.Load()})
	s.swaps.openLast = s.seq
	s.committed.Store(s.seq)
	s.applying.Store(s.seq)
	s.synced.Store(s.seq)
	// A store opened below the reserve serves reads and refuses writes
	// from the first command.
	s.checkSpace()
	s.wg.Add(1)
	go s.every(faultProbeEvery, func() { s.CheckStorage() })
	s.wg.Add(1)
	go s.fillFilter(f)
	s.wg.Add(1)
	go s.writer()
	s.wg.Add(1)
	go s.every(time.Second, s.syncCommitted) // under everysec only (SetPolicy may change it)
	if dir != "" {
		s.startSnapshots()
	}
	if o.ChangeLogRetentionAge > 0 {
		// Records age without commits: the age limit is checked every minute too.
		s.wg.Add(1)
		go s.every(time.Minute, func() { s.maybePruneLog(s.committed.Load(), true) })
	}
	return s, nil
}

// Close stops background work, fsyncs the change log, flushes Pebble's
// memtables (so that the next Open has nothing to replay) and closes both.
// Writes after Close return ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	close(s.stop)
	s.wg.Wait()
	err := s.log.sync()
	if err == nil && s.faults.cur.Load() == nil {
		// With a storage fault the flush could wait forever (Pebble retries
		// a failed flush until it succeeds): the next Open replays the log.
		err = s.finalFlush()
	}
	return errors.Join(err, s.db.Close(), s.log.close())
}

// finalFlush flushes Pebble's memtables for Close and waits for the
// flush, unless it fails: a failed flush sets a storage fault (FlushEnd)
// and Pebble retries it until it succeeds, so a disk that filled or a
// data directory removed during the shutdown would hold Close for ever
// (seen: a process spinning on the retries for minutes after SHUTDOWN).
// The change log holds every record: the next Open replays them.
func (s *Store) finalFlush() error {
	done, err := s.db.AsyncFlush()
	if err != nil {
		return err
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return nil
		case <-tick.C:
			if f := s.faults.cur.Load(); f != nil {
				return fmt.Errorf("materialize: close: the final flush failed, the next open replays the change log: %w", f)
			}
		}
	}
}

// GroupStats returns how many commit groups have committed since Open and
// how many change-log records they held: their ratio is the mean group
// size, how many writes shared one Pebble commit and one log write.
func (s *Store) GroupStats() (groups, records uint64) {
	return s.groups.Load(), s.groupRecords.Load()
}

// Policy returns the store's fsync policy.
func (s *Store) Policy() SyncPolicy { return SyncPolicy(s.policy.Load()) }

// SetPolicy changes the fsync policy (CONFIG SET appendfsync). Under a
// change to SyncAlways, writes acknowledged from then on wait for their
// fsync, which covers every earlier record too.
func (s *Store) SetPolicy(p SyncPolicy) { s.policy.Store(int32(p)) }

// Now returns the store's clock reading.
func (s *Store) Now() time.Time { return s.opts.Now() }

// LastSeq returns the sequence number of the newest committed change-log record.
func (s *Store) LastSeq() uint64 { return s.committed.Load() }

// View returns a View of the latest committed state at the current time.
func (s *Store) View() *View {
	return &View{r: s.db, vlog: s.log, nowMs: s.opts.Now().UnixMilli(), cache: s.cache, rfields: s.rfields, iters: &s.iters, counts: &s.counts, dbm: s.dbm.Load(), filters: &s.filters}
}

// writeReq is one Write call waiting for the writer goroutine. Requests
// are pooled (reqPool): done is buffered, and the writer sends on it once
// instead of closing it, so a request is reused once its Wait returned.
type writeReq struct {
	decide func(v *View) ([]codec.Event, error)
	txn    func(tx *Txn) error // instead of decide: WriteTxn
	rec    *codec.Record       // instead of decide: Apply
	tag    any                 // the caller's, for the Observer
	notify Notifier            // told once its group has ended (SubmitNotify), or nil
	seq    uint64
	err    error
	done   chan struct{} // capacity 1: one send when the request ends
	// pending is Submit's handle, allocated with the request.
	pending Pending
}

var reqPool = sync.Pool{New: func() any { return &writeReq{done: make(chan struct{}, 1)} }}

// newReq returns a pooled request for s.
func (s *Store) newReq() *writeReq {
	req := reqPool.Get().(*writeReq)
	req.pending = Pending{req, s}
	return req
}

// end signals the request's waiter; the writer calls it once per request.
func (r *writeReq) end() { r.done <- struct{}{} }

// release returns a request whose end was received to the pool.
func (r *writeReq) release() {
	*r = writeReq{done: r.done}
	reqPool.Put(r)
}

// servedWrite is a Served write staged in the current group.
type servedWrite struct {
	done func(seq uint64, err error)
	seq  uint64
}

// maxGroup bounds how many queued writes commit in one batch.
const maxGroup = 256

// Write is the write path. It hands decide to the writer goroutine, which
// calls it with a View of the state as of every earlier write (committed, or
// earlier in the same commit group) and, if decide returns events, applies
// them together with their change-log record. Writes queued at the same time
// commit as a group in one atomic Pebble batch; each write's events are
// applied only if its own decide succeeded, so a command's events commit
// atomically or not at all.
//
// It returns the record's sequence number, or 0 when decide returned no
// events or an error (then nothing of it is written and decide's error is
// returned unchanged). decide runs on the writer goroutine: it must not call
// Write and should not block.
//
// The batch is committed without fsync; see WaitDurable.
func (s *Store) Write(decide func(v *View) ([]codec.Event, error)) (uint64, error) {
	return s.SubmitTagged(nil, decide).Wait()
}

// WriteTagged is Write with a tag that the Observer sees in the commit
// group's GroupInfo (a command's trace context).
func (s *Store) WriteTagged(tag any, decide func(v *View) ([]codec.Event, error)) (uint64, error) {
	return s.SubmitTagged(tag, decide).Wait()
}

// ErrRecordOrder is Apply's error for a record that is not the store's
// next (its Seq is not LastSeq()+1).
var ErrRecordOrder = errors.New("record out of order")

// Apply commits rec, a change-log record decided elsewhere (another
// store's log: a rebuild from a snapshot, a replica), as this store's next
// record: rec.Seq must be LastSeq()+1, or nothing is written and the error
// wraps ErrRecordOrder. The record is applied by the path every write and
// Open's replay take (stage, applyEvent), written to this store's change
// log with its own ULID, time and trace context, and commits like any
// write (in a group, atomically, with the in-memory indexes and the feed;
// under SyncAlways the caller calls WaitDurable, as for Write); later
// records decided here take greater ULIDs. No decision
// is made: expiry, blocked clients (the ready hook) and the Observer's
// tags are not consulted. It returns the record's sequence number.
//
// A corrupt event (codec.ErrCorrupt) fails the record and the group it
// commits in, as a corrupt event of any write does. Safe for concurrent
// use; records applied concurrently must still come in order.
func (s *Store) Apply(rec codec.Record) (uint64, error) {
	return s.ApplyAsync(rec).Wait()
}

// ApplyAsync is Apply returning at once, as Submit is Write: records
// applied back to back share commit groups (a rebuild keeps many in
// flight). Records are applied in the order of the calls; one that fails
// makes every later one fail with ErrRecordOrder.
func (s *Store) ApplyAsync(rec codec.Record) *Pending {
	req := s.newReq()
	req.rec = &rec
	return s.enqueue(req)
}

// Pending is a write submitted with Submit and not yet waited for.
type Pending struct {
	req *writeReq
	s   *Store
}

// Submit queues decide for the writer goroutine like Write, but returns at
// once. Writes submitted in sequence are decided and committed in that
// order, so a connection can submit a pipeline's writes back to back and
// have them share commit groups; it must Wait for each before relying on
// its effects (or its decide's side effects).
func (s *Store) Submit(decide func(v *View) ([]codec.Event, error)) *Pending {
	return s.SubmitTagged(nil, decide)
}

// SubmitTagged is Submit with a tag that the Observer sees in the commit
// group's GroupInfo.
func (s *Store) SubmitTagged(tag any, decide func(v *View) ([]codec.Event, error)) *Pending {
	return s.SubmitNotify(tag, nil, decide)
}

// Notifier is told that submitted writes have ended (SubmitNotify).
type Notifier interface {
	// Notify is called on the writer goroutine once a commit group has
	// ended, once per Notifier of the group's writes however many it
	// submitted: it must not block (an event loop's eventfd write).
	Notify()
}

// SubmitNotify is SubmitTagged that also tells n (when not nil) once the
// write has ended, so that a caller serving many connections need not
// block in Wait: it checks Pending.Done when told.
func (s *Store) SubmitNotify(tag any, n Notifier, decide func(v *View) ([]codec.Event, error)) *Pending {
	req := s.newReq()
	req.decide = decide
	req.tag = tag
	req.notify = n
	return s.enqueue(req)
}

// enqueue hands req to the writer goroutine (or ends it with ErrClosed).
func (s *Store) enqueue(req *writeReq) *Pending {
	select {
	case s.reqs <- req:
	case <-s.stop:
		req.err = ErrClosed
		req.end()
	}
	return &req.pending
}

// Done reports whether the write has ended: Wait would return at once.
// Like Wait, it is not called after Wait.
func (p *Pending) Done() bool {
	if len(p.req.done) > 0 {
		return true
	}
	select {
	case <-p.s.writerDone:
		return true
	default:
		return false
	}
}

// Wait returns what Write would have: the record's sequence number (0 when
// decide returned no events or an error) and decide's error, or ErrClosed.
// It is called once per Pending: the request goes back to its pool.
func (p *Pending) Wait() (uint64, error) {
	req := p.req
	select {
	case <-req.done:
	case <-p.s.writerDone:
		select {
		case <-req.done:
		default:
			return 0, ErrClosed // queued after the writer stopped: not reused
		}
	}
	seq, err := req.seq, req.err
	req.release()
	return seq, err
}

// writer is the single writer goroutine: it takes the queued writes, decides
// each against an indexed batch (so later writes see earlier ones) and
// commits the group with one Pebble commit.
func (s *Store) writer() {
	defer s.wg.Done()
	defer close(s.writerDone)
	group := make([]*writeReq, 0, maxGroup)
	var notifiers []Notifier // the group's, told once it ended
	for {
		select {
		case <-s.stop:
			return
		case req := <-s.reqs:
			group = append(group[:0], req)
		}
		if len(s.reqs) == 0 {
			// The submitter readied this goroutine to run next on its P, so
			// it would commit that one write alone while other connections'
			// goroutines, made runnable by the same poll, wait behind it.
			// Yielding once lets them submit first: unpipelined SET from 50
			// clients went from 1.4 to 7 writes per group and 16.5–16.9 to
			// 13.6–14.3 µs of CPU per request (docs/perf.md, "Commit groups
			// of unpipelined clients"); a lone client loses nothing
			// measurable.
			runtime.Gosched()
		}
	drain:
		for len(group) < maxGroup {
			select {
			case req := <-s.reqs:
				group = append(group, req)
			default:
				break drain
			}
		}
		if o := s.opts.Observer; o != nil {
			s.observedGroup(o, group)
		} else {
			s.commitGroup(group)
		}
		notify := notifiers[:0]
		for i, r := range group {
			if n := r.notify; n != nil && !slices.Contains(notify, n) {
				notify = append(notify, n)
			}
			r.end()
			group[i] = nil
		}
		for i, n := range notify {
			n.Notify()
			notify[i] = nil
		}
		notifiers = notify
	}
}

// groupRun is the commit group being decided (commitGroup): kept in the
// Store, so that a group allocates none of it. Writer goroutine only.
type groupRun struct {
	s         *Store
	b         *pebble.Batch
	seq       uint64    // the last change-log sequence staged
	now       time.Time // the decision time of the write being decided
	committed []codec.Event
	served    []servedWrite
	serr      error // a served write's events failed to stage
	cv, v     View  // reads for the key counts; the decisions' view
	serveFn   func(Served)
	logBytes  int      // what the group wrote to the change log (for the Observer)
	expired   int64    // keys the group deleted because their TTL passed (ExpiredKeys)
	swaps     []uint64 // records of the group holding a SWAPDB (SwapRecords)
	failed    error    // why the group failed (for the Observer)
	tags      []any    // the Observer's GroupInfo.Tags, reused
	perWrite  int      // batch bytes per write of the last group (batchSize)
}

// maxBatchHint caps batchSize (a group of larger writes grows its batch),
// so that one huge write does not make the next groups allocate as much.
const maxBatchHint = 8 << 20

// batchSize is the initial capacity of the batch of a group of writes:
// the last group's batch bytes per write times writes. A batch that
// outgrows its capacity doubles it and copies what it holds, which for
// groups of 100 KB values was 4 % of the CPU (docs/perf.md, "Batches
// sized from the last group").
func (g *groupRun) batchSize(writes int) int {
	return min(g.perWrite*writes, maxBatchHint)
}

// observedGroup commits group and tells o of it.
func (s *Store) observedGroup(o Observer, group []*writeReq) {
	g := &s.run
	start, seq0 := time.Now(), s.seq
	g.logBytes, g.failed = 0, nil
	s.commitGroup(group)
	g.tags = g.tags[:0]
	for _, r := range group {
		if r.tag != nil {
			g.tags = append(g.tags, r.tag)
		}
	}
	o.Commit(GroupInfo{Start: start, End: time.Now(), Writes: len(group),
		Records: int(s.seq - seq0), LogBytes: g.logBytes, Sync: s.Policy() == SyncAlways, Tags: g.tags, Err: g.failed})
	clear(g.tags)
}

// Traced is implemented by a write's tag (SubmitTagged) that carries the
// trace context of the command that made it: the store writes it into the
// write's change-log record (codec.Record.Trace), for the change feed.
type Traced interface {
	TraceContext() codec.TraceContext
}

// record stages one write's events as change-log record seq+1 (applied
// tells that a Txn has applied them already; tag is the request's).
func (g *groupRun) record(events []codec.Event, applied bool, tag any) error {
	if err := g.stageEvents(events, applied); err != nil {
		return err
	}
	var tc codec.TraceContext
	if t, ok := tag.(Traced); ok {
		tc = t.TraceContext()
	}
	if err := g.s.stageRecord(g.seq, g.now, events, tc); err != nil {
		return err
	}
	g.account(events)
	return nil
}

// applyRecord stages rec, a record decided elsewhere (Apply), as record
// seq+1 with its own ULID, time and trace context.
func (g *groupRun) applyRecord(rec *codec.Record) error {
	s := g.s
	if err := g.stageEvents(rec.Events, false); err != nil {
		return err
	}
	s.stageLogRecord(g.seq, *rec)
	// The records this store decides later keep increasing ULIDs.
	s.ulidMs = max(s.ulidMs, ulid.ULID(rec.ULID).Time()+1)
	g.account(rec.Events)
	return nil
}

// stageEvents stages the events of the group's next record (seq+1), unless
// a Txn applied them already.
func (g *groupRun) stageEvents(events []codec.Event, applied bool) error {
	g.seq++
	if applied {
		return nil
	}
	for _, e := range events {
		if err := g.s.stage(&g.cv, g.b, e); err != nil {
			return err
		}
	}
	return nil
}

// account notes a staged record's events for the group's commit: the
// in-memory indexes, expired keys, SWAPDB records.
func (g *groupRun) account(events []codec.Event) {
	g.committed = append(g.committed, events...)
	for _, e := range events {
		switch {
		case e.Op == codec.OpDelKey && codec.DelReason(e) == codec.ReasonExpired:
			g.expired++
		case e.Op == codec.OpSwapDB && (len(g.swaps) == 0 || g.swaps[len(g.swaps)-1] != g.seq):
			g.swaps = append(g.swaps, g.seq)
		}
	}
}

// serve is the ready hook's callback for one blocked client served.
func (g *groupRun) serve(sv Served) {
	w := servedWrite{done: sv.Done}
	if len(sv.Events) > 0 && g.serr == nil {
		if g.serr = g.record(sv.Events, false, nil); g.serr == nil {
			w.seq = g.seq
		}
	}
	g.served = append(g.served, w)
}

// commitGroup decides and commits one group of writes.
func (s *Store) commitGroup(group []*writeReq) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := &s.run
	g.b = s.db.NewIndexedBatchWithSize(g.batchSize(len(group)))
	defer func() { // however the group ends: keep the scratch, drop references
		g.perWrite = len(g.b.Repr()) / max(len(group), 1)
		g.b.Close()
		g.b = nil
		clear(g.committed)
		g.committed = g.committed[:0]
		clear(g.served)
		g.served = g.served[:0]
		g.serr = nil
		g.expired = 0
		g.swaps = g.swaps[:0]
		g.cv, g.v = View{}, View{}
	}()
	g.seq = s.seq
	s.beginGroup()
	if s.broken != nil {
		s.failGroup(group, g.served, s.broken)
		return
	}
	ready := s.ready.Load()
	g.cv = View{r: g.b, vlog: s.log, cache: s.cache, staged: &s.staged, iters: &s.iters, dbm: s.staged.dbBase, filters: &s.filters}
	// One View for the group's decisions (a decision must not keep it),
	// its time the group's; one hook for the blocked clients served.
	g.v = View{r: g.b, vlog: s.log, cache: s.cache, staged: &s.staged, iters: &s.iters,
		counts: &s.counts, stagedCounts: &s.stagedCounts, dbm: s.staged.dbBase, filters: &s.filters, gcache: s.gcache, fcache: s.fields}
	v := &g.v
	// One decision time for the group (Redis caches its time too, per
	// command): a clock read per write was 3.4 % of the writer's CPU for
	// SET.
	g.now = s.opts.Now()
	v.nowMs = g.now.UnixMilli()
	for _, r := range group {
		if r.rec != nil {
			if r.rec.Seq != g.seq+1 {
				r.err = fmt.Errorf("materialize: apply record %d after record %d: %w", r.rec.Seq, g.seq, ErrRecordOrder)
				continue
			}
			if err := g.applyRecord(r.rec); err != nil {
				s.failGroup(group, g.served, err)
				return
			}
			r.seq = g.seq
			continue
		}
		var events []codec.Event
		var err error
		if r.txn != nil {
			var fatal error
			if events, err, fatal = s.decideTxn(r, v, g.b); fatal != nil {
				s.failGroup(group, g.served, fatal)
				return
			}
		} else {
			events, err = r.decide(v)
		}
		if err != nil || len(events) == 0 {
			r.err = err
			continue
		}
		if err := g.record(events, r.txn != nil, r.tag); err != nil {
			// Only corrupt events fail here: a programming error. Nothing of
			// the group is committed.
			s.failGroup(group, g.served, err)
			return
		}
		r.seq = g.seq
		if ready == nil {
			continue
		}
		(*ready)(v, events, g.serveFn)
		if g.serr != nil {
			s.failGroup(group, g.served, g.serr)
			return
		}
	}
	seq := g.seq
	if seq == s.seq {
		// Nothing staged: what the group's lookups put in the field cache
		// is the committed state.
		s.fields.commit()
		s.doneServed(g.served, nil)
		return
	}
	// A storage fault refuses the group once it writes: decisions that
	// write nothing (WATCH, a transaction of reads) are still served.
	if f := s.WriteFault(); f != nil {
		s.failGroup(group, g.served, f)
		return
	}
	if err := s.seal(g.b, seq); err != nil {
		s.failGroup(group, g.served, err)
		return
	}
	// The records reach the log (one write) before their effects reach
	// Pebble: a crash between the two replays them at Open.
	g.logBytes = len(s.log.buf)
	if err := s.log.write(); err != nil {
		// Nothing of the group was acknowledged; frames it left in the
		// file are invalidated, now or by the probe (changeLog.sync),
		// before any later write.
		s.failGroup(group, g.served, s.setFault(FaultChangeLog, err))
		return
	}
	s.noteLogBytes(g.logBytes)
	// Read views pin a state between committed and applying (readPin).
	s.applying.Store(seq)
	if err := s.db.Apply(g.b, pebble.NoSync); err != nil {
		// The records are in the log but not applied: no later write can
		// go on consistently (Open will replay them).
		s.broken = fmt.Errorf("materialize: commit: %w", err)
		s.failGroup(group, g.served, s.broken)
		return
	}
	s.publish(g.committed, seq)
	s.expiredKeys.Add(g.expired)
	if len(g.swaps) > 0 {
		s.swaps.add(g.swaps)
	}
	s.groups.Add(1)
	s.groupRecords.Add(seq - s.seq)
	s.seq = seq
	s.committedDBs.Store(&committedDBs{seq: seq, m: s.dbm.Load()})
	s.committed.Store(seq)
	select {
	case s.commitCh <- struct{}{}:
	default: // a notification is pending: it covers this group too
	}
	s.maybePruneLog(seq, false)
	s.doneServed(g.served, nil)
}

// beginGroup clears the staged state for a new commit group (or replay
// batch).
func (s *Store) beginGroup() {
	clear(s.vrefs) // a failed group's: their values may be gone
	s.staged.reset()
	s.staged.dbBase = s.dbm.Load()
	s.staged.base = s.seq
	s.stagedCounts.reset()
	s.gcache.begin()
	s.zblocks.begin()
	s.fields.begin()
}

// stage applies e to b within the current group: the key counts (v reads
// the state before e), the Pebble keys (applyEvent), the staged metadata.
// The writer's decisions, Txn.Emit and the replay at Open all stage this
// way. An error means a corrupt event.
func (s *Store) stage(v *View, b *pebble.Batch, e codec.Event) error {
	if err := s.count(v, e); err != nil {
		return err
	}
	switch {
	case e.Op == codec.OpSetMeta:
		if err := applySetMetaTTL(b, e); err != nil {
			return err
		}
		if !s.staged.deferMeta(b, e) {
			if err := applyMetaKey(b, e); err != nil {
				return err
			}
			s.staged.observe(e)
		}
	default:
		if !keepsMeta(e.Op) {
			// It may read or delete M keys in b (DEL, COPY, FLUSHDB,
			// SWAPDB): the deferred writes go first, in their order; and
			// it may change keys the overlay does not hold.
			if err := s.staged.flushMeta(nil); err != nil {
				return err
			}
			s.staged.forgetLooked()
		}
		if err := applyEvent(b, e, s.zblocks); err != nil {
			return err
		}
		s.staged.observe(e)
	}
	s.gcache.stage(e)
	s.zblocks.stage(e)
	s.fields.stage(e)
	return nil
}

// seal adds the group's key counts and its last sequence (the A key) to b.
func (s *Store) seal(b *pebble.Batch, seq uint64) error {
	err := s.staged.flushMeta(s.vrefs)
	clear(s.vrefs)
	if err != nil {
		return fmt.Errorf("materialize: metadata: %w", err)
	}
	if err := s.stageCounts(b); err != nil {
		return fmt.Errorf("materialize: key counts: %w", err)
	}
	if err := b.Set(codec.AppliedKey(), binary.BigEndian.AppendUint64(nil, seq), nil); err != nil {
		return fmt.Errorf("materialize: applied sequence: %w", err)
	}
	return nil
}

// publish brings the in-memory indexes up to a group that committed: key
// counts, metadata cache, TTL index, db map.
func (s *Store) publish(events []codec.Event, seq uint64) {
	s.commitCounts()
	s.gcache.commit()
	s.zblocks.commit()
	s.fields.commit()
	s.staged.publish(s.cache, seq)
	s.rfields.publish(events, seq)
	for _, e := range events {
		s.ttl.observe(e)
	}
	if s.staged.dbs != nil {
		s.dbm.Store(s.staged.dbs)
	}
}

// doneServed tells the blocked clients served in a group how it ended.
func (s *Store) doneServed(served []servedWrite, err error) {
	for _, w := range served {
		if err != nil {
			w.seq = 0
		}
		w.done(w.seq, err)
	}
}

func (s *Store) failGroup(group []*writeReq, served []servedWrite, err error) {
	s.logGroup.Warn(s.opts.Logger, "write group failed", "err", err, "writes", len(group))
	s.run.failed = err
	s.log.discard(s.seq)
	for _, r := range group {
		r.seq, r.err = 0, err
	}
	s.doneServed(served, err)
}

// restoreULIDTime makes the first record after Open take a ULID above the
// log's last, whatever the clock reads now: the time part one millisecond
// past the last record's (ULIDs within one millisecond are ordered by
// their monotonic entropy, which starts afresh at Open).
func (s *Store) restoreULIDTime() error {
	last := s.log.last
	if last == 0 {
		return nil
	}
	var id [16]byte
	found := false
	err := s.log.readLast(func(seq uint64, raw []byte) {
		rec, err := codec.DecodeRecord(seq, raw)
		if err == nil {
			id, found = rec.ULID, true
		}
	})
	if err != nil || !found {
		return err // no record (a log that lost its tail): nothing to follow
	}
	s.ulidMs = ulid.ULID(id).Time() + 1
	return nil
}

// stageRecord stages the change-log record (sequence seq) of events, with
// the trace context of the command when it was sampled (tc), in the log's
// buffer (written with the group), encoded in place.
func (s *Store) stageRecord(seq uint64, now time.Time, events []codec.Event, tc codec.TraceContext) error {
	// ULIDs must increase even if the clock steps back.
	ms := ulid.Timestamp(now)
	if ms < s.ulidMs {
		ms = s.ulidMs
	}
	s.ulidMs = ms
	if err := s.ulidBuf.SetTime(ms); err != nil {
		return fmt.Errorf("materialize: ulid: %w", err)
	}
	if err := s.entropy.MonotonicRead(ms, s.ulidBuf[6:]); err != nil {
		return fmt.Errorf("materialize: ulid: %w", err)
	}
	s.stageLogRecord(seq, codec.Record{ULID: s.ulidBuf, TimeMs: now.UnixMilli(), Events: events, Trace: tc})
	return nil
}

// stageLogRecord stages r as record seq in the change log's buffer and
// notes where its large string values will be in the file
// (noteValueRefs).
func (s *Store) stageLogRecord(seq uint64, r codec.Record) {
	start := len(s.log.buf)
	s.log.appendWith(seq, func(b []byte) []byte { return codec.AppendRecord(b, r) })
	segment, base := s.log.stagePos()
	s.noteValueRefs(r.Events, segment, base+int64(start), len(s.log.buf)-start)
}

// noteValueRefs notes where the large string values of a record's events
// are in the change log (Store.vrefs): the record's frame is frameLen
// bytes at offset frameOff of segment. A value that two events share is
// not noted: each keeps its value inline.
func (s *Store) noteValueRefs(events []codec.Event, segment uint64, frameOff int64, frameLen int) {
	min := s.opts.ValueLogMin
	if min < 0 || frameLen > math.MaxUint32 || !slices.ContainsFunc(events, func(e codec.Event) bool {
		return e.Op == codec.OpSetMeta && len(e.Args) == 3 && len(e.Args[2]) >= min
	}) {
		return
	}
	codec.SplitValueOffsets(events, func(i, off int) {
		v := events[i].Args[2] // a split value: longer than codec.SplitValueMin
		k := valueAt{&v[0], len(v)}
		if _, dup := s.vrefs[k]; dup {
			s.vrefs[k] = codec.ValueRef{}
			return
		}
		if s.vrefs == nil {
			s.vrefs = map[valueAt]codec.ValueRef{}
		}
		if len(v) < min {
			s.vrefs[k] = codec.ValueRef{} // noted for the duplicate check only
			return
		}
		s.vrefs[k] = codec.ValueRef{Segment: segment, Offset: frameOff + frameHeader + 8 + int64(off),
			Len: uint32(len(v)), CRC: crc32.Checksum(v, castagnoli)}
	})
}

// retainCut returns the first record the retention keeps after record
// seq committed: the records before it may go (Options.ChangeLogRetention,
// and with byAge ChangeLogRetentionAge too; 0: none may), and no LogHold
// keeps them.
func (s *Store) retainCut(seq uint64, byAge bool) uint64 {
	var cut uint64
	if r := s.opts.ChangeLogRetention; seq > r {
		cut = seq - r
	}
	if age := s.opts.ChangeLogRetentionAge; byAge && age > 0 {
		cut = max(cut, s.log.cutBefore(s.opts.Now().Add(-age).UnixMilli()))
	}
	return min(cut, s.holds.low.Load())
}

// maybePruneLog starts dropping the change-log segments older than the
// retention, when there are some and no pruning runs. The writer calls it
// after each commit: the count limit is a subtraction; the age limit,
// which reads the segments' times, is checked there at most once a second
// of the store's clock, and once a minute by a ticker (byAge).
func (s *Store) maybePruneLog(seq uint64, byAge bool) {
	if !byAge && s.opts.ChangeLogRetentionAge > 0 {
		if now := s.opts.Now(); now.Sub(s.ageChecked) >= time.Second {
			s.ageChecked, byAge = now, true // writer goroutine only
		}
	}
	cut := s.retainCut(seq, byAge)
	if cut == 0 || !s.log.droppable(cut) || !s.pruning.CompareAndSwap(false, true) {
		return
	}
	s.wg.Add(1)
	go s.pruneLog(cut)
}

// pruneLog drops the segments whose records all come before the
// retention, once Pebble holds their effects durably: it flushes the
// memtables first (a crash must still find every record after the durable
// A key). It goes on while writes committed meanwhile make more
// droppable.
func (s *Store) pruneLog(cut uint64) {
	defer s.wg.Done()
	defer s.pruning.Store(false)
	for {
		if s.faults.cur.Load() != nil {
			return // a flush may never end; pruning waits for the next commit after the fault
		}
		applied := s.committed.Load()
		// keep: the first segment kept. The values that keys still
		// reference in the segments before it move into the store first,
		// and the views pinned before that are waited for.
		keep := s.log.dropLimit(min(cut, applied+1, s.holds.low.Load()))
		if keep == 0 {
			return
		}
		if moved, err := s.inlineValues(keep); err != nil {
			if !errors.Is(err, pebble.ErrClosed) {
				s.opts.Logger.Warn("change log pruning: moving values into the store failed", "err", err)
			}
			return
		} else if moved > 0 {
			s.valuesInlined.Add(int64(moved))
		}
		if !s.pins.drain(s.stop, 10*time.Second, func(waited time.Duration, views int64) {
			s.opts.Logger.Warn("change log pruning waits for pinned views", "views", views, "waited", waited)
		}) {
			return
		}
		if err := s.db.Flush(); err != nil {
			if !errors.Is(err, pebble.ErrClosed) {
				s.opts.Logger.Warn("change log pruning: flush failed", "err", err)
			}
			return
		}
		if err := s.log.dropBefore(keep, s.holds.low.Load); err != nil {
			s.opts.Logger.Warn("change log pruning failed", "err", err)
			return
		}
		cut = s.retainCut(s.committed.Load(), true)
		if cut == 0 || !s.log.droppable(cut) {
			return
		}
		select {
		case <-s.stop:
			return
		default:
		}
	}
}

// WaitDurable returns once the change-log record seq (and every record
// before it) is fsynced, when the policy is SyncAlways; otherwise it returns
// at once. Concurrent callers share one fsync: whoever syncs covers every
// record committed before the sync started.
func (s *Store) WaitDurable(seq uint64) error {
	if s.Policy() != SyncAlways || seq == 0 {
		return nil
	}
	return s.syncTo(seq)
}

func (s *Store) syncTo(seq uint64) error {
	if s.synced.Load() >= seq {
		return nil
	}
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	if s.synced.Load() >= seq {
		return nil
	}
	upTo := s.committed.Load()
	if err := s.syncLog(); err != nil {
		return s.setFault(FaultChangeLog, fmt.Errorf("materialize: change log sync: %w", err))
	}
	for {
		cur := s.synced.Load()
		if cur >= upTo || s.synced.CompareAndSwap(cur, upTo) {
			return nil
		}
	}
}

// syncCommitted fsyncs the change log up to the last committed record
// (appendfsync everysec, once a second).
func (s *Store) syncCommitted() {
	if s.Policy() != SyncEverySec {
		return
	}
	if c := s.committed.Load(); c > s.synced.Load() {
		if err := s.syncTo(c); err != nil {
			s.logSync.Warn(s.opts.Logger, "background change log sync failed", "err", err)
		}
	}
}

// every runs fn every d until Close, on a goroutine counted in s.wg (the
// caller adds it).
func (s *Store) every(d time.Duration, fn func()) {
	defer s.wg.Done()
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			fn()
		}
	}
}

// swapIndex lists the change-log records that hold a SWAPDB, so that a
// reader of old records (the change feed's replay) can find the db map as
// of any retained record by undoing the swaps after it. The writer adds
// the records it commits; those written before Open are found by one scan
// of the retained log, at the first SwapRecords.
type swapIndex struct {
	openLast uint64 // the last record at Open
	scan     sync.Once
	before   []uint64 // the scan's: records up to openLast
	scanErr  error
	mu       sync.Mutex
	after    []uint64 // the writer's: records after openLast
}

func (x *swapIndex) add(seqs []uint64) {
	x.mu.Lock()
	x.after = append(x.after, seqs...)
	x.mu.Unlock()
}

// FirstSeq returns the sequence of the oldest change-log record retained
// (0: none): ChangeLog and the replay read from it on.
func (s *Store) FirstSeq() uint64 { return s.log.firstSeq() }

// SwapRecords returns, ascending, the sequences >= from of the retained
// committed records that hold a SWAPDB. The first call reads the records
// written before Open once (about a second per million records); later
// calls cost a copy of the list.
func (s *Store) SwapRecords(from uint64) ([]uint64, error) {
	x := &s.swaps
	x.scan.Do(func() {
		x.scanErr = s.ChangeLog(s.FirstSeq(), func(r codec.Record) bool {
			if r.Seq > x.openLast {
				return false
			}
			for _, e := range r.Events {
				if e.Op == codec.OpSwapDB {
					x.before = append(x.before, r.Seq)
					break
				}
			}
			return true
		})
	})
	if x.scanErr != nil {
		return nil, x.scanErr
	}
	var out []uint64
	for _, seq := range x.before {
		if seq >= from {
			out = append(out, seq)
		}
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, seq := range x.after {
		if seq >= from {
			out = append(out, seq)
		}
	}
	return out, nil
}

// ChangeLog calls fn for each retained change-log record with sequence >=
// from, in order, until fn returns false. The record aliases memory valid
// only during the call.
func (s *Store) ChangeLog(from uint64, fn func(codec.Record) bool) error {
	var ferr error
	err := s.log.read(max(from, 1), s.committed.Load(), func(seq uint64, raw []byte) bool {
		rec, err := codec.DecodeRecord(seq, raw)
		if err != nil {
			ferr = err
			return false
		}
		return fn(rec)
	})
	if err != nil {
		return err
	}
	return ferr
}

type pebbleLogger struct {
	l     *slog.Logger
	fatal func(msg string)
}

func (p pebbleLogger) Infof(format string, args ...any) {
	p.l.Debug(fmt.Sprintf(format, args...), "component", "pebble")
}
func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error(fmt.Sprintf(format, args...), "component", "pebble")
}

// Fatalf is Pebble's report of a state it cannot go on from (a MANIFEST
// write that failed, a broken invariant): Options.Fatal, or a panic.
func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	p.l.Error(msg, "component", "pebble")
	if p.fatal != nil {
		p.fatal(msg)
	}
	panic(msg)
}

// MemoryUsage returns the bytes Pebble holds in memory outside the Go heap:
// its block cache's contents and its memtables (mutable and queued for
// flushing). Safe for concurrent use.
func (s *Store) MemoryUsage() (cache, memtables int64) {
	m := s.db.Metrics()
	return m.BlockCache.Size, int64(m.MemTable.Size)
}

// ExpiredKeys returns how many keys committed groups deleted because their
// TTL passed (OpDelKey with ReasonExpired) since Open: INFO's expired_keys.
func (s *Store) ExpiredKeys() int64 { return s.expiredKeys.Load() }

// StorageStats are Pebble's figures that telemetry reports.
type StorageStats struct {
	DiskUsage        uint64 // bytes of the store's files (Pebble's DiskSpaceUsage; the change log is not included)
	MemTableSize     uint64 // bytes of the memtables, including those being flushed
	CacheSize        int64  // bytes in the block cache
	CacheHits        int64  // block cache hits since Open
	CacheMisses      int64  // block cache misses since Open
	Compactions      int64  // compactions since Open
	Flushes          int64  // memtable flushes since Open
	ReadAmp          int    // sublevels and levels a read may visit
	ChangeLogRecords uint64 // the last committed change-log sequence number
	// Bytes written since Open: to the change log (the data written, once),
	// by Pebble's flushes and by its compactions (sstables and blob files).
	ChangeLogBytes, FlushBytes, CompactionBytes int64
	// SingleDeleteMisuses counts the SingleDeletes of a PEL key (P, Q, W)
	// that Pebble found over two Sets of the key since Open: always 0
	// unless Sediment has a bug (docs/key-format.md, "PEL keys: removed
	// with SingleDelete").
	SingleDeleteMisuses int64
	// ValuesInlined counts the values that change-log retention moved into
	// the store since Open, before it removed their segments (string
	// values of Options.ValueLogMin or more live in the change log until
	// then).
	ValuesInlined int64
	// PinnedViews is how many read views and PinnedStates hold a Pebble
	// state now: retention waits for those older than its last move of
	// values (valuelog.go). Between commands it should be 0 but for feed
	// snapshots being read.
	PinnedViews int64
}

// WriteAmp is the write amplification since Open: bytes written to disk
// (change log, flushes, compactions) per change-log byte; 0 before any
// write. Each write's bytes go to the change log once, so 1 would mean no
// rewriting at all; Pebble's own WAL is off (the change log is the WAL).
func (st StorageStats) WriteAmp() float64 {
	if st.ChangeLogBytes == 0 {
		return 0
	}
	return float64(st.ChangeLogBytes+st.FlushBytes+st.CompactionBytes) / float64(st.ChangeLogBytes)
}

// StorageStats returns Pebble's current metrics. It takes Pebble's metrics
// lock: call it at scrape rate, not per command.
func (s *Store) StorageStats() StorageStats {
	m := s.db.Metrics()
	// The levels' own sums: Metrics.Total adds the bytes Pebble counts as
	// its WAL's to the flushed bytes, and with the WAL off (the change log
	// is the WAL) it counts the flushed bytes there once more. Pebble
	// (v2.1) also counts a flush's blob files in BlobBytesCompacted as
	// well as in BlobBytesFlushed: they are taken out of the compactions'.
	// TestFlushBytesCountedOnce checks both.
	var t pebble.LevelMetrics
	for i := range m.Levels {
		t.Add(&m.Levels[i])
	}
	t.BlobBytesCompacted -= min(t.BlobBytesCompacted, t.BlobBytesFlushed)
	return StorageStats{
		DiskUsage: m.DiskSpaceUsage(), MemTableSize: m.MemTable.Size,
		CacheSize: m.BlockCache.Size, CacheHits: m.BlockCache.Hits, CacheMisses: m.BlockCache.Misses,
		Compactions: m.Compact.Count, Flushes: m.Flush.Count, ReadAmp: m.ReadAmp(),
		ChangeLogRecords: s.committed.Load(),
		ChangeLogBytes:   s.logBytes.Load(),
		FlushBytes:       int64(t.TableBytesFlushed + t.BlobBytesFlushed),
		CompactionBytes:  int64(t.TableBytesCompacted + t.BlobBytesCompacted),

		SingleDeleteMisuses: s.faults.singleDelMisuse.Load(),
		ValuesInlined:       s.valuesInlined.Load(),
		PinnedViews:         s.pins.n[0].Load() + s.pins.n[1].Load(),
	}
}

// syncLog fsyncs the change log, telling the Observer.
func (s *Store) syncLog() error {
	o := s.opts.Observer
	if o == nil {
		return s.log.sync()
	}
	t0 := time.Now()
	err := s.log.sync()
	o.Sync(time.Since(t0), err)
	return err
}
