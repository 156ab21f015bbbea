package codec_test

import (
	"bytes"
	"encoding/binary"
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

// TestAppendKeys checks each consumer-group key constructor and its
// Append*Key (which appends after what the buffer holds) against the key
// composed from the group and consumer prefixes (binary names, an empty
// group or consumer, a negative delivery time).
func TestAppendKeys(t *testing.T) {
	id := codec.ID{Ms: 1<<40 + 3, Seq: 9}
	u64 := func(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }
	for _, tc := range []struct{ key, group, consumer []byte }{
		{[]byte("s"), []byte("g"), []byte("c")},
		{[]byte("k\x00\xff"), []byte{}, []byte{}},
		{bytes.Repeat([]byte("x"), 300), []byte("group\r\n"), bytes.Repeat([]byte{0}, 200)},
	} {
		prefix := []byte("held")
		for _, c := range []struct {
			name              string
			want, made, added []byte
		}{
			{"GroupKey", codec.GroupPrefix(codec.TagGroup, 3, tc.key, tc.group),
				codec.GroupKey(3, tc.key, tc.group), codec.AppendGroupKey(bytes.Clone(prefix), 3, tc.key, tc.group)},
			{"ConsumerKey", codec.AppendName(codec.GroupPrefix(codec.TagConsumer, 3, tc.key, tc.group), tc.consumer),
				codec.ConsumerKey(3, tc.key, tc.group, tc.consumer), codec.AppendConsumerKey(bytes.Clone(prefix), 3, tc.key, tc.group, tc.consumer)},
			{"PELKey", codec.AppendID(codec.GroupPrefix(codec.TagPEL, 3, tc.key, tc.group), id),
				codec.PELKey(3, tc.key, tc.group, id), codec.AppendPELKey(bytes.Clone(prefix), 3, tc.key, tc.group, id)},
			{"ConsumerPELKey", codec.AppendID(codec.ConsumerPELPrefix(3, tc.key, tc.group, tc.consumer), id),
				codec.ConsumerPELKey(3, tc.key, tc.group, tc.consumer, id), codec.AppendConsumerPELKey(bytes.Clone(prefix), 3, tc.key, tc.group, tc.consumer, id)},
			{"PELTimeKey", codec.AppendID(append(codec.GroupPrefix(codec.TagPELTime, 3, tc.key, tc.group), u64(1234)...), id),
				codec.PELTimeKey(3, tc.key, tc.group, 1234, id), codec.AppendPELTimeKey(bytes.Clone(prefix), 3, tc.key, tc.group, 1234, id)},
			{"PELTimeKey negative", codec.AppendID(append(codec.GroupPrefix(codec.TagPELTime, 3, tc.key, tc.group), u64(0)...), id),
				codec.PELTimeKey(3, tc.key, tc.group, -5, id), codec.AppendPELTimeKey(bytes.Clone(prefix), 3, tc.key, tc.group, -5, id)},
		} {
			if !bytes.Equal(c.made, c.want) {
				t.Errorf("%s(%q, %q, %q) = %x, want %x", c.name, tc.key, tc.group, tc.consumer, c.made, c.want)
			}
			if !bytes.HasPrefix(c.added, prefix) || !bytes.Equal(c.added[len(prefix):], c.want) {
				t.Errorf("Append%s(%q, %q, %q): appended %x, want %x after the prefix", c.name, tc.key, tc.group, tc.consumer, c.added, c.want)
			}
		}
	}
}
