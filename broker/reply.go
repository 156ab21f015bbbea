package broker

import (
	"github.com/tidwall/redcon"

	"github.com/sediment-dev/sediment/command/reply"
	"github.com/sediment-dev/sediment/command/stream"
	"github.com/sediment-dev/sediment/streams"
)

var nullArray = []byte("*-1\r\n")

// writeNullArray writes RESP2's null array (*-1), Redis's "nil" for XREAD
// timeouts and empty XREADGROUP '>' reads.
func writeNullArray(w *redcon.Writer) { w.WriteRaw(nullArray) }

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
	rw := reply.New(w)
	rw.Array(len(rs))
	for _, r := range rs {
		rw.Array(2)
		rw.Bulk(r.key)
		stream.WriteEntries(rw, r.entries)
	}
}
