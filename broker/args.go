package broker

import (
	"math"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/command"
)

// parseInt parses a signed 64-bit decimal the way Redis's string2ll does:
// no spaces, no '+', no leading zeros, no overflow. It is the reader's
// parser too, so that arguments and protocol headers agree.
func parseInt(b []byte) (int64, bool) { return command.ParseInt(b) }

// intArg parses an integer argument or returns Redis's not-an-integer error.
func intArg(b []byte) (int64, error) {
	n, ok := parseInt(b)
	if !ok {
		return 0, errNotInteger
	}
	return n, nil
}

// equalFold reports whether b equals the ASCII upper-case word s, ignoring case.
func equalFold(b []byte, s string) bool { return command.EqualFold(b, s) }

// streamID parses an explicit stream ID argument ("ms-seq" or "ms", the
// missing sequence taking missingSeq) or returns Redis's invalid-ID error.
func streamID(b []byte, missingSeq uint64) (codec.ID, error) {
	id, _, _, err := codec.ParseID(b, missingSeq, false)
	if err != nil {
		return codec.ID{}, errInvalidStreamID
	}
	return id, nil
}

// streamIDs parses explicit stream IDs (missing sequence 0), all or none.
func streamIDs(args [][]byte) ([]codec.ID, error) {
	ids := make([]codec.ID, len(args))
	for i, a := range args {
		id, err := streamID(a, 0)
		if err != nil {
			return nil, err
		}
		ids[i] = id
	}
	return ids, nil
}

// rangeBound parses an XRANGE/XPENDING bound: "-", "+", an ID, or an
// exclusive "(ID". start selects the missing-sequence default (0 for a
// start, max for an end) and the direction an exclusive bound moves.
// ok is false when an exclusive bound has no neighbour (the range is empty
// in Redis's terms, which reports errInvalidStart/End).
func rangeBound(b []byte, start bool) (codec.ID, error) {
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
	id, err := streamID(b, missing)
	if err != nil || !exclusive {
		return id, err
	}
	if start {
		next, ok := id.Next()
		if !ok {
			return id, errInvalidStart
		}
		return next, nil
	}
	prev, ok := id.Prev()
	if !ok {
		return id, errInvalidEnd
	}
	return prev, nil
}
