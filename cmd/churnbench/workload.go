package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// cappedLen is the MAXLEN of the capped workloads.
const cappedLen = 1000

// workload is one churn pattern. A numbered workload repeats cycle until
// -n commands have run, in -blocks blocks; a probe workload (blocks set)
// runs each of its fixed commands -probe-n times, one row per command.
type workload struct {
	name, desc string
	after      string   // the workload this one must follow (it reads its key), or ""
	cmds       []string // command kinds of one cycle, in order
	// cycle runs one cycle on key; it records each command in b.
	cycle func(r *runner, key string, b *block) error
	// setup prepares key before the first cycle (nil: nothing to do).
	setup func(r *runner, key string) error
	// check verifies the final state after cycles cycles (nil: nothing to check).
	check func(r *runner, key string, cycles int) error
	// probes are a probe workload's commands, built for key.
	probes func(r *runner, key string) []probe
}

// probe is one command of a probe workload and the check of its reply.
type probe struct {
	label string
	cmd   func() redis.Cmder
	check func(redis.Cmder) error
}

func (w *workload) cmdsPerCycle() int { return len(w.cmds) }

var workloads = []*workload{
	{
		name: "capped-exact", desc: "XADD key MAXLEN 1000 * f v (stream first filled to 1000 entries, untimed)",
		cmds:  []string{"XADD"},
		setup: fillToCap,
		cycle: func(r *runner, key string, b *block) error {
			return r.do(b, 0, redis.NewStringCmd(r.ctx, "XADD", key, "MAXLEN", cappedLen, "*", "f", "v"))
		},
		check: func(r *runner, key string, cycles int) error {
			return r.checkLen(key, func(n int64) bool { return n == cappedLen })
		},
	},
	{
		name: "capped-approx", desc: "XADD key MAXLEN ~ 1000 * f v (stream first filled to 1000 entries, untimed)",
		cmds:  []string{"XADD"},
		setup: fillToCap,
		cycle: func(r *runner, key string, b *block) error {
			return r.do(b, 0, redis.NewStringCmd(r.ctx, "XADD", key, "MAXLEN", "~", cappedLen, "*", "f", "v"))
		},
		check: func(r *runner, key string, cycles int) error {
			return r.checkLen(key, func(n int64) bool { return n >= cappedLen && n <= int64(cappedLen+cycles) })
		},
	},
	{
		name: "group-ack", desc: "XADD key * f v; XREADGROUP GROUP g c COUNT 1 STREAMS key >; XACK key g <id> " +
			"(group made by XGROUP CREATE key g $ MKSTREAM)",
		cmds: []string{"XADD", "XREADGROUP", "XACK"},
		setup: func(r *runner, key string) error {
			return r.do(nil, 0, redis.NewStatusCmd(r.ctx, "XGROUP", "CREATE", key, "g", "$", "MKSTREAM"))
		},
		cycle: func(r *runner, key string, b *block) error {
			add := redis.NewStringCmd(r.ctx, "XADD", key, "*", "f", "v")
			if err := r.do(b, 0, add); err != nil {
				return err
			}
			read := redis.NewXStreamSliceCmd(r.ctx, "XREADGROUP", "GROUP", "g", "c", "COUNT", 1, "STREAMS", key, ">")
			if err := r.do(b, 1, read); err != nil {
				return err
			}
			if s := read.Val(); len(s) != 1 || len(s[0].Messages) != 1 || s[0].Messages[0].ID != add.Val() {
				return unexpected(read, fmt.Sprintf("one entry %s", add.Val()), s)
			}
			ack := redis.NewIntCmd(r.ctx, "XACK", key, "g", add.Val())
			if err := r.do(b, 2, ack); err != nil {
				return err
			}
			if ack.Val() != 1 {
				return unexpected(ack, "1", ack.Val())
			}
			return nil
		},
		check: func(r *runner, key string, cycles int) error {
			p := redis.NewXPendingCmd(r.ctx, "XPENDING", key, "g")
			if err := r.do(nil, 0, p); err != nil {
				return err
			}
			if p.Val().Count != 0 {
				return unexpected(p, "no pending entries", p.Val().Count)
			}
			return r.checkLen(key, func(n int64) bool { return n == int64(cycles) })
		},
	},
	{
		name: "pel-probe", desc: "on group-ack's stream and its now-empty PEL: XPENDING key g; " +
			"XPENDING key g - + 10; XAUTOCLAIM key g c2 0 0-0 COUNT 10",
		after: "group-ack",
		probes: func(r *runner, key string) []probe {
			return []probe{
				{
					label: "xpending",
					cmd:   func() redis.Cmder { return redis.NewXPendingCmd(r.ctx, "XPENDING", key, "g") },
					check: func(c redis.Cmder) error {
						if n := c.(*redis.XPendingCmd).Val().Count; n != 0 {
							return unexpected(c, "0 pending", n)
						}
						return nil
					},
				},
				{
					label: "xpending-ext",
					cmd: func() redis.Cmder {
						return redis.NewXPendingExtCmd(r.ctx, "XPENDING", key, "g", "-", "+", 10)
					},
					check: func(c redis.Cmder) error {
						if v := c.(*redis.XPendingExtCmd).Val(); len(v) != 0 {
							return unexpected(c, "no entries", v)
						}
						return nil
					},
				},
				{
					label: "xautoclaim",
					cmd: func() redis.Cmder {
						return redis.NewXAutoClaimCmd(r.ctx, "XAUTOCLAIM", key, "g", "c2", 0, "0-0", "COUNT", 10)
					},
					check: func(c redis.Cmder) error {
						if v, _ := c.(*redis.XAutoClaimCmd).Val(); len(v) != 0 {
							return unexpected(c, "nothing claimed", v)
						}
						return nil
					},
				},
			}
		},
	},
	{
		name: "xdel-queue", desc: "XADD key * f v; XRANGE key - + COUNT 1; XDEL key <id>",
		cmds: []string{"XADD", "XRANGE", "XDEL"},
		cycle: func(r *runner, key string, b *block) error {
			add := redis.NewStringCmd(r.ctx, "XADD", key, "*", "f", "v")
			if err := r.do(b, 0, add); err != nil {
				return err
			}
			rng := redis.NewXMessageSliceCmd(r.ctx, "XRANGE", key, "-", "+", "COUNT", 1)
			if err := r.do(b, 1, rng); err != nil {
				return err
			}
			if m := rng.Val(); len(m) != 1 || m[0].ID != add.Val() {
				return unexpected(rng, fmt.Sprintf("one entry %s", add.Val()), m)
			}
			del := redis.NewIntCmd(r.ctx, "XDEL", key, add.Val())
			if err := r.do(b, 2, del); err != nil {
				return err
			}
			if del.Val() != 1 {
				return unexpected(del, "1", del.Val())
			}
			return nil
		},
		check: func(r *runner, key string, cycles int) error {
			return r.checkLen(key, func(n int64) bool { return n == 0 })
		},
	},
}

// fillToCap adds cappedLen entries to key, untimed, so that every timed
// XADD of a capped workload trims, from the first block on.
func fillToCap(r *runner, key string) error {
	for i := 0; i < cappedLen; i++ {
		if err := r.do(nil, 0, redis.NewStringCmd(r.ctx, "XADD", key, "*", "f", "v")); err != nil {
			return err
		}
	}
	return nil
}

func workloadNames() []string {
	var names []string
	for _, w := range workloads {
		names = append(names, w.name)
	}
	return names
}

func lookupWorkload(name string) *workload {
	for _, w := range workloads {
		if w.name == name {
			return w
		}
	}
	return nil
}

// result is what one workload measured.
type result struct {
	name, desc string
	numbered   bool // rows are blocks 1..B (not probe commands)
	blocks     []*block
	stopped    string // why the workload ended early, or ""
}

// block is one row of a result: a run of consecutive commands.
type block struct {
	label   string
	ops     int // commands completed
	elapsed time.Duration
	cpu     time.Duration // server CPU time over the block; negative when not measured
	partial bool          // cut short by -max-time
	cmds    []string      // command kinds, as in workload.cmds
	cmdOps  []int
	cmdTime []time.Duration
}

func newBlock(label string, cmds []string) *block {
	return &block{label: label, cpu: -1, cmds: cmds, cmdOps: make([]int, len(cmds)), cmdTime: make([]time.Duration, len(cmds))}
}

func (b *block) msPerOp() float64 {
	if b.ops == 0 {
		return 0
	}
	return float64(b.elapsed) / float64(time.Millisecond) / float64(b.ops)
}

func (b *block) cmdMsPerOp(i int) float64 {
	if b.cmdOps[i] == 0 {
		return 0
	}
	return float64(b.cmdTime[i]) / float64(time.Millisecond) / float64(b.cmdOps[i])
}

func (b *block) cpuPerOp() float64 {
	if b.ops == 0 || b.cpu < 0 {
		return 0
	}
	return float64(b.cpu) / float64(time.Microsecond) / float64(b.ops)
}

// runner holds the connection and the settings shared by the workloads.
type runner struct {
	ctx    context.Context
	cfg    config
	c      *redis.Client
	cpu    *procCPU // nil without -pid
	log    io.Writer
	prefix string // key prefix unique to this run

	fileLimit string // the blocked workload's: openFileLimit before dialing
}

func newRunner(ctx context.Context, cfg config, log io.Writer) (*runner, error) {
	r := &runner{ctx: ctx, cfg: cfg, log: log, prefix: fmt.Sprintf("churn:%d:", time.Now().UnixNano())}
	if cfg.pid > 0 {
		r.cpu = &procCPU{path: fmt.Sprintf("/proc/%d/stat", cfg.pid)}
		if _, err := r.cpu.read(); err != nil {
			return nil, fmt.Errorf("-pid %d: %w", cfg.pid, err)
		}
	}
	// One connection, no retries (a retried command would be timed twice),
	// no handshake beyond what RESP2 needs.
	r.c = redis.NewClient(&redis.Options{
		Addr:            cfg.addr,
		Protocol:        2,
		DisableIdentity: true,
		MaxRetries:      -1,
		PoolSize:        1,
		DialTimeout:     5 * time.Second,
		ReadTimeout:     cfg.opTimeout,
		WriteTimeout:    cfg.opTimeout,
	})
	if err := r.do(nil, 0, redis.NewStatusCmd(ctx, "PING")); err != nil {
		r.c.Close()
		return nil, err
	}
	return r, nil
}

func (r *runner) close() { r.c.Close() }

// do sends cmd and waits for its reply, recording its time in b (unless b
// is nil) under command kind i. An error reply, a nil reply or a transport
// error is returned with the command's text.
func (r *runner) do(b *block, i int, cmd redis.Cmder) error {
	t0 := time.Now()
	err := r.c.Process(r.ctx, cmd)
	if b != nil {
		b.cmdTime[i] += time.Since(t0)
		b.cmdOps[i]++
	}
	if err != nil {
		return fmt.Errorf("%s: %w", cmdText(cmd), err)
	}
	return nil
}

// cmdText renders cmd's arguments as a command line.
func cmdText(cmd redis.Cmder) string {
	var parts []string
	for _, a := range cmd.Args() {
		parts = append(parts, fmt.Sprint(a))
	}
	return strings.Join(parts, " ")
}

func unexpected(cmd redis.Cmder, want string, got any) error {
	return fmt.Errorf("%s: unexpected reply %v, want %s", cmdText(cmd), got, want)
}

func (r *runner) checkLen(key string, ok func(int64) bool) error {
	c := redis.NewIntCmd(r.ctx, "XLEN", key)
	if err := r.do(nil, 0, c); err != nil {
		return err
	}
	if !ok(c.Val()) {
		return unexpected(c, "the length the workload leaves", c.Val())
	}
	return nil
}

func (r *runner) logf(format string, args ...any) {
	if r.cfg.verbose {
		fmt.Fprintf(r.log, "churnbench: "+format+"\n", args...)
	}
}

// runWorkload runs w and returns what it measured. On an error the result
// holds the blocks measured before it.
func (r *runner) runWorkload(w *workload) (*result, error) {
	res := &result{name: w.name, desc: w.desc, numbered: w.probes == nil}
	key := r.prefix + w.name
	if w.after != "" {
		key = r.prefix + w.after
	} else if err := r.do(nil, 0, redis.NewStatusCmd(r.ctx, "FLUSHALL")); err != nil {
		return res, err
	}
	var deadline time.Time
	if r.cfg.maxTime > 0 {
		deadline = time.Now().Add(r.cfg.maxTime)
	}
	if w.setup != nil {
		if err := w.setup(r, key); err != nil {
			return res, err
		}
	}
	if w.probes != nil {
		return res, r.runProbes(w, key, res, deadline)
	}
	total := r.cfg.n / w.cmdsPerCycle()
	done := 0
	for i := 0; i < r.cfg.blocks; i++ {
		cycles := total*(i+1)/r.cfg.blocks - total*i/r.cfg.blocks
		b := newBlock(strconv.Itoa(i+1), w.cmds)
		res.blocks = append(res.blocks, b)
		stop, err := r.measure(b, deadline, cycles, func() error { return w.cycle(r, key, b) })
		b.ops = b.cmdOpsTotal()
		done += b.ops / w.cmdsPerCycle()
		r.logf("%s block %d/%d: %d ops, %.4f ms/op", w.name, i+1, r.cfg.blocks, b.ops, b.msPerOp())
		if err != nil {
			return res, err
		}
		if stop != "" {
			res.stopped = fmt.Sprintf("%s: stopped in block %d of %d after %d commands", stop, i+1, r.cfg.blocks, b.ops)
			if b.ops == 0 {
				res.blocks = res.blocks[:len(res.blocks)-1]
			}
			if stop == "interrupted" {
				return res, r.ctx.Err()
			}
			return res, nil
		}
	}
	if w.check != nil {
		return res, w.check(r, key, done)
	}
	return res, nil
}

func (b *block) cmdOpsTotal() int {
	n := 0
	for _, o := range b.cmdOps {
		n += o
	}
	return n
}

// runProbes runs each probe of w -probe-n times, one row per probe.
func (r *runner) runProbes(w *workload, key string, res *result, deadline time.Time) error {
	for _, p := range w.probes(r, key) {
		b := newBlock(p.label, []string{strings.ToUpper(p.label)})
		res.blocks = append(res.blocks, b)
		stop, err := r.measure(b, deadline, r.cfg.probeN, func() error {
			c := p.cmd()
			if err := r.do(b, 0, c); err != nil {
				return err
			}
			return p.check(c)
		})
		b.ops = b.cmdOps[0]
		r.logf("%s %s: %d ops, %.4f ms/op", w.name, p.label, b.ops, b.msPerOp())
		if err != nil {
			return err
		}
		if stop != "" {
			res.stopped = fmt.Sprintf("%s: stopped in %s after %d commands", stop, p.label, b.ops)
			if b.ops == 0 {
				res.blocks = res.blocks[:len(res.blocks)-1]
			}
			if stop == "interrupted" {
				return r.ctx.Err()
			}
			return nil
		}
	}
	return nil
}

// measure runs step up to cycles times, timing the whole run and the
// server's CPU over it into b. It returns a reason when it stopped early:
// the deadline passed (unless it is zero) or the context was cancelled.
func (r *runner) measure(b *block, deadline time.Time, cycles int, step func() error) (stop string, err error) {
	var cpu0 time.Duration
	if r.cpu != nil {
		if cpu0, err = r.cpu.read(); err != nil {
			return "", err
		}
	}
	t0 := time.Now()
	for j := 0; j < cycles; j++ {
		if !deadline.IsZero() && time.Now().After(deadline) {
			b.partial = true
			stop = fmt.Sprintf("-max-time %v", r.cfg.maxTime)
			break
		}
		if r.ctx.Err() != nil {
			b.partial = true
			stop = "interrupted"
			break
		}
		if err = step(); err != nil {
			if r.ctx.Err() != nil {
				b.partial, stop, err = true, "interrupted", nil
			}
			break
		}
	}
	b.elapsed = time.Since(t0)
	if r.cpu != nil {
		cpu1, cerr := r.cpu.read()
		if cerr != nil && err == nil {
			err = cerr
		}
		b.cpu = cpu1 - cpu0
	}
	return stop, err
}

// procCPU reads a process's CPU time from /proc/PID/stat.
type procCPU struct{ path string }

// clockTicks is USER_HZ, the unit of the times in /proc/PID/stat; Linux
// reports them at 100 Hz whatever the kernel's own tick rate.
const clockTicks = 100

// read returns the process's user + system time, including that of its
// waited-for children (utime, stime, cutime, cstime: fields 14 to 17), so
// that work done in forked children (a Redis AOF rewrite) counts once they
// exit. The resolution is 10 ms.
func (p *procCPU) read() (time.Duration, error) {
	data, err := os.ReadFile(p.path)
	if err != nil {
		return 0, err
	}
	return parseStat(string(data))
}

func parseStat(s string) (time.Duration, error) {
	// The command name (field 2) is in parentheses and may hold spaces or
	// parentheses itself; the fields after the last ')' start at field 3.
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc stat line")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 15 {
		return 0, errors.New("short /proc stat line")
	}
	var ticks int64
	for _, field := range f[11:15] {
		v, err := strconv.ParseInt(field, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc stat field %q: %w", field, err)
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}
