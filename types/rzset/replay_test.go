package rzset_test

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/types/rzset"
)

// TestRankBlocksReplay crashes a store whose ranked set was written with
// small memtables (so Pebble flushes part of it) and checks that replaying
// the change log rebuilds the same set: members, scores, floor and rank
// blocks, which the materializer derives while it applies the events.
func TestRankBlocksReplay(t *testing.T) {
	fs := vfs.NewCrashableMem()
	opts := materialize.Options{FS: fs, Dir: "db", Sync: materialize.SyncAlways, MemTableSize: 256 << 10}
	s, err := materialize.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	key := []byte("board")
	ref := model{}
	rng := rand.New(rand.NewPCG(3, 4))
	for step := range 60 {
		var seq uint64
		if step%3 == 2 {
			var gone [][]byte
			for range 200 {
				gone = append(gone, fmt.Appendf(nil, "p%05d", rng.IntN(8000)))
			}
			seq, err = s.Write(func(v *materialize.View) ([]codec.Event, error) {
				_, ev, err := rzset.Rem(v, 0, key, gone)
				return ev, err
			})
			for _, g := range gone {
				delete(ref, string(g))
			}
		} else {
			var ms []rzset.Member
			for range 300 {
				ms = append(ms, rzset.Member{Member: fmt.Appendf(nil, "p%05d", rng.IntN(8000)), Score: float64(rng.IntN(1000))})
			}
			seq, err = s.Write(func(v *materialize.View) ([]codec.Event, error) {
				_, ev, err := rzset.Add(v, 0, key, ms, rzset.Flags{})
				return ev, err
			})
			for _, m := range ms {
				ref[string(m.Member)] = m.Score
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := s.WaitDurable(seq); err != nil {
			t.Fatal(err)
		}
	}
	crashed := fs.CrashClone(vfs.CrashCloneCfg{})
	s.Close()

	opts.FS = crashed
	var logged strings.Builder
	opts.Logger = slog.New(slog.NewTextHandler(&logged, nil))
	s2, err := materialize.Open(opts)
	if err != nil {
		t.Fatalf("reopen after crash: %v", err)
	}
	defer s2.Close()
	if !strings.Contains(logged.String(), "change log replayed") {
		t.Fatalf("the reopen replayed nothing (the test must cover the replay); log:\n%s", logged.String())
	}
	blocks, ranked := check(t, s2, key, ref, rng, -1)
	if !ranked || blocks < 3 {
		t.Fatalf("after replay: %d blocks, ranked %v; the test needs a ranked set of several blocks", blocks, ranked)
	}
	all, err := rzset.Range(s2.View(), 0, key, rzset.Query{By: rzset.ByRank, Start: 0, Stop: -1, Count: -1})
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "after replay", all, ref.sorted())
}
