package materialize_test

import (
	"errors"
	"io/fs"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
)

// fullFS is a filesystem that can fill up: while full is set, every write
// and sync of a file whose name matches (all files when match is nil)
// fails with ENOSPC, as on a full disk; GetDiskUsage reports avail free
// bytes (when set above 0).
type fullFS struct {
	vfs.FS
	full    *atomic.Bool
	avail   *atomic.Int64
	match   func(name string) bool
	created *atomic.Int64 // files created whose name matches
}

func newFullFS(match func(string) bool) fullFS {
	return fullFS{FS: vfs.NewMem(), full: new(atomic.Bool), avail: new(atomic.Int64), match: match, created: new(atomic.Int64)}
}

func (f fullFS) wrap(name string, file vfs.File, err error) (vfs.File, error) {
	if err != nil || (f.match != nil && !f.match(name)) {
		return file, err
	}
	return fullFile{file, name, f.full}, nil
}

func (f fullFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	if f.match == nil || f.match(name) {
		f.created.Add(1)
	}
	file, err := f.FS.Create(name, c)
	return f.wrap(name, file, err)
}

func (f fullFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	file, err := f.FS.OpenReadWrite(name, c, opts...)
	return f.wrap(name, file, err)
}

func (f fullFS) GetDiskUsage(path string) (vfs.DiskUsage, error) {
	n := f.avail.Load()
	if n <= 0 {
		return vfs.DiskUsage{}, vfs.ErrUnsupported
	}
	return vfs.DiskUsage{AvailBytes: uint64(n), TotalBytes: 1 << 40, UsedBytes: 1<<40 - uint64(n)}, nil
}

type fullFile struct {
	vfs.File
	name string
	full *atomic.Bool
}

func (f fullFile) enospc(op string) error {
	return &fs.PathError{Op: op, Path: f.name, Err: syscall.ENOSPC}
}

func (f fullFile) Write(p []byte) (int, error) {
	if f.full.Load() {
		return 0, f.enospc("write")
	}
	return f.File.Write(p)
}

func (f fullFile) WriteAt(p []byte, off int64) (int, error) {
	if f.full.Load() {
		return 0, f.enospc("write")
	}
	return f.File.WriteAt(p, off)
}

func (f fullFile) Sync() error {
	if f.full.Load() {
		return f.enospc("sync")
	}
	return f.File.Sync()
}

// getString reads key in db 0, failing the test on a read error.
func getString(tb testing.TB, s *materialize.Store, key string) (string, bool) {
	tb.Helper()
	m, ok, err := s.View().Meta(0, []byte(key))
	if err != nil {
		tb.Fatalf("read %s: %v", key, err)
	}
	return string(m.Value), ok
}

func trySet(s *materialize.Store, key, v string) error {
	_, err := s.Write(func(*materialize.View) ([]codec.Event, error) {
		return []codec.Event{codec.SetMetaEvent(0, []byte(key), strMeta(v, 0), 0)}, nil
	})
	return err
}

// wantFault checks that err is the store's StorageFault of where, caused by
// ENOSPC.
func wantFault(tb testing.TB, s *materialize.Store, err error, where string) {
	tb.Helper()
	var f *materialize.StorageFault
	if !errors.As(err, &f) || f.Where != where || !errors.Is(err, syscall.ENOSPC) {
		tb.Fatalf("error %v, want a StorageFault at %q caused by ENOSPC", err, where)
	}
	if s.Fault() == nil {
		tb.Fatal("Fault() is nil after a write it refused")
	}
}

// TestStorageFaultChangeLog: a change-log write that finds the disk full
// fails its writes with a StorageFault; every later write is refused
// (nothing reaches the disk), while reads and writes that change nothing
// are served; once the disk has room, a probe clears the fault and writes
// go on; after a reopen every acknowledged write is there and no refused
// one is.
func TestStorageFaultChangeLog(t *testing.T) {
	ffs := newFullFS(func(name string) bool { return strings.HasSuffix(name, ".log") })
	c := newClock(t0)
	s, err := materialize.Open(materialize.Options{FS: ffs, Dir: "db", Sync: materialize.SyncAlways, Now: c.Now, MinFreeDisk: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	if err := trySet(s, "a", "1"); err != nil {
		t.Fatal(err)
	}
	ffs.full.Store(true)
	wantFault(t, s, trySet(s, "b", "2"), materialize.FaultChangeLog)
	if f := s.Fault(); f.Cause() != "no space left on device" {
		t.Fatalf("Cause() = %q, want the errno's text", f.Cause())
	}
	// Refused without a try: the disk is not touched again.
	wantFault(t, s, trySet(s, "c", "3"), materialize.FaultChangeLog)
	if v, ok := getString(t, s, "a"); !ok || v != "1" {
		t.Fatalf("a = %q %v during the fault, want 1", v, ok)
	}
	if _, err := s.Write(func(*materialize.View) ([]codec.Event, error) { return nil, nil }); err != nil {
		t.Fatalf("a write with no events during the fault: %v", err)
	}
	if f := s.CheckStorage(); f == nil {
		t.Fatal("the probe cleared the fault while the disk is still full")
	}
	ffs.full.Store(false)
	if f := s.CheckStorage(); f != nil {
		t.Fatalf("the probe kept the fault once the disk has room: %v", f)
	}
	if err := trySet(s, "d", "4"); err != nil {
		t.Fatalf("a write after the fault cleared: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = materialize.Open(materialize.Options{FS: ffs, Dir: "db", Now: c.Now, MinFreeDisk: -1})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	for k, want := range map[string]string{"a": "1", "d": "4"} {
		if v, ok := getString(t, s, k); !ok || v != want {
			t.Fatalf("after reopen %s = %q %v, want %s", k, v, ok, want)
		}
	}
	for _, k := range []string{"b", "c"} {
		if _, ok := getString(t, s, k); ok {
			t.Fatalf("after reopen the refused write of %s is there", k)
		}
	}
}

// TestStorageFaultOnDemandProbe: a write arriving more than 100 ms after
// the last probe probes first, so the first write after the cause is gone
// succeeds without waiting for the monitor.
func TestStorageFaultOnDemandProbe(t *testing.T) {
	ffs := newFullFS(func(name string) bool { return strings.HasSuffix(name, ".log") })
	s, err := materialize.Open(materialize.Options{FS: ffs, Dir: "db", Now: newClock(t0).Now, MinFreeDisk: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ffs.full.Store(true)
	wantFault(t, s, trySet(s, "a", "1"), materialize.FaultChangeLog)
	ffs.full.Store(false)
	time.Sleep(150 * time.Millisecond) // past the on-demand probe interval
	if err := trySet(s, "a", "2"); err != nil {
		t.Fatalf("the first write after the disk has room: %v", err)
	}
}

// TestStorageFaultReserve: free space below MinFreeDisk refuses writes
// before the disk is full: at Open, and after a burst of writes between
// the monitor's checks (checked every quarter of the reserve written).
func TestStorageFaultReserve(t *testing.T) {
	ffs := newFullFS(nil)
	ffs.avail.Store(1 << 20)
	c := newClock(t0)
	opts := materialize.Options{FS: ffs, Dir: "db", Now: c.Now, MinFreeDisk: 4 << 20}
	s, err := materialize.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	wantFault(t, s, trySet(s, "a", "1"), materialize.FaultChangeLog)
	var re *materialize.ReserveError
	if f := s.Fault(); !errors.As(f, &re) || re.Free != 1<<20 || re.Reserve != 4<<20 {
		t.Fatalf("fault %v, want a ReserveError of 1 MiB free below 4 MiB", f)
	}
	if free, reserve, ok := s.DiskFree(); !ok || free != 1<<20 || reserve != 4<<20 {
		t.Fatalf("DiskFree = %d %d %v", free, reserve, ok)
	}
	ffs.avail.Store(64 << 20)
	if f := s.CheckStorage(); f != nil {
		t.Fatalf("fault kept with 64 MiB free: %v", f)
	}
	if err := trySet(s, "a", "1"); err != nil {
		t.Fatal(err)
	}
	// The space shrinks (another process writes); a write of more than a
	// quarter of the reserve makes the writer look before the monitor.
	ffs.avail.Store(2 << 20)
	if err := trySet(s, "big", strings.Repeat("x", 1100<<10)); err != nil {
		t.Fatalf("the write that crosses the check: %v", err)
	}
	if s.Fault() == nil {
		t.Fatal("no fault after 1.1 MiB written with 2 MiB free and a 4 MiB reserve")
	}
	wantFault(t, s, trySet(s, "b", "2"), materialize.FaultChangeLog)
	s.Close()
}

// TestStorageFaultFlush: a Pebble flush that fails (its sstable cannot be
// written) sets a fault of the data files; Close does not wait for the
// flush that cannot succeed; the next Open replays the log, and once Pebble
// flushes again the fault clears.
func TestStorageFaultFlush(t *testing.T) {
	ffs := newFullFS(func(name string) bool { return strings.HasSuffix(name, ".sst") })
	c := newClock(t0)
	opts := materialize.Options{FS: ffs, Dir: "db", Now: c.Now, MinFreeDisk: -1, MemTableSize: 1 << 20}
	s, err := materialize.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	ffs.full.Store(true)
	value := strings.Repeat("v", 1000)
	var acked []string
	deadline := time.Now().Add(20 * time.Second)
	for s.Fault() == nil {
		if time.Now().After(deadline) {
			t.Fatal("no fault after 20 s of writes with every sstable write failing")
		}
		k := "k" + string(rune('a'+len(acked)%26)) + strings.Repeat("z", len(acked)/26)
		if err := trySet(s, k, value); err != nil {
			wantFault(t, s, err, materialize.FaultDataFiles)
			break
		}
		acked = append(acked, k)
	}
	if f := s.Fault(); f.Where != materialize.FaultDataFiles || !errors.Is(f, syscall.ENOSPC) {
		t.Fatalf("fault %v, want the data files' ENOSPC", f)
	}
	if f := s.CheckStorage(); f == nil {
		t.Fatal("the probe cleared a flush fault while flushes still fail")
	}
	closeWithin(t, s, 10*time.Second)
	s = reopenWithRoom(t, ffs, opts, acked, value)
	defer s.Close()
	if f := s.Fault(); f != nil {
		t.Fatalf("fault after a reopen with room: %v", f)
	}
	if err := trySet(s, "after", "1"); err != nil {
		t.Fatal(err)
	}
}

// TestStorageFaultPebbleRetriesFlush: with the store open, a flush fault
// clears once Pebble's own retry of the flush succeeds, and the retries
// are paced meanwhile (backoffFS).
func TestStorageFaultPebbleRetriesFlush(t *testing.T) {
	ffs := newFullFS(func(name string) bool { return strings.HasSuffix(name, ".sst") })
	opts := materialize.Options{FS: ffs, Dir: "db", Now: newClock(t0).Now, MinFreeDisk: -1, MemTableSize: 1 << 20}
	s, err := materialize.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ffs.full.Store(true)
	value := strings.Repeat("v", 1000)
	for i := 0; s.Fault() == nil; i++ {
		if i > 100000 {
			t.Fatal("no fault with every sstable write failing")
		}
		trySet(s, "k"+strings.Repeat("x", i%50)+string(rune('0'+i%10)), value)
	}
	// Pebble retries the flush with no pause of its own; the store's file
	// system spaces the retries out (10 ms doubling to 1 s): a few sstable
	// creations in 2 s, where an unpaced retry loop makes thousands.
	before := ffs.created.Load()
	time.Sleep(2 * time.Second)
	if n := ffs.created.Load() - before; n > 12 {
		t.Errorf("%d sstables created in 2 s of failing flushes: the retries are not paced", n)
	} else {
		t.Logf("%d sstable creations in 2 s of failing flushes", n)
	}
	ffs.full.Store(false)
	deadline := time.Now().Add(10 * time.Second)
	for s.CheckStorage() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("flush fault not cleared 10 s after sstables can be written: %v", s.Fault())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := trySet(s, "after", "1"); err != nil {
		t.Fatal(err)
	}
}

// TestCloseFlushFailsDuringClose: when the sstables of Close's own final
// flush cannot be written (the disk filled, or the data directory went,
// while the server shut down), Close gives up once the flush fails instead
// of waiting for Pebble's retries for ever; the next Open replays the log.
func TestCloseFlushFailsDuringClose(t *testing.T) {
	ffs := newFullFS(func(name string) bool { return strings.HasSuffix(name, ".sst") })
	opts := materialize.Options{FS: ffs, Dir: "db", Now: newClock(t0).Now, MinFreeDisk: -1}
	s, err := materialize.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	value := strings.Repeat("v", 1000)
	keys := make([]string, 200)
	for i := range keys {
		keys[i] = "k" + strings.Repeat("x", i%20) + string(rune('a'+i%26)) + string(rune('a'+i/26))
		if err := trySet(s, keys[i], value); err != nil {
			t.Fatal(err)
		}
	}
	if f := s.Fault(); f != nil {
		t.Fatalf("fault before the disk filled: %v", f)
	}
	ffs.full.Store(true)
	if err := closeWithin(t, s, 20*time.Second); err == nil {
		t.Error("Close reported success though its final flush failed")
	}
	reopenWithRoom(t, ffs, opts, keys, value).Close()
}

// closeWithin closes s and returns Close's error, failing the test if
// Close has not returned within d (it waits for a flush that cannot
// succeed).
func closeWithin(t *testing.T, s *materialize.Store, d time.Duration) error {
	t.Helper()
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		return err
	case <-time.After(d):
		t.Fatal("Close waits for a flush that cannot succeed")
		return nil
	}
}

// reopenWithRoom lets ffs take writes again, opens the store, checks that
// every key of keys holds value (none lost to the failed flush before) and
// returns it.
func reopenWithRoom(t *testing.T, ffs fullFS, opts materialize.Options, keys []string, value string) *materialize.Store {
	t.Helper()
	ffs.full.Store(false)
	s, err := materialize.Open(opts)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	for _, k := range keys {
		if v, ok := getString(t, s, k); !ok || v != value {
			s.Close()
			t.Fatalf("%s lost after the flush fault (%d keys written)", k, len(keys))
		}
	}
	return s
}
