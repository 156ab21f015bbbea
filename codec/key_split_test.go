package codec_test

import (
	"bytes"
	"testing"

	"github.com/sediment-dev/sediment/codec"
)

// TestSplitKeyPrefix: a compound key splits after its user key, as
// KeyPrefix built it, and keys shorter than their length prefix says are
// refused.
func TestSplitKeyPrefix(t *testing.T) {
	k := codec.ElementKey(codec.TagHash, 3, []byte("k\x00ey"), []byte("field"))
	p, suffix, ok := codec.SplitKeyPrefix(k)
	if !ok || !bytes.Equal(p, codec.KeyPrefix(codec.TagHash, 3, []byte("k\x00ey"))) || string(suffix) != "field" {
		t.Fatalf("split %x: %x | %q, %v", k, p, suffix, ok)
	}
	if _, suffix, ok := codec.SplitKeyPrefix(p); !ok || len(suffix) != 0 {
		t.Fatalf("a bare prefix: suffix %q, %v", suffix, ok)
	}
	for _, bad := range [][]byte{nil, k[:7], p[:len(p)-1]} {
		if _, _, ok := codec.SplitKeyPrefix(bad); ok {
			t.Fatalf("%x split", bad)
		}
	}
}
