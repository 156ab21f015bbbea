package materialize

import (
	"bytes"
	"testing"

	"github.com/sediment-dev/sediment/codec"
)

// TestLogBufferNotRetainedAfterLargeRecord: the log's staging buffer, kept
// between groups, is dropped once a group staged more than logBufRetained,
// so one large SET does not hold a copy of its value for the life of the
// process; a small group's buffer is kept for the next one.
func TestLogBufferNotRetainedAfterLargeRecord(t *testing.T) {
	s, err := Open(Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	set := func(v []byte) {
		t.Helper()
		m := codec.Meta{Type: codec.TypeString, Value: v}
		if _, err := s.Write(func(*View) ([]codec.Event, error) {
			return []codec.Event{codec.SetMetaEvent(0, []byte("k"), m, 0)}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	set([]byte("small"))
	s.mu.Lock()
	kept := cap(s.log.buf)
	s.mu.Unlock()
	if kept == 0 {
		t.Fatal("the buffer of a small group was not kept")
	}
	set(bytes.Repeat([]byte("v"), 2*logBufRetained))
	s.mu.Lock()
	kept = cap(s.log.buf)
	s.mu.Unlock()
	if kept > logBufRetained {
		t.Fatalf("the log keeps a %d-byte buffer after a large record; want at most %d", kept, logBufRetained)
	}
}
