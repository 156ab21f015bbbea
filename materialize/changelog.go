package materialize

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/sediment-dev/sediment/codec"
)

// changeLog is the change log kept as files: the store's write-ahead log.
// Pebble runs without a WAL of its own; every commit group first appends
// its change-log records here (one write per group), then applies their
// events to Pebble with the sequence of its last record under the A key.
// After a crash, the records after the A that Pebble holds durably are
// replayed (Store.replay). Durability is this file's: the fsync policy
// syncs it, and a Pebble flush syncs it first (Options.EventListener's
// FlushBegin), so Pebble never holds durably what the log does not.
//
// Layout (docs/key-format.md, "Change-log files"): the directory holds
// segments named by the sequence of their first record, 20 decimal digits
// then ".log". A segment is a run of frames:
//
//	| u32 payload length | u32 CRC-32C of the payload | payload |
//	payload = u64 seq | change-log Record (codec.AppendRecord)
//
// all big-endian. Sequences are consecutive across segments. A frame cut
// short or failing its CRC ends its segment (a torn write at a crash):
// readers stop there, and records after a reopen go to a new segment.
type changeLog struct {
	fs  vfs.FS
	dir string

	mu sync.Mutex // guards segs and f (the writer swaps them; readers and sync take them)
	// syncMu orders file syncs with the writer's closing of a file: sync
	// holds it while it syncs l.f, and the writer holds it while it
	// replaces l.f and syncs and closes the old file (rotate) or closes a
	// failed one. So a sync never uses a closed file, and a sync that
	// begins after a rotation returns only once the old segment is synced
	// too: what WaitDurable promises for every record before it. Lock
	// order: syncMu before mu.
	syncMu sync.Mutex
	// syncErr, when set (under syncMu), is what sync returns: the segment
	// of record unsynced, closed after a failed write, could not be synced,
	// so the durability of its earlier records cannot be confirmed. Each
	// sync tries that segment again and clears syncErr once it syncs.
	syncErr  error
	unsynced uint64
	// poisonPending: the failed write's first frame header, at poisonAt in
	// segment unsynced, is still to be zeroed (poison); sync does it first.
	poisonPending bool
	poisonAt      int64
	// readers is held shared by each read and exclusively by dropBefore,
	// so that a read never loses a segment in its middle (a gap).
	readers sync.RWMutex
	segs    []uint64 // first sequence of each segment, ascending
	// segTimes are the decision times (Unix ms) of segments' first
	// records, read once each (cutBefore).
	segTimes map[uint64]int64
	// marks are places in segments that reads found (markBefore), by
	// the segment's first record, ascending.
	marks map[uint64][]segMark
	f     vfs.File // the last segment, appended to
	// rfiles are segments opened for reading the values that string
	// metadata locates in them (readValue), by first sequence; dropBefore
	// forgets those it removes. closed: close ran, no file opens again.
	rfiles map[uint64]*segFile
	closed bool

	// The writer goroutine's own state.
	cur      uint64 // first sequence of the last segment (when f is set)
	size     int64  // bytes in the last segment
	last     uint64 // sequence of the last record appended
	buf      []byte // frames of the group being staged
	bufFirst uint64 // sequence of the first frame in buf
	segSize  int64  // a segment is closed once it passes this many bytes

	// openLast is the last record found at open, at offset openLastAt of
	// the last segment (readLast).
	openLast   uint64
	openLastAt int64
}

const frameHeader = 8

// logBufRetained is the largest staging buffer the log keeps between
// groups: twenty clients' 100 KB values fit, and a group that staged a
// larger record (a 512 MB SET) does not hold its buffer for the life of
// the process.
const logBufRetained = 4 << 20

// resetBuf empties the staging buffer, dropping it when a large group grew
// it past logBufRetained.
func (l *changeLog) resetBuf() {
	if cap(l.buf) > logBufRetained {
		l.buf = nil
		return
	}
	l.buf = l.buf[:0]
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func segmentName(first uint64) string { return fmt.Sprintf("%020d.log", first) }

// openChangeLog opens (creating if needed) the change log in dir on fs,
// truncates a torn tail and returns it with the sequence of its last
// record (0: empty).
func openChangeLog(fs vfs.FS, dir string, segSize int64) (*changeLog, error) {
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	segs, err := listSegments(fs, dir)
	if err != nil {
		return nil, err
	}
	l := &changeLog{fs: fs, dir: dir, segSize: segSize, segs: segs}
	if len(l.segs) == 0 {
		return l, nil
	}
	// The last segment: its last whole frame is the last record. New
	// records go to a new segment, so that a torn tail (a frame cut short
	// or failing its CRC) is never appended to: readers stop at it.
	first := l.segs[len(l.segs)-1]
	f, err := fs.Open(fs.PathJoin(dir, segmentName(first)))
	if err != nil {
		return nil, err
	}
	_, last, lastAt, err := scanSegment(f, first, nil)
	f.Close()
	if err != nil {
		return nil, err
	}
	l.last, l.openLast, l.openLastAt = last, last, lastAt
	if last == 0 {
		l.last = first - 1 // an empty last segment
	}
	return l, nil
}

// listSegments returns the first sequence of each segment file in dir,
// ascending.
func listSegments(fs vfs.FS, dir string) ([]uint64, error) {
	names, err := fs.List(dir)
	if err != nil {
		return nil, err
	}
	var segs []uint64
	for _, n := range names {
		first, ok := strings.CutSuffix(n, ".log")
		if !ok {
			continue
		}
		seq, err := strconv.ParseUint(first, 10, 64)
		if err != nil {
			continue
		}
		segs = append(segs, seq)
	}
	slices.Sort(segs)
	return segs, nil
}

// scanSegment reads the frames of a segment whose first record is first,
// calling fn (when set) for each, and returns the offset after the last
// whole frame, the last sequence read (0: none) and the offset of its
// frame. fn returning false stops the scan. fn's rec is its own copy: it
// may be retained.
func scanSegment(r io.ReaderAt, first uint64, fn func(seq uint64, rec []byte) bool) (end int64, last uint64, lastAt int64, err error) {
	var at func(seq uint64, _ int64, rec []byte) bool
	if fn != nil {
		at = func(seq uint64, _ int64, rec []byte) bool { return fn(seq, slices.Clone(rec)) }
	}
	return scanSegmentAt(r, 0, first, scanChunk, at)
}

// scanSegmentAt is scanSegment from the frame at offset off, which holds
// record first, reading chunk bytes at a time; fn is also told each
// frame's offset, and its rec is valid only until it returns (it is the
// read buffer).
func scanSegmentAt(r io.ReaderAt, off int64, first uint64, chunk int, fn func(seq uint64, at int64, rec []byte) bool) (end int64, last uint64, lastAt int64, err error) {
	rd := chunkReader{r: r, chunk: chunk}
	want := first
	end = off
	for {
		hdr, err := rd.at(end, frameHeader)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return end, last, lastAt, nil
			}
			return end, last, lastAt, err
		}
		n := binary.BigEndian.Uint32(hdr[:4])
		sum := binary.BigEndian.Uint32(hdr[4:])
		if n < 8 || n > 1<<31 {
			return end, last, lastAt, nil // torn
		}
		payload, err := rd.at(end+frameHeader, int(n))
		if err != nil {
			if errors.Is(err, io.EOF) {
				return end, last, lastAt, nil // torn
			}
			return end, last, lastAt, err
		}
		if crc32.Checksum(payload, castagnoli) != sum {
			return end, last, lastAt, nil // torn
		}
		seq := binary.BigEndian.Uint64(payload)
		if seq != want {
			return end, last, lastAt, fmt.Errorf("materialize: change log: record %d where %d was due: %w", seq, want, codec.ErrCorrupt)
		}
		lastAt = end
		end += frameHeader + int64(n)
		last, want = seq, seq+1
		if fn != nil && !fn(seq, lastAt, payload[8:]) {
			return end, last, lastAt, nil
		}
	}
}

// scanChunk is how much of a segment scanSegment reads at once, and read
// when it scans a segment from its start; readChunk how much read does
// from a mark (markEvery), where it most often returns a page of records.
const (
	scanChunk = 1 << 20
	readChunk = 128 << 10
)

// chunkReader reads a file forward through a buffer refilled a chunk at a
// time: frames are parsed from the buffer, so a pass over a segment costs
// one read per chunk, not two per frame. (Two preads per frame made Open
// take 8 s on a 64 MiB segment of 64-byte stream entries.)
type chunkReader struct {
	r     io.ReaderAt
	chunk int    // bytes read at once (at least)
	buf   []byte // the file's bytes from offset bufAt on
	bufAt int64
}

// at returns the n bytes at offset off, from the buffer or read into it;
// io.EOF when the file holds fewer. The slice is valid until the next call.
func (c *chunkReader) at(off int64, n int) ([]byte, error) {
	if off >= c.bufAt && off+int64(n) <= c.bufAt+int64(len(c.buf)) {
		return c.buf[off-c.bufAt : off-c.bufAt+int64(n)], nil
	}
	size := max(n, c.chunk)
	if cap(c.buf) < size {
		c.buf = make([]byte, size)
	}
	c.buf = c.buf[:size]
	k, err := c.r.ReadAt(c.buf, off)
	c.buf, c.bufAt = c.buf[:k], off
	if k >= n {
		return c.buf[:n], nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return nil, io.EOF
	}
	return nil, err
}

// forget drops the buffered bytes from offset off on (bytes read ahead of
// a record still being written).
func (c *chunkReader) forget(off int64) {
	if off >= c.bufAt && off-c.bufAt < int64(len(c.buf)) {
		c.buf = c.buf[:off-c.bufAt]
	}
}

// reset points the reader at r with nothing buffered.
func (c *chunkReader) reset(r io.ReaderAt, chunk int) {
	c.r, c.chunk, c.buf, c.bufAt = r, chunk, c.buf[:0], 0
}

// append stages record seq (the writer goroutine's). Records must come in
// sequence.
func (l *changeLog) append(seq uint64, rec []byte) {
	l.appendWith(seq, func(b []byte) []byte { return append(b, rec...) })
}

// appendWith stages record seq, encoded by enc appending to the buffer:
// the record is encoded in place, with no copy of its own.
func (l *changeLog) appendWith(seq uint64, enc func(b []byte) []byte) {
	start := len(l.buf)
	if start == 0 {
		l.bufFirst = seq
	}
	l.buf = binary.BigEndian.AppendUint32(l.buf, 0) // length, set below
	l.buf = binary.BigEndian.AppendUint32(l.buf, 0) // CRC, set below
	l.buf = binary.BigEndian.AppendUint64(l.buf, seq)
	l.buf = enc(l.buf)
	payload := l.buf[start+frameHeader:]
	binary.BigEndian.PutUint32(l.buf[start:], uint32(len(payload)))
	binary.BigEndian.PutUint32(l.buf[start+4:], crc32.Checksum(payload, castagnoli))
	l.last = seq
}

// discard drops the staged frames (a failed group), back to last.
func (l *changeLog) discard(last uint64) {
	l.resetBuf()
	l.last = last
}

// stagePos returns where write will put the first staged byte: the
// segment (its first sequence) and the offset in it. Writer goroutine
// only; it holds until that write.
func (l *changeLog) stagePos() (segment uint64, off int64) {
	if l.f == nil || l.size >= l.segSize {
		return l.bufFirst, 0 // write starts a segment
	}
	return l.cur, l.size
}

// errValueGone: a value's segment was removed (retention) after its
// reference was read; the reference's key has its value in the store now.
var errValueGone = errors.New("materialize: change log: the segment of a value reference is gone")

// readValue reads the value that r locates into dst, which holds exactly
// r.Len bytes (nil: into a new buffer), checks its CRC-32C and returns
// it. It takes no lock across the read: the segment's file stays open
// while it reads (segFile). Errors: errValueGone when the segment was
// removed; codec.ErrCorrupt when the value does not check.
func (l *changeLog) readValue(r codec.ValueRef, dst []byte) ([]byte, error) {
	sf, err := l.readFile(r.Segment)
	if err != nil {
		return nil, err
	}
	defer l.releaseFile(sf)
	if dst == nil {
		dst = make([]byte, r.Len)
	}
	if _, err := sf.f.ReadAt(dst, r.Offset); err != nil {
		return nil, fmt.Errorf("materialize: change log: reading %d bytes of segment %d at %d: %w", r.Len, r.Segment, r.Offset, err)
	}
	if crc32.Checksum(dst, castagnoli) != r.CRC {
		return nil, fmt.Errorf("materialize: change log: the value of %d bytes in segment %d at %d does not check: %w", r.Len, r.Segment, r.Offset, codec.ErrCorrupt)
	}
	return dst, nil
}

// segFile is a segment opened for reading values (readValue): refs counts
// the reads in it; once dropBefore removed the segment (gone), the last
// read closes it.
type segFile struct {
	f    vfs.File
	refs int
	gone bool
}

// rfilesMax bounds the segments kept open for reading values when no read
// is in them.
const rfilesMax = 64

// readFile returns segment's file opened for reading, opened once and kept
// (up to rfilesMax), with one more read counted in it: the caller calls
// releaseFile.
func (l *changeLog) readFile(segment uint64) (*segFile, error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, ErrClosed
	}
	if sf := l.rfiles[segment]; sf != nil {
		sf.refs++
		l.mu.Unlock()
		return sf, nil
	}
	_, found := slices.BinarySearch(l.segs, segment)
	l.mu.Unlock()
	if !found {
		return nil, errValueGone
	}
	f, err := l.fs.Open(l.fs.PathJoin(l.dir, segmentName(segment)))
	if errors.Is(err, os.ErrNotExist) {
		return nil, errValueGone // removed since
	}
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if sf := l.rfiles[segment]; sf != nil { // opened meanwhile
		f.Close()
		sf.refs++
		return sf, nil
	}
	if _, found := slices.BinarySearch(l.segs, segment); !found || l.closed {
		f.Close()
		return nil, errValueGone
	}
	if l.rfiles == nil {
		l.rfiles = map[uint64]*segFile{}
	}
	if len(l.rfiles) >= rfilesMax {
		for seg, o := range l.rfiles {
			if o.refs == 0 {
				o.f.Close()
				delete(l.rfiles, seg)
				break
			}
		}
	}
	sf := &segFile{f: f, refs: 1}
	l.rfiles[segment] = sf
	return sf, nil
}

// releaseFile ends a read that readFile counted in sf.
func (l *changeLog) releaseFile(sf *segFile) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if sf.refs--; sf.refs == 0 && sf.gone {
		sf.f.Close()
	}
}

// forgetFile stops keeping segment's read file: it is closed now, or by
// its last read. l.mu held.
func (l *changeLog) forgetFile(segment uint64) {
	if sf := l.rfiles[segment]; sf != nil {
		delete(l.rfiles, segment)
		sf.gone = true
		if sf.refs == 0 {
			sf.f.Close()
		}
	}
}

// write writes the staged frames with one write, starting a segment first
// when there is none or the last one is full. After a failed write the
// segment may end in a partial frame: the next write starts a new segment
// (named by the sequence it starts with, which the failed frames had).
func (l *changeLog) write() error {
	if len(l.buf) == 0 {
		return nil
	}
	if l.f == nil || l.size >= l.segSize {
		if err := l.rotate(l.bufFirst); err != nil {
			return err
		}
	}
	before := l.size
	n, err := l.f.Write(l.buf)
	l.size += int64(n)
	l.resetBuf()
	if err != nil {
		// syncMu is held until the segment's earlier records are synced:
		// their writes' WaitDurable may come after this, and a sync finds
		// no file to sync from here on.
		l.syncMu.Lock()
		defer l.syncMu.Unlock()
		l.mu.Lock()
		f := l.f
		l.f = nil
		seg := l.segs[len(l.segs)-1]
		l.mu.Unlock()
		var serr error
		if n == 0 {
			serr = f.Sync()
		}
		f.Close()
		if n > 0 {
			// Whole frames of the failed group may have reached the
			// file: readers and the next Open would take them for
			// records (whose sequence numbers the next group reuses, in
			// a new segment). Zero the first frame's header: the segment
			// ends there for every reader (a torn tail). Its fsync
			// syncs the earlier records too.
			if perr := l.poison(seg, before); perr != nil {
				// sync tries again, and fails until it succeeds: the store
				// takes no write meanwhile (its storage fault).
				l.syncErr, l.unsynced = fmt.Errorf("materialize: change log: a failed segment could not be invalidated and synced: %w", perr), seg
				l.poisonAt, l.poisonPending = before, true
				return errors.Join(err, perr)
			}
		} else if serr != nil {
			l.syncErr, l.unsynced = fmt.Errorf("materialize: change log: a failed segment could not be synced: %w", serr), seg
		}
	}
	return err
}

// poison zeroes the frame header at off in the segment of record first.
func (l *changeLog) poison(first uint64, off int64) error {
	f, err := l.fs.OpenReadWrite(l.fs.PathJoin(l.dir, segmentName(first)), vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	var zero [frameHeader]byte
	_, err = f.WriteAt(zero[:], off)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// rotate starts the segment of record first, syncing and closing the one
// before it.
func (l *changeLog) rotate(first uint64) error {
	f, err := l.fs.Create(l.fs.PathJoin(l.dir, segmentName(first)), vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	if err := l.syncDir(); err != nil {
		f.Close()
		return err
	}
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	old := l.f
	l.f = f
	if len(l.segs) == 0 || l.segs[len(l.segs)-1] != first {
		l.segs = append(l.segs, first) // else: re-created after a failed first write
	}
	l.mu.Unlock()
	l.cur, l.size = first, 0
	if old != nil {
		if err := old.Sync(); err != nil {
			return err
		}
		return old.Close()
	}
	return nil
}

func (l *changeLog) syncDir() error {
	d, err := l.fs.OpenDir(l.dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// sync makes every written record durable. Safe from any goroutine: a
// segment closed before it was synced by the rotation that closed it
// (syncMu).
func (l *changeLog) sync() error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if l.syncErr != nil {
		retry := l.syncSegment
		if l.poisonPending {
			retry = func(first uint64) error { return l.poison(first, l.poisonAt) }
		}
		if err := retry(l.unsynced); err != nil {
			return l.syncErr
		}
		l.syncErr, l.poisonPending = nil, false
	}
	l.mu.Lock()
	f := l.f
	l.mu.Unlock()
	if f == nil {
		return nil
	}
	return f.Sync()
}

// syncSegment opens the segment of record first and syncs it.
func (l *changeLog) syncSegment(first uint64) error {
	f, err := l.fs.OpenReadWrite(l.fs.PathJoin(l.dir, segmentName(first)), vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	return errors.Join(f.Sync(), f.Close())
}

// read calls fn for each record with from <= seq <= upTo, in order, until
// fn returns false.
func (l *changeLog) read(from, upTo uint64, fn func(seq uint64, rec []byte) bool) error {
	return l.readAt(from, upTo, func(seq, _ uint64, _ int64, rec []byte) bool { return fn(seq, rec) })
}

// readAt is read, also telling fn where each record's frame is: its
// segment (first sequence) and offset.
func (l *changeLog) readAt(from, upTo uint64, fn func(seq, segment uint64, at int64, rec []byte) bool) error {
	l.readers.RLock()
	defer l.readers.RUnlock()
	l.mu.Lock()
	segs := slices.Clone(l.segs)
	l.mu.Unlock()
	n, _ := slices.BinarySearch(segs, from+1) // segments starting at or before from
	i := max(0, n-1)
	for ; i < len(segs); i++ {
		if segs[i] > upTo {
			return nil
		}
		if i+1 < len(segs) && segs[i+1] <= from {
			continue
		}
		f, err := l.fs.Open(l.fs.PathJoin(l.dir, segmentName(segs[i])))
		if errors.Is(err, os.ErrNotExist) {
			continue // dropped before the read began
		}
		if err != nil {
			return err
		}
		stop := false
		start := l.markBefore(segs[i], from)
		var found []segMark
		chunk := scanChunk // a scan from the segment's start (Open's replay): large reads
		if start.off > 0 {
			chunk = readChunk // from a mark: most often a page of records
		}
		_, _, _, err = scanSegmentAt(f, start.off, start.seq, chunk, func(seq uint64, at int64, rec []byte) bool {
			if seq <= upTo && at >= start.off+markEvery*int64(len(found)+1) {
				found = append(found, segMark{seq, at})
			}
			switch {
			case seq < from:
				return true
			case seq > upTo:
				stop = true
				return false
			}
			if !fn(seq, segs[i], at, slices.Clone(rec)) {
				stop = true
				return false
			}
			return true
		})
		f.Close()
		l.addMarks(segs[i], found)
		if err != nil || stop {
			return err
		}
	}
	return nil
}

// markEvery is the spacing, in bytes, of the marks that reads leave in a
// segment (segMark): a read from record n scans at most this much of
// its segment before n, once a read passed n.
const markEvery = 256 << 10

// segMark is a place in a segment: the frame of record seq is at offset
// off. Reads leave one about every markEvery bytes of the committed
// records they scan, so that a later read from the middle of a segment
// (CHANGES and the feed's replay paging through it) starts near its
// record instead of at the segment's start. A committed record's frame
// never moves: a failed write invalidates only the frames after it.
type segMark struct {
	seq uint64
	off int64
}

// markBefore returns the last mark of segment first at or before record
// from (the segment's start when there is none).
func (l *changeLog) markBefore(first, from uint64) segMark {
	l.mu.Lock()
	defer l.mu.Unlock()
	ms := l.marks[first]
	i, _ := slices.BinarySearchFunc(ms, from+1, func(m segMark, seq uint64) int { return cmp.Compare(m.seq, seq) })
	if i == 0 {
		return segMark{seq: first}
	}
	return ms[i-1]
}

// addMarks keeps the marks a read found in segment first past its last
// one (marks for a segment dropped meanwhile are not kept).
func (l *changeLog) addMarks(first uint64, found []segMark) {
	if len(found) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := slices.BinarySearch(l.segs, first); !ok {
		return
	}
	ms := l.marks[first]
	for _, m := range found {
		if len(ms) == 0 || m.off >= ms[len(ms)-1].off+markEvery {
			ms = append(ms, m)
		}
	}
	if l.marks == nil {
		l.marks = map[uint64][]segMark{}
	}
	l.marks[first] = ms
}

// readLast calls fn with the last record (seq l.last), if there is one.
// The last record found at open is scanned from its own frame (the offset
// open's scan found it at); any other is found by read's scan.
func (l *changeLog) readLast(fn func(seq uint64, rec []byte)) error {
	last := l.last
	if last == 0 {
		return nil
	}
	stop := func(seq uint64, rec []byte) bool {
		fn(seq, rec)
		return false
	}
	if last != l.openLast || len(l.segs) == 0 {
		return l.read(last, last, stop)
	}
	f, err := l.fs.Open(l.fs.PathJoin(l.dir, segmentName(l.segs[len(l.segs)-1])))
	if err != nil {
		return err
	}
	defer f.Close()
	_, got, _, err := scanSegment(io.NewSectionReader(f, l.openLastAt, 1<<62), last, stop)
	if err == nil && got != last {
		err = fmt.Errorf("materialize: change log: record %d is not where open found it: %w", last, codec.ErrCorrupt)
	}
	return err
}

// dropBefore removes the segments whose records all come before seq and
// before floor() (the holds' lowest floor, read under the lock that
// HoldLog waits on: a hold registered before that is kept).
func (l *changeLog) dropBefore(seq uint64, floor func() uint64) error {
	l.readers.Lock()
	defer l.readers.Unlock()
	seq = min(seq, floor())
	l.mu.Lock()
	var drop []uint64
	for len(l.segs) > 1 && l.segs[1] <= seq {
		drop = append(drop, l.segs[0])
		delete(l.segTimes, l.segs[0])
		delete(l.marks, l.segs[0])
		l.forgetFile(l.segs[0])
		l.segs = l.segs[1:]
	}
	l.mu.Unlock()
	for _, first := range drop {
		if err := l.fs.Remove(l.fs.PathJoin(l.dir, segmentName(first))); err != nil {
			return err
		}
	}
	if len(drop) > 0 {
		return l.syncDir()
	}
	return nil
}

// dropLimit returns the first record of the first segment that
// dropBefore(seq) would keep when it drops any (0: it would drop none).
func (l *changeLog) dropLimit(seq uint64) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var keep uint64
	for i := 1; i < len(l.segs) && l.segs[i] <= seq; i++ {
		keep = l.segs[i]
	}
	return keep
}

// cutBefore returns the first record of the newest segment whose
// predecessors' records were all decided before t (Unix ms): those
// segments may go by age (0: none). A segment's records are taken to be no
// newer than its successor's first record (the decision times of records
// follow their order, unless the clock stepped back). The first record's
// time of each segment is read once and kept.
func (l *changeLog) cutBefore(t int64) uint64 {
	l.mu.Lock()
	segs := slices.Clone(l.segs)
	l.mu.Unlock()
	var cut uint64
	for _, first := range segs[min(1, len(segs)):] {
		ms, ok := l.firstTime(first)
		if !ok || ms >= t {
			break
		}
		cut = first
	}
	return cut
}

// firstTime returns the decision time (Unix ms) of the first record of
// segment first, reading it once.
func (l *changeLog) firstTime(first uint64) (int64, bool) {
	l.mu.Lock()
	ms, ok := l.segTimes[first]
	l.mu.Unlock()
	if ok {
		return ms, true
	}
	f, err := l.fs.Open(l.fs.PathJoin(l.dir, segmentName(first)))
	if err != nil {
		return 0, false
	}
	defer f.Close()
	var b [frameHeader + 8 + 1 + 16 + 8]byte // frame header, seq, record version, ULID, time
	if _, err := f.ReadAt(b[:], 0); err != nil {
		return 0, false
	}
	ms = int64(binary.BigEndian.Uint64(b[len(b)-8:]))
	l.mu.Lock()
	if l.segTimes == nil {
		l.segTimes = map[uint64]int64{}
	}
	l.segTimes[first] = ms
	l.mu.Unlock()
	return ms, true
}

// droppable reports whether dropBefore(cut) would drop a segment.
func (l *changeLog) droppable(cut uint64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.segs) > 1 && l.segs[1] <= cut
}

// firstSeq returns the sequence of the oldest record kept (0: none).
func (l *changeLog) firstSeq() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.segs) == 0 {
		return 0
	}
	return l.segs[0]
}

func (l *changeLog) close() error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	f := l.f
	l.f = nil
	l.closed = true
	for seg := range l.rfiles {
		l.forgetFile(seg)
	}
	l.mu.Unlock()
	if f == nil {
		return nil
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// recover brings Pebble up to the change log at Open: it moves a store's
// legacy change-log keys (L, from before the log was files) into the log,
// then replays the records after the last one Pebble applied durably (the
// A key), which a crash may have lost with Pebble's memtables. It sets
// s.seq.
func (s *Store) recover() error {
	applied, err := s.readApplied()
	if err != nil {
		return err
	}
	if err := s.migrateLegacyLog(&applied); err != nil {
		return fmt.Errorf("materialize: moving the change log to files: %w", err)
	}
	if err := s.migrateFormat(); err != nil {
		return fmt.Errorf("materialize: format: %w", err)
	}
	last := s.log.last
	switch {
	case last < applied:
		// The log lost records Pebble holds (it was removed or damaged):
		// go on from Pebble's state, leaving a gap in the log.
		s.opts.Logger.Warn("change log ends before the applied state; records are missing", "log_last", last, "applied", applied)
		s.seq = applied
		s.log.last = applied
		return nil
	case last == applied:
		s.seq = applied
		return nil
	}
	if first := s.log.firstSeq(); first > applied+1 {
		return fmt.Errorf("materialize: change log starts at %d, after the applied record %d: %w", first, applied, codec.ErrCorrupt)
	}
	s.seq = applied
	return s.replay(applied+1, last)
}

func (s *Store) readApplied() (uint64, error) { return readApplied(s.db) }

// migrateFormat brings the keys of a store written by an earlier version
// under the rules of codec.FormatCurrent, before anything is replayed or
// written, then records the flags (the F key).
//
// FormatPELSingleDelete: earlier versions rewrote a P key in place on
// re-delivery, so one may have two Sets, and a SingleDelete meeting the
// newer would let the older reappear. A manual compaction of the P keys
// leaves one version of each (nothing else reads the store yet: no
// snapshot keeps older ones). The F key needs no flush of its own:
// Pebble flushes memtables in order, so it is durable before anything
// written after it, and if a crash loses it the next Open compacts again,
// which changes nothing.
func (s *Store) migrateFormat() error {
	f, err := readFormat(s.db)
	if err != nil {
		return err
	}
	if f == codec.FormatCurrent {
		return nil
	}
	if f&^codec.FormatCurrent != 0 {
		return fmt.Errorf("materialize: format flags %#x: the store was written by a later version (this one knows %#x)", f, codec.FormatCurrent)
	}
	if f&codec.FormatPELSingleDelete == 0 {
		lower, upper := []byte{byte(codec.TagPEL)}, []byte{byte(codec.TagPEL) + 1}
		it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
		if err != nil {
			return err
		}
		found := it.First()
		if err := it.Close(); err != nil {
			return err
		}
		if found {
			start := time.Now()
			if err := s.db.Compact(context.Background(), lower, upper, true); err != nil {
				return err
			}
			s.opts.Logger.Info("compacted the PEL keys of a store from an earlier version", "took", time.Since(start))
		}
	}
	return s.db.Set(codec.FormatKey(), binary.BigEndian.AppendUint64(nil, codec.FormatCurrent), pebble.NoSync)
}

// readFormat returns the F key of r: the store's format flags (0 when
// missing). Errors: codec.ErrCorrupt for a value that is not 8 bytes.
func readFormat(r pebble.Reader) (uint64, error) {
	return readU64(r, codec.FormatKey(), "format flags")
}

// readApplied returns the A key of r (a DB, a snapshot): the last change-log record its state
// holds (0: none).
func readApplied(r pebble.Reader) (uint64, error) {
	return readU64(r, codec.AppliedKey(), "applied sequence")
}

// readU64 returns the u64 (big-endian) value of key k in r, 0 when k is
// missing. Errors: codec.ErrCorrupt (naming what) for a value that is not
// 8 bytes.
func readU64(r pebble.Reader, k []byte, what string) (uint64, error) {
	v, closer, err := r.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer closer.Close()
	if len(v) != 8 {
		return 0, fmt.Errorf("materialize: %s: %w", what, codec.ErrCorrupt)
	}
	return binary.BigEndian.Uint64(v), nil
}

// migrateLegacyLog appends the records of L keys after the log's last to
// the log, then deletes the L keys and records the last as applied (their
// events were applied with them).
func (s *Store) migrateLegacyLog(applied *uint64) error {
	lower, upper := []byte{byte(codec.TagChangeLog)}, []byte{byte(codec.TagChangeLog) + 1}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return err
	}
	defer it.Close()
	found, lastL := false, uint64(0)
	for ok := it.First(); ok; ok = it.Next() {
		seq, err := codec.DecodeChangeLogKey(it.Key())
		if err != nil {
			return err
		}
		found, lastL = true, seq
		if seq <= s.log.last {
			continue
		}
		if s.log.last != 0 && seq != s.log.last+1 {
			return fmt.Errorf("legacy record %d after %d: %w", seq, s.log.last, codec.ErrCorrupt)
		}
		s.log.append(seq, it.Value())
		if len(s.log.buf) >= 1<<20 {
			if err := s.log.write(); err != nil {
				return err
			}
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	if !found {
		return nil
	}
	if err := s.log.write(); err != nil {
		return err
	}
	if err := s.log.sync(); err != nil {
		return err
	}
	*applied = max(*applied, lastL)
	b := s.db.NewBatch()
	defer b.Close()
	if err := b.DeleteRange(lower, upper, nil); err != nil {
		return err
	}
	if err := b.Set(codec.AppliedKey(), binary.BigEndian.AppendUint64(nil, *applied), nil); err != nil {
		return err
	}
	if err := s.db.Apply(b, pebble.NoSync); err != nil {
		return err
	}
	return s.db.Flush()
}

// replayChunk is how many records replay applies per Pebble batch.
const replayChunk = 1024

// replay applies records from..to of the log to Pebble, as the writer
// applied them (counts, metadata, TTL index, db map), in batches that each
// record their last sequence as applied.
func (s *Store) replay(from, to uint64) error {
	var (
		b     *pebble.Batch
		n     int
		inErr error
	)
	begin := func() {
		b = s.db.NewIndexedBatch()
		s.beginGroup()
		n = 0
	}
	var events []codec.Event
	commit := func(seq uint64) error {
		defer b.Close()
		if err := s.seal(b, seq); err != nil {
			return err
		}
		if err := s.db.Apply(b, pebble.NoSync); err != nil {
			return err
		}
		s.publish(events, seq)
		events = events[:0]
		s.seq = seq
		return nil
	}
	begin()
	err := s.log.readAt(from, to, func(seq, segment uint64, at int64, raw []byte) bool {
		rec, err := codec.DecodeRecord(seq, raw)
		if err != nil {
			inErr = err
			return false
		}
		// The frame at offset at: header, seq, then the record (raw).
		s.noteValueRefs(rec.Events, segment, at, frameHeader+8+len(raw))
		cv := &View{r: b, vlog: s.log, cache: s.cache, staged: &s.staged, iters: &s.iters, dbm: s.staged.dbBase, filters: &s.filters}
		for _, e := range rec.Events {
			if inErr = s.stage(cv, b, e); inErr != nil {
				return false
			}
			events = append(events, e)
		}
		if n++; n == replayChunk {
			if inErr = commit(seq); inErr != nil {
				return false
			}
			begin()
		}
		return true
	})
	if err == nil {
		err = inErr
	}
	if err == nil && n > 0 {
		err = commit(s.seq + uint64(n))
	} else if b != nil && n == 0 {
		b.Close()
	}
	if err == nil && s.seq != to {
		err = fmt.Errorf("materialize: change log replay ended at %d, want %d: %w", s.seq, to, codec.ErrCorrupt)
	}
	if err != nil {
		return fmt.Errorf("materialize: replaying the change log: %w", err)
	}
	s.opts.Logger.Info("change log replayed", "from", from, "to", to)
	return nil
}
