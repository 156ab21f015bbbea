package broker

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
)

var updateCommandDocs = flag.Bool("update-command-docs", false, "rewrite broker/command_docs.json from redis-server's COMMAND DOCS and COMMAND INFO")

// documentedNames returns the full names of every command and subcommand
// Sediment registers, sorted.
func documentedNames() []string {
	var names []string
	for _, c := range sortedCommands() {
		names = append(names, c.name)
		for _, s := range subcommands[c.name] {
			names = append(names, c.name+"|"+s)
		}
	}
	sort.Strings(names)
	return names
}

// dialRESP3 connects to addr and switches the connection to RESP3.
func dialRESP3(t *testing.T, addr string) *confConn {
	t.Helper()
	c := confDial(t, addr)
	if r, err := c.do("HELLO", "3"); err != nil || r.kind != confMap {
		t.Fatalf("HELLO 3 on %s: %v %v", addr, r, err)
	}
	return c
}

// TestCommandDocsMatchRedis: command_docs.json is redis-server 7.0's
// COMMAND DOCS and COMMAND INFO data for the commands and subcommands
// Sediment registers that Redis has; the others are documented by hand.
// -update-command-docs rewrites the file from the redis-server found.
func TestCommandDocsMatchRedis(t *testing.T) {
	rc := dialRESP3(t, confStartRedis(t))
	info, err := rc.do("INFO", "server")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(info.str, "redis_version:7.0.") && !*updateCommandDocs {
		t.Skip("!!! command_docs.json holds Redis 7.0's documentation; this redis-server is not 7.0: comparison SKIPPED !!!")
	}
	docs := map[string]cmdDoc{}
	var missing []string
	for _, name := range documentedNames() {
		d, ok := redisCommandDoc(t, rc, name)
		if !ok {
			missing = append(missing, name)
			continue
		}
		docs[name] = d
	}
	var hand []string
	for name := range handDocs {
		hand = append(hand, name)
	}
	sort.Strings(hand)
	if !slices.Equal(missing, hand) {
		t.Errorf("the commands redis-server lacks are %v; handDocs documents %v", missing, hand)
	}
	want := encodeCommandDocs(t, docs)
	if *updateCommandDocs {
		if err := os.WriteFile("command_docs.json", want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(want, commandDocsJSON) {
		t.Fatal("command_docs.json differs from redis-server's COMMAND DOCS and COMMAND INFO: go test ./broker -run TestCommandDocsMatchRedis -update-command-docs")
	}
}

// encodeCommandDocs renders docs as command_docs.json: one command a line,
// by name.
func encodeCommandDocs(t *testing.T, docs map[string]cmdDoc) []byte {
	names := make([]string, 0, len(docs))
	for n := range docs {
		names = append(names, n)
	}
	sort.Strings(names)
	var b bytes.Buffer
	b.WriteString("{\n")
	for i, n := range names {
		var line bytes.Buffer
		enc := json.NewEncoder(&line)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(map[string]cmdDoc{n: docs[n]}); err != nil {
			t.Fatal(err)
		}
		l := bytes.TrimSuffix(line.Bytes(), []byte("\n"))
		b.Write(l[1 : len(l)-1]) // "name":{...}
		if i < len(names)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("}\n")
	return b.Bytes()
}

// redisCommandDoc reads name's documentation from redis-server (RESP3),
// failing on any field or shape command_docs.go cannot render; false when
// redis-server does not know name.
func redisCommandDoc(t *testing.T, rc *confConn, name string) (cmdDoc, bool) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s: "+format, append([]any{name}, args...)...)
	}
	infos, err := rc.do("COMMAND", "INFO", name)
	if err != nil || infos.kind != confArray || len(infos.arr) != 1 {
		fail("COMMAND INFO: %v %v", infos, err)
	}
	info := infos.arr[0]
	if info.kind == confNull {
		return cmdDoc{}, false
	}
	docs, err := rc.do("COMMAND", "DOCS", name)
	if err != nil || docs.kind != confMap || len(docs.arr) != 2 || docs.arr[0].str != name {
		fail("COMMAND DOCS: %v %v", docs, err)
	}
	var d cmdDoc
	m := docs.arr[1]
	want := func(r confReply, k confKind, what string) confReply {
		t.Helper()
		if r.kind != k {
			fail("%s is %v", what, r)
		}
		return r
	}
	simples := func(r confReply, what string) []string {
		t.Helper()
		var out []string
		for _, e := range want(r, confSet, what).arr {
			out = append(out, want(e, confSimple, what).str)
		}
		return out
	}
	var args func(r confReply) []cmdArg
	args = func(r confReply) []cmdArg {
		var out []cmdArg
		for _, e := range want(r, confArray, "arguments").arr {
			var a cmdArg
			hasKSI := false
			want(e, confMap, "argument")
			for i := 0; i < len(e.arr); i += 2 {
				k, v := e.arr[i].str, e.arr[i+1]
				switch k {
				case "name":
					a.Name = want(v, confBulk, k).str
				case "type":
					a.Type = want(v, confBulk, k).str
				case "key_spec_index":
					a.KeySpecIndex, hasKSI = int(want(v, confInt, k).n), true
				case "token":
					a.Token = want(v, confBulk, k).str
				case "summary":
					a.Summary = want(v, confBulk, k).str
				case "since":
					a.Since = want(v, confBulk, k).str
				case "deprecated_since":
					a.DeprecatedSince = want(v, confBulk, k).str
				case "flags":
					a.Flags = simples(v, k)
				case "arguments":
					a.Arguments = args(v)
				default:
					fail("argument field %q", k)
				}
			}
			if hasKSI != (a.Type == "key") {
				fail("argument %s of type %s: key_spec_index present %v (command_docs.go gives one to the key arguments only)", a.Name, a.Type, hasKSI)
			}
			if (a.Arguments != nil) != (a.Type == "oneof" || a.Type == "block") {
				fail("argument %s of type %s: nested arguments %v", a.Name, a.Type, a.Arguments)
			}
			out = append(out, a)
		}
		return out
	}
	want(m, confMap, "docs")
	for i := 0; i < len(m.arr); i += 2 {
		k, v := m.arr[i].str, m.arr[i+1]
		switch k {
		case "summary":
			d.Summary = want(v, confBulk, k).str
		case "since":
			d.Since = want(v, confBulk, k).str
		case "group":
			d.Group = want(v, confBulk, k).str
		case "complexity":
			d.Complexity = want(v, confBulk, k).str
		case "doc_flags":
			d.DocFlags = simples(v, k)
		case "deprecated_since":
			d.DeprecatedSince = want(v, confBulk, k).str
		case "replaced_by":
			d.ReplacedBy = want(v, confBulk, k).str
		case "history":
			for _, h := range want(v, confSet, k).arr {
				if want(h, confArray, k); len(h.arr) != 2 {
					fail("history entry %v", h)
				}
				d.History = append(d.History, [2]string{want(h.arr[0], confBulk, k).str, want(h.arr[1], confBulk, k).str})
			}
		case "arguments":
			d.Arguments = args(v)
		case "subcommands":
			// Each subcommand is documented under its own name.
			want(v, confMap, k)
		default:
			fail("COMMAND DOCS field %q", k)
		}
	}

	if want(info, confArray, "COMMAND INFO entry"); len(info.arr) != 10 {
		fail("COMMAND INFO entry %v", info)
	}
	for _, tip := range want(info.arr[7], confSet, "tips").arr {
		d.Tips = append(d.Tips, want(tip, confBulk, "tip").str)
	}
	for _, ks := range want(info.arr[8], confSet, "key specs").arr {
		var spec keySpec
		want(ks, confMap, "key spec")
		for i := 0; i < len(ks.arr); i += 2 {
			k, v := ks.arr[i].str, ks.arr[i+1]
			switch k {
			case "notes":
				spec.Notes = want(v, confBulk, k).str
			case "flags":
				spec.Flags = simples(v, k)
			case "begin_search":
				spec.BeginSearch = redisKeySearch(t, name, v)
			case "find_keys":
				spec.FindKeys = redisKeySearch(t, name, v)
			default:
				fail("key spec field %q", k)
			}
		}
		d.KeySpecs = append(d.KeySpecs, spec)
	}
	if strings.Contains(name, "|") {
		d.Arity = int(want(info.arr[1], confInt, "arity").n)
		d.CmdFlags = simples(info.arr[2], "flags")
		keys := []int{int(info.arr[3].n), int(info.arr[4].n), int(info.arr[5].n)}
		if keys[0] != 0 || keys[1] != 0 || keys[2] != 0 {
			d.KeyRange = keys
		}
	}
	return d, true
}

// redisKeySearch reads a key spec's begin_search or find_keys.
func redisKeySearch(t *testing.T, name string, r confReply) keySearch {
	t.Helper()
	var s keySearch
	if r.kind != confMap || len(r.arr) != 4 || r.arr[0].str != "type" || r.arr[2].str != "spec" || r.arr[3].kind != confMap {
		t.Fatalf("%s: key search %v", name, r)
	}
	s.Type = r.arr[1].str
	var fields []string
	spec := r.arr[3].arr
	for i := 0; i < len(spec); i += 2 {
		f, v := spec[i].str, spec[i+1]
		fields = append(fields, f)
		n := int(v.n)
		switch f {
		case "index":
			s.Index = n
		case "keyword":
			s.Keyword = v.str
		case "startfrom":
			s.StartFrom = n
		case "lastkey":
			s.LastKey = n
		case "keystep":
			s.KeyStep = n
		case "limit":
			s.Limit = n
		case "keynumidx":
			s.KeyNumIdx = n
		case "firstkey":
			s.FirstKey = n
		}
		if want := confInt; f == "keyword" {
			want = confBulk
			if v.kind != want {
				t.Fatalf("%s: key search field %s is %v", name, f, v)
			}
		} else if v.kind != want {
			t.Fatalf("%s: key search field %s is %v", name, f, v)
		}
	}
	if want, ok := keySearchFields[s.Type]; !ok || !slices.Equal(fields, want) {
		t.Fatalf("%s: key search of type %s has fields %v, command_docs.go renders %v", name, s.Type, fields, want)
	}
	return s
}

// TestCommandDocsComplete: every command and subcommand Sediment registers
// is documented (from Redis 7.0 or by hand), with a summary, since and
// group (MONITOR, for one, has no complexity); every hand-documented one is registered.
func TestCommandDocsComplete(t *testing.T) {
	docs := commandDocs()
	names := documentedNames()
	for _, name := range names {
		d := docs[name]
		switch {
		case d == nil:
			t.Errorf("%s has no documentation: add it to command_docs.json (-update-command-docs) or, if Redis 7.0 lacks it, to handDocs", name)
		case d.Summary == "" || d.Since == "" || d.Group == "":
			t.Errorf("%s: documentation without summary, since or group: %+v", name, d)
		case strings.Contains(name, "|") && d.Arity == 0:
			t.Errorf("%s: subcommand without arity", name)
		}
	}
	for name := range handDocs {
		if !slices.Contains(names, name) {
			t.Errorf("handDocs documents %s, which is not registered", name)
		}
	}
	for name := range docs {
		if !slices.Contains(names, name) {
			t.Errorf("%s is documented but not registered", name)
		}
	}
	// The hand-documented commands' key specs follow their ACL key flags.
	for _, name := range []string{"xackdel", "xdelex", "xcfgset", "xnack", "xidmprecord"} {
		ks := docs[name].KeySpecs
		if len(ks) != 1 || strings.Join(ks[0].Flags, " ") != "RW update" || ks[0].BeginSearch != (keySearch{Type: "index", Index: 1}) ||
			ks[0].FindKeys != (keySearch{Type: "range", KeyStep: 1}) {
			t.Errorf("%s: key specs %+v, want one RW update spec of key 1", name, ks)
		}
	}
}

// infoDiff is how a command's COMMAND INFO differs from Redis 7.0's: in
// its flags, its key positions (first key, last key, step), and why.
type infoDiff struct {
	flags, keys bool
	why         string
}

// commandInfoDiffers are the commands whose COMMAND INFO flags or key
// positions (Sediment's command table's) differ from Redis 7.0's; those
// fields are left out of their comparison. Their arity and ACL categories
// are Redis's.
var commandInfoDiffers = func() map[string]infoDiff {
	m := map[string]infoDiff{}
	add := func(d infoDiff, names ...string) {
		for _, n := range names {
			m[n] = d
		}
	}
	// Redis gives a container command itself no flags (and XGROUP's and
	// XINFO's keys only to their subcommands); Sediment's table gives it
	// the flags and key positions its dispatcher applies to the whole
	// command.
	add(infoDiff{flags: true, why: "container: the table's flags"}, "acl", "config", "latency", "memory", "pubsub", "slowlog")
	add(infoDiff{flags: true, keys: true, why: "container: the table's flags and key positions"}, "xgroup", "xinfo")
	// Flags the table (command.Flag) does not model.
	add(infoDiff{flags: true, why: "no_auth, allow_busy"}, "auth", "hello", "reset")
	add(infoDiff{flags: true, why: "noscript, loading, stale, no_auth, allow_busy"}, "quit")
	add(infoDiff{flags: true, why: "allow_busy (no scripts to be busy with)"}, "discard", "multi", "unwatch", "watch")
	add(infoDiff{flags: true, why: "skip_slowlog"}, "exec")
	add(infoDiff{flags: true, why: "no_async_loading"}, "bgsave")
	add(infoDiff{flags: true, why: "no_async_loading"}, "save")
	add(infoDiff{flags: true, why: "allow_busy"}, "shutdown")
	add(infoDiff{flags: true, why: "loading, stale"}, "command", "echo", "info", "select", "time")
	add(infoDiff{flags: true, why: "pubsub"}, "psubscribe", "punsubscribe", "subscribe", "unsubscribe", "publish")
	add(infoDiff{flags: true, why: "noscript on a blocking command (no scripts)"}, "blmove", "brpoplpush", "blpop", "brpop", "bzpopmax", "bzpopmin")
	// Sediment finds these keys by rule (movableKeyCommands) but does not
	// name the flag.
	add(infoDiff{flags: true, why: "movablekeys"}, "blmpop", "bzmpop", "lmpop", "zmpop", "sintercard", "zintercard",
		"zdiff", "zinter", "zunion", "zdiffstore", "zinterstore", "zunionstore")
	add(infoDiff{flags: true, keys: true, why: "movablekeys; step 1 where Redis has 0"}, "xread", "xreadgroup")
	// Shard channels are keys only for Redis Cluster's slots; Sediment has
	// no cluster and checks them as channels (TestKeyPositionsMatchRedis).
	add(infoDiff{flags: true, keys: true, why: "pubsub; shard channels are not keys"}, "spublish", "ssubscribe", "sunsubscribe")
	return m
}()

// sedimentOnlySubcommands are the subcommands Sediment has that Redis 7.0
// lacks (Redis 7.2's): left out of Sediment's container entries when they
// are compared.
var sedimentOnlySubcommands = []string{"client|no-touch", "client|setinfo"}

// normalizeInfo makes a COMMAND INFO entry comparable: its subcommands by
// name (Redis's order follows its hash seed) and without the
// Sediment-only ones; with masks, without the fields commandInfoDiffers
// lists for its command.
func normalizeInfo(r confReply, masks bool) confReply {
	if !r.kind.agg() || len(r.arr) != 10 {
		return r
	}
	r.arr = slices.Clone(r.arr)
	if d, ok := commandInfoDiffers[r.arr[0].str]; ok && masks {
		if d.flags {
			r.arr[2] = confReply{kind: confSimple, str: "<flags>"}
		}
		if d.keys {
			for i := 3; i <= 5; i++ {
				r.arr[i] = confReply{kind: confSimple, str: "<keys>"}
			}
		}
	}
	subs := r.arr[9]
	subs.arr = slices.DeleteFunc(slices.Clone(subs.arr), func(e confReply) bool {
		return e.kind.agg() && len(e.arr) > 0 && slices.Contains(sedimentOnlySubcommands, e.arr[0].str)
	})
	sort.Slice(subs.arr, func(i, j int) bool { return subs.arr[i].arr[0].str < subs.arr[j].arr[0].str })
	r.arr[9] = subs
	return r
}

// normalizeDocs makes a COMMAND DOCS entry (a map) comparable: its
// subcommands by name, without the Sediment-only ones.
func normalizeDocs(r confReply) confReply {
	if !r.kind.agg() {
		return r
	}
	r.arr = slices.Clone(r.arr)
	for i := 0; i+1 < len(r.arr); i += 2 {
		if r.arr[i].str != "subcommands" {
			continue
		}
		m := r.arr[i+1]
		type pair struct{ k, v confReply }
		var pairs []pair
		for j := 0; j+1 < len(m.arr); j += 2 {
			if !slices.Contains(sedimentOnlySubcommands, m.arr[j].str) {
				pairs = append(pairs, pair{m.arr[j], m.arr[j+1]})
			}
		}
		sort.Slice(pairs, func(a, b int) bool { return pairs[a].k.str < pairs[b].k.str })
		m.arr = nil
		for _, p := range pairs {
			m.arr = append(m.arr, p.k, p.v)
		}
		r.arr[i+1] = m
	}
	return r
}

// TestCommandDocsLikeRedis compares, in RESP2 and RESP3, COMMAND DOCS
// <name> and COMMAND INFO <name> for every command and subcommand both
// redis-server and Sediment have, and plain COMMAND and COMMAND DOCS
// entry by entry. Subcommands are compared by name (Redis's order depends
// on its hash seed) and without the Sediment-only ones; the COMMAND INFO
// fields commandInfoDiffers lists are left out for its commands, and an
// entry of it that no longer differs fails the test.
func TestCommandDocsLikeRedis(t *testing.T) {
	raddr, saddr := confStartRedis(t), newTestServer(t).addr
	for _, proto := range []string{"2", "3"} {
		t.Run("RESP"+proto, func(t *testing.T) {
			rc, sc := confDial(t, raddr), confDial(t, saddr)
			for _, c := range []*confConn{rc, sc} {
				if _, err := c.do("HELLO", proto); err != nil {
					t.Fatal(err)
				}
			}
			do := func(c *confConn, args ...string) confReply {
				t.Helper()
				r, err := c.do(args...)
				if err != nil {
					t.Fatalf("%v: %v", args, err)
				}
				return r
			}
			if v := do(rc, "INFO", "server"); !strings.Contains(v.str, "redis_version:7.0.") {
				t.Skip("!!! Sediment replies as Redis 7.0 does; this redis-server is not 7.0: comparison SKIPPED !!!")
			}
			for _, name := range sedimentOnlySubcommands {
				if r := do(rc, "COMMAND", "INFO", name); r.arr[0].kind.agg() {
					t.Errorf("sedimentOnlySubcommands lists %s, but redis-server has it", name)
				}
			}
			stillDiffers := map[string]bool{}
			compareInfo := func(name string, want, got confReply) {
				t.Helper()
				want, got = normalizeInfo(want, false), normalizeInfo(got, false)
				if want.equal(got) {
					return
				}
				stillDiffers[name] = true
				if w, g := normalizeInfo(want, true), normalizeInfo(got, true); !w.equal(g) {
					t.Errorf("COMMAND INFO %s:\nredis:\n%v\nsediment:\n%v", name, w, g)
				}
			}
			compareDocs := func(name string, want, got confReply) {
				t.Helper()
				if w, g := normalizeDocs(want), normalizeDocs(got); !w.equal(g) {
					t.Errorf("COMMAND DOCS %s:\nredis:\n%v\nsediment:\n%v", name, w, g)
				}
			}
			shared := 0
			for _, name := range documentedNames() {
				want := do(rc, "COMMAND", "INFO", name)
				if want.arr[0].kind == confNull || want.arr[0].kind == confNullBulk {
					continue // Redis 7.0 lacks it
				}
				shared++
				got := do(sc, "COMMAND", "INFO", name)
				if len(got.arr) != 1 {
					t.Fatalf("COMMAND INFO %s: %v", name, got)
				}
				compareInfo(name, want.arr[0], got.arr[0])
				want, got = do(rc, "COMMAND", "DOCS", name), do(sc, "COMMAND", "DOCS", name)
				if len(want.arr) != 2 || len(got.arr) != 2 || !want.arr[0].equal(got.arr[0]) {
					t.Fatalf("COMMAND DOCS %s:\nredis:\n%v\nsediment:\n%v", name, want, got)
				}
				compareDocs(name, want.arr[1], got.arr[1])
			}
			if shared < 250 {
				t.Fatalf("only %d commands and subcommands shared with redis-server", shared)
			}
			for name, d := range commandInfoDiffers {
				if !stillDiffers[name] {
					t.Errorf("commandInfoDiffers lists %s (%s), but its COMMAND INFO now matches Redis's: remove it", name, d.why)
				}
			}

			// Plain COMMAND and COMMAND DOCS: every command, once; the shared
			// ones as above.
			entries := func(r confReply, pairs bool) map[string]confReply {
				m := map[string]confReply{}
				step := 1
				if pairs {
					step = 2
				}
				for i := 0; i < len(r.arr); i += step {
					if pairs {
						m[r.arr[i].str] = r.arr[i+1]
					} else {
						m[r.arr[i].arr[0].str] = r.arr[i]
					}
				}
				return m
			}
			count := int(do(sc, "COMMAND", "COUNT").n)
			rAll, sAll := entries(do(rc, "COMMAND"), false), entries(do(sc, "COMMAND"), false)
			rDocs, sDocs := entries(do(rc, "COMMAND", "DOCS"), true), entries(do(sc, "COMMAND", "DOCS"), true)
			if len(sAll) != count || len(sDocs) != count {
				t.Errorf("COMMAND has %d entries, COMMAND DOCS %d, COMMAND COUNT is %d", len(sAll), len(sDocs), count)
			}
			for name, got := range sAll {
				if want, ok := rAll[name]; ok {
					compareInfo(name, want, got)
				}
			}
			for name, got := range sDocs {
				if want, ok := rDocs[name]; ok {
					compareDocs(name, want, got)
				}
			}
		})
	}
}

// Differential cases for COMMAND INFO and DOCS with several names, unknown
// names and subcommand names (TestConformance and TestConformanceRESP3
// run them). Containers are left out: their subcommands come in Redis's
// hash order (TestCommandDocsLikeRedis compares them).
func init() {
	conformanceCases = append(conformanceCases,
		confCase{name: "command info names", steps: []confStep{
			cc("COMMAND", "INFO", "get", "nosuch", "GET", "SeT"),
			cc("COMMAND", "INFO", "config|get", "XGROUP|CREATE", "xinfo|stream", "client|list"),
			cc("COMMAND", "INFO", "config|", "|get", "get|x", "config|get|x", "config||get", "config|nosuch", ""),
			cc("COMMAND", "INFO", "xadd", "zadd", "set", "xautoclaim", "lpos", "zrangestore", "getex"),
		}},
		confCase{name: "command docs names", steps: []confStep{
			cc("COMMAND", "DOCS", "get", "nosuch", "GET", "xadd"),
			cc("COMMAND", "DOCS", "config|get", "Xgroup|Create", "xinfo|stream", "client|kill"),
			cc("COMMAND", "DOCS", "config|", "|get", "get|x", "config|get|x", "config|nosuch", ""),
			cc("COMMAND", "DOCS", "nosuch"),
			cc("COMMAND", "DOCS", "zadd", "set", "rpoplpush", "xreadgroup", "zrangebyscore", "hello"),
		}},
	)
}
