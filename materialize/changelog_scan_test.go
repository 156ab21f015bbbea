package materialize

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"
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
