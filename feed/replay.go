package feed

import (
	"fmt"
	"slices"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/internal/glob"
	"github.com/sediment-dev/sediment/materialize"
)

// ErrNotRetained is Replay's error for a request that starts before the
// oldest record the change log keeps.
type ErrNotRetained struct {
	From, Oldest uint64
}

func (e *ErrNotRetained) Error() string {
	return fmt.Sprintf("change log record %d is not retained: the oldest is %d", e.From, e.Oldest)
}

// ReplayFilter selects events: Match, when set, is a glob pattern on the
// key (events without a key, the db-wide ones, never match it), and Type
// the event's type as its payload names it (string, hash, set, zset,
// list, stream, key, db).
type ReplayFilter struct {
	Match []byte
	Type  string
}

func (f ReplayFilter) keep(e codec.Event) bool {
	if f.Type != "" && typeOf(e) != f.Type {
		return false
	}
	if f.Match != nil && (typeOf(e) == "db" || !glob.Match(f.Match, e.Key)) {
		return false
	}
	return true
}

// ReplayMax is the most records one Replay reads.
const ReplayMax = 10000

// Cursor is a place in the change log for Replay: record Seq, event I of
// it (0: the whole record).
type Cursor struct {
	Seq uint64
	I   int
}

// Replay reads retained change-log records of st from cursor from on
// (from.Seq 0: the oldest retained), at most count records (1..ReplayMax),
// and returns the payloads of their events that pass f, as the feed
// publishes them (docs/change-feed.md; the same logical dbs; an event the
// live feed truncated for NATS's max_payload comes whole), with next, the
// place to ask for next (the record after the last committed one when it
// read up to it). maxBytes, when above 0, bounds the payloads' total size
// plus one byte each (a JSON array's commas): a reply may then end inside
// a record (next.I > 0), and an event that does not fit alone comes
// truncated. A request from before the oldest retained record gets
// *ErrNotRetained.
//
// The db map as of from is the committed one with the SWAPDBs after from
// undone (materialize.Store.SwapRecords).
func Replay(st *materialize.Store, prefix string, from Cursor, count int, f ReplayFilter, maxBytes int) (next Cursor, payloads [][]byte, err error) {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	oldest := st.FirstSeq()
	last, logical := st.CommittedDBMap()
	switch {
	case from.Seq == 0 && oldest == 0:
		return Cursor{Seq: last + 1}, nil, nil
	case from.Seq == 0:
		from = Cursor{Seq: oldest}
	case from.Seq < oldest:
		return Cursor{}, nil, &ErrNotRetained{From: from.Seq, Oldest: oldest}
	}
	if from.Seq > last {
		return Cursor{Seq: from.Seq}, nil, nil
	}
	count = min(max(count, 1), ReplayMax)
	if err := undoSwaps(st, from.Seq, last, &logical); err != nil {
		return Cursor{}, nil, err
	}
	mapDB := func(s uint8) uint8 { return logical[s] }
	next, size := from, 0
	var gone error
	first := true
	err = st.ChangeLog(from.Seq, func(r codec.Record) bool {
		if first && r.Seq != from.Seq {
			// Dropped after the check above (pruning runs meanwhile): the
			// log now starts later.
			gone = &ErrNotRetained{From: from.Seq, Oldest: r.Seq}
			return false
		}
		first = false
		if r.Seq > last || count == 0 {
			return false
		}
		for i, e := range r.Events {
			if r.Seq == from.Seq && i < from.I {
				swapDBs(&logical, e) // before the cursor: read for the db map only
				continue
			}
			if f.keep(e) {
				rr, _ := withoutTrailer(r, i)
				_, p, err := Encode(prefix, rr, i, mapDB)
				if err == nil && maxBytes > 0 && size+len(p)+1 > maxBytes {
					if len(payloads) > 0 {
						next = Cursor{Seq: r.Seq, I: i}
						return false // this event starts the next reply
					}
					_, p, err = EncodeTruncated(prefix, rr, i, mapDB)
				}
				if err == nil { // an event that cannot be encoded is skipped, as the publisher skips it
					payloads = append(payloads, p)
					size += len(p) + 1
				}
			}
			swapDBs(&logical, e)
		}
		next = Cursor{Seq: r.Seq + 1}
		count--
		return true
	})
	if err == nil {
		err = gone
	}
	if err != nil {
		return Cursor{}, nil, err
	}
	return next, payloads, nil
}

// undoSwaps turns logical, the db map after record last, into the map
// before record from: each SWAPDB of records from..last undone, the latest
// first.
func undoSwaps(st *materialize.Store, from, last uint64, logical *[256]uint8) error {
	seqs, err := st.SwapRecords(from)
	if err != nil {
		return err
	}
	for _, seq := range slices.Backward(seqs) {
		if seq > last {
			continue
		}
		var swaps []codec.Event
		var gone error
		err := st.ChangeLog(seq, func(r codec.Record) bool {
			if r.Seq != seq { // dropped meanwhile
				gone = &ErrNotRetained{From: from, Oldest: r.Seq}
				return false
			}
			for _, e := range r.Events {
				if e.Op == codec.OpSwapDB && len(e.Args) == 1 {
					swaps = append(swaps, codec.Event{Op: e.Op, DB: e.DB, Args: [][]byte{slices.Clone(e.Args[0])}})
				}
			}
			return false
		})
		if err == nil {
			err = gone
		}
		if err != nil {
			return err
		}
		for _, e := range slices.Backward(swaps) {
			swapDBs(logical, e)
		}
	}
	return nil
}
