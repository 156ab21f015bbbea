package feed_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sediment-dev/sediment/feed"
)

func TestKeyTokenRoundTrip(t *testing.T) {
	for _, key := range [][]byte{
		[]byte(""), []byte("user:1"), []byte("a.b"), []byte("*"), []byte(">"), []byte("with space"),
		[]byte("tab\there"), {0}, []byte("100%"), []byte("%41"), []byte("é"), {0xff, 0xfe}, []byte("A-Z_a-z:0-9"),
		[]byte(strings.Repeat("k", feed.MaxKeyToken)),
	} {
		tok := feed.KeyToken(key)
		if tok == "" || strings.ContainsAny(tok, ". *>\t\r\n") {
			t.Fatalf("KeyToken(%q) = %q: not a NATS subject token", key, tok)
		}
		got, hashed, err := feed.ParseKeyToken(tok)
		if err != nil || hashed || !bytes.Equal(got, key) {
			t.Fatalf("ParseKeyToken(KeyToken(%q) = %q) = %q, %v, %v", key, tok, got, hashed, err)
		}
	}
	long := []byte(strings.Repeat("k", feed.MaxKeyToken+1))
	tok := feed.KeyToken(long)
	if _, hashed, err := feed.ParseKeyToken(tok); !hashed || err != nil || len(tok) != 66 {
		t.Fatalf("a key longer than MaxKeyToken: token %q, hashed %v, %v", tok, hashed, err)
	}
	if tok2 := feed.KeyToken(append(long, 'x')); tok2 == tok {
		t.Fatal("two long keys share a token")
	}
	for _, bad := range []string{"", "%4", "%4g", "%zz", "a%", "a.b"} {
		if _, _, err := feed.ParseKeyToken(bad); err == nil {
			t.Fatalf("ParseKeyToken(%q) accepted", bad)
		}
	}
}
