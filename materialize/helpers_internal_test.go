package materialize

import (
	"testing"

	"github.com/sediment-dev/sediment/codec"
)

// openTemp opens a store in a temporary directory, closed with the test.
func openTemp(t *testing.T) *Store {
	t.Helper()
	s, err := Open(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// eventWriters returns write, which commits events as one decision's, and
// must, which is write failing the test on an error.
func eventWriters(t *testing.T, s *Store) (write func(...codec.Event) error, must func(...codec.Event)) {
	write = func(events ...codec.Event) error {
		_, err := s.Write(func(*View) ([]codec.Event, error) { return events, nil })
		return err
	}
	must = func(events ...codec.Event) {
		t.Helper()
		if err := write(events...); err != nil {
			t.Fatal(err)
		}
	}
	return write, must
}

// valueOf returns m's string value as MetaWith handed it over, read from
// the change log when m.Ref locates it there.
func valueOf(v *View, m codec.Meta) ([]byte, error) {
	if m.Ref.IsZero() {
		return m.Value, nil
	}
	b := make([]byte, m.Ref.Len)
	return b, v.ReadValue(m.Ref, b)
}
