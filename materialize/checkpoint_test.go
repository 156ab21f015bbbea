package materialize_test

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
)

// openStore opens the store of opts, closed at the test's end.
func openStore(tb testing.TB, opts materialize.Options) *materialize.Store {
	tb.Helper()
	s, err := materialize.Open(opts)
	if err != nil {
		tb.Fatalf("Open %q: %v", opts.Dir, err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

func checkpoint(tb testing.TB, s *materialize.Store, dest string) materialize.CheckpointInfo {
	tb.Helper()
	info, err := s.Checkpoint(dest)
	if err != nil {
		tb.Fatalf("Checkpoint: %v", err)
	}
	if info.Applied > info.Seq || info.LogBytes > info.Bytes || info.Copied > info.LogBytes {
		tb.Fatalf("CheckpointInfo %+v", info)
	}
	return info
}

// wantStrings checks that db 0 holds exactly the string keys of want,
// with their values.
func wantStrings(tb testing.TB, s *materialize.Store, want map[string]string) {
	tb.Helper()
	for k, v := range want {
		if got, ok := getString(tb, s, k); !ok || got != v {
			tb.Fatalf("%s = %q (%v), want %q", k, got, ok, v)
		}
	}
	if keys, _ := s.View().KeyCount(0); keys != int64(len(want)) {
		tb.Fatalf("%d keys, want %d", keys, len(want))
	}
}

// segments lists the change-log segments of a data directory on fs.
func segments(tb testing.TB, fs vfs.FS, dir string) []string {
	tb.Helper()
	names, err := fs.List(fs.PathJoin(dir, "changelog"))
	if err != nil {
		tb.Fatal(err)
	}
	names = slices.DeleteFunc(names, func(n string) bool { return !strings.HasSuffix(n, ".log") })
	slices.Sort(names)
	return names
}

// TestCheckpointHoldsCommittedWrites: the checkpoint holds exactly the
// writes committed before it, all of them only in the memtable and the
// change log (nothing flushed); writes after it are not in it; the store
// and the checkpoint each go on with writes and reopen.
func TestCheckpointHoldsCommittedWrites(t *testing.T) {
	c := newClock(t0)
	dir, dest := t.TempDir(), filepath.Join(t.TempDir(), "ckpt")
	s, err := materialize.Open(materialize.Options{Dir: dir, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	before := map[string]string{}
	for i := range 100 {
		k, v := fmt.Sprintf("k%d", i), fmt.Sprintf("v%d", i)
		setString(t, s, 0, k, v, 0, 0)
		before[k] = v
	}
	info := checkpoint(t, s, dest)
	if info.Seq != 100 || info.Applied != 0 || !info.Time.Equal(c.Now()) || info.LogBytes == 0 || info.Copied != info.LogBytes {
		t.Fatalf("CheckpointInfo %+v: want Seq 100, Applied 0 (nothing flushed), the store's time, one segment copied", info)
	}
	after := maps.Clone(before)
	after["k0"] = "new"
	setString(t, s, 0, "k0", "new", 0, 0)
	for i := range 10 {
		k := fmt.Sprintf("m%d", i)
		setString(t, s, 0, k, "x", 0, 0)
		after[k] = "x"
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	ck, err := materialize.Open(materialize.Options{Dir: dest, Now: c.Now})
	if err != nil {
		t.Fatalf("Open the checkpoint: %v", err)
	}
	if got := ck.LastSeq(); got != 100 {
		t.Fatalf("checkpoint's LastSeq %d, want 100", got)
	}
	wantStrings(t, ck, before)
	if got := seqsOf(records(t, ck, 0)); len(got) != 100 || got[0] != 1 || got[99] != 100 {
		t.Fatalf("checkpoint's change log %v, want 1..100", got)
	}
	if seq := setString(t, ck, 0, "c", "1", 0, 0); seq != 101 {
		t.Fatalf("first write to the checkpoint: seq %d, want 101", seq)
	}
	if err := ck.Close(); err != nil {
		t.Fatal(err)
	}
	ck = openStore(t, materialize.Options{Dir: dest, Now: c.Now})
	before["c"] = "1"
	wantStrings(t, ck, before)

	s = openStore(t, materialize.Options{Dir: dir, Now: c.Now})
	if got := s.LastSeq(); got != 111 {
		t.Fatalf("store's LastSeq after reopen %d, want 111", got)
	}
	wantStrings(t, s, after)
}

// TestCheckpointOfFlushedStore: with everything flushed, nothing is to
// replay: the checkpoint's change log is the last record alone, which
// keeps the ULIDs of the checkpoint's next writes above the store's.
func TestCheckpointOfFlushedStore(t *testing.T) {
	c := newClock(t0)
	dir, dest := t.TempDir(), filepath.Join(t.TempDir(), "ckpt")
	s := openStore(t, materialize.Options{Dir: dir, Now: c.Now})
	want := map[string]string{}
	for i := range 500 {
		k := fmt.Sprintf("k%d", i)
		setString(t, s, 0, k, "v", 0, 0)
		want[k] = "v"
	}
	s.Close()
	s = openStore(t, materialize.Options{Dir: dir, Now: c.Now}) // Close flushed
	info := checkpoint(t, s, dest)
	if info.Seq != 500 || info.Applied != 500 {
		t.Fatalf("CheckpointInfo %+v, want Seq and Applied 500", info)
	}
	if segs := segments(t, vfs.Default, dest); !slices.Equal(segs, []string{"00000000000000000500.log"}) {
		t.Fatalf("checkpoint's segments %v, want record 500's alone", segs)
	}
	last := records(t, s, 500)[0].ULID
	c.Advance(-3_600_000) // the clock steps back an hour: ULIDs must not
	ck := openStore(t, materialize.Options{Dir: dest, Now: c.Now})
	wantStrings(t, ck, want)
	seq := setString(t, ck, 0, "n", "1", 0, 0)
	if next := records(t, ck, seq)[0].ULID; seq != 501 || string(next[:]) <= string(last[:]) {
		t.Fatalf("first write to the checkpoint: seq %d, ULID %x after %x", seq, next, last)
	}
}

// TestCheckpointWhileWriting: checkpoints taken while a pipeline writes
// (record 2i-1 sets k<i>, record 2i sets the counter n to i) in groups of
// several records, with Pebble flushing, segments rotating and pruned
// meanwhile, each open to a prefix of the change log: the counter and
// the keys agree with the checkpoint's Seq.
func TestCheckpointWhileWriting(t *testing.T) {
	c := newClock(t0)
	dir, parent := t.TempDir(), t.TempDir()
	opts := materialize.Options{Dir: dir, Now: c.Now, MemTableSize: 256 << 10, ChangeLogSegmentSize: 32 << 10, ChangeLogRetention: 300}
	s := openStore(t, opts)
	set := func(k, v string) func(*materialize.View) ([]codec.Event, error) {
		return func(*materialize.View) ([]codec.Event, error) {
			return []codec.Event{codec.SetMetaEvent(0, []byte(k), strMeta(v, 0), 0)}, nil
		}
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		val := strings.Repeat("v", 100)
		for i := 1; !stop.Load(); {
			var ps []*materialize.Pending
			for range 8 {
				ps = append(ps, s.Submit(set(fmt.Sprintf("k%d", i), val)), s.Submit(set("n", strconv.Itoa(i))))
				i++
			}
			for _, p := range ps {
				if _, err := p.Wait(); err != nil {
					t.Errorf("write: %v", err)
					return
				}
			}
		}
	}()
	var infos []materialize.CheckpointInfo
	for j := range 6 {
		time.Sleep(30 * time.Millisecond)
		committed := s.LastSeq()
		info := checkpoint(t, s, filepath.Join(parent, fmt.Sprint(j)))
		if info.Seq < committed {
			t.Fatalf("checkpoint at %d, before the %d committed when it was called", info.Seq, committed)
		}
		infos = append(infos, info)
	}
	stop.Store(true)
	wg.Wait()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for j, info := range infos {
		t.Logf("checkpoint %d: seq %d applied %d, %d bytes (log %d, copied %d) in %v", j, info.Seq, info.Applied, info.Bytes, info.LogBytes, info.Copied, info.Duration)
		ck := openStore(t, materialize.Options{Dir: filepath.Join(parent, fmt.Sprint(j)), Now: c.Now})
		if got := ck.LastSeq(); got != info.Seq {
			t.Fatalf("checkpoint %d: LastSeq %d, want %d", j, got, info.Seq)
		}
		n := 0
		if v, ok := getString(t, ck, "n"); ok {
			n, _ = strconv.Atoi(v)
		}
		if uint64(n) != info.Seq/2 {
			t.Fatalf("checkpoint %d at seq %d: counter %d", j, info.Seq, n)
		}
		v := ck.View()
		for i := 1; i <= n+2; i++ {
			_, ok, err := v.Meta(0, fmt.Appendf(nil, "k%d", i))
			if err != nil {
				t.Fatal(err)
			}
			if want := i <= n || (i == n+1 && info.Seq%2 == 1); ok != want {
				t.Fatalf("checkpoint %d at seq %d (counter %d): k%d present %v", j, info.Seq, n, i, ok)
			}
		}
		wantKeys := int64(info.Seq+1) / 2 // the k<i>
		if n > 0 {
			wantKeys++ // and n
		}
		if keys, _ := v.KeyCount(0); keys != wantKeys {
			t.Fatalf("checkpoint %d at seq %d: %d keys, want %d", j, info.Seq, keys, wantKeys)
		}
	}
}

// noLinkFS is the operating system's file system without hard links (as
// across devices): checkpoints copy.
type noLinkFS struct{ vfs.FS }

func (noLinkFS) Link(oldname, newname string) error {
	return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: errors.New("injected: cross-device link")}
}

// TestCheckpointAfterPruning: with segments already dropped from the
// change log and Pebble holding part of the data flushed, the checkpoint
// holds the segments from the one of its Applied+1 only, linked (or
// copied where links fail) but for the last, and opens with all data.
func TestCheckpointAfterPruning(t *testing.T) {
	for _, tc := range []struct {
		name string
		fs   vfs.FS
	}{{"linked", nil}, {"copied", noLinkFS{vfs.Default}}} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock(t0)
			dir, dest := t.TempDir(), filepath.Join(t.TempDir(), "ckpt")
			s := openStore(t, materialize.Options{FS: tc.fs, Dir: dir, Now: c.Now, ChangeLogSegmentSize: 4 << 10, ChangeLogRetention: 100})
			want := map[string]string{}
			set := func(i int) {
				k, v := fmt.Sprintf("k%d", i), fmt.Sprintf("v%d", i)
				setString(t, s, 0, k, v, 0, 0)
				want[k] = v
			}
			for i := range 3000 {
				set(i)
			}
			deadline := time.Now().Add(5 * time.Second)
			for records(t, s, 0)[0].Seq == 1 {
				if time.Now().After(deadline) {
					t.Fatal("no segment dropped")
				}
				time.Sleep(5 * time.Millisecond)
			}
			for i := 3000; i < 3050; i++ {
				set(i)
			}
			info := checkpoint(t, s, dest)
			t.Logf("%+v", info)
			if info.Seq != 3050 {
				t.Fatalf("Seq %d, want 3050", info.Seq)
			}
			segs := segments(t, vfs.Default, dest)
			first, _ := strconv.ParseUint(strings.TrimSuffix(segs[0], ".log"), 10, 64)
			if first <= 1 || first > info.Applied+1 {
				t.Fatalf("checkpoint's first segment %s, want one past 1 holding record %d", segs[0], info.Applied+1)
			}
			if len(segs) > 1 && (tc.fs == nil) != (info.Copied < info.LogBytes) {
				t.Fatalf("%d segments, %d bytes of %d copied", len(segs), info.Copied, info.LogBytes)
			}
			set(9999) // the store goes on
			ck := openStore(t, materialize.Options{Dir: dest, Now: c.Now})
			delete(want, "k9999")
			wantStrings(t, ck, want)
			if got := ck.LastSeq(); got != 3050 {
				t.Fatalf("checkpoint's LastSeq %d", got)
			}
		})
	}
}

// TestCheckpointReplacesDest: a second checkpoint to the same dest
// replaces the first and leaves no sibling behind; dests that are not a
// data directory, or are the store's own, are refused and left as they
// were.
func TestCheckpointReplacesDest(t *testing.T) {
	c := newClock(t0)
	dir, parent := t.TempDir(), t.TempDir()
	dest := filepath.Join(parent, "ckpt")
	s := openStore(t, materialize.Options{Dir: dir, Now: c.Now})
	setString(t, s, 0, "k", "1", 0, 0)
	checkpoint(t, s, dest)
	setString(t, s, 0, "k", "2", 0, 0)
	setString(t, s, 0, "j", "2", 0, 0)
	if info := checkpoint(t, s, dest); info.Seq != 3 {
		t.Fatalf("second checkpoint at %d, want 3", info.Seq)
	}
	if names, _ := os.ReadDir(parent); len(names) != 1 {
		t.Fatalf("dest's parent holds %v, want only ckpt", names)
	}
	ck := openStore(t, materialize.Options{Dir: dest, Now: c.Now})
	wantStrings(t, ck, map[string]string{"k": "2", "j": "2"})
	ck.Close()

	other := filepath.Join(parent, "other")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "x"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(parent, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The store's directory through a link to its parent: replacing it
	// would rename the store's directory away.
	alias := filepath.Join(parent, "alias")
	if err := os.Symlink(filepath.Dir(dir), alias); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{dir, filepath.Dir(dir), filepath.Join(dir, "sub"), filepath.Join(dir, "changelog"),
		filepath.Join(dir, materialize.CheckpointDirName, "sub"), filepath.Join(alias, filepath.Base(dir)), alias,
		other, file, filepath.Join(parent, "missing", "ckpt"), "", ".", "/", filepath.Join(parent, "..")} {
		if _, err := s.Checkpoint(bad); err == nil {
			t.Fatalf("Checkpoint(%q) succeeded", bad)
		} else {
			t.Logf("Checkpoint(%q): %v", bad, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(other, "x")); err != nil || string(b) != "x" {
		t.Fatalf("a refused dest changed: %q, %v", b, err)
	}
	if n := setString(t, s, 0, "k", "3", 0, 0); n != 4 {
		t.Fatalf("write after refused checkpoints: seq %d", n)
	}
	// The one dest allowed inside the data directory (SAVE's), twice: the
	// store reopens beside it, and the checkpoint opens.
	inside := filepath.Join(dir, materialize.CheckpointDirName)
	checkpoint(t, s, inside)
	checkpoint(t, s, inside)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, inside} {
		re := openStore(t, materialize.Options{Dir: d, Now: c.Now})
		wantStrings(t, re, map[string]string{"k": "3", "j": "2"})
		re.Close()
	}
}

// failTmpFS fails, when fail is set, the creation of change-log files in
// a checkpoint's temporary directory.
type failTmpFS struct {
	vfs.FS
	fail *atomic.Bool
}

func (f failTmpFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	if f.fail.Load() && strings.Contains(name, ".tmp-") && strings.HasSuffix(name, ".log") {
		return nil, errors.New("injected: input/output error")
	}
	return f.FS.Create(name, c)
}

// TestCheckpointFailureKeepsDest: a checkpoint that fails removes its
// temporary directory and leaves the previous checkpoint in dest.
func TestCheckpointFailureKeepsDest(t *testing.T) {
	c := newClock(t0)
	var fail atomic.Bool
	dir, parent := t.TempDir(), t.TempDir()
	dest := filepath.Join(parent, "ckpt")
	s := openStore(t, materialize.Options{FS: failTmpFS{vfs.Default, &fail}, Dir: dir, Now: c.Now})
	setString(t, s, 0, "k", "1", 0, 0)
	checkpoint(t, s, dest)
	setString(t, s, 0, "k", "2", 0, 0)
	fail.Store(true)
	if _, err := s.Checkpoint(dest); err == nil {
		t.Fatal("a checkpoint whose change-log copy failed succeeded")
	}
	if names, _ := os.ReadDir(parent); len(names) != 1 {
		t.Fatalf("dest's parent holds %v, want only ckpt", names)
	}
	ck := openStore(t, materialize.Options{Dir: dest, Now: c.Now})
	wantStrings(t, ck, map[string]string{"k": "1"})
}

// TestCheckpointRefused: no checkpoint of an in-memory store, of a store
// with a storage fault, or of a closed store.
func TestCheckpointRefused(t *testing.T) {
	c := newClock(t0)
	if _, err := openMem(t, c).Checkpoint(filepath.Join(t.TempDir(), "ckpt")); !errors.Is(err, materialize.ErrInMemory) {
		t.Fatalf("in memory: %v, want ErrInMemory", err)
	}

	ffs := newFullFS(nil)
	ffs.avail.Store(1 << 20)
	s := openStore(t, materialize.Options{FS: ffs, Dir: "db", Now: c.Now, MinFreeDisk: 4 << 20})
	var f *materialize.StorageFault
	if _, err := s.Checkpoint("ckpt"); !errors.As(err, &f) {
		t.Fatalf("with a storage fault: %v, want the StorageFault", err)
	}
	if _, err := ffs.Stat("ckpt"); err == nil {
		t.Fatal("a refused checkpoint wrote its dest")
	}
	ffs.avail.Store(64 << 20)
	if f := s.CheckStorage(); f != nil {
		t.Fatal(f)
	}
	checkpoint(t, s, "ckpt") // on the store's own file system (Options.FS)
	s.Close()
	if _, err := s.Checkpoint("ckpt"); !errors.Is(err, materialize.ErrClosed) {
		t.Fatalf("closed: %v, want ErrClosed", err)
	}
}

// TestCheckpointAfterFailedLogWrite: a change-log write that failed half
// way left whole frames in its segment, invalidated, and the next write
// took their sequences in a new segment: the checkpoint links the first
// segment and holds none of the failed write's records.
func TestCheckpointAfterFailedLogWrite(t *testing.T) {
	var fail atomic.Bool
	fs := logFaultFS{vfs.NewMem(), func(f vfs.File) vfs.File { return halfWriteFile{f, &fail} }}
	c := newClock(t0)
	s := openStore(t, materialize.Options{FS: fs, Dir: "db", Now: c.Now})
	setString(t, s, 0, "a", "1", 0, 0)
	fail.Store(true)
	var big []codec.Event
	for range 50 {
		big = append(big, codec.SetMetaEvent(0, []byte("phantom"), strMeta(strings.Repeat("p", 100), 0), 0))
	}
	if _, err := s.Write(func(*materialize.View) ([]codec.Event, error) { return big, nil }); err == nil {
		t.Fatal("a write whose log write failed succeeded")
	}
	fail.Store(false)
	if f := s.CheckStorage(); f != nil {
		t.Fatal(f)
	}
	setString(t, s, 0, "b", "2", 0, 0)
	info := checkpoint(t, s, "ckpt")
	if segs := segments(t, fs, "ckpt"); len(segs) != 2 || info.Copied == info.LogBytes {
		t.Fatalf("checkpoint's segments %v, %d of %d bytes copied: want 2, the first linked", segs, info.Copied, info.LogBytes)
	}
	ck := openStore(t, materialize.Options{FS: fs, Dir: "ckpt", Now: c.Now})
	if got := seqsOf(records(t, ck, 0)); !slices.Equal(got, []uint64{1, 2}) {
		t.Fatalf("checkpoint's records %v, want [1 2]", got)
	}
	wantStrings(t, ck, map[string]string{"a": "1", "b": "2"})
}

// BenchmarkCheckpoint measures a checkpoint of 100k string keys of 100
// bytes, replacing the previous one: with the data in memtables and the
// change log (fresh), and all flushed (after a reopen).
func BenchmarkCheckpoint(b *testing.B) {
	for _, flushed := range []bool{false, true} {
		b.Run(fmt.Sprintf("flushed=%v", flushed), func(b *testing.B) {
			c := newClock(t0)
			dir, dest := b.TempDir(), filepath.Join(b.TempDir(), "ckpt")
			opts := materialize.Options{Dir: dir, Now: c.Now, MemTableSize: 64 << 20}
			s, err := materialize.Open(opts)
			if err != nil {
				b.Fatal(err)
			}
			val := strings.Repeat("v", 100)
			for i := 0; i < 100_000; i += 256 {
				var ps []*materialize.Pending
				for j := i; j < i+256; j++ {
					k := fmt.Appendf(nil, "key:%d", j)
					ps = append(ps, s.Submit(func(*materialize.View) ([]codec.Event, error) {
						return []codec.Event{codec.SetMetaEvent(0, k, strMeta(val, 0), 0)}, nil
					}))
				}
				for _, p := range ps {
					if _, err := p.Wait(); err != nil {
						b.Fatal(err)
					}
				}
			}
			if flushed {
				s.Close()
				if s, err = materialize.Open(opts); err != nil {
					b.Fatal(err)
				}
			}
			defer s.Close()
			var info materialize.CheckpointInfo
			for b.Loop() {
				if info, err = s.Checkpoint(dest); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(info.Bytes), "bytes")
			b.ReportMetric(float64(info.LogBytes), "log-bytes")
			b.ReportMetric(float64(info.Copied), "copied-bytes")
			b.ReportMetric(float64(info.Seq-info.Applied), "replay-records")
		})
	}
}

// TestCheckpointLeftoversCleaned: after a crash between a SAVE's renames,
// Open puts the previous checkpoint back and removes the unfinished one.
func TestCheckpointLeftoversCleaned(t *testing.T) {
	c := newClock(t0)
	dir := t.TempDir()
	s := openStore(t, materialize.Options{Dir: dir, Now: c.Now})
	setString(t, s, 0, "k", "1", 0, 0)
	inside := filepath.Join(dir, materialize.CheckpointDirName)
	checkpoint(t, s, inside)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The state a crash leaves after "rename dest to old", before "rename
	// tmp to dest".
	if err := os.Rename(inside, inside+".old-1234"); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(inside+".tmp-5678", "changelog"), 0o755); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, materialize.Options{Dir: dir, Now: c.Now})
	s.Close()
	names, _ := os.ReadDir(dir)
	for _, n := range names {
		if strings.HasPrefix(n.Name(), materialize.CheckpointDirName+".") {
			t.Errorf("leftover %s after Open", n.Name())
		}
	}
	ck := openStore(t, materialize.Options{Dir: inside, Now: c.Now})
	wantStrings(t, ck, map[string]string{"k": "1"})
}
