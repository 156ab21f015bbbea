package broker

import (
	"github.com/tidwall/redcon"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/streams"
)

var nullArray = []byte("*-1\r\n")

// writeNullArray writes RESP2's null array (*-1), Redis's "nil" for XREAD
// timeouts and empty XREADGROUP '>' reads.
func writeNullArray(w *redcon.Writer) { w.WriteRaw(nullArray) }

// writeID writes a stream ID as a bulk string "ms-seq".
func writeID(w *redcon.Writer, id codec.ID) {
	var buf [41]byte
	w.WriteBulk(id.AppendText(buf[:0]))
}

// writeEntries writes entries as Redis does: an array of [id, [field,
// value, ...]]; an entry with nil Fields (deleted while pending) has a null
// array in place of its fields.
func writeEntries(w *redcon.Writer, entries []streams.Entry) {
	w.WriteArray(len(entries))
	for _, e := range entries {
		writeEntry(w, e)
	}
}

// writeEntry writes one entry as [id, [field, value, ...]], with a null
// array for the fields of a deleted pending entry (nil Fields).
func writeEntry(w *redcon.Writer, e streams.Entry) {
	w.WriteArray(2)
	writeID(w, e.ID)
	if e.Fields == nil {
		writeNullArray(w)
		return
	}
	w.WriteArray(len(e.Fields))
	for _, f := range e.Fields {
		w.WriteBulk(f)
	}
}

// writeIDs writes the entries' IDs as an array of bulk strings (JUSTID).
func writeIDs(w *redcon.Writer, entries []streams.Entry) {
	w.WriteArray(len(entries))
	for _, e := range entries {
		writeID(w, e.ID)
	}
}

// streamReply is one stream's part of an XREAD/XREADGROUP reply.
type streamReply struct {
	key     []byte
	entries []streams.Entry
}

// writeStreamReplies writes [[key, entries], ...], or the null array when
// there are none.
func writeStreamReplies(w *redcon.Writer, rs []streamReply) {
	if len(rs) == 0 {
		writeNullArray(w)
		return
	}
	w.WriteArray(len(rs))
	for _, r := range rs {
		w.WriteArray(2)
		w.WriteBulk(r.key)
		writeEntries(w, r.entries)
	}
}
