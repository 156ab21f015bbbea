package materialize

import (
	"errors"
	"fmt"
	"math"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sediment-dev/sediment/codec"
)

// listPointDeleteMax is the largest list deletion done with point
// deletions; a larger one is one range deletion (a pop is a point
// deletion, so readers seeking past popped heads never meet range
// tombstones; the same trade-off as streams.PointTrimMax).
const listPointDeleteMax = 64

// applyEvent writes one event's effect into b. It is the one place that
// turns change events into Pebble keys; replaying a change log calls it
// again with the same events. zc is the writer's copy of the rank blocks
// the sorted-set events maintain (nil: none).
func applyEvent(b *pebble.Batch, e codec.Event, zc *zBlockCache) error {
	a := e.Args
	need := func(n int) error { return needArgs(e, n) }
	switch e.Op {
	case codec.OpSetMeta:
		if err := applySetMetaTTL(b, e); err != nil {
			return err
		}
		return applyMetaKey(b, e)

	case codec.OpDelKey:
		if err := need(2); err != nil {
			return err
		}
		prev, err := codec.DecodeInt64Arg(a[1])
		if err != nil {
			return err
		}
		if prev != 0 {
			if err := b.Delete(codec.TTLKey(e.DB, e.Key, prev), nil); err != nil {
				return err
			}
		}
		for _, tag := range codec.EventTags(e, 3) {
			if err := deletePrefix(b, codec.KeyPrefix(codec.Tag(tag), e.DB, e.Key)); err != nil {
				return err
			}
		}
		return b.Delete(codec.MetaKey(e.DB, e.Key), nil)

	case codec.OpCopyKey:
		if err := need(3); err != nil {
			return err
		}
		if len(a[0]) != 1 || len(a[1]) != 1 {
			return fmt.Errorf("materialize: copy-key event args: %w", codec.ErrCorrupt)
		}
		return copyKey(b, codec.EventTags(e, 3), a[1][0], a[2], e.DB, e.Key)

	case codec.OpHSet:
		if len(a)%2 != 0 {
			return fmt.Errorf("materialize: HSET event with %d args: %w", len(a), codec.ErrCorrupt)
		}
		for i := 0; i < len(a); i += 2 {
			if err := b.Set(codec.ElementKey(codec.TagHash, e.DB, e.Key, a[i]), a[i+1], nil); err != nil {
				return err
			}
		}
		return nil

	case codec.OpSAdd:
		for _, m := range a {
			if err := b.Set(codec.ElementKey(codec.TagSet, e.DB, e.Key, m), nil, nil); err != nil {
				return err
			}
		}
		return nil

	case codec.OpHDel, codec.OpSRem:
		tag := codec.TagHash
		if e.Op == codec.OpSRem {
			tag = codec.TagSet
		}
		for _, elem := range a {
			if err := b.Delete(codec.ElementKey(tag, e.DB, e.Key, elem), nil); err != nil {
				return err
			}
		}
		return nil

	case codec.OpLSet:
		if err := need(1); err != nil {
			return err
		}
		pos, err := codec.DecodeInt64Arg(a[0])
		if err != nil {
			return err
		}
		for i, elem := range a[1:] {
			if err := b.Set(codec.ListKey(e.DB, e.Key, pos+int64(i)), elem, nil); err != nil {
				return err
			}
		}
		return nil

	case codec.OpLDel:
		if err := need(2); err != nil {
			return err
		}
		first, err := codec.DecodeInt64Arg(a[0])
		if err != nil {
			return err
		}
		last, err := codec.DecodeInt64Arg(a[1])
		if err != nil {
			return err
		}
		if last < first {
			return fmt.Errorf("materialize: list delete %d..%d: %w", first, last, codec.ErrCorrupt)
		}
		if last-first < listPointDeleteMax {
			for p := first; p <= last; p++ {
				if err := b.Delete(codec.ListKey(e.DB, e.Key, p), nil); err != nil {
					return err
				}
			}
			return nil
		}
		return b.DeleteRange(codec.ListKey(e.DB, e.Key, first), codec.ListKey(e.DB, e.Key, last+1), nil)

	case codec.OpZAdd:
		return applyZAdd(b, e, zc)

	case codec.OpZRem:
		return applyZRem(b, e, zc)

	case codec.OpZRanks:
		return applyZRanks(b, e, zc)

	case codec.OpXAdd:
		if err := need(1); err != nil {
			return err
		}
		id, err := codec.DecodeIDArg(a[0])
		if err != nil {
			return err
		}
		// The fields are encoded straight into the batch: no copy of a
		// large entry of its own (BenchmarkLargeValues).
		fv, trailer, err := codec.XAddFields(a[1:])
		if err != nil {
			return err
		}
		k := codec.StreamEntryKey(e.DB, e.Key, id)
		op := b.SetDeferred(len(k), codec.FieldsLen(fv)+len(trailer))
		copy(op.Key, k)
		if got := append(codec.AppendFields(op.Value[:0], fv), trailer...); len(got) != len(op.Value) {
			return fmt.Errorf("materialize: entry fields encoded to %d bytes, %d reserved", len(got), len(op.Value))
		}
		return op.Finish()

	case codec.OpXDel:
		for _, arg := range a {
			id, err := codec.DecodeIDArg(arg)
			if err != nil {
				return err
			}
			if err := b.Delete(codec.StreamEntryKey(e.DB, e.Key, id), nil); err != nil {
				return err
			}
		}
		return nil

	case codec.OpXTrim:
		if err := need(1); err != nil {
			return err
		}
		return applyXTrim(b, e)

	case codec.OpXNodeSet:
		if err := need(2); err != nil {
			return err
		}
		first, err := codec.DecodeIDArg(a[0])
		if err != nil {
			return err
		}
		if _, err := codec.DecodeStreamNode(first, a[1]); err != nil {
			return err
		}
		return b.Set(codec.StreamNodeKey(e.DB, e.Key, first), a[1], nil)

	case codec.OpXNodeDel:
		if err := need(2); err != nil {
			return err
		}
		return applyXNodeDel(b, e)

	case codec.OpGroupSet, codec.OpConsumerSet, codec.OpPELSet, codec.OpPELDel:
		return applyGroupWrite(b, e)

	case codec.OpGroupDel:
		if err := need(1); err != nil {
			return err
		}
		for _, tag := range []codec.Tag{codec.TagConsumer, codec.TagPEL, codec.TagConsumerPEL, codec.TagPELTime} {
			if err := deletePrefix(b, codec.GroupPrefix(tag, e.DB, e.Key, a[0])); err != nil {
				return err
			}
		}
		return b.Delete(codec.GroupKey(e.DB, e.Key, a[0]), nil)

	case codec.OpConsumerDel:
		if err := need(2); err != nil {
			return err
		}
		if err := deletePrefix(b, codec.ConsumerPELPrefix(e.DB, e.Key, a[0], a[1])); err != nil {
			return err
		}
		return b.Delete(codec.ConsumerKey(e.DB, e.Key, a[0], a[1]), nil)

	case codec.OpTTLDel:
		if err := need(1); err != nil {
			return err
		}
		deadline, err := codec.DecodeInt64Arg(a[0])
		if err != nil {
			return err
		}
		return b.Delete(codec.TTLKey(e.DB, e.Key, deadline), nil)

	case codec.OpIDMPSet, codec.OpIDMPDel:
		if err := need(5); err != nil {
			return err
		}
		return applyIDMP(b, e)

	case codec.OpIDMPState:
		if err := need(1); err != nil {
			return err
		}
		return b.Set(codec.IDMPStateKey(e.DB, e.Key), a[0], nil)

	case codec.OpIDMPClear:
		for _, tag := range []codec.Tag{codec.TagIDMPProducer, codec.TagIDMPByIID, codec.TagIDMPByID} {
			if err := deletePrefix(b, codec.KeyPrefix(tag, e.DB, e.Key)); err != nil {
				return err
			}
		}
		return nil

	case codec.OpFlushDB:
		if err := need(1); err != nil {
			return err
		}
		slots := a[0]
		if len(slots)%2 != 0 {
			return fmt.Errorf("materialize: flushdb slot list: %w", codec.ErrCorrupt)
		}
		for i := 0; i < len(slots); i += 2 {
			slot := uint16(slots[i])<<8 | uint16(slots[i+1])
			for _, tag := range codec.DataTags {
				if tag == codec.TagTTL || tag == codec.TagIDMPExpiry {
					continue // E and M are ordered by deadline; stale entries are dropped by their sweeps
				}
				if err := deletePrefix(b, codec.SlotDBPrefix(tag, slot, e.DB)); err != nil {
					return err
				}
			}
		}
		return nil

	case codec.OpSwapDB:
		return applySwapDB(b, e)

	case codec.OpFlushAll:
		for _, tag := range codec.DataTags {
			if err := b.DeleteRange([]byte{byte(tag)}, []byte{byte(tag) + 1}, nil); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("materialize: unknown event op %q: %w", e.Op, codec.ErrCorrupt)
}

// needArgs returns codec.ErrCorrupt unless e has n arguments or more.
func needArgs(e codec.Event, n int) error {
	if len(e.Args) < n {
		return fmt.Errorf("materialize: event %q with %d args: %w", e.Op, len(e.Args), codec.ErrCorrupt)
	}
	return nil
}

// applyGroupWrite applies the events a consumer-group cycle writes most
// (OpGroupSet, OpConsumerSet, OpPELSet, OpPELDel). Their keys are built in
// a buffer on the stack: Pebble copies a key into the batch.
func applyGroupWrite(b *pebble.Batch, e codec.Event) error {
	a := e.Args
	need := func(n int) error { return needArgs(e, n) }
	var kb [160]byte
	switch e.Op {
	case codec.OpGroupSet:
		if err := need(2); err != nil {
			return err
		}
		return b.Set(codec.AppendGroupKey(kb[:0], e.DB, e.Key, a[0]), a[1], nil)

	case codec.OpConsumerSet:
		if err := need(3); err != nil {
			return err
		}
		return b.Set(codec.AppendConsumerKey(kb[:0], e.DB, e.Key, a[0], a[1]), a[2], nil)

	case codec.OpPELSet:
		if err := need(3); err != nil {
			return err
		}
		id, err := codec.DecodeIDArg(a[1])
		if err != nil {
			return err
		}
		pe, err := codec.DecodePELEntry(a[2])
		if err != nil {
			return err
		}
		// P, Q and W keys are set once per delivery and removed with
		// SingleDelete before the next: a pending entry's re-delivery
		// removes the old ones first, in the same batch (docs/key-format.md,
		// "PEL keys: removed with SingleDelete").
		if len(a) > 3 {
			if err := b.SingleDelete(codec.AppendPELKey(kb[:0], e.DB, e.Key, a[0], id), nil); err != nil {
				return err
			}
			if err := b.SingleDelete(codec.AppendConsumerPELKey(kb[:0], e.DB, e.Key, a[0], a[3], id), nil); err != nil {
				return err
			}
		}
		if len(a) > 4 { // records before the delivery-time index have no previous time
			prev, err := codec.DecodeInt64Arg(a[4])
			if err != nil {
				return err
			}
			if err := b.SingleDelete(codec.AppendPELTimeKey(kb[:0], e.DB, e.Key, a[0], prev, id), nil); err != nil {
				return err
			}
		}
		if err := b.Set(codec.AppendPELTimeKey(kb[:0], e.DB, e.Key, a[0], pe.IndexTime(), id), nil, nil); err != nil {
			return err
		}
		if !pe.Nacked() { // a NACKed entry has no owner, so no Q key
			if err := b.Set(codec.AppendConsumerPELKey(kb[:0], e.DB, e.Key, a[0], pe.Consumer, id), nil, nil); err != nil {
				return err
			}
		}
		return b.Set(codec.AppendPELKey(kb[:0], e.DB, e.Key, a[0], id), a[2], nil)

	case codec.OpPELDel:
		if err := need(3); err != nil {
			return err
		}
		id, err := codec.DecodeIDArg(a[1])
		if err != nil {
			return err
		}
		if err := b.SingleDelete(codec.AppendConsumerPELKey(kb[:0], e.DB, e.Key, a[0], a[2], id), nil); err != nil {
			return err
		}
		if len(a) > 3 {
			t, err := codec.DecodeInt64Arg(a[3])
			if err != nil {
				return err
			}
			if err := b.SingleDelete(codec.AppendPELTimeKey(kb[:0], e.DB, e.Key, a[0], t, id), nil); err != nil {
				return err
			}
		}
		return b.SingleDelete(codec.AppendPELKey(kb[:0], e.DB, e.Key, a[0], id), nil)

	}
	return fmt.Errorf("materialize: applyGroupWrite: event op %q: %w", e.Op, codec.ErrCorrupt)
}

// applySetMetaTTL applies the TTL index part of an OpSetMeta event: its
// previous E key goes, its new one is set. It checks the arguments
// applyMetaKey uses too.
func applySetMetaTTL(b *pebble.Batch, e codec.Event) error {
	a := e.Args
	if len(a) < 2 {
		return fmt.Errorf("materialize: event %q with %d args: %w", e.Op, len(a), codec.ErrCorrupt)
	}
	exp, err := codec.MetaExpireAt(a[0])
	if err != nil {
		return err
	}
	prev, err := codec.DecodeInt64Arg(a[1])
	if err != nil {
		return err
	}
	if prev != 0 && prev != exp {
		if err := b.Delete(codec.TTLKey(e.DB, e.Key, prev), nil); err != nil {
			return err
		}
	}
	if exp != 0 {
		if err := b.Set(codec.TTLKey(e.DB, e.Key, exp), nil, nil); err != nil {
			return err
		}
	}
	return nil
}

// applyMetaKey sets the M key of an OpSetMeta event whose arguments
// applySetMetaTTL checked. The header alone is checked: the value is
// stored as it is, and the decisions that built it decoded it (a stream's
// node state would be decoded for nothing here).
func applyMetaKey(b *pebble.Batch, e codec.Event) error {
	var kb [96]byte // the batch copies the key: no allocation for most
	k := codec.AppendMetaKey(kb[:0], e.DB, e.Key)
	if !codec.IsSplitSetMeta(e) {
		return b.Set(k, e.Args[0], nil)
	}
	// The split form (codec.EventMeta): the stored metadata is encoded
	// straight into the batch, no copy of its own.
	m, err := codec.EventMeta(e)
	if err != nil {
		return err
	}
	op := b.SetDeferred(len(k), codec.MetaLen(m))
	copy(op.Key, k)
	if got := codec.AppendMeta(op.Value[:0], m); len(got) != len(op.Value) {
		return fmt.Errorf("materialize: metadata encoded to %d bytes, %d reserved", len(got), len(op.Value))
	}
	return op.Finish()
}

// applyMetaRef writes the metadata of e, an OpSetMeta event in the split
// form, with its value located in the change log by ref instead of inline,
// and the R key of the reference (codec.ValueRefKey; docs/key-format.md,
// "Values in the change log").
func applyMetaRef(b *pebble.Batch, e codec.Event, ref codec.ValueRef) error {
	m, err := codec.EventMeta(e)
	if err != nil {
		return err
	}
	m.Value, m.Ref = nil, ref
	var buf [64]byte
	var kb [96]byte // the batch copies the key and the value
	if err := b.Set(codec.AppendMetaKey(kb[:0], e.DB, e.Key), codec.AppendMeta(buf[:0], m), nil); err != nil {
		return err
	}
	owner := make([]byte, 0, 1+len(e.Key))
	owner = append(append(owner, e.DB), e.Key...)
	return b.Set(codec.ValueRefKey(ref.Segment, ref.Offset), owner, nil)
}

// valueAt names a value by its first byte and length (Store.vrefs).
type valueAt struct {
	p *byte
	n int
}

// valueRefOf returns the reference refs holds for the value of e, an
// OpSetMeta event (zero: none; the value is stored inline).
func valueRefOf(refs map[valueAt]codec.ValueRef, e codec.Event) codec.ValueRef {
	if len(refs) == 0 || !codec.IsSplitSetMeta(e) || len(e.Args) != 3 || len(e.Args[2]) == 0 {
		return codec.ValueRef{}
	}
	return refs[valueAt{&e.Args[2][0], len(e.Args[2])}]
}

// applyXTrim removes a trim's entries: point deletions when the event lists
// them, else one range deletion starting at the trim's first entry, never at
// the start of the stream's prefix, so that successive trims leave range
// tombstones that do not overlap (docs/key-format.md, "How deletions apply").
func applyXTrim(b *pebble.Batch, e codec.Event) error {
	ids := make([]codec.ID, len(e.Args))
	for i, arg := range e.Args {
		id, err := codec.DecodeIDArg(arg)
		if err != nil {
			return err
		}
		ids[i] = id
	}
	if len(ids) > 2 {
		for _, id := range ids[2:] {
			if err := b.Delete(codec.StreamEntryKey(e.DB, e.Key, id), nil); err != nil {
				return err
			}
		}
		return nil
	}
	p := codec.KeyPrefix(codec.TagStreamEntry, e.DB, e.Key)
	start, last := p, ids[len(ids)-1]
	if len(ids) == 2 {
		start = codec.AppendID(p[:len(p):len(p)], ids[0])
	}
	end := codec.PrefixEnd(p)
	if next, ok := last.Next(); ok {
		end = codec.AppendID(p[:len(p):len(p)], next)
	}
	return b.DeleteRange(start, end, nil)
}

// applyXNodeDel removes the node keys of an OpXNodeDel event: one point
// deletion, or one range deletion starting at a trim's first node (never
// at the prefix start, as applyXTrim).
func applyXNodeDel(b *pebble.Batch, e codec.Event) error {
	from, err := codec.DecodeIDArg(e.Args[0])
	if err != nil {
		return err
	}
	to, err := codec.DecodeIDArg(e.Args[1])
	if err != nil {
		return err
	}
	if to.Less(from) {
		return fmt.Errorf("materialize: node deletion %s..%s: %w", from, to, codec.ErrCorrupt)
	}
	if from == to {
		return b.Delete(codec.StreamNodeKey(e.DB, e.Key, from), nil)
	}
	end := codec.PrefixEnd(codec.KeyPrefix(codec.TagStreamNode, e.DB, e.Key))
	if next, ok := to.Next(); ok {
		end = codec.StreamNodeKey(e.DB, e.Key, next)
	}
	return b.DeleteRange(codec.StreamNodeKey(e.DB, e.Key, from), end, nil)
}

// applyIDMP writes (OpIDMPSet) or deletes (OpIDMPDel) one idempotent ID's
// keys: U (iid → entry ID), V (entry ID → iid), M (expiry index), and sets
// the producer's count (O), deleted at 0.
func applyIDMP(b *pebble.Batch, e codec.Event) error {
	a := e.Args
	pid, iid := a[0], a[1]
	id, err := codec.DecodeIDArg(a[2])
	if err != nil {
		return err
	}
	deadline, err := codec.DecodeInt64Arg(a[3])
	if err != nil {
		return err
	}
	count, _, err := codec.DecodeIDMPProducer(a[4])
	if err != nil {
		return err
	}
	if len(iid) == 0 { // a stale M key, whose record is gone
		return b.Delete(codec.IDMPExpiryKey(deadline, e.DB, e.Key, pid, id), nil)
	}
	keys := [3][]byte{codec.IDMPByIIDKey(e.DB, e.Key, pid, iid), codec.IDMPByIDKey(e.DB, e.Key, pid, id), codec.IDMPExpiryKey(deadline, e.DB, e.Key, pid, id)}
	if e.Op == codec.OpIDMPSet {
		vals := [3][]byte{a[2], iid, nil}
		for i, k := range keys {
			if err := b.Set(k, vals[i], nil); err != nil {
				return err
			}
		}
	} else {
		for _, k := range keys {
			if err := b.Delete(k, nil); err != nil {
				return err
			}
		}
	}
	pk := codec.IDMPProducerKey(e.DB, e.Key, pid)
	if count == 0 {
		return b.Delete(pk, nil)
	}
	return b.Set(pk, a[4], nil)
}

func deletePrefix(b *pebble.Batch, p []byte) error {
	return b.DeleteRange(p, codec.PrefixEnd(p), nil)
}

// copyKey rewrites the sub-keys of (srcDB, src) under the tags given to
// (db, dst)'s prefix. It reads b (an indexed batch: committed state plus
// the group's writes so far), collecting first: a batch iterator does not
// see writes made after it opened.
func copyKey(b *pebble.Batch, tags []byte, srcDB uint8, src []byte, db uint8, dst []byte) error {
	for _, c := range tags {
		tag := codec.Tag(c)
		from := codec.KeyPrefix(tag, srcDB, src)
		it, err := b.NewIter(&pebble.IterOptions{LowerBound: from, UpperBound: codec.PrefixEnd(from)})
		if err != nil {
			return err
		}
		var kvs [][2][]byte
		for ok := it.First(); ok; ok = it.Next() {
			v, err := it.ValueAndErr()
			if err != nil {
				it.Close()
				return err
			}
			kvs = append(kvs, [2][]byte{append([]byte(nil), it.Key()[len(from):]...), append([]byte(nil), v...)})
		}
		if err := it.Close(); err != nil {
			return err
		}
		to := codec.KeyPrefix(tag, db, dst)
		for _, kv := range kvs {
			if err := b.Set(append(to[:len(to):len(to)], kv[0]...), kv[1], nil); err != nil {
				return err
			}
		}
		if tag == codec.TagIDMPByID && len(kvs) > 0 {
			if err := copyIDMPExpiry(b, srcDB, src, db, dst, kvs); err != nil {
				return err
			}
		}
	}
	return nil
}

// copyIDMPExpiry writes the store-wide expiry index (M) of the idempotent
// IDs a stream copy took along (V keys, given by their suffix after the key
// prefix), under the destination's name: M is not under the key's prefix,
// so the copy of the key's sub-keys does not carry it.
func copyIDMPExpiry(b *pebble.Batch, srcDB uint8, src []byte, db uint8, dst []byte, kvs [][2][]byte) error {
	val, closer, err := b.Get(codec.IDMPStateKey(srcDB, src))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil // records without settings: not written by this version
	}
	if err != nil {
		return err
	}
	st, err := codec.DecodeIDMPState(val)
	closer.Close()
	if err != nil {
		return err
	}
	for _, kv := range kvs {
		pid, rest, err := codec.SplitName(kv[0])
		if err != nil {
			return err
		}
		id, err := codec.DecodeID(rest)
		if err != nil {
			return err
		}
		deadline := int64(min(id.Ms, math.MaxInt64/2)) + int64(st.DurationS)*1000
		if err := b.Set(codec.IDMPExpiryKey(deadline, db, dst, pid, id), nil, nil); err != nil {
			return err
		}
	}
	return nil
}

// keepsMeta reports whether applyEvent leaves M keys alone for an event
// of op: it neither writes, deletes nor reads one in the batch, so the
// group's deferred M-key writes (overlay.deferMeta) need not precede it.
// Unknown ops answer false.
func keepsMeta(op codec.Op) bool {
	switch op {
	case codec.OpHSet, codec.OpSAdd, codec.OpHDel, codec.OpSRem,
		codec.OpLSet, codec.OpLDel,
		codec.OpZAdd, codec.OpZRem, codec.OpZRanks,
		codec.OpXAdd, codec.OpXDel, codec.OpXTrim, codec.OpXNodeSet, codec.OpXNodeDel,
		codec.OpGroupSet, codec.OpGroupDel, codec.OpConsumerSet, codec.OpConsumerDel,
		codec.OpPELSet, codec.OpPELDel, codec.OpTTLDel,
		codec.OpIDMPSet, codec.OpIDMPDel, codec.OpIDMPState, codec.OpIDMPClear:
		return true
	}
	return false
}
