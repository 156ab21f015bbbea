package broker

import (
	"errors"
	"math"
	"time"

	"github.com/tidwall/redcon"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/command/stream"
	"github.com/sediment-dev/sediment/groups"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/streams"
)

func init() {
	register(
		&cmdSpec{name: "xread", arity: -4, flags: flagReadonly | flagBlocking, first: 0, last: 0, step: 1,
			group: "stream", since: "5.0.0", summary: "Returns messages from multiple streams with IDs greater than the ones requested. Blocks until a message is available otherwise.", run: runXRead},
		&cmdSpec{name: "xreadgroup", arity: -7, flags: flagWrite | flagBlocking, first: 0, last: 0, step: 1,
			group: "stream", since: "5.0.0", summary: "Returns new or historical messages from a stream for a consumer in a group. Blocks until a message is available otherwise.", run: runXReadGroup},
	)
}

// xread is a parsed XREAD or XREADGROUP.
// XREAD [COUNT count] [BLOCK milliseconds] STREAMS key [key ...] id [id ...]
// XREADGROUP GROUP group consumer [COUNT count] [BLOCK milliseconds] [NOACK] STREAMS key [key ...] id [id ...]
// Parsing follows Redis's xreadCommand, including the order of its checks.
type xread struct {
	group, consumer []byte
	count           int // 0: no limit
	block           bool
	timeout         time.Duration // with block; 0 waits forever
	noAck           bool
	keys, ids       [][]byte
}

func parseXRead(args [][]byte, isGroup bool) (xread, error) {
	var c xread
	streamsAt := 0
	for i := 1; i < len(args) && streamsAt == 0; i++ {
		a, more := args[i], len(args)-i-1
		switch {
		case equalFold(a, "BLOCK") && more > 0:
			i++
			ms, ok := parseInt(args[i])
			if !ok {
				return c, errTimeoutNotInt
			}
			if ms < 0 {
				return c, errTimeoutNeg
			}
			c.block, c.timeout = true, blockTimeout(ms)
		case equalFold(a, "COUNT") && more > 0:
			i++
			n, err := intArg(args[i])
			if err != nil {
				return c, err
			}
			if n > 0 && n < int64(^uint(0)>>1) {
				c.count = int(n)
			}
		case equalFold(a, "STREAMS") && more > 0:
			streamsAt = i + 1
			if (len(args)-streamsAt)%2 != 0 {
				return c, errUnbalancedXRead
			}
		case equalFold(a, "GROUP") && more >= 2:
			if !isGroup {
				return c, errGroupOnXRead
			}
			c.group, c.consumer = args[i+1], args[i+2]
			i += 2
		case equalFold(a, "NOACK"):
			if !isGroup {
				return c, errNoAckOnXRead
			}
			c.noAck = true
		default:
			return c, errSyntax
		}
	}
	if streamsAt == 0 {
		return c, errSyntax
	}
	if isGroup && c.group == nil {
		return c, errMissingGroup
	}
	n := (len(args) - streamsAt) / 2
	c.keys, c.ids = args[streamsAt:streamsAt+n], args[streamsAt+n:]
	return c, nil
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

// historyID parses an XREADGROUP history ID ("$" is an error there).
func historyID(b []byte) (codec.ID, error) {
	if isDollar(b) {
		return codec.ID{}, errXReadGroupDollar
	}
	return stream.ParseID(b, 0)
}

func isGT(b []byte) bool     { return len(b) == 1 && b[0] == '>' }
func isDollar(b []byte) bool { return len(b) == 1 && b[0] == '$' }

// waitKeys returns the registry keys of c's streams.
func (x *exec) waitKeys(keys [][]byte) []waitKey {
	out := make([]waitKey, len(keys))
	for i, k := range keys {
		out[i] = waitKey{x.db(), string(k)}
	}
	return out
}

// blockOn flushes the replies already buffered (a blocked command must not
// hold back the replies of earlier pipelined commands), then waits in the
// registry and writes the result, or the null array on timeout.
func (x *exec) blockOn(keys [][]byte, timeout time.Duration, try attempt) error {
	if err := x.c.flush(); err != nil {
		return err
	}
	stop := x.c.watchClose()
	x.c.s.stats.blocked.Add(1)
	res, ok := x.c.s.wake.reg.block(x.c.ctx, x.waitKeys(keys), timeout, try)
	x.c.s.stats.blocked.Add(-1)
	stop()
	if !ok {
		writeNullArray(x.w())
		return nil
	}
	if res.seq > x.c.pendingSeq {
		x.c.pendingSeq = res.seq
	}
	res.reply(x.w())
	return nil
}

// XREAD: https://redis.io/docs/latest/commands/xread/
// Reply: [[key, entries], ...] for the streams with entries after their ID,
// or the null array (also on BLOCK timeout).
func runXRead(x *exec) error {
	c, err := parseXRead(x.args, false)
	if err != nil {
		return err
	}
	v := x.view()
	db := v.StorageDB(x.db())
	after := make([]codec.ID, len(c.keys))
	for i, key := range c.keys {
		m, _, err := streams.Meta(v, db, key) // WRONGTYPE before the ID, as Redis
		if err != nil {
			return err
		}
		switch {
		case isDollar(c.ids[i]):
			after[i] = m.Stream.LastID
		case isGT(c.ids[i]):
			return errXReadGT
		default:
			if after[i], err = stream.ParseID(c.ids[i], 0); err != nil {
				return err
			}
		}
	}
	read := func() ([]streamReply, error) {
		var out []streamReply
		v := x.view()
		db := v.StorageDB(x.db()) // a wake after a SWAPDB reads the swapped db
		for i, key := range c.keys {
			entries, err := streams.After(v, db, key, after[i], c.count)
			if err != nil && !errors.Is(err, materialize.ErrWrongType) {
				return nil, err
			}
			if len(entries) > 0 {
				out = append(out, streamReply{key, entries})
			}
		}
		return out, nil
	}
	rs, err := read()
	if err != nil {
		return err
	}
	if len(rs) > 0 || !c.block || x.inTxn() { // inside EXEC: as on a timeout
		writeStreamReplies(x.w(), rs)
		return nil
	}
	return x.blockOn(c.keys, c.timeout, func() (func(*redcon.Writer), uint64, bool) {
		rs, err := read()
		if err != nil || len(rs) == 0 {
			return nil, 0, false
		}
		return func(w *redcon.Writer) { writeStreamReplies(w, rs) }, 0, true
	})
}

// XREADGROUP: https://redis.io/docs/latest/commands/xreadgroup/
// Reply: [[key, entries], ...]: streams read with '>' appear when they
// delivered something, streams read by ID (the consumer's history) always;
// the null array when nothing appears (also on BLOCK timeout). Blocking
// applies only when every ID is '>'. A blocked reader whose stream is
// deleted gets UNBLOCKED, whose group is destroyed gets NOGROUP.
func runXReadGroup(x *exec) error {
	c, err := parseXRead(x.args, true)
	if err != nil {
		return err
	}
	args := groups.ReadArgs{Group: c.group, Consumer: c.consumer, Count: c.count, NoAck: c.noAck}
	// deliver is the whole decision: reads every stream, records the
	// deliveries. blocked: called from a wake, where a missing key or group
	// ends the wait with an error and an empty read writes nothing.
	deliver := func(v *materialize.View, blocked bool) ([]streamReply, []codec.Event, error) {
		var out []streamReply
		// One session for the decision: a stream named twice sees what
		// the first read of it delivered.
		db := v.StorageDB(x.db())
		sess := groups.NewSession(v, db)
		for i, key := range c.keys {
			var (
				entries []streams.Entry
				err     error
			)
			if isGT(c.ids[i]) {
				entries, err = sess.ReadNew(key, args)
			} else if _, _, err = groups.Lookup(v, db, key, c.group); err == nil {
				// Redis checks the key and group before the ID, stream by stream.
				var after codec.ID
				if after, err = historyID(c.ids[i]); err != nil {
					return nil, nil, err
				}
				entries, err = sess.ReadHistory(key, args, after)
			}
			if blocked && errors.Is(err, materialize.ErrWrongType) {
				return nil, nil, errUnblockedNoKey // the key is no longer a stream
			}
			if errors.Is(err, groups.ErrNoGroup) {
				if !blocked {
					return nil, nil, errNoGroupRead(key, c.group)
				}
				if _, ok, _ := streams.Meta(v, db, key); !ok {
					return nil, nil, errUnblockedNoKey
				}
				return nil, nil, errUnblockedGroup
			}
			if err != nil {
				return nil, nil, err
			}
			if len(entries) > 0 || !isGT(c.ids[i]) {
				out = append(out, streamReply{key, entries})
			}
		}
		if blocked && len(out) == 0 {
			return nil, nil, nil
		}
		events, err := sess.Finish()
		if err != nil {
			return nil, nil, err
		}
		return out, events, nil
	}
	// A blocking read that finds nothing queues its client in the same
	// decision (serve.go): the writer serves it from then on.
	var (
		rs []streamReply
		w  *consumerWaiter
	)
	blockable := c.block && !x.inTxn() // inside EXEC: as on a timeout
	for _, id := range c.ids {
		blockable = blockable && isGT(id)
	}
	err = x.write(func(v *materialize.View) ([]codec.Event, error) {
		var evs []codec.Event
		var err error
		rs, evs, err = deliver(v, false)
		if err == nil && len(rs) == 0 && blockable {
			w = &consumerWaiter{keys: x.waitKeys(c.keys), group: string(c.group), ctx: x.c.ctx, res: make(chan waitResult, 1),
				deliver: func(v *materialize.View) (func(*redcon.Writer), []codec.Event, bool) {
					rs, evs, err := deliver(v, true)
					if err != nil {
						msg, _ := toWire(err)
						return func(w *redcon.Writer) { w.WriteError(msg) }, nil, true
					}
					if len(rs) == 0 {
						return nil, nil, false
					}
					return func(w *redcon.Writer) { writeStreamReplies(w, rs) }, evs, true
				}}
			x.c.s.cons.queue(w)
		}
		return evs, err
	})
	if err != nil {
		if w != nil {
			x.c.s.cons.cancel(w) // the decision did not commit: leave the queue
		}
		return err
	}
	if w != nil {
		return x.waitConsumer(w, c.timeout)
	}
	writeStreamReplies(x.w(), rs)
	return nil
}

// waitConsumer flushes the replies already buffered, waits for the writer
// to serve w (serve.go) and writes its reply, or the null array on timeout.
func (x *exec) waitConsumer(w *consumerWaiter, timeout time.Duration) error {
	if err := x.c.flush(); err != nil {
		x.c.s.cons.cancel(w)
		return err
	}
	stop := x.c.watchClose()
	x.c.s.stats.blocked.Add(1)
	res, ok := x.c.s.cons.wait(w, timeout)
	x.c.s.stats.blocked.Add(-1)
	stop()
	if !ok {
		writeNullArray(x.w())
		return nil
	}
	if res.seq > x.c.pendingSeq {
		x.c.pendingSeq = res.seq
	}
	res.reply(x.w())
	return nil
}
