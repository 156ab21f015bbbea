package materialize

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// frame returns the change-log frame of record seq with a payload of size
// bytes after the sequence.
func frame(seq uint64, size int) []byte {
	payload := binary.BigEndian.AppendUint64(nil, seq)
	payload = append(payload, bytes.Repeat([]byte{byte(seq)}, size)...)
	b := binary.BigEndian.AppendUint32(nil, uint32(len(payload)))
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(payload, castagnoli))
	return append(b, payload...)
}

// TestScanSegmentChunks: frames are parsed from chunked reads, so frames
// larger than a chunk, frames across chunk boundaries and a torn frame
// across a boundary must read as they did with a read per frame; each
// record handed to fn is its own copy.
func TestScanSegmentChunks(t *testing.T) {
	sizes := []int{10, scanChunk - 40, 100, 3 * scanChunk, 7, scanChunk / 2, scanChunk / 2, 1}
	var seg []byte
	var offs []int64
	for i, n := range sizes {
		offs = append(offs, int64(len(seg)))
		seg = append(seg, frame(uint64(100+i), n)...)
	}
	whole := int64(len(seg))
	torn := frame(uint64(100+len(sizes)), scanChunk)
	seg = append(seg, torn[:len(torn)-5]...) // cut short: the segment ends before it

	var recs [][]byte
	end, last, lastAt, err := scanSegment(bytes.NewReader(seg), 100, func(seq uint64, rec []byte) bool {
		if want := uint64(100 + len(recs)); seq != want {
			t.Fatalf("record %d, want %d", seq, want)
		}
		recs = append(recs, rec)
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if end != whole || last != uint64(99+len(sizes)) || lastAt != offs[len(offs)-1] {
		t.Fatalf("end %d last %d lastAt %d, want %d %d %d", end, last, lastAt, whole, 99+len(sizes), offs[len(offs)-1])
	}
	if len(recs) != len(sizes) {
		t.Fatalf("%d records, want %d", len(recs), len(sizes))
	}
	for i, rec := range recs {
		if want := bytes.Repeat([]byte{byte(100 + i)}, sizes[i]); !bytes.Equal(rec, want) {
			t.Fatalf("record %d: %d bytes, want %d bytes of %d (records must not share a buffer)", 100+i, len(rec), sizes[i], 100+i)
		}
	}

	// A bad checksum ends the segment too; a record out of sequence is
	// corruption.
	bad := bytes.Clone(seg[:whole])
	bad[offs[3]+frameHeader+20] ^= 1
	if end, last, _, err := scanSegment(bytes.NewReader(bad), 100, nil); err != nil || end != offs[3] || last != 102 {
		t.Fatalf("bad checksum: end %d last %d err %v, want %d 102 nil", end, last, err, offs[3])
	}
	if _, _, _, err := scanSegment(bytes.NewReader(seg[:whole]), 99, nil); err == nil {
		t.Fatal("a segment named 99 whose first record is 100 scanned without error")
	}
}

// countingReader counts ReadAt calls.
type countingReader struct {
	r     *bytes.Reader
	reads int
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	c.reads++
	return c.r.ReadAt(p, off)
}

// TestScanSegmentReads: a scan costs a read per chunk, not two per frame
// (which made Open take seconds on a segment of small records).
func TestScanSegmentReads(t *testing.T) {
	var seg []byte
	const n = 20000
	for i := range n {
		seg = append(seg, frame(uint64(1+i), 64)...)
	}
	r := &countingReader{r: bytes.NewReader(seg)}
	if _, last, _, err := scanSegment(r, 1, nil); err != nil || last != n {
		t.Fatalf("last %d err %v, want %d nil", last, err, n)
	}
	if max := len(seg)/scanChunk + 2; r.reads > max {
		t.Fatalf("%d reads for %d frames (%d bytes), want at most %d", r.reads, n, len(seg), max)
	}
}

// countingFS counts the bytes read through the files it opens.
type countingFS struct {
	vfs.FS
	read *atomic.Int64
}

func (c countingFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := c.FS.Open(name, opts...)
	if err != nil {
		return nil, err
	}
	return countingFile{f, c.read}, nil
}

type countingFile struct {
	vfs.File
	read *atomic.Int64
}

func (c countingFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.File.ReadAt(p, off)
	c.read.Add(int64(n))
	return n, err
}

// TestReadFromMarks: a read from the middle of a segment scans it from
// its start once; later reads near that place start at a mark, reading
// about a chunk; every read returns exactly the records asked for.
func TestReadFromMarks(t *testing.T) {
	var read atomic.Int64
	fs := countingFS{vfs.NewMem(), &read}
	l, err := openChangeLog(fs, "log", 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	const n = 200000
	payload := bytes.Repeat([]byte{'p'}, 100)
	for seq := uint64(1); seq <= n; seq++ {
		l.append(seq, payload)
		if seq%1000 == 0 {
			if err := l.write(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(l.segs) != 1 {
		t.Fatalf("%d segments, want one", len(l.segs))
	}
	get := func(from, upTo uint64, count int) []uint64 {
		t.Helper()
		var got []uint64
		if err := l.read(from, upTo, func(seq uint64, rec []byte) bool {
			if !bytes.Equal(rec, payload) {
				t.Fatalf("record %d: %q", seq, rec)
			}
			got = append(got, seq)
			return len(got) < count
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	check := func(from uint64, count int) int64 {
		t.Helper()
		read.Store(0)
		got := get(from, n, count)
		if len(got) != count || got[0] != from || got[count-1] != from+uint64(count)-1 {
			t.Fatalf("read from %d: %d records %v..", from, len(got), got[:min(3, len(got))])
		}
		return read.Load()
	}
	first := check(150000, 100)
	if first < 10<<20 {
		t.Fatalf("the first read from record 150000 read %d bytes: it must have scanned from the segment's start", first)
	}
	for _, from := range []uint64{150100, 150200, 149000, 120000, 150000} {
		if got := check(from, 100); got > 2*scanChunk {
			t.Errorf("read from %d after a read passed it: %d bytes, want at most %d", from, got, 2*scanChunk)
		}
	}
	// Beyond the furthest place read, a read scans from the last mark.
	if got := check(190000, 10); got > first {
		t.Errorf("read from 190000: %d bytes", got)
	}
	if got := check(189990, 10); got > 2*scanChunk {
		t.Errorf("read from 189990 after a read passed it: %d bytes", got)
	}
	// Marks are only left at the records a read may return (committed
	// ones): a read bounded below the log's end leaves none past its bound.
	l2, err := openChangeLog(fs, "log", 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	l = l2
	get(1, 100000, 1<<30)
	if ms := l.marks[1]; len(ms) < 30 || ms[len(ms)-1].seq > 100000 {
		t.Fatalf("marks after a read up to 100000: %v", ms)
	}
}

// BenchmarkChangeLogPage: a page of 100 records from the second half of a
// 400,000-record segment (CHANGES FROM paging through it), after one read
// went through it.
func BenchmarkChangeLogPage(b *testing.B) {
	l, err := openChangeLog(vfs.NewMem(), "log", 1<<30)
	if err != nil {
		b.Fatal(err)
	}
	const n = 400000
	payload := bytes.Repeat([]byte{'p'}, 100)
	for seq := uint64(1); seq <= n; seq++ {
		l.append(seq, payload)
		if seq%1000 == 0 {
			if err := l.write(); err != nil {
				b.Fatal(err)
			}
		}
	}
	page := func(from uint64) {
		k := 0
		if err := l.read(from, n, func(uint64, []byte) bool { k++; return k < 100 }); err != nil || k != 100 {
			b.Fatalf("page from %d: %d records, %v", from, k, err)
		}
	}
	page(n - 100)
	from := uint64(n / 2)
	for b.Loop() {
		page(from)
		if from += 100; from > n-100 {
			from = n / 2
		}
	}
}
