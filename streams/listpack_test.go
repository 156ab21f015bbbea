package streams

import (
	"strings"
	"testing"

	"github.com/sediment-dev/sediment/codec"
)

// The sizes below are worked out by hand from listpack.c's rules
// (lpEncodeGetType, lpEncodeBacklen): an element is its encoding plus a
// back-length of 1 byte up to 127 bytes of encoding, 2 up to 16382.

func TestListpackElementSizes(t *testing.T) {
	cases := []struct {
		s    string
		want uint64
	}{
		{"0", 2}, {"127", 2}, // 7-bit uint: 1 + backlen 1
		{"128", 3}, {"-1", 3}, {"4095", 3}, {"-4096", 3}, // 13-bit: 2 + 1
		{"4096", 4}, {"-32768", 4}, // 16-bit: 3 + 1
		{"32768", 5}, {"8388607", 5}, {"-8388608", 5}, // 24-bit: 4 + 1
		{"8388608", 6}, {"2147483647", 6}, {"-2147483648", 6}, // 32-bit: 5 + 1
		{"2147483648", 10}, {"9223372036854775807", 10}, {"-9223372036854775808", 10}, // 64-bit: 9 + 1
		// Not canonical int64s: strings, 6-bit length header.
		{"", 2}, {"-0", 4}, {"007", 5}, {"+5", 4}, {"1.5", 5}, {" 1", 4}, {"-", 3},
		{"9223372036854775808", 21}, {"-9223372036854775809", 22}, {"12345678901234567890123", 25},
		{strings.Repeat("a", 63), 65},       // 1 + 63, backlen 1 (64 <= 127)
		{strings.Repeat("a", 64), 67},       // 12-bit: 2 + 64 = 66, backlen 1
		{strings.Repeat("a", 125), 128},     // 2 + 125 = 127, backlen 1
		{strings.Repeat("a", 126), 130},     // 2 + 126 = 128, backlen 2
		{strings.Repeat("a", 4095), 4099},   // 2 + 4095 = 4097, backlen 2
		{strings.Repeat("a", 4096), 4103},   // 32-bit: 5 + 4096 = 4101, backlen 2
		{strings.Repeat("a", 16378), 16386}, // 5 + 16378 = 16383: backlen 3 (not < 16383)
	}
	for _, c := range cases {
		if got := lpString([]byte(c.s)); got != c.want {
			t.Errorf("lpString(%.20q, %d bytes) = %d, want %d", c.s, len(c.s), got, c.want)
		}
	}
}

func TestListpackNodeBytes(t *testing.T) {
	id := codec.ID{Ms: 1000, Seq: 0}
	fv := [][]byte{[]byte("f"), []byte("v")}
	// A new node with one entry "f" "v":
	//   header 6 + end 1
	//   master: count 1 (2), deleted 0 (2), num-fields 1 (2), "f" (3), 0 (2)
	//   entry: flags 2 (2), ms-diff 0 (2), seq-diff 0 (2), "v" (3), lp-count 4 (2)
	// (a one-byte string is its 6-bit length header, the byte, a backlen).
	body := lpMasterBody(fv) + lpEntry(fv, id, id, true)
	if body != 7+11 {
		t.Fatalf("body = %d, want 18", body)
	}
	if got := lpNodeBytes(body, 1, 0); got != 7+4+18 {
		t.Fatalf("node bytes = %d, want 29", got)
	}
	// A second entry with other fields, 200 ms later and sequence 5:
	//   flags 0 (2), ms-diff 200 (3), seq-diff 5 (2), num-fields 2 (2),
	//   "a" (3), "12345" (4: 16-bit int 3 + 1), "b" (3), 64 x "x" (67),
	//   lp-count 2+3+2+1 = 8 (2)
	fv2 := [][]byte{[]byte("a"), []byte("12345"), []byte("b"), []byte(strings.Repeat("x", 64))}
	if got := lpEntry(fv2, codec.ID{Ms: 1200, Seq: 5}, id, false); got != 2+3+2+2+3+4+3+67+2 {
		t.Fatalf("entry = %d, want 88", got)
	}
	// A sequence below the master's is a negative seq-diff: -3 (13-bit, 3).
	if got := lpEntry(fv, codec.ID{Ms: 1001, Seq: 0}, codec.ID{Ms: 1000, Seq: 3}, true); got != 2+2+3+3+2 {
		t.Fatalf("entry with negative seq-diff = %d, want 12", got)
	}
	// Counts of 128 and more take 3 bytes each.
	if got := lpNodeBytes(100, 128, 4096); got != 7+3+4+100 {
		t.Fatalf("node bytes = %d, want 114", got)
	}
}

// TestAppendNodeParams checks the node boundaries nodeEditor.append draws for
// stream-node-max-bytes and -entries as streamAppendItem does.
func TestAppendNodeParams(t *testing.T) {
	fv := [][]byte{[]byte("f"), []byte("v")}
	run := func(c Config, n int) []uint64 {
		// append reads nothing: an editor without a view will do.
		var s codec.StreamMeta
		ed := &nodeEditor{s: &s}
		for i := range n {
			ed.append(codec.ID{Ms: uint64(i + 1)}, fv, c)
		}
		var lives []uint64
		for i := range n {
			if r := ed.keys[codec.ID{Ms: uint64(i + 1)}]; r != nil {
				lives = append(lives, r.n.Live)
			}
		}
		if ed.tail != nil {
			lives = append(lives, ed.tail.n.Live)
		}
		if s.Nodes != uint64(len(lives)) {
			t.Errorf("%d nodes counted, %d made", s.Nodes, len(lives))
		}
		return lives
	}
	// 29 bytes with one entry, then 11 more each (flags, ms-diff, seq-diff,
	// lp-count 2 each, "v" 3): the fifth entry finds 62 + 2 >= 61.
	if got := run(Config{NodeMaxBytes: 61, NodeMaxEntries: 100, IDMPDurationS: 1}, 9); len(got) != 3 || got[0] != 4 || got[1] != 4 || got[2] != 1 {
		t.Errorf("max-bytes 61: nodes %v, want [4 4 1]", got)
	}
	if got := run(Config{NodeMaxBytes: 4096, NodeMaxEntries: 3, IDMPDurationS: 1}, 7); len(got) != 3 || got[0] != 3 || got[2] != 1 {
		t.Errorf("max-entries 3: nodes %v, want [3 3 1]", got)
	}
	// 0 and 0: no entry limit, 1 GiB.
	if got := run(Config{IDMPDurationS: 1}, 300); len(got) != 1 {
		t.Errorf("0/0: nodes %v, want one", got)
	}
	// The zero Config is the defaults: 100 entries of this size a node.
	if got := run(Config{}, 250); len(got) != 3 || got[0] != 100 {
		t.Errorf("defaults: nodes %v, want [100 100 50]", got)
	}
}
