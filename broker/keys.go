package broker

import (
	"strconv"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/internal/glob"
	"github.com/sediment-dev/sediment/internal/num"
	"github.com/sediment-dev/sediment/materialize"
)

func init() {
	register(
		&cmdSpec{name: "keys", arity: 2, flags: flagReadonly, group: "generic", since: "1.0.0",
			summary: "Returns all key names that match a pattern.", run: runKeys},
		&cmdSpec{name: "scan", arity: -2, flags: flagReadonly, group: "generic", since: "2.8.0",
			summary: "Iterates over the key names in the database.", run: runScan},
	)
}

// scanKeys calls fn for each live key of db in slot order, starting at slot
// from (after the metadata key after, when set: a position inside that
// slot), until fn returns false. It returns where to resume: the next slot
// to visit (0: done) or, when fn stopped inside a slot that holds more
// keys, that slot and the last metadata key visited. Metadata keys are
// rewritten by every write to their key: IterateKeys keeps a scan from
// walking their older versions.
func scanKeys(v *materialize.View, db uint8, from uint16, after []byte, fn func(key []byte, m codec.Meta) bool) (next uint16, resume []byte, err error) {
	err = v.SeekSlots(codec.TagMeta, db, from, func(slot uint16) (bool, error) {
		p := codec.SlotDBPrefix(codec.TagMeta, slot, db)
		lower := p
		if slot == from && after != nil {
			lower = append(after[:len(after):len(after)], 0)
		}
		stopped, more := false, false
		var last []byte
		err := v.IterateKeys(lower, codec.PrefixEnd(p), func(k, val []byte) (bool, error) {
			m, err := codec.DecodeMeta(val)
			if err != nil {
				return false, err
			}
			if v.Expired(m) {
				return true, nil
			}
			if stopped {
				more = true // a live key after the stop: resume inside the slot
				return false, nil
			}
			d, err := codec.DecodeKey(k)
			if err != nil {
				return false, err
			}
			last = append(last[:0], k...)
			stopped = !fn(append([]byte(nil), d.Key...), m)
			return true, nil
		})
		switch {
		case err != nil:
			return false, err
		case more:
			next, resume = slot, last
			return false, nil
		case stopped && slot+1 < codec.NumSlots:
			next = slot + 1
			return false, nil
		}
		return true, nil
	})
	return next, resume, err
}

// KEYS pattern. Reply: array of keys, in hash-slot order. O(N) in the db's
// keys, each match O(len(pattern) × len(key)) (see glob.Match). The scan
// stops early when the client disconnects (clientGuard).
// https://redis.io/docs/latest/commands/keys/
func runKeys(x *exec) error {
	pattern := x.args[1]
	all := matchesAll(pattern)
	var keys [][]byte
	g := clientGuard{c: x.c}
	defer g.release()
	v := x.view()
	_, _, err := scanKeys(v, v.StorageDB(x.db()), 0, nil, func(key []byte, _ codec.Meta) bool {
		if g.gone() {
			return false
		}
		if all || glob.Match(pattern, key) {
			keys = append(keys, key)
		}
		return true
	})
	if err != nil {
		return err
	}
	if g.left {
		return errClientGone
	}
	x.w().WriteArray(len(keys))
	for _, k := range keys {
		x.w().WriteBulk(k)
	}
	return nil
}

// matchesAll reports whether pattern is "*", which KEYS and SCAN MATCH, as
// Redis, answer without matching: unlike glob.Match("*", ""), it takes the
// empty key too.
func matchesAll(pattern []byte) bool {
	return len(pattern) == 1 && pattern[0] == '*'
}

// guardEvery is how many keys a scan visits between two checks that its
// client is still there.
const guardEvery = 256

// clientGuard lets a long scan of the keyspace (KEYS, SCAN with a large
// COUNT) stop once its client has gone. Every guardEvery keys it checks the
// connection's context, which a server shutdown cancels; from the first
// check on, the non-consuming close watcher (watchClose) also cancels it
// when the client closes its end. Short scans thus start no watcher.
//
// Like a blocked command, the scan stops on end of file from the client, so
// a client that half-closes its socket right after a long KEYS gets no
// reply; Redis, which reads nothing while KEYS runs, would still answer it.
type clientGuard struct {
	c    *conn
	n    int
	stop func() // stops the watcher; nil until the first check
	left bool   // the client has gone (or the server is closing)
}

// gone counts one visited key and reports whether the client has gone.
func (g *clientGuard) gone() bool {
	if g.left {
		return true
	}
	g.n++
	if g.n%guardEvery != 0 {
		return false
	}
	if g.stop == nil {
		g.stop = g.c.watchClose()
	}
	g.left = g.c.ctx.Err() != nil
	return g.left
}

// release stops the watcher, if gone started one.
func (g *clientGuard) release() {
	if g.stop != nil {
		g.stop()
	}
}

// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]
// Each call visits about COUNT keys, in hash-slot order. A cursor below
// 16384 is the next slot to visit; one above names a position inside a
// slot (scanTokens): a call that reaches COUNT inside a slot holding more
// keys stops there, so a keyspace in one slot (hash tags) is still paged.
// Every key present for the whole iteration is returned at least once
// (exactly once unless a position was forgotten, see scanTokens).
// https://redis.io/docs/latest/commands/scan/
func runScan(x *exec) error {
	cur, ok := parseCursor(x.args[1])
	if !ok {
		return errInvalidCursor
	}
	var (
		pattern, typ []byte
		err          error
	)
	all := true // no MATCH, or MATCH *
	count := int64(10)
	for i := 2; i < len(x.args); i += 2 {
		if i+1 >= len(x.args) {
			return errSyntax
		}
		switch {
		case equalFold(x.args[i], "MATCH"):
			pattern = x.args[i+1]
			all = matchesAll(pattern)
		case equalFold(x.args[i], "COUNT"):
			if count, err = intArg(x.args[i+1]); err != nil {
				return err
			}
			if count < 1 {
				return errSyntax
			}
		case equalFold(x.args[i], "TYPE"):
			typ = x.args[i+1]
		default:
			return errSyntax
		}
	}
	var keys [][]byte
	next := uint64(0)
	if slot, after, ok := x.c.s.scans.position(cur); ok {
		g := clientGuard{c: x.c}
		defer g.release()
		visited := int64(0)
		v := x.view()
		nextSlot, resume, err := scanKeys(v, v.StorageDB(x.db()), slot, after, func(key []byte, m codec.Meta) bool {
			if g.gone() {
				return false
			}
			visited++
			if (all || glob.Match(pattern, key)) && (typ == nil || equalFold(typ, upper(m.Type.String()))) {
				keys = append(keys, key)
			}
			return visited < count
		})
		if err != nil {
			return err
		}
		if g.left {
			return errClientGone
		}
		next = uint64(nextSlot)
		if resume != nil {
			next = x.c.s.scans.cursor(nextSlot, resume)
		}
	}
	w := x.w()
	w.WriteArray(2)
	w.WriteBulkString(strconv.FormatUint(next, 10))
	w.WriteArray(len(keys))
	for _, k := range keys {
		w.WriteBulk(k)
	}
	return nil
}

// parseCursor parses a SCAN cursor as Redis's parseScanCursorOrReply does
// with strtoul: the argument ends at its first NUL byte; an optional '+' or
// '-' (which negates modulo 2^64), then decimal digits up to 2^64-1. The
// empty string is cursor 0. A leading space, a sign without digits, any
// other byte and overflow are invalid.
func parseCursor(b []byte) (uint64, bool) { return num.ParseCursor(b) }

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - ('a' - 'A')
		}
	}
	return string(b)
}
