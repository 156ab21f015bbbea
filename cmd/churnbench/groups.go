package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// The groups workload measures consumer groups end to end: P producers add
// 64-byte entries to one stream while C consumers read them through one
// group, XREADGROUP ... COUNT 10 BLOCK, and acknowledge each batch with one
// XACK. It makes two runs, each on a fresh stream:
//
//   - max: the producers add -n entries between them, each one XADD at a
//     time, as fast as the replies come back;
//   - rate: the producers offer -rate entries/s between them for
//     -duration, each entry at its scheduled time.
//
// Every payload carries two times, as offsets from the run's monotonic
// base: the entry's scheduled send time and the time its XADD was built.
// A consumer subtracts them from the time its XREADGROUP reply arrived.
// The end-to-end latency reported is the one from the scheduled time, so a
// producer that falls behind (the server is slow to answer its XADDs) adds
// its delay to every entry it sends late, and coordinated omission does
// not hide it. In the max run there is no schedule: both times are the
// send time.
//
// Timeline of one run: FLUSHALL; XGROUP CREATE key g $ MKSTREAM; open C
// consumer and P producer connections (PING each), start the consumers and
// wait until the server counts C more blocked clients; then, measured: the
// producers' XADDs, until every entry added has been received and
// acknowledged or -drain has passed since the producers stopped; then stop
// the consumers and check the deliveries against the producers' IDs, the
// group's PEL (XPENDING key g must count 0) and XLEN.

const groupsName = "groups"

const groupsDesc = "P producers, one connection each, XADD key * d <64-byte payload>; C consumers, one connection each, " +
	"loop XREADGROUP GROUP g c<i> COUNT 10 BLOCK <ms> STREAMS key > then XACK key g <ids>; " +
	"a max run (-n entries, as fast as replies come) and a rate run (-rate entries/s for -duration)"

const (
	groupsPayloadLen = 64 // bytes of each entry's value
	groupsReadCount  = 10 // XREADGROUP's COUNT
	// groupsDefaultN and groupsDefaultBlock replace the -n and -block
	// defaults for the groups workload.
	groupsDefaultN     = 200_000
	groupsDefaultBlock = 100 * time.Millisecond
	// groupsLateGrace is how long past the end of its schedule a producer
	// of the rate run keeps sending late entries before it gives up.
	groupsLateGrace = time.Second
)

// groupsResult is what one run of the groups workload measured.
type groupsResult struct {
	mode      string // "max" or "rate"
	producers int
	consumers int
	offered   int // rate run: the offered entries/s; 0 in the max run

	scheduled int           // entries the producers were to add
	entries   int           // entries added (XADD replies)
	acked     int           // distinct added entries received and acknowledged (XACK replied)
	elapsed   time.Duration // the first XADD (rate: the schedule's start) to the last acknowledgement, or the drain limit
	lat       []time.Duration
	latSend   []time.Duration
	cpu       time.Duration // server CPU over elapsed; negative when not measured
	cpuSource string        // "schedstat" or "stat"
	timeouts  int64         // BLOCK timeouts (null replies) within elapsed
	reads     int64         // XREADGROUP replies with entries within elapsed
	readEnts  int64         // entries in those replies
	partial   bool          // producers stopped by -max-time (max) or left behind their schedule (rate)

	duplicates int      // deliveries beyond the first of an entry
	dupIDs     []string // the first few entries delivered twice
	missing    []string // added entries no consumer received
	unknown    int      // received IDs the producers never got
	mismatched int      // entries whose payload is malformed or names another producer and sequence than its ID's XADD
	ackShort   int64    // IDs sent in XACK that its reply did not count
	pending    int64    // XPENDING key g count after the run; -1 when not read
	pendingIDs []string // the first few pending entries, with their consumers
	length     int64    // XLEN after the run; -1 when not read
}

func (g *groupsResult) msgsPerSec() float64 {
	if g.elapsed <= 0 {
		return 0
	}
	return float64(g.acked) / g.elapsed.Seconds()
}

// unsent is the number of entries the rate run's schedule held that the
// producers did not send.
func (g *groupsResult) unsent() int { return g.scheduled - g.entries }

// latMs returns the q quantile (nearest rank) of the end-to-end latencies
// from the scheduled send time, in milliseconds, or -1 without any.
func (g *groupsResult) latMs(q float64) float64 { return quantileMs(g.lat, q) }

// latSendMs is latMs for the latencies from the actual send time.
func (g *groupsResult) latSendMs(q float64) float64 { return quantileMs(g.latSend, q) }

// quantileMs returns the q quantile of sorted (nearest rank) in
// milliseconds, or -1 when sorted is empty.
func quantileMs(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return -1
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	i = min(max(i, 0), len(sorted)-1)
	return float64(sorted[i]) / float64(time.Millisecond)
}

// batch is the mean number of entries per XREADGROUP reply that had any,
// or 0.
func (g *groupsResult) batch() float64 {
	if g.reads == 0 {
		return 0
	}
	return float64(g.readEnts) / float64(g.reads)
}

// cpuPerMsg is the server's CPU µs per acknowledged entry, or -1.
func (g *groupsResult) cpuPerMsg() float64 {
	if g.cpu < 0 || g.acked == 0 {
		return -1
	}
	return float64(g.cpu) / float64(time.Microsecond) / float64(g.acked)
}

// check returns an error describing every way the run went wrong: an entry
// received twice or never, an ID nobody produced, a payload that does not
// match its ID, an acknowledgement not counted, or a group or stream left
// in another state than every entry added once and acknowledged.
func (g *groupsResult) check() error {
	var probs []string
	if g.duplicates > 0 {
		probs = append(probs, fmt.Sprintf("%d extra deliveries of already delivered entries (first: %s)",
			g.duplicates, strings.Join(g.dupIDs, " ")))
	}
	if n := len(g.missing); n > 0 {
		probs = append(probs, fmt.Sprintf("%d of %d entries never received (first: %s)",
			n, g.entries, strings.Join(g.missing[:min(n, 5)], " ")))
	}
	if g.unknown > 0 {
		probs = append(probs, fmt.Sprintf("%d received IDs the producers never got", g.unknown))
	}
	if g.mismatched > 0 {
		probs = append(probs, fmt.Sprintf("%d entries whose payload is malformed or belongs to another XADD", g.mismatched))
	}
	if g.ackShort > 0 {
		probs = append(probs, fmt.Sprintf("XACK replies counted %d fewer IDs than were sent", g.ackShort))
	}
	if g.pending > 0 {
		probs = append(probs, fmt.Sprintf("XPENDING key g counts %d entries after the run, want 0 (first: %s)",
			g.pending, strings.Join(g.pendingIDs, " ")))
	}
	if g.length >= 0 && g.length != int64(g.entries) {
		probs = append(probs, fmt.Sprintf("XLEN is %d, want %d (one per entry added)", g.length, g.entries))
	}
	if len(probs) == 0 {
		return nil
	}
	return fmt.Errorf("%s run: %s", g.mode, strings.Join(probs, "; "))
}

// groupFlow is what the producers and consumers of one run share.
type groupFlow struct {
	base time.Time // payload times are offsets from base (monotonic)

	mu         sync.Mutex
	got        map[string]int64 // entry ID -> producer<<32 | sequence from its payload, -1 if malformed
	duplicates int
	dupIDs     []string
	acked      int // distinct entries acknowledged
	target     int // acked that completes the run; -1 until known
	last       time.Time
	finished   bool
	done       chan struct{} // closed once acked reaches target

	// lat[i] and latSend[i] belong to consumer i until the consumers stop.
	lat, latSend [][]time.Duration

	ackShort atomic.Int64
	timeouts atomic.Int64
	reads    atomic.Int64 // XREADGROUP replies with entries
	readEnts atomic.Int64 // entries in them
	stopping atomic.Bool
	failOnce sync.Once
	failErr  error
	failed   chan struct{} // closed with failErr set
}

func newGroupFlow(consumers, target int) *groupFlow {
	return &groupFlow{
		base: time.Now(), got: map[string]int64{}, target: target, done: make(chan struct{}), failed: make(chan struct{}),
		lat: make([][]time.Duration, consumers), latSend: make([][]time.Duration, consumers),
	}
}

// now is the time since f.base.
func (f *groupFlow) now() time.Duration { return time.Since(f.base) }

func (f *groupFlow) fail(err error) {
	f.failOnce.Do(func() {
		f.failErr = err
		close(f.failed)
	})
}

// record notes a consumer's received entries and returns which of them
// were received for the first time.
func (f *groupFlow) record(ents []groupEntry) []bool {
	fresh := make([]bool, len(ents))
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, e := range ents {
		if _, ok := f.got[e.id]; ok {
			f.duplicates++
			if len(f.dupIDs) < 5 {
				f.dupIDs = append(f.dupIDs, e.id)
			}
			continue
		}
		tag := int64(-1)
		if p, ok := parsePayload(e.value); ok {
			tag = int64(p.producer)<<32 | int64(p.seq)
		}
		f.got[e.id] = tag
		fresh[i] = true
	}
	return fresh
}

// ackedAdd counts n more distinct entries as acknowledged.
func (f *groupFlow) ackedAdd(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.acked += n
	f.finishLocked()
}

// setTarget sets the acknowledgements that complete the run, once the
// producers have stopped.
func (f *groupFlow) setTarget(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.target = n
	f.finishLocked()
}

// finishLocked closes done when the target is reached. f.mu must be held.
func (f *groupFlow) finishLocked() {
	if !f.finished && f.target >= 0 && f.acked >= f.target {
		f.finished = true
		f.last = time.Now()
		close(f.done)
	}
}

// groupEntry is one entry of an XREADGROUP reply: its ID and the value of
// its single field d.
type groupEntry struct{ id, value string }

// groupEntries returns the entries of an XREADGROUP ... STREAMS key >
// reply that is not null: one stream, key, with entries of one field d.
func groupEntries(v any, key string) ([]groupEntry, error) {
	bad := fmt.Errorf("unexpected reply %v, want entries of %s with one field d", v, key)
	streams, ok := v.([]any)
	if !ok || len(streams) != 1 {
		return nil, bad
	}
	s, ok := streams[0].([]any)
	if !ok || len(s) != 2 || s[0] != key {
		return nil, bad
	}
	list, ok := s[1].([]any)
	if !ok {
		return nil, bad
	}
	ents := make([]groupEntry, 0, len(list))
	for _, x := range list {
		e, ok := x.([]any)
		if !ok || len(e) != 2 {
			return nil, bad
		}
		id, ok1 := e[0].(string)
		fv, ok2 := e[1].([]any)
		if !ok1 || !ok2 || len(fv) != 2 || fv[0] != "d" {
			return nil, bad
		}
		val, ok := fv[1].(string)
		if !ok {
			return nil, bad
		}
		ents = append(ents, groupEntry{id: id, value: val})
	}
	return ents, nil
}

// payload is what an entry's 64-byte value carries: its scheduled and
// actual send times (offsets from the run's base, nanoseconds), the
// producer and the producer's sequence number. It is written as decimal
// fields separated by spaces, padded with 'x':
//
//	0000000001234567890 0000000001234601234 2 517 xxxxxxxxxxxxxxxxxxxxx
type payload struct {
	sched, sent time.Duration
	producer    int
	seq         int
}

// appendPayload appends p's encoding, groupsPayloadLen bytes, to b.
func appendPayload(b []byte, p payload) []byte {
	start := len(b)
	b = appendPadded(b, int64(p.sched))
	b = append(b, ' ')
	b = appendPadded(b, int64(p.sent))
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(p.producer), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(p.seq), 10)
	b = append(b, ' ')
	for len(b)-start < groupsPayloadLen {
		b = append(b, 'x')
	}
	return b
}

// appendPadded appends v in decimal, zero-padded to 19 digits.
func appendPadded(b []byte, v int64) []byte {
	var d [20]byte
	s := strconv.AppendInt(d[:0], v, 10)
	for range 19 - len(s) {
		b = append(b, '0')
	}
	return append(b, s...)
}

// parsePayload decodes appendPayload's encoding.
func parsePayload(s string) (payload, bool) {
	if len(s) != groupsPayloadLen {
		return payload{}, false
	}
	f := strings.Fields(strings.TrimRight(s, "x"))
	if len(f) != 4 {
		return payload{}, false
	}
	var n [4]int64
	for i, x := range f {
		v, err := strconv.ParseInt(x, 10, 64)
		if err != nil || v < 0 {
			return payload{}, false
		}
		n[i] = v
	}
	if n[2] > math.MaxInt32 || n[3] > math.MaxInt32 {
		return payload{}, false
	}
	return payload{sched: time.Duration(n[0]), sent: time.Duration(n[1]), producer: int(n[2]), seq: int(n[3])}, true
}

// consume is consumer i's loop: XREADGROUP, then XACK what it returned,
// until the run stops.
func (f *groupFlow) consume(c *respConn, i int, key string, block, timeout time.Duration) {
	name := "c" + strconv.Itoa(i)
	read := encodeCommand("XREADGROUP", "GROUP", "g", name, "COUNT", strconv.Itoa(groupsReadCount),
		"BLOCK", strconv.FormatInt(block.Milliseconds(), 10), "STREAMS", key, ">")
	ack := make([]string, 0, 3+groupsReadCount)
	for !f.stopping.Load() {
		v, err := c.do(read, block+timeout)
		now := f.now()
		if err != nil {
			if !f.stopping.Load() {
				f.fail(fmt.Errorf("consumer %s: XREADGROUP: %w", name, err))
			}
			return
		}
		if v == nil {
			f.timeouts.Add(1)
			continue
		}
		ents, err := groupEntries(v, key)
		if err != nil {
			f.fail(fmt.Errorf("consumer %s: XREADGROUP: %w", name, err))
			return
		}
		if len(ents) == 0 {
			continue
		}
		f.reads.Add(1)
		f.readEnts.Add(int64(len(ents)))
		fresh := f.record(ents)
		ack = append(ack[:0], "XACK", key, "g")
		n := 0
		for j, e := range ents {
			ack = append(ack, e.id)
			if !fresh[j] {
				continue
			}
			n++
			if p, ok := parsePayload(e.value); ok {
				f.lat[i] = append(f.lat[i], now-p.sched)
				f.latSend[i] = append(f.latSend[i], now-p.sent)
			}
		}
		v, err = c.do(encodeCommand(ack...), timeout)
		if err != nil {
			if !f.stopping.Load() {
				f.fail(fmt.Errorf("consumer %s: XACK: %w", name, err))
			}
			return
		}
		got, ok := v.(int64)
		if !ok {
			f.fail(fmt.Errorf("consumer %s: XACK %s g <%d IDs>: unexpected reply %v", name, key, len(ents), v))
			return
		}
		if short := int64(len(ents)) - got; short > 0 {
			f.ackShort.Add(short)
		}
		f.ackedAdd(n)
	}
}

// produce is producer p's loop. It adds count entries, the k-th at
// schedule(k) (an offset from f.base; nil: as soon as the previous reply
// came), and returns their IDs in order. It stops early, with partial set,
// when the clock passes giveUp (zero: never); and when a consumer fails or
// the run is interrupted.
func (f *groupFlow) produce(r *runner, c *respConn, p int, key string, count int,
	schedule func(k int) time.Duration, giveUp time.Duration) (ids []string, partial bool, err error) {
	ids = make([]string, 0, count)
	var buf []byte
	for k := range count {
		select {
		case <-f.failed:
			return ids, false, nil // the consumer's error is reported
		case <-r.ctx.Done():
			return ids, false, nil
		default:
		}
		now := f.now()
		if giveUp > 0 && now > giveUp {
			return ids, true, nil
		}
		sched := now
		if schedule != nil {
			sched = schedule(k)
			if wait := sched - now; wait > 0 {
				time.Sleep(wait)
			}
			now = f.now()
		}
		buf = appendPayload(buf[:0], payload{sched: sched, sent: now, producer: p, seq: k})
		v, err := c.do(encodeCommand("XADD", key, "*", "d", string(buf)), r.cfg.opTimeout)
		if err != nil {
			return ids, false, fmt.Errorf("producer %d: XADD %s * d <payload>: %w", p, key, err)
		}
		id, ok := v.(string)
		if !ok {
			return ids, false, fmt.Errorf("producer %d: XADD %s * d <payload>: unexpected reply %v", p, key, v)
		}
		ids = append(ids, id)
	}
	return ids, false, nil
}

// runGroups makes one run of the groups workload, mode "max" or "rate". A
// result is returned whenever something was measured, also with an error;
// check reports wrong deliveries.
func (r *runner) runGroups(mode string) (*groupsResult, error) {
	cfg := r.cfg
	P, C := cfg.producers, cfg.consumers
	res := &groupsResult{mode: mode, producers: P, consumers: C, cpu: -1, pending: -1, length: -1}
	total := cfg.n
	if mode == "rate" {
		res.offered = cfg.rate
		total = int(int64(cfg.rate) * int64(cfg.duration) / int64(time.Second))
	}
	res.scheduled = total
	key := r.prefix + groupsName
	if err := r.do(nil, 0, redis.NewStatusCmd(r.ctx, "FLUSHALL")); err != nil {
		return nil, err
	}
	if err := r.do(nil, 0, redis.NewStatusCmd(r.ctx, "XGROUP", "CREATE", key, "g", "$", "MKSTREAM")); err != nil {
		return nil, err
	}
	base, err := r.clientCounts()
	if err != nil {
		return nil, err
	}
	conns, err := r.dialWorkers(C)
	if err != nil {
		return nil, err
	}
	prods := make([]*respConn, 0, P)
	var closeOnce sync.Once
	closeAll := func() {
		closeOnce.Do(func() {
			for _, c := range prods {
				c.close()
			}
			for _, c := range conns {
				c.close()
			}
		})
	}
	defer closeAll()
	for i := range P {
		c, err := r.dialChecked(C+i+1, C+P)
		if err != nil {
			return nil, fmt.Errorf("producer connection %d of %d: %w", i+1, P, err)
		}
		prods = append(prods, c)
	}

	f := newGroupFlow(C, -1)
	var wg sync.WaitGroup
	// stop lets the consumers see stopping at their next reply (a BLOCK
	// timeout at the latest), so that no connection closes under a read
	// that the server may be serving; it closes them after a while anyway.
	stop := func() {
		f.stopping.Store(true)
		waited := make(chan struct{})
		go func() {
			wg.Wait()
			close(waited)
		}()
		select {
		case <-waited:
		case <-time.After(cfg.block + 5*time.Second):
		}
		closeAll()
		<-waited
	}
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f.consume(c, i, key, cfg.block, cfg.opTimeout)
		}()
	}
	if err := r.waitBlocked(base.blocked+int64(C), f.failed, func() error { return f.failErr }); err != nil {
		stop()
		return nil, err
	}

	cpu, source, err := r.fineCPU()
	if err != nil {
		stop()
		return nil, err
	}
	res.cpuSource = source
	var cpu0 time.Duration
	if cpu != nil {
		if cpu0, err = cpu.read(); err != nil {
			stop()
			return nil, err
		}
	}
	timeouts0, reads0, readEnts0 := f.timeouts.Load(), f.reads.Load(), f.readEnts.Load()

	// The schedule starts a little ahead, so that every producer is
	// waiting for its first slot.
	start := f.now() + time.Millisecond
	t0 := f.base.Add(start)
	var giveUp time.Duration
	if mode == "max" && cfg.maxTime > 0 {
		giveUp = start + cfg.maxTime
	}
	if mode == "rate" {
		giveUp = start + cfg.duration + groupsLateGrace
	}
	ids := make([][]string, P)
	errs := make([]error, P)
	partial := make([]bool, P)
	var pwg sync.WaitGroup
	for p, c := range prods {
		pwg.Add(1)
		go func() {
			defer pwg.Done()
			var count int
			var schedule func(k int) time.Duration
			if mode == "rate" {
				// Entry g of the run goes at start + g/rate; producer p
				// sends entries p, p+P, p+2P, ...
				count = (total - p + P - 1) / P
				schedule = func(k int) time.Duration {
					g := int64(k)*int64(P) + int64(p)
					return start + time.Duration(g*int64(time.Second)/int64(cfg.rate))
				}
			} else {
				count = total*(p+1)/P - total*p/P
				if wait := start - f.now(); wait > 0 {
					time.Sleep(wait)
				}
			}
			ids[p], partial[p], errs[p] = f.produce(r, c, p, key, count, schedule, giveUp)
		}()
	}
	pwg.Wait()
	for p := range P {
		res.entries += len(ids[p])
		res.partial = res.partial || partial[p]
	}
	f.setTarget(res.entries)
	drain := time.NewTimer(cfg.drain)
	select {
	case <-f.done:
	case <-f.failed:
	case <-drain.C:
	case <-r.ctx.Done():
	}
	drain.Stop()
	end := time.Now()
	var perr error
	for _, err := range errs {
		if err != nil {
			perr = err
			break
		}
	}
	if cpu != nil {
		cpu1, err := cpu.read()
		if err != nil && perr == nil {
			perr = err
		}
		if err == nil && cpu1 >= cpu0 {
			res.cpu = cpu1 - cpu0 // a thread that exited would make it negative: not measured
		}
	}
	res.timeouts = f.timeouts.Load() - timeouts0
	res.reads, res.readEnts = f.reads.Load()-reads0, f.readEnts.Load()-readEnts0
	stop()

	f.mu.Lock()
	if !f.last.IsZero() {
		end = f.last
	}
	res.elapsed = end.Sub(t0)
	res.duplicates, res.dupIDs = f.duplicates, f.dupIDs
	res.ackShort = f.ackShort.Load()
	produced := make(map[string]bool, res.entries)
	for p := range P {
		for k, id := range ids[p] {
			produced[id] = true
			tag, ok := f.got[id]
			switch {
			case !ok:
				res.missing = append(res.missing, id)
			case tag != int64(p)<<32|int64(k):
				res.mismatched++
			}
		}
	}
	for id := range f.got {
		if !produced[id] {
			res.unknown++
		}
	}
	res.acked = max(f.acked-res.unknown, 0)
	f.mu.Unlock()
	for i := range C {
		res.lat = append(res.lat, f.lat[i]...)
		res.latSend = append(res.latSend, f.latSend[i]...)
	}
	slices.Sort(res.lat)
	slices.Sort(res.latSend)
	r.logf("%s %s: %d of %d entries received and acknowledged in %v", groupsName, mode, res.acked, res.entries, res.elapsed)

	switch {
	case perr != nil:
		return res, perr
	case f.failErr != nil:
		return res, f.failErr
	case r.ctx.Err() != nil:
		return res, r.ctx.Err()
	}
	r.waitGone(groupsName, base)
	return res, r.checkGroup(key, res)
}

// checkGroup reads what the run left in the group and the stream into res:
// the PEL's size and first entries, and the stream's length.
func (r *runner) checkGroup(key string, res *groupsResult) error {
	sum := redis.NewXPendingCmd(r.ctx, "XPENDING", key, "g")
	if err := r.do(nil, 0, sum); err != nil {
		return err
	}
	res.pending = sum.Val().Count
	if res.pending > 0 {
		ext := redis.NewXPendingExtCmd(r.ctx, "XPENDING", key, "g", "-", "+", 5)
		if err := r.do(nil, 0, ext); err != nil {
			return err
		}
		for _, p := range ext.Val() {
			res.pendingIDs = append(res.pendingIDs, fmt.Sprintf("%s (%s, delivered %d times)", p.ID, p.Consumer, p.RetryCount))
		}
	}
	n := redis.NewIntCmd(r.ctx, "XLEN", key)
	if err := r.do(nil, 0, n); err != nil {
		return err
	}
	res.length = n.Val()
	return nil
}

// groupsModes are the runs of the groups workload, in order.
var groupsModes = []string{"max", "rate"}

// runGroupsAll makes the max run, then the rate run, and prints each
// result. It stops at the first error.
func runGroupsAll(r *runner, stdout io.Writer) error {
	cfg := r.cfg
	if cfg.csv {
		writeGroupsCSVHeader(stdout)
	} else {
		fmt.Fprintf(stdout, "%s: %s\n", groupsName, groupsDesc)
		fmt.Fprintf(stdout, "%d producers, %d consumers; max: -n %d entries; rate: %d entries/s for %v; BLOCK %d ms, -drain %v\n",
			cfg.producers, cfg.consumers, cfg.n, cfg.rate, cfg.duration, cfg.block.Milliseconds(), cfg.drain)
	}
	var rows []*groupsResult
	for _, mode := range groupsModes {
		res, err := r.runGroups(mode)
		if res != nil {
			if err == nil {
				err = res.check()
			}
			if cfg.csv {
				writeGroupsCSV(stdout, res)
			} else {
				rows = append(rows, res)
			}
		}
		if err != nil {
			if !cfg.csv && len(rows) > 0 {
				writeGroupsTable(stdout, rows, cfg.pid > 0)
			}
			return fmt.Errorf("%s: %w", groupsName, err)
		}
	}
	if !cfg.csv {
		writeGroupsTable(stdout, rows, cfg.pid > 0)
	}
	return r.ctx.Err()
}

// writeGroupsCSVHeader and writeGroupsCSV print one row per run. offered
// is 0 in the max run. Latencies are in milliseconds: p50, p99 and max from
// the scheduled send time, p99_send from the actual send time (the same in
// the max run). batch is the mean number of entries per XREADGROUP reply
// that had any. cpu_us_per_msg is empty without -pid; unsent counts the
// entries the producers were to add and did not (the rate run's schedule,
// or -n cut by -max-time); partial is 1 when the producers stopped early.
func writeGroupsCSVHeader(w io.Writer) {
	fmt.Fprintln(w, "workload,mode,producers,consumers,offered_per_s,entries,acked,seconds,msgs_per_s,"+
		"p50_ms,p99_ms,max_ms,p99_send_ms,batch,cpu_us_per_msg,cpu_source,timeouts,duplicates,missing,unsent,partial")
}

func writeGroupsCSV(w io.Writer, g *groupsResult) {
	cpu, partial := csvCPU(g.cpuPerMsg()), csvFlag(g.partial)
	fmt.Fprintf(w, "%s,%s,%d,%d,%d,%d,%d,%.4f,%.1f,%.3f,%.3f,%.3f,%.3f,%.2f,%s,%s,%d,%d,%d,%d,%d\n",
		groupsName, g.mode, g.producers, g.consumers, g.offered, g.entries, g.acked, g.elapsed.Seconds(), g.msgsPerSec(),
		g.latMs(0.5), g.latMs(0.99), g.latMs(1), g.latSendMs(0.99), g.batch(), cpu, g.cpuSource, g.timeouts,
		g.duplicates, len(g.missing), g.unsent(), partial)
}

func writeGroupsTable(w io.Writer, rows []*groupsResult, withCPU bool) {
	cols := []string{"mode", "offered/s", "entries", "msgs/s", "p50 ms", "p99 ms", "max ms", "p99 send ms", "batch"}
	if withCPU {
		cols = append(cols, "cpu µs/msg")
	}
	cols = append(cols, "timeouts", "duplicates", "missing", "unsent")
	table := [][]string{cols}
	source := ""
	for _, g := range rows {
		offered := "-"
		if g.offered > 0 {
			offered = strconv.Itoa(g.offered)
		}
		entries := strconv.Itoa(g.entries)
		if g.partial {
			entries += "*"
		}
		row := []string{g.mode, offered, entries, fmt.Sprintf("%.0f", g.msgsPerSec()),
			fmt.Sprintf("%.3f", g.latMs(0.5)), fmt.Sprintf("%.3f", g.latMs(0.99)), fmt.Sprintf("%.3f", g.latMs(1)),
			fmt.Sprintf("%.3f", g.latSendMs(0.99)), fmt.Sprintf("%.1f", g.batch())}
		if withCPU {
			c := "-"
			if v := g.cpuPerMsg(); v >= 0 {
				c = fmt.Sprintf("%.1f", v)
			}
			row = append(row, c)
			source = g.cpuSource
		}
		row = append(row, strconv.FormatInt(g.timeouts, 10), strconv.Itoa(g.duplicates), strconv.Itoa(len(g.missing)),
			strconv.Itoa(g.unsent()))
		table = append(table, row)
	}
	printRows(w, table)
	fmt.Fprintln(w, "latency: XREADGROUP reply received - the entry's scheduled send time (p99 send: - its actual send time); "+
		"batch: entries per XREADGROUP reply")
	if source != "" {
		fmt.Fprintf(w, "cpu: server CPU per acknowledged entry, from /proc/PID/%s\n", map[string]string{
			"schedstat": "task/*/schedstat (ns)", "stat": "stat (10 ms ticks)"}[source])
	}
	for _, g := range rows {
		if g.partial {
			fmt.Fprintf(w, "* %s: the producers stopped early (-max-time, or more than %v behind the schedule)\n", g.mode, groupsLateGrace)
		}
	}
	fmt.Fprintln(w)
}
