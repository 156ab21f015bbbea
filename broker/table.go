package broker

import (
	"fmt"
	"strings"
)

// cmdFlag mirrors the flags of Redis's command table (src/commands/*.json).
type cmdFlag uint32

const (
	flagWrite cmdFlag = 1 << iota
	flagReadonly
	flagFast
	flagBlocking
	flagAdmin
	flagNoScript
	flagLoading
	flagStale
	flagDenyOOM
)

var flagNames = []struct {
	f    cmdFlag
	name string
}{
	{flagWrite, "write"}, {flagReadonly, "readonly"}, {flagDenyOOM, "denyoom"}, {flagAdmin, "admin"},
	{flagNoScript, "noscript"}, {flagBlocking, "blocking"}, {flagLoading, "loading"}, {flagStale, "stale"}, {flagFast, "fast"},
}

// names returns the flag names in COMMAND INFO's order.
func (f cmdFlag) names() []string {
	var out []string
	for _, fn := range flagNames {
		if f&fn.f != 0 {
			out = append(out, fn.name)
		}
	}
	return out
}

// command is one entry of the command table: the single source for
// dispatch, arity checks, COMMAND INFO/DOCS and docs/commands.md.
type command struct {
	name  string  // lower case
	arity int     // Redis semantics: N exactly, -N at least N (name included)
	flags cmdFlag //
	// first, last, step: key positions as in COMMAND INFO (0 = no keys,
	// last -1 = up to the last argument).
	first, last, step int
	group             string // COMMAND DOCS group: "stream", "string", "generic", "connection", "server"
	summary           string
	since             string
	run               func(x *exec) error
}

// commandTable is the table, keyed by lower-case name. It is filled by
// register calls in init functions and read-only afterwards.
var commandTable = map[string]*command{}

// register adds c to the table. It panics on a duplicate name, as
// net/http.ServeMux.Handle does: that is a programming error.
func register(cmds ...*command) {
	for _, c := range cmds {
		if c.name != strings.ToLower(c.name) {
			panic(fmt.Sprintf("broker: command %q must be lower case", c.name))
		}
		if _, dup := commandTable[c.name]; dup {
			panic(fmt.Sprintf("broker: multiple registrations for %q", c.name))
		}
		commandTable[c.name] = c
	}
}

// lookup returns the command named by name (any case), or nil.
func lookup(name []byte) *command {
	var buf [32]byte
	if len(name) > len(buf) {
		return nil
	}
	lower := buf[:len(name)]
	for i, c := range name {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		lower[i] = c
	}
	return commandTable[string(lower)]
}

// pipelined reports whether the command is a write that never blocks: its
// write is submitted without waiting (exec.writeAsync), so a pipeline's
// consecutive writes commit together.
func (c *command) pipelined() bool { return c.flags&flagWrite != 0 && c.flags&flagBlocking == 0 }

// arityOK reports whether n arguments (name included) satisfy arity.
func (c *command) arityOK(n int) bool {
	if c.arity >= 0 {
		return n == c.arity
	}
	return n >= -c.arity
}
