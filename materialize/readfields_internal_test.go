package materialize

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sediment-dev/sediment/codec"
)

// readFieldsMatch fails unless every entry of the read views' element
// cache agrees with Pebble (present with the same value, or absent), and
// its byte count is the sum over its entries. It returns the number of
// entries.
func readFieldsMatch(t *testing.T, s *Store, step string) int {
	t.Helper()
	n, total := 0, 0
	for i := range s.rfields.shards {
		sh := &s.rfields.shards[i]
		for coll, rc := range sh.colls {
			total += len(coll) + fieldEntryCost
			for f, e := range rc.m {
				n++
				total += len(f) + len(e.val) + fieldEntryCost
				k := []byte(coll + f)
				val, ok, err := RawGet(s, k)
				if err != nil {
					t.Fatal(err)
				}
				if ok != e.exists || (ok && !bytes.Equal(val, e.val)) {
					t.Fatalf("%s: %q: stored %v %q, cached %v %q", step, k, ok, val, e.exists, e.val)
				}
			}
		}
	}
	if b := s.rfields.bytes.Load(); int64(total) != b {
		t.Fatalf("%s: the cache counts %d bytes and holds %d", step, b, total)
	}
	return n
}

// TestReadFieldsFollowWrites: the committed elements that read views use
// are filled by their reads, answer the reads after them, and agree with
// the H, S and Z keys in Pebble through writes, removals, a value too large
// to hold, DEL, COPY and FLUSHDB; a view pinned before a write reads the
// state it pinned, and a read from before a write to a collection no read
// had asked for does not fill it.
func TestReadFieldsFollowWrites(t *testing.T) {
	s := openTemp(t)
	_, must := eventWriters(t, s)
	h, st, z := []byte("h"), []byte("s"), []byte("z")
	hk := func(f string) []byte { return codec.ElementKey(codec.TagHash, 0, h, []byte(f)) }
	sk := func(m string) []byte { return codec.ElementKey(codec.TagSet, 0, st, []byte(m)) }
	zk := func(m string) []byte { return codec.ZMemberKey(0, z, []byte(m)) }
	large := strings.Repeat("v", readFieldValueMax+1)
	read := func(v *View, keys ...[]byte) []string {
		t.Helper()
		var out []string
		for i, k := range keys {
			var (
				val []byte
				ok  bool
				err error
			)
			if i%2 == 0 {
				val, ok, err = v.Get(k)
			} else {
				ok, err = v.Has(k)
			}
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%v:%s", ok, val))
		}
		return out
	}

	must(codec.ElementsEvent(codec.OpHSet, 0, h, [][]byte{[]byte("f1"), []byte("v1"), []byte("f2"), []byte(large)}),
		codec.ElementsEvent(codec.OpSAdd, 0, st, [][]byte{[]byte("m1"), []byte("m2")}),
		codec.ZAddEvent(0, z, false, zMembers("m", 0, 3)))
	if n := readFieldsMatch(t, s, "writes"); n != 0 {
		t.Fatalf("writes no read asked for left %d entries", n)
	}
	// f1 (Get), m1 (Has), f2 (too large), m00001, m00002 (Gets), m3
	// (absent): the first reads fill the cache, all but f2.
	keys := [][]byte{hk("f1"), sk("m1"), hk("f2"), zk("m00001"), zk("m00002"), sk("m3")}
	want := []string{"true:v1", "true:", "true:" + large, "true:", "true:" + string(codec.ScoreArg(2)), "false:"}
	for i, v := range []*View{s.ReadView(), s.PinnedReadView(), s.View()} {
		hits := s.IterStats().ReadFieldHits
		if got := read(v, keys...); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("reads %d: got %q, want %q", i, got, want)
		}
		v.Close()
		n := s.IterStats().ReadFieldHits - hits
		if (i == 0 && n != 0) || (i > 0 && n != 5) {
			t.Fatalf("reads %d: %d of %d answered by the cache", i, n, len(keys))
		}
		readFieldsMatch(t, s, fmt.Sprint("reads ", i))
	}

	// A view pinned before a write reads what it pinned.
	pinned := s.PinnedReadView()
	defer pinned.Close()
	if got := read(pinned, hk("f1")); got[0] != "true:v1" {
		t.Fatalf("pinned view before the write: %q", got[0])
	}
	must(codec.ElementsEvent(codec.OpHSet, 0, h, [][]byte{[]byte("f1"), []byte("v2")}),
		codec.ElementsEvent(codec.OpSRem, 0, st, [][]byte{[]byte("m1")}),
		codec.ZRemEvent(0, z, false, [][]byte{[]byte("m00001"), codec.ScoreArg(1)}))
	readFieldsMatch(t, s, "removals")
	if got := read(pinned, hk("f1"), sk("m1")); fmt.Sprint(got) != fmt.Sprint([]string{"true:v1", "true:"}) {
		t.Fatalf("pinned view after the write: %q", got)
	}
	hits := s.IterStats().ReadFieldHits
	want = []string{"true:v2", "false:", "true:" + large, "false:", "true:" + string(codec.ScoreArg(2)), "false:"}
	if got := read(s.ReadView(), keys...); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("reads after the write: got %q, want %q", got, want)
	}
	if n := s.IterStats().ReadFieldHits - hits; n != 5 {
		t.Fatalf("after the write %d of %d reads answered by the cache, want 5", n, len(keys))
	}

	// A view pinned before a write of field of h3 from "old" to "new"
	// reads "old" after between ran (and, with another, after a new view
	// read another field, so that h3 has a record again): its read must
	// not fill the cache, and a new view must read "new".
	h3 := []byte("h3")
	staleFill := func(after, field string, between func(), another bool) {
		t.Helper()
		k := codec.ElementKey(codec.TagHash, 0, h3, []byte(field))
		must(codec.ElementsEvent(codec.OpHSet, 0, h3, [][]byte{[]byte(field), []byte("old")}))
		old := s.PinnedReadView()
		defer old.Close()
		read(old, sk("pin")) // pins it
		must(codec.ElementsEvent(codec.OpHSet, 0, h3, [][]byte{[]byte(field), []byte("new")}))
		if between != nil {
			between()
		}
		if another {
			read(s.ReadView(), codec.ElementKey(codec.TagHash, 0, h3, []byte("x")))
		}
		if got := read(old, k); got[0] != "true:old" {
			t.Fatalf("old view after %s: %q", after, got[0])
		}
		readFieldsMatch(t, s, "old view's read after "+after)
		if got := read(s.ReadView(), k); got[0] != "true:new" {
			t.Fatalf("a new view after the old view's read after %s: %q", after, got[0])
		}
	}
	staleFill("a write to a collection no read asked for", "g", nil, false)
	staleFill("an eviction of the write's record", "e", func() {
		s.rfields.max.Store(0)
		s.rfields.evict() // nothing else runs: the writer is idle
		s.rfields.max.Store(readFieldsMaxBytes)
	}, true)
	staleFill("a FLUSHDB of another db", "d", func() { must(codec.FlushDBEvent(1, nil)) }, true)

	// h replaced by a copy of h2 (DEL, then COPY): none of h's old
	// fields is answered from the cache.
	h2 := []byte("h2")
	must(codec.ElementsEvent(codec.OpHSet, 0, h2, [][]byte{[]byte("f3"), []byte("x3")}))
	must(codec.DelKeyEvent(0, h, codec.TypeHash, 0), codec.CopyKeyEvent(0, h, codec.TypeHash, 0, h2))
	readFieldsMatch(t, s, "copy onto a cached hash")
	want = []string{"false:", "false:", "true:x3"}
	for range 2 {
		if got := read(s.ReadView(), hk("f1"), hk("f2"), hk("f3")); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("reads after COPY: got %q, want %q", got, want)
		}
	}
	readFieldsMatch(t, s, "reads after COPY")

	// A value longer than the writer's field cache copies (fieldValueMax)
	// and within readFieldValueMax is held.
	h4, mid := []byte("h4"), strings.Repeat("m", readFieldValueMax)
	must(codec.ElementsEvent(codec.OpHSet, 0, h4, [][]byte{[]byte("f"), []byte(mid)}))
	mk := codec.ElementKey(codec.TagHash, 0, h4, []byte("f"))
	read(s.ReadView(), mk)
	hits = s.IterStats().ReadFieldHits
	if got := read(s.ReadView(), mk); got[0] != "true:"+mid || s.IterStats().ReadFieldHits != hits+1 {
		t.Fatalf("a %d-byte value: %q, %d hits", len(mid), got[0], s.IterStats().ReadFieldHits-hits)
	}

	// FLUSHDB empties it.
	must(codec.FlushDBEvent(0, []uint16{codec.Slot(h), codec.Slot(h2), codec.Slot(h3), codec.Slot(h4), codec.Slot(st), codec.Slot(z)}))
	if n := readFieldsMatch(t, s, "flush"); n != 0 {
		t.Fatalf("after FLUSHDB the cache holds %d entries", n)
	}
}

// TestReadFieldsRandom runs random HSET, HDEL, SADD, SREM, ZADD, ZREM,
// DEL, COPY and FLUSHDB (of another db) events over a few keys, with a
// cache bound small enough to evict from step 200 on. Around each group
// a view pinned before it reads (and may fill) every element after a new
// view has read about half of them; then every element read through a new view, by Get and by
// Has, must be what Pebble holds, and the cache must agree with Pebble.
func TestReadFieldsRandom(t *testing.T) {
	s := openTemp(t)
	_, must := eventWriters(t, s)
	rng := rand.New(rand.NewPCG(1, 2))
	keys := [][]byte{[]byte("a"), []byte("b"), []byte("c")}
	field := func() []byte { return fmt.Appendf(nil, "f%d", rng.IntN(40)) }
	elements := func(k []byte) [][]byte {
		var out [][]byte
		for i := range 40 {
			f := fmt.Appendf(nil, "f%d", i)
			out = append(out, codec.ElementKey(codec.TagHash, 0, k, f), codec.ElementKey(codec.TagSet, 0, k, f), codec.ZMemberKey(0, k, f))
		}
		return out
	}
	// readAll reads the elements, or about half of them picked at random
	// (a collection then gets a record with some of its elements only).
	readAll := func(v *View, has, half bool) {
		t.Helper()
		for _, k := range keys {
			for _, ek := range elements(k) {
				if half && rng.IntN(2) == 0 {
					continue
				}
				var err error
				if has {
					_, err = v.Has(ek)
				} else {
					_, _, err = v.Get(ek)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	cachedSteps, hits := 0, s.IterStats().ReadFieldHits
	for step := range 400 {
		var events []codec.Event
		for range 1 + rng.IntN(4) {
			k := keys[rng.IntN(len(keys))]
			switch r := rng.IntN(40); {
			case r < 12:
				events = append(events, codec.ElementsEvent(codec.OpHSet, 0, k, [][]byte{field(), fmt.Appendf(nil, "v%d", step)}))
			case r < 18:
				events = append(events, codec.ElementsEvent(codec.OpHDel, 0, k, [][]byte{field()}))
			case r < 23:
				events = append(events, codec.ElementsEvent(codec.OpSAdd, 0, k, [][]byte{field()}))
			case r < 26:
				events = append(events, codec.ElementsEvent(codec.OpSRem, 0, k, [][]byte{field()}))
			case r < 31:
				events = append(events, codec.ZAddEvent(0, k, false, [][]byte{field(), codec.ScoreArg(float64(step)), nil}))
			case r < 33:
				events = append(events, codec.ZRemEvent(0, k, false, [][]byte{field(), codec.ScoreArg(0)}))
			case r < 36:
				events = append(events, codec.DelKeyEvent(0, k, codec.TypeHash, 0), codec.DelKeyEvent(0, k, codec.TypeSet, 0), codec.DelKeyEvent(0, k, codec.TypeZSet, 0))
			case r < 39:
				events = append(events, codec.DelKeyEvent(0, k, codec.TypeHash, 0), codec.CopyKeyEvent(0, k, codec.TypeHash, 0, keys[rng.IntN(len(keys))]))
			default:
				events = append(events, codec.FlushDBEvent(1, nil))
			}
		}
		oldView := s.PinnedReadView()
		if _, _, err := oldView.Get([]byte("pin")); err != nil {
			t.Fatal(err)
		}
		must(events...)
		fresh := s.ReadView()
		readAll(fresh, step%2 == 0, true)
		fresh.Close()
		readAll(oldView, step%2 == 1, false)
		oldView.Close()
		if step == 200 {
			if cachedSteps < 150 {
				t.Fatalf("the cache held entries after %d of 200 steps", cachedSteps)
			}
			// From here on the cache holds a few entries: evictions.
			s.rfields.max.Store(12 * (fieldEntryCost + 8))
		}
		if n := readFieldsMatch(t, s, fmt.Sprint("step ", step)); step < 200 && n > 0 {
			cachedSteps++
		}
		if rf := s.rfields; step > 200 && rf.bytes.Load() > rf.max.Load() {
			t.Fatalf("step %d: %d bytes cached, bound %d", step, rf.bytes.Load(), rf.max.Load())
		}
		v := s.ReadView()
		for _, k := range keys {
			for _, ek := range elements(k) {
				want, wok, err := RawGet(s, ek)
				if err != nil {
					t.Fatal(err)
				}
				got, ok, err := v.Get(ek)
				if err != nil {
					t.Fatal(err)
				}
				has, err := v.Has(ek)
				if err != nil {
					t.Fatal(err)
				}
				if ok != wok || has != wok || !bytes.Equal(got, want) {
					t.Fatalf("step %d: %q reads %v %v %q, Pebble holds %v %q", step, ek, ok, has, got, wok, want)
				}
			}
		}
		v.Close()
	}
	if s.IterStats().ReadFieldHits == hits {
		t.Fatal("no read was answered by the cache")
	}
}

// TestReadFieldsConcurrent: while the writer sets every field of a hash to
// the same counter, group after group (now and then deleting the hash and
// writing it again in one group, or clearing the cache with a FLUSHDB of
// another db; half the run with a bound that evicts the hash's record),
// readers read every field through ReadViews and PinnedReadViews, the
// latter pausing between reads so that their fills come from states
// older than the latest. Each view must read one value for every field,
// never older than what an earlier view of the same reader read.
func TestReadFieldsConcurrent(t *testing.T) {
	s := openTemp(t)
	h := []byte("h")
	const fields = 10
	hset := func(n int) []codec.Event {
		pairs := make([][]byte, 0, 2*fields)
		for i := range fields {
			pairs = append(pairs, fmt.Appendf(nil, "f%d", i), strconv.AppendInt(nil, int64(n), 10))
		}
		return []codec.Event{codec.ElementsEvent(codec.OpHSet, 0, h, pairs)}
	}
	write := func(events []codec.Event) {
		t.Helper()
		if _, err := s.Write(func(*View) ([]codec.Event, error) { return events, nil }); err != nil {
			t.Fatal(err)
		}
	}
	write(hset(0))

	var (
		wg   sync.WaitGroup
		done = make(chan struct{})
		errs = make(chan error, 4)
	)
	read := func(v *View, rng *rand.Rand, pause bool) (int, error) {
		value := -1
		for _, i := range rng.Perm(fields) {
			if pause {
				time.Sleep(time.Duration(rng.IntN(30)) * time.Microsecond)
			}
			k := codec.ElementKey(codec.TagHash, 0, h, fmt.Appendf(nil, "f%d", i))
			if rng.IntN(4) == 0 {
				if ok, err := v.Has(k); err != nil || !ok {
					return 0, errors.Join(err, fmt.Errorf("f%d: exists %v", i, ok))
				}
				continue
			}
			val, ok, err := v.Get(k)
			if err != nil {
				return 0, err
			}
			n, perr := strconv.Atoi(string(val))
			if !ok || perr != nil || (value >= 0 && n != value) {
				return 0, fmt.Errorf("f%d reads %v %q after %d", i, ok, val, value)
			}
			value = n
		}
		return value, nil
	}
	for r := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 7))
			last := -1
			for {
				select {
				case <-done:
					return
				default:
				}
				pinned := r > 0
				v := s.ReadView()
				if pinned {
					v = s.PinnedReadView()
				}
				n, err := read(v, rng, pinned)
				v.Close()
				if errors.Is(err, ErrStateMoved) {
					continue
				}
				if err == nil && n >= 0 && n < last {
					err = fmt.Errorf("read %d after %d", n, last)
				}
				if err != nil {
					errs <- fmt.Errorf("reader %d: %w", r, err)
					return
				}
				last = max(last, n)
			}
		}()
	}
	rng := rand.New(rand.NewPCG(3, 3))
	for n := 1; n <= 3000; n++ {
		if n == 1500 {
			s.rfields.max.Store(6 * (fieldEntryCost + 8)) // the hash's record is evicted at each write now
		}
		events := hset(n)
		switch rng.IntN(20) {
		case 0:
			events = append([]codec.Event{codec.DelKeyEvent(0, h, codec.TypeHash, 0)}, events...)
		case 1:
			events = append(events, codec.FlushDBEvent(1, nil))
		}
		write(events)
		select {
		case err := <-errs:
			close(done)
			wg.Wait()
			t.Fatal(err)
		default:
		}
	}
	close(done)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	if s.IterStats().ReadFieldHits == 0 {
		t.Fatal("no read was answered by the cache")
	}
}
