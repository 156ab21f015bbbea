package broker

import (
	"sync"
	"sync/atomic"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
)

// watches is the WATCH registry: which connections watch which keys. The
// writer marks a connection dirty (its next EXEC aborts) when a write it
// decides touches a key the connection watches; WATCH registers inside a
// write decision, so every write decided after it is seen and every write
// decided before it has committed when WATCH replies.
//
// A write touches a key when it emits an event for it that changes the key
// itself: its value, metadata or TTL, its entries, fields or members, or
// its deletion (codec ops m, d, a, x, t, h, H, s, S). Consumer-group changes do not touch the stream
// (Redis 7.0 signals none of XREADGROUP, XACK, XCLAIM, XAUTOCLAIM, XGROUP),
// nor do writes that change nothing (they emit no events). FLUSHDB and
// FLUSHALL touch the watched keys that existed when watched (a key created
// since has touched its watchers already). XSETID emits the stream's
// metadata and so touches it, where Redis 7.0 does not.
//
// It is a cache: a restart ends every connection and its watches.
type watches struct {
	n    atomic.Int64 // registered keys: the writer skips the lock at 0
	mu   sync.Mutex   // ordered after the writer: held only briefly, never calls into it
	keys map[waitKey]map[*conn]*watchedKey
}

// watchedKey is one key a connection watches.
type watchedKey struct {
	key waitKey
	// existed: the key was stored (live or past its TTL) when watched;
	// expired: it was past its TTL then (Redis's watchedKey.expired).
	existed, expired bool
}

func newWatches() *watches { return &watches{keys: map[waitKey]map[*conn]*watchedKey{}} }

// add registers c's watch of wk (again: no-op).
func (w *watches) add(c *conn, wk watchedKey) {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.keys[wk.key]
	if m == nil {
		m = map[*conn]*watchedKey{}
		w.keys[wk.key] = m
	}
	if _, ok := m[c]; ok {
		return
	}
	k := wk
	m[c] = &k
	c.watched = append(c.watched, &k)
	w.n.Add(1)
}

// clear drops every watch of c and its dirty mark (UNWATCH, EXEC, DISCARD,
// connection end).
func (w *watches) clear(c *conn) {
	if len(c.watched) > 0 {
		w.mu.Lock()
		for _, k := range c.watched {
			if m := w.keys[k.key]; m != nil {
				delete(m, c)
				if len(m) == 0 {
					delete(w.keys, k.key)
				}
				w.n.Add(-1)
			}
		}
		w.mu.Unlock()
		clear(c.watched)
		c.watched = c.watched[:0]
	}
	c.dirty.Store(false)
}

// touch marks dirty every connection watching a key that events touch. It
// runs on the writer goroutine for each write (materialize.ReadyFunc), with
// v seeing the write. Watches name logical dbs; events carry storage dbs.
func (w *watches) touch(v *materialize.View, events []codec.Event) {
	if w.n.Load() == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	edb := newEventDBs(events, v.LogicalDB)
	for i, e := range events {
		switch e.Op {
		case codec.OpSetMeta, codec.OpDelKey, codec.OpXAdd, codec.OpXDel, codec.OpXTrim,
			codec.OpHSet, codec.OpHDel, codec.OpSAdd, codec.OpSRem, codec.OpLSet, codec.OpLDel,
			codec.OpZAdd, codec.OpZRem:
			for c := range w.keys[waitKey{edb.at(i), string(e.Key)}] {
				c.dirty.Store(true)
			}
		case codec.OpFlushDB, codec.OpFlushAll:
			db := edb.at(i)
			for k, m := range w.keys {
				if e.Op == codec.OpFlushDB && k.db != db {
					continue
				}
				for c, wk := range m {
					if wk.existed {
						c.dirty.Store(true)
					}
				}
			}
		case codec.OpSwapDB:
			w.touchSwapped(v, e.DB, e.Args[0][0])
		}
	}
}

// touchSwapped marks dirty the watchers of a key of db a or b that exists
// in either (Redis's touchAllWatchedKeysInDb, called for both dbs by
// SWAPDB): the key's value changed, or appeared, or vanished.
func (w *watches) touchSwapped(v *materialize.View, a, b uint8) {
	for k, m := range w.keys {
		if k.db != a && k.db != b {
			continue
		}
		dirty := false
		for _, db := range [2]uint8{a, b} {
			if _, ok, err := v.Meta(v.StorageDB(db), []byte(k.key)); ok || err != nil {
				dirty = true // an unreadable key counts as touched
				break
			}
		}
		if !dirty {
			continue
		}
		for c := range m {
			c.dirty.Store(true)
		}
	}
}

// expiredSince reports whether a key c watches, live when watched, has
// passed its TTL by v's time: Redis's isWatchedKeyExpired, which makes EXEC
// abort although no write has deleted the key yet.
func (c *conn) expiredSince(v *materialize.View) (bool, error) {
	for _, k := range c.watched {
		if k.expired {
			continue
		}
		_, _, del, err := v.MetaForWrite(v.StorageDB(k.key.db), []byte(k.key.key))
		if err != nil {
			return false, err
		}
		if len(del) > 0 {
			return true, nil
		}
	}
	return false, nil
}
