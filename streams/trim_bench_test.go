package streams_test

import (
	"fmt"
	"testing"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/internal/testclock"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/streams"
)

// BenchmarkTrimShape measures capped-stream XADDs (MAXLEN 1000, exact and
// ~) with trims applied as point deletions or as one range deletion each,
// on a store on disk, so that the choice of streams.PointTrimMax rests on
// figures (docs/key-format.md, "How deletions apply"). Run it long enough
// for flushes and compactions to happen, e.g. -benchtime=200000x.
func BenchmarkTrimShape(b *testing.B) {
	for _, tc := range []struct {
		name     string
		approx   bool
		pointMax uint64
	}{
		{"exact/point", false, 64},
		{"exact/range", false, 0},
		{"approx/point", true, 128},
		{"approx/range", true, 64},
	} {
		b.Run(tc.name, func(b *testing.B) {
			defer func(old uint64) { streams.PointTrimMax = old }(streams.PointTrimMax)
			streams.PointTrimMax = tc.pointMax
			c := testclock.New(1700000000000)
			s, err := materialize.Open(materialize.Options{Dir: b.TempDir(), Now: c.Now, Sync: materialize.SyncNo})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			key := []byte("s")
			fv := [][]byte{[]byte("f"), []byte("v")}
			trim := &streams.Trim{Strategy: streams.TrimMaxLen, MaxLen: 1000, Approx: tc.approx}
			b.ReportAllocs()
			b.ResetTimer()
			var pend []*materialize.Pending
			for i := range b.N {
				c.Advance(1)
				pend = append(pend, s.Submit(func(v *materialize.View) ([]codec.Event, error) {
					_, _, evs, err := streams.Add(v, 0, key, fv, streams.AddArgs{ID: streams.IDSpec{Auto: true}, Trim: trim})
					return evs, err
				}))
				if len(pend) == 16 || i == b.N-1 {
					for _, p := range pend {
						if _, err := p.Wait(); err != nil {
							b.Fatal(err)
						}
					}
					pend = pend[:0]
				}
			}
			b.StopTimer()
			if n, err := streams.Len(s.View(), 0, key); err != nil || (n != uint64(min(b.N, 1000)) && !tc.approx) {
				b.Fatal(fmt.Sprint("length ", n, err))
			}
		})
	}
}
