package feed

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/sediment-dev/sediment/codec"
)

// TestAppendJSONMatchesEncodingJSON: the hand-written encoder's output
// decodes to the same Message as encoding/json's, for odd keys and every
// optional field.
func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	zero, seven := 0, 7
	keys := []string{"", "k", `q"uote`, `back\slash`, "ctl\x00\x01\x1f\n\r\t", "é€😀", "\u2028\u2029", "<&>"}
	for _, k := range keys {
		k := k
		for _, m := range []Message{
			{V: 1, Seq: 1, N: 1, ULID: "01JDSX4Y6B0R7T2Q8Z5WQJ3M1V", Ms: 17, DB: &zero, Type: "string", Op: "set-meta", Key: &k,
				Args: []string{"AQ==", ""}, Meta: &MetaInfo{Type: "string", Value64: "djE="}},
			{V: 1, Seq: 2, I: 1, N: 2, DB: &seven, Type: "hash", Op: "hset", Key64: "/w==", Args: []string{}},
			{V: 1, Seq: 3, Type: "db", Op: "flushall", Args: []string{}},
			{V: 1, Seq: 4, DB: &zero, Type: "stream", Op: "set-meta", Key: &k, Args: []string{"x"},
				Meta: &MetaInfo{Type: "stream", ExpireAtMs: 5, Length: 3, LastID: "1-1"}},
			{V: 1, Seq: 5, DB: &zero, Type: "zset", Op: "set-meta", Key: &k, Meta: &MetaInfo{Type: "zset", Count: 9}, Args: []string{}},
			{V: 1, Seq: 6, DB: &zero, Type: "string", Op: "set-meta", Key: &k, Meta: &MetaInfo{Type: "string"}, Args: []string{}, Truncated: true},
			{V: 1, Seq: 7, DB: &zero, Type: "string", Op: "del", Key: &k, Args: []string{"cw==", "AAAAAAAAAAU=", "ZQ=="}, Reason: "expired", Truncated: true},
		} {
			got := m.appendJSON(nil)
			if !json.Valid(got) {
				t.Fatalf("not JSON: %s", got)
			}
			want, err := json.Marshal(&m)
			if err != nil {
				t.Fatal(err)
			}
			var a, b Message
			if err := json.Unmarshal(got, &a); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(want, &b); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("appendJSON decodes to %+v, encoding/json's to %+v\n%s\n%s", a, b, got, want)
			}
			if !bytes.Contains(want, []byte("<")) && !bytes.Contains(want, []byte("\\u2028")) && !bytes.Contains(want, []byte("\\u0026")) &&
				!bytes.Contains(want, []byte("\\u003c")) && !bytes.Equal(got, want) && k != "ctl\x00\x01\x1f\n\r\t" {
				t.Fatalf("bytes differ:\n%s\n%s", got, want)
			}
		}
	}
}

func TestEncodeDecode(t *testing.T) {
	r := codec.Record{Seq: 9, TimeMs: 100, Events: []codec.Event{
		codec.SetMetaEvent(2, []byte("a\xffb"), codec.Meta{Type: codec.TypeString, Value: []byte("v")}, 0),
	}}
	subj, payload, err := Encode("p", r, 0, func(s uint8) uint8 { return s + 1 })
	if err != nil {
		t.Fatal(err)
	}
	if subj != "p.chg.3.string.a%FFb" {
		t.Fatalf("subject %s", subj)
	}
	m, err := Decode(payload)
	if err != nil {
		t.Fatal(err)
	}
	e, err := m.Event()
	if err != nil || e.Op != codec.OpSetMeta || e.DB != 3 || string(e.Key) != "a\xffb" || m.Key != nil {
		t.Fatalf("decoded %+v %+v %v", m, e, err)
	}
	meta, err := codec.DecodeMeta(e.Args[0])
	if err != nil || string(meta.Value) != "v" || m.Meta.Value64 != "dg==" {
		t.Fatalf("meta %+v %v", meta, err)
	}
}
