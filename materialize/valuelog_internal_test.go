package materialize

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sediment-dev/sediment/codec"
)

// bigValue is a value of n bytes that names i, so that a value read from
// the wrong place shows.
func bigValue(i, n int) []byte {
	return bytes.Repeat(fmt.Appendf(nil, "%07d|", i), n/8)
}

// storedMeta returns the metadata of key as Pebble holds it.
func storedMeta(t *testing.T, s *Store, key string) codec.Meta {
	t.Helper()
	raw, closer, err := s.db.Get(codec.MetaKey(0, []byte(key)))
	if err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	defer closer.Close()
	m, err := codec.DecodeMeta(raw)
	if err != nil {
		t.Fatal(err)
	}
	m.Value = bytes.Clone(m.Value)
	return m
}

// setValue commits SET key value.
func setValue(t *testing.T, s *Store, key string, val []byte) {
	t.Helper()
	_, must := eventWriters(t, s)
	must(codec.SetMetaEvent(0, []byte(key), codec.Meta{Type: codec.TypeString, Value: val}, 0))
}

// readAll checks every key of want through Meta (a read view) and MetaWith.
func readAll(t *testing.T, s *Store, want map[string][]byte) {
	t.Helper()
	for k, val := range want {
		v := s.ReadView()
		m, ok, err := v.Meta(0, []byte(k))
		if err != nil || !ok || !bytes.Equal(m.Value, val) {
			t.Fatalf("Meta %s: %v %v, %d bytes, want %d", k, ok, err, len(m.Value), len(val))
		}
		v.Close()
		v = s.ReadView()
		ok, err = v.MetaWith(0, []byte(k), func(m codec.Meta, _ bool) error {
			got, err := valueOf(v, m)
			if err == nil && !bytes.Equal(got, val) {
				return fmt.Errorf("%d bytes, want %d", len(got), len(val))
			}
			return err
		})
		if err != nil || !ok {
			t.Fatalf("MetaWith %s: %v %v", k, ok, err)
		}
		v.Close()
	}
}

// TestValueRefs: a value of ValueLogMin bytes or more is stored as a
// reference into the change log, with its R key; a shorter one inline.
// Both read back through the cache, and without it after a reopen (a
// read that needs no value reads none).
func TestValueRefs(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Dir: dir}
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{
		"small": bigValue(1, 4088), "edge": bigValue(2, 4096), "big": bigValue(3, 300_000),
		"multi\x00a": bigValue(4, 8192), "multi\x00b": bigValue(5, 8192),
	}
	for _, k := range []string{"small", "edge", "big"} {
		setValue(t, s, k, want[k])
	}
	// Two large values in one record: two references into one frame.
	_, must := eventWriters(t, s)
	must(codec.SetMetaEvent(0, []byte("multi\x00a"), codec.Meta{Type: codec.TypeString, Value: want["multi\x00a"]}, 0),
		codec.SetMetaEvent(0, []byte("multi\x00b"), codec.Meta{Type: codec.TypeString, Value: want["multi\x00b"]}, 0))
	// One value shared by two events stays inline in both.
	shared := bigValue(6, 8192)
	want["shared1"], want["shared2"] = shared, shared
	must(codec.SetMetaEvent(0, []byte("shared1"), codec.Meta{Type: codec.TypeString, Value: shared}, 0),
		codec.SetMetaEvent(0, []byte("shared2"), codec.Meta{Type: codec.TypeString, Value: shared}, 0))
	checkStored := func(s *Store) {
		t.Helper()
		for k, val := range want {
			m := storedMeta(t, s, k)
			isRef := len(val) >= 4096 && k != "shared1" && k != "shared2"
			if m.Ref.IsZero() == isRef {
				t.Fatalf("%s (%d bytes): reference %+v", k, len(val), m.Ref)
			}
			if !isRef {
				continue
			}
			owner, closer, err := s.db.Get(codec.ValueRefKey(m.Ref.Segment, m.Ref.Offset))
			if err != nil {
				t.Fatalf("%s: R key: %v", k, err)
			}
			if !bytes.Equal(owner, append([]byte{0}, k...)) {
				t.Fatalf("%s: R key names %q", k, owner)
			}
			closer.Close()
		}
	}
	checkStored(s)
	readAll(t, s, want)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	// A header read (SET's) of a fresh store reads no value.
	v := s.ReadView()
	if m, ok, partial, err := v.rawMetaPartial(0, []byte("big"), false, false); err != nil || !ok || !partial || m.Value != nil {
		t.Fatalf("header read: %v %v partial %v, %d bytes", ok, err, partial, len(m.Value))
	}
	v.Close()
	readAll(t, s, want)
	checkStored(s)
	if rep, err := s.Check(0); err != nil || rep.NumViolations != 0 {
		t.Fatalf("check: %v %+v", err, rep.Violations)
	}
	s.Close()
	// The replay of values after a crash: TestChangeLogReopenReplays
	// (crashValue).
}

// TestValueRefsRetention: as retention removes segments, the values keys
// still reference there move into the store (values overwritten or
// deleted since do not); every value reads back, the R keys of removed
// segments are gone, and the store checks clean, before and after a
// reopen.
func TestValueRefsRetention(t *testing.T) {
	opts := Options{Dir: t.TempDir(), ChangeLogSegmentSize: 64 << 10, ChangeLogRetention: 16}
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{}
	_, must := eventWriters(t, s)
	for i := range 10 {
		k := fmt.Sprint("static", i)
		want[k] = bigValue(i, 8192)
		setValue(t, s, k, want[k])
	}
	setValue(t, s, "gone", bigValue(99, 8192))
	must(codec.DelKeyEvent(0, []byte("gone"), codec.TypeString, 0))
	first := s.log.firstSeq()
	for i := range 400 {
		want["hot"] = bigValue(1000+i, 8192)
		setValue(t, s, "hot", want["hot"])
		if i%50 == 0 {
			readAll(t, s, want)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.StorageStats().ValuesInlined < 10 || s.log.firstSeq() == first || s.pruning.Load() {
		if time.Now().After(deadline) {
			t.Fatalf("retention: %d values inlined, first segment %d (was %d)", s.StorageStats().ValuesInlined, s.log.firstSeq(), first)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := s.StorageStats().ValuesInlined; n != 10 {
		t.Errorf("%d values moved into the store, want the 10 static ones", n)
	}
	for i := range 10 {
		if m := storedMeta(t, s, fmt.Sprint("static", i)); !m.Ref.IsZero() {
			t.Fatalf("static%d still references segment %d", i, m.Ref.Segment)
		}
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{'R'}, UpperBound: codec.ValueRefKey(s.log.firstSeq(), 0)})
	if err != nil {
		t.Fatal(err)
	}
	if it.First() {
		t.Errorf("R key %q of a removed segment", it.Key())
	}
	it.Close()
	readAll(t, s, want)
	if _, ok, _ := s.ReadView().Meta(0, []byte("gone")); ok {
		t.Error("a deleted key came back")
	}
	if rep, err := s.Check(0); err != nil || rep.NumViolations != 0 {
		t.Fatalf("check: %v %+v", err, rep.Violations)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	readAll(t, s, want)
}

// TestValueRefsPinnedView: a pinned state that references a value in a
// segment retention removes keeps that segment until it closes, and reads
// the value meanwhile.
func TestValueRefsPinnedView(t *testing.T) {
	s, err := Open(Options{Dir: t.TempDir(), ChangeLogSegmentSize: 64 << 10, ChangeLogRetention: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	old := bigValue(1, 8192)
	setValue(t, s, "k", old)
	ref := storedMeta(t, s, "k").Ref
	p, err := s.PinState()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		setValue(t, s, "k", bigValue(2+i, 8192))
	}
	// Retention's inlining removes the old value's R key (k references a
	// newer one), then waits for p.
	rk := codec.ValueRefKey(ref.Segment, ref.Offset)
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, closer, err := s.db.Get(rk)
		if errors.Is(err, pebble.ErrNotFound) {
			break
		}
		if err == nil {
			closer.Close()
		}
		if time.Now().After(deadline) {
			t.Fatal("retention did not reach the old value's segment")
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	m, ok, err := p.View().Meta(0, []byte("k"))
	if err != nil || !ok || !bytes.Equal(m.Value, old) {
		t.Fatalf("pinned read: %v %v, %d bytes", ok, err, len(m.Value))
	}
	if first := s.log.firstSeq(); first > ref.Segment {
		t.Fatalf("segment %d removed under a pinned state (first now %d)", ref.Segment, first)
	}
	p.Close()
	for s.log.firstSeq() <= ref.Segment {
		if time.Now().After(deadline) {
			t.Fatal("retention did not go on once the pinned state closed")
		}
		setValue(t, s, "k", bigValue(1, 8192))
		time.Sleep(5 * time.Millisecond)
	}
}

// TestValueRefsCheckpoint: a checkpoint keeps the segments its references
// point into, the last one whole, so that the store opened from it reads
// every value.
func TestValueRefsCheckpoint(t *testing.T) {
	for _, segSize := range []int64{64 << 20, 64 << 10} {
		t.Run(fmt.Sprint(segSize), func(t *testing.T) {
			s, err := Open(Options{Dir: t.TempDir(), ChangeLogSegmentSize: segSize})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			want := map[string][]byte{}
			for i := range 40 {
				k := fmt.Sprint("k", i%25)
				want[k] = bigValue(i, 8192+i)
				setValue(t, s, k, want[k])
			}
			if err := s.db.Flush(); err != nil { // the checkpoint's A: past the first records
				t.Fatal(err)
			}
			setValue(t, s, "last", bigValue(100, 5000))
			want["last"] = bigValue(100, 5000)
			dest := filepath.Join(t.TempDir(), "cp")
			if _, err := s.Checkpoint(dest); err != nil {
				t.Fatal(err)
			}
			c, err := Open(Options{Dir: dest})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			readAll(t, c, want)
			if rep, err := c.Check(0); err != nil || rep.NumViolations != 0 {
				t.Fatalf("check: %v %+v", err, rep.Violations)
			}
		})
	}
}

// TestValueReadIgnoresLogReaders: a value read takes no log-wide lock, so
// it does not wait behind a pruning that waits for a long log read (the
// feed's capture holds the readers lock while JetStream acknowledges).
func TestValueReadIgnoresLogReaders(t *testing.T) {
	s := openTemp(t)
	val := bigValue(1, 300_000) // past the cache's copies: read from the log
	setValue(t, s, "k", val)
	s.log.readers.RLock() // a long log read
	pruning := make(chan struct{})
	go func() { // a pruning waiting for it
		s.log.readers.Lock()
		s.log.readers.Unlock()
		close(pruning)
	}()
	time.Sleep(20 * time.Millisecond)
	done := make(chan error, 1)
	go func() {
		v := s.ReadView()
		defer v.Close()
		m, ok, err := v.Meta(0, []byte("k"))
		if err == nil && (!ok || !bytes.Equal(m.Value, val)) {
			err = fmt.Errorf("read %v, %d bytes", ok, len(m.Value))
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Error("the value read waited for the log's readers lock")
	}
	s.log.readers.RUnlock()
	<-pruning
}

// TestMetaWithValueGone: retention moves a value into the store and
// removes its segment between MetaWith's lookup and the caller's
// ReadValue; MetaWith looks the key up once more, hands the value over
// from the store, and counts one hit.
func TestMetaWithValueGone(t *testing.T) {
	opts := Options{Dir: t.TempDir(), ChangeLogSegmentSize: 64 << 10}
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	want := bigValue(1, 8192)
	setValue(t, s, "k", want)
	for i := range 20 {
		setValue(t, s, "filler", bigValue(2+i, 8192))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(opts); err != nil { // nothing cached
		t.Fatal(err)
	}
	defer s.Close()
	v := s.View()
	defer v.Close()
	var lookups Lookups
	v.CountLookups(&lookups)
	calls := 0
	var got []byte
	ok, err := v.MetaWith(0, []byte("k"), func(m codec.Meta, _ bool) error {
		calls++
		if calls == 1 {
			if m.Ref.IsZero() {
				return fmt.Errorf("the first lookup found the value inline, not in the change log")
			}
			keep := s.log.dropLimit(s.committed.Load() + 1)
			if keep <= m.Ref.Segment {
				return fmt.Errorf("segment %d cannot be dropped (keep %d)", m.Ref.Segment, keep)
			}
			if _, err := s.inlineValues(keep); err != nil {
				return err
			}
			if err := s.log.dropBefore(keep, func() uint64 { return keep }); err != nil {
				return err
			}
		}
		val, err := valueOf(v, m)
		got = val
		return err
	})
	if err != nil || !ok || calls != 2 || !bytes.Equal(got, want) {
		t.Fatalf("MetaWith: found %v, err %v, %d calls, %d bytes; want the value of %d bytes on the second call", ok, err, calls, len(got), len(want))
	}
	if h, m := lookups.Hits.Load(), lookups.Misses.Load(); h != 1 || m != 0 {
		t.Fatalf("one GET counted %d hits and %d misses, want one hit", h, m)
	}
}
