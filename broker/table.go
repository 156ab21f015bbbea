package broker

import (
	"fmt"
	"strings"

	"github.com/sediment-dev/sediment/command"
)

// cmdFlag is the command table's flags (command.Flag).
type cmdFlag = command.Flag

const (
	flagWrite    = command.FlagWrite
	flagReadonly = command.FlagReadonly
	flagFast     = command.FlagFast
	flagBlocking = command.FlagBlocking
	flagAdmin    = command.FlagAdmin
	flagNoScript = command.FlagNoScript
	flagLoading  = command.FlagLoading
	flagStale    = command.FlagStale
	flagDenyOOM  = command.FlagDenyOOM
	flagNoMulti  = command.FlagNoMulti
)

// command is one entry of the command table: the single source for
// dispatch, arity checks, COMMAND INFO/DOCS and docs/commands.md.
type cmdSpec struct {
	name  string  // lower case
	arity int     // Redis semantics: N exactly, -N at least N (name included)
	flags cmdFlag //
	// first, last, step: key positions as in COMMAND INFO (0 = no keys,
	// last -1 = up to the last argument).
	first, last, step int
	group             string // COMMAND DOCS group ("stream", "string", "generic", "connection", "server"): a fallback, as is summary, for the docs command_docs.json and handDocs hold
	summary           string
	since             string
	blockOption       string // see command.Spec.BlockOption
	run               func(x *exec) error
	// idx is the command's place in each server's counters
	// (cmdStats.byCmd: INFO commandstats); a container command's
	// subcommands keep theirs in cmdStats.m.
	idx int
	// container: Redis names the command with its subcommand
	// ("client|info") in INFO, CLIENT LIST and errors (subcommands).
	container bool
	// ownGoroutine: the command puts its connection in a mode that waits
	// on its own (pushes, MONITOR) or runs long (SAVE, SHUTDOWN), so an
	// event loop hands the connection off before it runs (loopRuns).
	ownGoroutine bool
	// attrs are its metric attributes (telemetry.go).
	attrs cmdAttrs
}

// commandTable is the table, keyed by lower-case name. It is filled by
// register calls in init functions and read-only afterwards.
var commandTable = map[string]*cmdSpec{}

// register adds c to the table. It panics on a duplicate name, as
// net/http.ServeMux.Handle does: that is a programming error.
func register(cmds ...*cmdSpec) {
	for _, c := range cmds {
		if c.name != strings.ToLower(c.name) {
			panic(fmt.Sprintf("broker: command %q must be lower case", c.name))
		}
		if _, dup := commandTable[c.name]; dup {
			panic(fmt.Sprintf("broker: multiple registrations for %q", c.name))
		}
		c.idx = len(commandTable)
		c.attrs = newCmdAttrs(c.name)
		c.container = len(subcommands[c.name]) > 0
		commandTable[c.name] = c
	}
}

// lookup returns the command named by name (any case), or nil.
func lookup(name []byte) *cmdSpec {
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

// pipelinedRequest reports whether the request args, of the command cmd
// (nil: unknown), is a write conn.execute submits without waiting for the
// writes before it (pipelined).
func pipelinedRequest(cmd *cmdSpec, args [][]byte) bool {
	return cmd != nil && cmd.arityOK(len(args)) && cmd.pipelined(args)
}

// pipelined reports whether the request args of the command is a write
// that cannot block: its write is submitted without waiting
// (exec.writeAsync), so a pipeline's consecutive writes commit together.
// A command that blocks only with an option (blockOption) is pipelined
// when no argument spells that option (a key of that name makes it wait,
// which is only slower).
func (c *cmdSpec) pipelined(args [][]byte) bool {
	return c.flags&flagWrite != 0 && !c.mayBlock(args)
}

// mayBlock reports whether the request args of the command may wait: a
// blocking command, but one that blocks only with an option (blockOption)
// when an argument spells it.
func (c *cmdSpec) mayBlock(args [][]byte) bool {
	if c.flags&flagBlocking == 0 {
		return false
	}
	if c.blockOption == "" {
		return true
	}
	for _, a := range args[1:] {
		if equalFold(a, c.blockOption) {
			return true
		}
	}
	return false
}

// arityOK reports whether n arguments (name included) satisfy arity.
func (c *cmdSpec) arityOK(n int) bool {
	if c.arity >= 0 {
		return n == c.arity
	}
	return n >= -c.arity
}
