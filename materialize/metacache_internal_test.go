package materialize

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
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
		n, held := 0, 0
		entries := 0
		for _, sl := range s.slots {
			if sl.h == 0 {
				continue
			}
			entries++
			e, k := sl.e, sl.e.key()
			if j := s.find(sl.h, k); j < 0 || s.slots[j].e != e {
				t.Fatalf("shard %d: entry %q is not found by its key", i, k)
			}
			n += copiedLen(e)
			switch {
			case copiedLen(e) > 0 && (e.held == 0 || int(e.held) > len(s.held) || s.held[e.held-1] != e):
				t.Fatalf("shard %d: entry %q holds a copied value and is not in the held list at %d", i, k, e.held)
			case copiedLen(e) > 0:
				held++
			case e.held != 0:
				t.Fatalf("shard %d: entry %q holds no copied value and is in the held list at %d", i, k, e.held)
			}
		}
		if entries != s.n {
			t.Fatalf("shard %d holds %d entries and counts %d", i, entries, s.n)
		}
		if held != len(s.held) {
			t.Fatalf("shard %d: %d entries hold copied values, the held list has %d", i, held, len(s.held))
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
	c.put(0, []byte("k"), &codec.Meta{Type: codec.TypeString, Value: src}, true, 1)
	src[0] = 'b'
	e, ok := c.get(0, []byte("k"))
	if !ok || e.noValue || !bytes.Equal(e.meta.Value, bytes.Repeat([]byte("a"), 1000)) {
		t.Fatalf("1000-byte value of a's cached as %d bytes %.8q..., noValue %v", len(e.meta.Value), e.meta.Value, e.noValue)
	}
	c.put(0, []byte("big"), &codec.Meta{Type: codec.TypeString, Value: make([]byte, metaCacheMaxCopied+1)}, true, 1)
	if e, ok := c.get(0, []byte("big")); !ok || !e.noValue || e.meta.Value != nil {
		t.Fatalf("a value over metaCacheMaxCopied cached with %d bytes, noValue %v", len(e.meta.Value), e.noValue)
	}
	if got := copiedSum(t, c); got != 1000 {
		t.Fatalf("copied bytes %d, want 1000", got)
	}
	// Replacements of one key, then many keys: past the budget.
	for i := range 3 {
		c.put(0, []byte("k"), &codec.Meta{Type: codec.TypeString, Value: make([]byte, 2000+i)}, true, 2)
	}
	if got := copiedSum(t, c); got != 2002 {
		t.Fatalf("after replacing: copied bytes %d, want 2002", got)
	}
	val := make([]byte, metaCacheMaxCopied)
	for i := range 3 * metaCacheCopiedMax / len(val) {
		c.put(0, fmt.Appendf(nil, "k%d", i), &codec.Meta{Type: codec.TypeString, Value: val}, true, 3)
	}
	if got := copiedSum(t, c); got < metaCacheCopiedMax/2 {
		t.Fatalf("after writing 3 budgets' worth: %d bytes cached, want most of the budget (%d)", got, metaCacheCopiedMax)
	}
	c.put(0, []byte("last"), &codec.Meta{Type: codec.TypeString, Value: val}, true, 4)
	if e, ok := c.get(0, []byte("last")); !ok || len(e.meta.Value) != len(val) {
		t.Fatal("the entry put last was evicted to make room for itself")
	}
	c.clear()
	if got := copiedSum(t, c); got != 0 {
		t.Fatalf("after clear: %d bytes", got)
	}
}

// TestMetaCacheDropsValuesNotKeys: past a shard's budget of copied
// values, the cache drops values and keeps every key's metadata: small
// keys are not evicted to make room for large values, and a key whose value
// was dropped still answers its type and TTL without its value.
func TestMetaCacheDropsValuesNotKeys(t *testing.T) {
	c := newMetaCache()
	const small = 2000
	for i := range small {
		c.put(0, fmt.Appendf(nil, "s%d", i), &codec.Meta{Type: codec.TypeHash, Count: uint64(i + 1)}, true, 1)
	}
	val := bytes.Repeat([]byte("v"), 100_000)
	big := 2 * metaCacheCopiedMax / len(val)
	for i := range big {
		c.put(0, fmt.Appendf(nil, "b%d", i), &codec.Meta{Type: codec.TypeString, Value: val, ExpireAtMs: 5}, true, 2)
	}
	if got := copiedSum(t, c); got < metaCacheCopiedMax/2 {
		t.Fatalf("%d bytes of values cached, want most of the budget (%d)", got, metaCacheCopiedMax)
	}
	for i := range small {
		if e, ok := c.get(0, fmt.Appendf(nil, "s%d", i)); !ok || e.meta.Count != uint64(i+1) {
			t.Fatalf("small key s%d evicted for large values (found %v)", i, ok)
		}
	}
	withValue := 0
	for i := range big {
		e, ok := c.get(0, fmt.Appendf(nil, "b%d", i))
		switch {
		case !ok || e.meta.Type != codec.TypeString || e.meta.ExpireAtMs != 5:
			t.Fatalf("key b%d: found %v, metadata %+v; want its metadata kept", i, ok, e.meta)
		case e.noValue != (e.meta.Value == nil):
			t.Fatalf("key b%d: noValue %v with %d bytes of value", i, e.noValue, len(e.meta.Value))
		case !e.noValue && !bytes.Equal(e.meta.Value, val):
			t.Fatalf("key b%d: cached value differs", i)
		case !e.noValue:
			withValue++
		}
	}
	if withValue == 0 || withValue == big {
		t.Fatalf("%d of %d large values cached, want some dropped and some kept", withValue, big)
	}
	// Replacing held values by small ones and deleting keys keeps the
	// shards' lists and counts exact.
	for i := range big / 2 {
		c.put(0, fmt.Appendf(nil, "b%d", i), &codec.Meta{Type: codec.TypeString, Value: []byte("x")}, true, 3)
		c.put(0, fmt.Appendf(nil, "b%d", big-1-i), &codec.Meta{}, false, 3)
	}
	if got := copiedSum(t, c); got != 0 {
		t.Fatalf("%d bytes of values cached after replacing and deleting every large value", got)
	}
}

// TestMidSizeValueReadFromCache: string values of 1 KB and 100 KB, once
// written, are read without a Pebble lookup; one over metaCacheMaxCopied is
// read from Pebble.
func TestMidSizeValueReadFromCache(t *testing.T) {
	s, err := Open(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, size := range []int{1000, 100_000, metaCacheMaxCopied + 1} {
		val := bytes.Repeat([]byte("v"), size)
		key := fmt.Appendf(nil, "k%d", size)
		if _, err := s.Write(func(*View) ([]codec.Event, error) {
			return []codec.Event{codec.SetMetaEvent(0, key, codec.Meta{Type: codec.TypeString, Value: val}, 0)}, nil
		}); err != nil {
			t.Fatal(err)
		}
		before := s.IterStats()
		var got []byte
		v := s.View()
		ok, err := v.MetaWith(0, key, func(m codec.Meta, _ bool) error {
			val, err := valueOf(v, m)
			got = bytes.Clone(val)
			return err
		})
		if err != nil || !ok || !bytes.Equal(got, val) {
			t.Fatalf("size %d: read %d bytes, found %v, err %v", size, len(got), ok, err)
		}
		gets := uint64(0)
		if size > metaCacheMaxCopied {
			gets = 1
		}
		if st := s.IterStats().Sub(before); st.Gets != gets || st.MetaLookups != 0 || st.MetaHits != 1 {
			t.Fatalf("size %d: the read made %d gets and %d metadata lookups, %d cache hits; want %d, 0, 1", size, st.Gets, st.MetaLookups, st.MetaHits, gets)
		}
	}
}

// TestKeptValueNotCopied: a string value the decision marked with
// View.KeepValue is cached as that very slice (counted in the shard's
// budget like a copy); one not marked, or marked by another slice of the
// same bytes, is copied.
func TestKeptValueNotCopied(t *testing.T) {
	s, err := Open(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	set := func(key string, val, keep []byte) {
		t.Helper()
		if _, err := s.Write(func(v *View) ([]codec.Event, error) {
			if keep != nil {
				v.KeepValue(keep)
			}
			return []codec.Event{codec.SetMetaEvent(0, []byte(key), codec.Meta{Type: codec.TypeString, Value: val}, 0)}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	cached := func(key string) []byte {
		t.Helper()
		e, ok := s.cache.get(0, []byte(key))
		if !ok || e.noValue || len(e.meta.Value) == 0 {
			t.Fatalf("%s: not cached with its value (found %v, noValue %v)", key, ok, e.noValue)
		}
		return e.meta.Value
	}
	kept := bytes.Repeat([]byte("k"), 100_000)
	set("kept", kept, kept)
	if got := cached("kept"); &got[0] != &kept[0] || len(got) != len(kept) {
		t.Fatal("a value marked with KeepValue was copied")
	}
	copied := bytes.Repeat([]byte("c"), 100_000)
	set("copied", copied, nil)
	if got := cached("copied"); &got[0] == &copied[0] || !bytes.Equal(got, copied) {
		t.Fatal("a value not marked was cached without a copy")
	}
	other := bytes.Repeat([]byte("o"), 100_000)
	set("other", other, bytes.Clone(other))
	if got := cached("other"); &got[0] == &other[0] || !bytes.Equal(got, other) {
		t.Fatal("a value was kept because other bytes equal to it were marked")
	}
	if got := copiedSum(t, s.cache); got != 3*100_000 {
		t.Fatalf("cached value bytes %d, want %d (kept values count in the budget)", got, 3*100_000)
	}
	var got []byte
	v := s.View()
	if ok, err := v.MetaWith(0, []byte("kept"), func(m codec.Meta, _ bool) error {
		val, err := valueOf(v, m)
		got = bytes.Clone(val)
		return err
	}); err != nil || !ok || !bytes.Equal(got, kept) {
		t.Fatalf("GET of the kept value: %d bytes, found %v, err %v", len(got), ok, err)
	}
}

// TestMetaCacheKeepsEveryField: an entry gives back every field of the
// codec.Meta put in it (but Ref: a stored value reference is kept as an
// entry without its value), so a field added to codec.Meta fails here
// until cacheEntry keeps it. Each field is set to a value of its own,
// found by reflection, once with the others zero and once with all set;
// a stream's metadata is updated in place and read back.
func TestMetaCacheKeepsEveryField(t *testing.T) {
	var n uint64
	var fill func(v reflect.Value)
	fill = func(v reflect.Value) {
		n++
		switch v.Kind() {
		case reflect.Struct:
			for i := range v.NumField() {
				fill(v.Field(i))
			}
		case reflect.Bool:
			v.SetBool(true)
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			v.SetInt(int64(n))
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			v.SetUint(n)
		case reflect.String:
			v.SetString(fmt.Sprintf("string %d", n))
		case reflect.Slice:
			v.Set(reflect.ValueOf(fmt.Appendf(nil, "bytes %d", n)).Convert(v.Type()))
		case reflect.Array:
			for i := range v.Len() {
				fill(v.Index(i))
			}
		default:
			t.Fatalf("codec.Meta has a field of kind %s the test cannot fill", v.Kind())
		}
	}
	var all codec.Meta
	mt := reflect.TypeOf(all)
	cases := map[string]codec.Meta{}
	for i := range mt.NumField() {
		if mt.Field(i).Name == "Ref" {
			continue
		}
		var m codec.Meta
		fill(reflect.ValueOf(&m).Elem().Field(i))
		fill(reflect.ValueOf(&all).Elem().Field(i))
		cases[mt.Field(i).Name] = m
	}
	cases["every field"] = all
	c := newMetaCache()
	for name, m := range cases {
		for _, exists := range []bool{true, false} {
			c.put(3, []byte("key"), &m, exists, 7)
			e, ok := c.get(3, []byte("key"))
			if !ok || e.exists != exists || e.seq != 7 || e.noValue {
				t.Fatalf("%s: found %v, exists %v, seq %d, noValue %v", name, ok, e.exists, e.seq, e.noValue)
			}
			if !reflect.DeepEqual(e.meta, m) {
				t.Fatalf("%s: cached\n%+v\ngot back\n%+v", name, m, e.meta)
			}
		}
	}
	// A stream's metadata replaced in place, then by a string's.
	s1 := codec.Meta{Type: codec.TypeStream}
	s1.Stream.Length, s1.Stream.LastID = 5, codec.ID{Ms: 9, Seq: 1}
	s2 := s1
	s2.Stream.Length, s2.Stream.Tail.Count = 6, 2
	for _, m := range []codec.Meta{s1, s2, {Type: codec.TypeString, Value: []byte("v")}} {
		c.put(0, []byte("s"), &m, true, 1)
		if e, _ := c.get(0, []byte("s")); !reflect.DeepEqual(e.meta, m) {
			t.Fatalf("cached %+v, got back %+v", m, e.meta)
		}
	}
}

// TestMetaShardTable drives one shard's table through random inserts and
// removals of entries whose hashes share four neighbouring home slots at
// the end of a 16-slot table, so that probe runs are long and wrap: after
// each step every entry is found from its key and no removed one is.
func TestMetaShardTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var s metaShard
	live := map[string]uint64{} // key → hash
	check := func(step int) {
		t.Helper()
		if s.n != len(live) {
			t.Fatalf("step %d: %d entries counted, %d live", step, s.n, len(live))
		}
		for k, h := range live {
			if i := s.find(h, []byte(k)); i < 0 || string(s.slots[i].e.key()) != k {
				t.Fatalf("step %d: live key %q not found", step, k)
			}
		}
	}
	for step := range 20000 {
		k := fmt.Sprintf("k%d", rng.IntN(24))
		h, ok := live[k]
		switch {
		case ok && rng.IntN(2) == 0:
			i := s.find(h, []byte(k))
			s.remove(i)
			delete(live, k)
			if s.find(h, []byte(k)) >= 0 {
				t.Fatalf("step %d: removed key %q still found", step, k)
			}
		case !ok && len(live) < 12: // 12 of 16 slots at most: the table stays at 16
			h = uint64(14+rng.IntN(4))%16*metaCacheShards | 1
			e := new(cacheEntry)
			e.setKey([]byte(k))
			s.insert(h, e)
			live[k] = h
		}
		if len(s.slots) != 16 {
			t.Fatalf("step %d: the table has %d slots, want 16", step, len(s.slots))
		}
		check(step)
	}
	// Keys longer than an entry holds inline, and the empty key.
	for _, k := range []string{"", strings.Repeat("x", metaKeyInline), strings.Repeat("y", metaKeyInline+1)} {
		e := new(cacheEntry)
		e.setKey([]byte(k))
		if !e.keyIs([]byte(k)) || string(e.key()) != k || e.keyIs([]byte(k+"z")) {
			t.Fatalf("a key of %d bytes is not kept exactly", len(k))
		}
	}
}

// TestMetaCacheConcurrentReaders: readers look keys up while the writer
// puts them (past the shards' bound, so entries are evicted and the
// tables' probe runs shift), replaces stream metadata in place and clears
// the cache; every entry a reader finds is its key's, whole (the value,
// the stream's length and the sequence were put together).
func TestMetaCacheConcurrentReaders(t *testing.T) {
	c := newMetaCache()
	const keys = metaCacheShards * metaCacheShardMax * 9 / 8
	key := func(i int) []byte { return fmt.Appendf(nil, "key:%d", i) }
	stop := make(chan struct{})
	errs := make(chan error, 4)
	for r := range 3 {
		go func() {
			rng := rand.New(rand.NewPCG(uint64(r), 7))
			for {
				select {
				case <-stop:
					errs <- nil
					return
				default:
				}
				i := rng.IntN(keys)
				e, ok := c.get(0, key(i))
				if !ok {
					continue
				}
				want := fmt.Sprint(i)
				switch {
				case e.meta.Type == codec.TypeString && (string(e.meta.Value) != want || e.seq != uint64(i)):
					errs <- fmt.Errorf("key %d: value %q, seq %d", i, e.meta.Value, e.seq)
					return
				case e.meta.Type == codec.TypeStream && (e.meta.Stream.Length != e.seq || e.meta.Stream.LastID.Ms != uint64(i)):
					errs <- fmt.Errorf("key %d: stream length %d at seq %d, last ID %v", i, e.meta.Stream.Length, e.seq, e.meta.Stream.LastID)
					return
				}
			}
		}()
	}
	rng := rand.New(rand.NewPCG(3, 4))
	evicted := 0 // keys put before the clear and no longer cached
	put := make([]bool, keys)
	for n := range keys + 100_000 { // every key once, in order; then at random
		i := n
		if n >= keys {
			i = rng.IntN(keys)
		}
		put[i] = true
		if i%2 == 0 {
			c.put(0, key(i), &codec.Meta{Type: codec.TypeString, Value: []byte(fmt.Sprint(i))}, true, uint64(i))
		} else {
			m := codec.Meta{Type: codec.TypeStream}
			m.Stream.Length, m.Stream.LastID.Ms = uint64(n), uint64(i)
			c.put(0, key(i), &m, true, uint64(n))
		}
		if n == keys-1 {
			copiedSum(t, c) // every entry is found from its key
			cached := 0
			for i := range c.shards {
				s := &c.shards[i]
				s.mu.RLock()
				cached += s.n
				s.mu.RUnlock()
			}
			for i := range put {
				if put[i] {
					evicted++
					put[i] = false
				}
			}
			evicted -= cached
			c.clear()
		}
	}
	close(stop)
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	copiedSum(t, c)
	if evicted <= 0 {
		t.Fatal("no entry was evicted")
	}
}

// key returns e's cache key (a copy).
func (e *cacheEntry) key() []byte {
	if e.klen == 0 {
		return []byte(e.long)
	}
	return bytes.Clone(e.short[:e.klen])
}
