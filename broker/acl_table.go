package broker

import (
	_ "embed"
	"slices"
	"strings"
	"sync"

	"github.com/sediment-dev/sediment/command"
)

// The ACL's view of the command table: each command's and subcommand's
// categories and the key permissions its keys need, as Redis 7.0 defines
// them (acl_commands.tsv, Redis's COMMAND INFO, checked against
// redis-server by TestACLTableMatchesRedis), and an ID for each, the bit
// of a user's command bitmap (acl.go).

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

// aclCmd is one command or subcommand as the ACL sees it.
type aclCmd struct {
	id     int
	name   string // "get", "config|get"
	cats   uint32
	parent *aclCmd   // of a subcommand
	subs   []*aclCmd // of a container
	// specs are the permissions of its key specs, in order; variable:
	// SET and BITFIELD, whose keys' permissions depend on the arguments.
	specs    []keyPerm
	variable bool
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
	cats     uint32
	specs    []keyPerm
	variable bool
}

func parseACLTable(tsv string) map[string]aclRow {
	rows := map[string]aclRow{}
	for _, line := range strings.Split(tsv, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.Split(line, "\t")
		var r aclRow
		for _, c := range strings.Split(f[1], ",") {
			if i := slices.Index(aclCategories, c); i >= 0 {
				r.cats |= 1 << i
			}
		}
		if len(f) > 2 && f[2] != "" {
			for _, s := range strings.Split(f[2], ",") {
				var p keyPerm
				if strings.Contains(s, "R") {
					p |= permRead
				}
				if strings.Contains(s, "W") {
					p |= permWrite
				}
				r.variable = r.variable || strings.Contains(s, "V")
				r.specs = append(r.specs, p)
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
			a.cats, a.specs, a.variable = r.cats, r.specs, r.variable
		} else {
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
// stream commands, Sediment's own) categories and key permissions from
// their flags and group: write commands' keys need write, read-only
// commands' read.
func derivedACL(c *cmdSpec) (uint32, []keyPerm) {
	var cats uint32
	for _, name := range c.derivedCategories() {
		if i := slices.Index(aclCategories, strings.TrimPrefix(name, "@")); i >= 0 {
			cats |= 1 << i
		}
	}
	var p keyPerm
	if c.flags&flagWrite != 0 {
		p |= permWrite
	}
	if c.flags&flagReadonly != 0 {
		p |= permRead
	}
	return cats, []keyPerm{p}
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

// keyPerms returns the permission each key of a request needs: the first
// key takes the first key spec's, the others the last spec's (a
// destination after its sources, or the other way round, as in COPY,
// LMOVE, SORT ... STORE, ZUNIONSTORE). SET needs read only with GET;
// BITFIELD needs write only with SET or INCRBY (Redis's variable flags).
func (a *aclCmd) keyPerms(args [][]byte, i int) keyPerm {
	if len(a.specs) == 0 {
		return 0
	}
	p := a.specs[len(a.specs)-1]
	if i == 0 {
		p = a.specs[0]
	}
	if !a.variable {
		return p
	}
	switch a.name {
	case "set":
		p = permWrite
		for _, arg := range args[3:] {
			if equalFold(arg, "GET") {
				p |= permRead
			}
		}
	case "bitfield":
		p = permRead
		for _, arg := range args[2:] {
			if equalFold(arg, "SET") || equalFold(arg, "INCRBY") {
				p |= permWrite
			}
		}
	}
	return p
}
