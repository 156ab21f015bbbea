// Package command is the command runtime: what a command family package
// declares (Spec) and what a command runs against (Ctx). It holds no
// connection: the broker builds a Ctx for each request, inside a
// transaction or not, and renders the reply for the connection.
//
// A command's Run parses its arguments (pure: no reads), then either
// replies from a read of Ctx.View (read-only commands, which never wait for
// the writer), or hands Ctx.Write a decision — run on the writer goroutine
// against a View that sees every earlier write, returning change events or
// an error — and a reply function run once the write has committed. An
// error returned by Run or by the decision is the command's reply (mapped
// to Redis's words by the broker) and writes nothing.
//
// Design: docs/rfcs/20261123_command_runtime.md.
package command

import (
	"time"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/command/reply"
	"github.com/sediment-dev/sediment/keyspace"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/streams"
)

// Flag mirrors the flags of Redis's command table (src/commands/*.json).
type Flag uint32

// The flags, as COMMAND INFO names them.
const (
	FlagWrite Flag = 1 << iota
	FlagReadonly
	FlagFast
	FlagBlocking
	FlagAdmin
	FlagNoScript
	FlagLoading
	FlagStale
	FlagDenyOOM
	FlagNoMulti // refused inside MULTI ("ERR Command not allowed inside a transaction")
)

var flagNames = []struct {
	f    Flag
	name string
}{
	{FlagWrite, "write"}, {FlagReadonly, "readonly"}, {FlagDenyOOM, "denyoom"}, {FlagAdmin, "admin"},
	{FlagNoScript, "noscript"}, {FlagBlocking, "blocking"}, {FlagLoading, "loading"}, {FlagStale, "stale"}, {FlagFast, "fast"},
	{FlagNoMulti, "no_multi"},
}

// Names returns the flag names in COMMAND INFO's order.
func (f Flag) Names() []string {
	var out []string
	for _, fn := range flagNames {
		if f&fn.f != 0 {
			out = append(out, fn.name)
		}
	}
	return out
}

// Spec is one command of the table: the single source for dispatch, arity
// checks, COMMAND INFO/DOCS and docs/commands.md.
type Spec struct {
	Name  string // lower case
	Arity int    // Redis semantics: N exactly, -N at least N (name included)
	Flags Flag
	// First, Last, Step: key positions as in COMMAND INFO (0 = no keys,
	// Last -1 = up to the last argument).
	First, Last, Step int
	Group             string // COMMAND DOCS group: "string", "hash", "generic", ...
	Since             string // the Redis version that introduced it
	Summary           string
	// BlockOption, for a blocking command that blocks only when given an
	// option (XREADGROUP's BLOCK), names it: a request without it is a
	// plain write, which a pipeline submits without waiting.
	BlockOption string
	Run         func(x *Ctx) error
}

// Runtime is what the broker provides a Ctx with.
type Runtime interface {
	// View returns the state the command reads: the latest committed state,
	// or inside EXEC the transaction's so far.
	View() *materialize.View
	// Write runs decide on the write path, then reply once the write has
	// committed (outside EXEC, possibly after later pipelined requests were
	// read). decide's error is the command's reply instead. Before decide
	// runs, the Runtime resolves its Ctx's DB on decide's View
	// (Ctx.Resolve).
	Write(decide func(v *materialize.View) ([]codec.Event, error), reply func()) error
	// InTxn reports whether the command runs inside EXEC, where a
	// blocking command acts as if its timeout passed at once.
	InTxn() bool
	// Block waits, for a read that found nothing (XREAD BLOCK), until try
	// returns true, the timeout passes (0: none) or the client leaves
	// (served false then). It first sends the replies of the requests
	// before it. try runs after each wake of one of keys (in the client's
	// db: new entries, the key deleted, a flush or a swap), on another
	// goroutine but one call at a time; it only reads.
	Block(keys [][]byte, timeout time.Duration, try func() bool) (served bool, err error)
	// WriteBlock is Write for a consuming read that may block (XREADGROUP
	// BLOCK, BLPOP): decide returns its events, or a Waiter to queue within that
	// same decision, so that no write commits between its check and the
	// queueing. A queued Waiter is served by the writer (Waiter.Serve);
	// WriteBlock waits for that up to timeout (0: forever) or until the
	// client leaves, and reports whether a Waiter was queued and served.
	WriteBlock(decide func(v *materialize.View) ([]codec.Event, *Waiter, error), timeout time.Duration) (queued, served bool, err error)
	// Guard returns a Guard for a long read of the keyspace.
	Guard() Guard
	// ScanCursors returns the server's table of SCAN positions.
	ScanCursors() *keyspace.ScanCursors
	// StreamConfig returns the server's stream settings (CONFIG).
	StreamConfig() streams.Config
}

// Waiter is a blocked consumer queued on Keys of the client's db: a group
// reader (XREADGROUP BLOCK ... >, Group names its consumer group) or, with
// Pop, a popping command (BLPOP, BLMOVE, BLMPOP, ...). After each write
// that may make a key ready (entries added or pushed, the key created,
// deleted or a group deleted, a flush, a swap) the writer calls Serve with
// a View that sees the write and the key made ready, for the waiters of
// each queue (the key's pops; the key's readers of one group) in arrival
// order, until one returns ok false. ok true ends the wait; Serve's events
// are then committed as a change-log record of their own, and may in turn
// make other keys ready (BLMOVE's push serves the clients blocked on its
// destination). What Serve computed is the command's result once
// WriteBlock returns (Serve runs on the writer goroutine, before
// WriteBlock returns).
type Waiter struct {
	Keys  [][]byte
	Group string
	Pop   bool
	// Pops is the type a popping command pops (codec.TypeList,
	// codec.TypeZSet): clients popping different types from one key wait
	// in separate queues, as Redis serves each blocked client only from a
	// key of its type and skips the others.
	Pops  codec.Type
	Serve func(v *materialize.View, key []byte) (events []codec.Event, ok bool)
}

// Guard lets a long read (KEYS, SCAN with a large COUNT) stop once its
// client has gone: Gone is cheap enough to call for every key visited, and
// once it returns true the command replies ErrClientGone. Release ends
// the guard (a deferred call).
type Guard interface {
	Gone() bool
	Release()
}

// Ctx is one command's execution: its arguments, database, reply writer,
// the server's limits and the runtime.
//
// DB is the storage db (materialize.View.StorageDB) of the database the
// client selected: the db byte every read and event of the command uses.
// It is resolved when the Ctx is made, for reads, and again on the decision's
// View right before a write decision runs, so a write decided after a
// SWAPDB lands in the swapped database. Decisions therefore read x.DB
// inside the decision, never a copy taken before Write. A db number given
// as an argument (MOVE, COPY ... DB) is logical: resolve it with
// View.StorageDB inside the decision.
type Ctx struct {
	Args   [][]byte // the command name first, as sent
	DB     uint8
	Client uint64 // the connection's id (CLIENT ID)
	Reply  reply.Writer
	Limits Limits
	rt     Runtime
	db     uint8 // the logical db the client selected
}

// DeliveryTracer is implemented by a Runtime that traces message paths
// (docs/telemetry.md): the stream commands tell it of the entries each
// read delivers, so that the read's span can link to their XADDs' spans.
type DeliveryTracer interface {
	// TracingDeliveries reports whether the command is traced: when it is
	// not, Delivered need not be called.
	TracingDeliveries() bool
	// Delivered is told of entries of key read (group nil: XREAD) or
	// claimed for group.
	Delivered(key, group []byte, entries []streams.Entry)
}

// TracingDeliveries reports whether the Runtime traces this command's
// deliveries (DeliveryTracer).
func (x *Ctx) TracingDeliveries() bool {
	dt, ok := x.rt.(DeliveryTracer)
	return ok && dt.TracingDeliveries()
}

// Delivered tells a tracing Runtime of entries delivered from key (group
// nil for XREAD): see DeliveryTracer.
func (x *Ctx) Delivered(key, group []byte, entries []streams.Entry) {
	if dt, ok := x.rt.(DeliveryTracer); ok && len(entries) > 0 && dt.TracingDeliveries() {
		dt.Delivered(key, group, entries)
	}
}

// Limits are the server settings commands check data against.
type Limits struct {
	// MaxBulkLen is proto-max-bulk-len in bytes (default 512 MiB): LCS's
	// table limit.
	MaxBulkLen int64
	// Databases is the number of databases (SELECT, MOVE, COPY ... DB).
	Databases int
}

// NewCtx returns the Ctx of one request (the broker's job): db is the
// logical db the client selected, storage its storage db as of the View
// the command's reads will see.
func NewCtx(args [][]byte, db, storage uint8, client uint64, w reply.Writer, l Limits, rt Runtime) *Ctx {
	return InitCtx(new(Ctx), args, db, storage, client, w, l, rt)
}

// InitCtx is NewCtx into x, which it returns: a broker that keeps the Ctx
// inside its own per-request state spares an allocation per command.
func InitCtx(x *Ctx, args [][]byte, db, storage uint8, client uint64, w reply.Writer, l Limits, rt Runtime) *Ctx {
	*x = Ctx{Args: args, DB: storage, Client: client, Reply: w, Limits: l, rt: rt, db: db}
	return x
}

// SelectedDB returns the logical db the client selected (SELECT's number).
func (x *Ctx) SelectedDB() uint8 { return x.db }

// View returns the state to read (Runtime.View).
func (x *Ctx) View() *materialize.View { return x.rt.View() }

// InTxn reports whether the command runs inside EXEC (Runtime.InTxn).
func (x *Ctx) InTxn() bool { return x.rt.InTxn() }

// Block waits for a read to find something (Runtime.Block).
func (x *Ctx) Block(keys [][]byte, timeout time.Duration, try func() bool) (bool, error) {
	return x.rt.Block(keys, timeout, try)
}

// WriteBlock is Write for a consuming read that may block
// (Runtime.WriteBlock). x.DB is resolved on decide's View as for Write;
// Serve resolves its own (View.StorageDB of SelectedDB).
func (x *Ctx) WriteBlock(decide func(v *materialize.View) ([]codec.Event, *Waiter, error), timeout time.Duration) (queued, served bool, err error) {
	return x.rt.WriteBlock(func(v *materialize.View) ([]codec.Event, *Waiter, error) {
		x.DB = v.StorageDB(x.db)
		return decide(v)
	}, timeout)
}

// Guard returns a Guard for a long read (Runtime.Guard).
func (x *Ctx) Guard() Guard { return x.rt.Guard() }

// ScanCursors returns the server's SCAN positions (Runtime.ScanCursors).
func (x *Ctx) ScanCursors() *keyspace.ScanCursors { return x.rt.ScanCursors() }

// StreamConfig returns the server's stream settings (Runtime.StreamConfig).
func (x *Ctx) StreamConfig() streams.Config { return x.rt.StreamConfig() }

// Write runs decide on the write path and reply after the commit
// (Runtime.Write). x.DB is the selected db's storage db on decide's View
// while decide runs.
func (x *Ctx) Write(decide func(v *materialize.View) ([]codec.Event, error), reply func()) error {
	return x.rt.Write(decide, reply)
}

// Resolve sets x.DB to the storage db of the selected db on v, the View a
// write decides on (a SWAPDB committed since the command was read may
// have moved it). The Runtime calls it before Write's decide.
func (x *Ctx) Resolve(v *materialize.View) { x.DB = v.StorageDB(x.db) }

// WriteHelp writes a container command's HELP reply: its lines as status
// replies, as Redis's addReplyHelp does.
func WriteHelp(w reply.Writer, lines []string) {
	w.Array(len(lines))
	for _, l := range lines {
		w.Simple(l)
	}
}
