package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// The blocked workload measures what serving blocked consumers costs a
// server: W workers wait in XREADGROUP on one group while one producer adds
// entries one at a time. Each XADD should cost the server the same whether
// 10 or 1,000 workers wait, so the server CPU per delivered entry should
// not grow with W. It also checks that every entry reached exactly one
// worker.
//
// Timeline of one run (one W): FLUSHALL; XGROUP CREATE key g $ MKSTREAM;
// open W worker connections (PING each) and start them; wait until the
// server counts W more blocked clients; then, measured: the producer's
// XADDs, until every entry has been received or -drain has passed since
// the last XADD; then close the workers' connections and check the
// deliveries against the producer's IDs and the group's PEL.

const blockedName = "blocked"

const blockedDesc = "W workers, one connection each, loop XREADGROUP GROUP g c<i> COUNT 1 BLOCK <ms> STREAMS key >; " +
	"one producer adds -n entries, XADD key * f v, one at a time (group made by XGROUP CREATE key g $ MKSTREAM)"

// blockedResult is what one run of the blocked workload measured.
type blockedResult struct {
	workers   int
	entries   int             // entries the producer added
	delivered int             // distinct entries the workers received
	elapsed   time.Duration   // first XADD sent to the last entry received (or the drain limit)
	xadd      []time.Duration // each XADD's round trip
	cpu       time.Duration   // server CPU over elapsed; negative when not measured
	cpuSource string          // "schedstat" or "stat"
	timeouts  int64           // BLOCK timeouts (null replies) within elapsed
	partial   bool            // the producer was stopped by -max-time

	duplicates int      // deliveries beyond the first of an entry
	dupIDs     []string // the first few entries delivered twice
	missing    []string // produced entries no worker received
	unknown    int      // received IDs the producer never got
	// What the group's PEL says after the run (nobody acknowledges):
	pending       int64 // its size; -1 when not read
	lostReplies   int   // missing entries that are pending: delivered, but no reply arrived
	misattributed int   // pending under another consumer than the worker that received it
}

func (b *blockedResult) entriesPerSec() float64 {
	if b.elapsed <= 0 {
		return 0
	}
	return float64(b.delivered) / b.elapsed.Seconds()
}

func (b *blockedResult) xaddMsPerOp() float64 {
	if len(b.xadd) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range b.xadd {
		sum += d
	}
	return float64(sum) / float64(time.Millisecond) / float64(len(b.xadd))
}

// xaddP99Ms is the 99th percentile XADD round trip (nearest rank).
func (b *blockedResult) xaddP99Ms() float64 {
	if len(b.xadd) == 0 {
		return 0
	}
	s := slices.Clone(b.xadd)
	slices.Sort(s)
	i := int(math.Ceil(0.99*float64(len(s)))) - 1
	return float64(s[max(i, 0)]) / float64(time.Millisecond)
}

// cpuPerEntry is the server's CPU µs per delivered entry, or -1.
func (b *blockedResult) cpuPerEntry() float64 {
	if b.cpu < 0 || b.delivered == 0 {
		return -1
	}
	return float64(b.cpu) / float64(time.Microsecond) / float64(b.delivered)
}

// check returns an error describing every way the deliveries went wrong:
// an entry received twice or never, an ID nobody produced, or a PEL that
// does not match what the workers received.
func (b *blockedResult) check() error {
	var probs []string
	if b.duplicates > 0 {
		probs = append(probs, fmt.Sprintf("%d extra deliveries of already delivered entries (first: %s)",
			b.duplicates, strings.Join(b.dupIDs, " ")))
	}
	if n := len(b.missing); n > 0 {
		probs = append(probs, fmt.Sprintf("%d of %d entries never received (first: %s); "+
			"%d of them are pending in the group (the server delivered them, no reply arrived), %d were never delivered",
			n, b.entries, strings.Join(b.missing[:min(n, 5)], " "), b.lostReplies, n-b.lostReplies))
	}
	if b.unknown > 0 {
		probs = append(probs, fmt.Sprintf("%d received IDs the producer never got", b.unknown))
	}
	if b.pending >= 0 && b.pending != int64(b.entries) {
		probs = append(probs, fmt.Sprintf("the group's PEL holds %d entries, want %d (one per entry added)", b.pending, b.entries))
	}
	if b.misattributed > 0 {
		probs = append(probs, fmt.Sprintf("%d entries pending under another consumer than the worker that received them", b.misattributed))
	}
	if len(probs) == 0 {
		return nil
	}
	return fmt.Errorf("W=%d: %s", b.workers, strings.Join(probs, "; "))
}

// deliveries is what the workers share: who received which entry, and the
// signal that every entry has arrived.
type deliveries struct {
	mu         sync.Mutex
	by         map[string]int // entry ID -> the worker that received it first
	duplicates int
	dupIDs     []string
	target     int // distinct entries that complete the run
	last       time.Time
	done       chan struct{} // closed once len(by) reaches target

	timeouts atomic.Int64
	stopping atomic.Bool
	failOnce sync.Once
	failErr  error
	failed   chan struct{} // closed with failErr set
}

func newDeliveries(target int) *deliveries {
	return &deliveries{by: map[string]int{}, target: target, done: make(chan struct{}), failed: make(chan struct{})}
}

func (d *deliveries) record(id string, worker int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.by[id]; ok {
		d.duplicates++
		if len(d.dupIDs) < 5 {
			d.dupIDs = append(d.dupIDs, id)
		}
		return
	}
	d.by[id] = worker
	if len(d.by) == d.target {
		d.last = time.Now()
		close(d.done)
	}
}

// setTarget lowers the target to the entries actually added, when the
// producer stopped early.
func (d *deliveries) setTarget(n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.by) < d.target && len(d.by) >= n {
		d.last = time.Now()
		close(d.done)
	}
	d.target = n
}

func (d *deliveries) fail(err error) {
	d.failOnce.Do(func() {
		d.failErr = err
		close(d.failed)
	})
}

// work is worker i's loop: XREADGROUP until the run stops.
func (d *deliveries) work(c *respConn, i int, key string, block, timeout time.Duration) {
	req := encodeCommand("XREADGROUP", "GROUP", "g", "c"+strconv.Itoa(i), "COUNT", "1",
		"BLOCK", strconv.FormatInt(block.Milliseconds(), 10), "STREAMS", key, ">")
	for {
		v, err := c.do(req, block+timeout)
		if err != nil {
			if !d.stopping.Load() {
				d.fail(fmt.Errorf("worker c%d: XREADGROUP: %w", i, err))
			}
			return
		}
		if v == nil {
			d.timeouts.Add(1)
		} else {
			id, err := oneEntry(v, key)
			if err != nil {
				d.fail(fmt.Errorf("worker c%d: XREADGROUP: %w", i, err))
				return
			}
			d.record(id, i)
		}
		if d.stopping.Load() {
			return
		}
	}
}

// oneEntry returns the ID of the single entry in an XREADGROUP ... COUNT 1
// STREAMS key reply.
func oneEntry(v any, key string) (string, error) {
	streams, ok := v.([]any)
	if ok && len(streams) == 1 {
		if s, ok := streams[0].([]any); ok && len(s) == 2 && s[0] == key {
			if entries, ok := s[1].([]any); ok && len(entries) == 1 {
				if e, ok := entries[0].([]any); ok && len(e) == 2 {
					if id, ok := e[0].(string); ok {
						return id, nil
					}
				}
			}
		}
	}
	return "", fmt.Errorf("unexpected reply %v, want one entry of %s", v, key)
}

// runBlocked runs the blocked workload with the given number of workers.
// A result is returned whenever something was measured, also with an
// error; check reports wrong deliveries.
func (r *runner) runBlocked(workers int) (*blockedResult, error) {
	res := &blockedResult{workers: workers, cpu: -1, pending: -1}
	key := r.prefix + blockedName
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
	conns, err := r.dialWorkers(workers)
	if err != nil {
		return nil, err
	}
	prod, err := r.dialChecked(workers+1, workers+1)
	if err != nil {
		for _, c := range conns {
			c.close()
		}
		return nil, err
	}
	var closeOnce sync.Once
	closeAll := func() {
		closeOnce.Do(func() {
			prod.close()
			for _, c := range conns {
				c.close()
			}
		})
	}
	defer closeAll()

	d := newDeliveries(r.cfg.n)
	var wg sync.WaitGroup
	stop := func() {
		d.stopping.Store(true)
		closeAll()
		wg.Wait()
	}
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.work(c, i, key, r.cfg.block, r.cfg.opTimeout)
		}()
	}
	if err := r.waitBlocked(base.blocked+int64(workers), d.failed, func() error { return d.failErr }); err != nil {
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
	timeouts0 := d.timeouts.Load()
	t0 := time.Now()
	ids, perr := r.produce(prod, key, d, res)
	res.entries = len(ids)
	if res.partial {
		d.setTarget(len(ids))
	}
	drain := time.NewTimer(r.cfg.drain)
	select {
	case <-d.done:
	case <-d.failed:
	case <-drain.C:
	case <-r.ctx.Done():
	}
	drain.Stop()
	end := time.Now()
	if cpu != nil {
		cpu1, err := cpu.read()
		if err != nil && perr == nil {
			perr = err
		}
		if err == nil && cpu1 >= cpu0 {
			res.cpu = cpu1 - cpu0 // a thread that exited would make it negative: not measured
		}
	}
	res.timeouts = d.timeouts.Load() - timeouts0
	stop()

	d.mu.Lock()
	if !d.last.IsZero() {
		end = d.last
	}
	res.elapsed = end.Sub(t0)
	res.duplicates, res.dupIDs = d.duplicates, d.dupIDs
	produced := make(map[string]bool, len(ids))
	for _, id := range ids {
		produced[id] = true
		if _, ok := d.by[id]; !ok {
			res.missing = append(res.missing, id)
		}
	}
	res.delivered = len(d.by)
	for id := range d.by {
		if !produced[id] {
			res.unknown++
			res.delivered--
		}
	}
	d.mu.Unlock()
	r.logf("%s W=%d: %d of %d entries received in %v", blockedName, workers, res.delivered, res.entries, res.elapsed)

	switch {
	case perr != nil:
		return res, perr
	case d.failErr != nil:
		return res, d.failErr
	case r.ctx.Err() != nil:
		return res, r.ctx.Err()
	}
	r.waitGone(blockedName, base)
	if err := r.checkPEL(key, d.by, res); err != nil {
		return res, err
	}
	return res, nil
}

// produce adds -n entries one at a time, timing each XADD into res, until
// done, a worker fails or -max-time passes. It returns the IDs added.
func (r *runner) produce(c *respConn, key string, d *deliveries, res *blockedResult) ([]string, error) {
	var deadline time.Time
	if r.cfg.maxTime > 0 {
		deadline = time.Now().Add(r.cfg.maxTime)
	}
	req := encodeCommand("XADD", key, "*", "f", "v")
	ids := make([]string, 0, r.cfg.n)
	res.xadd = make([]time.Duration, 0, r.cfg.n)
	for range r.cfg.n {
		if !deadline.IsZero() && time.Now().After(deadline) {
			res.partial = true
			break
		}
		select {
		case <-d.failed:
			return ids, nil // the worker's error is reported
		case <-r.ctx.Done():
			return ids, nil
		default:
		}
		t := time.Now()
		v, err := c.do(req, r.cfg.opTimeout)
		res.xadd = append(res.xadd, time.Since(t))
		if err != nil {
			return ids, fmt.Errorf("producer: XADD %s * f v: %w", key, err)
		}
		id, ok := v.(string)
		if !ok {
			return ids, fmt.Errorf("producer: XADD %s * f v: unexpected reply %v", key, v)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// dialWorkers opens the workers' connections, each checked with PING.
func (r *runner) dialWorkers(workers int) ([]*respConn, error) {
	// Read now: out of descriptors, /proc/self/limits cannot be opened.
	r.fileLimit = openFileLimit()
	conns := make([]*respConn, 0, workers)
	for i := range workers {
		c, err := r.dialChecked(i+1, workers+1)
		if err != nil {
			for _, c := range conns {
				c.close()
			}
			return nil, fmt.Errorf("worker connection %d of %d: %w", i+1, workers, err)
		}
		conns = append(conns, c)
	}
	return conns, nil
}

// pingTimeout bounds a new connection's PING. A server out of file
// descriptors may leave accepted-by-the-kernel connections unanswered.
const pingTimeout = 10 * time.Second

// dialChecked opens one connection and checks it with PING; it is the
// n-th of the need connections the run holds, for the error message.
func (r *runner) dialChecked(n, need int) (*respConn, error) {
	c, err := dialRESP(r.cfg.addr, 5*time.Second)
	if err != nil {
		return nil, explainDial(err, n, need, r.fileLimit)
	}
	v, err := c.do(encodeCommand("PING"), pingTimeout)
	switch {
	case err != nil && errors.Is(err, os.ErrDeadlineExceeded):
		err = fmt.Errorf("PING: no reply within %v (is the server out of file descriptors? see its log and ulimit -n)", pingTimeout)
	case err != nil:
		err = fmt.Errorf("PING: %w", err) // Redis: "ERR max number of clients reached"
	case v != "PONG":
		err = fmt.Errorf("PING: unexpected reply %v", v)
	}
	if err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// explainDial says what to do when the n-th dial of need failed for want
// of file descriptors; limit is openFileLimit's, read earlier.
func explainDial(err error, n, need int, limit string) error {
	if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
		return fmt.Errorf("%w: out of file descriptors at connection %d of %d; raise the open-file limit "+
			"(ulimit -n, now %s) to at least %d", err, n, need, limit, need+64)
	}
	return err
}

// openFileLimit returns this process's open-file limits as "soft S, hard H"
// from /proc/self/limits, or "unknown".
func openFileLimit() string {
	f, err := os.Open("/proc/self/limits")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "Max open files"); ok {
			if f := strings.Fields(rest); len(f) >= 2 {
				return fmt.Sprintf("soft %s, hard %s", f[0], f[1])
			}
		}
	}
	return "unknown"
}

// clients is the server's count of connected and blocked clients.
type clients struct{ connected, blocked int64 }

func (r *runner) clientCounts() (clients, error) {
	info := redis.NewStringCmd(r.ctx, "INFO", "clients")
	if err := r.do(nil, 0, info); err != nil {
		return clients{}, err
	}
	var c clients
	var found int
	for _, line := range strings.Split(info.Val(), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		switch {
		case k == "connected_clients" && err == nil:
			c.connected = n
			found++
		case k == "blocked_clients" && err == nil:
			c.blocked = n
			found++
		}
	}
	if found != 2 {
		return c, fmt.Errorf("INFO clients: no connected_clients and blocked_clients in %q", info.Val())
	}
	return c, nil
}

// waitBlocked waits until the server counts want blocked clients, so that
// every worker waits before the first XADD. It returns failErr() early
// once failed is closed (a worker failed).
func (r *runner) waitBlocked(want int64, failed <-chan struct{}, failErr func() error) error {
	limit := 10*time.Second + time.Duration(want)*10*time.Millisecond
	deadline := time.Now().Add(limit)
	for {
		c, err := r.clientCounts()
		if err != nil {
			return err
		}
		if c.blocked >= want {
			return nil
		}
		select {
		case <-failed:
			return failErr()
		case <-r.ctx.Done():
			return r.ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d clients blocked after %v (INFO clients blocked_clients)", c.blocked, want, limit)
		}
	}
}

// waitGone waits (up to 10 s) until the server no longer counts the closed
// workers of workload name, so that the next run does not pay for this
// one's disconnects.
func (r *runner) waitGone(name string, base clients) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := r.clientCounts()
		if err != nil || (c.connected <= base.connected && c.blocked <= base.blocked) {
			return
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(r.log, "churnbench: %s: the server still counts %d clients (%d blocked) 10s after the workers left, "+
				"want %d (%d)\n", name, c.connected, c.blocked, base.connected, base.blocked)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkPEL reads the group's PEL and records in res how it compares with
// by (entry ID -> the worker that received it).
func (r *runner) checkPEL(key string, by map[string]int, res *blockedResult) error {
	sum := redis.NewXPendingCmd(r.ctx, "XPENDING", key, "g")
	if err := r.do(nil, 0, sum); err != nil {
		return err
	}
	res.pending = sum.Val().Count
	missing := map[string]bool{}
	for _, id := range res.missing {
		missing[id] = true
	}
	const page = 1000
	start := "-"
	for {
		ext := redis.NewXPendingExtCmd(r.ctx, "XPENDING", key, "g", start, "+", page)
		if err := r.do(nil, 0, ext); err != nil {
			return err
		}
		for _, p := range ext.Val() {
			if missing[p.ID] {
				res.lostReplies++
			} else if w, ok := by[p.ID]; ok && p.Consumer != "c"+strconv.Itoa(w) {
				res.misattributed++
			}
		}
		if len(ext.Val()) < page {
			return nil
		}
		next, err := nextID(ext.Val()[page-1].ID)
		if err != nil {
			return err
		}
		start = next
	}
}

// nextID returns the stream ID right after id (ms-seq).
func nextID(id string) (string, error) {
	msStr, seqStr, ok := strings.Cut(id, "-")
	ms, err1 := strconv.ParseUint(msStr, 10, 64)
	seq, err2 := strconv.ParseUint(seqStr, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return "", fmt.Errorf("malformed stream ID %q", id)
	}
	if seq == math.MaxUint64 {
		return strconv.FormatUint(ms+1, 10) + "-0", nil
	}
	return msStr + "-" + strconv.FormatUint(seq+1, 10), nil
}

// cpuReader reads a process's CPU time.
type cpuReader interface{ read() (time.Duration, error) }

// fineCPU returns the reader of the server's CPU time for the blocked
// workload: the threads' schedstat when the kernel has it, else the stat
// ticks. It returns nil without -pid.
func (r *runner) fineCPU() (cpuReader, string, error) {
	if r.cfg.pid == 0 {
		return nil, "", nil
	}
	t := &taskCPU{dir: fmt.Sprintf("/proc/%d/task", r.cfg.pid)}
	if _, err := t.read(); err == nil {
		return t, "schedstat", nil
	}
	return r.cpu, "stat", nil
}

// taskCPU reads a process's CPU time as the sum of its threads' run time,
// the first field of /proc/PID/task/TID/schedstat, in nanoseconds. A run of
// a few thousand entries costs Redis some tens of milliseconds: too few of
// /proc/PID/stat's 10 ms ticks to compare. Unlike procCPU it does not count
// children, and a thread that exits takes its time with it.
type taskCPU struct{ dir string }

func (t *taskCPU) read() (time.Duration, error) {
	ents, err := os.ReadDir(t.dir)
	if err != nil {
		return 0, err
	}
	var sum time.Duration
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(t.dir, e.Name(), "schedstat"))
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			continue // the thread exited
		}
		if err != nil {
			return 0, err
		}
		f := strings.Fields(string(data))
		if len(f) == 0 {
			return 0, fmt.Errorf("%s/%s/schedstat: empty", t.dir, e.Name())
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s/%s/schedstat: %w", t.dir, e.Name(), err)
		}
		sum += time.Duration(ns)
	}
	return sum, nil
}

// runBlockedAll runs the blocked workload for each -workers count and
// prints each result as it comes. It stops at the first error.
func runBlockedAll(r *runner, stdout io.Writer) error {
	if r.cfg.csv {
		writeBlockedCSVHeader(stdout)
	} else {
		fmt.Fprintf(stdout, "%s: %s\n", blockedName, blockedDesc)
		fmt.Fprintf(stdout, "-n %d entries, BLOCK %d ms, -drain %v\n", r.cfg.n, r.cfg.block.Milliseconds(), r.cfg.drain)
	}
	var rows []*blockedResult
	for _, w := range r.cfg.workers {
		res, err := r.runBlocked(w)
		if res != nil {
			if err == nil {
				err = res.check()
			}
			if r.cfg.csv {
				writeBlockedCSV(stdout, res)
			} else {
				rows = append(rows, res)
			}
		}
		if err != nil {
			if !r.cfg.csv && len(rows) > 0 {
				writeBlockedTable(stdout, rows, r.cfg.pid > 0)
			}
			return fmt.Errorf("%s: %w", blockedName, err)
		}
	}
	if !r.cfg.csv {
		writeBlockedTable(stdout, rows, r.cfg.pid > 0)
	}
	return r.ctx.Err()
}

// csvCPU is a CSV cell of CPU µs per item: empty when not measured
// (negative).
func csvCPU(us float64) string {
	if us < 0 {
		return ""
	}
	return fmt.Sprintf("%.2f", us)
}

// csvFlag is a CSV cell of a flag: 1 or 0.
func csvFlag(b bool) int {
	if b {
		return 1
	}
	return 0
}

// writeBlockedCSVHeader and writeBlockedCSV print one row per W.
// cpu_us_per_entry is empty without -pid; partial is 1 when -max-time
// stopped the producer.
func writeBlockedCSVHeader(w io.Writer) {
	fmt.Fprintln(w, "workload,workers,entries,delivered,seconds,entries_per_s,xadd_ms_per_op,xadd_p99_ms,"+
		"cpu_us_per_entry,cpu_source,timeouts,duplicates,missing,partial")
}

func writeBlockedCSV(w io.Writer, b *blockedResult) {
	cpu, partial := csvCPU(b.cpuPerEntry()), csvFlag(b.partial)
	fmt.Fprintf(w, "%s,%d,%d,%d,%.4f,%.1f,%.4f,%.4f,%s,%s,%d,%d,%d,%d\n", blockedName, b.workers, b.entries, b.delivered,
		b.elapsed.Seconds(), b.entriesPerSec(), b.xaddMsPerOp(), b.xaddP99Ms(), cpu, b.cpuSource, b.timeouts,
		b.duplicates, len(b.missing), partial)
}

func writeBlockedTable(w io.Writer, rows []*blockedResult, withCPU bool) {
	cols := []string{"workers", "entries", "entries/s", "xadd ms/op", "xadd p99 ms"}
	if withCPU {
		cols = append(cols, "cpu µs/entry")
	}
	cols = append(cols, "timeouts", "duplicates", "missing")
	table := [][]string{cols}
	source := ""
	for _, b := range rows {
		entries := strconv.Itoa(b.entries)
		if b.partial {
			entries += "*"
		}
		row := []string{strconv.Itoa(b.workers), entries, fmt.Sprintf("%.0f", b.entriesPerSec()),
			fmt.Sprintf("%.4f", b.xaddMsPerOp()), fmt.Sprintf("%.4f", b.xaddP99Ms())}
		if withCPU {
			c := "-"
			if v := b.cpuPerEntry(); v >= 0 {
				c = fmt.Sprintf("%.1f", v)
			}
			row = append(row, c)
			source = b.cpuSource
		}
		row = append(row, strconv.FormatInt(b.timeouts, 10), strconv.Itoa(b.duplicates), strconv.Itoa(len(b.missing)))
		table = append(table, row)
	}
	printRows(w, table)
	if source != "" {
		fmt.Fprintf(w, "cpu: server CPU per delivered entry, from /proc/PID/%s\n", map[string]string{
			"schedstat": "task/*/schedstat (ns)", "stat": "stat (10 ms ticks)"}[source])
	}
	for _, b := range rows {
		if b.partial {
			fmt.Fprintf(w, "* W=%d: the producer was stopped by -max-time\n", b.workers)
		}
	}
	fmt.Fprintln(w)
}
