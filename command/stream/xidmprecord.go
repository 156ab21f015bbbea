package stream

import (
	"errors"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/streams"
)

// XIDMPRECORD's errors, in the words of Redis's xidmprecordCommand
// (t_stream.c; the command page lists the cases, not the words).
var (
	errIDMPRecordNoPID    command.WireError = "ERR producer ID must be non-empty"
	errIDMPRecordNoIID    command.WireError = "ERR idempotent ID must be non-empty"
	errIDMPRecordNoEntry  command.WireError = "ERR No such message in stream"
	errIDMPRecordConflict command.WireError = "ERR IID already exists for this producer with a different stream ID"
)

// XIDMPRECORD key pid iid stream-id (Redis 8.6.2; the page says 8.8)
// Reply: OK. Records that producer pid's idempotent ID iid names the
// existing entry stream-id, as an XADD ... IDMP pid iid that added it
// would have (streams.RecordIDMP): Redis's AOF rewrite emits one per
// record. OK too when the pair already names that entry (nothing
// changes). Checked in Redis's order: the ID (strict: no "-", "+" or
// "*"), an empty pid, an empty iid, the key (ERR no such key), its type,
// then the entry (deleted or never added: ERR No such message in stream)
// and the pair (naming another entry: ERR IID already exists ...).
// https://redis.io/docs/latest/commands/xidmprecord/
func runXIDMPRecord(x *command.Ctx) error {
	key, pid, iid := x.Args[1], x.Args[2], x.Args[3]
	id, err := ParseID(x.Args[4], 0)
	switch {
	case err != nil:
		return err
	case len(pid) == 0:
		return errIDMPRecordNoPID
	case len(iid) == 0:
		return errIDMPRecordNoIID
	}
	cfg := x.StreamConfig()
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		ok, evs, err := streams.RecordIDMP(v, x.DB, key, pid, iid, id, cfg)
		switch {
		case errors.Is(err, streams.ErrNoSuchEntry):
			err = errIDMPRecordNoEntry
		case errors.Is(err, streams.ErrIIDConflict):
			err = errIDMPRecordConflict
		case err == nil && !ok:
			err = command.ErrNoSuchKey
		}
		return evs, err
	}, func() { x.Reply.OK() })
}
