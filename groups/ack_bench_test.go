package groups_test

import (
	"testing"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/groups"
	"github.com/sediment-dev/sediment/internal/proccpu"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/streams"
)

// BenchmarkConsumersAck measures the consumer-group cycle of
// `make bench-groups` in process: per cycle, three XADDs, an XREADGROUP
// COUNT 3 by one of 4 consumers in turn, and an XACK of the batch the
// previous consumer read, so the PEL holds two batches of two consumers
// and every XACK removes its first entries (the group's first pending ID
// and first W key move on). Each XREADGROUP is waited for (the next cycle
// acknowledges what it read); the other decisions are submitted without
// waiting and waited for every 512 cycles, as pipelined clients would. It
// reports the Pebble iterators and seeks per cycle, and the process's CPU
// time per cycle (user and system, all threads: steadier than the elapsed
// time on a shared machine).
func BenchmarkConsumersAck(b *testing.B) {
	s, c := openOnDisk(b)
	consumers := [][]byte{[]byte("c0"), []byte("c1"), []byte("c2"), []byte("c3")}
	if _, err := s.Write(func(v *materialize.View) ([]codec.Event, error) {
		return groups.Create(v, 0, key, grp, groups.CreateArgs{MkStream: true})
	}); err != nil {
		b.Fatal(err)
	}
	fields := [][]byte{[]byte("d"), make([]byte, 64)}
	var prev []codec.ID
	cycle := func(i int) []*materialize.Pending {
		var pend []*materialize.Pending
		for range 3 { // one XADD per decision, as clients send them
			pend = append(pend, s.Submit(func(v *materialize.View) ([]codec.Event, error) {
				_, _, evs, err := streams.Add(v, 0, key, fields, streams.AddArgs{ID: streams.IDSpec{Auto: true}})
				return evs, err
			}))
		}
		acks := prev
		var got []codec.ID
		pend = append(pend, s.Submit(func(v *materialize.View) ([]codec.Event, error) {
			es, evs, err := groups.ReadNew(v, 0, key, groups.ReadArgs{Group: grp, Consumer: consumers[i%len(consumers)], Count: 3})
			got = got[:0]
			for _, e := range es {
				got = append(got, e.ID)
			}
			return evs, err
		}))
		if len(acks) > 0 {
			pend = append(pend, s.Submit(func(v *materialize.View) ([]codec.Event, error) {
				_, evs, err := groups.Ack(v, 0, key, grp, acks)
				return evs, err
			}))
		}
		// The next cycle acknowledges this one's batch: wait for it (a
		// Pending is waited for once).
		if _, err := pend[3].Wait(); err != nil {
			b.Fatal(err)
		}
		if len(got) != 3 {
			b.Fatalf("cycle %d read %d entries, want 3", i, len(got))
		}
		prev = append([]codec.ID(nil), got...)
		return append(pend[:3], pend[4:]...)
	}
	run := func(n int) {
		var pend []*materialize.Pending
		for i := range n {
			c.Advance(1)
			pend = append(pend, cycle(i)...)
			if len(pend) >= 5*512 || i == n-1 {
				for _, p := range pend {
					if _, err := p.Wait(); err != nil {
						b.Fatal(err)
					}
				}
				pend = pend[:0]
			}
		}
	}
	run(10_000)
	before, cpu0 := s.IterStats(), proccpu.Self()
	b.ReportAllocs()
	b.ResetTimer()
	run(b.N)
	b.StopTimer()
	b.ReportMetric(float64(proccpu.Self()-cpu0)/float64(b.N), "cpu-ns/cycle")
	st := s.IterStats().Sub(before)
	b.ReportMetric(float64(st.Iterators)/float64(b.N), "iterators/cycle")
	b.ReportMetric(float64(st.Seeks)/float64(b.N), "seeks/cycle")
}
