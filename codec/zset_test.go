package codec

import (
	"bytes"
	"errors"
	"math"
	"testing"
)

func TestMetaZSetRoundTrip(t *testing.T) {
	floor := AppendScore(nil, 2.5)
	long := append(AppendScore(nil, 1), bytes.Repeat([]byte{'m'}, 64)...)
	for _, m := range []Meta{{Type: TypeZSet, Count: 1}, {Type: TypeZSet, ExpireAtMs: 1700000060000, Count: 5000, Ranked: true, Floor: floor}, {Type: TypeZSet, Count: 2, Floor: long}} {
		enc := AppendMeta(nil, m)
		if len(enc) != 19+len(m.Floor) || len(enc) != MetaLen(m) {
			t.Fatalf("zset meta is %d bytes, want %d (MetaLen %d)", len(enc), 19+len(m.Floor), MetaLen(m))
		}
		got, err := DecodeMeta(enc)
		if err != nil || got.Type != m.Type || got.Count != m.Count || got.Ranked != m.Ranked || got.ExpireAtMs != m.ExpireAtMs || !bytes.Equal(got.Floor, m.Floor) {
			t.Fatalf("DecodeMeta(AppendMeta(%+v)) = %+v, %v", m, got, err)
		}
		for _, n := range []int{18, 19 + ZFloorMax + 1} {
			b := append(append([]byte(nil), enc...), make([]byte, n)...)[:n]
			if _, err := DecodeMeta(b); err == nil {
				t.Fatalf("DecodeMeta accepted a zset meta of %d bytes", n)
			}
		}
	}
	if tags := TypeZSet.SubTags(); len(tags) != 3 || tags[0] != TagZMember || tags[1] != TagZScore || tags[2] != TagZBlock {
		t.Errorf("zset sub-tags %q", tags)
	}
}

// TestZScoreKeyOrder checks that score-index keys sort by score (numeric
// order, -0 as +0), then by member, and that scores round-trip.
func TestZScoreKeyOrder(t *testing.T) {
	scores := []float64{math.Inf(-1), -math.MaxFloat64, -1e300, -2.5, -1, -math.SmallestNonzeroFloat64, 0, math.SmallestNonzeroFloat64, 0.1, 1, 1.5, 1e300, math.MaxFloat64, math.Inf(1)}
	var prev []byte
	for _, s := range scores {
		for _, m := range []string{"", "\x00", "a", "a\x00", "b", "\xff"} {
			k := ZScoreKey(7, []byte("z\x00"), s, []byte(m))
			d, err := DecodeKey(k)
			if err != nil || d.Tag != TagZScore || string(d.Key) != "z\x00" {
				t.Fatalf("DecodeKey(ZScoreKey(%v, %q)) = %+v, %v", s, m, d, err)
			}
			got, mem, err := DecodeZScoreSuffix(d.Suffix)
			if err != nil || got != s || string(mem) != m {
				t.Fatalf("DecodeZScoreSuffix = %v %q %v; want %v %q", got, mem, err, s, m)
			}
			if prev != nil && bytes.Compare(prev, k) >= 0 {
				t.Fatalf("score-index key of %v %q does not sort after the one before", s, m)
			}
			prev = k
		}
	}
	if !bytes.Equal(ZScoreKey(0, []byte("z"), math.Copysign(0, -1), nil), ZScoreKey(0, []byte("z"), 0, nil)) {
		t.Error("-0 and +0 give different score-index keys")
	}
	if b := ScoreArg(math.Copysign(0, -1)); !bytes.Equal(b, ScoreArg(0)) {
		t.Errorf("ScoreArg(-0) = % x, want +0's bits", b)
	}
	if _, err := DecodeScoreArg([]byte{1, 2}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("DecodeScoreArg of 2 bytes: %v", err)
	}
	if _, _, err := DecodeZScoreSuffix([]byte{1, 2, 3}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("DecodeZScoreSuffix of 3 bytes: %v", err)
	}
	// ZBlockEnd is above every score-index suffix.
	if top := AppendScore(nil, math.Inf(1)); bytes.Compare(append(top, 0xff, 0xff), ZBlockEnd) >= 0 {
		t.Error("ZBlockEnd does not sort after +inf's suffixes")
	}
}

func TestZBlockValue(t *testing.T) {
	b := AppendZBlock(nil, 1024, []byte("lo\x00"))
	n, lo, err := DecodeZBlock(b)
	if err != nil || n != 1024 || string(lo) != "lo\x00" {
		t.Fatalf("DecodeZBlock = %d %q %v", n, lo, err)
	}
	if _, _, err := DecodeZBlock(b[:7]); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("DecodeZBlock of 7 bytes: %v", err)
	}
}
