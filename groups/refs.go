package groups

import (
	"bytes"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/streams"
)

// Refs is the consumer groups of one stream as one decision sees and
// changes them: it answers Redis 8.2's reference questions for the ACKED
// and DELREF policies (streams.Refs) and holds one pelEdit per group, so an
// acknowledgement made earlier in the decision (XACKDEL) counts in a later
// question. Finish returns the edits' events.
// https://redis.io/docs/latest/commands/xackdel/
type Refs struct {
	v      *materialize.View
	db     uint8
	key    []byte
	loaded bool
	names  [][]byte
	edits  []*pelEdit // one per group, in name order
	// minLast is the smallest last-delivered-id of the groups: entries
	// above it are still to be delivered to some group.
	minLast codec.ID
}

// NewRefs starts the reference questions of one decision about the stream
// key, which must exist. Groups are loaded on first use.
func NewRefs(v *materialize.View, db uint8, key []byte) *Refs {
	return &Refs{v: v, db: db, key: key}
}

func (r *Refs) load() error {
	if r.loaded {
		return nil
	}
	r.loaded = true
	// A stream that expired and is being replaced in this decision (XADD
	// re-creating it) has no groups, whatever keys the view still shows.
	if _, ok, err := streams.Meta(r.v, r.db, r.key); err != nil || !ok {
		return err
	}
	return eachGroup(r.v, r.db, r.key, func(name []byte, g codec.Group) {
		if len(r.edits) == 0 || g.LastDeliveredID.Less(r.minLast) {
			r.minLast = g.LastDeliveredID
		}
		r.names = append(r.names, name)
		r.edits = append(r.edits, newPELEdit(r.v, r.db, r.key, name, g))
	})
}

// edit returns the group's edit, false when the stream has no such group.
func (r *Refs) edit(group []byte) (*pelEdit, bool, error) {
	if err := r.load(); err != nil {
		return nil, false, err
	}
	for i, name := range r.names {
		if bytes.Equal(name, group) {
			return r.edits[i], true, nil
		}
	}
	return nil, false, nil
}

// Referenced implements streams.Refs: true when some group may still need
// id (id above a group's last-delivered-id, or pending in a group's PEL);
// false when the stream has no groups (Redis's streamEntryIsReferenced).
func (r *Refs) Referenced(id codec.ID) (bool, error) {
	if err := r.load(); err != nil || len(r.edits) == 0 {
		return false, err
	}
	if r.minLast.Less(id) {
		return true, nil
	}
	for _, e := range r.edits {
		if _, pending, err := e.entry(id); err != nil || pending {
			return pending, err
		}
	}
	return false, nil
}

// Release removes id from every group's PEL (DELREF), with its owners'.
func (r *Refs) Release(id codec.ID) error {
	if err := r.load(); err != nil {
		return err
	}
	for _, e := range r.edits {
		pe, pending, err := e.entry(id)
		if err != nil {
			return err
		}
		if pending {
			if err := e.del(id, pe); err != nil {
				return err
			}
		}
	}
	return nil
}

// ReleaseRange implements streams.Refs: it removes the IDs in [first,
// last] from every group's PEL, at the cost of the pending entries in that
// range.
func (r *Refs) ReleaseRange(first, last codec.ID) error {
	if err := r.load(); err != nil {
		return err
	}
	for _, e := range r.edits {
		ids, err := pendingIDs(r.v, codec.GroupPrefix(codec.TagPEL, r.db, r.key, e.group), e.g.PEL, first, last)
		if err != nil {
			return err
		}
		for _, id := range ids {
			pe, pending, err := e.entry(id) // as the edit leaves it
			if err != nil {
				return err
			}
			if pending {
				if err := e.del(id, pe); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Finish returns the events of every group's PEL changes.
func (r *Refs) Finish() ([]codec.Event, error) {
	var events []codec.Event
	for _, e := range r.edits {
		evs, err := e.finish()
		if err != nil {
			return nil, err
		}
		events = append(events, evs...)
	}
	return events, nil
}

// AckDelResult is XACKDEL's reply code for one ID.
type AckDelResult int64

// XACKDEL's and XDELEX's reply codes.
const (
	NotFound        AckDelResult = -1 // XACKDEL: not pending in the group; XDELEX: not in the stream
	Deleted         AckDelResult = 1  // acknowledged (XACKDEL) and deleted, or already gone
	StillReferenced AckDelResult = 2  // ACKED: another group may still need it; kept
)

// DelEx deletes the entries ids of the stream key, whose metadata is m,
// under policy (XDELEX): per ID, StillReferenced when policy is Acked and a
// group may still need the entry (whether or not it exists), else Deleted
// or NotFound (not in the stream; an ID named twice is not found the second
// time). DelRef removes the IDs from every PEL, found in the stream or not.
// https://redis.io/docs/latest/commands/xdelex/
func DelEx(v *materialize.View, db uint8, key []byte, m codec.Meta, ids []codec.ID, policy streams.RefPolicy) ([]AckDelResult, []codec.Event, error) {
	refs := NewRefs(v, db, key)
	d := streams.NewDeleter(v, db, key, m)
	out := make([]AckDelResult, len(ids))
	for i, id := range ids {
		switch policy {
		case streams.Acked:
			ref, err := refs.Referenced(id)
			if err != nil {
				return nil, nil, err
			}
			if ref {
				out[i] = StillReferenced
				continue
			}
		case streams.DelRef:
			if err := refs.Release(id); err != nil {
				return nil, nil, err
			}
		}
		found, err := d.Delete(id)
		if err != nil {
			return nil, nil, err
		}
		out[i] = NotFound
		if found {
			out[i] = Deleted
		}
	}
	return finishDeletion(out, refs, d)
}

// AckDel acknowledges ids in group and deletes them from the stream key,
// whose metadata is m, under policy (XACKDEL): per ID, NotFound when it was
// not pending in group (nothing happens to it), StillReferenced when policy
// is Acked and another group may still need it (acknowledged, kept), else
// Deleted (acknowledged and deleted, or already gone from the stream).
// Errors: ErrNoGroup (the caller replies -1 for every ID, as Redis).
// https://redis.io/docs/latest/commands/xackdel/
func AckDel(v *materialize.View, db uint8, key, group []byte, m codec.Meta, ids []codec.ID, policy streams.RefPolicy) ([]AckDelResult, []codec.Event, error) {
	refs := NewRefs(v, db, key)
	e, ok, err := refs.edit(group)
	if err != nil || !ok {
		if err == nil {
			err = ErrNoGroup
		}
		return nil, nil, err
	}
	d := streams.NewDeleter(v, db, key, m)
	out := make([]AckDelResult, len(ids))
	for i, id := range ids {
		pe, pending, err := e.entry(id)
		if err != nil {
			return nil, nil, err
		}
		if !pending {
			out[i] = NotFound
			continue
		}
		if err := e.del(id, pe); err != nil {
			return nil, nil, err
		}
		switch policy {
		case streams.Acked:
			ref, err := refs.Referenced(id)
			if err != nil {
				return nil, nil, err
			}
			if ref {
				out[i] = StillReferenced
				continue
			}
		case streams.DelRef:
			if err := refs.Release(id); err != nil {
				return nil, nil, err
			}
		}
		if _, err := d.Delete(id); err != nil {
			return nil, nil, err
		}
		out[i] = Deleted
	}
	return finishDeletion(out, refs, d)
}

func finishDeletion(out []AckDelResult, refs *Refs, d *streams.Deleter) ([]AckDelResult, []codec.Event, error) {
	events, err := refs.Finish()
	if err != nil {
		return nil, nil, err
	}
	dels, err := d.Finish()
	if err != nil {
		return nil, nil, err
	}
	return out, append(events, dels...), nil
}
