package materialize_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
)

// TestTxnSeesItsEmits: each step of a Txn reads what the steps before it
// emitted, and the whole Txn is one change-log record.
func TestTxnSeesItsEmits(t *testing.T) {
	c := newClock(t0)
	s := openMem(t, c)
	setString(t, s, 0, "a", "1", 0, 0)
	var seen []string
	seq, err := s.WriteTxn(func(tx *materialize.Txn) error {
		for _, v := range []string{"2", "3"} {
			m, ok, err := tx.View().Meta(0, []byte("a"))
			if err != nil || !ok {
				return errors.Join(err, errors.New("a missing"))
			}
			seen = append(seen, string(m.Value))
			if err := tx.Emit(codec.SetMetaEvent(0, []byte("a"), strMeta(v, 0), 0)); err != nil {
				return err
			}
		}
		m, _, err := tx.View().Meta(0, []byte("a"))
		seen = append(seen, string(m.Value))
		return err
	})
	if err != nil || seq != 2 {
		t.Fatalf("WriteTxn = %d, %v", seq, err)
	}
	if !slices.Equal(seen, []string{"1", "2", "3"}) {
		t.Errorf("steps saw %q, want 1 2 3", seen)
	}
	recs := records(t, s, 0)
	if len(recs) != 2 || len(recs[1].Events) != 2 {
		t.Fatalf("records = %+v, want the Txn as one record of 2 events", recs)
	}
	if m, _, _ := s.View().Meta(0, []byte("a")); string(m.Value) != "3" {
		t.Errorf("a = %q after commit", m.Value)
	}
}

// TestTxnErrors: an error before any Emit is the write's own error and
// commits nothing; an error after an Emit, or a corrupt event, fails the
// write (nothing committed) and later writes go on with no gap.
func TestTxnErrors(t *testing.T) {
	c := newClock(t0)
	s := openMem(t, c)
	errNo := errors.New("no")
	if seq, err := s.WriteTxn(func(*materialize.Txn) error { return errNo }); !errors.Is(err, errNo) || seq != 0 {
		t.Fatalf("plain error: %d, %v", seq, err)
	}
	if seq, err := s.WriteTxn(func(*materialize.Txn) error { return nil }); err != nil || seq != 0 {
		t.Fatalf("empty Txn: %d, %v", seq, err)
	}
	seq, err := s.WriteTxn(func(tx *materialize.Txn) error {
		if err := tx.Emit(codec.SetMetaEvent(0, []byte("x"), strMeta("v", 0), 0)); err != nil {
			return err
		}
		return errNo
	})
	if !errors.Is(err, errNo) || seq != 0 {
		t.Fatalf("error after Emit: %d, %v", seq, err)
	}
	var second error
	seq, err = s.WriteTxn(func(tx *materialize.Txn) error {
		if err := tx.Emit(codec.SetMetaEvent(0, []byte("x"), strMeta("v", 0), 0)); err != nil {
			return err
		}
		second = tx.Emit(codec.Event{Op: 'z', Key: []byte("x")})
		return nil // a caller that ignores Emit's error still fails
	})
	if !errors.Is(err, codec.ErrCorrupt) || !errors.Is(second, codec.ErrCorrupt) || seq != 0 {
		t.Fatalf("corrupt Emit: %d, %v (Emit: %v)", seq, err, second)
	}
	if _, ok, _ := s.View().Meta(0, []byte("x")); ok {
		t.Error("a failed Txn's events were committed")
	}
	if got := setString(t, s, 0, "y", "v", 0, 0); got != 1 {
		t.Errorf("seq after failed Txns = %d, want 1", got)
	}
}

// TestTxnReady: the ready hook sees a Txn's events once, as one write.
func TestTxnReady(t *testing.T) {
	c := newClock(t0)
	s := openMem(t, c)
	var calls [][]codec.Event
	s.SetReady(func(_ *materialize.View, events []codec.Event, _ func(materialize.Served)) {
		calls = append(calls, slices.Clone(events))
	})
	if _, err := s.WriteTxn(func(tx *materialize.Txn) error {
		return tx.Emit(codec.SetMetaEvent(0, []byte("a"), strMeta("1", 0), 0), codec.SetMetaEvent(0, []byte("b"), strMeta("1", 0), 0))
	}); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 || len(calls[0]) != 2 {
		t.Errorf("ready calls = %d (%v), want one with 2 events", len(calls), calls)
	}
}
