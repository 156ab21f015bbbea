package stream

import (
	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/command/reply"
	"github.com/sediment-dev/sediment/streams"
)

// WriteID writes a stream ID as a bulk string "ms-seq".
func WriteID(w reply.Writer, id codec.ID) {
	var buf [41]byte
	w.Bulk(id.AppendText(buf[:0]))
}

// WriteEntries writes entries as Redis does: an array of [id, [field,
// value, ...]] (WriteEntry).
func WriteEntries(w reply.Writer, entries []streams.Entry) {
	w.Array(len(entries))
	for _, e := range entries {
		WriteEntry(w, e)
	}
}

// WriteEntry writes one entry as [id, [field, value, ...]], with the null
// array for the fields of an entry deleted while pending (nil Fields).
func WriteEntry(w reply.Writer, e streams.Entry) {
	w.Array(2)
	WriteID(w, e.ID)
	writeFields(w, e.Fields)
}

// writeFields writes an entry's [field, value, ...], or the null array
// for nil.
func writeFields(w reply.Writer, fields [][]byte) {
	if fields == nil {
		w.NullArray()
		return
	}
	w.Array(len(fields))
	for _, f := range fields {
		w.Bulk(f)
	}
}

// WriteIDs writes the entries' IDs as an array of bulk strings (JUSTID).
func WriteIDs(w reply.Writer, entries []streams.Entry) {
	w.Array(len(entries))
	for _, e := range entries {
		WriteID(w, e.ID)
	}
}
