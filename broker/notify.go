package broker

import (
	"slices"
	"strconv"
	"strings"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/groups"
	"github.com/sediment-dev/sediment/materialize"
)

// Keyspace notifications (notify-keyspace-events), as Redis 7.0's
// notify.c, derived from each write's committed change events and its
// command (docs/keyspace-notifications.md). A notification is published
// after the commit through pub/sub (pubsub.go), so subscribers of every
// process on the NATS cluster receive it, in the writing connection's
// order.

// Event classes: the flag letters of notify-keyspace-events.
const (
	notifyKeyspace = 1 << iota // K
	notifyKeyevent             // E
	notifyGeneric              // g
	notifyString               // $
	notifyList                 // l
	notifySet                  // s
	notifyHash                 // h
	notifyZset                 // z
	notifyExpired              // x
	notifyEvicted              // e
	notifyStream               // t
	notifyKeyMiss              // m
	notifyModule               // d
	notifyNew                  // n
	// notifyAll is A: g$lshzxetd.
	notifyAll = notifyGeneric | notifyString | notifyList | notifySet | notifyHash | notifyZset |
		notifyExpired | notifyEvicted | notifyStream | notifyModule
)

var notifyLetters = []struct {
	c    byte
	flag uint32
}{
	{'g', notifyGeneric}, {'$', notifyString}, {'l', notifyList}, {'s', notifySet}, {'h', notifyHash},
	{'z', notifyZset}, {'x', notifyExpired}, {'e', notifyEvicted}, {'t', notifyStream}, {'d', notifyModule},
	{'K', notifyKeyspace}, {'E', notifyKeyevent}, {'m', notifyKeyMiss}, {'n', notifyNew},
}

// parseNotifyFlags parses a notify-keyspace-events value (Redis's
// keyspaceEventsStringToFlags); ok is false for an unknown letter.
func parseNotifyFlags(s []byte) (flags uint32, ok bool) {
	for _, c := range s {
		if c == 'A' {
			flags |= notifyAll
			continue
		}
		found := false
		for _, l := range notifyLetters {
			if l.c == c {
				flags |= l.flag
				found = true
			}
		}
		if !found {
			return 0, false
		}
	}
	return flags, true
}

// formatNotifyFlags renders flags as CONFIG GET does (Redis 7.0's
// keyspaceEventsFlagsToString): A or the class letters (n last among them,
// and dropped after A, as Redis 7.0 does), then K, E, m.
func formatNotifyFlags(flags uint32) string {
	var b strings.Builder
	if flags&notifyAll == notifyAll {
		b.WriteByte('A')
	} else {
		for _, l := range notifyLetters[:10] {
			if flags&l.flag != 0 {
				b.WriteByte(l.c)
			}
		}
		if flags&notifyNew != 0 {
			b.WriteByte('n')
		}
	}
	for _, l := range notifyLetters[10:13] {
		if flags&l.flag != 0 {
			b.WriteByte(l.c)
		}
	}
	return b.String()
}

// note is one keyspace notification: event on key of logical db.
type note struct {
	class uint32
	event string
	db    uint8
	key   []byte
}

// notesFor derives the notifications of one command's committed events:
// cmd and args are the request, db its logical db. Lazy expiry deletions
// among the events are "expired"; the command's own events follow Redis's
// names for it (notifyRules), with "del" after a key the command emptied.
func notesFor(cmd string, args [][]byte, db uint8, events []codec.Event, created map[string]bool) []note {
	if len(events) == 0 {
		return nil
	}
	out := commandNotes(cmd, args, db, events)
	if len(created) == 0 {
		return out
	}
	// "new" goes right before the first notification of a key the command
	// created, as Redis's dbAdd sends it; for RENAME and MOVE before the
	// command's first, as Redis adds the key before notifying.
	front := cmd == "rename" || cmd == "renamenx" || cmd == "move"
	res := make([]note, 0, len(out)+len(created))
	done := map[string]bool{}
	for _, n := range out {
		k := string(n.key)
		if created[k] && !done[k] && n.event != "del" && n.event != "expired" && n.event != "move_from" {
			done[k] = true
			nn := note{class: notifyNew, event: "new", db: n.db, key: n.key}
			if front {
				res = slices.Insert(res, 0, nn)
			} else {
				res = append(res, nn)
			}
		}
		res = append(res, n)
	}
	return res
}

// commandNotes is notesFor without the "new" notifications.
func commandNotes(cmd string, args [][]byte, db uint8, events []codec.Event) []note {
	var out []note
	add := func(class uint32, event string, key []byte) {
		out = append(out, note{class: class, event: event, db: db, key: key})
	}
	// touched: the keys the command changed (not by expiry), in order;
	// emptied holds each of them, true when its last event deleted it.
	var touched [][]byte
	emptied := map[string]bool{}
	for _, e := range events {
		if e.Op == codec.OpDelKey && codec.DelReason(e) == codec.ReasonExpired {
			add(notifyExpired, "expired", e.Key)
			continue
		}
		if e.Op == codec.OpTTLDel || e.Op == codec.OpZRanks || len(e.Key) == 0 {
			continue
		}
		if _, seen := emptied[string(e.Key)]; !seen {
			touched = append(touched, e.Key)
		}
		emptied[string(e.Key)] = e.Op == codec.OpDelKey
	}
	if len(touched) == 0 {
		return out
	}
	del := func(key []byte) {
		if emptied[string(key)] {
			add(notifyGeneric, "del", key)
		}
	}
	has := func(key []byte) bool {
		_, ok := emptied[string(key)]
		return ok
	}
	// one emits event for key when the command changed it, then "del"
	// when it emptied it.
	one := func(class uint32, event string, key []byte) {
		if has(key) {
			add(class, event, key)
			del(key)
		}
	}
	// each emits event for every key the command changed (the blocking
	// pops' keys); store for a *STORE command's destination ("del" when
	// the result emptied it).
	each := func(class uint32, event string) {
		for _, k := range touched {
			one(class, event, k)
		}
	}
	store := func(class uint32) {
		if emptied[string(args[1])] {
			add(notifyGeneric, "del", args[1])
		} else {
			one(class, cmd, args[1])
		}
	}
	// afterKeys reports whether the word after an *MPOP's keys (its
	// direction) is dir; blocking forms have a timeout first.
	afterKeys := func(blocking bool, dir string) bool {
		at := 1
		if blocking {
			at = 2
		}
		if at >= len(args) {
			return false
		}
		n, err := strconv.Atoi(string(args[at]))
		if err != nil || at+1+n >= len(args) {
			return false
		}
		return strings.EqualFold(string(args[at+1+n]), dir)
	}
	hasOpt := func(from int, opts ...string) bool {
		for _, a := range args[min(from, len(args)):] {
			for _, o := range opts {
				if strings.EqualFold(string(a), o) {
					return true
				}
			}
		}
		return false
	}
	switch cmd {
	case "set":
		if has(args[1]) {
			add(notifyString, "set", args[1])
			if hasOpt(3, "EX", "PX", "EXAT", "PXAT") {
				add(notifyGeneric, "expire", args[1])
			}
		}
	case "setex", "psetex":
		if has(args[1]) {
			add(notifyString, "set", args[1])
			add(notifyGeneric, "expire", args[1])
		}
	case "setnx", "getset":
		one(notifyString, "set", args[1])
	case "mset", "msetnx":
		for i := 1; i+1 < len(args); i += 2 {
			if has(args[i]) {
				add(notifyString, "set", args[i])
			}
		}
	case "incr", "decr", "incrby", "decrby":
		one(notifyString, "incrby", args[1])
	case "incrbyfloat", "append", "setrange":
		one(notifyString, cmd, args[1])
	case "getdel":
		if has(args[1]) {
			add(notifyGeneric, "del", args[1])
		}
	case "getex":
		switch {
		case !has(args[1]):
		case hasOpt(2, "PERSIST"):
			add(notifyGeneric, "persist", args[1])
		case emptied[string(args[1])]:
			add(notifyGeneric, "del", args[1])
		default:
			add(notifyGeneric, "expire", args[1])
		}
	case "hset", "hmset", "hsetnx":
		one(notifyHash, "hset", args[1])
	case "hincrby", "hincrbyfloat", "hdel":
		one(notifyHash, cmd, args[1])
	case "sadd", "srem", "spop":
		one(notifySet, cmd, args[1])
	case "smove":
		one(notifySet, "srem", args[1])
		one(notifySet, "sadd", args[2])
	case "sinterstore", "sunionstore", "sdiffstore":
		store(notifySet)
	case "lpush", "lpushx":
		one(notifyList, "lpush", args[1])
	case "rpush", "rpushx":
		one(notifyList, "rpush", args[1])
	case "lpop", "rpop", "linsert", "lset", "lrem", "ltrim":
		one(notifyList, cmd, args[1])
	case "blpop", "brpop":
		each(notifyList, cmd[1:])
	case "lmpop", "blmpop":
		each(notifyList, map[bool]string{false: "lpop", true: "rpop"}[afterKeys(cmd == "blmpop", "RIGHT")])
	case "rpoplpush", "brpoplpush", "lmove", "blmove":
		from, to := "rpop", "lpush"
		if strings.HasSuffix(cmd, "lmove") && len(args) > 4 {
			from = map[string]string{"left": "lpop", "right": "rpop"}[strings.ToLower(string(args[3]))]
			to = map[string]string{"left": "lpush", "right": "rpush"}[strings.ToLower(string(args[4]))]
		}
		// Redis pushes onto the destination, then notifies the pop.
		one(notifyList, to, args[2])
		one(notifyList, from, args[1])
	case "zadd":
		// INCR among the leading options, not a member named "incr".
		incr := false
		for _, a := range args[2:] {
			if o := strings.ToUpper(string(a)); o == "INCR" {
				incr = true
			} else if o != "NX" && o != "XX" && o != "GT" && o != "LT" && o != "CH" {
				break
			}
		}
		one(notifyZset, map[bool]string{false: "zadd", true: "zincr"}[incr], args[1])
	case "zincrby":
		one(notifyZset, "zincr", args[1])
	case "zrem", "zremrangebyscore", "zremrangebyrank", "zremrangebylex", "zpopmin", "zpopmax":
		one(notifyZset, cmd, args[1])
	case "bzpopmin", "bzpopmax":
		each(notifyZset, cmd[1:])
	case "zmpop", "bzmpop":
		each(notifyZset, map[bool]string{false: "zpopmin", true: "zpopmax"}[afterKeys(cmd == "bzmpop", "MAX")])
	case "zunionstore", "zinterstore", "zdiffstore", "zrangestore":
		store(notifyZset)
	case "xadd":
		// An IDMP duplicate (Redis 8.6) adds no entry and notifies nothing.
		if has(args[1]) && slices.ContainsFunc(events, func(e codec.Event) bool { return e.Op == codec.OpXAdd }) {
			add(notifyStream, "xadd", args[1])
			for _, e := range events {
				if e.Op == codec.OpXTrim {
					add(notifyStream, "xtrim", args[1])
					break
				}
			}
		}
	case "xdelex", "xackdel":
		// xdel only when an entry was deleted (Redis 8.2).
		for _, e := range events {
			if e.Op == codec.OpXDel {
				add(notifyStream, "xdel", args[1])
				break
			}
		}
	case "xtrim", "xdel", "xsetid":
		if has(args[1]) {
			add(notifyStream, cmd, args[1])
		}
	case "xgroup":
		if len(args) > 2 && has(args[2]) {
			sub := strings.ToLower(string(args[1]))
			switch sub {
			case "create", "setid", "destroy", "createconsumer", "delconsumer":
				add(notifyStream, "xgroup-"+sub, args[2])
			}
		}
	case "del", "unlink":
		for _, k := range touched {
			if emptied[string(k)] {
				add(notifyGeneric, "del", k)
			}
		}
	case "expire", "pexpire", "expireat", "pexpireat":
		if emptied[string(args[1])] {
			add(notifyGeneric, "del", args[1])
		} else {
			one(notifyGeneric, "expire", args[1])
		}
	case "persist":
		one(notifyGeneric, "persist", args[1])
	case "rename", "renamenx":
		if has(args[2]) {
			add(notifyGeneric, "rename_from", args[1])
			add(notifyGeneric, "rename_to", args[2])
		}
	case "copy":
		if has(args[2]) {
			add(notifyGeneric, "copy_to", args[2])
		}
	case "move":
		if has(args[1]) {
			add(notifyGeneric, "move_from", args[1])
			if to, err := strconv.Atoi(string(args[2])); err == nil {
				out = append(out, note{class: notifyGeneric, event: "move_to", db: uint8(to), key: args[1]})
			}
		}
	}
	return out
}

// publishNotes publishes notes as Redis does: on __keyspace@<db>__:<key>
// with the event as message (K), then on __keyevent@<db>__:<event> with the
// key as message (E), each when its class is enabled.
func (s *Server) publishNotes(notes []note) {
	flags := s.notify.Load()
	for _, n := range notes {
		if flags&n.class == 0 {
			continue
		}
		dbs := strconv.Itoa(int(n.db))
		if flags&notifyKeyspace != 0 {
			ch := append([]byte("__keyspace@"+dbs+"__:"), n.key...)
			if _, err := s.pubsub.publish(kindChannel, ch, []byte(n.event)); err != nil {
				s.opts.Logger.Warn("keyspace notification not published", "err", err)
			}
		}
		if flags&notifyKeyevent != 0 {
			ch := []byte("__keyevent@" + dbs + "__:" + n.event)
			if _, err := s.pubsub.publish(kindChannel, ch, n.key); err != nil {
				s.opts.Logger.Warn("keyspace notification not published", "err", err)
			}
		}
	}
}

// notesOf returns the notifications of a command's events when
// notify-keyspace-events is on, nil otherwise (the usual case: no cost).
// v is the state the events were decided on (before them), for "new"; nil
// when it is not at hand (a served blocked client).
func (s *Server) notesOf(cmd string, args [][]byte, db uint8, events []codec.Event, v *materialize.View) []note {
	flags := s.notify.Load()
	if flags == 0 {
		return nil
	}
	var created map[string]bool
	if flags&notifyNew != 0 && v != nil {
		created = createdKeys(v, events)
	}
	notes := notesFor(cmd, args, db, events, created)
	switch cmd {
	case "xreadgroup", "xclaim", "xautoclaim":
		if v != nil {
			notes = append(notes, createdConsumers(v, db, events)...)
		}
	}
	return notes
}

// createdConsumers returns an xgroup-createconsumer notification for each
// consumer events create (XREADGROUP, XCLAIM and XAUTOCLAIM create the
// consumer they name, as Redis's streamCreateConsumer notifies).
func createdConsumers(v *materialize.View, db uint8, events []codec.Event) []note {
	var out []note
	seen := map[string]bool{}
	for _, e := range events {
		if e.Op != codec.OpConsumerSet || len(e.Args) < 2 {
			continue
		}
		id := string(e.Key) + "\x00" + string(e.Args[0]) + "\x00" + string(e.Args[1])
		if seen[id] {
			continue
		}
		seen[id] = true
		if ok, err := groups.ConsumerExists(v, e.DB, e.Key, e.Args[0], e.Args[1]); err == nil && !ok {
			out = append(out, note{class: notifyStream, event: "xgroup-createconsumer", db: db, key: e.Key})
		}
	}
	return out
}

// missNotes returns the keymiss notifications (class m) of a read-only
// command: one per key argument that v does not hold, as Redis's read
// lookups send them (XREAD looks each stream up twice; OBJECT and MEMORY send none).
// Nil unless m and K or E are on. Write commands' reads of their source
// keys (SINTERSTORE, COPY, ...) send none yet.
func (s *Server) missNotes(cmd *cmdSpec, args [][]byte, db, storage uint8, v *materialize.View) []note {
	flags := s.notify.Load()
	if flags&notifyKeyMiss == 0 || flags&(notifyKeyspace|notifyKeyevent) == 0 || cmd.flags&flagReadonly == 0 || cmd.name == "object" || cmd.name == "memory" {
		return nil
	}
	var out []note
	for _, k := range commandKeys(cmd, args) {
		if _, ok, err := v.Meta(storage, k); err == nil && !ok {
			out = append(out, note{class: notifyKeyMiss, event: "keymiss", db: db, key: k})
		}
	}
	if cmd.name == "xread" {
		out = append(out, out...) // a pass to resolve the IDs, one to read
	}
	return out
}

// createdKeys returns the keys that events write and that do not exist
// (or have expired) in v, the state before them: the keys they create.
func createdKeys(v *materialize.View, events []codec.Event) map[string]bool {
	out := map[string]bool{}
	seen := map[string]bool{}
	for _, e := range events {
		k := string(e.Key)
		if len(e.Key) == 0 || e.Op == codec.OpDelKey || e.Op == codec.OpTTLDel || seen[k] {
			continue
		}
		seen[k] = true
		if _, ok, _, err := v.MetaHeaderForWrite(e.DB, e.Key); err == nil && !ok {
			out[k] = true
		}
	}
	return out
}
