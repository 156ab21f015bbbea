package broker

import (
	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/command/hash"
	"github.com/sediment-dev/sediment/command/key"
	"github.com/sediment-dev/sediment/command/list"
	"github.com/sediment-dev/sediment/command/set"
	"github.com/sediment-dev/sediment/command/str"
	"github.com/sediment-dev/sediment/command/stream"
	"github.com/sediment-dev/sediment/command/zset"
	"github.com/sediment-dev/sediment/keyspace"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/streams"
)

// The command families that live in command packages (the others are
// still broker handlers, moving there one family at a time).
func init() {
	registerSpecs(str.Specs()...)
	registerSpecs(hash.Specs()...)
	registerSpecs(set.Specs()...)
	registerSpecs(list.Specs()...)
	registerSpecs(zset.Specs()...)
	registerSpecs(key.Specs()...)
	registerSpecs(stream.Specs()...)
}

// registerSpecs adds command packages' specs to the table. Each request
// runs with a command.Ctx whose runtime is its exec: the reply renders into
// the connection's writer (or EXEC's buffer), writes go through the
// connection's write path (or EXEC's transaction).
func registerSpecs(specs ...command.Spec) {
	for _, sp := range specs {
		run := sp.Run
		register(&cmdSpec{name: sp.Name, arity: sp.Arity, flags: sp.Flags, first: sp.First, last: sp.Last, step: sp.Step,
			group: sp.Group, since: sp.Since, summary: sp.Summary, blockOption: sp.BlockOption,
			run: func(x *exec) error {
				lim := command.Limits{MaxBulkLen: x.c.rd.lim.MaxBulkLen, Databases: x.c.s.opts.Databases}
				return run(command.InitCtx(&x.ctx, x.args, x.db(), x.storageDB(), uint64(x.c.id), x.reply(), lim, execRuntime{x}))
			}})
	}
}

// execRuntime is the command.Runtime of one request.
type execRuntime struct{ x *exec }

func (r execRuntime) View() *materialize.View { return r.x.view() }

func (r execRuntime) Guard() command.Guard { return &clientGuard{c: r.x.c} }

func (r execRuntime) ScanCursors() *keyspace.ScanCursors { return &r.x.c.s.scans }

func (r execRuntime) StreamConfig() streams.Config { return *r.x.c.s.streamCfg.Load() }

// Write submits a pipelinable write without waiting (its reply runs when
// the connection drains); any other write waits for its commit.
func (r execRuntime) Write(decide func(v *materialize.View) ([]codec.Event, error), reply func()) error {
	if r.x.cmd.pipelined(r.x.args) {
		return r.x.writeAsync(decide, reply)
	}
	if err := r.x.write(decide); err != nil {
		return err
	}
	reply()
	return nil
}
