package broker

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"slices"
	"sync"

	"github.com/sediment-dev/sediment/command/reply"
)

// COMMAND DOCS, and the parts of COMMAND INFO the command table does not
// hold (tips, key specs, subcommands), as Redis 7.0.15 replies them.
//
// command_docs.json is redis-server 7.0.15's data for every command and
// subcommand Sediment registers that Redis 7.0 has: its COMMAND DOCS
// fields, its COMMAND INFO tips and key specs, and for a subcommand its
// COMMAND INFO arity, flags and key positions. TestCommandDocsMatchRedis
// checks it against redis-server and, with -update-command-docs, rewrites
// it. The commands Redis 7.0 lacks are documented by hand (handDocs), from
// their redis.io pages; their key specs follow from the flags the ACL
// derives for them (derivedACL) and the table's key positions.
//
// A command's COMMAND INFO name, arity, flags, key positions and ACL
// categories come from the command table (and the ACL table), not from
// here.

//go:embed command_docs.json
var commandDocsJSON []byte

// cmdDoc is one command's or subcommand's documentation. The COMMAND DOCS
// fields come first, in the order Redis replies them; an empty one is left
// out of the reply, as Redis leaves out a field it does not have.
type cmdDoc struct {
	Summary         string      `json:"summary,omitempty"`
	Since           string      `json:"since,omitempty"`
	Group           string      `json:"group"`
	Complexity      string      `json:"complexity,omitempty"`
	DocFlags        []string    `json:"doc_flags,omitempty"`
	DeprecatedSince string      `json:"deprecated_since,omitempty"`
	ReplacedBy      string      `json:"replaced_by,omitempty"`
	History         [][2]string `json:"history,omitempty"` // [version, change]
	Arguments       []cmdArg    `json:"arguments,omitempty"`

	// COMMAND INFO's tips and key specs.
	Tips     []string  `json:"tips,omitempty"`
	KeySpecs []keySpec `json:"key_specs,omitempty"`

	// A subcommand's COMMAND INFO arity, flags and first key, last key and
	// step (nil: no keys). A command's come from the command table.
	Arity    int      `json:"arity,omitempty"`
	CmdFlags []string `json:"command_flags,omitempty"`
	KeyRange []int    `json:"key_range,omitempty"`
}

// cmdArg is one argument of a command's COMMAND DOCS. KeySpecIndex is
// replied for the arguments of type "key" only (Redis gives every key
// argument one, and no other argument); Arguments for types "oneof" and
// "block" only.
type cmdArg struct {
	Name            string   `json:"name"`
	Type            string   `json:"type"`
	KeySpecIndex    int      `json:"key_spec_index,omitempty"`
	Token           string   `json:"token,omitempty"`
	Summary         string   `json:"summary,omitempty"`
	Since           string   `json:"since,omitempty"`
	DeprecatedSince string   `json:"deprecated_since,omitempty"`
	Flags           []string `json:"flags,omitempty"` // optional, multiple, multiple_token
	Arguments       []cmdArg `json:"arguments,omitempty"`
}

// keySpec is one key spec of COMMAND INFO.
type keySpec struct {
	Notes       string    `json:"notes,omitempty"`
	Flags       []string  `json:"flags"`
	BeginSearch keySearch `json:"begin_search"`
	FindKeys    keySearch `json:"find_keys"`
}

// keySearch is a key spec's begin_search or find_keys: its type and, flat,
// the fields of its spec that the type has (keySearchFields).
type keySearch struct {
	Type      string `json:"type"`
	Index     int    `json:"index,omitempty"`
	Keyword   string `json:"keyword,omitempty"`
	StartFrom int    `json:"startfrom,omitempty"`
	LastKey   int    `json:"lastkey,omitempty"`
	KeyStep   int    `json:"keystep,omitempty"`
	Limit     int    `json:"limit,omitempty"`
	KeyNumIdx int    `json:"keynumidx,omitempty"`
	FirstKey  int    `json:"firstkey,omitempty"`
}

// keySearchFields are the spec fields of each search type, in Redis's
// reply order ("unknown" has none).
var keySearchFields = map[string][]string{
	"index":   {"index"},
	"keyword": {"keyword", "startfrom"},
	"range":   {"lastkey", "keystep", "limit"},
	"keynum":  {"keynumidx", "firstkey", "keystep"},
	"unknown": nil,
}

// field returns the spec field name's value: an int, or the keyword.
func (s keySearch) field(name string) (int, string) {
	switch name {
	case "index":
		return s.Index, ""
	case "keyword":
		return 0, s.Keyword
	case "startfrom":
		return s.StartFrom, ""
	case "lastkey":
		return s.LastKey, ""
	case "keystep":
		return s.KeyStep, ""
	case "limit":
		return s.Limit, ""
	case "keynumidx":
		return s.KeyNumIdx, ""
	case "firstkey":
		return s.FirstKey, ""
	}
	panic("broker: unknown key spec field " + name)
}

var (
	cmdDocsOnce sync.Once
	cmdDocs     map[string]*cmdDoc
)

// commandDocs returns every command's and subcommand's documentation by
// full name ("get", "config|get"), built on first use (after the init
// functions filled the command table).
func commandDocs() map[string]*cmdDoc {
	cmdDocsOnce.Do(func() { cmdDocs = loadCommandDocs(commandDocsJSON) })
	return cmdDocs
}

// loadCommandDocs decodes command_docs.json and adds handDocs, the key
// specs of the hand-documented commands derived from the table. It panics
// on a malformed file or a command documented twice: the code and its data
// disagree.
func loadCommandDocs(data []byte) map[string]*cmdDoc {
	docs := map[string]*cmdDoc{}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&docs); err != nil {
		panic("broker: command_docs.json: " + err.Error())
	}
	for name, d := range handDocs {
		if _, dup := docs[name]; dup {
			panic("broker: " + name + " is documented in command_docs.json and by hand")
		}
		d := *d
		if c := commandTable[name]; c != nil && c.first > 0 {
			d.KeySpecs = derivedKeySpecs(c)
		}
		docs[name] = &d
	}
	return docs
}

// derivedKeySpecs gives a command Redis 7.0 does not have one key spec:
// the flags the ACL derives for its keys (derivedACL: RW update for a
// write, RO access for a read-only command) over its key positions, as
// Redis words a range (lastkey counts from the first key; -1 is the last
// argument).
func derivedKeySpecs(c *cmdSpec) []keySpec {
	a := acls().byName[c.name]
	if a == nil || len(a.specs) == 0 {
		return nil
	}
	last := c.last
	if last >= 0 {
		last -= c.first
	}
	return []keySpec{{
		Flags:       a.specs[0].names(),
		BeginSearch: keySearch{Type: "index", Index: c.first},
		FindKeys:    keySearch{Type: "range", LastKey: last, KeyStep: c.step},
	}}
}

// docFor returns the documentation of a command or subcommand by full
// name. One without any (TestCommandDocsComplete fails on it) gets the
// table's summary, since and group.
func docFor(name string) *cmdDoc {
	if d := commandDocs()[name]; d != nil {
		return d
	}
	d := &cmdDoc{}
	if c := commandTable[name]; c != nil {
		d.Summary, d.Since, d.Group = c.summary, c.since, c.group
	}
	return d
}

// commandEntry is what COMMAND INFO and DOCS name: a command, or with
// sub a subcommand of a container ("config|get").
type commandEntry struct {
	cmd *cmdSpec
	sub string // lower case; "" for the command itself
}

func (e commandEntry) fullName() string {
	if e.sub == "" {
		return e.cmd.name
	}
	return e.cmd.name + "|" + e.sub
}

// lookupEntry looks a COMMAND INFO or DOCS argument up as Redis 7.0's
// lookupCommandBySds does: "name", or "container|subcommand" (any case);
// anything else ("get|x", "config|", "a|b|c") is unknown.
func lookupEntry(name []byte) (commandEntry, bool) {
	base, sub, hasSub := bytes.Cut(name, []byte("|"))
	c := lookup(base)
	if c == nil {
		return commandEntry{}, false
	}
	if !hasSub {
		return commandEntry{cmd: c}, true
	}
	s := string(bytes.ToLower(sub))
	if !slices.Contains(subcommands[c.name], s) {
		return commandEntry{}, false
	}
	return commandEntry{cmd: c, sub: s}, true
}

// sortedSubcommands returns a container's subcommands by name. Redis
// replies them in its hash table's order, which changes with each
// process's hash seed; Sediment's order is the names'.
func sortedSubcommands(name string) []string {
	return slices.Sorted(slices.Values(subcommands[name]))
}

// commandInfo writes COMMAND INFO's reply for names: an entry for each,
// null for an unknown one; with no names, every command (COMMAND).
func commandInfo(w reply.Writer, names [][]byte) {
	if len(names) == 0 {
		cmds := sortedCommands()
		w.Array(len(cmds))
		for _, c := range cmds {
			writeCommandInfo(w, commandEntry{cmd: c})
		}
		return
	}
	w.Array(len(names))
	for _, n := range names {
		if e, ok := lookupEntry(n); ok {
			writeCommandInfo(w, e)
		} else {
			w.NullBulk()
		}
	}
}

// writeCommandInfo writes one COMMAND INFO entry: name, arity, flags,
// first key, last key, step, ACL categories, tips, key specs and
// subcommands (each an entry of its own). A command's name, arity, flags
// and key positions are the table's, a subcommand's its documentation's.
func writeCommandInfo(w reply.Writer, e commandEntry) {
	name := e.fullName()
	d := docFor(name)
	w.Array(10)
	w.BulkString(name)
	if e.sub == "" {
		c := e.cmd
		w.Int(int64(c.arity))
		writeSimpleSet(w, c.flags.Names())
		w.Int(int64(c.first))
		w.Int(int64(c.last))
		w.Int(int64(c.step))
	} else {
		w.Int(int64(d.Arity))
		writeSimpleSet(w, d.CmdFlags)
		keys := d.KeyRange
		if len(keys) != 3 {
			keys = []int{0, 0, 0}
		}
		for _, k := range keys {
			w.Int(int64(k))
		}
	}
	var cats []string
	if a := acls().byName[name]; a != nil {
		cats = a.categoryNames()
	}
	writeSimpleSet(w, cats)
	w.Set(len(d.Tips)) // tips are bulk strings
	for _, tip := range d.Tips {
		w.BulkString(tip)
	}
	w.Set(len(d.KeySpecs))
	for _, ks := range d.KeySpecs {
		writeKeySpec(w, ks)
	}
	if e.sub != "" || !e.cmd.container {
		w.Set(0) // Redis's empty subcommands are a set, its others an array
		return
	}
	subs := sortedSubcommands(e.cmd.name)
	w.Array(len(subs))
	for _, s := range subs {
		writeCommandInfo(w, commandEntry{cmd: e.cmd, sub: s})
	}
}

func writeKeySpec(w reply.Writer, ks keySpec) {
	n := 3
	if ks.Notes != "" {
		n++
	}
	w.Map(n)
	if ks.Notes != "" {
		w.BulkString("notes")
		w.BulkString(ks.Notes)
	}
	w.BulkString("flags")
	writeSimpleSet(w, ks.Flags)
	w.BulkString("begin_search")
	writeKeySearch(w, ks.BeginSearch)
	w.BulkString("find_keys")
	writeKeySearch(w, ks.FindKeys)
}

func writeKeySearch(w reply.Writer, s keySearch) {
	w.Map(2)
	w.BulkString("type")
	w.BulkString(s.Type)
	w.BulkString("spec")
	fields := keySearchFields[s.Type]
	w.Map(len(fields))
	for _, f := range fields {
		w.BulkString(f)
		if n, str := s.field(f); f == "keyword" {
			w.BulkString(str)
		} else {
			w.Int(int64(n))
		}
	}
}

// writeSimpleSet writes names as a set of simple strings, Redis's shape
// for every list of flags and categories.
func writeSimpleSet(w reply.Writer, names []string) {
	w.Set(len(names))
	for _, n := range names {
		w.Simple(n)
	}
}

// commandDocsReply writes COMMAND DOCS's reply for names: a map from each
// known one's full name to its documentation (unknown names are left
// out); with no names, every command's.
func commandDocsReply(w reply.Writer, names [][]byte) {
	var entries []commandEntry
	if len(names) == 0 {
		for _, c := range sortedCommands() {
			entries = append(entries, commandEntry{cmd: c})
		}
	}
	for _, n := range names {
		if e, ok := lookupEntry(n); ok {
			entries = append(entries, e)
		}
	}
	w.Map(len(entries))
	for _, e := range entries {
		w.BulkString(e.fullName())
		writeCommandDocs(w, e)
	}
}

// writeCommandDocs writes one COMMAND DOCS entry, Redis 7.0's
// addReplyCommandDocs: the fields it has, then a container's subcommands.
func writeCommandDocs(w reply.Writer, e commandEntry) {
	d := docFor(e.fullName())
	container := e.sub == "" && e.cmd.container
	n := 1 // group
	for _, has := range []bool{d.Summary != "", d.Since != "", d.Complexity != "", len(d.DocFlags) > 0,
		d.DeprecatedSince != "", d.ReplacedBy != "", len(d.History) > 0, len(d.Arguments) > 0, container} {
		if has {
			n++
		}
	}
	w.Map(n)
	bulkField(w, "summary", d.Summary)
	bulkField(w, "since", d.Since)
	w.BulkString("group")
	w.BulkString(d.Group)
	bulkField(w, "complexity", d.Complexity)
	if len(d.DocFlags) > 0 {
		w.BulkString("doc_flags")
		writeSimpleSet(w, d.DocFlags)
	}
	bulkField(w, "deprecated_since", d.DeprecatedSince)
	bulkField(w, "replaced_by", d.ReplacedBy)
	if len(d.History) > 0 {
		w.BulkString("history")
		w.Set(len(d.History))
		for _, h := range d.History {
			w.Array(2)
			w.BulkString(h[0])
			w.BulkString(h[1])
		}
	}
	if len(d.Arguments) > 0 {
		w.BulkString("arguments")
		writeCommandArgs(w, d.Arguments)
	}
	if container {
		w.BulkString("subcommands")
		subs := sortedSubcommands(e.cmd.name)
		w.Map(len(subs))
		for _, s := range subs {
			sub := commandEntry{cmd: e.cmd, sub: s}
			w.BulkString(sub.fullName())
			writeCommandDocs(w, sub)
		}
	}
}

// writeCommandArgs writes an argument list, Redis 7.0's
// addReplyCommandArgList.
func writeCommandArgs(w reply.Writer, args []cmdArg) {
	w.Array(len(args))
	for _, a := range args {
		key, nested := a.Type == "key", a.Type == "oneof" || a.Type == "block"
		n := 2
		for _, has := range []bool{key, a.Token != "", a.Summary != "", a.Since != "", a.DeprecatedSince != "", len(a.Flags) > 0, nested} {
			if has {
				n++
			}
		}
		w.Map(n)
		w.BulkString("name")
		w.BulkString(a.Name)
		w.BulkString("type")
		w.BulkString(a.Type)
		if key {
			w.BulkString("key_spec_index")
			w.Int(int64(a.KeySpecIndex))
		}
		bulkField(w, "token", a.Token)
		bulkField(w, "summary", a.Summary)
		bulkField(w, "since", a.Since)
		bulkField(w, "deprecated_since", a.DeprecatedSince)
		if len(a.Flags) > 0 {
			w.BulkString("flags")
			writeSimpleSet(w, a.Flags)
		}
		if nested {
			w.BulkString("arguments")
			writeCommandArgs(w, a.Arguments)
		}
	}
}

// bulkField writes the pair name, v when v is not empty.
func bulkField(w reply.Writer, name, v string) {
	if v != "" {
		w.BulkString(name)
		w.BulkString(v)
	}
}

// handDocs document the commands and subcommands Sediment has that Redis
// 7.0 lacks, written from their redis.io pages in Redis 7.0's shape (no
// display_text; "optional" and "multiple" as argument flags). Their key
// specs are derived (derivedKeySpecs); they have no tips.
var handDocs = map[string]*cmdDoc{
	// Sediment's own (docs/change-feed.md, "Gaps and replay" and
	// "Snapshot, then changes"); no redis.io page.
	"changes": {Summary: "Returns the change-feed events of the retained change log from a sequence number on, or a snapshot of the keys.", Since: "sediment", Group: "server",
		Complexity: "O(N) where N is the number of change-log records read (at most COUNT), or for SNAPSHOT the events returned (at most COUNT) plus the keys looked at (at most 10 per COUNT).",
		Arguments: []cmdArg{{Name: "form", Type: "oneof", Arguments: []cmdArg{
			{Name: "from", Type: "block", Arguments: []cmdArg{{Name: "seq", Type: "integer", Token: "FROM"}, {Name: "count", Type: "integer", Token: "COUNT", Flags: docOptional},
				{Name: "pattern", Type: "pattern", Token: "MATCH", Flags: docOptional}, {Name: "type", Type: "string", Token: "TYPE", Flags: docOptional}}},
			{Name: "snapshot", Type: "block", Arguments: []cmdArg{docToken("snapshot", "SNAPSHOT"), {Name: "page", Type: "oneof", Flags: docOptional, Arguments: []cmdArg{
				{Name: "new", Type: "block", Arguments: []cmdArg{{Name: "pattern", Type: "pattern", Token: "MATCH", Flags: docOptional},
					{Name: "type", Type: "string", Token: "TYPE", Flags: docOptional}, {Name: "db", Type: "integer", Token: "DB", Flags: docOptional}}},
				{Name: "cursor", Type: "integer", Token: "CONTINUE"}}},
				{Name: "count", Type: "integer", Token: "COUNT", Flags: docOptional}}}}}}},
	// https://redis.io/docs/latest/commands/xackdel/
	"xackdel": {
		Summary:    "Acknowledges and conditionally deletes one or multiple entries for a stream consumer group.",
		Since:      "8.2.0",
		Group:      "stream",
		Complexity: "O(1) for each entry ID processed.",
		Arguments:  []cmdArg{docKey("key"), docString("group"), docRefCondition, docIDs},
	},
	// https://redis.io/docs/latest/commands/xdelex/
	"xdelex": {
		Summary:    "Deletes one or multiple entries from the stream.",
		Since:      "8.2.0",
		Group:      "stream",
		Complexity: "O(1) for each single item to delete in the stream, regardless of the stream size.",
		Arguments:  []cmdArg{docKey("key"), docRefCondition, docIDs},
	},
	// https://redis.io/docs/latest/commands/xcfgset/
	"xcfgset": {
		Summary:    "Sets the IDMP configuration parameters for a stream.",
		Since:      "8.6.0",
		Group:      "stream",
		Complexity: "O(1)",
		Arguments: []cmdArg{docKey("key"),
			{Name: "idmp-duration", Type: "integer", Token: "IDMP-DURATION", Flags: docOptional},
			{Name: "idmp-maxsize", Type: "integer", Token: "IDMP-MAXSIZE", Flags: docOptional}},
	},
	// https://redis.io/docs/latest/commands/xidmprecord/
	"xidmprecord": {
		Summary:    "An internal command for setting IDMP metadata on an existing stream message.",
		Since:      "8.6.2",
		Group:      "stream",
		Complexity: "O(1)",
		Arguments:  []cmdArg{docKey("key"), docString("pid"), docString("iid"), docString("stream-id")},
	},
	// https://redis.io/docs/latest/commands/xnack/
	"xnack": {
		Summary:    "Releases pending messages back to the group's PEL without acknowledging them, making them available for re-delivery.",
		Since:      "8.8.0",
		Group:      "stream",
		Complexity: "O(1) for each message ID processed.",
		Arguments: []cmdArg{docKey("key"), docString("group"),
			{Name: "mode", Type: "oneof", Arguments: []cmdArg{docToken("silent", "SILENT"), docToken("fail", "FAIL"), docToken("fatal", "FATAL")}},
			docIDs,
			{Name: "count", Type: "integer", Token: "RETRYCOUNT", Flags: docOptional},
			{Name: "force", Type: "pure-token", Token: "FORCE", Flags: docOptional}},
	},
	// https://redis.io/docs/latest/commands/client-setinfo/
	"client|setinfo": {
		Summary:    "Sets information specific to the client or connection.",
		Since:      "7.2.0",
		Group:      "connection",
		Complexity: "O(1)",
		Arguments: []cmdArg{{Name: "attr", Type: "oneof", Arguments: []cmdArg{
			{Name: "libname", Type: "string", Token: "lib-name"},
			{Name: "libver", Type: "string", Token: "lib-ver"}}}},
		Arity:    4,
		CmdFlags: []string{"noscript", "loading", "stale"},
	},
	// https://redis.io/docs/latest/commands/client-no-touch/
	"client|no-touch": {
		Summary:    "Controls whether commands sent by the client affect the LRU/LFU of accessed keys.",
		Since:      "7.2.0",
		Group:      "connection",
		Complexity: "O(1)",
		Arguments:  []cmdArg{{Name: "enabled", Type: "oneof", Arguments: []cmdArg{docToken("on", "ON"), docToken("off", "OFF")}}},
		Arity:      3,
		CmdFlags:   []string{"noscript", "loading", "stale"},
	},
}

var (
	docOptional = []string{"optional"}
	// docRefCondition is XDELEX's and XACKDEL's [KEEPREF | DELREF | ACKED].
	docRefCondition = cmdArg{Name: "condition", Type: "oneof", Flags: docOptional,
		Arguments: []cmdArg{docToken("keepref", "KEEPREF"), docToken("delref", "DELREF"), docToken("acked", "ACKED")}}
	// docIDs is IDS numids id [id ...].
	docIDs = cmdArg{Name: "ids", Type: "block", Token: "IDS",
		Arguments: []cmdArg{{Name: "numids", Type: "integer"}, {Name: "id", Type: "string", Flags: []string{"multiple"}}}}
)

func docKey(name string) cmdArg        { return cmdArg{Name: name, Type: "key"} }
func docString(name string) cmdArg     { return cmdArg{Name: name, Type: "string"} }
func docToken(name, tok string) cmdArg { return cmdArg{Name: name, Type: "pure-token", Token: tok} }
