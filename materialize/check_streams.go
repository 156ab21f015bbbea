package materialize

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/sediment-dev/sediment/codec"
)

// The stream checks of Check: consumer groups (PEL, its Q and W indexes,
// consumers) and idempotent production (check.go has the rest).

// groupTally is what a stream's check counts for one consumer group.
type groupTally struct {
	name              []byte
	g                 codec.Group
	n, nacked, parked uint64   // parked: of the nacked (unowned) ones
	first, last       codec.ID // the smallest and largest pending IDs
	maxNack           uint64
	wFirst            codec.PELTimePos
	wSeen             bool
	// The pending IDs and W keys after the first ones, as many as the
	// group's runs hold (codec.Group.PELNext, TimeNext).
	pNext []codec.ID
	wNext []codec.PELTimePos
}

// consumerTally is what it counts for one consumer.
type consumerTally struct {
	group, name []byte
	c           codec.Consumer
	n           uint64
	first       codec.ID
}

// checkStream checks a stream's entries, consumer groups and idempotent
// production records.
func (c *checker) checkStream(curs map[codec.Tag]*cursor, h []byte, db uint8, key []byte, m codec.Meta) error {
	nodes, err := c.streamNodes(curs[codec.TagStreamNode], h)
	if err != nil {
		return err
	}
	s := m.Stream
	var (
		n, tailN, outside uint64
		first, last       codec.ID
		outsideID         codec.ID
		j                 int // the node key an entry may be in
	)
	err = curs[codec.TagStreamEntry].each(h, func(k, suffix, val []byte) error {
		id, err := codec.DecodeID(suffix)
		if err == nil && len(suffix) != codec.IDLen {
			err = fmt.Errorf("%d bytes after the key", len(suffix))
		}
		if err == nil {
			_, _, err = codec.DecodeEntry(val)
		}
		if err != nil {
			c.keyViolation(h, "stream entry", "an ID and its fields", err.Error(), k)
			return nil
		}
		if n == 0 {
			first = id
		}
		last = id
		n++
		// As in Redis, an entry is in the node of the greatest first ID
		// at or below it (the tail's, past the node keys); that node's
		// range may reach past the next node's first ID after an XSETID
		// (streams.nodeEditor.deleteID).
		for j+1 < len(nodes) && !id.Less(nodes[j+1].n.First) {
			j++
		}
		switch {
		case s.Tail.Count > 0 && !id.Less(s.Tail.First):
			tailN++
		case j < len(nodes) && !id.Less(nodes[j].n.First) && !nodes[j].n.Last.Less(id):
			nodes[j].entries++
			if nodes[j].n.Inner != "" && len(nodes[j].ids) <= codec.InnerIDsMax {
				nodes[j].ids = append(nodes[j].ids, id)
			}
		default:
			if outside == 0 {
				outsideID = id
			}
			outside++
		}
		return nil
	})
	if err != nil {
		return err
	}
	c.rep.Elements[codec.TypeStream] += int64(n)
	if s.Legacy {
		if len(nodes) > 0 {
			c.keyViolation(h, "stream node keys", "legacy metadata (no node state)", fmt.Sprintf("%d N keys", len(nodes)), nodes[0].raw)
		}
	} else {
		c.checkStreamNodes(h, s, nodes, tailN, outside, outsideID)
	}
	if s.Length != n {
		c.keyViolation(h, "stream length", u64(s.Length), u64(n)+" X keys", nil)
	}
	if n == 0 && !s.FirstID.IsZero() {
		c.keyViolation(h, "stream first ID", s.FirstID.String(), "0-0 (no entries)", nil)
	}
	if n > 0 && s.FirstID != first {
		c.keyViolation(h, "stream first ID", s.FirstID.String(), first.String(), nil)
	}
	if n > 0 && s.LastID.Less(last) {
		c.keyViolation(h, "stream last ID", s.LastID.String(), "an entry "+last.String(), nil)
	}
	if s.EntriesAdded < s.Length {
		c.keyViolation(h, "stream entries-added", u64(s.EntriesAdded), "below the length "+u64(s.Length), nil)
	}
	// No rule compares the max-deleted ID with the last ID: XSETID may
	// lower the last ID below it (Redis 7.0 checks the new ID against the
	// top live entry, and against MAXDELETEDID only when one is given).
	if err := c.checkGroups(curs, h, db, key); err != nil {
		return err
	}
	return c.checkIDMP(curs, h, db, key)
}

// nodeTally is a stream node key as the check reads it, with the entries
// counted in it.
type nodeTally struct {
	n       codec.StreamNode
	raw     []byte
	entries uint64
	ids     []codec.ID // the entries counted, for a node that lists its inner IDs
}

// streamNodes reads the node keys of the stream of header h, in ID order,
// reporting those that do not decode. Their ranges may overlap
// (checkStream).
func (c *checker) streamNodes(cu *cursor, h []byte) ([]*nodeTally, error) {
	var nodes []*nodeTally
	err := cu.each(h, func(k, suffix, val []byte) error {
		first, err := codec.DecodeID(suffix)
		if err == nil && len(suffix) != codec.IDLen {
			err = fmt.Errorf("%d bytes after the key", len(suffix))
		}
		var nd codec.StreamNode
		if err == nil {
			nd, err = codec.DecodeStreamNode(first, val)
		}
		if err != nil {
			c.keyViolation(h, "stream node", "a first ID and a node value", err.Error(), k)
			return nil
		}
		nodes = append(nodes, &nodeTally{n: nd, raw: bytes.Clone(k)})
		return nil
	})
	return nodes, err
}

// checkStreamNodes checks a stream's node keys and node state (s) against
// the entries counted in each node key, in the tail (tailN) and in none
// (outside, the first of them outsideID).
func (c *checker) checkStreamNodes(h []byte, s codec.StreamMeta, nodes []*nodeTally, tailN, outside uint64, outsideID codec.ID) {
	count := s.Tail.Count
	for i, nd := range nodes {
		count += nd.n.Count
		name := "node " + nd.n.First.String()
		// The node that followed it when it closed (Next) is the next
		// node still, or was removed: none can have come between them.
		next, ok := s.Tail.First, s.Tail.Count > 0
		if i+1 < len(nodes) {
			next, ok = nodes[i+1].n.First, true
		}
		if !nd.n.Next.IsZero() && ok && next.Less(nd.n.Next) {
			c.keyViolation(h, "stream node next ID", name+": next "+nd.n.Next.String(), "above the next node's first ID "+next.String(), nd.raw)
		}
		if nd.entries != nd.n.Live {
			c.keyViolation(h, "stream node live count", name+": "+u64(nd.n.Live), u64(nd.entries)+" X keys", nd.raw)
		}
		if nd.n.Inner != "" {
			// Its inner IDs are its entries between the first and last.
			inner, err := nd.n.InnerIDs(nil)
			if k := len(nd.ids); err == nil && (k != len(inner)+2 || nd.ids[0] != nd.n.First || nd.ids[k-1] != nd.n.Last || !slices.Equal(nd.ids[1:k-1], inner)) {
				err = fmt.Errorf("entries %v", nd.ids)
			}
			if err != nil {
				c.keyViolation(h, "stream node inner IDs", name+": "+fmt.Sprint(inner), err.Error(), nd.raw)
			}
		}
		if s.Tail.Count > 0 && !nd.n.First.Less(s.Tail.First) {
			c.keyViolation(h, "stream node order", name, "at or after the tail's first ID "+s.Tail.First.String(), nd.raw)
		}
		// A node's range reaches into the next node's only after an
		// XSETID below its last entry (edgeMayBeDeleted), and such a node
		// closed without a next ID.
		edgeDeleted := edgeMayBeDeleted(nd.n)
		if s.LastID.Less(nd.n.Last) && !edgeDeleted {
			c.keyViolation(h, "stream node last ID", name+": "+nd.n.Last.String(), "above the last ID "+s.LastID.String()+" with no deleted entry", nd.raw)
		}
		if ok && !nd.n.Last.Less(next) && (!edgeDeleted || !nd.n.Next.IsZero()) {
			c.keyViolation(h, "stream node order", name+".."+nd.n.Last.String(), "reaching the next node's first ID "+next.String(), nd.raw)
		}
	}
	if s.Tail.Count > 0 {
		if tailN != s.Tail.Live {
			c.keyViolation(h, "stream tail live count", "tail "+s.Tail.First.String()+": "+u64(s.Tail.Live), u64(tailN)+" X keys", nil)
		}
		if s.LastID.Less(s.Tail.Last) && !edgeMayBeDeleted(s.Tail) {
			c.keyViolation(h, "stream node last ID", "tail: "+s.Tail.Last.String(), "above the last ID "+s.LastID.String()+" with no deleted entry", nil)
		}
	}
	if outside > 0 {
		c.keyViolation(h, "stream entries in no node", u64(uint64(len(nodes)))+" node keys and a tail of "+u64(s.Tail.Count),
			u64(outside)+" X keys outside them, the first "+outsideID.String(), nil)
	}
	if count != s.Nodes {
		c.keyViolation(h, "stream node count", u64(s.Nodes), u64(count)+" in "+u64(uint64(len(nodes)))+" N keys and the tail", nil)
	}
	var want codec.StreamMeta
	if len(nodes) > 0 {
		want.HeadLast, want.HeadLive, want.HeadMigrated, want.HeadFirst = nodes[0].n.Last, nodes[0].n.Live, nodes[0].n.Count > 1, nodes[0].n.First
	}
	if s.HeadFirst.IsZero() { // metadata written before the head's first ID was kept
		want.HeadFirst = codec.ID{}
	}
	if s.HeadLast != want.HeadLast || s.HeadLive != want.HeadLive || s.HeadMigrated != want.HeadMigrated || s.HeadFirst != want.HeadFirst {
		c.keyViolation(h, "stream head summary", fmt.Sprintf("first %s, last %s, live %d, migrated %v", s.HeadFirst, s.HeadLast, s.HeadLive, s.HeadMigrated),
			fmt.Sprintf("first %s, last %s, live %d, migrated %v (the first N key's)", want.HeadFirst, want.HeadLast, want.HeadLive, want.HeadMigrated), nil)
	}
}

// splitNames splits n length-prefixed names off suffix and returns them
// with the rest.
func splitNames(suffix []byte, n int) ([][]byte, []byte, error) {
	names := make([][]byte, n)
	var err error
	for i := range names {
		if names[i], suffix, err = codec.SplitName(suffix); err != nil {
			return nil, nil, err
		}
	}
	return names, suffix, nil
}

func (c *checker) checkGroups(curs map[codec.Tag]*cursor, h []byte, db uint8, key []byte) error {
	var order []*groupTally
	groups := map[string]*groupTally{}
	err := curs[codec.TagGroup].each(h, func(k, suffix, val []byte) error {
		names, rest, err := splitNames(suffix, 1)
		var g codec.Group
		if err == nil && len(rest) != 0 {
			err = fmt.Errorf("%d bytes after the group name", len(rest))
		}
		if err == nil {
			g, err = codec.DecodeGroup(val)
		}
		if err != nil {
			c.keyViolation(h, "group", "a decodable G key", err.Error(), k)
			return nil
		}
		t := &groupTally{name: bytes.Clone(names[0]), g: g}
		groups[string(names[0])] = t
		order = append(order, t)
		return nil
	})
	if err != nil {
		return err
	}
	c.rep.Groups += int64(len(order))
	var corder []*consumerTally
	consumers := map[string]*consumerTally{} // by the C key's suffix: group and consumer names
	err = curs[codec.TagConsumer].each(h, func(k, suffix, val []byte) error {
		names, rest, err := splitNames(suffix, 2)
		var cv codec.Consumer
		if err == nil && len(rest) != 0 {
			err = fmt.Errorf("%d bytes after the consumer name", len(rest))
		}
		if err == nil {
			cv, err = codec.DecodeConsumer(val)
		}
		if err != nil {
			c.keyViolation(h, "consumer", "a decodable C key", err.Error(), k)
			return nil
		}
		if groups[string(names[0])] == nil {
			c.keyViolation(h, "consumer of a missing group", "group "+strconv.Quote(string(names[0])), "no G key", k)
			return nil
		}
		t := &consumerTally{group: bytes.Clone(names[0]), name: bytes.Clone(names[1]), c: cv}
		consumers[string(suffix)] = t
		corder = append(corder, t)
		return nil
	})
	if err != nil {
		return err
	}
	c.rep.Consumers += int64(len(corder))
	gname := func(g []byte) string { return "group " + strconv.Quote(string(g)) }
	err = curs[codec.TagPEL].each(h, func(k, suffix, val []byte) error {
		names, rest, err := splitNames(suffix, 1)
		var id codec.ID
		var pe codec.PELEntry
		if err == nil && len(rest) != codec.IDLen {
			err = fmt.Errorf("%d bytes after the group name", len(rest))
		}
		owned := false
		if err == nil {
			id, _ = codec.DecodeID(rest)
			pe, owned, err = decodePEL(val)
		}
		if err != nil {
			c.keyViolation(h, "pending entry", "a decodable P key", err.Error(), k)
			return nil
		}
		c.rep.Pending++
		t := groups[string(names[0])]
		if t == nil {
			c.keyViolation(h, "pending entry of a missing group", gname(names[0]), "no G key", k)
			return nil
		}
		if t.n == 0 {
			t.first = id
		} else if len(t.pNext) < len(t.g.PELNext) {
			t.pNext = append(t.pNext, id)
		}
		t.last = id // P keys come in ID order
		t.n++
		if owned {
			c.keyViolation(h, "parked entry with an owner", gname(names[0])+" ID "+id.String()+" owned by "+strconv.Quote(string(pe.Consumer)),
				"a 'D' mark, which only an unowned entry may have", k)
		}
		if pe.Parked {
			t.parked++
			if err := c.checkParked(h, db, key, names[0], id, pe, k); err != nil {
				return err
			}
		}
		if pe.Nacked() {
			t.nacked++
			t.maxNack = max(t.maxNack, pe.NackSeq)
		} else {
			owner := codec.AppendName(codec.AppendName(nil, names[0]), pe.Consumer)
			if consumers[string(owner)] == nil {
				c.keyViolation(h, "pending entry owner", gname(names[0])+" consumer "+strconv.Quote(string(pe.Consumer)), "no C key", k)
			}
			if ok, err := c.has(codec.ConsumerPELKey(db, key, names[0], pe.Consumer, id)); err != nil {
				return err
			} else if !ok {
				c.keyViolation(h, "pending entry without Q key", gname(names[0])+" ID "+id.String()+" owned by "+strconv.Quote(string(pe.Consumer)), "no Q key", k)
			}
		}
		if ok, err := c.has(codec.PELTimeKey(db, key, names[0], pe.IndexTime(), id)); err != nil {
			return err
		} else if !ok && pe.Parked {
			// Parking came after the W index: its OpPELSet always writes one.
			c.keyViolation(h, "parked entry without W key", gname(names[0])+" ID "+id.String()+" due at "+strconv.FormatInt(pe.DeliveryTimeMs, 10), "no W key", k)
		} else if !ok && t.g.TimeIndexed {
			c.keyViolation(h, "pending entry without W key", gname(names[0])+" ID "+id.String()+" at "+strconv.FormatInt(pe.IndexTime(), 10), "no W key", k)
		} else if !ok {
			c.rep.Unindexed++
		}
		return nil
	})
	if err != nil {
		return err
	}
	// pelOf returns the P entry of id in group g.
	pelOf := func(g []byte, id codec.ID) (codec.PELEntry, bool, error) {
		v, ok, err := c.get(codec.PELKey(db, key, g, id))
		if err != nil || !ok {
			return codec.PELEntry{}, false, err
		}
		pe, _, err := decodePEL(v)
		return pe, err == nil, nil // an undecodable one was reported
	}
	err = curs[codec.TagConsumerPEL].each(h, func(k, suffix, _ []byte) error {
		names, rest, err := splitNames(suffix, 2)
		if err == nil && len(rest) != codec.IDLen {
			err = fmt.Errorf("%d bytes after the consumer name", len(rest))
		}
		if err != nil {
			c.keyViolation(h, "consumer index key", "group, consumer and ID", err.Error(), k)
			return nil
		}
		id, _ := codec.DecodeID(rest)
		t := consumers[string(suffix[:len(suffix)-codec.IDLen])]
		if t == nil {
			c.keyViolation(h, "Q key of a missing consumer", gname(names[0])+" consumer "+strconv.Quote(string(names[1])), "no C key", k)
		} else {
			if t.n == 0 {
				t.first = id
			}
			t.n++
		}
		pe, ok, err := pelOf(names[0], id)
		switch {
		case err != nil:
			return err
		case !ok:
			c.keyViolation(h, "Q key without pending entry", gname(names[0])+" ID "+id.String(), "no P key", k)
		case pe.Parked:
			c.keyViolation(h, "Q key of a parked entry", gname(names[0])+" consumer "+strconv.Quote(string(names[1]))+" ID "+id.String(), "P entry parked (unowned, no Q key)", k)
		case pe.Nacked() || !bytes.Equal(pe.Consumer, names[1]):
			c.keyViolation(h, "Q key of another owner", "consumer "+strconv.Quote(string(names[1])), fmt.Sprintf("P entry owned by %q (NACKed %v)", pe.Consumer, pe.Nacked()), k)
		}
		return nil
	})
	if err != nil {
		return err
	}
	err = curs[codec.TagPELTime].each(h, func(k, suffix, _ []byte) error {
		names, rest, err := splitNames(suffix, 1)
		if err == nil && len(rest) != 8+codec.IDLen {
			err = fmt.Errorf("%d bytes after the group name", len(rest))
		}
		if err != nil {
			c.keyViolation(h, "delivery-time index key", "group, time and ID", err.Error(), k)
			return nil
		}
		tm := int64(binary.BigEndian.Uint64(rest))
		id, _ := codec.DecodeID(rest[8:])
		if t := groups[string(names[0])]; t == nil {
			c.keyViolation(h, "W key of a missing group", gname(names[0]), "no G key", k)
		} else {
			if !t.wSeen {
				t.wFirst, t.wSeen = codec.PELTimePos{Time: tm, ID: id}, true
			} else if len(t.wNext) < len(t.g.TimeNext) {
				t.wNext = append(t.wNext, codec.PELTimePos{Time: tm, ID: id})
			}
		}
		pe, ok, err := pelOf(names[0], id)
		switch {
		case err != nil:
			return err
		case !ok:
			c.keyViolation(h, "W key without pending entry", gname(names[0])+" ID "+id.String(), "no P key", k)
		case uint64(max(pe.IndexTime(), 0)) != uint64(tm):
			c.keyViolation(h, "W key time", strconv.FormatInt(tm, 10), "P entry at "+strconv.FormatInt(pe.IndexTime(), 10), k)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, t := range order {
		g, name := t.g, gname(t.name)
		raw := codec.GroupKey(db, key, t.name)
		if !g.PELUnknown {
			if g.PEL.Count != t.n {
				c.keyViolation(h, "group pending count", name+": "+u64(g.PEL.Count), u64(t.n)+" P keys", raw)
			}
			if g.PEL.First != t.first {
				c.keyViolation(h, "group first pending ID", name+": "+g.PEL.First.String(), t.first.String(), raw)
			}
			if !slices.Equal(g.PELNext, t.pNext) {
				c.keyViolation(h, "group pending IDs after the first", fmt.Sprintf("%s: %v", name, g.PELNext), fmt.Sprintf("%v", t.pNext), raw)
			}
		}
		if len(g.TimeNext) > 0 && (!g.TimeIndexed || !slices.Equal(g.TimeNext, t.wNext)) {
			c.keyViolation(h, "group W keys after the first", fmt.Sprintf("%s: %v (time-indexed %v)", name, g.TimeNext, g.TimeIndexed), fmt.Sprintf("%v", t.wNext), raw)
		}
		if g.PELBounded && t.n > 0 && g.LastDeliveredID.Less(t.last) {
			c.keyViolation(h, "pending entry past last-delivered-id", name+": bounded, last-delivered-id "+g.LastDeliveredID.String(),
				"pending "+t.last.String(), raw)
		}
		if g.Nacked != t.nacked {
			counted := u64(t.nacked) + " NACKed P entries"
			if t.parked > 0 {
				counted += " (" + u64(t.parked) + " of them parked)"
			}
			c.keyViolation(h, "group NACKed count", name+": "+u64(g.Nacked), counted, raw)
		}
		if t.nacked > 0 && g.NackNext <= t.maxNack {
			counted := "an entry at " + u64(t.maxNack)
			if t.maxNack == 0 {
				counted = u64(t.parked) + " parked entries: at least 1"
			}
			c.keyViolation(h, "group NACK sequence", name+": next "+u64(g.NackNext), counted, raw)
		}
		if g.TimeIndexed && t.n > 0 && g.TimeFirst != (codec.PELTimePos{}) {
			tf := codec.PELTimePos{Time: max(g.TimeFirst.Time, 0), ID: g.TimeFirst.ID}
			if !t.wSeen || tf != t.wFirst {
				c.keyViolation(h, "group first delivery-time key", fmt.Sprintf("%s: %d %s", name, g.TimeFirst.Time, g.TimeFirst.ID),
					fmt.Sprintf("%d %s (the first W key; seen %v)", t.wFirst.Time, t.wFirst.ID, t.wSeen), raw)
			}
		}
	}
	for _, t := range corder {
		if t.c.PELUnknown {
			continue
		}
		name := gname(t.group) + " consumer " + strconv.Quote(string(t.name))
		raw := codec.ConsumerKey(db, key, t.group, t.name)
		if t.c.PEL.Count != t.n {
			c.keyViolation(h, "consumer pending count", name+": "+u64(t.c.PEL.Count), u64(t.n)+" Q keys", raw)
		}
		if t.c.PEL.First != t.first {
			c.keyViolation(h, "consumer first pending ID", name+": "+t.c.PEL.First.String(), t.first.String(), raw)
		}
	}
	return nil
}

// decodePEL decodes a P value as codec.DecodePELEntry does, but also
// reads one that codec rejects as a parked entry with an owner (a 'D' mark
// after a non-empty consumer): as parked, with owned set, so that the
// check reports that one fault and counts the entry as unowned.
func decodePEL(val []byte) (pe codec.PELEntry, owned bool, err error) {
	pe, err = codec.DecodePELEntry(val)
	if err == nil || len(val) == 0 || val[len(val)-1] != 'D' {
		return pe, false, err
	}
	p, err2 := codec.DecodePELEntry(val[:len(val)-1])
	if err2 != nil || p.NackSeq != 0 || len(p.Consumer) == 0 {
		return pe, false, err
	}
	p.Parked = true
	return p, true, nil
}

// checkParked checks a parked pending entry (delayed delivery) id of group
// whose P key is raw: its delivery count is 0 (no claim took it yet), and
// its stream entry, unless deleted since, is due at its delivery time (the
// X value's delay tail, codec.DecodeEntryTail). Its W key and Q keys are
// checked with every entry's.
func (c *checker) checkParked(h []byte, db uint8, key, group []byte, id codec.ID, pe codec.PELEntry, raw []byte) error {
	name := "group " + strconv.Quote(string(group)) + " ID " + id.String()
	if pe.DeliveryCount != 0 {
		c.keyViolation(h, "parked entry delivery count", name+": "+u64(pe.DeliveryCount), "0 (parked: not delivered yet)", raw)
	}
	xv, ok, err := c.get(codec.StreamEntryKey(db, key, id))
	if err != nil || !ok {
		return err // deleted from the stream: claims drop it
	}
	_, tail, err := codec.DecodeEntryTail(xv)
	if err != nil {
		return nil // reported with the stream's entries
	}
	if tail.DueMs != pe.DeliveryTimeMs {
		counted := "entry due at " + strconv.FormatInt(tail.DueMs, 10)
		if tail.DueMs == 0 {
			counted = "entry not delayed (no delay tail)"
		}
		c.keyViolation(h, "parked entry due time", name+" at "+strconv.FormatInt(pe.DeliveryTimeMs, 10), counted, raw)
	}
	return nil
}

// idmpTally is what a stream's check counts for one producer.
type idmpTally struct {
	pid    []byte
	hasO   bool
	count  uint64
	first  codec.ID
	u, v   uint64
	vFirst codec.ID
	raw    []byte
}

func (c *checker) checkIDMP(curs map[codec.Tag]*cursor, h []byte, db uint8, key []byte) error {
	var st *codec.IDMPState
	err := curs[codec.TagIDMPState].each(h, func(k, suffix, val []byte) error {
		s, err := codec.DecodeIDMPState(val)
		if err == nil && len(suffix) != 0 {
			err = fmt.Errorf("%d bytes after the key", len(suffix))
		}
		if err != nil {
			c.keyViolation(h, "IDMP state", "a decodable J key", err.Error(), k)
			return nil
		}
		st = &s
		return nil
	})
	if err != nil {
		return err
	}
	prods := map[string]*idmpTally{}
	var order []*idmpTally
	prod := func(pid []byte) *idmpTally {
		p := prods[string(pid)]
		if p == nil {
			p = &idmpTally{pid: bytes.Clone(pid), raw: codec.IDMPProducerKey(db, key, pid)}
			prods[string(pid)] = p
			order = append(order, p)
		}
		return p
	}
	err = curs[codec.TagIDMPProducer].each(h, func(k, suffix, val []byte) error {
		names, rest, err := splitNames(suffix, 1)
		var n uint64
		var first codec.ID
		if err == nil && len(rest) != 0 {
			err = fmt.Errorf("%d bytes after the producer", len(rest))
		}
		if err == nil {
			n, first, err = codec.DecodeIDMPProducer(val)
		}
		if err != nil {
			c.keyViolation(h, "IDMP producer", "a decodable O key", err.Error(), k)
			return nil
		}
		p := prod(names[0])
		p.hasO, p.count, p.first = true, n, first
		return nil
	})
	if err != nil {
		return err
	}
	pidName := func(pid []byte) string { return "producer " + strconv.Quote(string(pid)) }
	err = curs[codec.TagIDMPByIID].each(h, func(k, suffix, val []byte) error {
		names, iid, err := splitNames(suffix, 1)
		var id codec.ID
		if err == nil && len(val) != codec.IDLen {
			err = fmt.Errorf("value of %d bytes", len(val))
		}
		if err != nil {
			c.keyViolation(h, "IDMP U key", "producer, idempotent ID → entry ID", err.Error(), k)
			return nil
		}
		id, _ = codec.DecodeID(val)
		prod(names[0]).u++
		v, ok, err := c.get(codec.IDMPByIDKey(db, key, names[0], id))
		if err != nil {
			return err
		}
		if !ok || !bytes.Equal(v, iid) {
			c.keyViolation(h, "IDMP U/V mismatch", pidName(names[0])+" iid "+strconv.Quote(string(iid))+" → "+id.String(),
				fmt.Sprintf("V key present %v, naming %q", ok, v), k)
		}
		return nil
	})
	if err != nil {
		return err
	}
	err = curs[codec.TagIDMPByID].each(h, func(k, suffix, val []byte) error {
		names, rest, err := splitNames(suffix, 1)
		if err == nil && len(rest) != codec.IDLen {
			err = fmt.Errorf("%d bytes after the producer", len(rest))
		}
		if err != nil {
			c.keyViolation(h, "IDMP V key", "producer, entry ID → idempotent ID", err.Error(), k)
			return nil
		}
		id, _ := codec.DecodeID(rest)
		p := prod(names[0])
		if p.v == 0 {
			p.vFirst = id
		}
		p.v++
		u, ok, err := c.get(codec.IDMPByIIDKey(db, key, names[0], val))
		if err != nil {
			return err
		}
		if !ok || !bytes.Equal(u, codec.AppendID(nil, id)) {
			c.keyViolation(h, "IDMP U/V mismatch", pidName(names[0])+" entry "+id.String()+" → iid "+strconv.Quote(string(val)),
				fmt.Sprintf("U key present %v, naming %x", ok, u), k)
		}
		if st != nil && st.DurationS > 0 {
			deadline := int64(min(id.Ms, math.MaxInt64/2)) + int64(st.DurationS)*1000
			mk := codec.IDMPExpiryKey(deadline, db, key, names[0], id)
			if ok, err := c.has(mk); err != nil {
				return err
			} else if !ok {
				c.keyViolation(h, "IDMP expiry key missing", pidName(names[0])+" entry "+id.String()+" expiring at "+strconv.FormatInt(deadline, 10), "no M key", mk)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	var pids, iids uint64
	for _, p := range order {
		name := pidName(p.pid)
		if p.hasO {
			pids++
			if p.count == 0 {
				c.keyViolation(h, "IDMP producer count", name+": 0", "an O key left at 0", p.raw)
			}
		}
		iids += p.v
		if p.count != p.v || p.u != p.v {
			c.keyViolation(h, "IDMP producer count", fmt.Sprintf("%s: %d (O key present %v)", name, p.count, p.hasO), fmt.Sprintf("%d V keys, %d U keys", p.v, p.u), p.raw)
		}
		if p.hasO && p.v > 0 && p.first != p.vFirst {
			c.keyViolation(h, "IDMP producer first ID", name+": "+p.first.String(), p.vFirst.String(), p.raw)
		}
	}
	switch {
	case st == nil && len(order) > 0:
		c.keyViolation(h, "IDMP records without state", "no J key", fmt.Sprintf("%d producers", len(order)), nil)
	case st != nil && (st.Pids != pids || st.IIDs != iids):
		c.keyViolation(h, "IDMP tracked counts", fmt.Sprintf("pids %d, iids %d", st.Pids, st.IIDs), fmt.Sprintf("%d O keys, %d V keys", pids, iids), codec.IDMPStateKey(db, key))
	}
	return nil
}

// edgeMayBeDeleted reports whether n's last ID may name no live entry: it
// has deleted entries (XSETID may then lower the last ID below its last,
// Redis 7.0 checking the top live entry only), or it is a migrated record
// (whose last ID is the stream's when it was migrated). Only then may its
// range reach past the stream's last ID or into the next node's.
func edgeMayBeDeleted(n codec.StreamNode) bool { return n.Deleted > 0 || n.Count > 1 }
