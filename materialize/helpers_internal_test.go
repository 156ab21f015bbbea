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
