package materialize_test

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
)

// logFaultFS wraps the change log's files (".log") with wrap, so that
// tests can inject faults into its writes and syncs.
type logFaultFS struct {
	vfs.FS
	wrap func(vfs.File) vfs.File
}

func (fs logFaultFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, c)
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return fs.wrap(f), nil
}

func (fs logFaultFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.OpenReadWrite(name, c, opts...)
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return fs.wrap(f), nil
}

// halfWriteFile fails writes, when fail is set, after writing half of the
// bytes: a disk that fills up in the middle of a group's write.
type halfWriteFile struct {
	vfs.File
	fail *atomic.Bool
}

func (f halfWriteFile) Write(p []byte) (int, error) {
	if !f.fail.Load() {
		return f.File.Write(p)
	}
	n, _ := f.File.Write(p[:len(p)/2])
	return n, errors.New("injected: no space left on device")
}

// TestFailedLogWriteLeavesNoRecords: a group whose change-log write fails
// half way is answered with an error, and the whole frames it left in the
// segment are never read as records: not by a tail, not by the next Open
// (whose replay would otherwise apply a write its client was told failed).
//
// With poisonFails, zeroing the frame header fails too while the fault
// lasts: the store refuses writes until a probe has zeroed it.
func TestFailedLogWriteLeavesNoRecords(t *testing.T) {
	t.Run("poisoned at once", func(t *testing.T) { testFailedLogWrite(t, false) })
	t.Run("poisoned by the probe", func(t *testing.T) { testFailedLogWrite(t, true) })
}

func testFailedLogWrite(t *testing.T, poisonFails bool) {
	mem := vfs.NewMem()
	var fail atomic.Bool
	fs := logFaultFS{mem, func(f vfs.File) vfs.File {
		if poisonFails {
			return deadWriteAtFile{halfWriteFile{f, &fail}, &fail}
		}
		return halfWriteFile{f, &fail}
	}}
	c := newClock(t0)
	s, err := materialize.Open(materialize.Options{FS: fs, Dir: "db", Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	setString(t, s, 0, "a", "1", 0, 0)
	fail.Store(true)
	// A group of many records, so that whole frames reach the file.
	var big []codec.Event
	for i := 0; i < 50; i++ {
		big = append(big, codec.SetMetaEvent(0, []byte("phantom"), strMeta(strings.Repeat("p", 100), 0), 0))
	}
	if _, err := s.Write(func(*materialize.View) ([]codec.Event, error) { return big, nil }); err == nil {
		t.Fatal("a write whose log write failed succeeded")
	}
	if poisonFails && s.CheckStorage() == nil {
		t.Fatal("the fault cleared while the failed write's frames are not invalidated")
	}
	fail.Store(false)
	if f := s.CheckStorage(); f != nil {
		t.Fatalf("fault kept once the file takes writes again: %v", f)
	}
	setString(t, s, 0, "b", "2", 0, 0)
	check := func(s *materialize.Store, when string) {
		t.Helper()
		var seqs []uint64
		tail := s.TailLog(1)
		defer tail.Close()
		if err := tail.Read(s.LastSeq(), func(r codec.Record) bool {
			seqs = append(seqs, r.Seq)
			for _, e := range r.Events {
				if string(e.Key) == "phantom" {
					t.Fatalf("%s: record %d holds the failed write's event", when, r.Seq)
				}
			}
			return true
		}); err != nil {
			t.Fatalf("%s: tail: %v", when, err)
		}
		if len(seqs) != 2 || seqs[0] != 1 || seqs[1] != 2 {
			t.Fatalf("%s: records %v, want [1 2]", when, seqs)
		}
		if _, ok, _ := s.View().Meta(0, []byte("phantom")); ok {
			t.Fatalf("%s: the failed write's key exists", when)
		}
	}
	check(s, "live")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = materialize.Open(materialize.Options{FS: fs, Dir: "db", Now: c.Now})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	check(s, "after reopen")
}

// deadWriteAtFile also fails WriteAt (the invalidation of a failed write's
// frames) when fail is set.
type deadWriteAtFile struct {
	halfWriteFile
	fail *atomic.Bool
}

func (f deadWriteAtFile) WriteAt(p []byte, off int64) (int, error) {
	if f.fail.Load() {
		return 0, errors.New("injected: input/output error")
	}
	return f.halfWriteFile.WriteAt(p, off)
}

// deadLogFile fails writes outright (nothing written) and syncs, when fail
// is set: a device that went away.
type deadLogFile struct {
	vfs.File
	fail *atomic.Bool
}

func (f deadLogFile) Write(p []byte) (int, error) {
	if f.fail.Load() {
		return 0, errors.New("injected: input/output error")
	}
	return f.File.Write(p)
}

func (f deadLogFile) Sync() error {
	if f.fail.Load() {
		return errors.New("injected: input/output error")
	}
	return f.File.Sync()
}

// TestFailedLogSyncIsReported: when a change-log write fails and the
// segment then cannot be synced, a write committed before the failure
// must not be confirmed durable (WaitDurable): its record is in that
// segment, unsynced. Before, the failed segment was closed without a sync
// and WaitDurable, finding no open segment, confirmed it. Once the device
// answers again, the next sync syncs that segment and confirms it.
func TestFailedLogSyncIsReported(t *testing.T) {
	var fail atomic.Bool
	fs := logFaultFS{vfs.NewMem(), func(f vfs.File) vfs.File { return deadLogFile{f, &fail} }}
	c := newClock(t0)
	s, err := materialize.Open(materialize.Options{FS: fs, Dir: "db", Sync: materialize.SyncAlways, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	seq := setString(t, s, 0, "a", "1", 0, 0) // committed, not yet synced
	fail.Store(true)
	if _, err := s.Write(func(*materialize.View) ([]codec.Event, error) {
		return []codec.Event{codec.SetMetaEvent(0, []byte("b"), strMeta("2", 0), 0)}, nil
	}); err == nil {
		t.Fatal("a write whose log write failed succeeded")
	}
	if err := s.WaitDurable(seq); err == nil {
		t.Fatal("WaitDurable confirmed a record whose segment could not be synced")
	}
	fail.Store(false)
	if err := s.WaitDurable(seq); err != nil {
		t.Fatalf("WaitDurable once the device answers again: %v", err)
	}
	if f := s.CheckStorage(); f != nil { // the storage fault the failure set
		t.Fatalf("fault kept once the device answers again: %v", f)
	}
	if seq2 := setString(t, s, 0, "c", "3", 0, 0); s.WaitDurable(seq2) != nil {
		t.Fatal("writes after the recovery are not confirmed")
	}
}
