// Command churnbench measures how the cost of stream commands moves as a
// stream's history grows: capped streams, acknowledged PELs and
// delete-after-processing queues leave deletions behind, and the cost per
// command should stay flat however many there are.
//
//	churnbench -addr 127.0.0.1:6380 [-n 1000000] [-blocks 10]
//	           [-workloads capped-exact,capped-approx,group-ack,pel-probe,xdel-queue]
//	           [-pid PID] [-max-time 0] [-probe-n 10000] [-csv] [-v]
//	churnbench -addr 127.0.0.1:6380 -workloads blocked [-n 2000]
//	           [-workers 10,100,1000] [-block 2s] [-drain 10s] [-pid PID] [-csv] [-v]
//	churnbench -addr 127.0.0.1:6380 -workloads groups [-n 200000]
//	           [-producers 4] [-consumers 4] [-rate 20000] [-duration 10s]
//	           [-block 100ms] [-drain 10s] [-pid PID] [-csv] [-v]
//	churnbench -list
//
// One client sends one command at a time (no pipelining) to a server on a
// loopback address. Each workload runs -n commands, on a fresh key after a
// FLUSHALL, split into -blocks consecutive blocks, and reports the
// wall-clock milliseconds per command of every block. With -pid it also
// reports the server process's CPU time per command (user + system, from
// /proc/PID/stat, children included), which varies much less than wall
// time on a busy machine.
//
// An operation is always one command. The group-ack and xdel-queue
// workloads run cycles of three commands, so -n commands are -n/3 cycles;
// their tables also give the time of each command kind. The capped
// workloads first fill the stream to its MAXLEN, untimed, so that every
// timed XADD trims.
//
// -max-time bounds each workload's wall-clock time: the workload stops
// there and reports the blocks it completed plus the partial one. Every
// loop is bounded by -n (and -probe-n) as well, so the program always ends
// by itself. A failed command or an unexpected reply stops the program
// with the command in the error.
//
// The blocked workload is of another kind and runs on its own: for each
// -workers count W, W connections loop XREADGROUP ... BLOCK on one group
// while one producer adds -n entries, one XADD at a time. It reports the
// entries delivered per second, the XADD round trip (mean and p99) and,
// with -pid, the server's CPU per delivered entry, from the threads'
// /proc/PID/task/*/schedstat (nanoseconds) where the kernel has it. It
// fails when an entry is received twice or never (blocked.go).
//
// The groups workload runs on its own too: -producers connections add
// 64-byte entries (XADD key * d <payload>) while -consumers connections
// loop XREADGROUP ... COUNT 10 BLOCK on one group and XACK each batch. A
// max run adds -n entries as fast as the replies come; a rate run offers
// -rate entries/s for -duration, each entry at its scheduled time. Each
// reports the entries received and acknowledged per second, the
// end-to-end latency (reply received minus the scheduled send time carried
// in the payload: p50, p99, max) and, with -pid, the server's CPU per
// entry. It fails unless every entry was received exactly once and
// acknowledged, and XPENDING counts 0 at the end (groups.go).
//
// scripts/bench.sh runs it against Sediment and redis-server side by side
// (`make bench-churn`, `make bench-blocked`, `make bench-groups`);
// docs/perf.md describes the workloads.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "churnbench:", err)
		os.Exit(1)
	}
}

// config is the parsed command line.
type config struct {
	addr      string
	n, blocks int
	workloads []*workload
	pid       int
	maxTime   time.Duration // zero: no limit
	opTimeout time.Duration
	probeN    int
	csv       bool
	verbose   bool
	list      bool
	// The blocked workload, which runs alone:
	blocked bool
	workers []int         // worker counts, one run each
	block   time.Duration // XREADGROUP's BLOCK, whole milliseconds
	drain   time.Duration // how long to wait for deliveries after the last XADD
	// The groups workload, which runs alone (also n, block, drain):
	groups    bool
	producers int
	consumers int
	rate      int           // entries/s offered by the rate run
	duration  time.Duration // length of the rate run's schedule
}

func parse(args []string, stderr io.Writer) (config, error) {
	var c config
	var names string
	fs := flag.NewFlagSet("churnbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.addr, "addr", "127.0.0.1:6380", "server address (loopback only)")
	fs.IntVar(&c.n, "n", 1_000_000, "commands per workload (blocked: entries added per run; "+
		"groups: entries of the max run, default 200000)")
	fs.IntVar(&c.blocks, "blocks", 10, "consecutive blocks each workload is measured in")
	fs.StringVar(&names, "workloads", strings.Join(workloadNames(), ","), "comma-separated workloads, run in this order")
	fs.IntVar(&c.pid, "pid", 0, "server process ID; when set, report its CPU time per command")
	fs.DurationVar(&c.maxTime, "max-time", 0, "wall-clock limit per workload; 0 means none")
	fs.DurationVar(&c.opTimeout, "op-timeout", 60*time.Second, "read/write timeout of one command")
	fs.IntVar(&c.probeN, "probe-n", 10000, "calls of each pel-probe command")
	fs.BoolVar(&c.csv, "csv", false, "print CSV instead of tables")
	fs.BoolVar(&c.verbose, "v", false, "log each block to stderr as it completes")
	fs.BoolVar(&c.list, "list", false, "list the workloads and exit")
	var workers string
	fs.StringVar(&workers, "workers", "10,100,1000", "blocked: comma-separated worker counts, one run each")
	fs.DurationVar(&c.block, "block", 2*time.Second, "blocked, groups: the workers' XREADGROUP BLOCK timeout (groups: default 100ms)")
	fs.DurationVar(&c.drain, "drain", 10*time.Second, "blocked, groups: how long to wait for deliveries after the last XADD")
	fs.IntVar(&c.producers, "producers", 4, "groups: producer connections")
	fs.IntVar(&c.consumers, "consumers", 4, "groups: consumer connections, one consumer name each")
	fs.IntVar(&c.rate, "rate", 20000, "groups: entries/s the rate run offers, split across the producers")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "groups: length of the rate run's schedule")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if c.list {
		return c, nil
	}
	if err := checkLoopback(c.addr); err != nil {
		return c, err
	}
	only := strings.TrimSpace(names)
	alone := only == blockedName || only == groupsName
	switch {
	case c.blocks < 1:
		return c, fmt.Errorf("-blocks must be at least 1, got %d", c.blocks)
	case c.n < 1:
		return c, fmt.Errorf("-n must be at least 1, got %d", c.n)
	case !alone && c.n < c.blocks:
		return c, fmt.Errorf("-n (%d) must be at least -blocks (%d)", c.n, c.blocks)
	case c.pid < 0:
		return c, fmt.Errorf("-pid must not be negative, got %d", c.pid)
	case c.maxTime < 0:
		return c, fmt.Errorf("-max-time must not be negative, got %v", c.maxTime)
	case c.opTimeout <= 0:
		return c, fmt.Errorf("-op-timeout must be positive, got %v", c.opTimeout)
	case c.probeN < 1:
		return c, fmt.Errorf("-probe-n must be at least 1, got %d", c.probeN)
	}
	if only == blockedName {
		return parseBlocked(c, workers)
	}
	if only == groupsName {
		return parseGroups(c, set)
	}
	var prev string
	for _, name := range strings.Split(names, ",") {
		name = strings.TrimSpace(name)
		if name == blockedName || name == groupsName {
			return c, fmt.Errorf("workload %s runs on its own (-workloads %s)", name, name)
		}
		w := lookupWorkload(name)
		if w == nil {
			return c, fmt.Errorf("unknown workload %q (have %s)", name, strings.Join(workloadNames(), ", "))
		}
		if w.after != "" && prev != w.after {
			return c, fmt.Errorf("workload %s must come right after %s", name, w.after)
		}
		if w.cmdsPerCycle() > 0 && c.n/w.cmdsPerCycle() < c.blocks {
			return c, fmt.Errorf("-n %d is too small for %d blocks of %s (%d commands per cycle)",
				c.n, c.blocks, name, w.cmdsPerCycle())
		}
		c.workloads = append(c.workloads, w)
		prev = name
	}
	return c, nil
}

// parseBlocked completes c for the blocked workload.
func parseBlocked(c config, workers string) (config, error) {
	c.blocked = true
	for _, f := range strings.Split(workers, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return c, fmt.Errorf("-workers: %q is not a positive count", f)
		}
		c.workers = append(c.workers, n)
	}
	switch {
	case c.block < time.Millisecond:
		return c, fmt.Errorf("-block must be at least 1ms, got %v", c.block)
	case c.drain <= 0:
		return c, fmt.Errorf("-drain must be positive, got %v", c.drain)
	}
	return c, nil
}

// parseGroups completes c for the groups workload; set holds the flags
// given on the command line, so that -n and -block get their groups
// defaults when absent.
func parseGroups(c config, set map[string]bool) (config, error) {
	c.groups = true
	if !set["n"] {
		c.n = groupsDefaultN
	}
	if !set["block"] {
		c.block = groupsDefaultBlock
	}
	switch {
	case c.producers < 1:
		return c, fmt.Errorf("-producers must be at least 1, got %d", c.producers)
	case c.consumers < 1:
		return c, fmt.Errorf("-consumers must be at least 1, got %d", c.consumers)
	case c.rate < 1:
		return c, fmt.Errorf("-rate must be at least 1, got %d", c.rate)
	case c.duration <= 0:
		return c, fmt.Errorf("-duration must be positive, got %v", c.duration)
	case int64(c.rate)*int64(c.duration)/int64(time.Second) < 1:
		return c, fmt.Errorf("-rate %d for -duration %v schedules no entry", c.rate, c.duration)
	case c.block < time.Millisecond:
		return c, fmt.Errorf("-block must be at least 1ms, got %v", c.block)
	case c.drain <= 0:
		return c, fmt.Errorf("-drain must be positive, got %v", c.drain)
	}
	return c, nil
}

// checkLoopback returns an error unless addr is host:port with a loopback
// host: localhost or a loopback IP. No name is resolved.
func checkLoopback(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-addr %q: %w", addr, err)
	}
	if port == "" {
		return fmt.Errorf("-addr %q: no port", addr)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("-addr %q: only loopback addresses (127.0.0.0/8, ::1, localhost) are allowed", addr)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parse(args, stderr)
	if err != nil {
		return err
	}
	if c.list {
		for _, w := range workloads {
			fmt.Fprintf(stdout, "%s\t%s\n", w.name, w.desc)
		}
		fmt.Fprintf(stdout, "%s\t%s (runs on its own)\n", blockedName, blockedDesc)
		fmt.Fprintf(stdout, "%s\t%s (runs on its own)\n", groupsName, groupsDesc)
		return nil
	}
	r, err := newRunner(ctx, c, stderr)
	if err != nil {
		return err
	}
	defer r.close()
	if c.blocked {
		return runBlockedAll(r, stdout)
	}
	if c.groups {
		return runGroupsAll(r, stdout)
	}
	if c.csv {
		writeCSVHeader(stdout)
	}
	for _, w := range c.workloads {
		res, err := r.runWorkload(w)
		if res != nil && len(res.blocks) > 0 {
			if c.csv {
				writeCSV(stdout, res)
			} else {
				writeTable(stdout, res, c.pid > 0)
			}
		}
		if err != nil {
			return fmt.Errorf("%s: %w", w.name, err)
		}
	}
	return nil
}

// writeCSVHeader and writeCSV print one row per block with command "all",
// then one row per command kind of the block (without CPU time). ms_per_op
// is wall-clock milliseconds per command, cpu_us_per_op the server's CPU
// microseconds per command (empty without -pid), partial is 1 for a block
// cut short by -max-time.
func writeCSVHeader(w io.Writer) {
	fmt.Fprintln(w, "workload,block,command,ops,ms_per_op,cpu_us_per_op,partial")
}

func writeCSV(w io.Writer, res *result) {
	for _, b := range res.blocks {
		partial := 0
		if b.partial {
			partial = 1
		}
		cpu := ""
		if b.cpu >= 0 {
			cpu = fmt.Sprintf("%.2f", b.cpuPerOp())
		}
		fmt.Fprintf(w, "%s,%s,all,%d,%.4f,%s,%d\n", res.name, b.label, b.ops, b.msPerOp(), cpu, partial)
		if len(b.cmds) < 2 {
			continue
		}
		for i, cmd := range b.cmds {
			fmt.Fprintf(w, "%s,%s,%s,%d,%.4f,,%d\n", res.name, b.label, cmd, b.cmdOps[i], b.cmdMsPerOp(i), partial)
		}
	}
}

// writeTable prints res for a person: one row per block.
func writeTable(w io.Writer, res *result, withCPU bool) {
	fmt.Fprintf(w, "%s: %s\n", res.name, res.desc)
	var ops int
	for _, b := range res.blocks {
		ops += b.ops
	}
	rows := "blocks"
	if !res.numbered {
		rows = "probes"
	}
	fmt.Fprintf(w, "%d commands in %d %s, one client, unpipelined\n", ops, len(res.blocks), rows)
	cols := []string{"block", "ops", "ms/op"}
	multi := len(res.blocks[0].cmds) > 1
	if multi {
		for _, cmd := range res.blocks[0].cmds {
			cols = append(cols, cmd+" ms")
		}
	}
	if withCPU {
		cols = append(cols, "cpu µs/op")
	}
	table := [][]string{cols}
	for _, b := range res.blocks {
		label := b.label
		if b.partial {
			label += "*"
		}
		row := []string{label, fmt.Sprint(b.ops), fmt.Sprintf("%.4f", b.msPerOp())}
		if multi {
			for i := range b.cmds {
				row = append(row, fmt.Sprintf("%.4f", b.cmdMsPerOp(i)))
			}
		}
		if withCPU {
			row = append(row, fmt.Sprintf("%.1f", b.cpuPerOp()))
		}
		table = append(table, row)
	}
	printRows(w, table)
	first, last := res.blocks[0], res.blocks[len(res.blocks)-1]
	if res.numbered && len(res.blocks) > 1 && first.msPerOp() > 0 {
		fmt.Fprintf(w, "last/first block: %.2f\n", last.msPerOp()/first.msPerOp())
	}
	if res.stopped != "" {
		fmt.Fprintf(w, "* %s\n", res.stopped)
	}
	fmt.Fprintln(w)
}

// printRows prints table with its columns aligned: the first to the left,
// the others to the right.
func printRows(w io.Writer, table [][]string) {
	widths := make([]int, len(table[0]))
	for _, row := range table {
		for i, s := range row {
			widths[i] = max(widths[i], len([]rune(s)))
		}
	}
	for _, row := range table {
		var sb strings.Builder
		for i, s := range row {
			pad := strings.Repeat(" ", widths[i]-len([]rune(s)))
			if i == 0 {
				sb.WriteString(s + pad)
			} else {
				sb.WriteString("  " + pad + s)
			}
		}
		fmt.Fprintln(w, sb.String())
	}
}
