package broker

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/feed"
)

// feedModel is a change-feed consumer's copy of the keys: it applies the
// payloads of snapshots, CHANGES and the live feed with one code path, as
// docs/change-feed.md tells a consumer to, and is then compared with the
// server (compareModel).
type feedModel struct {
	keys map[modelKey]*modelValue
	// errs are inconsistencies met while applying (an element count that
	// a set-meta contradicts, a copy from a key the model lacks).
	errs []string
}

type modelKey struct {
	db  int
	key string
}

type modelValue struct {
	typ      string
	expireAt int64
	count    uint64 // the metadata's element count (stream: length)
	str      string
	hash     map[string]string
	set      map[string]bool
	zset     map[string]float64
	list     map[int64]string
	entries  map[codec.ID][]string
	groups   map[string]*modelGroup
}

type modelGroup struct {
	last      codec.ID
	consumers map[string]bool
	pel       map[codec.ID]codec.PELEntry
}

func newFeedModel() *feedModel { return &feedModel{keys: map[modelKey]*modelValue{}} }

func (m *feedModel) errorf(format string, args ...any) {
	if len(m.errs) < 20 {
		m.errs = append(m.errs, fmt.Sprintf(format, args...))
	}
}

func (v *modelValue) clone() *modelValue {
	n := *v
	n.hash, n.set, n.zset, n.list = maps.Clone(v.hash), maps.Clone(v.set), maps.Clone(v.zset), maps.Clone(v.list)
	n.entries = maps.Clone(v.entries)
	if v.groups != nil {
		n.groups = map[string]*modelGroup{}
		for name, g := range v.groups {
			n.groups[name] = &modelGroup{last: g.last, consumers: maps.Clone(g.consumers), pel: maps.Clone(g.pel)}
		}
	}
	return &n
}

// size is the number of elements v holds, for its type.
func (v *modelValue) size() int {
	switch v.typ {
	case "hash":
		return len(v.hash)
	case "set":
		return len(v.set)
	case "zset":
		return len(v.zset)
	case "list":
		return len(v.list)
	case "stream":
		return len(v.entries)
	}
	return 0
}

func (m *feedModel) value(k modelKey) *modelValue {
	v := m.keys[k]
	if v == nil {
		v = &modelValue{hash: map[string]string{}, set: map[string]bool{}, zset: map[string]float64{}, list: map[int64]string{},
			entries: map[codec.ID][]string{}, groups: map[string]*modelGroup{}}
		m.keys[k] = v
	}
	return v
}

func (v *modelValue) group(name string) *modelGroup {
	g := v.groups[name]
	if g == nil {
		g = &modelGroup{consumers: map[string]bool{}, pel: map[codec.ID]codec.PELEntry{}}
		v.groups[name] = g
	}
	return g
}

// apply applies one payload.
func (m *feedModel) apply(t testing.TB, payload []byte) {
	t.Helper()
	msg, err := feed.Decode(payload)
	if err != nil {
		t.Fatalf("%v: %s", err, payload)
	}
	if msg.Truncated {
		t.Fatalf("a truncated event: %s", payload)
	}
	m.applyMsg(t, msg)
}

func (m *feedModel) applyMsg(t testing.TB, msg feed.Message) {
	t.Helper()
	if msg.DB == nil {
		t.Fatalf("unexpected db-wide event %s", msg.Op)
	}
	key, err := msg.KeyBytes()
	if err != nil {
		t.Fatal(err)
	}
	args, err := msg.ArgBytes()
	if err != nil {
		t.Fatal(err)
	}
	k := modelKey{*msg.DB, string(key)}
	id := func(b []byte) codec.ID {
		x, err := codec.DecodeIDArg(b)
		if err != nil {
			t.Fatalf("%s: %v", msg.Op, err)
		}
		return x
	}
	switch msg.Op {
	case "set-meta":
		md, err := codec.DecodeMeta(args[0])
		if err != nil {
			t.Fatal(err)
		}
		v := m.value(k)
		v.typ, v.expireAt, v.count = md.Type.String(), md.ExpireAtMs, md.Count
		switch md.Type {
		case codec.TypeString:
			v.str = string(md.Value)
		case codec.TypeStream:
			v.count = md.Stream.Length
		}
		if md.Type != codec.TypeString && uint64(v.size()) != v.count {
			m.errorf("seq %d: %s %q: set-meta says %d elements, the model has %d", msg.Seq, v.typ, key, v.count, v.size())
		}
	case "del":
		delete(m.keys, k)
	case "hset":
		for i := 0; i+1 < len(args); i += 2 {
			m.value(k).hash[string(args[i])] = string(args[i+1])
		}
	case "hdel":
		for _, f := range args {
			delete(m.value(k).hash, string(f))
		}
	case "sadd":
		for _, a := range args {
			m.value(k).set[string(a)] = true
		}
	case "srem":
		for _, a := range args {
			delete(m.value(k).set, string(a))
		}
	case "zadd":
		for i := 1; i+2 < len(args); i += 3 {
			f, err := codec.DecodeScoreArg(args[i+1])
			if err != nil {
				t.Fatal(err)
			}
			m.value(k).zset[string(args[i])] = f
		}
	case "zrem":
		for i := 1; i+1 < len(args); i += 2 {
			delete(m.value(k).zset, string(args[i]))
		}
	case "lset":
		first, _ := codec.DecodeInt64Arg(args[0])
		for i, e := range args[1:] {
			m.value(k).list[first+int64(i)] = string(e)
		}
	case "ldel":
		first, _ := codec.DecodeInt64Arg(args[0])
		last, _ := codec.DecodeInt64Arg(args[1])
		for p := first; p <= last; p++ {
			delete(m.value(k).list, p)
		}
	case "xadd":
		fv, _, err := codec.XAddFields(args[1:])
		if err != nil {
			t.Fatal(err)
		}
		var fields []string
		for _, f := range fv {
			fields = append(fields, string(f))
		}
		m.value(k).entries[id(args[0])] = fields
	case "xdel":
		for _, a := range args {
			delete(m.value(k).entries, id(a))
		}
	case "xtrim":
		v := m.value(k)
		if len(args) > 2 {
			for _, a := range args[2:] {
				delete(v.entries, id(a))
			}
			break
		}
		first, last := id(args[0]), id(args[1])
		for e := range v.entries {
			if first.Compare(e) <= 0 && e.Compare(last) <= 0 {
				delete(v.entries, e)
			}
		}
	case "group-set":
		g, err := codec.DecodeGroup(args[1])
		if err != nil {
			t.Fatal(err)
		}
		m.value(k).group(string(args[0])).last = g.LastDeliveredID
	case "group-del":
		delete(m.value(k).groups, string(args[0]))
	case "consumer-set":
		m.value(k).group(string(args[0])).consumers[string(args[1])] = true
	case "consumer-del":
		delete(m.value(k).group(string(args[0])).consumers, string(args[1]))
	case "pel-set":
		e, err := codec.DecodePELEntry(args[2])
		if err != nil {
			t.Fatal(err)
		}
		m.value(k).group(string(args[0])).pel[id(args[1])] = e
	case "pel-del":
		delete(m.value(k).group(string(args[0])).pel, id(args[1]))
	case "copy-key":
		src := m.keys[modelKey{int(args[1][0]), string(args[2])}]
		if src == nil {
			m.errorf("seq %d: copy-key %q from %q, which the model lacks", msg.Seq, key, args[2])
			break
		}
		m.keys[k] = src.clone()
	case "ttl-del", "zranks", "idmp-set", "idmp-del", "idmp-state", "idmp-clear", "xnode-set", "xnode-del":
		// Index entries, derived data, idempotent production: not modelled.
	default:
		t.Fatalf("op %s not modelled", msg.Op)
	}
}

// String describes v canonically: type, TTL, metadata count and
// contents in a sorted order.
func (v *modelValue) String() string {
	s := fmt.Sprintf("%s ttl=%d count=%d ", v.typ, v.expireAt, v.count)
	switch v.typ {
	case "string":
		s += fmt.Sprintf("%q", v.str)
	case "hash":
		s += fmt.Sprint(v.hash)
	case "set":
		s += fmt.Sprint(v.set)
	case "zset":
		s += fmt.Sprint(v.zset)
	case "list":
		s += fmt.Sprint(v.list)
	case "stream":
		s += v.streamState()
	}
	return s
}

// diffModels returns how a and b differ.
func diffModels(a, b *feedModel) []string {
	var diffs []string
	for k, v := range a.keys {
		if w := b.keys[k]; w == nil || v.String() != w.String() {
			diffs = append(diffs, fmt.Sprintf("%v:\n  %.400v\n  %.400v", k, v, w))
		}
	}
	for k, w := range b.keys {
		if a.keys[k] == nil {
			diffs = append(diffs, fmt.Sprintf("%v: only in the second: %.400v", k, w))
		}
	}
	return append(append(diffs, a.errs...), b.errs...)
}

// compareModel compares m with the server's keys matching pattern in the
// given dbs: types, values, TTL presence, and a stream's entries, groups,
// consumers and pending entries. A key whose TTL had passed at now reads
// as absent in both. It returns the differences.
func compareModel(t *testing.T, addr string, m *feedModel, pattern string, dbs []int, now int64) []string {
	t.Helper()
	ctx := context.Background()
	var diffs []string
	diff := func(format string, args ...any) {
		if len(diffs) < 30 {
			diffs = append(diffs, fmt.Sprintf(format, args...))
		}
	}
	diffs = append(diffs, m.errs...)
	for _, db := range dbs {
		c := redis.NewClient(&redis.Options{Addr: addr, DB: db, Protocol: 2, DisableIdentity: true, MaxRetries: -1})
		defer c.Close()
		server := map[string]bool{}
		var cursor uint64
		for {
			keys, next, err := c.Scan(ctx, cursor, pattern, 1000).Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				server[k] = true
			}
			if cursor = next; cursor == 0 {
				break
			}
		}
		model := map[string]*modelValue{}
		for k, v := range m.keys {
			if k.db == db && (v.expireAt == 0 || v.expireAt > now) {
				model[k.key] = v
			}
		}
		for k := range server {
			if model[k] == nil {
				diff("db %d: %q is on the server, not in the model", db, k)
			}
		}
		for k, v := range model {
			if !server[k] {
				diff("db %d: %q (%s) is in the model, not on the server", db, k, v.typ)
				continue
			}
			if typ := c.Type(ctx, k).Val(); typ != v.typ {
				diff("db %d: %q is a %s, the model has a %s", db, k, typ, v.typ)
				continue
			}
			if pttl := c.PTTL(ctx, k).Val(); (pttl > 0) != (v.expireAt != 0) {
				diff("db %d: %q: PTTL %v, model expire-at %d", db, k, pttl, v.expireAt)
			}
			var got, want string
			switch v.typ {
			case "string":
				got, want = c.Get(ctx, k).Val(), v.str
			case "hash":
				got, want = fmt.Sprint(c.HGetAll(ctx, k).Val()), fmt.Sprint(v.hash)
			case "set":
				members := c.SMembers(ctx, k).Val()
				sort.Strings(members)
				got, want = fmt.Sprint(members), fmt.Sprint(slices.Sorted(maps.Keys(v.set)))
			case "zset":
				zs := map[string]float64{}
				for _, z := range c.ZRangeWithScores(ctx, k, 0, -1).Val() {
					zs[z.Member.(string)] = z.Score
				}
				got, want = fmt.Sprint(zs), fmt.Sprint(v.zset)
			case "list":
				var elems []string
				for _, p := range slices.Sorted(maps.Keys(v.list)) {
					elems = append(elems, v.list[p])
				}
				got, want = fmt.Sprint(c.LRange(ctx, k, 0, -1).Val()), fmt.Sprint(elems)
			case "stream":
				got, want = streamState(t, c, k), v.streamState()
			}
			if got != want {
				diff("db %d: %s %q:\nserver %.600s\nmodel  %.600s", db, v.typ, k, got, want)
			}
		}
	}
	return diffs
}

// streamState prints a stream as the server has it: entries, then each
// group's last-delivered-id, consumers and pending entries.
func streamState(t *testing.T, c *redis.Client, k string) string {
	ctx := context.Background()
	var s string
	for _, e := range c.XRange(ctx, k, "-", "+").Val() {
		s += e.ID + fmt.Sprint(flatValues(e.Values)) + " "
	}
	groups := c.XInfoGroups(ctx, k).Val()
	sort.Slice(groups, func(i, j int) bool { return groups[i].Name < groups[j].Name })
	for _, g := range groups {
		var consumers []string
		for _, cs := range c.XInfoConsumers(ctx, k, g.Name).Val() {
			consumers = append(consumers, cs.Name)
		}
		sort.Strings(consumers)
		s += fmt.Sprintf("| %s last %s consumers %v pel", g.Name, g.LastDeliveredID, consumers)
		for _, p := range c.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: k, Group: g.Name, Start: "-", End: "+", Count: 1 << 20}).Val() {
			s += fmt.Sprintf(" %s:%s:%d", p.ID, p.Consumer, p.RetryCount)
		}
	}
	return s
}

// flatValues is go-redis's entry map as field=value pairs in field order
// (the model keeps the order, go-redis's map does not).
func flatValues(m map[string]any) []string {
	var out []string
	for _, f := range slices.Sorted(maps.Keys(m)) {
		out = append(out, f+"="+fmt.Sprint(m[f]))
	}
	return out
}

func (v *modelValue) streamState() string {
	var s string
	for _, id := range slices.SortedFunc(maps.Keys(v.entries), codec.ID.Compare) {
		f := v.entries[id]
		m := map[string]any{}
		for i := 0; i+1 < len(f); i += 2 {
			m[f[i]] = f[i+1]
		}
		s += id.String() + fmt.Sprint(flatValues(m)) + " "
	}
	for _, name := range slices.Sorted(maps.Keys(v.groups)) {
		g := v.groups[name]
		s += fmt.Sprintf("| %s last %s consumers %v pel", name, g.last, slices.Sorted(maps.Keys(g.consumers)))
		for _, id := range slices.SortedFunc(maps.Keys(g.pel), codec.ID.Compare) {
			e := g.pel[id]
			s += fmt.Sprintf(" %s:%s:%d", id, e.Consumer, e.DeliveryCount)
		}
	}
	return s
}

// readSnapshot reads a whole snapshot over RESP: CHANGES SNAPSHOT with
// args, then CONTINUE until the cursor is 0, calling between (if set)
// after each page. It returns S, the payloads and the pages read.
func readSnapshot(t *testing.T, c *redis.Client, count int, between func(), args ...any) (uint64, [][]byte, int) {
	t.Helper()
	seq, cursor, payloads := snapshotPage(t, c, append([]any{"CHANGES", "SNAPSHOT", "COUNT", count}, args...)...)
	pages := 1
	for cursor != "0" {
		if between != nil {
			between()
		}
		s, next, p := snapshotPage(t, c, "CHANGES", "SNAPSHOT", "CONTINUE", cursor, "COUNT", count)
		if s != seq {
			t.Fatalf("page %d: sequence %d, the snapshot's is %d", pages, s, seq)
		}
		payloads, cursor = append(payloads, p...), next
		pages++
	}
	return seq, payloads, pages
}

// snapshotPage runs one CHANGES SNAPSHOT and returns [S, cursor, payloads].
func snapshotPage(t testing.TB, c *redis.Client, args ...any) (uint64, string, [][]byte) {
	t.Helper()
	v, err := c.Do(context.Background(), args...).Slice()
	if err != nil || len(v) != 3 {
		t.Fatalf("%v: %v %v", args, v, err)
	}
	var out [][]byte
	for _, p := range v[2].([]any) {
		out = append(out, []byte(p.(string)))
	}
	return uint64(v[0].(int64)), v[1].(string), out
}

// replayFrom reads CHANGES FROM seq with args up to the newest record,
// returning the payloads.
func replayFrom(t *testing.T, c *redis.Client, seq uint64, last uint64, args ...any) [][]byte {
	t.Helper()
	var out [][]byte
	for from := seq; from <= last; {
		next, evs := changes(t, c, append([]any{from, "COUNT", 10000}, args...)...)
		out = append(out, evs...)
		if uint64(next) <= from {
			t.Fatalf("CHANGES FROM %d: next %d", from, next)
		}
		from = uint64(next)
	}
	return out
}

func nowMs() int64 { return time.Now().UnixMilli() }
