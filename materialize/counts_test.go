package materialize_test

import (
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
)

func counts(t *testing.T, v *materialize.View, db uint8, keys, expires int64) {
	t.Helper()
	if k, e := v.KeyCount(db); k != keys || e != expires {
		t.Errorf("db %d counts %d keys, %d with TTL; want %d, %d", db, k, e, keys, expires)
	}
}

// TestKeyCounts: the counters follow creations, overwrites, TTL changes,
// deletions, expired keys (counted until deleted, as Redis), flushes and
// Txns, and survive a restart.
func TestKeyCounts(t *testing.T) {
	dir := t.TempDir()
	c := newClock(t0)
	s, err := materialize.Open(materialize.Options{Dir: dir, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	setString(t, s, 0, "a", "v", 0, 0)
	setString(t, s, 0, "b", "v", t0+10, 0)
	setString(t, s, 0, "b", "w", t0+20, t0+10) // overwrite: same key, still a TTL
	setString(t, s, 1, "c", "v", 0, 0)
	counts(t, s.View(), 0, 2, 1)
	counts(t, s.View(), 1, 1, 0)
	setString(t, s, 0, "a", "v", t0+5, 0) // gains a TTL
	counts(t, s.View(), 0, 2, 2)
	c.Advance(30) // both expired: still counted until deleted
	counts(t, s.View(), 0, 2, 2)
	write(t, s, codec.DelKeyEvent(0, []byte("a"), codec.TypeString, t0+5))
	counts(t, s.View(), 0, 1, 1)
	// A Txn sees its own changes; a view outside does not until commit.
	if _, err := s.WriteTxn(func(tx *materialize.Txn) error {
		for i := range 3 {
			if err := tx.Emit(codec.SetMetaEvent(0, fmt.Appendf(nil, "t%d", i), strMeta("v", 0), 0)); err != nil {
				return err
			}
		}
		if k, _ := tx.View().KeyCount(0); k != 4 {
			return fmt.Errorf("inside the Txn: %d keys, want 4", k)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	counts(t, s.View(), 0, 4, 1)
	write(t, s, codec.FlushDBEvent(1, []uint16{codec.Slot([]byte("c"))}))
	counts(t, s.View(), 1, 0, 0)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = materialize.Open(materialize.Options{Dir: dir, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	counts(t, s.View(), 0, 4, 1)
	counts(t, s.View(), 1, 0, 0)
	write(t, s, codec.FlushAllEvent())
	counts(t, s.View(), 0, 0, 0)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestKeyCountsLegacyStore: a store written before the counters (no K
// keys) is counted once at Open.
func TestKeyCountsLegacyStore(t *testing.T) {
	dir := t.TempDir()
	c := newClock(t0)
	s, err := materialize.Open(materialize.Options{Dir: dir, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		setString(t, s, 0, fmt.Sprint("k", i), "v", int64(i%2)*(t0+100), 0)
	}
	setString(t, s, 3, "x", "v", 0, 0)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Remove the K keys, as a store from before the counters has none.
	db, err := pebble.Open(dir, &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteRange([]byte{byte(codec.TagCount)}, []byte{byte(codec.TagCount) + 1}, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = materialize.Open(materialize.Options{Dir: dir, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	counts(t, s.View(), 0, 5, 2)
	counts(t, s.View(), 3, 1, 0)
}
