// Package feed publishes Sediment's change feed: every committed change
// event, in change-log order, on NATS subjects that name its db, data type
// and key, with a versioned JSON payload (docs/change-feed.md). It holds
// the subject and payload formats, their decoders for subscribers written
// in Go, and the Publisher that tails a store's change log.
package feed

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
)

// Subjects:
//
//	<prefix>.chg.<db>.<type>.<key-token>   an event on one key
//	<prefix>.chg.<db>.db.<op>              FLUSHDB (flushdb), SWAPDB (swapdb)
//	<prefix>.chg.all.db.flushall           FLUSHALL
//
// db is the logical db in decimal; type is string, hash, set, zset, list,
// stream, or key for the events that do not name the key's type (the
// deletion of a collection's metadata, a TTL index entry removed).

// DefaultPrefix is the subject prefix unless configured (--feed-prefix).
const DefaultPrefix = "sediment"

// MaxKeyToken bounds a key token: a key whose escaped form is longer is
// named by its SHA-256 instead (HashedKeyToken), and the payload carries
// the key itself.
const MaxKeyToken = 192

// KeyToken returns the subject token of key, reversible with ParseKeyToken:
// bytes A-Z a-z 0-9 - _ : stay, every other byte (the separators . * > and
// spaces among them, '%' itself, non-ASCII and invalid UTF-8, \0) becomes
// %XX in upper-case hex; the empty key is "%"; a token longer than
// MaxKeyToken is "%H" and the key's SHA-256 in lower-case hex (64 chars),
// which ParseKeyToken reports as hashed.
func KeyToken(key []byte) string {
	if len(key) == 0 {
		return "%"
	}
	n := 0
	for _, c := range key {
		if plain(c) {
			n++
		} else {
			n += 3
		}
	}
	if n > MaxKeyToken {
		return HashedKeyToken(key)
	}
	b := make([]byte, 0, n)
	const hexdig = "0123456789ABCDEF"
	for _, c := range key {
		if plain(c) {
			b = append(b, c)
		} else {
			b = append(b, '%', hexdig[c>>4], hexdig[c&15])
		}
	}
	return string(b)
}

// HashedKeyToken returns the token of a key too long to escape: "%H" and
// its SHA-256 in lower-case hex.
func HashedKeyToken(key []byte) string {
	sum := sha256.Sum256(key)
	return "%H" + hex.EncodeToString(sum[:])
}

func plain(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == ':'
}

// ErrBadToken is returned by ParseKeyToken for a token KeyToken never makes.
var ErrBadToken = errors.New("feed: not a key token")

// ParseKeyToken returns the key a token names, or hashed true (and a nil
// key) for a hashed token, whose key is only in the payload.
func ParseKeyToken(tok string) (key []byte, hashed bool, err error) {
	switch {
	case tok == "%":
		return []byte{}, false, nil
	case len(tok) == 2+2*sha256.Size && tok[:2] == "%H":
		return nil, true, nil
	case tok == "":
		return nil, false, ErrBadToken
	}
	key = make([]byte, 0, len(tok))
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		switch {
		case plain(c):
			key = append(key, c)
		case c == '%' && i+2 < len(tok) && isUpperHex(tok[i+1]) && isUpperHex(tok[i+2]):
			v, _ := strconv.ParseUint(tok[i+1:i+3], 16, 8)
			key = append(key, byte(v))
			i += 2
		default:
			return nil, false, ErrBadToken
		}
	}
	return key, false, nil
}

func isUpperHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'A' && c <= 'F' }

// KeySubject returns the subject of an event of the given type on key in
// logical db.
func KeySubject(prefix string, db uint8, typ string, key []byte) string {
	return prefix + ".chg." + strconv.Itoa(int(db)) + "." + typ + "." + KeyToken(key)
}

// DBSubject returns the subject of a db-wide event (FLUSHDB, SWAPDB).
func DBSubject(prefix string, db uint8, op string) string {
	return prefix + ".chg." + strconv.Itoa(int(db)) + ".db." + op
}

// AllSubject is the subject of FLUSHALL.
func AllSubject(prefix string) string { return prefix + ".chg.all.db.flushall" }
