package broker

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/sediment-dev/sediment/materialize"
)

func init() {
	register(
		&cmdSpec{name: "save", arity: 1, flags: flagAdmin | flagNoScript | flagNoMulti, group: "server", since: "1.0.0", summary: "Synchronously saves the database(s) to disk.", run: runSave, ownGoroutine: true},
		&cmdSpec{name: "bgsave", arity: -1, flags: flagAdmin | flagNoScript, group: "server", since: "1.0.0", summary: "Asynchronously saves the database(s) to disk.", run: runBgsave},
		&cmdSpec{name: "lastsave", arity: 1, flags: flagLoading | flagStale | flagFast, group: "server", since: "1.0.0", summary: "Returns the Unix timestamp of the last successful save to disk.", run: runLastsave},
	)
}

// saves is the state of SAVE and BGSAVE: one checkpoint of the store at a
// time, written to <dir>/checkpoint (materialize.Store.Checkpoint), and
// what INFO persistence and LASTSAVE report of the last one.
type saves struct {
	mu      sync.Mutex
	running bool      // a checkpoint is being written
	bg      bool      // ... by BGSAVE
	started time.Time // when it began
	// Of the last checkpoint that ended: when it ended successfully
	// (LASTSAVE; the server's start until then), whether it succeeded, how
	// long it took, and its change-log position.
	last       time.Time
	ended      bool // a checkpoint has ended since the start
	lastFailed bool
	lastTook   time.Duration
	lastSeq    uint64
	count      int64 // checkpoints written since the start (rdb_saves)
}

var (
	errBgsaveRunning = wireError("ERR Background save already in progress")
	errInMemorySave  = wireError("ERR the server keeps no data directory (in-memory): nothing to save")
)

// checkpointDir is where SAVE and BGSAVE write: a data directory of its
// own inside the server's (docs/operations.md, "Durability and backups").
func (s *Server) checkpointDir() string {
	return filepath.Join(s.opts.Dir, materialize.CheckpointDirName)
}

// begin marks a checkpoint running, or returns the error of one already
// running.
func (sv *saves) begin(bg bool, now time.Time) error {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if sv.running {
		return errBgsaveRunning
	}
	sv.running, sv.bg, sv.started = true, bg, now
	return nil
}

// checkpoint writes the checkpoint (begin must have succeeded) and
// records its outcome.
func (s *Server) checkpoint() (materialize.CheckpointInfo, error) {
	info, err := s.store.Checkpoint(s.checkpointDir())
	s.saves.mu.Lock()
	defer s.saves.mu.Unlock()
	s.saves.running, s.saves.bg = false, false
	s.saves.ended, s.saves.lastFailed = true, err != nil
	s.saves.lastTook = s.opts.Now().Sub(s.saves.started)
	if err != nil {
		s.opts.Logger.Warn("checkpoint failed", "dir", s.checkpointDir(), "err", err)
		return info, err
	}
	s.saves.last, s.saves.lastSeq = info.Time, info.Seq
	s.saves.count++
	s.opts.Logger.Info("checkpoint written", "dir", s.checkpointDir(), "seq", info.Seq, "bytes", info.Bytes,
		"copied", info.Copied, "took", info.Duration)
	return info, nil
}

// saveErr turns a checkpoint's error into the reply.
func saveErr(err error) error {
	if errors.Is(err, materialize.ErrInMemory) {
		return errInMemorySave
	}
	var f *materialize.StorageFault
	if errors.As(err, &f) {
		return errMisconf(f)
	}
	return wireError(fmt.Sprintf("ERR checkpoint failed: %s", sanitize([]byte(err.Error()), 200)))
}

// SAVE: writes the checkpoint and replies OK once it is durable. Writes
// go on while it runs (Redis's SAVE blocks the server; Sediment's blocks
// only the client that sent it). ERR Background save already in
// progress while a BGSAVE runs, as Redis.
func runSave(x *exec) error {
	s := x.c.s
	if err := s.saves.begin(false, s.opts.Now()); err != nil {
		return err
	}
	if _, err := s.checkpoint(); err != nil {
		return saveErr(err)
	}
	x.reply().OK()
	return nil
}

// BGSAVE [SCHEDULE]: writes the checkpoint in the background. Replies
// "Background saving started", or inside EXEC "Background saving
// scheduled" (Redis's reply there), then runs it.
func runBgsave(x *exec) error {
	switch {
	case len(x.args) == 2 && equalFold(x.args[1], "SCHEDULE"):
	case len(x.args) > 1:
		return errSyntax
	}
	s := x.c.s
	if err := s.saves.begin(true, s.opts.Now()); err != nil {
		return err
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.checkpoint()
	}()
	if x.inTxn() {
		x.reply().Simple("Background saving scheduled")
	} else {
		x.reply().Simple("Background saving started")
	}
	return nil
}

// LASTSAVE: the Unix time in seconds of the last successful checkpoint;
// before any, the server's start, as Redis.
func runLastsave(x *exec) error {
	x.reply().Int(x.c.s.lastSave().Unix())
	return nil
}

func (s *Server) lastSave() time.Time {
	s.saves.mu.Lock()
	defer s.saves.mu.Unlock()
	if s.saves.last.IsZero() {
		return s.start
	}
	return s.saves.last
}

// saveInfo writes INFO persistence's rdb_* fields, in Redis's names: the
// checkpoint is Sediment's RDB.
func (s *Server) saveInfo(kv func(string, any)) {
	s.saves.mu.Lock()
	defer s.saves.mu.Unlock()
	last, changes := s.saves.last, s.store.LastSeq()-s.saves.lastSeq
	if last.IsZero() {
		last = s.start
	}
	kv("rdb_changes_since_last_save", changes)
	kv("rdb_bgsave_in_progress", map[bool]int{true: 1}[s.saves.running && s.saves.bg])
	kv("rdb_last_save_time", last.Unix())
	kv("rdb_last_bgsave_status", map[bool]string{false: "ok", true: "err"}[s.saves.lastFailed])
	took, current := int64(-1), int64(-1)
	if s.saves.ended {
		took = int64(s.saves.lastTook / time.Second)
	}
	if s.saves.running {
		current = int64(s.opts.Now().Sub(s.saves.started) / time.Second)
	}
	kv("rdb_last_bgsave_time_sec", took)
	kv("rdb_current_bgsave_time_sec", current)
	kv("rdb_saves", s.saves.count)
	kv("sediment_checkpoint_dir", s.checkpointDir())
	kv("sediment_checkpoint_seq", s.saves.lastSeq)
}
