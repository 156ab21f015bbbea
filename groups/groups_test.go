package groups_test

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/groups"
	"github.com/sediment-dev/sediment/internal/testclock"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/streams"
)

// ---------------------------------------------------------------- helpers

type testClock = testclock.Clock

const t0 = int64(1700000000000)

var (
	key = []byte("s")
	grp = []byte("g")
	// Binary-safe consumer names.
	alice = []byte("alice\x00")
	bob   = []byte("bob\xff")
)

func open(t *testing.T) (*materialize.Store, *testClock) {
	t.Helper()
	c := testclock.New(t0)
	s, err := materialize.Open(materialize.Options{InMemory: true, Now: c.Now})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, c
}

func id(ms uint64) codec.ID { return codec.ID{Ms: ms} }

func ids(ms ...uint64) []codec.ID {
	var out []codec.ID
	for _, m := range ms {
		out = append(out, id(m))
	}
	return out
}

func entryIDs(es []streams.Entry) []codec.ID {
	var out []codec.ID
	for _, e := range es {
		out = append(out, e.ID)
	}
	return out
}

func pendingIDs(ps []groups.Pending) []codec.ID {
	var out []codec.ID
	for _, p := range ps {
		out = append(out, p.ID)
	}
	return out
}

// commit runs decide in a Write.
func commit(t *testing.T, s *materialize.Store, decide func(v *materialize.View) ([]codec.Event, error)) error {
	t.Helper()
	_, err := s.Write(decide)
	return err
}

// addN adds entries 1-0 .. n-0 to k.
func addN(t *testing.T, s *materialize.Store, k []byte, from, to int) {
	t.Helper()
	for i := from; i <= to; i++ {
		err := commit(t, s, func(v *materialize.View) ([]codec.Event, error) {
			_, _, evs, err := streams.Add(v, 0, k, [][]byte{[]byte("n"), []byte(fmt.Sprint(i))}, streams.AddArgs{ID: streams.IDSpec{ID: id(uint64(i))}})
			return evs, err
		})
		if err != nil {
			t.Fatalf("add %d: %v", i, err)
		}
	}
}

func create(t *testing.T, s *materialize.Store, k, g []byte, a groups.CreateArgs) error {
	t.Helper()
	return commit(t, s, func(v *materialize.View) ([]codec.Event, error) {
		return groups.Create(v, 0, k, g, a)
	})
}

func mustCreate(t *testing.T, s *materialize.Store, k, g []byte, a groups.CreateArgs) {
	t.Helper()
	if err := create(t, s, k, g, a); err != nil {
		t.Fatalf("Create(%q, %q): %v", k, g, err)
	}
}

func destroy(t *testing.T, s *materialize.Store, k, g []byte) (bool, error) {
	t.Helper()
	var existed bool
	err := commit(t, s, func(v *materialize.View) ([]codec.Event, error) {
		var evs []codec.Event
		var err error
		existed, evs, err = groups.Destroy(v, 0, k, g)
		return evs, err
	})
	return existed, err
}

func readNew(t *testing.T, s *materialize.Store, k []byte, a groups.ReadArgs) []streams.Entry {
	t.Helper()
	var out []streams.Entry
	err := commit(t, s, func(v *materialize.View) ([]codec.Event, error) {
		es, evs, err := groups.ReadNew(v, 0, k, a)
		out = es
		return evs, err
	})
	if err != nil {
		t.Fatalf("ReadNew(%+v): %v", a, err)
	}
	return out
}

func readHistory(t *testing.T, s *materialize.Store, k []byte, a groups.ReadArgs, after codec.ID) []streams.Entry {
	t.Helper()
	var out []streams.Entry
	err := commit(t, s, func(v *materialize.View) ([]codec.Event, error) {
		es, evs, err := groups.ReadHistory(v, 0, k, a, after)
		out = es
		return evs, err
	})
	if err != nil {
		t.Fatalf("ReadHistory(%+v, %v): %v", a, after, err)
	}
	return out
}

func ack(t *testing.T, s *materialize.Store, k, g []byte, acks ...codec.ID) int {
	t.Helper()
	var n int
	err := commit(t, s, func(v *materialize.View) ([]codec.Event, error) {
		var evs []codec.Event
		var err error
		n, evs, err = groups.Ack(v, 0, k, g, acks)
		return evs, err
	})
	if err != nil {
		t.Fatalf("Ack: %v", err)
	}
	return n
}

func lookup(t *testing.T, s *materialize.Store, k, g []byte) codec.Group {
	t.Helper()
	_, gr, err := groups.Lookup(s.View(), 0, k, g)
	if err != nil {
		t.Fatalf("Lookup(%q, %q): %v", k, g, err)
	}
	return gr
}

func pendingRange(t *testing.T, s *materialize.Store, a groups.RangeArgs) []groups.Pending {
	t.Helper()
	ps, err := groups.PendingRange(s.View(), 0, key, grp, a)
	if err != nil {
		t.Fatalf("PendingRange(%+v): %v", a, err)
	}
	return ps
}

func allPending(a groups.RangeArgs) groups.RangeArgs {
	if a.End.IsZero() {
		a.End = codec.MaxID
	}
	if a.Count == 0 {
		a.Count = 1000
	}
	return a
}

func pelEntry(t *testing.T, s *materialize.Store, g []byte, at codec.ID) (codec.PELEntry, bool) {
	t.Helper()
	b, ok, err := s.View().Get(codec.PELKey(0, key, g, at))
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return codec.PELEntry{}, false
	}
	pe, err := codec.DecodePELEntry(b)
	if err != nil {
		t.Fatal(err)
	}
	pe.Consumer = bytes.Clone(pe.Consumer)
	return pe, true
}

func consumer(t *testing.T, s *materialize.Store, g, name []byte) (codec.Consumer, bool) {
	t.Helper()
	b, ok, err := s.View().Get(codec.ConsumerKey(0, key, g, name))
	if err != nil || !ok {
		return codec.Consumer{}, false
	}
	c, err := codec.DecodeConsumer(b)
	if err != nil {
		t.Fatal(err)
	}
	return c, true
}

// consumerPEL lists the IDs in consumer name's own PEL index (Q keys).
func consumerPEL(t *testing.T, s *materialize.Store, g, name []byte) []codec.ID {
	t.Helper()
	p := codec.ConsumerPELPrefix(0, key, g, name)
	var out []codec.ID
	err := s.View().Iterate(p, codec.PrefixEnd(p), false, func(k, _ []byte) (bool, error) {
		got, err := codec.DecodeID(k[len(p):])
		out = append(out, got)
		return true, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func countPrefix(t *testing.T, s *materialize.Store, p []byte) int {
	t.Helper()
	n := 0
	if err := s.View().Iterate(p, codec.PrefixEnd(p), false, func(_, _ []byte) (bool, error) { n++; return true, nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// groupFootprint counts the group's G, C, P and Q keys.
func groupFootprint(t *testing.T, s *materialize.Store, g []byte) [4]int {
	t.Helper()
	has, _ := s.View().Has(codec.GroupKey(0, key, g))
	n := 0
	if has {
		n = 1
	}
	return [4]int{
		n,
		countPrefix(t, s, codec.GroupPrefix(codec.TagConsumer, 0, key, g)),
		countPrefix(t, s, codec.GroupPrefix(codec.TagPEL, 0, key, g)),
		countPrefix(t, s, codec.GroupPrefix(codec.TagConsumerPEL, 0, key, g)),
	}
}

func setString(t *testing.T, s *materialize.Store, k []byte) {
	t.Helper()
	if err := commit(t, s, func(*materialize.View) ([]codec.Event, error) {
		return []codec.Event{codec.SetMetaEvent(0, k, codec.Meta{Type: codec.TypeString, Value: []byte("v")}, 0)}, nil
	}); err != nil {
		t.Fatal(err)
	}
}

// ---------------------------------------------------------------- XGROUP CREATE / DESTROY

func TestCreate(t *testing.T) {
	s, _ := open(t)
	seq := s.LastSeq()
	if err := create(t, s, key, grp, groups.CreateArgs{Dollar: true, EntriesRead: groups.InvalidEntriesRead}); !errors.Is(err, groups.ErrNoKey) {
		t.Fatalf("Create on missing key: %v, want ErrNoKey", err)
	}
	if s.LastSeq() != seq {
		t.Errorf("failed Create committed")
	}

	mustCreate(t, s, key, grp, groups.CreateArgs{Dollar: true, MkStream: true, EntriesRead: groups.InvalidEntriesRead})
	m, ok, err := streams.Meta(s.View(), 0, key)
	if !ok || err != nil || m.Stream.Length != 0 || !m.Stream.LastID.IsZero() {
		t.Fatalf("MKSTREAM stream = %+v, %v, %v", m, ok, err)
	}
	if g := lookup(t, s, key, grp); !g.LastDeliveredID.IsZero() || g.EntriesRead != groups.InvalidEntriesRead {
		t.Errorf("group = %+v", g)
	}
	for _, a := range []groups.CreateArgs{{Dollar: true}, {MkStream: true}, {ID: id(5)}} {
		if err := create(t, s, key, grp, a); !errors.Is(err, groups.ErrGroupExists) {
			t.Errorf("Create existing %+v: %v, want ErrGroupExists", a, err)
		}
	}

	addN(t, s, key, 1, 5)
	mustCreate(t, s, key, []byte("dollar"), groups.CreateArgs{Dollar: true, EntriesRead: 5})
	if g := lookup(t, s, key, []byte("dollar")); g.LastDeliveredID != id(5) || g.EntriesRead != 5 {
		t.Errorf("$ group = %+v", g)
	}
	mustCreate(t, s, key, []byte("explicit"), groups.CreateArgs{ID: id(3), EntriesRead: groups.InvalidEntriesRead})
	if g := lookup(t, s, key, []byte("explicit")); g.LastDeliveredID != id(3) {
		t.Errorf("explicit group = %+v", g)
	}
	// MKSTREAM on an existing stream leaves it alone.
	mustCreate(t, s, key, []byte("mk"), groups.CreateArgs{ID: id(1), MkStream: true})
	if m, _, _ := streams.Meta(s.View(), 0, key); m.Stream.Length != 5 {
		t.Errorf("MKSTREAM on existing stream reset it: %+v", m.Stream)
	}
	// Group names are binary and prefix-distinct.
	mustCreate(t, s, key, []byte("g\x00"), groups.CreateArgs{})
	mustCreate(t, s, key, []byte(""), groups.CreateArgs{})

	setString(t, s, []byte("str"))
	for _, a := range []groups.CreateArgs{{Dollar: true}, {Dollar: true, MkStream: true}} {
		if err := create(t, s, []byte("str"), grp, a); !errors.Is(err, materialize.ErrWrongType) {
			t.Errorf("Create on string %+v: %v, want ErrWrongType", a, err)
		}
	}
	if _, _, err := groups.Lookup(s.View(), 0, []byte("str"), grp); !errors.Is(err, materialize.ErrWrongType) {
		t.Errorf("Lookup on string: %v", err)
	}
	if _, _, err := groups.Lookup(s.View(), 0, key, []byte("nope")); !errors.Is(err, groups.ErrNoGroup) {
		t.Errorf("Lookup of missing group: %v", err)
	}
	if _, _, err := groups.Lookup(s.View(), 0, []byte("nokey"), grp); !errors.Is(err, groups.ErrNoGroup) {
		t.Errorf("Lookup on missing key: %v", err)
	}
}

func TestCreateOnExpiredStream(t *testing.T) {
	s, c := open(t)
	addN(t, s, key, 1, 3)
	mustCreate(t, s, key, grp, groups.CreateArgs{})
	readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: alice})
	deadline := t0 + 1000
	if err := commit(t, s, func(v *materialize.View) ([]codec.Event, error) {
		m, _, _ := streams.Meta(v, 0, key)
		m.ExpireAtMs = deadline
		return []codec.Event{codec.SetMetaEvent(0, key, m, 0)}, nil
	}); err != nil {
		t.Fatal(err)
	}
	c.Set(deadline + 1)
	if err := create(t, s, key, grp, groups.CreateArgs{}); !errors.Is(err, groups.ErrNoKey) {
		t.Errorf("Create on expired key without MKSTREAM: %v", err)
	}
	mustCreate(t, s, key, grp, groups.CreateArgs{ID: id(7), MkStream: true})
	m, ok, _ := streams.Meta(s.View(), 0, key)
	if !ok || m.Stream.Length != 0 || m.ExpireAtMs != 0 {
		t.Errorf("recreated stream = %+v", m)
	}
	if g := lookup(t, s, key, grp); g.LastDeliveredID != id(7) {
		t.Errorf("group = %+v", g)
	}
	// The old group's consumers and PEL went with the expired key.
	if fp := groupFootprint(t, s, grp); fp != [4]int{1, 0, 0, 0} {
		t.Errorf("group footprint = %v, want [1 0 0 0]", fp)
	}
	if n := countPrefix(t, s, codec.KeyPrefix(codec.TagStreamEntry, 0, key)); n != 0 {
		t.Errorf("%d old entries remain", n)
	}
}

func TestDestroy(t *testing.T) {
	s, _ := open(t)
	addN(t, s, key, 1, 4)
	for _, g := range [][]byte{grp, []byte("gg"), []byte("g\x00")} {
		mustCreate(t, s, key, g, groups.CreateArgs{})
		readNew(t, s, key, groups.ReadArgs{Group: g, Consumer: alice, Count: 2})
		readNew(t, s, key, groups.ReadArgs{Group: g, Consumer: bob})
	}
	for _, g := range [][]byte{grp, []byte("gg"), []byte("g\x00")} {
		if fp := groupFootprint(t, s, g); fp != [4]int{1, 2, 4, 4} {
			t.Fatalf("setup %q: footprint %v", g, fp)
		}
	}
	existed, err := destroy(t, s, key, grp)
	if err != nil || !existed {
		t.Fatalf("Destroy = %v, %v", existed, err)
	}
	if fp := groupFootprint(t, s, grp); fp != [4]int{} {
		t.Errorf("destroyed group footprint %v", fp)
	}
	for _, g := range [][]byte{[]byte("gg"), []byte("g\x00")} {
		if fp := groupFootprint(t, s, g); fp != [4]int{1, 2, 4, 4} {
			t.Errorf("group %q changed: %v", g, fp)
		}
	}
	if m, _, _ := streams.Meta(s.View(), 0, key); m.Stream.Length != 4 {
		t.Errorf("stream changed: %+v", m.Stream)
	}
	seq := s.LastSeq()
	if existed, err := destroy(t, s, key, grp); existed || err != nil || s.LastSeq() != seq {
		t.Errorf("second Destroy = %v, %v", existed, err)
	}
	if _, err := destroy(t, s, []byte("nokey"), grp); !errors.Is(err, groups.ErrNoKey) {
		t.Errorf("Destroy on missing key: %v", err)
	}
	setString(t, s, []byte("str"))
	if _, err := destroy(t, s, []byte("str"), grp); !errors.Is(err, materialize.ErrWrongType) {
		t.Errorf("Destroy on string: %v", err)
	}
	if _, _, err := groups.ReadNew(s.View(), 0, key, groups.ReadArgs{Group: grp, Consumer: alice}); !errors.Is(err, groups.ErrNoGroup) {
		t.Errorf("ReadNew after Destroy: %v", err)
	}
}

// ---------------------------------------------------------------- XREADGROUP >

func TestReadNew(t *testing.T) {
	s, c := open(t)
	addN(t, s, key, 1, 5)
	mustCreate(t, s, key, grp, groups.CreateArgs{ID: codec.ID{}, EntriesRead: 0})

	c.Set(t0 + 10)
	es := readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: alice, Count: 2})
	if !slices.Equal(entryIDs(es), ids(1, 2)) {
		t.Fatalf("first read = %v", entryIDs(es))
	}
	if string(es[1].Fields[0]) != "n" || string(es[1].Fields[1]) != "2" {
		t.Errorf("fields = %q", es[1].Fields)
	}
	for _, at := range ids(1, 2) {
		pe, ok := pelEntry(t, s, grp, at)
		if !ok || pe.DeliveryCount != 1 || pe.DeliveryTimeMs != t0+10 || !bytes.Equal(pe.Consumer, alice) {
			t.Errorf("PEL %v = %+v, %v", at, pe, ok)
		}
	}
	if got := consumerPEL(t, s, grp, alice); !slices.Equal(got, ids(1, 2)) {
		t.Errorf("alice's PEL index = %v", got)
	}
	if g := lookup(t, s, key, grp); g.LastDeliveredID != id(2) || g.EntriesRead != 2 {
		t.Errorf("group after read = %+v", g)
	}
	if cs, ok := consumer(t, s, grp, alice); !ok || cs.SeenTimeMs != t0+10 || cs.ActiveTimeMs != t0+10 {
		t.Errorf("alice = %+v, %v", cs, ok)
	}

	c.Set(t0 + 20)
	es = readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: bob})
	if !slices.Equal(entryIDs(es), ids(3, 4, 5)) {
		t.Fatalf("second read = %v", entryIDs(es))
	}
	if g := lookup(t, s, key, grp); g.LastDeliveredID != id(5) || g.EntriesRead != 5 {
		t.Errorf("group after reading all = %+v", g)
	}
	if got := consumerPEL(t, s, grp, bob); !slices.Equal(got, ids(3, 4, 5)) {
		t.Errorf("bob's PEL index = %v", got)
	}
	if got := consumerPEL(t, s, grp, alice); !slices.Equal(got, ids(1, 2)) {
		t.Errorf("alice's PEL index = %v", got)
	}

	// Nothing new: no entries, but the consumer's seen-time moves.
	c.Set(t0 + 30)
	es = readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: alice})
	if len(es) != 0 {
		t.Errorf("read with nothing new = %v", entryIDs(es))
	}
	if cs, _ := consumer(t, s, grp, alice); cs.SeenTimeMs != t0+30 || cs.ActiveTimeMs != t0+10 {
		t.Errorf("alice after empty read = %+v", cs)
	}
	// A new consumer that reads nothing exists with active-time -1.
	readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: []byte("carol")})
	if cs, ok := consumer(t, s, grp, []byte("carol")); !ok || cs.SeenTimeMs != t0+30 || cs.ActiveTimeMs != -1 {
		t.Errorf("carol = %+v, %v", cs, ok)
	}
	if g := lookup(t, s, key, grp); g.LastDeliveredID != id(5) {
		t.Errorf("empty read moved the group: %+v", g)
	}

	// New entries continue after last-delivered-id.
	addN(t, s, key, 6, 7)
	if es := readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: alice}); !slices.Equal(entryIDs(es), ids(6, 7)) {
		t.Errorf("read after XADD = %v", entryIDs(es))
	}
	if g := lookup(t, s, key, grp); g.EntriesRead != 7 {
		t.Errorf("EntriesRead = %d, want 7", g.EntriesRead)
	}

	if _, _, err := groups.ReadNew(s.View(), 0, key, groups.ReadArgs{Group: []byte("nope"), Consumer: alice}); !errors.Is(err, groups.ErrNoGroup) {
		t.Errorf("ReadNew missing group: %v", err)
	}
	if _, _, err := groups.ReadNew(s.View(), 0, []byte("nokey"), groups.ReadArgs{Group: grp, Consumer: alice}); !errors.Is(err, groups.ErrNoGroup) {
		t.Errorf("ReadNew missing key: %v", err)
	}
}

func TestReadNewCountsEntriesReadPartially(t *testing.T) {
	s, _ := open(t)
	addN(t, s, key, 1, 10)
	mustCreate(t, s, key, grp, groups.CreateArgs{EntriesRead: 0})
	for i, want := range []int64{3, 6, 9, 10} {
		readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: alice, Count: 3})
		if g := lookup(t, s, key, grp); g.EntriesRead != want {
			t.Errorf("read %d: EntriesRead = %d, want %d", i, g.EntriesRead, want)
		}
	}
}

// Redis's "Consumer group read counter and lag sanity" test: a group created
// at 0 (entries-read unknown) that reads one entry of five has entries-read
// 1, because streamEstimateDistanceFromFirstEverEntry recovers the counter
// at the stream's first entry.
func TestReadNewRecoversUnknownEntriesRead(t *testing.T) {
	s, _ := open(t)
	addN(t, s, key, 1, 5)
	mustCreate(t, s, key, grp, groups.CreateArgs{EntriesRead: groups.InvalidEntriesRead})
	readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: alice, Count: 1})
	if g := lookup(t, s, key, grp); g.EntriesRead != 1 {
		t.Errorf("EntriesRead = %d, want 1", g.EntriesRead)
	}
}

func TestReadNewUnknownEntriesReadBecomesExactAtEnd(t *testing.T) {
	s, _ := open(t)
	addN(t, s, key, 1, 5)
	mustCreate(t, s, key, grp, groups.CreateArgs{ID: id(2), EntriesRead: groups.InvalidEntriesRead})
	readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: alice})
	if g := lookup(t, s, key, grp); g.EntriesRead != 5 || g.LastDeliveredID != id(5) {
		t.Errorf("group = %+v, want entries-read 5 at 5-0", g)
	}
}

func TestReadNewNoAck(t *testing.T) {
	s, _ := open(t)
	addN(t, s, key, 1, 3)
	mustCreate(t, s, key, grp, groups.CreateArgs{EntriesRead: 0})
	es := readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: alice, NoAck: true, Count: 2})
	if !slices.Equal(entryIDs(es), ids(1, 2)) {
		t.Fatalf("read = %v", entryIDs(es))
	}
	if fp := groupFootprint(t, s, grp); fp[2] != 0 || fp[3] != 0 {
		t.Errorf("NOACK added PEL entries: %v", fp)
	}
	if g := lookup(t, s, key, grp); g.LastDeliveredID != id(2) || g.EntriesRead != 2 {
		t.Errorf("group = %+v", g)
	}
	// Seen, not active: active-time moves only when entries enter the PEL
	// (Redis 7.2's streamReplyWithRange).
	if cs, ok := consumer(t, s, grp, alice); !ok || cs.ActiveTimeMs != -1 || cs.SeenTimeMs != t0 {
		t.Errorf("consumer = %+v, %v", cs, ok)
	}
	sum, err := groups.PendingSummary(s.View(), 0, key, grp)
	if err != nil || sum.Count != 0 {
		t.Errorf("summary = %+v, %v", sum, err)
	}
}

// ---------------------------------------------------------------- XREADGROUP with an ID

func TestReadHistory(t *testing.T) {
	s, c := open(t)
	addN(t, s, key, 1, 6)
	mustCreate(t, s, key, grp, groups.CreateArgs{})
	readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: alice, Count: 3})
	readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: bob, Count: 2})
	lastBefore := lookup(t, s, key, grp)

	c.Set(t0 + 500)
	es := readHistory(t, s, key, groups.ReadArgs{Group: grp, Consumer: alice}, codec.ID{})
	if !slices.Equal(entryIDs(es), ids(1, 2, 3)) {
		t.Fatalf("alice history = %v", entryIDs(es))
	}
	for _, e := range es {
		if len(e.Fields) != 2 || string(e.Fields[1]) != fmt.Sprint(e.ID.Ms) {
			t.Errorf("entry %v fields %q", e.ID, e.Fields)
		}
		pe, _ := pelEntry(t, s, grp, e.ID)
		if pe.DeliveryCount != 2 || pe.DeliveryTimeMs != t0+500 || !bytes.Equal(pe.Consumer, alice) {
			t.Errorf("PEL %v after history read = %+v", e.ID, pe)
		}
	}
	// History reads do not move the group (only the first key of its
	// delivery-time index: 1-3 were delivered again, 4-0 is now the oldest).
	g := lookup(t, s, key, grp)
	if g.TimeFirst != (codec.PELTimePos{Time: t0, ID: id(4)}) {
		t.Errorf("TimeFirst after history read = %+v", g.TimeFirst)
	}
	g.TimeFirst, g.TimeNext = lastBefore.TimeFirst, lastBefore.TimeNext
	if !reflect.DeepEqual(g, lastBefore) {
		t.Errorf("group moved: %+v -> %+v", lastBefore, g)
	}
	if got := consumerPEL(t, s, grp, alice); !slices.Equal(got, ids(1, 2, 3)) {
		t.Errorf("alice's PEL index = %v", got)
	}

	c.Set(t0 + 600)
	if es := readHistory(t, s, key, groups.ReadArgs{Group: grp, Consumer: alice, Count: 1}, id(1)); !slices.Equal(entryIDs(es), ids(2)) {
		t.Errorf("after 1-0 count 1 = %v", entryIDs(es))
	}
	if pe, _ := pelEntry(t, s, grp, id(2)); pe.DeliveryCount != 3 || pe.DeliveryTimeMs != t0+600 {
		t.Errorf("PEL 2 = %+v", pe)
	}
	if pe, _ := pelEntry(t, s, grp, id(3)); pe.DeliveryCount != 2 || pe.DeliveryTimeMs != t0+500 {
		t.Errorf("PEL 3 touched: %+v", pe)
	}
	if es := readHistory(t, s, key, groups.ReadArgs{Group: grp, Consumer: bob}, id(4)); !slices.Equal(entryIDs(es), ids(5)) {
		t.Errorf("bob after 4-0 = %v", entryIDs(es))
	}
	if es := readHistory(t, s, key, groups.ReadArgs{Group: grp, Consumer: alice}, id(3)); len(es) != 0 {
		t.Errorf("alice after 3-0 = %v", entryIDs(es))
	}
	es = readHistory(t, s, key, groups.ReadArgs{Group: grp, Consumer: alice}, codec.MaxID)
	if es == nil || len(es) != 0 {
		t.Errorf("after MaxID = %#v, want empty non-nil", es)
	}
	// An unknown consumer has no history (and is created).
	if es := readHistory(t, s, key, groups.ReadArgs{Group: grp, Consumer: []byte("dave")}, codec.ID{}); len(es) != 0 {
		t.Errorf("dave = %v", entryIDs(es))
	}
	if _, ok := consumer(t, s, grp, []byte("dave")); !ok {
		t.Errorf("history read did not create the consumer")
	}
	// Acked entries leave the history.
	ack(t, s, key, grp, id(2))
	if es := readHistory(t, s, key, groups.ReadArgs{Group: grp, Consumer: alice}, codec.ID{}); !slices.Equal(entryIDs(es), ids(1, 3)) {
		t.Errorf("after ack = %v", entryIDs(es))
	}
	if _, _, err := groups.ReadHistory(s.View(), 0, key, groups.ReadArgs{Group: []byte("nope"), Consumer: alice}, codec.ID{}); !errors.Is(err, groups.ErrNoGroup) {
		t.Errorf("missing group: %v", err)
	}
}

func TestReadHistoryDeletedEntries(t *testing.T) {
	s, _ := open(t)
	addN(t, s, key, 1, 3)
	mustCreate(t, s, key, grp, groups.CreateArgs{})
	readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: alice})
	if err := commit(t, s, func(v *materialize.View) ([]codec.Event, error) {
		_, evs, err := streams.Del(v, 0, key, ids(2))
		return evs, err
	}); err != nil {
		t.Fatal(err)
	}
	es := readHistory(t, s, key, groups.ReadArgs{Group: grp, Consumer: alice}, codec.ID{})
	if !slices.Equal(entryIDs(es), ids(1, 2, 3)) {
		t.Fatalf("history = %v", entryIDs(es))
	}
	if es[1].Fields != nil {
		t.Errorf("deleted entry fields = %q, want nil", es[1].Fields)
	}
	if es[0].Fields == nil || es[2].Fields == nil {
		t.Errorf("live entries lost their fields")
	}
	// The deleted entry stays pending until acknowledged.
	if _, ok := pelEntry(t, s, grp, id(2)); !ok {
		t.Errorf("deleted entry left the PEL")
	}
	if n := ack(t, s, key, grp, id(2)); n != 1 {
		t.Errorf("ack of deleted pending entry = %d", n)
	}
}

// Redis's streamReplyWithRangeFromConsumerPEL bumps delivery count and time
// only for entries still in the stream; deleted ones are replied with a nil
// field list and left untouched.
func TestReadHistoryDeletedEntryNotRedelivered(t *testing.T) {
	s, c := open(t)
	addN(t, s, key, 1, 2)
	mustCreate(t, s, key, grp, groups.CreateArgs{})
	readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: alice})
	if err := commit(t, s, func(v *materialize.View) ([]codec.Event, error) {
		_, evs, err := streams.Del(v, 0, key, ids(2))
		return evs, err
	}); err != nil {
		t.Fatal(err)
	}
	c.Advance(100)
	readHistory(t, s, key, groups.ReadArgs{Group: grp, Consumer: alice}, codec.ID{})
	if pe, _ := pelEntry(t, s, grp, id(2)); pe.DeliveryCount != 1 || pe.DeliveryTimeMs != t0 {
		t.Errorf("deleted entry's PEL = %+v, want count 1 at t0", pe)
	}
	if pe, _ := pelEntry(t, s, grp, id(1)); pe.DeliveryCount != 2 {
		t.Errorf("live entry's PEL = %+v, want count 2", pe)
	}
}

// ---------------------------------------------------------------- XACK

func TestAck(t *testing.T) {
	s, _ := open(t)
	addN(t, s, key, 1, 5)
	mustCreate(t, s, key, grp, groups.CreateArgs{})
	readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: alice, Count: 3})
	readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: bob})

	if n := ack(t, s, key, grp, id(1), id(1), id(4), id(99)); n != 2 {
		t.Errorf("XACK 1 1 4 99 = %d, want 2", n)
	}
	if _, ok := pelEntry(t, s, grp, id(1)); ok {
		t.Errorf("1-0 still pending")
	}
	if got := consumerPEL(t, s, grp, alice); !slices.Equal(got, ids(2, 3)) {
		t.Errorf("alice's index = %v", got)
	}
	if got := consumerPEL(t, s, grp, bob); !slices.Equal(got, ids(5)) {
		t.Errorf("bob's index = %v", got)
	}
	seq := s.LastSeq()
	if n := ack(t, s, key, grp, id(1), id(4)); n != 0 || s.LastSeq() != seq {
		t.Errorf("second XACK = %d (committed %v)", n, s.LastSeq() != seq)
	}
	if n := ack(t, s, key, []byte("nope"), id(2)); n != 0 {
		t.Errorf("XACK missing group = %d", n)
	}
	if n := ack(t, s, []byte("nokey"), grp, id(2)); n != 0 {
		t.Errorf("XACK missing key = %d", n)
	}
	setString(t, s, []byte("str"))
	if _, _, err := groups.Ack(s.View(), 0, []byte("str"), grp, ids(1)); !errors.Is(err, materialize.ErrWrongType) {
		t.Errorf("XACK on string: %v", err)
	}
	if n := ack(t, s, key, grp, id(2), id(3), id(5)); n != 3 {
		t.Errorf("XACK rest = %d", n)
	}
	if fp := groupFootprint(t, s, grp); fp[2] != 0 || fp[3] != 0 {
		t.Errorf("PEL not empty: %v", fp)
	}
}

// ---------------------------------------------------------------- XPENDING

func TestPendingSummary(t *testing.T) {
	s, _ := open(t)
	addN(t, s, key, 1, 7)
	mustCreate(t, s, key, grp, groups.CreateArgs{})
	sum, err := groups.PendingSummary(s.View(), 0, key, grp)
	if err != nil || sum.Count != 0 || len(sum.Consumers) != 0 || !sum.Min.IsZero() || !sum.Max.IsZero() {
		t.Errorf("empty summary = %+v, %v", sum, err)
	}
	readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: []byte("bob"), Count: 2})
	readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: []byte("alice"), Count: 3})
	readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: []byte("Zed"), Count: 1})
	readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: []byte("idle")}) // gets 7
	ack(t, s, key, grp, id(7))
	sum, err = groups.PendingSummary(s.View(), 0, key, grp)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Count != 6 || sum.Min != id(1) || sum.Max != id(6) {
		t.Errorf("summary = %+v", sum)
	}
	want := []groups.ConsumerCount{{[]byte("Zed"), 1}, {[]byte("alice"), 3}, {[]byte("bob"), 2}}
	if len(sum.Consumers) != len(want) {
		t.Fatalf("consumers = %+v", sum.Consumers)
	}
	for i := range want {
		if !bytes.Equal(sum.Consumers[i].Consumer, want[i].Consumer) || sum.Consumers[i].Count != want[i].Count {
			t.Errorf("consumer %d = %q/%d, want %q/%d", i, sum.Consumers[i].Consumer, sum.Consumers[i].Count, want[i].Consumer, want[i].Count)
		}
	}
	if _, err := groups.PendingSummary(s.View(), 0, key, []byte("nope")); !errors.Is(err, groups.ErrNoGroup) {
		t.Errorf("missing group: %v", err)
	}
}

func TestPendingRange(t *testing.T) {
	s, c := open(t)
	addN(t, s, key, 1, 6)
	mustCreate(t, s, key, grp, groups.CreateArgs{})
	readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: alice, Count: 3}) // 1 2 3 at t0
	c.Advance(1000)
	readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: bob, Count: 2}) // 4 5 at t0+1000
	c.Advance(500)
	readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: alice})                      // 6 at t0+1500
	readHistory(t, s, key, groups.ReadArgs{Group: grp, Consumer: alice, Count: 1}, id(1)) // 2: count 2, time t0+1500
	c.Advance(100)                                                                        // now t0+1600

	all := pendingRange(t, s, allPending(groups.RangeArgs{}))
	if !slices.Equal(pendingIDs(all), ids(1, 2, 3, 4, 5, 6)) {
		t.Fatalf("all = %v", pendingIDs(all))
	}
	wantIdle := map[uint64]int64{1: 1600, 2: 100, 3: 1600, 4: 600, 5: 600, 6: 100}
	wantOwner := map[uint64][]byte{1: alice, 2: alice, 3: alice, 4: bob, 5: bob, 6: alice}
	for _, p := range all {
		if p.IdleMs != wantIdle[p.ID.Ms] || !bytes.Equal(p.Consumer, wantOwner[p.ID.Ms]) {
			t.Errorf("%v: idle %d owner %q; want %d %q", p.ID, p.IdleMs, p.Consumer, wantIdle[p.ID.Ms], wantOwner[p.ID.Ms])
		}
		wantCount := uint64(1)
		if p.ID.Ms == 2 {
			wantCount = 2
		}
		if p.DeliveryCount != wantCount {
			t.Errorf("%v: delivery count %d, want %d", p.ID, p.DeliveryCount, wantCount)
		}
	}

	for _, tc := range []struct {
		name string
		a    groups.RangeArgs
		want []codec.ID
	}{
		{"count", groups.RangeArgs{End: codec.MaxID, Count: 2}, ids(1, 2)},
		{"bounds", groups.RangeArgs{Start: id(2), End: id(4), Count: 10}, ids(2, 3, 4)},
		{"bounds by seq", groups.RangeArgs{Start: codec.ID{Ms: 2, Seq: 1}, End: codec.ID{Ms: 4, Seq: 0}, Count: 10}, ids(3, 4)},
		{"single", groups.RangeArgs{Start: id(5), End: id(5), Count: 10}, ids(5)},
		{"end before start", groups.RangeArgs{Start: id(5), End: id(4), Count: 10}, nil},
		{"count 0", groups.RangeArgs{End: codec.MaxID, Count: 0}, nil},
		{"count negative", groups.RangeArgs{End: codec.MaxID, Count: -1}, nil},
		{"alice", groups.RangeArgs{End: codec.MaxID, Count: 10, Consumer: alice}, ids(1, 2, 3, 6)},
		{"alice bounded", groups.RangeArgs{Start: id(2), End: id(5), Count: 10, Consumer: alice}, ids(2, 3)},
		{"alice count", groups.RangeArgs{End: codec.MaxID, Count: 3, Consumer: alice}, ids(1, 2, 3)},
		{"bob", groups.RangeArgs{End: codec.MaxID, Count: 10, Consumer: bob}, ids(4, 5)},
		{"prefix of alice", groups.RangeArgs{End: codec.MaxID, Count: 10, Consumer: []byte("alice")}, nil},
		{"unknown consumer", groups.RangeArgs{End: codec.MaxID, Count: 10, Consumer: []byte("zoe")}, nil},
		{"idle 600", groups.RangeArgs{End: codec.MaxID, Count: 10, MinIdleMs: 600}, ids(1, 3, 4, 5)},
		{"idle 601", groups.RangeArgs{End: codec.MaxID, Count: 10, MinIdleMs: 601}, ids(1, 3)},
		{"idle count applies after filter", groups.RangeArgs{End: codec.MaxID, Count: 2, MinIdleMs: 600}, ids(1, 3)},
		{"idle and consumer", groups.RangeArgs{End: codec.MaxID, Count: 10, MinIdleMs: 1000, Consumer: alice}, ids(1, 3)},
		{"idle too high", groups.RangeArgs{End: codec.MaxID, Count: 10, MinIdleMs: 5000}, nil},
	} {
		got := pendingRange(t, s, tc.a)
		if got == nil {
			t.Errorf("%s: nil result, want non-nil slice", tc.name)
		}
		if !slices.Equal(pendingIDs(got), tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, pendingIDs(got), tc.want)
		}
	}

	// Idle never goes negative when the clock steps back.
	c.Set(t0 - 10_000)
	for _, p := range pendingRange(t, s, allPending(groups.RangeArgs{})) {
		if p.IdleMs != 0 {
			t.Errorf("%v: idle %d after clock step back, want 0", p.ID, p.IdleMs)
		}
	}
	if _, err := groups.PendingRange(s.View(), 0, key, []byte("nope"), allPending(groups.RangeArgs{})); !errors.Is(err, groups.ErrNoGroup) {
		t.Errorf("missing group: %v", err)
	}
	// Consumer names in the result are copies.
	ps := pendingRange(t, s, allPending(groups.RangeArgs{}))
	ack(t, s, key, grp, ids(1, 2, 3, 4, 5, 6)...)
	readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: []byte("xxxxxx\x00")})
	if !bytes.Equal(ps[0].Consumer, alice) {
		t.Errorf("Pending.Consumer aliased: %q", ps[0].Consumer)
	}
}

// ---------------------------------------------------------------- PEL ownership

// A group destroyed and re-created at 0 starts with an empty PEL: the
// entries are delivered anew and only the new consumer owns them.
func TestRedeliveryAfterRecreate(t *testing.T) {
	s, c := open(t)
	addN(t, s, key, 1, 3)
	mustCreate(t, s, key, grp, groups.CreateArgs{})
	readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: alice})
	if got := consumerPEL(t, s, grp, alice); !slices.Equal(got, ids(1, 2, 3)) {
		t.Fatalf("alice = %v", got)
	}
	if _, err := destroy(t, s, key, grp); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, key, grp, groups.CreateArgs{ID: codec.ID{}})
	c.Advance(50)
	es := readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: bob, Count: 2})
	if !slices.Equal(entryIDs(es), ids(1, 2)) {
		t.Fatalf("bob read = %v", entryIDs(es))
	}
	if got := pendingRange(t, s, allPending(groups.RangeArgs{Consumer: alice})); len(got) != 0 {
		t.Errorf("alice still owns %v", pendingIDs(got))
	}
	if got := pendingRange(t, s, allPending(groups.RangeArgs{Consumer: bob})); !slices.Equal(pendingIDs(got), ids(1, 2)) {
		t.Errorf("bob owns %v", pendingIDs(got))
	}
	if got := consumerPEL(t, s, grp, alice); len(got) != 0 {
		t.Errorf("alice's Q index = %v", got)
	}
	for _, at := range ids(1, 2) {
		pe, ok := pelEntry(t, s, grp, at)
		if !ok || !bytes.Equal(pe.Consumer, bob) || pe.DeliveryCount != 1 || pe.DeliveryTimeMs != t0+50 {
			t.Errorf("PEL %v = %+v, %v", at, pe, ok)
		}
	}
	if _, ok := consumer(t, s, grp, alice); ok {
		t.Errorf("alice survived Destroy")
	}
}

// When last-delivered-id moves back while entries are still pending (what
// XGROUP SETID does), '>' re-delivers them and the PEL entry changes owner
// in both indexes, with delivery count reset to 1 as in Redis.
func TestRedeliveryMovesOwner(t *testing.T) {
	s, c := open(t)
	addN(t, s, key, 1, 3)
	mustCreate(t, s, key, grp, groups.CreateArgs{})
	readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: alice})
	readHistory(t, s, key, groups.ReadArgs{Group: grp, Consumer: alice}, codec.ID{}) // counts 2

	// SETID g 0.
	if err := commit(t, s, func(v *materialize.View) ([]codec.Event, error) {
		return groups.SetID(v, 0, key, grp, codec.ID{}, false, groups.InvalidEntriesRead)
	}); err != nil {
		t.Fatal(err)
	}
	c.Advance(70)
	es := readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: bob, Count: 2})
	if !slices.Equal(entryIDs(es), ids(1, 2)) {
		t.Fatalf("bob read = %v", entryIDs(es))
	}
	if got := pendingIDs(pendingRange(t, s, allPending(groups.RangeArgs{Consumer: alice}))); !slices.Equal(got, ids(3)) {
		t.Errorf("alice owns %v, want [3-0]", got)
	}
	if got := pendingIDs(pendingRange(t, s, allPending(groups.RangeArgs{Consumer: bob}))); !slices.Equal(got, ids(1, 2)) {
		t.Errorf("bob owns %v", got)
	}
	if got := consumerPEL(t, s, grp, alice); !slices.Equal(got, ids(3)) {
		t.Errorf("alice's Q index = %v", got)
	}
	if got := consumerPEL(t, s, grp, bob); !slices.Equal(got, ids(1, 2)) {
		t.Errorf("bob's Q index = %v", got)
	}
	for _, p := range pendingRange(t, s, allPending(groups.RangeArgs{})) {
		switch p.ID {
		case id(1), id(2):
			if !bytes.Equal(p.Consumer, bob) || p.DeliveryCount != 1 || p.IdleMs != 0 {
				t.Errorf("%v = %+v", p.ID, p)
			}
		case id(3):
			if !bytes.Equal(p.Consumer, alice) || p.DeliveryCount != 2 {
				t.Errorf("%v = %+v", p.ID, p)
			}
		}
	}
	sum, _ := groups.PendingSummary(s.View(), 0, key, grp)
	if sum.Count != 3 || len(sum.Consumers) != 2 || sum.Consumers[0].Count != 1 || sum.Consumers[1].Count != 2 {
		t.Errorf("summary = %+v", sum)
	}
	// History follows the owner.
	if got := entryIDs(readHistory(t, s, key, groups.ReadArgs{Group: grp, Consumer: alice}, codec.ID{})); !slices.Equal(got, ids(3)) {
		t.Errorf("alice history = %v", got)
	}
	// Re-delivering to the same owner keeps its index entry.
	if err := commit(t, s, func(v *materialize.View) ([]codec.Event, error) {
		return groups.SetID(v, 0, key, grp, id(2), false, groups.InvalidEntriesRead)
	}); err != nil {
		t.Fatal(err)
	}
	readNew(t, s, key, groups.ReadArgs{Group: grp, Consumer: alice})
	if got := consumerPEL(t, s, grp, alice); !slices.Equal(got, ids(3)) {
		t.Errorf("alice's Q index after same-owner redelivery = %v", got)
	}
	if pe, _ := pelEntry(t, s, grp, id(3)); pe.DeliveryCount != 1 || !bytes.Equal(pe.Consumer, alice) {
		t.Errorf("PEL 3 = %+v", pe)
	}
	// Acking by the new owner clears both indexes.
	if n := ack(t, s, key, grp, ids(1, 2, 3)...); n != 3 {
		t.Errorf("ack = %d", n)
	}
	if fp := groupFootprint(t, s, grp); fp[2] != 0 || fp[3] != 0 {
		t.Errorf("PEL not empty: %v", fp)
	}
}
