package materialize

import (
	"errors"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sediment-dev/sediment/codec"
)

// Txn is one write decided in steps: each Emit applies its events to the
// commit group's batch at once, so the Txn's View sees them, and when the
// decision returns, every event emitted forms one change-log record (none
// emitted: no record). EXEC runs its queued commands in one Txn, each seeing
// the ones before it; scripts will too.
//
// A decision emits only after every check that can fail has passed (decide,
// then emit): Pebble cannot take back what a batch staged, so a decision
// that returns an error after an Emit, or an Emit of a corrupt event, fails
// the whole commit group (every write of the group gets the error and
// nothing of it is committed).
type Txn struct {
	v      *View
	b      *pebble.Batch
	s      *Store
	staged *overlay
	events []codec.Event
	broken error // an Emit failed half-applied
}

// View returns the Txn's view: the committed state, the commit group's
// earlier writes and this Txn's events emitted so far.
func (t *Txn) View() *View { return t.v }

// Events returns the events emitted so far, in order. The slice is the
// Txn's own: callers must not modify it.
func (t *Txn) Events() []codec.Event { return t.events }

// Emit applies events to the batch now and adds them to the Txn's record.
// An error means an event was corrupt (a programming error): the commit
// group fails.
func (t *Txn) Emit(events ...codec.Event) error {
	if t.broken != nil {
		return t.broken
	}
	for _, e := range events {
		if err := t.s.stage(t.v, t.b, e); err != nil {
			t.broken = err
			return err
		}
		t.events = append(t.events, e)
	}
	return nil
}

// errTxnBroken wraps the error of a Txn that cannot be rolled back.
var errTxnBroken = errors.New("materialize: a decision failed after emitting events")

// WriteTxn is Write for a decision that emits as it goes (Txn). It returns
// the record's sequence number (0 when nothing was emitted or decide
// failed) and decide's error. decide runs on the writer goroutine, like
// Write's: it must not call Write and should not block.
func (s *Store) WriteTxn(decide func(tx *Txn) error) (uint64, error) {
	return s.WriteTxnTagged(nil, decide)
}

// WriteTxnTagged is WriteTxn with a tag that the Observer sees in the
// commit group's GroupInfo.
func (s *Store) WriteTxnTagged(tag any, decide func(tx *Txn) error) (uint64, error) {
	req := s.newReq()
	req.txn = decide
	req.tag = tag
	return s.enqueue(req).Wait()
}

// decideTxn runs r's Txn decision against v and the group's batch b. It
// returns the events emitted, decide's error when nothing was emitted, and
// fatal when the group must fail.
func (s *Store) decideTxn(r *writeReq, v *View, b *pebble.Batch) (events []codec.Event, err, fatal error) {
	tx := &Txn{v: v, b: b, s: s, staged: &s.staged}
	err = r.txn(tx)
	switch {
	case tx.broken != nil:
		return nil, nil, tx.broken
	case err != nil && len(tx.events) > 0:
		return nil, nil, errors.Join(errTxnBroken, err)
	}
	return tx.events, err, nil
}
