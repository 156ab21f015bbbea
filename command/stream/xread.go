package stream

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/groups"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/streams"
)

// XREAD and XREADGROUP's errors, in Redis 7.0's words (t_stream.c); the
// two about the + ID are Redis 7.4's.
const (
	errUnbalancedXRead  command.WireError = "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified."
	errXReadGT          command.WireError = "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option."
	errTimeoutNotInt    command.WireError = "ERR timeout is not an integer or out of range"
	errGroupOnXRead     command.WireError = "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead."
	errNoAckOnXRead     command.WireError = "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead."
	errMissingGroup     command.WireError = "ERR Missing GROUP option for XREADGROUP"
	errXReadGroupDollar command.WireError = "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set."
	errXReadGroupPlus   command.WireError = "ERR The + ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The + ID would just return an empty result set."
	errXReadLastZero    command.WireError = "ERR the stream last element ID is 0-0"
	errUnblockedNoKey   command.WireError = "UNBLOCKED the stream key no longer exists"
	errUnblockedGroup   command.WireError = "NOGROUP the consumer group this client was blocked on no longer exists"
	// CLAIM's (Redis 8.4).
	errClaimOnXRead  command.WireError = "ERR The CLAIM option is only supported by XREADGROUP. You called XREAD instead."
	errMinIdleNotInt command.WireError = "ERR min-idle-time is not an integer or out of range"
	errMinIdleNeg    command.WireError = "ERR min-idle-time must be a positive integer"
	// MAXCOUNT's and MAXSIZE's (Redis 8.10). The third is Sediment's
	// wording: Redis refuses a MAXCOUNT below COUNT with a text it does
	// not document.
	errMaxCount        command.WireError = "ERR MAXCOUNT must be a positive integer"
	errMaxSize         command.WireError = "ERR MAXSIZE must be a positive integer"
	errMaxCountBelowCt command.WireError = "ERR MAXCOUNT must be greater than or equal to COUNT"
)

// errNoGroupRead is XREADGROUP's NOGROUP for a missing key or group.
func errNoGroupRead(key, group []byte) command.WireError {
	return command.WireError(fmt.Sprintf("NOGROUP No such key '%s' or consumer group '%s' in XREADGROUP with GROUP option",
		command.Sanitize(key, 128), command.Sanitize(group, 128)))
}

func readSpecs() []command.Spec {
	// Key positions 0: the keys follow STREAMS (Redis's movablekeys).
	return []command.Spec{
		{Name: "xread", Arity: -4, Flags: command.FlagReadonly | command.FlagBlocking, Step: 1, Group: group, Since: "5.0.0",
			Summary: "Returns messages from multiple streams with IDs greater than the ones requested. Blocks until a message is available otherwise.", Run: runXRead},
		{Name: "xreadgroup", Arity: -7, Flags: command.FlagWrite | command.FlagBlocking, Step: 1, Group: group, Since: "5.0.0",
			Summary:     "Returns new or historical messages from a stream for a consumer in a group. Blocks until a message is available otherwise.",
			BlockOption: "BLOCK", Run: runXReadGroup},
	}
}

// xread is a parsed XREAD or XREADGROUP.
// XREAD [COUNT count] [BLOCK milliseconds] STREAMS key [key ...] id [id ...]
// XREADGROUP GROUP group consumer [COUNT count] [BLOCK milliseconds] [CLAIM min-idle-time] [NOACK] STREAMS key [key ...] id [id ...]
// Parsing follows Redis's xreadCommand, including the order of its checks.
type xread struct {
	group, consumer []byte
	count           int // 0: no limit
	block           bool
	timeout         time.Duration // with block; 0 waits forever
	noAck           bool
	claim           bool  // CLAIM given (the last one counts)
	minIdleMs       int64 // CLAIM's min-idle-time
	maxCount        int   // MAXCOUNT: entries across all streams; 0: no limit
	maxSize         int64 // MAXSIZE: bytes across all streams (groups.Budget); 0: no limit
	keys, ids       [][]byte
}

// caps is one read's MAXCOUNT and MAXSIZE left, across its streams in the
// order given (Redis 8.10): once either is spent the remaining streams are
// skipped.
type caps struct {
	count  int // entries left; -1: no MAXCOUNT
	bytes  *groups.Budget
	cCount int // COUNT (0: none)
}

func (c xread) caps() *caps {
	cp := &caps{count: -1, cCount: c.count}
	if c.maxCount > 0 {
		cp.count = c.maxCount
	}
	if c.maxSize > 0 {
		cp.bytes = &groups.Budget{Left: c.maxSize}
	}
	return cp
}

// spent reports whether the streams left are skipped.
func (cp *caps) spent() bool { return cp.count == 0 || (cp.bytes != nil && cp.bytes.Full) }

// next returns the COUNT for the next stream (0: no limit).
func (cp *caps) next() int {
	if cp.count < 0 {
		return cp.cCount
	}
	if cp.cCount > 0 {
		return min(cp.cCount, cp.count)
	}
	return cp.count
}

// took counts n entries returned.
func (cp *caps) took(n int) {
	if cp.count > 0 {
		cp.count -= n
	}
}

func parseXRead(args [][]byte, isGroup bool) (xread, error) {
	var c xread
	streamsAt := 0
	for i := 1; i < len(args) && streamsAt == 0; i++ {
		a, more := args[i], len(args)-i-1
		switch {
		case command.EqualFold(a, "BLOCK") && more > 0:
			i++
			ms, ok := command.ParseInt(args[i])
			if !ok {
				return c, errTimeoutNotInt
			}
			if ms < 0 {
				return c, command.ErrTimeoutNegative
			}
			c.block, c.timeout = true, blockTimeout(ms)
		case command.EqualFold(a, "COUNT") && more > 0:
			i++
			n, err := command.IntArg(args[i])
			if err != nil {
				return c, err
			}
			if n > 0 && n < int64(^uint(0)>>1) {
				c.count = int(n)
			}
		case command.EqualFold(a, "STREAMS") && more > 0:
			streamsAt = i + 1
			if (len(args)-streamsAt)%2 != 0 {
				return c, errUnbalancedXRead
			}
		case command.EqualFold(a, "GROUP") && more >= 2:
			if !isGroup {
				return c, errGroupOnXRead
			}
			c.group, c.consumer = args[i+1], args[i+2]
			i += 2
		case command.EqualFold(a, "NOACK"):
			if !isGroup {
				return c, errNoAckOnXRead
			}
			c.noAck = true
		case (command.EqualFold(a, "MAXCOUNT") || command.EqualFold(a, "MAXSIZE")) && more > 0:
			i++
			n, ok := command.ParseInt(args[i])
			isCount := command.EqualFold(a, "MAXCOUNT")
			switch {
			case (!ok || n < 1) && isCount:
				return c, errMaxCount
			case !ok || n < 1:
				return c, errMaxSize
			case isCount:
				c.maxCount = int(min(n, math.MaxInt32))
			default:
				c.maxSize = n
			}
		case command.EqualFold(a, "CLAIM") && more > 0:
			if !isGroup {
				return c, errClaimOnXRead
			}
			i++
			ms, ok := command.ParseInt(args[i])
			if !ok {
				return c, errMinIdleNotInt
			}
			if ms < 0 {
				return c, errMinIdleNeg
			}
			c.claim, c.minIdleMs = true, ms
		default:
			return c, command.ErrSyntax
		}
	}
	if streamsAt == 0 {
		return c, command.ErrSyntax
	}
	if isGroup && c.group == nil {
		return c, errMissingGroup
	}
	if c.maxCount > 0 && c.count > c.maxCount {
		return c, errMaxCountBelowCt
	}
	n := (len(args) - streamsAt) / 2
	c.keys, c.ids = args[streamsAt:streamsAt+n], args[streamsAt+n:]
	return c, nil
}

// nextClaim returns when (Unix ms, on v's clock) an entry pending in c's
// group on one of c's streams, not yet idle enough, will have been idle for
// CLAIM's min-idle-time (a parked entry: that long after its due time),
// false when there is none.
func nextClaim(v *materialize.View, db uint8, c xread) (int64, bool) {
	var (
		at    int64
		found bool
	)
	for _, key := range c.keys {
		t, ok, err := groups.NextClaimable(v, db, key, c.group, c.minIdleMs)
		if err != nil || !ok {
			continue
		}
		if !found || t < at {
			at, found = t, true
		}
	}
	return at, found
}

// blockTimeout converts a BLOCK argument (ms >= 0) to the wait's timeout.
// Redis 7.0 accepts any int64 and waits that long; a time.Duration holds
// about 292 years, so a longer wait is a wait without timeout (0) rather
// than a product that wraps, possibly to a timeout that fires at once.
func blockTimeout(ms int64) time.Duration {
	if ms > int64(math.MaxInt64/time.Millisecond) {
		return 0
	}
	return time.Duration(ms) * time.Millisecond
}

// historyID parses an XREADGROUP history ID ("$" and "+" are errors
// there).
func historyID(b []byte) (codec.ID, error) {
	switch {
	case isDollar(b):
		return codec.ID{}, errXReadGroupDollar
	case isPlus(b):
		return codec.ID{}, errXReadGroupPlus
	}
	return ParseID(b, 0)
}

func isGT(b []byte) bool   { return len(b) == 1 && b[0] == '>' }
func isPlus(b []byte) bool { return len(b) == 1 && b[0] == '+' }

// beforeLast resolves XREAD's + ID (Redis 7.4): the ID just below the
// stream's last ID, so that the read returns the last entry (nothing if
// that entry was deleted, as in Redis, whose read starts from last_id - 1
// too); 0-0 for a missing key. A stream whose last ID is 0-0 (created
// empty, never added to) gets Redis's error.
// https://redis.io/docs/latest/commands/xread/ ("The special + ID")
func beforeLast(m codec.Meta, exists bool) (codec.ID, error) {
	if !exists {
		return codec.ID{}, nil
	}
	id := m.Stream.LastID
	switch {
	case id.Seq > 0:
		id.Seq--
	case id.Ms > 0:
		id.Ms, id.Seq = id.Ms-1, math.MaxUint64
	default:
		return codec.ID{}, errXReadLastZero
	}
	return id, nil
}

// streamReply is one stream's part of an XREAD/XREADGROUP reply: entries,
// or, for a CLAIM read, claimed (each entry with its idle time and
// delivery count).
type streamReply struct {
	key     []byte
	entries []streams.Entry
	claimed []groups.Delivered // non-nil for a CLAIM read
}

// writeStreamReplies writes [[key, entries], ...] (RESP3: a map of key to
// entries), or the null array when there are none.
func writeStreamReplies(x *command.Ctx, group []byte, rs []streamReply) {
	if len(rs) == 0 {
		x.Reply.NullArray()
		return
	}
	x.Reply.ArrayMap(len(rs))
	for _, r := range rs {
		x.Reply.Entry()
		x.Reply.Bulk(r.key)
		if r.claimed == nil {
			x.Delivered(r.key, group, r.entries)
			WriteEntries(x.Reply, r.entries)
			continue
		}
		if x.TracingDeliveries() {
			entries := make([]streams.Entry, len(r.claimed))
			for i, d := range r.claimed {
				entries[i] = d.Entry
			}
			x.Delivered(r.key, group, entries)
		}
		// CLAIM (Redis 8.4): [id, fields, idle ms, delivery count] each.
		x.Reply.Array(len(r.claimed))
		for _, d := range r.claimed {
			x.Reply.Array(4)
			WriteID(x.Reply, d.ID)
			writeFields(x.Reply, d.Fields)
			x.Reply.Int(d.IdleMs)
			x.Reply.Uint(d.Deliveries)
		}
	}
}

// XREAD: [[key, entries], ...] for the streams with entries after their
// ID, or the null array (also on BLOCK timeout, and inside EXEC where
// BLOCK does not wait). A blocked XREAD re-reads on each wake of one of
// its keys (command.Ctx.Block). Delayed delivery (Sediment's): a stream's
// read stops before its first entry not yet due, and a blocked XREAD held
// by such an entry also wakes at its due time.
// https://redis.io/docs/latest/commands/xread/
func runXRead(x *command.Ctx) error {
	c, err := parseXRead(x.Args, false)
	if err != nil {
		return err
	}
	v := x.View()
	after := make([]codec.ID, len(c.keys))
	for i, key := range c.keys {
		m, exists, err := streams.Meta(v, x.DB, key) // WRONGTYPE before the ID, as Redis
		if err != nil {
			return err
		}
		switch {
		case isDollar(c.ids[i]):
			after[i] = m.Stream.LastID
		case isPlus(c.ids[i]):
			if after[i], err = beforeLast(m, exists); err != nil {
				return err
			}
		case isGT(c.ids[i]):
			return errXReadGT
		default:
			if after[i], err = ParseID(c.ids[i], 0); err != nil {
				return err
			}
		}
	}
	// read returns the entries after each stream's ID that are due
	// (delayed delivery: a stream's read stops before its first entry not
	// yet due); hold is the earliest due time of such an entry, when
	// nothing was read (0: none), for the timed wake of a blocked read.
	read := func() (out []streamReply, hold int64, err error) {
		v := x.View()
		db := v.StorageDB(x.SelectedDB()) // a wake after a SWAPDB reads the swapped db
		cp := c.caps()
		for i, key := range c.keys {
			if cp.spent() {
				break
			}
			entries, due, err := streams.ReadDue(v, db, key, after[i], cp.next(), v.NowMs())
			if err != nil && !errors.Is(err, materialize.ErrWrongType) {
				return nil, 0, err
			}
			entries = cp.bytes.Cut(entries)
			cp.took(len(entries))
			if len(entries) > 0 {
				out = append(out, streamReply{key: key, entries: entries})
			}
			if due > 0 && (hold == 0 || due < hold) {
				hold = due
			}
		}
		if len(out) > 0 {
			hold = 0
		}
		return out, hold, nil
	}
	rs, hold, err := read()
	if err != nil {
		return err
	}
	if len(rs) > 0 || !c.block || x.InTxn() {
		writeStreamReplies(x, nil, rs)
		return nil
	}
	var deadline time.Time // zero: BLOCK 0
	if c.timeout > 0 {
		deadline = time.Now().Add(c.timeout)
	}
	for {
		// An entry not yet due ends the wait at its due time (a timed
		// wake), and the read runs again. A wake that finds an earlier one
		// (a delayed XADD ahead of it) ends the wait to set the timer
		// again: no polling, and only this key's waiters are woken.
		timeout, wakeAt, timed := waitUntil(deadline, hold)
		start := time.Now()
		served, err := x.Block(c.keys, timeout, func() bool {
			var (
				due int64
				err error
			)
			if rs, due, err = read(); err != nil {
				return false
			}
			if len(rs) == 0 && due > 0 && due < wakeAt {
				hold = due // re-arm: served with nothing
				return true
			}
			return len(rs) > 0
		})
		if err != nil {
			return err
		}
		if served {
			if len(rs) > 0 {
				break
			}
			continue // re-arm
		}
		if !timed || time.Since(start) < timeout {
			rs = nil // timed out, or the client left
			break
		}
		if rs, hold, err = read(); err != nil { // the due time came
			return err
		}
		if len(rs) > 0 {
			break
		}
	}
	writeStreamReplies(x, nil, rs)
	return nil
}

// waitUntil returns a blocked read's next wait: until deadline (zero:
// none) or until the due time holdMs (Unix ms; 0: none), whichever comes
// first, as a timeout for the wait (0: forever, at least a millisecond
// otherwise), as the Unix ms it ends at (math.MaxInt64: never), and
// whether it ends at holdMs rather than at the deadline.
func waitUntil(deadline time.Time, holdMs int64) (timeout time.Duration, endMs int64, timed bool) {
	endMs = math.MaxInt64
	if !deadline.IsZero() {
		endMs = deadline.UnixMilli()
	}
	if holdMs > 0 && holdMs < endMs {
		endMs, timed = holdMs, true
	}
	switch {
	case endMs == math.MaxInt64:
		return 0, endMs, false
	case !timed:
		return max(time.Until(deadline), time.Millisecond), endMs, false
	}
	return max(time.Until(time.UnixMilli(endMs)), time.Millisecond), endMs, true
}

// XREADGROUP: [[key, entries], ...]: streams read with '>' appear when they
// delivered something, streams read by ID (the consumer's history) always;
// the null array when nothing appears (also on BLOCK timeout). Blocking
// applies only when every ID is '>' (and not inside EXEC); the writer then
// serves the client (command.Waiter). A blocked reader whose stream is
// deleted gets UNBLOCKED, whose group is destroyed gets NOGROUP. Delayed
// delivery (Sediment's): '>' parks the entries not yet due that it passes
// (a blocked reader's wake records the parking and waits on), and a
// blocked CLAIM reader also wakes when a parked entry becomes claimable.
// https://redis.io/docs/latest/commands/xreadgroup/
func runXReadGroup(x *command.Ctx) error {
	c, err := parseXRead(x.Args, true)
	if err != nil {
		return err
	}
	args := groups.ReadArgs{Group: c.group, Consumer: c.consumer, Count: c.count, NoAck: c.noAck, MinIdleMs: c.minIdleMs}
	// deliver is the whole decision: reads every stream, records the
	// deliveries. blocked: called from a wake, where a missing key or group
	// ends the wait with an error and an empty read writes nothing, unless
	// it parked entries not yet due (delayed delivery). parkedDue is the
	// earliest due time of the entries the decision parked (0: none).
	deliver := func(v *materialize.View, blocked bool) (out []streamReply, events []codec.Event, parkedDue int64, err error) {
		// One session for the decision: a stream named twice sees what
		// the first read of it delivered.
		db := v.StorageDB(x.SelectedDB())
		sess := groups.NewSession(v, db)
		cp := c.caps()
		for i, key := range c.keys {
			if cp.spent() {
				break // MAXCOUNT or MAXSIZE reached: the other streams are skipped
			}
			args := args
			args.Count, args.Bytes = cp.next(), cp.bytes
			var (
				entries []streams.Entry
				err     error
			)
			var claimed []groups.Delivered
			claim := c.claim && isGT(c.ids[i]) // CLAIM applies to '>' only
			if claim {
				claimed, err = sess.ReadClaim(key, args)
			} else if isGT(c.ids[i]) {
				entries, err = sess.ReadNew(key, args)
			} else if _, _, err = groups.Lookup(v, db, key, c.group); err == nil {
				// Redis checks the key and group before the ID, stream by stream.
				var after codec.ID
				if after, err = historyID(c.ids[i]); err != nil {
					return nil, nil, 0, err
				}
				entries, err = sess.ReadHistory(key, args, after)
			}
			if blocked && errors.Is(err, materialize.ErrWrongType) {
				return nil, nil, 0, errUnblockedNoKey // the key is no longer a stream
			}
			if errors.Is(err, groups.ErrNoGroup) {
				if !blocked {
					return nil, nil, 0, errNoGroupRead(key, c.group)
				}
				if _, ok, _ := streams.Meta(v, db, key); !ok {
					return nil, nil, 0, errUnblockedNoKey
				}
				return nil, nil, 0, errUnblockedGroup
			}
			if err != nil {
				return nil, nil, 0, err
			}
			cp.took(len(entries) + len(claimed))
			switch {
			case claim:
				if len(claimed) > 0 {
					out = append(out, streamReply{key: key, claimed: claimed})
				}
			case len(entries) > 0 || !isGT(c.ids[i]):
				out = append(out, streamReply{key: key, entries: entries})
			}
		}
		parked, parkedDue := sess.Parked()
		if blocked && len(out) == 0 && parked == 0 {
			return nil, nil, 0, nil
		}
		events, err = sess.Finish()
		if err != nil {
			return nil, nil, 0, err
		}
		return out, events, parkedDue, nil
	}
	blockable := c.block && !x.InTxn() // inside EXEC: as on a timeout
	for _, id := range c.ids {
		blockable = blockable && isGT(id)
	}
	var (
		rs      []streamReply
		wakeErr error // the blocked read's error reply (UNBLOCKED, NOGROUP)
	)
	if !c.block {
		// A plain write: pipelined requests submit it without waiting.
		return x.Write(func(v *materialize.View) ([]codec.Event, error) {
			var evs []codec.Event
			var err error
			rs, evs, _, err = deliver(v, false)
			return evs, err
		}, func() { writeStreamReplies(x, c.group, rs) })
	}
	// With CLAIM, a blocked read also wakes when the oldest pending entry
	// becomes idle enough to claim (a parked entry: min-idle-time after its
	// due time), and decides again. wakeAt is when the current wait ends
	// (Unix ms); rearm tells the loop that a decision found an earlier
	// claim time (entries it parked, or parked by another reader) and
	// ended the wait to set the timer again.
	var (
		wakeAt int64
		rearm  bool
	)
	// claimAt is when a CLAIM reader that found nothing may find something,
	// given the entries its decision parked and, with v, the W index:
	// math.MaxInt64 for never.
	claimAt := func(v *materialize.View, parkedDue int64) int64 {
		at := int64(math.MaxInt64)
		if !c.claim {
			return at
		}
		if parkedDue > 0 && parkedDue <= math.MaxInt64-c.minIdleMs {
			at = parkedDue + c.minIdleMs
		}
		if v == nil {
			return at
		}
		if t, ok := nextClaim(v, v.StorageDB(x.SelectedDB()), c); ok && t < at {
			at = t
		}
		return at
	}
	// A blocking read that finds nothing queues its client in the same
	// decision: the writer serves it from then on. Entries it parked are
	// recorded with the queueing.
	decide := func(v *materialize.View) ([]codec.Event, *command.Waiter, error) {
		var (
			evs       []codec.Event
			parkedDue int64
			err       error
		)
		if rs, evs, parkedDue, err = deliver(v, false); err != nil || len(rs) > 0 || !blockable {
			return evs, nil, err
		}
		if parkedDue == 0 {
			evs = nil // nothing delivered or parked: the wait records nothing
		} else if claimAt(nil, parkedDue) < wakeAt {
			rearm = true // record the parking, then wait for its claim time
			return evs, nil, nil
		}
		return evs, &command.Waiter{Keys: c.keys, Group: string(c.group), Serve: func(v *materialize.View, _ []byte) ([]codec.Event, bool) {
			var (
				evs       []codec.Event
				parkedDue int64
			)
			rs, evs, parkedDue, wakeErr = deliver(v, true)
			if wakeErr != nil || len(rs) > 0 {
				return evs, true
			}
			if claimAt(v, parkedDue) < wakeAt {
				rearm = true // served with nothing (and the parking, if any)
				return evs, true
			}
			// Entries parked and nothing delivered: the writer records
			// the parking and the client waits on.
			return evs, false
		}}, nil
	}
	var (
		queued, served bool
		deadline       time.Time // zero: BLOCK 0
	)
	if c.timeout > 0 {
		deadline = time.Now().Add(c.timeout)
	}
	for {
		// With CLAIM, a blocked read also wakes when the oldest pending
		// entry becomes idle enough to claim, and decides again.
		var hold int64
		if c.claim && blockable {
			if at := claimAt(x.View(), 0); at != math.MaxInt64 {
				hold = max(at, 1)
			}
		}
		timeout, end, claimWake := waitUntil(deadline, hold)
		wakeAt, rearm = end, false
		start := time.Now()
		queued, served, err = x.WriteBlock(decide, timeout)
		if err == nil && rearm {
			continue // a decision found an earlier claim time: wait again
		}
		if err != nil || !queued || served || !claimWake || time.Since(start) < timeout {
			break // done, or the wait ended early: the client left or was unblocked
		}
	}
	switch {
	case err != nil:
		return err
	case !queued: // rs is the first read's
	case !served:
		rs = nil // timed out, or the client left
	case wakeErr != nil:
		return wakeErr
	}
	writeStreamReplies(x, c.group, rs)
	return nil
}
