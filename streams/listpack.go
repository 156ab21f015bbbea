package streams

import (
	"strconv"

	"github.com/sediment-dev/sediment/codec"
)

// Redis 7.0 keeps a stream in a radix tree of listpacks ("nodes"), and
// XADD starts a new node when the tail node's listpack bytes plus the new
// entry's field and value lengths reach stream-node-max-bytes
// (t_stream.c streamAppendItem). Sediment stores no listpacks, but it
// computes the size the tail node's listpack would have, byte for byte,
// so that its node boundaries (and so '~' trimming and XINFO's
// radix-tree-keys) are Redis's. The functions below are listpack.c's
// encoding rules (lpEncodeGetType, lpEncodeBacklen).

// lpHeaderBytes is a listpack's header (total bytes u32, element count
// u16) plus its end byte.
const lpHeaderBytes = 6 + 1

// lpMaxSize is STREAM_LISTPACK_MAX_SIZE: stream-node-max-bytes 0, or
// larger, means this.
const lpMaxSize = 1 << 30

// lpBacklen is the size of an element's back-length field for an element
// of l bytes (encoding and data).
func lpBacklen(l uint64) uint64 {
	switch {
	case l <= 127:
		return 1
	case l < 16383:
		return 2
	case l < 2097151:
		return 3
	case l < 268435455:
		return 4
	}
	return 5
}

// lpIntLen is the encoded size of the integer v (without its back-length).
func lpIntLen(v int64) uint64 {
	switch {
	case v >= 0 && v <= 127:
		return 1
	case v >= -4096 && v <= 4095:
		return 2
	case v >= -32768 && v <= 32767:
		return 3
	case v >= -8388608 && v <= 8388607:
		return 4
	case v >= -2147483648 && v <= 2147483647:
		return 5
	}
	return 9
}

// lpInt is the size of the listpack element holding the integer v.
func lpInt(v int64) uint64 {
	n := lpIntLen(v)
	return n + lpBacklen(n)
}

// lpStringInt reports whether listpack stores s as an integer: s is the
// canonical decimal form of an int64 (lpStringToInt64: no sign but a
// leading '-', no leading zero, not "-0", at most 20 bytes), and returns
// it.
func lpStringInt(s []byte) (int64, bool) {
	if len(s) == 0 || len(s) > 20 {
		return 0, false
	}
	c := s[0]
	if c != '-' && (c < '0' || c > '9') {
		return 0, false
	}
	v, err := strconv.ParseInt(string(s), 10, 64)
	if err != nil {
		return 0, false
	}
	var buf [20]byte
	if string(strconv.AppendInt(buf[:0], v, 10)) != string(s) {
		return 0, false
	}
	return v, true
}

// lpString is the size of the listpack element holding s: as an integer
// when lpStringInt says so, else a string with a 6-, 12- or 32-bit length.
func lpString(s []byte) uint64 {
	if v, ok := lpStringInt(s); ok {
		return lpInt(v)
	}
	l := uint64(len(s))
	var n uint64
	switch {
	case l < 64:
		n = 1 + l
	case l < 4096:
		n = 2 + l
	default:
		n = 5 + l
	}
	return n + lpBacklen(n)
}

// lpMasterBody is the size of a new node's master entry without its
// count and deleted elements: num-fields, the fields, the 0 terminator.
func lpMasterBody(fv [][]byte) uint64 {
	n := lpInt(int64(len(fv)/2)) + lpInt(0)
	for i := 0; i < len(fv); i += 2 {
		n += lpString(fv[i])
	}
	return n
}

// lpEntry is the size of one entry appended to a node whose master entry
// has ID master: flags, ms-diff, seq-diff, then num-fields and the fields
// unless same (SAMEFIELDS), the values, lp-count.
func lpEntry(fv [][]byte, id, master codec.ID, same bool) uint64 {
	nf := int64(len(fv) / 2)
	flags := int64(0)
	count := nf + 3
	if same {
		flags = 2 // STREAM_ITEM_FLAG_SAMEFIELDS; DELETED (1) keeps the size
	} else {
		count += nf + 1
	}
	n := lpInt(flags) + lpInt(int64(id.Ms-master.Ms)) + lpInt(int64(id.Seq-master.Seq))
	if !same {
		n += lpInt(nf)
	}
	for i := 0; i < len(fv); i += 2 {
		if !same {
			n += lpString(fv[i])
		}
		n += lpString(fv[i+1])
	}
	return n + lpInt(count)
}

// lpNodeBytes is lpBytes of a node whose master count is live, whose
// deleted count is deleted, and whose other elements take body bytes.
func lpNodeBytes(body, live, deleted uint64) uint64 {
	return lpHeaderBytes + lpInt(int64(live)) + lpInt(int64(deleted)) + body
}

// fieldsLen is streamAppendItem's totelelen: the field and value lengths.
func fieldsLen(fv [][]byte) uint64 {
	var n uint64
	for _, f := range fv {
		n += uint64(len(f))
	}
	return n
}
