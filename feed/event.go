package feed

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/oklog/ulid/v2"

	"github.com/sediment-dev/sediment/codec"
)

// Version is the payload format's version (Message.V).
const Version = 1

// Message is the JSON payload of one change event (docs/change-feed.md).
// Binary values travel in base64 (standard encoding, with padding).
type Message struct {
	V    int    `json:"v"`    // Version
	Seq  uint64 `json:"seq"`  // the change-log record's sequence number
	I    int    `json:"i"`    // the event's index in its record (0-based)
	N    int    `json:"n"`    // the record's event count: one command's, or one EXEC's
	ULID string `json:"ulid"` // the record's ULID
	Ms   int64  `json:"ms"`   // Unix ms at which the command was decided
	DB   *int   `json:"db"`   // logical db; null for FLUSHALL
	Type string `json:"type"` // string, hash, set, zset, list, stream, key or db
	Op   string `json:"op"`   // OpName
	// Key is the key when it is valid UTF-8; Key64 holds it otherwise
	// (base64). Neither for db-wide events.
	Key   *string `json:"key,omitempty"`
	Key64 string  `json:"key64,omitempty"`
	// Args are the event's arguments in base64, as docs/key-format.md
	// ("Change events") defines them per operation.
	Args []string `json:"args"`
	// Meta is OpSetMeta's metadata, decoded.
	Meta *MetaInfo `json:"meta,omitempty"`
	// Reason is why a key went (del): "expired" when its TTL passed;
	// empty for a deletion by a command.
	Reason string `json:"reason,omitempty"`
	// Truncated: the event was larger than the NATS server takes in one
	// message (max_payload): Args and Meta's value are left out; read the
	// key for them.
	Truncated bool `json:"truncated,omitempty"`
	// Snapshot: the event is part of a snapshot (Snapshot.Page), not of
	// a change-log record: Seq is the snapshot's sequence, I its index
	// in the snapshot, N and ULID zero.
	Snapshot bool `json:"snapshot,omitempty"`
}

// MetaInfo is a key's metadata as an OpSetMeta event sets it.
type MetaInfo struct {
	Type       string `json:"type"`
	ExpireAtMs int64  `json:"expire_at_ms"` // 0: no TTL
	Value64    string `json:"value64,omitempty"`
	Count      uint64 `json:"count,omitempty"` // hash, set, zset, list: elements
	Length     uint64 `json:"length,omitempty"`
	LastID     string `json:"last_id,omitempty"`
}

var opNames = map[codec.Op]string{
	codec.OpSetMeta: "set-meta", codec.OpDelKey: "del", codec.OpXAdd: "xadd", codec.OpXDel: "xdel",
	codec.OpXTrim: "xtrim", codec.OpGroupSet: "group-set", codec.OpGroupDel: "group-del",
	codec.OpConsumerSet: "consumer-set", codec.OpConsumerDel: "consumer-del", codec.OpPELSet: "pel-set",
	codec.OpPELDel: "pel-del", codec.OpTTLDel: "ttl-del", codec.OpFlushDB: "flushdb",
	codec.OpFlushAll: "flushall", codec.OpHSet: "hset", codec.OpHDel: "hdel", codec.OpSAdd: "sadd",
	codec.OpSRem: "srem", codec.OpCopyKey: "copy-key", codec.OpSwapDB: "swapdb", codec.OpLSet: "lset",
	codec.OpLDel: "ldel", codec.OpZAdd: "zadd", codec.OpZRem: "zrem", codec.OpZRanks: "zranks",
	codec.OpIDMPSet: "idmp-set", codec.OpIDMPDel: "idmp-del", codec.OpIDMPState: "idmp-state", codec.OpIDMPClear: "idmp-clear",
	codec.OpXNodeSet: "xnode-set", codec.OpXNodeDel: "xnode-del",
}

// OpName returns the payload's name of an operation ("op-XX" for one this
// version does not know).
func OpName(op codec.Op) string {
	if n, ok := opNames[op]; ok {
		return n
	}
	return fmt.Sprintf("op-%02x", byte(op))
}

// typeOf returns the data type an event's subject names.
func typeOf(e codec.Event) string {
	switch e.Op {
	case codec.OpSetMeta:
		// The encoded metadata's second byte is its type (codec.AppendMeta).
		if len(e.Args) > 0 && len(e.Args[0]) > 1 {
			return codec.Type(e.Args[0][1]).String()
		}
	case codec.OpDelKey, codec.OpCopyKey:
		if len(e.Args) > 0 && len(e.Args[0]) == 1 {
			return codec.Type(e.Args[0][0]).String()
		}
	case codec.OpXAdd, codec.OpXDel, codec.OpXTrim, codec.OpGroupSet, codec.OpGroupDel,
		codec.OpConsumerSet, codec.OpConsumerDel, codec.OpPELSet, codec.OpPELDel,
		codec.OpIDMPSet, codec.OpIDMPDel, codec.OpIDMPState, codec.OpIDMPClear,
		codec.OpXNodeSet, codec.OpXNodeDel:
		return "stream"
	case codec.OpHSet, codec.OpHDel:
		return "hash"
	case codec.OpSAdd, codec.OpSRem:
		return "set"
	case codec.OpLSet, codec.OpLDel:
		return "list"
	case codec.OpZAdd, codec.OpZRem, codec.OpZRanks:
		return "zset"
	case codec.OpFlushDB, codec.OpFlushAll, codec.OpSwapDB:
		return "db"
	}
	return "key"
}

// Encode returns the subject and payload of event i of record r. logical
// maps the event's storage db to its logical db (SWAPDB).
func Encode(prefix string, r codec.Record, i int, logical func(storage uint8) uint8) (subject string, payload []byte, err error) {
	m, subject, err := messageOf(prefix, r, i, logical)
	if err != nil {
		return "", nil, err
	}
	return subject, m.appendJSON(make([]byte, 0, 160+len(r.Events[i].Key)+4*argsLen(r.Events[i])/3)), nil
}

// EncodeTruncated is Encode without the event's arguments and value
// (Message.Truncated), for an event too large for one NATS message.
func EncodeTruncated(prefix string, r codec.Record, i int, logical func(storage uint8) uint8) (string, []byte, error) {
	m, subject, err := messageOf(prefix, r, i, logical)
	if err != nil {
		return "", nil, err
	}
	m.Args, m.Truncated = []string{}, true
	if m.Meta != nil {
		m.Meta.Value64 = ""
	}
	return subject, m.appendJSON(nil), nil
}

// messageOf returns event i of record r as a Message, with its subject.
func messageOf(prefix string, r codec.Record, i int, logical func(storage uint8) uint8) (m Message, subject string, err error) {
	e := r.Events[i]
	m = Message{V: Version, Seq: r.Seq, I: i, N: len(r.Events), ULID: ulid.ULID(r.ULID).String(), Ms: r.TimeMs,
		Type: typeOf(e), Op: OpName(e.Op), Args: make([]string, len(e.Args))}
	for j, a := range e.Args {
		m.Args[j] = base64.StdEncoding.EncodeToString(a)
	}
	db := int(logical(e.DB))
	if e.Op == codec.OpSwapDB {
		db = int(e.DB) // SWAPDB names logical dbs: this one and Args[0]
	}
	switch e.Op {
	case codec.OpFlushAll:
		subject = AllSubject(prefix)
	case codec.OpFlushDB, codec.OpSwapDB:
		m.DB = &db
		subject = DBSubject(prefix, uint8(db), m.Op)
	default:
		m.DB = &db
		if utf8.Valid(e.Key) {
			k := string(e.Key)
			m.Key = &k
		} else {
			m.Key64 = base64.StdEncoding.EncodeToString(e.Key)
		}
		subject = KeySubject(prefix, uint8(db), m.Type, e.Key)
	}
	if codec.DelReason(e) == codec.ReasonExpired {
		m.Reason = "expired"
	}
	if e.Op == codec.OpSetMeta {
		md, err := codec.EventMeta(e)
		if err != nil {
			return m, "", err
		}
		mi := &MetaInfo{Type: md.Type.String(), ExpireAtMs: md.ExpireAtMs}
		switch md.Type {
		case codec.TypeString:
			mi.Value64 = base64.StdEncoding.EncodeToString(md.Value)
		case codec.TypeStream:
			mi.Length, mi.LastID = md.Stream.Length, md.Stream.LastID.String()
		default:
			mi.Count = md.Count
		}
		m.Meta = mi
	}
	return m, subject, nil
}

func argsLen(e codec.Event) int {
	n := 0
	for _, a := range e.Args {
		n += len(a) + 3
	}
	return n
}

// appendJSON appends m as encoding/json would marshal it (the same fields,
// order and omissions), without reflection: the publisher's hot path.
func (m *Message) appendJSON(b []byte) []byte {
	b = append(b, `{"v":`...)
	b = strconv.AppendInt(b, int64(m.V), 10)
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, m.Seq, 10)
	b = append(b, `,"i":`...)
	b = strconv.AppendInt(b, int64(m.I), 10)
	b = append(b, `,"n":`...)
	b = strconv.AppendInt(b, int64(m.N), 10)
	b = append(b, `,"ulid":`...)
	b = appendJSONString(b, m.ULID)
	b = append(b, `,"ms":`...)
	b = strconv.AppendInt(b, m.Ms, 10)
	b = append(b, `,"db":`...)
	if m.DB == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(b, int64(*m.DB), 10)
	}
	b = append(b, `,"type":`...)
	b = appendJSONString(b, m.Type)
	b = append(b, `,"op":`...)
	b = appendJSONString(b, m.Op)
	if m.Key != nil {
		b = append(b, `,"key":`...)
		b = appendJSONString(b, *m.Key)
	}
	if m.Key64 != "" {
		b = append(b, `,"key64":`...)
		b = appendJSONString(b, m.Key64)
	}
	b = append(b, `,"args":[`...)
	for i, a := range m.Args {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, a)
	}
	b = append(b, ']')
	if mi := m.Meta; mi != nil {
		b = append(b, `,"meta":{"type":`...)
		b = appendJSONString(b, mi.Type)
		b = append(b, `,"expire_at_ms":`...)
		b = strconv.AppendInt(b, mi.ExpireAtMs, 10)
		if mi.Value64 != "" {
			b = append(b, `,"value64":`...)
			b = appendJSONString(b, mi.Value64)
		}
		if mi.Count != 0 {
			b = append(b, `,"count":`...)
			b = strconv.AppendUint(b, mi.Count, 10)
		}
		if mi.Length != 0 {
			b = append(b, `,"length":`...)
			b = strconv.AppendUint(b, mi.Length, 10)
		}
		if mi.LastID != "" {
			b = append(b, `,"last_id":`...)
			b = appendJSONString(b, mi.LastID)
		}
		b = append(b, '}')
	}
	if m.Reason != "" {
		b = append(b, `,"reason":`...)
		b = appendJSONString(b, m.Reason)
	}
	if m.Truncated {
		b = append(b, `,"truncated":true`...)
	}
	if m.Snapshot {
		b = append(b, `,"snapshot":true`...)
	}
	return append(b, '}')
}

// appendJSONString appends s, valid UTF-8, as a JSON string: quotes,
// backslashes and control characters escaped, as encoding/json does
// (which also escapes <, > and & for HTML, and U+2028/U+2029; both forms
// decode to the same string).
func appendJSONString(b []byte, s string) []byte {
	const hexdig = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexdig[c>>4], hexdig[c&15])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// Decode parses a payload. It rejects versions it does not know.
func Decode(payload []byte) (Message, error) {
	var m Message
	if err := json.Unmarshal(payload, &m); err != nil {
		return m, err
	}
	if m.V != Version {
		return m, fmt.Errorf("feed: payload version %d, want %d", m.V, Version)
	}
	return m, nil
}

// KeyBytes returns the message's key (nil for db-wide events).
func (m Message) KeyBytes() ([]byte, error) {
	if m.Key != nil {
		return []byte(*m.Key), nil
	}
	if m.Key64 != "" {
		return base64.StdEncoding.DecodeString(m.Key64)
	}
	return nil, nil
}

// ArgBytes returns the event's arguments.
func (m Message) ArgBytes() ([][]byte, error) {
	out := make([][]byte, len(m.Args))
	for i, a := range m.Args {
		b, err := base64.StdEncoding.DecodeString(a)
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

// Event returns the change event the message carries (storage db set to
// the logical db), for programs that use codec's decoders.
func (m Message) Event() (codec.Event, error) {
	var e codec.Event
	for op, name := range opNames {
		if name == m.Op {
			e.Op = op
		}
	}
	if e.Op == 0 {
		return e, fmt.Errorf("feed: unknown op %q", m.Op)
	}
	if m.DB != nil {
		e.DB = uint8(*m.DB)
	}
	var err error
	if e.Key, err = m.KeyBytes(); err != nil {
		return e, err
	}
	e.Args, err = m.ArgBytes()
	return e, err
}
