package materialize

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/sediment-dev/sediment/codec"
)

// copiedSum recounts the bytes of copied values each shard holds, and
// fails if a shard's count differs or passes its budget.
func copiedSum(t *testing.T, c *metaCache) int {
	t.Helper()
	total := 0
	for i := range c.shards {
		s := &c.shards[i]
		n := 0
		for _, e := range s.m {
			n += copiedLen(e)
		}
		if n != s.copied {
			t.Fatalf("shard %d holds %d bytes of copied values and counts %d", i, n, s.copied)
		}
		if n > metaCacheCopiedMax/metaCacheShards {
			t.Fatalf("shard %d holds %d bytes of copied values, over its budget %d", i, n, metaCacheCopiedMax/metaCacheShards)
		}
		total += n
	}
	return total
}

// TestMetaCacheCopiesMidSizeValues: a string value longer than
// metaCacheMaxValue and up to metaCacheMaxCopied is cached as a copy (a
// change to the source does not reach it), a longer one without its
// value; replacing and evicting entries keeps each shard's count of copied
// bytes exact and within its budget.
func TestMetaCacheCopiesMidSizeValues(t *testing.T) {
	c := newMetaCache()
	src := bytes.Repeat([]byte("a"), 1000)
	c.put(0, []byte("k"), codec.Meta{Type: codec.TypeString, Value: src}, true, 1)
	src[0] = 'b'
	e, ok := c.get(0, []byte("k"))
	if !ok || e.noValue || !bytes.Equal(e.meta.Value, bytes.Repeat([]byte("a"), 1000)) {
		t.Fatalf("1000-byte value of a's cached as %d bytes %.8q..., noValue %v", len(e.meta.Value), e.meta.Value, e.noValue)
	}
	c.put(0, []byte("big"), codec.Meta{Type: codec.TypeString, Value: make([]byte, metaCacheMaxCopied+1)}, true, 1)
	if e, ok := c.get(0, []byte("big")); !ok || !e.noValue || e.meta.Value != nil {
		t.Fatalf("a value over metaCacheMaxCopied cached with %d bytes, noValue %v", len(e.meta.Value), e.noValue)
	}
	if got := copiedSum(t, c); got != 1000 {
		t.Fatalf("copied bytes %d, want 1000", got)
	}
	// Replacements of one key, then many keys: past the budget.
	for i := range 3 {
		c.put(0, []byte("k"), codec.Meta{Type: codec.TypeString, Value: make([]byte, 2000+i)}, true, 2)
	}
	if got := copiedSum(t, c); got != 2002 {
		t.Fatalf("after replacing: copied bytes %d, want 2002", got)
	}
	val := make([]byte, metaCacheMaxCopied)
	for i := range 3 * metaCacheCopiedMax / len(val) {
		c.put(0, fmt.Appendf(nil, "k%d", i), codec.Meta{Type: codec.TypeString, Value: val}, true, 3)
	}
	if got := copiedSum(t, c); got < metaCacheCopiedMax/2 {
		t.Fatalf("after writing 3 budgets' worth: %d bytes cached, want most of the budget (%d)", got, metaCacheCopiedMax)
	}
	c.put(0, []byte("last"), codec.Meta{Type: codec.TypeString, Value: val}, true, 4)
	if e, ok := c.get(0, []byte("last")); !ok || len(e.meta.Value) != len(val) {
		t.Fatal("the entry put last was evicted to make room for itself")
	}
	c.clear()
	if got := copiedSum(t, c); got != 0 {
		t.Fatalf("after clear: %d bytes", got)
	}
}

// TestMidSizeValueReadFromCache: a 1 KB string value, once written, is
// read without a Pebble lookup.
func TestMidSizeValueReadFromCache(t *testing.T) {
	s, err := Open(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	val := bytes.Repeat([]byte("v"), 1000)
	if _, err := s.Write(func(*View) ([]codec.Event, error) {
		return []codec.Event{codec.SetMetaEvent(0, []byte("k"), codec.Meta{Type: codec.TypeString, Value: val}, 0)}, nil
	}); err != nil {
		t.Fatal(err)
	}
	before := s.IterStats()
	var got []byte
	ok, err := s.View().MetaWith(0, []byte("k"), func(m codec.Meta) error {
		got = bytes.Clone(m.Value)
		return nil
	})
	if err != nil || !ok || !bytes.Equal(got, val) {
		t.Fatalf("read %d bytes, found %v, err %v", len(got), ok, err)
	}
	if st := s.IterStats().Sub(before); st.Gets != 0 || st.MetaLookups != 0 || st.MetaHits != 1 {
		t.Fatalf("the read made %d gets and %d metadata lookups, %d cache hits; want 0, 0, 1", st.Gets, st.MetaLookups, st.MetaHits)
	}
}
