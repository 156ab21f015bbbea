package materialize

import (
	"hash/maphash"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sediment-dev/sediment/codec"
)

// keyFilter is a Bloom filter over every (storage db, key) that has
// metadata (a T key): an in-memory index that answers "absent" for a key
// it does not hold without a Pebble lookup. A lookup of an absent key
// otherwise searches every memtable and the L0 files (about 5 µs, against
// 1 µs for a cached key: BenchmarkCommands GET-absent vs GET), and every
// new key's first write begins with one.
//
// It has no false negatives once ready: the writer adds each key it
// creates while staging the event (before the commit makes it visible),
// and a scan of the T keys adds the keys that existed before the filter
// started tracking (the scan starts after it did). It never removes keys:
// deleted keys stay as false positives, which only cost the lookup they
// would have cost anyway. When the keys created since it was built exceed
// its capacity, a rebuild sized for the live keys replaces it
// (keyFilters.rebuild).
//
// Layout: cache-line blocks of 512 bits; a key sets filterProbes bits in
// one block, chosen by its hash. At filterBitsPerKey bits per key of
// capacity the false-positive rate is about 1%. Words are set with atomic
// OR and read with atomic loads: the writer adds while readers test.
type keyFilter struct {
	seed     maphash.Seed
	words    []atomic.Uint64
	blocks   uint64
	capacity int64
	created  atomic.Int64 // keys added by the writer since the filter was made
	ready    atomic.Bool  // the scan of existing keys has completed
	// from is a committed sequence no earlier than the state its scan
	// read (set before ready): it holds every key of every state from it
	// on, but may lack keys deleted before, which a read view pinned to
	// an earlier state must look up (View.filterAbsent).
	from uint64
}

const (
	filterBitsPerKey = 10
	filterProbes     = 7
)

// filterMinKeys is the smallest capacity (1.25 MiB of filter); tests lower it.
var filterMinKeys int64 = 1 << 20

func newKeyFilter(capacity int64) *keyFilter {
	capacity = max(capacity, filterMinKeys)
	blocks := uint64(capacity*filterBitsPerKey+511) / 512
	return &keyFilter{seed: maphash.MakeSeed(), words: make([]atomic.Uint64, blocks*8), blocks: blocks, capacity: capacity}
}

// locate returns the first word of the key's block and the bits that
// choose its probes (9 bits each, filterProbes of them).
func (f *keyFilter) locate(db uint8, key []byte) (base int, bits uint64) {
	var h maphash.Hash
	h.SetSeed(f.seed)
	h.WriteByte(db)
	h.Write(key)
	x := h.Sum64()
	base = int((uint64(uint32(x>>32))*f.blocks)>>32) * 8
	return base, x * 0x9E3779B97F4A7C15 // a second word of bits, mixed
}

// add records (db, key).
func (f *keyFilter) add(db uint8, key []byte) {
	base, y := f.locate(db, key)
	for i := 0; i < filterProbes; i++ {
		w, mask := &f.words[base+int((y&511)>>6)], uint64(1)<<(y&63)
		if w.Load()&mask == 0 {
			w.Or(mask)
		}
		y >>= 9
	}
}

// mayContain reports whether (db, key) may have metadata; false is
// certain once the filter is ready.
func (f *keyFilter) mayContain(db uint8, key []byte) bool {
	base, y := f.locate(db, key)
	for i := 0; i < filterProbes; i++ {
		if f.words[base+int((y&511)>>6)].Load()&(uint64(1)<<(y&63)) == 0 {
			return false
		}
		y >>= 9
	}
	return true
}

// keyFilters holds the filter reads consult (cur) and, during a rebuild,
// the one being filled (next). Only the writer goroutine adds.
type keyFilters struct {
	cur, next  atomic.Pointer[keyFilter]
	rebuilding atomic.Bool
}

// absent reports whether (db, key) certainly has no metadata in every
// state from committed sequence seq on.
func (fs *keyFilters) absent(db uint8, key []byte, seq uint64) bool {
	f := fs.cur.Load()
	return f != nil && f.ready.Load() && f.from <= seq && !f.mayContain(db, key)
}

// created records a key the writer is creating (staged, not yet
// committed). It returns true when the current filter has taken more new
// keys than its capacity: time to rebuild.
func (fs *keyFilters) created(db uint8, key []byte) bool {
	if n := fs.next.Load(); n != nil {
		n.add(db, key)
	}
	f := fs.cur.Load()
	if f == nil {
		return false
	}
	f.add(db, key)
	return f.created.Add(1) > f.capacity
}

// fillKeyFilter adds every stored key (T keys) of s to f, stopping early
// when s stops (false then), and sets f.from.
func fillKeyFilter(s *Store, f *keyFilter) (bool, error) {
	stop := s.stop
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{byte(codec.TagMeta)}, UpperBound: []byte{byte(codec.TagMeta) + 1}})
	if err != nil {
		return false, err
	}
	defer it.Close()
	// No group began its commit after this load: it is at least the
	// iterator's state.
	f.from = s.applying.Load()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if n++; n%4096 == 0 {
			select {
			case <-stop:
				return false, nil
			default:
			}
		}
		d, err := codec.DecodeKey(it.Key())
		if err != nil {
			return false, err
		}
		f.add(d.DB, d.Key)
	}
	return true, it.Error()
}

// fillFilter adds the stored keys to f, then lets reads consult it. It
// runs once, in the background, from Open.
func (s *Store) fillFilter(f *keyFilter) {
	defer s.wg.Done()
	ok, err := fillKeyFilter(s, f)
	if err != nil {
		s.opts.Logger.Warn("key filter: scan failed; absent keys are looked up", "err", err)
		return
	}
	f.ready.Store(ok)
}

// rebuildFilter replaces the current filter, which has taken more new keys
// than its capacity, with one sized for twice the live keys. The new filter
// starts taking the writer's new keys from inside a write decision, so
// every creation staged before is committed by the time the scan starts
// (no key can be missed by both); it replaces the current one from inside
// another.
func (s *Store) rebuildFilter() {
	defer s.wg.Done()
	defer s.filters.rebuilding.Store(false)
	var keys int64
	for i := range s.counts {
		keys += s.counts[i].keys.Load()
	}
	nf := newKeyFilter(2 * keys)
	onWriter := func(fn func()) error {
		_, err := s.Write(func(*View) ([]codec.Event, error) { fn(); return nil, nil })
		return err
	}
	if onWriter(func() { s.filters.next.Store(nf) }) != nil {
		return
	}
	ok, err := fillKeyFilter(s, nf)
	if err != nil || !ok {
		if err != nil {
			s.opts.Logger.Warn("key filter: rebuild failed", "err", err)
		}
		_ = onWriter(func() { s.filters.next.Store(nil) })
		return
	}
	nf.ready.Store(true)
	_ = onWriter(func() {
		s.filters.cur.Store(nf)
		s.filters.next.Store(nil)
	})
}
