package groups

import (
	"slices"

	"github.com/sediment-dev/sediment/codec"
)

// run is an edit's copy of one of a group's runs (codec.Group.PELNext or
// TimeNext): the keys that follow the index's first key, in order. Every
// stored or staged key up to the run's last is in it, and complete says
// that no key lies beyond that last. Adding and removing keys keeps both
// true, so that when the first key leaves, the next comes from the run
// and no seek has to walk over the deletions the index has at its start.
//
// A run that does not know what follows the first key is empty and not
// complete; the first key's removal then needs a seek, which refills it.
type run[T comparable] struct {
	items    []T
	complete bool
	cmp      func(a, b T) int // the index's order
	on       bool             // false: the group keeps no run for this index
	// buf backs items while they fit (a trimmed run and one insertion):
	// an edit's runs cost no allocation.
	buf [codec.PELRunMax + 1]T
}

// init starts the run in place from a decoded one (copied): complete when
// it holds every key but the first (n keys in all). on false keeps the run
// unused.
func (r *run[T]) init(items []T, n uint64, cmp func(a, b T) int, on bool) {
	r.items = append(r.buf[:0], items...)
	r.complete, r.cmp, r.on = on && uint64(len(items))+1 == n, cmp, on
}

// empty resets the run for an index whose only key is the new first.
func (r *run[T]) empty() {
	r.items, r.complete = r.items[:0], r.on
}

// forget resets the run to unknown.
func (r *run[T]) forget() {
	r.items, r.complete = r.items[:0], false
}

// trim keeps at most codec.PELRunMax keys; a run cut short is no longer
// complete, but still holds every key up to its new last.
func (r *run[T]) trim() {
	if len(r.items) > codec.PELRunMax {
		r.items, r.complete = r.items[:codec.PELRunMax], false
	}
}

// displaced records a key that was first and is now second: x, the old
// first, comes before every key of the run.
func (r *run[T]) displaced(x T) {
	if !r.on {
		return
	}
	r.items = slices.Insert(r.items, 0, x)
	r.trim()
}

// add records a key added after the first.
func (r *run[T]) add(x T) {
	if !r.on {
		return
	}
	n := len(r.items)
	if n == 0 || r.cmp(x, r.items[n-1]) >= 0 {
		if r.complete {
			r.items = append(r.items, x)
			r.trim()
		}
		return
	}
	i, _ := slices.BinarySearchFunc(r.items, x, r.cmp)
	r.items = slices.Insert(r.items, i, x)
	r.trim()
}

// remove records a key removed that was not the first.
func (r *run[T]) remove(x T) {
	if i := slices.Index(r.items, x); i >= 0 {
		r.items = slices.Delete(r.items, i, i+1)
	}
}

// pop removes and returns the run's first key, the new first of the
// index; ok is false when the run is empty (the next first is unknown
// unless the run is complete: then there is none).
func (r *run[T]) pop() (x T, ok bool) {
	if len(r.items) == 0 {
		return x, false
	}
	x = r.items[0]
	r.items = slices.Delete(r.items, 0, 1)
	return x, true
}

// refill sets the run from a seek's result: keys, the first keys of the
// index in order after the new first (the stored ones the seek found,
// merged with the edit's own), and complete when the seek reached the
// index's end.
func (r *run[T]) refill(keys []T, complete bool) {
	if !r.on {
		return
	}
	r.items, r.complete = append(r.items[:0], keys...), complete
	r.trim()
}
