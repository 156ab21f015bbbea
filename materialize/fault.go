package materialize

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Storage faults (docs/rfcs/20261127_storage_faults.md): when the change log
// or Pebble cannot write to the data directory's filesystem, or its free
// space falls below the reserve, the store refuses writes (every later
// group fails with the StorageFault, without touching the disk) and keeps
// serving reads, until a probe finds the cause gone.

// Where a StorageFault arose (StorageFault.Where).
const (
	FaultChangeLog = "change log" // a change-log write or fsync failed, or free space is below the reserve
	FaultDataFiles = "data files" // a Pebble flush failed
)

// StorageFault is why the store refuses writes (Store.Fault). The broker
// answers it with Redis's MISCONF error.
type StorageFault struct {
	Where string    // FaultChangeLog or FaultDataFiles
	Err   error     // the failed operation's error, or a *ReserveError
	Since time.Time // when the fault was first seen
}

func (f *StorageFault) Error() string {
	return "materialize: writes refused: " + f.Where + ": " + f.Err.Error()
}

func (f *StorageFault) Unwrap() error { return f.Err }

// Cause is the fault's cause in a few words, without file paths: the
// system call's error text (as strerror is Redis's: "no space left on
// device", "input/output error", "read-only file system"), a
// ReserveError's text, or else the whole error's text.
func (f *StorageFault) Cause() string {
	var re *ReserveError
	if errors.As(f.Err, &re) {
		return re.Error()
	}
	var errno syscall.Errno
	if errors.As(f.Err, &errno) {
		return errno.Error()
	}
	return f.Err.Error()
}

// ReserveError is the fault of a filesystem whose free space is below the
// reserve (Options.MinFreeDisk). It unwraps to syscall.ENOSPC.
type ReserveError struct {
	Free, Reserve uint64 // bytes
}

func (e *ReserveError) Error() string {
	return fmt.Sprintf("no space left on device (%d MiB free, below the reserve of %d MiB)", e.Free>>20, e.Reserve>>20)
}

func (e *ReserveError) Unwrap() error { return syscall.ENOSPC }

// Probe timing: a fault is probed every faultProbeEvery by the monitor, and
// on demand (Store.Fault) when the last probe is older than
// faultProbeOnDemand.
const (
	faultProbeEvery    = time.Second
	faultProbeOnDemand = 100 * time.Millisecond
	probeFileName      = "probe"
	probeFileSize      = 4 << 10
	pebbleEmptyTable   = "pebble: empty table" // FlushEnd's Err for a flush with no output: not a failure
)

// faults is the store's storage-fault state.
type faults struct {
	cur         atomic.Pointer[StorageFault]
	flushFailed atomic.Int32 // consecutive Pebble flushes failed (FlushEnd); 0: the last succeeded
	lastProbe   atomic.Int64 // monotonic ns of the last probe
	probeMu     sync.Mutex   // one probe at a time
	free        atomic.Int64 // free bytes at the last space check; -1: unknown
	reserve     atomic.Int64 // Options.MinFreeDisk; 0: no reserve
	sinceCheck  int64        // change-log bytes written since the last space check; writer goroutine only
	// singleDelMisuse counts the SingleDelete misuses Pebble's flushes and
	// compactions met (a SingleDelete over two Sets): 0 unless a path
	// writes a P, Q or W key twice without removing it between (apply.go).
	singleDelMisuse atomic.Int64
}

// Fault returns why writes are refused, or nil. Safe for concurrent use.
func (s *Store) Fault() *StorageFault { return s.faults.cur.Load() }

// WriteFault is Fault for a write about to be made: with a fault set and
// the last probe older than 100 ms, it probes first (on the caller's
// goroutine: a statfs and a few fsyncs), so that the first write after the
// cause is gone goes through. Safe for concurrent use.
func (s *Store) WriteFault() *StorageFault {
	f := s.faults.cur.Load()
	if f == nil || time.Duration(monoNow()-s.faults.lastProbe.Load()) < faultProbeOnDemand {
		return f
	}
	if s.faults.probeMu.TryLock() {
		s.probe()
		s.faults.probeMu.Unlock()
	}
	return s.faults.cur.Load()
}

// CheckStorage probes now (as the monitor does every second) and returns
// the fault left, or nil.
func (s *Store) CheckStorage() *StorageFault {
	s.faults.probeMu.Lock()
	defer s.faults.probeMu.Unlock()
	if s.faults.cur.Load() == nil {
		s.checkSpace() // a fault it sets is probed at the next check
	} else {
		s.probe() // checks the space first
	}
	return s.faults.cur.Load()
}

// DiskFree returns the free bytes of the data directory's filesystem at the
// last check (every second) and the reserve; ok is false when unknown (an
// in-memory store, or a filesystem that does not tell).
func (s *Store) DiskFree() (free, reserve uint64, ok bool) {
	n := s.faults.free.Load()
	if n < 0 {
		return 0, s.reserve(), false
	}
	return uint64(n), s.reserve(), true
}

func (s *Store) reserve() uint64 { return uint64(max(s.faults.reserve.Load(), 0)) }

// SetMinFreeDisk changes the reserve (Options.MinFreeDisk; 0 or negative:
// off) and checks the free space against it at once: a fault of the old
// reserve is cleared by the probe if the new one allows it. It returns the
// fault left, or nil.
func (s *Store) SetMinFreeDisk(bytes int64) *StorageFault {
	s.faults.reserve.Store(max(bytes, 0))
	return s.CheckStorage()
}

// setFault records a fault unless one is set, logging it once.
func (s *Store) setFault(where string, err error) *StorageFault {
	f := &StorageFault{Where: where, Err: err, Since: s.opts.Now()}
	if s.faults.cur.CompareAndSwap(nil, f) {
		s.faults.lastProbe.Store(monoNow())
		s.opts.Logger.Error("storage fault: writes are refused until it is cleared", "where", where, "err", err)
		return f
	}
	return s.faults.cur.Load()
}

// checkSpace compares the filesystem's free space with the reserve,
// setting a fault below it. Without a reserve or a filesystem that tells,
// it does nothing.
func (s *Store) checkSpace() bool {
	if s.opts.InMemory {
		return true
	}
	u, err := s.fs.GetDiskUsage(s.dir)
	if err != nil {
		if !errors.Is(err, vfs.ErrUnsupported) {
			s.faults.free.Store(-1)
		}
		return true
	}
	s.faults.free.Store(int64(min(u.AvailBytes, 1<<62)))
	if r := s.reserve(); r > 0 && u.AvailBytes < r {
		s.setFault(FaultChangeLog, &ReserveError{Free: u.AvailBytes, Reserve: r})
		return false
	}
	return true
}

// probe clears the fault when its cause is gone: free space at or above
// the reserve, the change log synced (a failed write's frames invalidated
// first), a probe file written and synced in the change-log directory,
// and no failed Pebble flush outstanding. Callers hold probeMu.
func (s *Store) probe() {
	s.faults.lastProbe.Store(monoNow())
	if !s.checkSpace() {
		return
	}
	if err := s.log.sync(); err != nil {
		s.logProbe.Warn(s.opts.Logger, "storage probe: change log sync failed", "err", err)
		return
	}
	if err := s.log.probeWrite(); err != nil {
		s.logProbe.Warn(s.opts.Logger, "storage probe: change-log directory not writable", "err", err)
		return
	}
	if s.faults.flushFailed.Load() > 0 {
		return // Pebble retries its flushes; FlushEnd clears this
	}
	if f := s.faults.cur.Swap(nil); f != nil {
		s.opts.Logger.Warn("storage fault cleared: writes are accepted again", "where", f.Where, "err", f.Err,
			"after", s.opts.Now().Sub(f.Since).Round(time.Millisecond))
	}
}

// noteLogBytes counts change-log bytes written and checks the free space
// after each quarter of the reserve, so that a burst between the monitor's
// checks cannot use up the reserve. Writer goroutine only.
func (s *Store) noteLogBytes(n int) {
	s.logBytes.Add(int64(n))
	r := s.reserve()
	if r == 0 {
		return
	}
	s.faults.sinceCheck += int64(n)
	if uint64(s.faults.sinceCheck) >= r/4 {
		s.faults.sinceCheck = 0
		s.checkSpace()
	}
}

// pebbleEvents are the store's Pebble event handlers: the change log is
// synced before each flush (Pebble must never hold durably what the log
// does not), flush outcomes set and clear the flush fault, and background
// errors are logged at a bounded rate (Pebble retries a failed flush at
// once, in a loop).
func (s *Store) pebbleEvents(log *atomic.Pointer[changeLog]) *pebble.EventListener {
	return &pebble.EventListener{
		FlushBegin: func(pebble.FlushInfo) {
			if l := log.Load(); l != nil {
				if err := l.sync(); err != nil {
					s.logSync.Warn(s.opts.Logger, "change log sync before a flush failed", "err", err)
				}
			}
		},
		FlushEnd: func(info pebble.FlushInfo) {
			if info.Err != nil && info.Err.Error() != pebbleEmptyTable {
				s.faults.flushFailed.Add(1)
				s.setFault(FaultDataFiles, info.Err)
				return
			}
			s.faults.flushFailed.Store(0)
		},
		BackgroundError: func(err error) {
			s.logPebble.Warn(s.opts.Logger, "pebble background error", "err", err)
		},
		PossibleAPIMisuse: func(info pebble.PossibleAPIMisuseInfo) {
			// IneffectualSingleDelete is not counted: a SingleDelete of a
			// key that was never set (the Q key of an entry NACKed before
			// its re-delivery) is allowed.
			if info.Kind == pebble.NondeterministicSingleDelete {
				s.faults.singleDelMisuse.Add(1)
				s.logPebble.Warn(s.opts.Logger, "pebble: a SingleDelete met two Sets of one key", "key", fmt.Sprintf("%q", info.UserKey))
			}
		},
	}
}

// probeWrite creates, writes, fsyncs and removes a small file in the
// change-log directory: the directory takes writes again.
func (l *changeLog) probeWrite() error {
	name := l.fs.PathJoin(l.dir, probeFileName)
	f, err := l.fs.Create(name, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	var buf [probeFileSize]byte
	_, err = f.Write(buf[:])
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close(), l.fs.Remove(name))
}

var monoBase = time.Now()

// monoNow is a monotonic clock in nanoseconds.
func monoNow() int64 { return int64(time.Since(monoBase)) }

// Pebble retries a failed flush at once, in a loop with no pause (its
// flush(): "TODO: count consecutive flush errors and backoff"), each try
// writing and removing an sstable and logging. backoffFS is the store's
// file system as Pebble sees it: while flushes fail, the creation of a
// table or blob file waits first, 10 ms after the first failure, doubling
// up to 1 s, so the retries run at most about once a second. Pebble
// creates those files with its mutex released (runCompaction), so reads
// and commits go on meanwhile.
type backoffFS struct {
	vfs.FS
	s *Store
}

const (
	flushBackoffMin = 10 * time.Millisecond
	flushBackoffMax = time.Second
)

// flushBackoff is how long the next table file waits: 0 while flushes
// succeed.
func (s *Store) flushBackoff() time.Duration {
	n := s.faults.flushFailed.Load()
	if n <= 0 {
		return 0
	}
	return min(flushBackoffMin<<min(n-1, 20), flushBackoffMax)
}

func (f backoffFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	if d := f.s.flushBackoff(); d > 0 && (strings.HasSuffix(name, ".sst") || strings.HasSuffix(name, ".blob")) {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-f.s.stop:
			t.Stop()
		}
	}
	return f.FS.Create(name, category)
}

// Unwrap is vfs.FS's: the file system underneath.
func (f backoffFS) Unwrap() vfs.FS { return f.FS }
