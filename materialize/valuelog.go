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

// Large string values live in the change log only (docs/rfcs/
// 20261129_value_log.md): a string's metadata locates its value in the
// frame of the record that set it (codec.ValueRef), and an R key per
// reference names the key (codec.ValueRefKey). The writer makes the
// references at seal (Store.noteValueRefs, overlay.flushMeta); views read
// them (View.loadValue, MetaWith). Before retention removes segments,
// inlineValues writes the values that keys still reference into their
// metadata, and the views pinned before that are waited for (pinEpochs).

// inlineChunk bounds the references one inlineSome moves while it holds
// the writer's lock: their count and the bytes of their values.
const (
	inlineChunk      = 256
	inlineChunkBytes = 16 << 20
)

// inlineValues moves into the store the values that keys still reference
// in the segments before the one whose first record is keep, and removes
// those segments' R keys: afterwards no metadata of the latest state
// locates a value in them. It takes the writer's lock a chunk at a time:
// new references only ever go to the last segment, so a chunk done stays
// done.
func (s *Store) inlineValues(keep uint64) (moved int, err error) {
	lower, upper := []byte{byte(codec.TagValueRef)}, codec.ValueRefKey(keep, 0)
	for lower != nil {
		var n int
		if n, lower, err = s.inlineSome(lower, upper); err != nil {
			return moved, err
		}
		moved += n
	}
	return moved, nil
}

// inlineSome is one chunk of inlineValues, from R key lower on: it returns
// how many values it moved and the R key to go on from (nil: done).
func (s *Store) inlineSome(lower, upper []byte) (moved int, next []byte, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken != nil {
		return 0, nil, s.broken
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return 0, nil, err
	}
	b := s.db.NewBatch()
	defer b.Close()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if n == inlineChunk || b.Len() >= inlineChunkBytes {
			next = bytes.Clone(it.Key())
			break
		}
		n++
		k, owner := it.Key(), it.Value()
		ok, err := s.inlineOne(b, k, owner)
		if err != nil {
			it.Close()
			return moved, nil, err
		}
		if ok {
			moved++
		}
		if err := b.Delete(k, nil); err != nil {
			it.Close()
			return moved, nil, err
		}
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return moved, nil, err
	}
	return moved, next, s.db.Apply(b, pebble.NoSync)
}

// inlineOne writes into b the metadata of the key that R key k names
// (owner: db|key) with its value inline, if that metadata still locates
// the value at k; ok reports that it did.
func (s *Store) inlineOne(b *pebble.Batch, k, owner []byte) (ok bool, err error) {
	segment, at, err := codec.DecodeValueRefKey(k)
	if err != nil || len(owner) == 0 {
		return false, fmt.Errorf("materialize: R key %q naming %q: %w", k, owner, codec.ErrCorrupt)
	}
	mk := codec.MetaKey(owner[0], owner[1:])
	raw, closer, err := s.db.Get(mk)
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil // deleted since: the R key is stale
	}
	if err != nil {
		return false, err
	}
	defer closer.Close()
	m, err := codec.DecodeMeta(raw)
	if err != nil {
		return false, err
	}
	if m.Ref.IsZero() || m.Ref.Segment != segment || m.Ref.Offset != at {
		return false, nil // overwritten since
	}
	val, err := s.log.readValue(m.Ref, nil)
	if err != nil {
		return false, fmt.Errorf("materialize: the value of %q for retention: %w", owner[1:], err)
	}
	m.Value, m.Ref = val, codec.ValueRef{}
	return true, b.Set(mk, codec.AppendMeta(make([]byte, 0, codec.MetaLen(m)), m), nil)
}

// pinEpochs counts the views whose Pebble state is pinned (hard read
// views, PinnedStates), in two epochs, so that retention can wait for
// those pinned before it moved values out of the segments it removes:
// such a view may still read a reference into one. A view enters the
// current epoch before it pins and exits when it closes; drain switches
// the epoch and waits for the previous one to empty.
type pinEpochs struct {
	cur atomic.Uint32
	n   [2]atomic.Int64
}

// enter registers a view about to pin its state; it returns the epoch
// for exit.
func (e *pinEpochs) enter() uint32 {
	for {
		c := e.cur.Load()
		e.n[c].Add(1)
		if e.cur.Load() == c {
			return c
		}
		e.n[c].Add(-1) // the epoch switched meanwhile: join the new one
	}
}

// exit ends a view's registration in epoch c.
func (e *pinEpochs) exit(c uint32) { e.n[c].Add(-1) }

// drain switches the epoch and waits until every view registered in the
// previous one has exited, or until stop is closed (then false). It warns
// through warn every warnAfter while it waits. One caller at a time
// (the pruner).
func (e *pinEpochs) drain(stop <-chan struct{}, warnAfter time.Duration, warn func(waited time.Duration, views int64)) bool {
	old := e.cur.Load()
	e.cur.Store(1 - old)
	start, warned := time.Now(), time.Duration(0)
	for {
		n := e.n[old].Load()
		if n == 0 {
			return true
		}
		if d := time.Since(start); d-warned >= warnAfter {
			warned = d
			warn(d, n)
		}
		select {
		case <-stop:
			return false
		case <-time.After(time.Millisecond):
		}
	}
}
