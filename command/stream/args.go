package stream

import (
	"math"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/command"
)

// ParseID parses an explicit stream ID argument ("ms-seq", or "ms" with
// the sequence missingSeq), or returns command.ErrInvalidStreamID.
func ParseID(b []byte, missingSeq uint64) (codec.ID, error) {
	id, _, _, err := codec.ParseID(b, missingSeq, false)
	if err != nil {
		return codec.ID{}, command.ErrInvalidStreamID
	}
	return id, nil
}

// parseIDs parses explicit stream IDs (missing sequence 0), all or none.
func parseIDs(args [][]byte) ([]codec.ID, error) {
	ids := make([]codec.ID, len(args))
	for i, a := range args {
		id, err := ParseID(a, 0)
		if err != nil {
			return nil, err
		}
		ids[i] = id
	}
	return ids, nil
}

// RangeBound parses an XRANGE/XPENDING/XAUTOCLAIM bound: "-", "+", an ID,
// or an exclusive "(ID". start selects the missing sequence's default (0
// for a start, the maximum for an end) and the way an exclusive bound
// moves. An exclusive bound with no neighbour is
// command.ErrInvalidStart/ErrInvalidEnd, as in Redis; a malformed ID is
// command.ErrInvalidStreamID.
func RangeBound(b []byte, start bool) (codec.ID, error) {
	switch {
	case len(b) == 1 && b[0] == '-':
		return codec.ID{}, nil
	case len(b) == 1 && b[0] == '+':
		return codec.MaxID, nil
	}
	exclusive := len(b) > 0 && b[0] == '('
	if exclusive {
		b = b[1:]
	}
	missing := uint64(0)
	if !start {
		missing = math.MaxUint64
	}
	id, err := ParseID(b, missing)
	if err != nil || !exclusive {
		return id, err
	}
	if start {
		next, ok := id.Next()
		if !ok {
			return id, command.ErrInvalidStart
		}
		return next, nil
	}
	prev, ok := id.Prev()
	if !ok {
		return id, command.ErrInvalidEnd
	}
	return prev, nil
}

// isDollar reports whether b is "$", the ID of a stream's last entry in
// XGROUP CREATE/SETID (and XREAD).
func isDollar(b []byte) bool { return len(b) == 1 && b[0] == '$' }
