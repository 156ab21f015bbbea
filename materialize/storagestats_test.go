package materialize

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/sediment-dev/sediment/codec"
)

// TestFlushBytesCountedOnce: the flushed bytes of incompressible values
// are about the values' size, not twice it (Pebble's Metrics.Total counts
// flushes again as WAL bytes when the WAL is off).
func TestFlushBytesCountedOnce(t *testing.T) {
	st, values := writeIncompressible(t, Options{Dir: t.TempDir(), ValueLogMin: -1})
	if st.FlushBytes < values*9/10 || st.FlushBytes > values*13/10 {
		t.Fatalf("flushed %d bytes for %d bytes of incompressible values", st.FlushBytes, values)
	}
	if wa := st.WriteAmp(); wa < 1.8 || wa > 2.4 {
		t.Fatalf("write amplification %.2f (log %d, flush %d, compaction %d): the log once and the flush once make about 2", wa, st.ChangeLogBytes, st.FlushBytes, st.CompactionBytes)
	}
}

// TestLargeValuesWrittenOnce: values kept in the change log (the default
// for 4 KiB and more) are written once: the flushes write their
// references, not them.
func TestLargeValuesWrittenOnce(t *testing.T) {
	st, values := writeIncompressible(t, Options{Dir: t.TempDir()})
	if st.FlushBytes > values/100 {
		t.Fatalf("flushed %d bytes for %d bytes of values kept in the change log", st.FlushBytes, values)
	}
	if wa := st.WriteAmp(); wa < 0.95 || wa > 1.1 {
		t.Fatalf("write amplification %.2f (log %d, flush %d, compaction %d): the log once makes about 1", wa, st.ChangeLogBytes, st.FlushBytes, st.CompactionBytes)
	}
}

// writeIncompressible sets 300 keys to random 100 KB values in a store
// opened with opts, flushes it and returns its storage statistics and the
// bytes of values written.
func writeIncompressible(t *testing.T, opts Options) (StorageStats, int64) {
	t.Helper()
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := rand.New(rand.NewSource(1))
	val := make([]byte, 100000)
	const n = 300 // 30 MB: more than a memtable
	for i := range n {
		for j := range val {
			val[j] = byte(r.Intn(256))
		}
		k := []byte(fmt.Sprintf("k%d", i))
		if _, err := s.Write(func(*View) ([]codec.Event, error) {
			return []codec.Event{codec.SetMetaEvent(0, k, codec.Meta{Type: codec.TypeString, Value: val}, 0)}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	return s.StorageStats(), int64(n * len(val))
}
