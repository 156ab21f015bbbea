package materialize

import (
	"fmt"
	"math"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/sediment-dev/sediment/codec"
)

// ReadChangeLog calls fn with each record of the change log in dir (a
// data directory's "changelog" directory: segment files named by their
// first sequence, docs/key-format.md) from sequence from on, in order,
// until fn returns false or the log ends. It opens no store and takes no
// lock, so it may read the log of a running server: a segment ends at its
// last whole frame (a record being appended, a torn tail), and the read
// goes on with the next segment, if any. Records can therefore be
// missing (a torn segment, one removed while it reads): a caller that
// needs every record checks their sequence numbers, as Rebuild does. A
// record that fails to decode is an error wrapping codec.ErrCorrupt.
// fn's record is its own: it may be retained.
//
// first is the oldest record the directory holds (0: none).
func ReadChangeLog(dir string, from uint64, fn func(codec.Record) bool) (first uint64, err error) {
	fs := vfs.Default
	segs, err := listSegments(fs, dir)
	if err != nil {
		return 0, err
	}
	if len(segs) == 0 {
		return 0, nil
	}
	l := &changeLog{fs: fs, dir: dir, segs: segs}
	var decodeErr error
	err = l.read(from, math.MaxUint64, func(seq uint64, raw []byte) bool {
		rec, err := codec.DecodeRecord(seq, raw)
		if err != nil {
			decodeErr = fmt.Errorf("materialize: change log record %d: %w", seq, err)
			return false
		}
		return fn(rec)
	})
	if err == nil {
		err = decodeErr
	}
	return segs[0], err
}
