package broker

import (
	_ "embed"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/sediment-dev/sediment/command"
)

// The ACL's view of the command table: each command's and subcommand's
// arity, categories and key specs' flags (whence the permissions its keys
// need), as Redis 7.0 defines them (acl_commands.tsv, Redis's COMMAND
// INFO, checked against redis-server by TestACLTableMatchesRedis), and an
// ID for each, the bit of a user's command bitmap (acl.go).

//go:embed acl_commands.tsv
var aclTableTSV string

// aclCategories are Redis 7.0's ACL categories in ACL CAT's order; a
// category's bit is 1 << its index.
var aclCategories = []string{"keyspace", "read", "write", "set", "sortedset", "list", "hash", "string", "bitmap",
	"hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking", "dangerous", "connection",
	"transaction", "scripting"}

// keyPerm is the permission a key of a command needs: read (Redis's key
// spec ACCESS flag), write (INSERT, UPDATE or DELETE), both, or neither
// (the key must still match a pattern).
type keyPerm uint8

const (
	permRead keyPerm = 1 << iota
	permWrite
)

// keyFlags are a key spec's flags, Redis 7.0's CMD_KEY_* (COMMAND INFO's
// key specs, COMMAND GETKEYSANDFLAGS), in the order Redis replies them.
type keyFlags uint16

const (
	keyRO keyFlags = 1 << iota
	keyRW
	keyOW
	keyRM
	keyAccess
	keyUpdate
	keyInsert
	keyDelete
	keyNotKey
	keyIncomplete
	keyVariableFlags
)

// keyFlagNames are the keyFlags' names, bit i's at index i.
var keyFlagNames = []string{"RO", "RW", "OW", "RM", "access", "update", "insert", "delete", "not_key", "incomplete", "variable_flags"}

// names returns f's names in Redis's reply order.
func (f keyFlags) names() []string {
	var out []string
	for i, n := range keyFlagNames {
		if f&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// perm is the permission a key with flags f needs.
func (f keyFlags) perm() keyPerm {
	var p keyPerm
	if f&keyAccess != 0 {
		p |= permRead
	}
	if f&(keyInsert|keyUpdate|keyDelete) != 0 {
		p |= permWrite
	}
	return p
}

// aclCmd is one command or subcommand as the ACL sees it.
type aclCmd struct {
	id     int
	name   string // "get", "config|get"
	arity  int    // Redis's, a subcommand's own (COMMAND GETKEYS checks it)
	cats   uint32
	parent *aclCmd   // of a subcommand
	subs   []*aclCmd // of a container
	// specs are its key specs' flags, in order. With keyVariableFlags
	// (SET, BITFIELD) a key's flags depend on the arguments (keyFlags).
	specs []keyFlags
}

type aclTable struct {
	cmds   []*aclCmd          // by id
	byName map[string]*aclCmd // "get", "config|get"
}

var (
	aclTableOnce sync.Once
	aclTab       *aclTable
)

// acls returns the ACL table, built on first use from the command table
// (complete once the init functions ran).
func acls() *aclTable {
	aclTableOnce.Do(func() { aclTab = buildACLTable() })
	return aclTab
}

type aclRow struct {
	arity int
	cats  uint32
	specs []keyFlags
}

// parseACLTable reads acl_commands.tsv: name, arity, categories (comma
// separated), key specs (comma separated, each its flags separated by
// spaces). It panics on a flag it does not know: the table and the code
// disagree.
func parseACLTable(tsv string) map[string]aclRow {
	rows := map[string]aclRow{}
	for _, line := range strings.Split(tsv, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.Split(line, "\t")
		var r aclRow
		r.arity, _ = strconv.Atoi(f[1])
		for _, c := range strings.Split(f[2], ",") {
			if i := slices.Index(aclCategories, c); i >= 0 {
				r.cats |= 1 << i
			}
		}
		if len(f) > 3 && f[3] != "" {
			for _, s := range strings.Split(f[3], ",") {
				var kf keyFlags
				for _, name := range strings.Fields(s) {
					i := slices.Index(keyFlagNames, name)
					if i < 0 {
						panic("broker: acl_commands.tsv: unknown key-spec flag " + name)
					}
					kf |= 1 << i
				}
				r.specs = append(r.specs, kf)
			}
		}
		rows[f[0]] = r
	}
	return rows
}

func buildACLTable() *aclTable {
	rows := parseACLTable(aclTableTSV)
	t := &aclTable{byName: map[string]*aclCmd{}}
	add := func(name string, c *cmdSpec, parent *aclCmd) *aclCmd {
		a := &aclCmd{id: len(t.cmds), name: name, parent: parent}
		if r, ok := rows[name]; ok {
			a.arity, a.cats, a.specs = r.arity, r.cats, r.specs
		} else {
			a.arity = c.arity
			a.cats, a.specs = derivedACL(c)
		}
		t.cmds = append(t.cmds, a)
		t.byName[name] = a
		return a
	}
	for _, c := range sortedCommands() {
		a := add(c.name, c, nil)
		for _, sub := range subcommands[c.name] {
			a.subs = append(a.subs, add(c.name+"|"+sub, c, a))
		}
	}
	return t
}

// derivedACL gives the commands Redis 7.0 does not have (Redis 7.2–8.10
// stream commands, Sediment's own) categories and one key spec from their
// flags and group: a write command's keys are RW update (they need write),
// a read-only command's RO access (read).
func derivedACL(c *cmdSpec) (uint32, []keyFlags) {
	var cats uint32
	for _, name := range c.derivedCategories() {
		if i := slices.Index(aclCategories, strings.TrimPrefix(name, "@")); i >= 0 {
			cats |= 1 << i
		}
	}
	var f keyFlags
	if c.flags&flagWrite != 0 {
		f |= keyRW | keyUpdate
	}
	if c.flags&flagReadonly != 0 {
		f |= keyRO | keyAccess
	}
	return cats, []keyFlags{f}
}

// aclFor returns the ACL entry of a request's command: its subcommand's
// when it names a known one, else the command's.
func (t *aclTable) aclFor(cmd *cmdSpec, args [][]byte) *aclCmd {
	a := t.byName[cmd.name]
	if len(a.subs) > 0 && len(args) > 1 {
		sub := cmd.name + "|" + command.Lower(args[1])
		if s, ok := t.byName[sub]; ok {
			return s
		}
	}
	return a
}

// categoryNames returns a's categories as "@name", in ACL CAT's order.
func (a *aclCmd) categoryNames() []string {
	var out []string
	for i, c := range aclCategories {
		if a.cats&(1<<i) != 0 {
			out = append(out, "@"+c)
		}
	}
	return out
}

// keyFlags returns the key-spec flags of a request's key i (COMMAND
// GETKEYSANDFLAGS): the first key takes the first key spec's, the others
// the last spec's (a destination after its sources, or the other way
// round, as in COPY, LMOVE, SORT ... STORE, ZUNIONSTORE). With variable
// flags they are Redis 7.0's setGetKeys' and bitfieldGetKeys': SET's key
// is RW access update with GET, else OW update; BITFIELD's is RO access
// while every operation is a complete GET or OVERFLOW, else RW access
// update.
func (a *aclCmd) keyFlags(args [][]byte, i int) keyFlags {
	if len(a.specs) == 0 {
		return 0
	}
	f := a.specs[len(a.specs)-1]
	if i == 0 {
		f = a.specs[0]
	}
	if f&keyVariableFlags == 0 {
		return f
	}
	switch a.name {
	case "set":
		for j := 3; j < len(args); j++ {
			if equalFold(args[j], "GET") {
				return keyRW | keyAccess | keyUpdate
			}
		}
		return keyOW | keyUpdate
	case "bitfield":
		for j := 2; j < len(args); j++ {
			rest := len(args) - j - 1
			switch {
			case equalFold(args[j], "GET") && rest >= 2:
				j += 2
			case equalFold(args[j], "OVERFLOW") && rest >= 1:
				j++
			default:
				return keyRW | keyAccess | keyUpdate
			}
		}
		return keyRO | keyAccess
	}
	return f
}

// keyPerms returns the permission key i of a request needs, from its
// key-spec flags (keyFlags): SET's needs read only with GET, BITFIELD's
// write unless it only reads.
func (a *aclCmd) keyPerms(args [][]byte, i int) keyPerm {
	return a.keyFlags(args, i).perm()
}

// arityOK reports whether a request of n arguments (the command's name
// included) has a's arity, in Redis's sense (cmdSpec.arityOK).
func (a *aclCmd) arityOK(n int) bool {
	if a.arity >= 0 {
		return n == a.arity
	}
	return n >= -a.arity
}

// hasKeys reports whether a has a key spec that is not NOT_KEY (Redis's
// doesCommandHaveKeys, for a subcommand).
func (a *aclCmd) hasKeys() bool {
	return slices.ContainsFunc(a.specs, func(f keyFlags) bool { return f&keyNotKey == 0 })
}
