package materialize

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"slices"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/sediment-dev/sediment/codec"
)

// LogTail reads the change log forward by sequence, as it grows: the change
// feed's publisher follows the store with one. It keeps its segment open
// and the offset of its next record, so each read costs the records it
// returns, not a scan of the segment from its start. Not safe for
// concurrent use.
type LogTail struct {
	s    *Store
	f    vfs.File // the open segment; nil before the first read
	off  int64    // offset of the next frame in f
	next uint64   // sequence of the next record
	// rd reads f ahead, a chunk at a time, so that a record costs no
	// system call.
	rd chunkReader
}

// tailChunk is how much of a segment a LogTail reads at once.
const tailChunk = 256 << 10

// ErrLogGone is returned by a LogTail whose next record has been dropped
// from the change log (ChangeLogRetention).
var ErrLogGone = errors.New("materialize: change-log records dropped")

// TailLog returns a LogTail whose first record is from (at least 1).
func (s *Store) TailLog(from uint64) *LogTail { return &LogTail{s: s, next: max(from, 1)} }

// Next returns the sequence of the next record Read would return.
func (t *LogTail) Next() uint64 { return t.next }

// Close closes the tail's open segment.
func (t *LogTail) Close() error {
	if t.f == nil {
		return nil
	}
	err := t.f.Close()
	t.f = nil
	t.rd.reset(nil, tailChunk)
	return err
}

// Read calls fn with each committed record from Next() to upTo (at most
// Store.LastSeq) in order, until fn returns false. The record's slices are
// valid only during the call. It returns ErrLogGone when the next record
// is no longer in the log.
func (t *LogTail) Read(upTo uint64, fn func(codec.Record) bool) error {
	l := t.s.log
	l.readers.RLock()
	defer l.readers.RUnlock()
	// Bytes read ahead past the next record may be of a record still being
	// written then; the records up to upTo were whole before this call.
	t.rd.forget(t.off)
	var hdr [frameHeader]byte
	for t.next <= upTo {
		if t.f == nil {
			if err := t.open(); err != nil {
				return err
			}
		}
		h, err := t.rd.at(t.off, frameHeader)
		var n uint32
		if err == nil {
			n = binary.BigEndian.Uint32(h[:4])
			copy(hdr[:], h)
		}
		if errors.Is(err, io.EOF) || (err == nil && (n < 8 || n > 1<<31)) {
			// The segment ends (or ends torn) before next: the records
			// from next on are in a later segment.
			if err := t.Close(); err != nil {
				return err
			}
			if !t.laterSegment() {
				return fmt.Errorf("materialize: change log: record %d missing: %w", t.next, codec.ErrCorrupt)
			}
			continue
		}
		if err != nil {
			return err
		}
		frame, err := t.rd.at(t.off+frameHeader, int(n))
		if err != nil {
			return fmt.Errorf("materialize: change log: record %d: %w", t.next, err)
		}
		if crc32.Checksum(frame, castagnoli) != binary.BigEndian.Uint32(hdr[4:]) {
			return fmt.Errorf("materialize: change log: record %d fails its checksum: %w", t.next, codec.ErrCorrupt)
		}
		seq := binary.BigEndian.Uint64(frame)
		if seq != t.next {
			return fmt.Errorf("materialize: change log: record %d where %d was due: %w", seq, t.next, codec.ErrCorrupt)
		}
		rec, err := codec.DecodeRecord(seq, frame[8:])
		if err != nil {
			return err
		}
		t.off += frameHeader + int64(n)
		t.next++
		if !fn(rec) {
			return nil
		}
	}
	return nil
}

// open opens the segment holding next and finds next's frame in it.
func (t *LogTail) open() error {
	l := t.s.log
	l.mu.Lock()
	segs := slices.Clone(l.segs)
	l.mu.Unlock()
	i, _ := slices.BinarySearch(segs, t.next+1) // segments starting at or before next
	if i == 0 {
		return fmt.Errorf("%w: record %d (the oldest kept is %d)", ErrLogGone, t.next, firstOr(segs, t.next))
	}
	first := segs[i-1]
	f, err := l.fs.Open(l.fs.PathJoin(l.dir, segmentName(first)))
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: record %d", ErrLogGone, t.next)
	}
	if err != nil {
		return err
	}
	t.f, t.off = f, 0
	t.rd.reset(f, tailChunk)
	if t.next > first {
		// Find next's frame: one scan of the segment, stopping after
		// next-1's frame.
		off, _, _, err := scanSegment(f, first, func(seq uint64, _ []byte) bool { return seq+1 < t.next })
		if err != nil {
			t.Close()
			return err
		}
		t.off = off
	}
	return nil
}

// laterSegment reports whether a segment starting at next exists (the
// open one ended before it).
func (t *LogTail) laterSegment() bool {
	l := t.s.log
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := slices.BinarySearch(l.segs, t.next)
	return ok
}

func firstOr(segs []uint64, def uint64) uint64 {
	if len(segs) == 0 {
		return def
	}
	return segs[0]
}

// CommitNotify returns a channel that receives after group commits (at
// least once after each; several commits may share one receive): a tail
// waits on it, then reads up to LastSeq.
func (s *Store) CommitNotify() <-chan struct{} { return s.commitCh }

// CommittedDBMap returns the last committed sequence and the map from
// storage db to logical db (SWAPDB) as of that sequence, read together.
func (s *Store) CommittedDBMap() (seq uint64, logical [256]uint8) {
	c := s.committedDBs.Load()
	return c.seq, c.m.logical
}

// committedDBs pairs a committed sequence with the db map as of it.
type committedDBs struct {
	seq uint64
	m   *dbMap
}
