package materialize_test

import (
	"fmt"
	"math/rand/v2"
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

// TestKeyCountsRandom: the key counters match a model through random
// writes, several decisions to a commit group and Txns, each decision
// looking keys up before it emits their events (as MSET does), so that
// the staging of an event finds its key's previous state among the
// group's last lookups (overlay.lookedUp); deletions and FLUSHDB in the
// same groups change keys those lookups saw.
func TestKeyCountsRandom(t *testing.T) {
	c := newClock(t0)
	s := openMem(t, c)
	r := rand.New(rand.NewPCG(3, 4))
	keys := [][]byte{[]byte("a"), []byte("b"), []byte("c\x00"), []byte("d"), []byte("e"), []byte("f")}
	type state struct {
		exists   bool
		expireAt int64
	}
	var slots []uint16 // FLUSHDB's: every key's slot
	for _, k := range keys {
		slots = append(slots, codec.Slot(k))
	}
	var model [2]map[string]state
	for db := range model {
		model[db] = map[string]state{}
	}
	// decide returns a decision of op on keys ks of db, applying it to the
	// model as it emits (decisions of a group run in submission order).
	decide := func(op int, db uint8, ks [][]byte, ttl bool) func(v *materialize.View) ([]codec.Event, error) {
		return func(v *materialize.View) ([]codec.Event, error) {
			prev := make([]codec.Meta, len(ks))
			found := make([]bool, len(ks))
			for i, k := range ks { // look every key up first, as MSET does
				m, ok, err := v.Meta(db, k)
				if err != nil {
					return nil, err
				}
				prev[i], found[i] = m, ok
			}
			var evs []codec.Event
			for i, k := range ks {
				switch {
				case op == 0 && found[i]: // DEL
					evs = append(evs, codec.DelKeyEvent(db, k, codec.TypeString, prev[i].ExpireAtMs))
					delete(model[db], string(k))
				case op == 1 && i == 0: // FLUSHDB, then the other keys set
					evs = append(evs, codec.FlushDBEvent(db, slots))
					clear(model[db])
					for j := range found {
						found[j] = false
					}
				default: // SET, with or without a TTL
					var at int64
					if ttl {
						at = t0 + 1_000_000
					}
					prevAt := int64(0)
					if found[i] {
						prevAt = prev[i].ExpireAtMs
					}
					evs = append(evs, codec.SetMetaEvent(db, k, strMeta("v", at), prevAt))
					found[i], prev[i].ExpireAtMs = true, at
					model[db][string(k)] = state{true, at}
				}
			}
			return evs, nil
		}
	}
	for round := range 300 {
		var pend []*materialize.Pending
		for range 1 + r.IntN(5) {
			db := uint8(r.IntN(2))
			ks := make([][]byte, 1+r.IntN(4))
			for i := range ks {
				ks[i] = keys[r.IntN(len(keys))]
			}
			op := r.IntN(8)
			if op == 1 && r.IntN(4) != 0 {
				op = 2 // FLUSHDB seldom
			}
			pend = append(pend, s.Submit(decide(op, db, ks, r.IntN(2) == 0)))
		}
		for _, p := range pend {
			if _, err := p.Wait(); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		for db := range model {
			var n, e int64
			for _, st := range model[db] {
				n++
				if st.expireAt != 0 {
					e++
				}
			}
			counts(t, s.View(), uint8(db), n, e)
		}
		if t.Failed() {
			t.Fatalf("round %d", round)
		}
	}
}
