package materialize

import (
	"fmt"
	"testing"

	"github.com/sediment-dev/sediment/codec"
)

// stringMeta is the OpSetMeta event of a string key with value val.
func stringMeta(key, val string) codec.Event {
	return codec.SetMetaEvent(0, []byte(key), codec.Meta{Type: codec.TypeString, Value: []byte(val)}, 0)
}

// storedString returns k's stored string value in Pebble, or "-" when its
// M key is absent.
func storedString(t *testing.T, s *Store, k string) string {
	t.Helper()
	raw, ok, err := RawGet(s, codec.MetaKey(0, []byte(k)))
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return "-"
	}
	m, err := codec.DecodeMeta(raw)
	if err != nil {
		t.Fatal(err)
	}
	return string(m.Value)
}

// TestMetaWrittenOncePerGroup: a group that sets a key's metadata several
// times puts one M key in its batch, the last, and the group's reads see
// the last one staged.
func TestMetaWrittenOncePerGroup(t *testing.T) {
	s := openTemp(t)
	s.mu.Lock() // the writer is idle: this test is the group
	defer s.mu.Unlock()
	b := s.db.NewIndexedBatch()
	defer b.Close()
	s.beginGroup()
	v := &View{r: b, cache: s.cache, staged: &s.staged, iters: &s.iters, dbm: s.staged.dbBase, filters: &s.filters}
	for i := range 5 {
		for _, k := range []string{"a", "b"} {
			if err := s.stage(v, b, stringMeta(k, fmt.Sprintf("%s%d", k, i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := b.Count(); n != 0 {
		t.Fatalf("10 metadata writes staged %d keys before the seal, want 0", n)
	}
	for _, k := range []string{"a", "b"} {
		m, ok, err := v.Meta(0, []byte(k))
		if err != nil || !ok || string(m.Value) != k+"4" {
			t.Fatalf("%s within the group: %q %v %v, want %s4", k, m.Value, ok, err, k)
		}
	}
	if err := s.seal(b, s.seq+1); err != nil {
		t.Fatal(err)
	}
	// a, b, the key count of db 0 and the applied sequence.
	if n := b.Count(); n != 4 {
		t.Fatalf("the sealed batch holds %d keys, want 4", n)
	}
	for _, k := range []string{"a", "b"} {
		val, closer, err := b.Get(codec.MetaKey(0, []byte(k)))
		if err != nil {
			t.Fatalf("%s not in the batch: %v", k, err)
		}
		m, err := codec.DecodeMeta(val)
		closer.Close()
		if err != nil || string(m.Value) != k+"4" {
			t.Fatalf("%s in the batch: %q %v, want %s4", k, m.Value, err, k)
		}
	}
	s.beginGroup() // nothing of it is applied
}

// TestDeferredMetaBeforeReadsAndDeletes: within one decision, an iterator
// over the M keys sees a key just set; DEL after SET deletes it, COPY
// after SET copies what was set, FLUSHDB after SET flushes it, and SET
// after DEL sets it again, however the writes of M keys are deferred.
func TestDeferredMetaBeforeReadsAndDeletes(t *testing.T) {
	s := openTemp(t)
	var seen []string
	if _, err := s.WriteTxn(func(tx *Txn) error {
		if err := tx.Emit(stringMeta("gone", "1"), stringMeta("kept", "1"), stringMeta("kept", "2")); err != nil {
			return err
		}
		lo := []byte{byte(codec.TagMeta)}
		if err := tx.View().IterateKeys(lo, codec.PrefixEnd(lo), func(k, val []byte) (bool, error) {
			m, err := codec.DecodeMeta(val)
			seen = append(seen, string(m.Value))
			return true, err
		}); err != nil {
			return err
		}
		return tx.Emit(
			codec.DelKeyEvent(0, []byte("gone"), codec.TypeString, 0),
			stringMeta("gone2", "1"),
			codec.DelKeyEvent(0, []byte("gone2"), codec.TypeString, 0),
			stringMeta("src", "3"),
			codec.DelKeyEvent(0, []byte("again"), codec.TypeString, 0),
			stringMeta("again", "4"),
		)
	}); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(seen); got != "[1 2]" && got != "[2 1]" {
		t.Fatalf("the iterator saw %s, want the values 1 and 2", got)
	}
	want := map[string]string{"gone": "-", "gone2": "-", "kept": "2", "src": "3", "again": "4"}
	for k, w := range want {
		if got := storedString(t, s, k); got != w {
			t.Fatalf("%s: stored %q, want %q", k, got, w)
		}
	}
	// SET then FLUSHDB in one group.
	if _, err := s.WriteTxn(func(tx *Txn) error {
		return tx.Emit(stringMeta("kept", "5"), codec.FlushDBEvent(0, []uint16{codec.Slot([]byte("kept"))}))
	}); err != nil {
		t.Fatal(err)
	}
	if got := storedString(t, s, "kept"); got != "-" {
		t.Fatalf("kept after SET and FLUSHDB in one group: stored %q", got)
	}
}
