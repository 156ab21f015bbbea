package materialize

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/sediment-dev/sediment/codec"
)

// CheckpointDirName is a directory inside the data directory that
// Checkpoint may write (SAVE and BGSAVE do): Open and Pebble ignore it.
// Any other dest inside the data directory is refused, but for those in
// SnapshotsDirName (the periodic snapshots).
const CheckpointDirName = "checkpoint"

// ErrInMemory is returned by Checkpoint on an InMemory store: its files
// live in a file system of its own that ends with it.
var ErrInMemory = errors.New("materialize: in-memory store: no checkpoint")

// CheckpointInfo describes a checkpoint that Store.Checkpoint wrote.
type CheckpointInfo struct {
	// Seq is the last change-log record the checkpoint holds: its state is
	// the store's after record Seq. It is at least the LastSeq of before
	// the Checkpoint call.
	Seq uint64
	// Applied is the last record its Pebble state holds (the A key; 0:
	// none): Open on the checkpoint replays records Applied+1..Seq from its
	// change log. Applied <= Seq.
	Applied uint64
	// Time is the store's clock (Options.Now) when the checkpoint's state
	// was fixed.
	Time time.Time
	// Duration is how long Checkpoint took.
	Duration time.Duration
	// Bytes is the size of the checkpoint's files, LogBytes the part of it
	// in change-log segments, and Copied the change-log bytes written as
	// copies rather than hard links (the segment of record Seq always is).
	// Pebble hard-links its sstables and blob files when it can and copies
	// its MANIFEST and OPTIONS: Copied does not count those.
	Bytes, LogBytes, Copied int64
}

// Checkpoint writes a copy of the store to the directory dest that is
// itself a data directory: Open(Options{Dir: dest}) serves the state as of
// the checkpoint. That state holds every write committed before
// Checkpoint was called and may hold writes committed while it runs: it is
// the state after change-log record Seq, a prefix of the log, never a part
// of a write. It is the storage half of Redis's SAVE and BGSAVE.
//
// Layout, the data directory's own:
//
//	dest/             Pebble's checkpoint (DB.Checkpoint): sstables and
//	                  blob files, hard-linked when the file system allows,
//	                  MANIFEST, OPTIONS, markers. Its A key is Applied: with
//	                  Pebble's WAL off it holds only flushed state.
//	dest/changelog/   the segments holding records Applied+1..Seq (the
//	                  first may begin earlier): those before the segment of
//	                  record Seq hard-linked (copied when a link fails),
//	                  that one copied up to the end of record Seq; when it
//	                  is the only one, from record Applied+1 on, or only
//	                  record Seq when Applied == Seq (the log's last record
//	                  sets the ULID clock at Open).
//
// Open on dest replays records Applied+1..Seq, as after a crash. The
// change log's older history (ChangeLogRetention) is not copied.
//
// The checkpoint is written to a sibling directory dest+".tmp-<random>",
// its files and directories fsynced, then renamed to dest: an existing
// dest is first renamed to dest+".old-<random>", and removed once the new
// one is in place and dest's parent directory is fsynced. A crash during
// the two renames leaves dest absent and the previous checkpoint in the
// ".old-" directory; a crash before them leaves a ".tmp-" directory.
// Open cleans up after such a crash for the checkpoint inside the data
// directory (CheckpointDirName): it removes the ".tmp-" directories and
// an ".old-" one beside an existing checkpoint, and renames an ".old-" one
// back when the checkpoint is missing (cleanCheckpoints).
//
// dest's parent must exist. An existing dest must be a directory, empty
// or holding a "changelog" entry (a data directory): anything else is
// refused, as are the store's own directory, a directory inside it other
// than CheckpointDirName, and its ancestors.
//
// Errors: ErrInMemory for an InMemory store (a store on Options.FS is
// supported: dest is on that file system); the store's *StorageFault
// (errors.As) while it has one, since a checkpoint writes to the same
// disk; ErrClosed after Close. On an error the temporary directory is
// removed and an existing dest is left as it was, except when the fsync
// of dest's parent fails after the renames: dest then holds the new
// checkpoint.
//
// Safe for concurrent use; writes go on while it runs. It holds off the
// change log's pruning until the segments are linked or copied (which
// holds off a LogTail that starts a read behind that pruning), and Close
// waits for it to return. Two Checkpoints to the same dest at a time must
// be serialized by the caller: one may fail or be replaced by the other,
// but neither harms the store.
func (s *Store) Checkpoint(dest string) (CheckpointInfo, error) {
	start := time.Now()
	if s.opts.InMemory {
		return CheckpointInfo{}, ErrInMemory
	}
	if f := s.WriteFault(); f != nil {
		return CheckpointInfo{}, fmt.Errorf("materialize: checkpoint refused: %w", f)
	}
	if !s.hold() {
		return CheckpointInfo{}, ErrClosed
	}
	defer s.wg.Done()
	dest = filepath.Clean(dest)
	if err := s.checkDest(dest); err != nil {
		return CheckpointInfo{}, fmt.Errorf("materialize: checkpoint %q: %w", dest, err)
	}
	var rnd [8]byte
	rand.Read(rnd[:])
	suffix := hex.EncodeToString(rnd[:])
	tmp := dest + ".tmp-" + suffix
	info, err := s.writeCheckpoint(tmp)
	if err == nil {
		err = s.installCheckpoint(tmp, dest, dest+".old-"+suffix)
	}
	if err != nil {
		if rerr := s.fs.RemoveAll(tmp); rerr != nil {
			s.opts.Logger.Warn("checkpoint: temporary directory not removed", "dir", tmp, "err", rerr)
		}
		return CheckpointInfo{}, fmt.Errorf("materialize: checkpoint %q: %w", dest, err)
	}
	info.Duration = time.Since(start)
	s.opts.Logger.Info("checkpoint written", "dir", dest, "seq", info.Seq, "applied", info.Applied,
		"bytes", info.Bytes, "copied", info.Copied, "took", info.Duration)
	return info, nil
}

// hold counts an operation in s.wg, so that Close waits for it; false once
// the store is closed.
func (s *Store) hold() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
	return true
}

// checkDest refuses a dest whose parent is missing, that is the store's
// directory, inside it or above it, or that exists and is not a data
// directory (Checkpoint would remove it).
func (s *Store) checkDest(dest string) error {
	fs := s.fs
	if b := filepath.Base(dest); b == "." || b == ".." || b == string(filepath.Separator) {
		return errors.New("refused: not a directory's name")
	}
	parent := fs.PathDir(dest)
	fi, err := fs.Stat(parent)
	if err != nil {
		return fmt.Errorf("parent directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("parent %q is not a directory", parent)
	}
	inside := sameDir(dest, s.fs.PathJoin(s.dir, CheckpointDirName)) ||
		sameDir(parent, s.fs.PathJoin(s.dir, SnapshotsDirName))
	if within(dest, s.dir) || (within(s.dir, dest) && !inside) {
		return fmt.Errorf("refused: the store's directory is %q", s.dir)
	}
	fi, err = fs.Stat(dest)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return errors.New("refused: exists and is not a directory")
	}
	if s.opts.FS == nil && aboveStore(dest, s.dir) {
		return fmt.Errorf("refused: it is or holds the store's directory %q", s.dir)
	}
	names, err := fs.List(dest)
	if err != nil {
		return err
	}
	if len(names) > 0 && !slices.Contains(names, "changelog") {
		return errors.New("refused: exists and is not a data directory (no changelog)")
	}
	return nil
}

// within reports whether path b is a or inside it, as absolute paths.
func within(a, b string) bool {
	a, errA := filepath.Abs(a)
	b, errB := filepath.Abs(b)
	if errA != nil || errB != nil {
		return a == b
	}
	rel, err := filepath.Rel(a, b)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// sameDir reports whether paths a and b name the same place.
func sameDir(a, b string) bool { return within(a, b) && within(b, a) }

// aboveStore reports whether dest is, through a link, the directory dir
// or one of its ancestors (the operating system's file system).
func aboveStore(dest, dir string) bool {
	d, err := os.Stat(dest)
	if err != nil {
		return false
	}
	p, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	for {
		if fi, err := os.Stat(p); err == nil && os.SameFile(d, fi) {
			return true
		}
		up := filepath.Dir(p)
		if up == p {
			return false
		}
		p = up
	}
}

// writeCheckpoint writes the checkpoint to tmp: Pebble's checkpoint, then
// the change-log segments from the one holding record A+1 (A: the
// checkpoint's A key) to the one holding the last record, upTo, which is
// copied up to the end of upTo's frame. Then it fsyncs what it wrote.
//
// Why upTo = s.applying, read after Pebble's checkpoint: a group writes
// its records to the log, then stores applying, then applies its batch
// (with its A) to Pebble. So every record up to applying is whole in the
// log, and applying is at least the A of any state Pebble flushed before
// the checkpoint read its version (the flush follows the batch's apply):
// the copy holds every record the replay of the checkpoint needs, ends at
// a group's end, and holds no frame of a group being written or of a
// failed write (whose sequences a later group takes again). And applying
// is at least the committed LastSeq of before the call.
func (s *Store) writeCheckpoint(tmp string) (CheckpointInfo, error) {
	var info CheckpointInfo
	fs, l := s.fs, s.log
	logDir := fs.PathJoin(tmp, "changelog")
	linked, err := func() ([]string, error) {
		// Pruning (dropBefore) waits until the segments are linked or
		// copied: it would remove those holding records after the A of
		// the Pebble checkpoint once a later flush made them old.
		l.readers.RLock()
		defer l.readers.RUnlock()
		if err := s.db.Checkpoint(tmp); err != nil {
			return nil, fmt.Errorf("pebble checkpoint: %w", err)
		}
		info.Seq = s.applying.Load()
		info.Time = s.opts.Now()
		applied, firstRef, err := s.checkpointApplied(tmp)
		if err != nil {
			return nil, fmt.Errorf("reading the checkpoint's applied sequence: %w", err)
		}
		if applied > info.Seq {
			return nil, fmt.Errorf("the checkpoint's applied sequence %d is past the change log's %d: %w", applied, info.Seq, codec.ErrCorrupt)
		}
		info.Applied = applied
		linked, copied, err := l.copyTo(logDir, applied, info.Seq, firstRef)
		info.Copied = copied
		return linked, err
	}()
	if err != nil {
		return info, err
	}
	// A segment hard-linked shares its file with the store's, which its
	// rotation synced: a sync here confirms it.
	for _, name := range linked {
		if err := syncFile(fs, name); err != nil {
			return info, err
		}
	}
	if err := syncDir(fs, logDir); err != nil {
		return info, err
	}
	if err := syncDir(fs, tmp); err != nil {
		return info, err
	}
	if info.Bytes, err = filesSize(fs, tmp); err != nil {
		return info, err
	}
	if info.LogBytes, err = filesSize(fs, logDir); err != nil {
		return info, err
	}
	info.Bytes += info.LogBytes
	return info, nil
}

// checkpointApplied returns the A key of the Pebble checkpoint in dir,
// opened read-only, and the first segment an R key of it names (0: none):
// its values in the change log are there and in later segments.
func (s *Store) checkpointApplied(dir string) (applied, firstRef uint64, err error) {
	db, err := pebble.Open(dir, &pebble.Options{FS: s.fs, ReadOnly: true, Logger: pebbleLogger{s.opts.Logger, s.opts.Fatal}})
	if err != nil {
		return 0, 0, err
	}
	defer func() { err = errors.Join(err, db.Close()) }()
	if applied, err = readApplied(db); err != nil {
		return 0, 0, err
	}
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{byte(codec.TagValueRef)}, UpperBound: []byte{byte(codec.TagValueRef) + 1}})
	if err != nil {
		return 0, 0, err
	}
	if it.First() {
		firstRef, _, err = codec.DecodeValueRefKey(it.Key())
	}
	return applied, firstRef, errors.Join(err, it.Error(), it.Close())
}

// installCheckpoint renames tmp to dest, an existing dest to old first
// (back again when the second rename fails), fsyncs dest's parent and
// removes old.
func (s *Store) installCheckpoint(tmp, dest, old string) error {
	fs := s.fs
	_, err := fs.Stat(dest)
	exists := err == nil
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if exists {
		if err := fs.Rename(dest, old); err != nil {
			return err
		}
	}
	if err := fs.Rename(tmp, dest); err != nil {
		if exists {
			err = errors.Join(err, fs.Rename(old, dest))
		}
		return err
	}
	if err := syncDir(fs, fs.PathDir(dest)); err != nil {
		return fmt.Errorf("in place, but its rename may not be durable: %w", err)
	}
	if exists {
		if err := fs.RemoveAll(old); err != nil {
			s.opts.Logger.Warn("checkpoint: the previous checkpoint was not removed", "dir", old, "err", err)
		}
	}
	return nil
}

// copyTo puts in dir (created) the segments holding records
// applied+1..upTo, ending with record upTo: hard links to (or copies of)
// the segments before the one of record upTo, and a copy of that one up to
// the end of the record (from record min(applied+1, upTo) on when it is
// the only one). It returns the paths linked (to be synced) and the
// bytes copied. With firstRef (not 0), the checkpoint's metadata locates
// values in that segment and later ones (codec.ValueRef): every segment
// from it on is kept too, whole, the last one from its start (a reference
// is an offset in its file). The caller holds l.readers (shared): no
// segment is dropped meanwhile, and every record up to upTo is whole in
// the log.
func (l *changeLog) copyTo(dir string, applied, upTo, firstRef uint64) (linked []string, copied int64, err error) {
	if err := l.fs.MkdirAll(dir, 0o755); err != nil {
		return nil, 0, err
	}
	if upTo == 0 {
		return nil, 0, nil
	}
	l.mu.Lock()
	segs := slices.Clone(l.segs)
	l.mu.Unlock()
	// Segments after upTo's hold later records only; those before the one
	// of record applied+1 hold records Pebble holds. When applied == upTo,
	// the one of record upTo is kept: Open's ULID clock follows the log's
	// last record.
	n, _ := slices.BinarySearch(segs, upTo+1)
	m, _ := slices.BinarySearch(segs, min(applied+1, upTo)+1)
	last, first := n-1, m-1 // the last segment starting at or before upTo, and applied+1
	if firstRef != 0 {
		r, found := slices.BinarySearch(segs, firstRef)
		if !found {
			return nil, 0, fmt.Errorf("change log: segment %d of a value reference is missing: %w", firstRef, codec.ErrCorrupt)
		}
		first = min(first, r)
		if first < 0 {
			first = r
		}
	}
	if first < 0 {
		if applied < upTo {
			return nil, 0, fmt.Errorf("change log: record %d is missing: %w", applied+1, codec.ErrCorrupt)
		}
		return nil, 0, nil // a log that lost records Pebble holds (recover): so does the checkpoint
	}
	for _, seg := range segs[first:last] {
		dst := l.fs.PathJoin(dir, segmentName(seg))
		c, err := linkOrCopy(l.fs, l.fs.PathJoin(l.dir, segmentName(seg)), dst)
		if err != nil {
			return nil, 0, err
		}
		if c == 0 {
			linked = append(linked, dst)
		}
		copied += c
	}
	// The segment of record upTo, maybe still written to: bytes past the
	// end of record upTo may be a group being written, or a failed write's
	// frames not yet invalidated. When it is the only one, the copy starts
	// at record applied+1 (upTo when none is to replay), named after it.
	seg := segs[last]
	from := seg
	if first == last && firstRef == 0 {
		from = min(applied+1, upTo)
	}
	src, err := l.fs.Open(l.fs.PathJoin(l.dir, segmentName(seg)))
	if err != nil {
		return nil, 0, err
	}
	defer src.Close()
	start, end, got, err := frameRange(src, seg, from, upTo)
	if err != nil {
		return nil, 0, err
	}
	if got < upTo && applied < upTo {
		return nil, 0, fmt.Errorf("change log: record %d is missing: %w", got+1, codec.ErrCorrupt)
	}
	if start < 0 {
		return linked, copied, nil // a log that lost records Pebble holds, as above
	}
	c, err := writeFile(l.fs, l.fs.PathJoin(dir, segmentName(from)), io.NewSectionReader(src, start, end-start))
	return linked, copied + c, err
}

// frameRange parses the frames of a segment whose first record is first
// up to record upTo, and returns the offset where the frame of record from
// begins (-1: the segment ends before it), the offset where that of upTo
// ends, and upTo; or, when the segment ends first (a torn frame, as
// scanSegment reads it), the end of its last whole frame and that frame's
// record (0: none). It parses nothing past record upTo.
func frameRange(r io.ReaderAt, first, from, upTo uint64) (start, end int64, last uint64, err error) {
	rd := chunkReader{r: r, chunk: scanChunk}
	start = -1
	for want := first; want <= upTo; want++ {
		hdr, err := rd.at(end, frameHeader)
		if errors.Is(err, io.EOF) {
			return start, end, last, nil
		}
		if err != nil {
			return start, end, last, err
		}
		n := binary.BigEndian.Uint32(hdr[:4])
		sum := binary.BigEndian.Uint32(hdr[4:])
		if n < 8 || n > 1<<31 {
			return start, end, last, nil
		}
		payload, err := rd.at(end+frameHeader, int(n))
		if errors.Is(err, io.EOF) {
			return start, end, last, nil
		}
		if err != nil {
			return start, end, last, err
		}
		if crc32.Checksum(payload, castagnoli) != sum {
			return start, end, last, nil
		}
		if seq := binary.BigEndian.Uint64(payload); seq != want {
			return start, end, last, fmt.Errorf("materialize: change log: record %d where %d was due: %w", seq, want, codec.ErrCorrupt)
		}
		if want == from {
			start = end
		}
		end += frameHeader + int64(n)
		last = want
	}
	return start, end, last, nil
}

// linkOrCopy hard-links src to dst, or copies it when the file system
// cannot link it (another device, or no links). It returns the bytes
// copied (0: linked).
func linkOrCopy(fs vfs.FS, src, dst string) (int64, error) {
	err := fs.Link(src, dst)
	if err == nil || errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrExist) || errors.Is(err, os.ErrPermission) {
		return 0, err
	}
	f, err := fs.Open(src)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return writeFile(fs, dst, f)
}

// writeFile creates name holding r's bytes, synced.
func writeFile(fs vfs.FS, name string, r io.Reader) (int64, error) {
	f, err := fs.Create(name, vfs.WriteCategoryUnspecified)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(f, r)
	if err == nil {
		err = f.Sync()
	}
	return n, errors.Join(err, f.Close())
}

func syncFile(fs vfs.FS, name string) error {
	f, err := fs.OpenReadWrite(name, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	return errors.Join(f.Sync(), f.Close())
}

func syncDir(fs vfs.FS, name string) error {
	d, err := fs.OpenDir(name)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// filesSize returns the total size of the files directly in dir.
func filesSize(fs vfs.FS, dir string) (int64, error) {
	names, err := fs.List(dir)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, name := range names {
		fi, err := fs.Stat(fs.PathJoin(dir, name))
		if err != nil {
			return 0, err
		}
		if !fi.IsDir() {
			n += fi.Size()
		}
	}
	return n, nil
}

// cleanCheckpoints removes what a crash during a Checkpoint into the data
// directory's CheckpointDirName left: the ".tmp-" directories (a
// checkpoint not finished), and an ".old-" one (the previous checkpoint,
// renamed back when the new one was not yet in place). Errors are logged:
// leftovers cost only disk space.
func (s *Store) cleanCheckpoints() {
	names, err := s.fs.List(s.dir)
	if err != nil {
		return
	}
	dest := s.fs.PathJoin(s.dir, CheckpointDirName)
	_, destErr := s.fs.Stat(dest)
	for _, n := range names {
		path := s.fs.PathJoin(s.dir, n)
		switch {
		case strings.HasPrefix(n, CheckpointDirName+".tmp-"):
			err = s.fs.RemoveAll(path)
		case strings.HasPrefix(n, CheckpointDirName+".old-") && destErr != nil:
			err, destErr = s.fs.Rename(path, dest), nil
		case strings.HasPrefix(n, CheckpointDirName+".old-"):
			err = s.fs.RemoveAll(path)
		default:
			continue
		}
		if err != nil {
			s.opts.Logger.Warn("cleaning up after an interrupted checkpoint", "path", path, "err", err)
		}
	}
}
