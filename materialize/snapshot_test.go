package materialize_test

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
)

// TestPinStateSeqIsExact: with every record incrementing one counter,
// the counter read through a pinned state equals the state's Seq, however
// the pin falls among concurrent group commits; and the state does not
// move while later records commit.
func TestPinStateSeqIsExact(t *testing.T) {
	s, err := materialize.Open(materialize.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	counter := func(v *materialize.View) (int, error) {
		m, ok, err := v.Meta(0, []byte("c"))
		if err != nil || !ok {
			return 0, err
		}
		return strconv.Atoi(string(m.Value))
	}
	incr := func(v *materialize.View) ([]codec.Event, error) {
		n, err := counter(v)
		if err != nil {
			return nil, err
		}
		return []codec.Event{codec.SetMetaEvent(0, []byte("c"), codec.Meta{Type: codec.TypeString, Value: []byte(strconv.Itoa(n + 1))}, 0)}, nil
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if _, err := s.Write(incr); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for i := 0; i < 300 || s.LastSeq() < 50; i++ {
		p, err := s.PinState()
		if err != nil {
			t.Fatal(err)
		}
		n, err := counter(p.View())
		if err != nil || uint64(n) != p.Seq() {
			t.Fatalf("pinned at %d, the counter reads %d (%v)", p.Seq(), n, err)
		}
		if i%50 == 0 {
			// Later commits do not show in it.
			for last := s.LastSeq(); s.LastSeq() < last+20; {
				time.Sleep(time.Millisecond)
			}
			if m, _ := counter(p.View()); uint64(m) != p.Seq() {
				t.Fatalf("the pinned state moved from %d to %d", p.Seq(), m)
			}
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
}
