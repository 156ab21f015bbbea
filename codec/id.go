package codec

import (
	"encoding/binary"
	"errors"
	"math"
	"strconv"
)

// ID is a stream entry ID: milliseconds and a sequence number, printed as
// "ms-seq". IDs compare by (Ms, Seq).
type ID struct {
	Ms, Seq uint64
}

// MaxID is the largest stream ID, 18446744073709551615-18446744073709551615.
var MaxID = ID{math.MaxUint64, math.MaxUint64}

// IDLen is the length of an encoded ID.
const IDLen = 16

// ErrInvalidID is returned by ParseID for text that is not a stream ID.
var ErrInvalidID = errors.New("codec: invalid stream ID")

// Compare returns -1, 0 or +1 as id is less than, equal to or greater than o.
func (id ID) Compare(o ID) int {
	switch {
	case id.Ms < o.Ms:
		return -1
	case id.Ms > o.Ms:
		return 1
	case id.Seq < o.Seq:
		return -1
	case id.Seq > o.Seq:
		return 1
	}
	return 0
}

// Less reports whether id sorts before o.
func (id ID) Less(o ID) bool { return id.Compare(o) < 0 }

// IsZero reports whether id is 0-0.
func (id ID) IsZero() bool { return id.Ms == 0 && id.Seq == 0 }

// Next returns the smallest ID greater than id, and false if id is MaxID.
func (id ID) Next() (ID, bool) {
	if id.Seq < math.MaxUint64 {
		return ID{id.Ms, id.Seq + 1}, true
	}
	if id.Ms < math.MaxUint64 {
		return ID{id.Ms + 1, 0}, true
	}
	return id, false
}

// Prev returns the largest ID smaller than id, and false if id is 0-0.
func (id ID) Prev() (ID, bool) {
	if id.Seq > 0 {
		return ID{id.Ms, id.Seq - 1}, true
	}
	if id.Ms > 0 {
		return ID{id.Ms - 1, math.MaxUint64}, true
	}
	return id, false
}

// String formats id as "ms-seq".
func (id ID) String() string { return string(id.AppendText(nil)) }

// AppendText appends "ms-seq" to b.
func (id ID) AppendText(b []byte) []byte {
	b = strconv.AppendUint(b, id.Ms, 10)
	b = append(b, '-')
	return strconv.AppendUint(b, id.Seq, 10)
}

// AppendID appends the 16-byte big-endian encoding of id (Ms then Seq), whose
// byte order equals ID order.
func AppendID(b []byte, id ID) []byte {
	b = binary.BigEndian.AppendUint64(b, id.Ms)
	return binary.BigEndian.AppendUint64(b, id.Seq)
}

// DecodeID decodes the first 16 bytes of b. It returns ErrCorrupt if b is short.
func DecodeID(b []byte) (ID, error) {
	if len(b) < IDLen {
		return ID{}, corruptf("stream ID of %d bytes", len(b))
	}
	return ID{binary.BigEndian.Uint64(b), binary.BigEndian.Uint64(b[8:])}, nil
}

// ParseID parses the text forms "ms-seq" and "ms". When the sequence part is
// missing it is missingSeq (0 for a range start, math.MaxUint64 for a range
// end, as Redis's streamParseID does) and seqGiven is false. With allowStar, "ms-*"
// is accepted and reported as seqStar. Numbers are unsigned decimal without
// sign; anything else returns ErrInvalidID.
func ParseID(s []byte, missingSeq uint64, allowStar bool) (id ID, seqGiven, seqStar bool, err error) {
	dash := -1
	for i, c := range s {
		if c == '-' {
			dash = i
			break
		}
	}
	if dash < 0 {
		ms, ok := parseUint(s)
		if !ok {
			return ID{}, false, false, ErrInvalidID
		}
		return ID{ms, missingSeq}, false, false, nil
	}
	ms, ok := parseUint(s[:dash])
	if !ok {
		return ID{}, false, false, ErrInvalidID
	}
	rest := s[dash+1:]
	if allowStar && len(rest) == 1 && rest[0] == '*' {
		return ID{Ms: ms}, false, true, nil
	}
	seq, ok := parseUint(rest)
	if !ok {
		return ID{}, false, false, ErrInvalidID
	}
	return ID{ms, seq}, true, false, nil
}

// parseUint parses a non-empty run of decimal digits into a uint64.
func parseUint(s []byte) (uint64, bool) {
	if len(s) == 0 || len(s) > 20 {
		return 0, false
	}
	var n uint64
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (math.MaxUint64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}
