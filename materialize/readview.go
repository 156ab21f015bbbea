package materialize

import (
	"bytes"
	"errors"
	"io"

	"github.com/cockroachdb/pebble/v2"
)

// reader is what a View reads: the DB (the latest state), the writer's
// indexed batch, or a read view's pinned state.
type reader interface {
	Get(key []byte) ([]byte, io.Closer, error)
	NewIter(o *pebble.IterOptions) (*pebble.Iterator, error)
}

// readPin is the state a read view sees, fixed at its first read, so that
// a command's reads (a collection's metadata, then its members; a range
// summed from several index keys; MGET's keys) all see one committed state,
// as Redis's single thread would, however many groups commit meanwhile.
//
// The Pebble state is an iterator (root) whose clones and point lookups
// see the state it was made at. The metadata cache serves the view only
// when the view's state is known exactly, and only with entries that hold
// at it:
//
//   - a group stores applying before its Pebble commit, and committed
//     after it has published the group's metadata to the cache;
//   - a cache entry holds at state a if its seq is at most a: every group up
//     to a published its metadata before committed reached a, and a later
//     change of the key carries a later seq;
//   - so after loading committed (a) and then applying, equal, the view
//     reads state a (soft) with no Pebble state of its own: the cache, and
//     point lookups of the latest state each followed by a load of
//     applying: still a means no group began its commit before the lookup
//     read, which thus read state a. That spares GET, MGET and HGET an
//     iterator. Its first iteration makes root and checks applying the same
//     way (hard from then on);
//   - when a check finds applying moved, the view returns ErrStateMoved:
//     it served reads of a that no later state need hold, and the command
//     must run again with a view pinned at once (Store.PinnedReadView);
//   - a view that meets a commit in flight at its first read (applying is
//     not committed), or is pinned at once, makes root then (hard): if
//     applying still equals the committed a loaded before, root holds a and
//     the cache serves it; otherwise it reads metadata from root only.
type readPin struct {
	s     *Store
	state pinState
	eager bool             // hard at the first read, never soft
	root  *pebble.Iterator // hard only
	epoch uint32           // hard only: its registration in Store.pins
	seq   uint64           // the committed state read (when cache)
	cache bool             // whether the metadata cache serves the view
	lent  bool             // root serves an iteration (View.borrowRoot)
}

type pinState uint8

const (
	unpinned pinState = iota
	soft              // reads the cache at seq; no Pebble state yet
	hard              // root made
)

// ErrStateMoved is returned by a ReadView's first Pebble read when it has
// already served cached metadata and a commit has begun since: the command
// must be run again with Store.PinnedReadView, which cannot return it.
// It never reaches a client.
var ErrStateMoved = errors.New("materialize: read view state moved")

// ReadView returns a View that reads one committed state, fixed at its first
// read: the latest state then. It may return ErrStateMoved (readPin). The
// caller must Close it; once it has read from Pebble it keeps that state's
// memtables and sstables alive until then, so it must not be held across a
// wait.
func (s *Store) ReadView() *View { return s.ReadViewIn(new(View), false) }

// PinnedReadView is ReadView, but pins the Pebble state at its first read
// and never returns ErrStateMoved.
func (s *Store) PinnedReadView() *View { return s.ReadViewIn(new(View), true) }

// ReadViewIn is ReadView (PinnedReadView with eager) made in v, a View the
// caller reuses once it closed the ReadView it held before: a connection's
// commands, one at a time, then allocate none.
func (s *Store) ReadViewIn(v *View, eager bool) *View {
	*v = View{vlog: s.log, clock: s.opts.Now, cache: s.cache, rfields: s.rfields, iters: &s.iters, counts: &s.counts, dbm: s.dbm.Load(), filters: &s.filters}
	v.pinned_ = readPin{s: s, eager: eager}
	v.pin = &v.pinned_
	return v
}

// PinEagerly makes a ReadView that is read again after Close (or first
// read now) pin its Pebble state at its first read, so that it never
// returns ErrStateMoved: for a command that can no longer be run again.
func (v *View) PinEagerly() {
	if v.pin != nil {
		v.pin.eager = true
	}
}

// Close releases a ReadView's state; on other views it does nothing. A
// ReadView read again after Close reads a new state, which it holds until
// it is closed again.
func (v *View) Close() error {
	p := v.pin
	if p == nil {
		return nil
	}
	var err error
	if p.root != nil {
		err = p.root.Close()
		p.s.pins.exit(p.epoch)
	}
	p.root, p.state, p.lent, v.r = nil, unpinned, false, nil
	return err
}

// softPinned starts a ReadView's state at a cache read: soft when the
// state is known exactly, else hard at once.
func (v *View) softPinned() error {
	p := v.pin
	if p == nil || p.state != unpinned {
		return nil
	}
	if !p.eager {
		a := p.s.committed.Load()
		if p.s.applying.Load() == a {
			p.state, p.seq, p.cache = soft, a, true
			return nil
		}
	}
	return v.pinned()
}

// get is pebble.Reader's Get on the view's state: a soft view's lookup
// reads the latest state and holds only if no commit began (readPin).
func (v *View) get(k []byte) ([]byte, io.Closer, error) {
	if err := v.softPinned(); err != nil {
		return nil, nil, err
	}
	p := v.pin
	if p == nil || p.state != soft {
		return v.r.Get(k)
	}
	val, closer, err := p.s.db.Get(k)
	if p.s.applying.Load() != p.seq {
		if err == nil {
			closer.Close()
		}
		return nil, nil, ErrStateMoved
	}
	return val, closer, err
}

// pinned makes a ReadView's Pebble state at a Pebble read (readPin).
func (v *View) pinned() error {
	p := v.pin
	if p == nil || p.state == hard {
		return nil
	}
	epoch := p.s.pins.enter()
	if p.state == soft {
		root, err := p.s.db.NewIter(nil)
		if err != nil {
			p.s.pins.exit(epoch)
			return err
		}
		if p.s.applying.Load() != p.seq {
			root.Close()
			p.s.pins.exit(epoch)
			return ErrStateMoved
		}
		p.root, p.state, p.epoch = root, hard, epoch
		v.r = pinnedReader{p}
		return nil
	}
	a := p.s.committed.Load()
	root, err := p.s.db.NewIter(nil)
	if err != nil {
		p.s.pins.exit(epoch)
		return err
	}
	p.root, p.seq, p.state, p.epoch = root, a, hard, epoch
	p.cache = p.s.applying.Load() == a
	v.r = pinnedReader{p}
	return nil
}

// cacheSeq returns the newest cache entry sequence the view may use, and
// false when the cache must not serve it.
func (v *View) cacheSeq() (uint64, bool) {
	if v.pin == nil {
		return ^uint64(0), v.cache != nil
	}
	return v.pin.seq, v.cache != nil && v.pin.cache
}

// pinnedReader reads a pinned state: lookups position the root iterator
// (a clone of it while an iteration holds it: View.borrowRoot), iterators
// are its clones.
type pinnedReader struct{ p *readPin }

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

// Get is pebble.Reader's Get at the pinned state. The value is valid until
// the next read of the view, or until the closer is closed.
func (r pinnedReader) Get(key []byte) ([]byte, io.Closer, error) {
	it := r.p.root
	var closer io.Closer = nopCloser{}
	if r.p.lent {
		c, err := it.Clone(pebble.CloneOptions{IterOptions: &pebble.IterOptions{}})
		if err != nil {
			return nil, nil, err
		}
		it, closer = c, c
	}
	if !it.SeekPrefixGE(key) || !bytes.Equal(it.Key(), key) {
		err := it.Error()
		closer.Close()
		if err != nil {
			return nil, nil, err
		}
		return nil, nil, pebble.ErrNotFound
	}
	val, err := it.ValueAndErr()
	if err != nil {
		closer.Close()
		return nil, nil, err
	}
	return val, closer, nil
}

// NewIter returns an iterator over the pinned state.
func (r pinnedReader) NewIter(o *pebble.IterOptions) (*pebble.Iterator, error) {
	if o == nil {
		o = &pebble.IterOptions{}
	}
	return r.p.root.Clone(pebble.CloneOptions{IterOptions: o})
}
