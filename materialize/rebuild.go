package materialize

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sediment-dev/sediment/codec"
)

// SnapshotsDirName is the directory inside the data directory that holds
// the periodic snapshots (Options.SnapshotEvery): one checkpoint each,
// named by the sequence of the last record it holds, 20 decimal digits.
// Open and Pebble ignore it.
const SnapshotsDirName = "snapshots"

// snapshotPending is where a periodic snapshot is written before it is
// renamed to its sequence's name.
const snapshotPending = "pending"

// Snapshot is a periodic snapshot: a checkpoint (Store.Checkpoint) whose
// state is the store's after change-log record Seq.
type Snapshot struct {
	Seq  uint64
	Path string
}

// ListSnapshots returns the snapshots in the data directory dir, oldest
// first (none when it has no snapshots directory).
func ListSnapshots(dir string) ([]Snapshot, error) {
	d := filepath.Join(dir, SnapshotsDirName)
	ents, err := os.ReadDir(d)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Snapshot
	for _, e := range ents {
		if seq, ok := snapshotSeq(e.Name()); ok && e.IsDir() {
			out = append(out, Snapshot{Seq: seq, Path: filepath.Join(d, e.Name())})
		}
	}
	slices.SortFunc(out, func(a, b Snapshot) int { return cmp.Compare(a.Seq, b.Seq) })
	return out, nil
}

// snapshotSeq parses a snapshot directory's name.
func snapshotSeq(name string) (uint64, bool) {
	if len(name) != 20 {
		return 0, false
	}
	seq, err := strconv.ParseUint(name, 10, 64)
	return seq, err == nil
}

// startSnapshots cleans the snapshots directory after a crash (a pending
// or temporary checkpoint) and, when Options.SnapshotEvery is set, holds
// the change log from the newest snapshot's successor on (from the first
// record when there is none yet) and starts the periodic snapshots. Open
// calls it once, for a store on disk.
func (s *Store) startSnapshots() {
	d := s.fs.PathJoin(s.dir, SnapshotsDirName)
	if names, err := s.fs.List(d); err == nil {
		for _, n := range names {
			if _, ok := snapshotSeq(n); ok {
				continue
			}
			if err := s.fs.RemoveAll(s.fs.PathJoin(d, n)); err != nil {
				s.opts.Logger.Warn("cleaning up after an interrupted snapshot", "path", n, "err", err)
			}
		}
	}
	if s.opts.SnapshotEvery <= 0 || s.opts.FS != nil {
		// Snapshots left by an earlier run are not maintained and hold
		// nothing: the retention may drop the records after them (a
		// Rebuild from one then fails with ErrLogGap). A store on an
		// Options.FS takes none (TakeSnapshot writes through os).
		return
	}
	if snaps, err := ListSnapshots(s.dir); err == nil && len(snaps) > 0 {
		s.snapHold = s.HoldLog(snaps[len(snaps)-1].Seq + 1)
	} else {
		s.snapHold = s.HoldLog(1)
	}
	s.wg.Add(1)
	go s.every(s.opts.SnapshotEvery, func() {
		if _, err := s.TakeSnapshot(); err != nil && !errors.Is(err, ErrClosed) {
			s.opts.Logger.Warn("periodic snapshot failed", "err", err)
		}
	})
}

// TakeSnapshot writes a snapshot of the store to its snapshots directory
// (SnapshotsDirName/<seq>), unless the newest one already holds the last
// committed record; then removes the oldest beyond Options.SnapshotKeep and
// lets the change log's retention drop the records before the newest
// snapshot (a LogHold keeps those after it, whatever the retention, so
// that the newest snapshot plus the log rebuild the store: Rebuild).
// It returns the newest snapshot. Errors: those of Checkpoint. Calls are
// serialized.
func (s *Store) TakeSnapshot() (Snapshot, error) {
	if s.opts.InMemory || s.opts.FS != nil {
		return Snapshot{}, ErrInMemory
	}
	s.snapMu.Lock()
	defer s.snapMu.Unlock()
	snaps, err := ListSnapshots(s.dir)
	if err != nil {
		return Snapshot{}, err
	}
	if n := len(snaps); n > 0 && snaps[n-1].Seq >= s.LastSeq() {
		return snaps[n-1], nil
	}
	d := filepath.Join(s.dir, SnapshotsDirName)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return Snapshot{}, err
	}
	pending := filepath.Join(d, snapshotPending)
	// The records after the snapshot are held from before it is taken (at
	// or below its successor, then moved up to it): held only after, a
	// short retention could drop the successor in between.
	hold := s.HoldLog(s.LastSeq() + 1)
	info, err := s.Checkpoint(pending)
	if err != nil {
		hold.Release()
		return Snapshot{}, err
	}
	hold.Advance(info.Seq + 1)
	snap := Snapshot{Seq: info.Seq, Path: filepath.Join(d, fmt.Sprintf("%020d", info.Seq))}
	if err := os.Rename(pending, snap.Path); err != nil {
		hold.Release()
		return Snapshot{}, err
	}
	if err := syncDir(s.fs, d); err != nil {
		hold.Release()
		return Snapshot{}, err
	}
	// The new snapshot's hold replaces the previous one's.
	if s.snapHold != nil {
		s.snapHold.Release()
	}
	s.snapHold = hold
	snaps = append(snaps, snap)
	for len(snaps) > max(s.opts.SnapshotKeep, 1) {
		if err := os.RemoveAll(snaps[0].Path); err != nil {
			return snap, err
		}
		snaps = snaps[1:]
	}
	return snap, nil
}

// RebuildInfo describes a store that Rebuild wrote.
type RebuildInfo struct {
	Snapshot uint64 // the last record the snapshot held
	First    uint64 // the first record applied from the log (0: none)
	Last     uint64 // the store's last record
	Applied  int    // records applied from the log
	Duration time.Duration
}

// ErrLogGap is Rebuild's error when the change log does not hold the
// record after the snapshot's last one.
var ErrLogGap = errors.New("the change log does not follow the snapshot")

// rebuildWindow is how many records Rebuild keeps in flight.
const rebuildWindow = 512

// Rebuild writes to the new data directory to the state of snapshot (a
// checkpoint: Store.Checkpoint, a periodic snapshot, SAVE's) followed by
// every record of the change log in logDir (a "changelog" directory, or a
// data directory holding one) after the snapshot's last: the snapshot is
// copied, opened (which replays its own log), and each later record is
// applied with Store.ApplyAsync (512 in flight, so that they commit in
// groups), the path of every write. The log may be a
// running server's: Rebuild stops at its last whole record.
//
// to must not exist, or be an empty directory. Errors: ErrLogGap (wrapped,
// naming both sequences) when the log's records begin after the
// snapshot's successor (retention dropped them) or skip one; a record
// that does not decode (codec.ErrCorrupt); file-system errors. On an
// error to is left as it is, for inspection.
func Rebuild(snapshot, logDir, to string, opts Options) (RebuildInfo, error) {
	start := time.Now()
	var info RebuildInfo
	if fi, err := os.Stat(filepath.Join(logDir, "changelog")); err == nil && fi.IsDir() {
		logDir = filepath.Join(logDir, "changelog")
	}
	if names, err := os.ReadDir(to); err == nil && len(names) > 0 {
		return info, fmt.Errorf("materialize: rebuild: %q is not empty", to)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return info, err
	}
	if err := copyTree(snapshot, to); err != nil {
		return info, fmt.Errorf("materialize: rebuild: copying the snapshot: %w", err)
	}
	opts.Dir, opts.InMemory, opts.FS = to, false, nil
	opts.SnapshotEvery = 0
	s, err := Open(opts)
	if err != nil {
		return info, fmt.Errorf("materialize: rebuild: opening the snapshot: %w", err)
	}
	info.Snapshot = s.LastSeq()
	next := info.Snapshot + 1
	var stop error // why the log's reading stopped early
	// Up to rebuildWindow records are in flight, so that the writer commits
	// them in groups as Open's replay does (one record per group took
	// several times as long).
	var inFlight []*Pending
	wait := func(n int) {
		for len(inFlight) > n {
			if _, err := inFlight[0].Wait(); err != nil && stop == nil {
				stop = err
			}
			inFlight = inFlight[1:]
		}
	}
	first, err := ReadChangeLog(logDir, next, func(rec codec.Record) bool {
		if rec.Seq != next {
			stop = fmt.Errorf("materialize: rebuild: record %d is missing from the log (the next is %d): %w", next, rec.Seq, ErrLogGap)
			return false
		}
		inFlight = append(inFlight, s.ApplyAsync(rec))
		wait(rebuildWindow - 1)
		if stop != nil {
			return false
		}
		if info.First == 0 {
			info.First = rec.Seq
		}
		next++
		return true
	})
	wait(0)
	info.Applied = int(s.LastSeq() - info.Snapshot)
	switch {
	case err != nil:
	case first > info.Snapshot+1:
		err = fmt.Errorf("materialize: rebuild: the snapshot ends at record %d, the log begins at %d: %w", info.Snapshot, first, ErrLogGap)
	default:
		err = stop
	}
	info.Last = s.LastSeq()
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	info.Duration = time.Since(start)
	return info, err
}

// copyTree copies the directory src to dst (created), files and
// subdirectories, fsyncing each file.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%q is not a regular file", path)
		}
		return copyFile(path, target)
	})
}

func copyFile(src, dst string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, out.Close()) }()
	if _, err := io.Copy(out, in); err != nil {
		return err
	}
	return out.Sync()
}

// KeyDiff is a Pebble key whose value differs between two stores
// (CompareStores): A and B are its values in each, InA and InB whether
// each holds it.
type KeyDiff struct {
	Key, A, B []byte
	InA, InB  bool
}

func (d KeyDiff) String() string {
	switch {
	case !d.InA:
		return fmt.Sprintf("key %q only in the second store", d.Key)
	case !d.InB:
		return fmt.Sprintf("key %q only in the first store", d.Key)
	}
	return fmt.Sprintf("key %q: %d bytes against %d bytes (%x / %x)", d.Key, len(d.A), len(d.B), d.A[:min(len(d.A), 16)], d.B[:min(len(d.B), 16)])
}

// CompareStores walks two stores' Pebble keys in order, each at one state
// (a Pebble snapshot taken when it begins), and returns the first max
// keys whose values differ or that only one holds, and how many there
// are in all: every data key, index, count, the db map and the applied
// sequence (the A key), so that two stores at the same record compare
// equal exactly when they hold the same state byte for byte. It is what
// `sediment check --rebuild` and the event-sourcing tests compare a
// rebuilt store with. Where a string's value lives is not state: a value
// kept in the change log (codec.ValueRef) compares as the same metadata
// with the value inline, and the R keys are skipped.
func CompareStores(a, b *Store, max int) ([]KeyDiff, int, error) {
	ha, hb := a.HoldLog(1), b.HoldLog(1) // no segment goes while values are read
	defer ha.Release()
	defer hb.Release()
	sa, sb := a.db.NewSnapshot(), b.db.NewSnapshot()
	defer sa.Close()
	defer sb.Close()
	skipR := &pebble.IterOptions{SkipPoint: func(k []byte) bool { return len(k) > 0 && k[0] == byte(codec.TagValueRef) }}
	ia, err := sa.NewIter(skipR)
	if err != nil {
		return nil, 0, err
	}
	defer ia.Close()
	ib, err := sb.NewIter(skipR)
	if err != nil {
		return nil, 0, err
	}
	defer ib.Close()
	var diffs []KeyDiff
	n := 0
	note := func(d KeyDiff) {
		if n++; len(diffs) < max {
			diffs = append(diffs, KeyDiff{Key: bytes.Clone(d.Key), A: bytes.Clone(d.A), B: bytes.Clone(d.B), InA: d.InA, InB: d.InB})
		}
	}
	okA, okB := ia.First(), ib.First()
	for okA || okB {
		c := 0
		switch {
		case !okB:
			c = -1
		case !okA:
			c = 1
		default:
			c = bytes.Compare(ia.Key(), ib.Key())
		}
		switch {
		case c < 0:
			va, err := ia.ValueAndErr()
			if err != nil {
				return diffs, n, err
			}
			note(KeyDiff{Key: ia.Key(), A: va, InA: true})
			okA = ia.Next()
		case c > 0:
			vb, err := ib.ValueAndErr()
			if err != nil {
				return diffs, n, err
			}
			note(KeyDiff{Key: ib.Key(), B: vb, InB: true})
			okB = ib.Next()
		default:
			va, err := ia.ValueAndErr()
			if err != nil {
				return diffs, n, err
			}
			vb, err := ib.ValueAndErr()
			if err != nil {
				return diffs, n, err
			}
			if !bytes.Equal(va, vb) && ia.Key()[0] == byte(codec.TagMeta) {
				if va, err = a.inlineMeta(va); err != nil {
					return diffs, n, err
				}
				if vb, err = b.inlineMeta(vb); err != nil {
					return diffs, n, err
				}
			}
			if !bytes.Equal(va, vb) {
				note(KeyDiff{Key: ia.Key(), A: va, B: vb, InA: true, InB: true})
			}
			okA, okB = ia.Next(), ib.Next()
		}
	}
	return diffs, n, errors.Join(ia.Error(), ib.Error())
}

// inlineMeta returns the metadata value v with a value it locates in the
// change log inline (v itself otherwise).
func (s *Store) inlineMeta(v []byte) ([]byte, error) {
	m, err := codec.DecodeMeta(v)
	if err != nil || m.Ref.IsZero() {
		return v, nil // compared as stored
	}
	if m.Value, err = s.log.readValue(m.Ref, nil); err != nil {
		return nil, err
	}
	m.Ref = codec.ValueRef{}
	return codec.AppendMeta(nil, m), nil
}
