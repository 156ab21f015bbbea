package materialize

import (
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
)

// IterStats counts the storage work of every iterator the store's views
// opened: how many iterators, the seeks and steps their callers made, and
// what the LSM beneath had to visit for them. It is how tests check that an
// operation's cost does not grow with history (deleted entries below a
// stream's first ID, acknowledged PEL entries): the same operation must
// cost the same counts after 10,000 and after 100,000 earlier ones.
type IterStats struct {
	Gets      uint64 // point lookups (View.Get, View.Has) that reached Pebble
	Iterators uint64 // iterators opened
	Seeks     uint64 // seeks (First, Last, SeekGE, SeekLT) asked of Pebble
	Steps     uint64 // Next/Prev asked of Pebble
	// InternalSteps counts the steps Pebble's iterator took internally:
	// more than Steps when it skips over deleted or overwritten keys.
	InternalSteps uint64
	// Points is the number of internal points (live keys, older versions,
	// point tombstones) the merging iterator visited.
	Points uint64
	// PointsCovered is the subset of Points hidden by range tombstones.
	PointsCovered uint64

	// Metadata lookups (every command's first read of a key), by where
	// they were answered: the metadata cache or the commit group's staged
	// metadata (MetaHits), the key filter for absent keys (MetaAbsent), or
	// a Pebble point lookup (MetaLookups).
	MetaHits, MetaAbsent, MetaLookups uint64
	// GroupHits counts the point lookups of consumer-group values (group,
	// consumer, PEL entry) that the writer's group cache answered: they
	// are not in Gets.
	GroupHits uint64
	// TailHits counts the reads of a stream's newest entries (XREADGROUP
	// `>`) that the writer's tail cache answered without an iterator.
	TailHits uint64
	// FieldHits counts the lookups of hash fields, set members and
	// sorted-set scores the writer's field cache answered (fieldcache.go).
	FieldHits uint64
	// ReadFieldHits counts the lookups of hash fields, set members and
	// sorted-set scores by read views that the committed elements answered
	// (readfields.go).
	ReadFieldHits uint64
}

// Sub returns s minus o, field by field.
func (s IterStats) Sub(o IterStats) IterStats {
	return IterStats{
		Gets:          s.Gets - o.Gets,
		Iterators:     s.Iterators - o.Iterators,
		Seeks:         s.Seeks - o.Seeks,
		Steps:         s.Steps - o.Steps,
		InternalSteps: s.InternalSteps - o.InternalSteps,
		Points:        s.Points - o.Points,
		PointsCovered: s.PointsCovered - o.PointsCovered,
		MetaHits:      s.MetaHits - o.MetaHits,
		MetaAbsent:    s.MetaAbsent - o.MetaAbsent,
		MetaLookups:   s.MetaLookups - o.MetaLookups,
		GroupHits:     s.GroupHits - o.GroupHits,
		TailHits:      s.TailHits - o.TailHits,
		FieldHits:     s.FieldHits - o.FieldHits,
		ReadFieldHits: s.ReadFieldHits - o.ReadFieldHits,
	}
}

// iterCounters accumulates IterStats; safe for concurrent use.
type iterCounters struct {
	gets, iterators, seeks, steps, internalSteps, points, covered     atomic.Uint64
	metaHits, metaAbsent, metaLookups, groupHits, tailHits, fieldHits atomic.Uint64
	readFieldHits                                                     atomic.Uint64
}

// record adds the stats of it, which is about to be closed. c may be nil.
func (c *iterCounters) record(it *pebble.Iterator) {
	if c == nil {
		return
	}
	st := it.Stats()
	const (
		api = pebble.InterfaceCall
		in  = pebble.InternalIterCall
	)
	c.iterators.Add(1)
	c.seeks.Add(uint64(st.ForwardSeekCount[api] + st.ReverseSeekCount[api]))
	c.steps.Add(uint64(st.ForwardStepCount[api] + st.ReverseStepCount[api]))
	c.internalSteps.Add(uint64(st.ForwardStepCount[in] + st.ReverseStepCount[in]))
	c.points.Add(st.InternalStats.PointCount)
	c.covered.Add(st.InternalStats.PointsCoveredByRangeTombstones)
}

// get counts one point lookup. c may be nil.
func (c *iterCounters) get() {
	if c != nil {
		c.gets.Add(1)
	}
}

func (c *iterCounters) load() IterStats {
	return IterStats{
		Gets:          c.gets.Load(),
		Iterators:     c.iterators.Load(),
		Seeks:         c.seeks.Load(),
		Steps:         c.steps.Load(),
		InternalSteps: c.internalSteps.Load(),
		Points:        c.points.Load(),
		PointsCovered: c.covered.Load(),
		MetaHits:      c.metaHits.Load(),
		MetaAbsent:    c.metaAbsent.Load(),
		MetaLookups:   c.metaLookups.Load(),
		GroupHits:     c.groupHits.Load(),
		TailHits:      c.tailHits.Load(),
		FieldHits:     c.fieldHits.Load(),
		ReadFieldHits: c.readFieldHits.Load(),
	}
}

// metaHit, metaAbsentHit and metaLookup count one metadata lookup by where
// it was answered (IterStats.MetaHits, MetaAbsent, MetaLookups). c may be
// nil.
func (c *iterCounters) groupHit() {
	if c != nil {
		c.groupHits.Add(1)
	}
}

func (c *iterCounters) fieldHit() {
	if c != nil {
		c.fieldHits.Add(1)
	}
}

func (c *iterCounters) readFieldHit() {
	if c != nil {
		c.readFieldHits.Add(1)
	}
}

func (c *iterCounters) tailHit() {
	if c != nil {
		c.tailHits.Add(1)
	}
}

func (c *iterCounters) metaHit() {
	if c != nil {
		c.metaHits.Add(1)
	}
}

func (c *iterCounters) metaAbsentHit() {
	if c != nil {
		c.metaAbsent.Add(1)
	}
}

func (c *iterCounters) metaLookup() {
	if c != nil {
		c.metaLookups.Add(1)
	}
}

// IterStats returns the totals since Open of every iterator opened by the
// store's views (reads, write decisions and active expiry).
func (s *Store) IterStats() IterStats { return s.iters.load() }
