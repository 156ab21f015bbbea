package streams_test

import (
	"testing"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/keyspace"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/streams"
)

func idmpAdd(t *testing.T, s *materialize.Store, key, pid, iid string) codec.ID {
	t.Helper()
	got, ok, err := tryAdd(t, s, key, fv1, streams.AddArgs{ID: streams.IDSpec{Auto: true},
		IDMP: &streams.IDMP{PID: []byte(pid), IID: []byte(iid)}, Config: streams.Config{IDMPDurationS: 10, IDMPMaxSize: 100}})
	if err != nil || !ok {
		t.Fatalf("XADD IDMP: %v %v", ok, err)
	}
	return got
}

func idmpInfo(t *testing.T, s *materialize.Store, key string) streams.IDMPInfo {
	t.Helper()
	info, err := streams.LoadIDMPInfo(s.View(), 0, []byte(key), streams.DefaultConfig)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func sweep(t *testing.T, s *materialize.Store, limit int) {
	t.Helper()
	var from int64 // from 0 each time: the test's sweeps need no cursor
	if _, err := s.Write(func(v *materialize.View) ([]codec.Event, error) { return streams.ExpireIDMP(v, &from, limit) }); err != nil {
		t.Fatal(err)
	}
}

func countTag(t *testing.T, s *materialize.Store, tag codec.Tag) int {
	t.Helper()
	n := 0
	err := s.View().Iterate([]byte{byte(tag)}, []byte{byte(tag) + 1}, false, func(_, _ []byte) (bool, error) { n++; return true, nil })
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestIDMPExpiry: records expire idmp-duration after their entry's ID
// time, by the sweep (in deadline order, limit per round) or at the
// producer's next XADD; the sweep drops M keys left by a deleted stream.
func TestIDMPExpiry(t *testing.T) {
	s, c := open(t)
	first := idmpAdd(t, s, "s", "p", "a")
	c.Advance(4000)
	idmpAdd(t, s, "s", "p", "b")
	idmpAdd(t, s, "s", "q", "a")
	idmpAdd(t, s, "gone", "p", "a")
	if got := idmpAdd(t, s, "s", "p", "a"); got != first {
		t.Fatalf("duplicate = %v, want %v", got, first)
	}
	if _, _, err := func() (int64, []codec.Event, error) {
		var n int64
		var evs []codec.Event
		_, err := s.Write(func(v *materialize.View) ([]codec.Event, error) {
			var err error
			n, evs, err = keyspace.Del(v, 0, [][]byte{[]byte("gone")})
			return evs, err
		})
		return n, evs, err
	}(); err != nil {
		t.Fatal(err)
	}
	if n := countTag(t, s, codec.TagIDMPExpiry); n != 4 {
		t.Fatalf("M keys: %d, want 4 (one stale)", n)
	}
	// 10 s after the first: "a" of p expires; the stale M key of "gone"
	// is not due yet (it expires with its deadline too).
	c.Advance(6000)
	sweep(t, s, 100)
	if info := idmpInfo(t, s, "s"); info.Pids != 2 || info.IIDs != 2 || info.Added != 3 || info.Duplicates != 1 {
		t.Fatalf("after the first sweep: %+v", info)
	}
	// p's "a" is new again.
	if got := idmpAdd(t, s, "s", "p", "a"); got == first {
		t.Fatal("an expired ID deduplicated")
	}
	// Past every deadline, one key per round.
	c.Advance(20000)
	for i := 0; i < 5; i++ {
		sweep(t, s, 1)
	}
	if info := idmpInfo(t, s, "s"); info.Pids != 0 || info.IIDs != 0 {
		t.Fatalf("after the last sweeps: %+v", info)
	}
	for _, tag := range []codec.Tag{codec.TagIDMPExpiry, codec.TagIDMPByIID, codec.TagIDMPByID, codec.TagIDMPProducer} {
		if n := countTag(t, s, tag); n != 0 {
			t.Errorf("%c keys left: %d", tag, n)
		}
	}
	// Lazy expiry at the producer's XADD, before the sweep.
	x := idmpAdd(t, s, "s", "p", "z")
	c.Advance(10000)
	if got := idmpAdd(t, s, "s", "p", "z"); got == x {
		t.Fatal("an expired ID deduplicated before the sweep")
	}
	if info := idmpInfo(t, s, "s"); info.Pids != 1 || info.IIDs != 1 {
		t.Fatalf("after the lazy expiry: %+v", info)
	}
}
