// Command zrankbench measures sorted-set reads by rank and by score on one
// large set, against one server or several side by side: ZRANK, ZRANGE by
// rank at the head, the tail, the middle and a random rank, ZCOUNT over the
// whole set and over a random score range, and ZSCORE.
//
//	zrankbench -addr 127.0.0.1:6380[,127.0.0.1:6379] [-name sediment,redis]
//	           [-pid PID[,PID]] [-n 10000] [-calls 2000] [-warmup 200]
//	           [-cmds zrank,zrange-head,...] [-fill=true] [-settle 3s] [-seed 1]
//	zrankbench -list
//
// With -fill (the default) it first deletes the key (zrankbench:<n>) on
// every server and fills it with -n members m:<i> of score i, so that
// member m:<i> has rank i; the members are added in a random order, -batch
// members per ZADD and -pipeline ZADDs per round trip, so that insertions
// land all over the set as they would in a leaderboard. It reports each
// server's fill rate, then waits -settle for the flushes the fill started.
// Without -fill it checks that ZCARD is -n.
//
// Then, command by command and server by server, one connection sends
// -warmup untimed calls and -calls timed ones, one at a time (no
// pipelining), with the same random members and ranks on every server. It
// reports the mean, median and 99th percentile round trip and, with -pid,
// the server's CPU time per call: the sum of its threads' run time from
// /proc/PID/task/*/schedstat (nanoseconds), or /proc/PID/stat (10 ms
// ticks) where the kernel has no schedstat. With two servers it adds the
// ratios first / second of the mean and of the CPU (above 1: the first
// server is slower). Every reply is checked against the ranks the fill
// gave, and a wrong one stops the program.
//
// To compare Sediment with redis-server (see scripts/bench.sh for the
// settings both are started with):
//
//	go run ./cmd/zrankbench -addr 127.0.0.1:7401,127.0.0.1:7402 \
//	    -name sediment,redis -pid $SED_PID,$RED_PID -n 1000000
//
// `make bench-zset` runs it that way for -n 10000 and -n 1000000. What it
// measures is the cost model of docs/rfcs/20261123_sorted_sets.md: a rank
// in Sediment is a sum over rank blocks plus a walk inside one block.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sediment-dev/sediment/internal/proccpu"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "zrankbench:", err)
		os.Exit(1)
	}
}

// A command is one measured read: args builds the call from a random
// source, check verifies its reply. n is the set's size; member m:<i> has
// score and rank i.
type command struct {
	name, desc string
	call       func(key string, n int, rng *rand.Rand) (args []any, check func(any) error)
}

var commands = []command{
	{"zrank", "ZRANK key m:<random>", func(key string, n int, rng *rand.Rand) ([]any, func(any) error) {
		i := rng.IntN(n)
		return []any{"ZRANK", key, member(i)}, wantInt(int64(i))
	}},
	{"zrange-head", "ZRANGE key 0 9", func(key string, n int, _ *rand.Rand) ([]any, func(any) error) {
		return []any{"ZRANGE", key, 0, 9}, wantMembers(0)
	}},
	{"zrange-tail", "ZRANGE key -10 -1", func(key string, n int, _ *rand.Rand) ([]any, func(any) error) {
		return []any{"ZRANGE", key, -10, -1}, wantMembers(n - 10)
	}},
	{"zrange-mid", "ZRANGE key n/2 n/2+9", func(key string, n int, _ *rand.Rand) ([]any, func(any) error) {
		return []any{"ZRANGE", key, n / 2, n/2 + 9}, wantMembers(n / 2)
	}},
	{"zrange-rand", "ZRANGE key r r+9, r random", func(key string, n int, rng *rand.Rand) ([]any, func(any) error) {
		r := rng.IntN(n - 9)
		return []any{"ZRANGE", key, r, r + 9}, wantMembers(r)
	}},
	{"zcount", "ZCOUNT key -inf +inf", func(key string, n int, _ *rand.Rand) ([]any, func(any) error) {
		return []any{"ZCOUNT", key, "-inf", "+inf"}, wantInt(int64(n))
	}},
	{"zcount-rand", "ZCOUNT key a b, a <= b random", func(key string, n int, rng *rand.Rand) ([]any, func(any) error) {
		a, b := rng.IntN(n), rng.IntN(n)
		if a > b {
			a, b = b, a
		}
		return []any{"ZCOUNT", key, a, b}, wantInt(int64(b - a + 1))
	}},
	{"zscore", "ZSCORE key m:<random>", func(key string, n int, rng *rand.Rand) ([]any, func(any) error) {
		i := rng.IntN(n)
		return []any{"ZSCORE", key, member(i)}, wantString(strconv.Itoa(i))
	}},
}

func member(i int) string { return "m:" + strconv.Itoa(i) }

func wantInt(want int64) func(any) error {
	return func(got any) error {
		if v, ok := got.(int64); !ok || v != want {
			return fmt.Errorf("got %#v, want %d", got, want)
		}
		return nil
	}
}

func wantString(want string) func(any) error {
	return func(got any) error {
		if v, ok := got.(string); !ok || v != want {
			return fmt.Errorf("got %#v, want %q", got, want)
		}
		return nil
	}
}

// wantMembers checks for the ten members of ranks from to from+9.
func wantMembers(from int) func(any) error {
	return func(got any) error {
		v, ok := got.([]any)
		if !ok || len(v) != 10 {
			return fmt.Errorf("got %#v, want 10 members from m:%d", got, from)
		}
		for j, m := range v {
			if m != member(from+j) {
				return fmt.Errorf("member %d is %#v, want %q", j, m, member(from+j))
			}
		}
		return nil
	}
}

// server is one server under test.
type server struct {
	name string
	rdb  *redis.Client
	cpu  func() (time.Duration, error) // nil without -pid
	src  string                        // where cpu reads, for the report
}

type config struct {
	addrs, names, pids  []string
	n, calls, warmup    int
	batch, pipeline     int
	cmds                []command
	fill                bool
	settle              time.Duration
	seed                uint64
	key                 string
	timeout             time.Duration
	list                bool
	addrFlag, cmdsFlag  string
	namesFlag, pidsFlag string
}

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("zrankbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.addrFlag, "addr", "127.0.0.1:6380", "server addresses, comma-separated")
	fs.StringVar(&c.namesFlag, "name", "", "server names for the report, comma-separated (default: the addresses)")
	fs.StringVar(&c.pidsFlag, "pid", "", "server process IDs, comma-separated, for CPU per call (default: none)")
	fs.IntVar(&c.n, "n", 10000, "members in the set (at least 10)")
	fs.IntVar(&c.calls, "calls", 2000, "timed calls per command and server")
	fs.IntVar(&c.warmup, "warmup", 200, "untimed calls per command and server before the timed ones")
	fs.IntVar(&c.batch, "batch", 1000, "members per ZADD of the fill")
	fs.IntVar(&c.pipeline, "pipeline", 10, "ZADDs per round trip of the fill")
	fs.StringVar(&c.cmdsFlag, "cmds", "", "commands to measure, comma-separated, in order (default: all; see -list)")
	fs.BoolVar(&c.fill, "fill", true, "delete and fill the set first (false: it must hold -n members)")
	fs.DurationVar(&c.settle, "settle", 3*time.Second, "pause after the fill")
	fs.Uint64Var(&c.seed, "seed", 1, "seed of the fill order and of the random members and ranks")
	fs.StringVar(&c.key, "key", "", "the sorted set's key (default zrankbench:<n>)")
	fs.DurationVar(&c.timeout, "timeout", time.Minute, "read timeout of one reply")
	fs.BoolVar(&c.list, "list", false, "list the commands and exit")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	c.addrs = strings.Split(c.addrFlag, ",")
	c.names = c.addrs
	if c.namesFlag != "" {
		c.names = strings.Split(c.namesFlag, ",")
	}
	if c.pidsFlag != "" {
		c.pids = strings.Split(c.pidsFlag, ",")
	}
	switch {
	case len(c.names) != len(c.addrs):
		return nil, fmt.Errorf("-name has %d names for %d addresses", len(c.names), len(c.addrs))
	case len(c.pids) != 0 && len(c.pids) != len(c.addrs):
		return nil, fmt.Errorf("-pid has %d IDs for %d addresses", len(c.pids), len(c.addrs))
	case c.n < 10:
		return nil, fmt.Errorf("-n must be at least 10, got %d", c.n)
	case c.calls < 1 || c.warmup < 0 || c.batch < 1 || c.pipeline < 1:
		return nil, errors.New("-calls, -batch and -pipeline must be positive, -warmup not negative")
	}
	if c.key == "" {
		c.key = "zrankbench:" + strconv.Itoa(c.n)
	}
	c.cmds = commands
	if c.cmdsFlag != "" {
		c.cmds = nil
		for _, name := range strings.Split(c.cmdsFlag, ",") {
			i := slices.IndexFunc(commands, func(cmd command) bool { return cmd.name == name })
			if i < 0 {
				return nil, fmt.Errorf("-cmds: unknown command %q (see -list)", name)
			}
			c.cmds = append(c.cmds, commands[i])
		}
	}
	return c, nil
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	c, err := parseFlags(args, os.Stderr)
	if err != nil {
		return err
	}
	if c.list {
		for _, cmd := range commands {
			fmt.Fprintf(stdout, "%s\t%s\n", cmd.name, cmd.desc)
		}
		return nil
	}
	var servers []*server
	for i, addr := range c.addrs {
		s := &server{name: c.names[i], rdb: redis.NewClient(&redis.Options{
			Addr: addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1, PoolSize: 1,
			ReadTimeout: c.timeout, WriteTimeout: c.timeout,
		})}
		defer s.rdb.Close()
		if len(c.pids) > 0 {
			pid, err := strconv.Atoi(c.pids[i])
			if err != nil || pid <= 0 {
				return fmt.Errorf("-pid: bad process ID %q", c.pids[i])
			}
			if s.cpu, s.src, err = proccpu.Reader(pid); err != nil {
				return err
			}
		}
		if err := s.rdb.Ping(ctx).Err(); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		servers = append(servers, s)
	}
	if c.fill {
		for _, s := range servers {
			if err := fill(ctx, s, c, stdout); err != nil {
				return fmt.Errorf("%s: fill: %w", s.name, err)
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(c.settle):
		}
	}
	for _, s := range servers {
		card, err := s.rdb.ZCard(ctx, c.key).Result()
		if err != nil {
			return fmt.Errorf("%s: ZCARD: %w", s.name, err)
		}
		if card != int64(c.n) {
			return fmt.Errorf("%s: ZCARD %s is %d, want -n %d (run with -fill)", s.name, c.key, card, c.n)
		}
	}
	fmt.Fprintf(stdout, "zrankbench: %s with -n %d members m:<i> of score (and rank) i; one connection, unpipelined;\n", c.key, c.n)
	fmt.Fprintf(stdout, "%d timed calls per command and server after %d warm-up calls; latency = round trip", c.calls, c.warmup)
	for _, s := range servers {
		if s.cpu != nil {
			fmt.Fprintf(stdout, "; cpu = server CPU per call (%s)", s.src)
			break
		}
	}
	fmt.Fprintln(stdout)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := []string{"command"}
	for _, s := range servers {
		header = append(header, s.name+" mean µs", "p50 µs", "p99 µs")
		if s.cpu != nil {
			header = append(header, "cpu µs")
		}
	}
	two := len(servers) == 2
	if two {
		header = append(header, "mean 1/2")
		if len(c.pids) > 0 {
			header = append(header, "cpu 1/2")
		}
	}
	fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
	for _, cmd := range c.cmds {
		row := []string{cmd.name}
		var res []result
		for _, s := range servers {
			r, err := measure(ctx, s, c, cmd)
			if err != nil {
				return fmt.Errorf("%s: %s: %w", s.name, cmd.name, err)
			}
			res = append(res, r)
			row = append(row, us(r.mean), us(r.p50), us(r.p99))
			if s.cpu != nil {
				row = append(row, us(r.cpu))
			}
		}
		if two {
			row = append(row, ratio(res[0].mean, res[1].mean))
			if len(c.pids) > 0 {
				row = append(row, ratio(res[0].cpu, res[1].cpu))
			}
		}
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	return tw.Flush()
}

// fill deletes c.key and adds the c.n members in a random order.
func fill(ctx context.Context, s *server, c *config, stdout io.Writer) error {
	if err := s.rdb.Del(ctx, c.key).Err(); err != nil {
		return err
	}
	order := rand.New(rand.NewPCG(c.seed, 0)).Perm(c.n)
	cpu0, err := readCPU(s)
	if err != nil {
		return err
	}
	start := time.Now()
	for len(order) > 0 {
		p := s.rdb.Pipeline()
		for j := 0; j < c.pipeline && len(order) > 0; j++ {
			k := min(c.batch, len(order))
			zs := make([]redis.Z, k)
			for x, i := range order[:k] {
				zs[x] = redis.Z{Score: float64(i), Member: member(i)}
			}
			order = order[k:]
			p.ZAdd(ctx, c.key, zs...)
		}
		if _, err := p.Exec(ctx); err != nil {
			return err
		}
	}
	elapsed := time.Since(start)
	cpu1, err := readCPU(s)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "fill %s: %d members in %.1f s (%.0f members/s", s.name, c.n, elapsed.Seconds(), float64(c.n)/elapsed.Seconds())
	if s.cpu != nil {
		fmt.Fprintf(stdout, ", server cpu %.1f µs/member", float64(cpu1-cpu0)/float64(time.Microsecond)/float64(c.n))
	}
	fmt.Fprintln(stdout, ")")
	return nil
}

type result struct{ mean, p50, p99, cpu time.Duration }

// measure runs cmd's warm-up and timed calls on s. Every server gets the
// same random arguments: the source is seeded from -seed and cmd alone.
func measure(ctx context.Context, s *server, c *config, cmd command) (result, error) {
	rng := rand.New(rand.NewPCG(c.seed, uint64(slices.IndexFunc(commands, func(x command) bool { return x.name == cmd.name }))+1))
	call := func() error {
		args, check := cmd.call(c.key, c.n, rng)
		v, err := s.rdb.Do(ctx, args...).Result()
		if err == nil {
			err = check(v)
		}
		if err != nil {
			return fmt.Errorf("%v: %w", args, err)
		}
		return nil
	}
	for range c.warmup {
		if err := call(); err != nil {
			return result{}, err
		}
	}
	lat := make([]time.Duration, c.calls)
	cpu0, err := readCPU(s)
	if err != nil {
		return result{}, err
	}
	start := time.Now()
	for i := range lat {
		t := time.Now()
		if err := call(); err != nil {
			return result{}, err
		}
		lat[i] = time.Since(t)
	}
	total := time.Since(start)
	cpu1, err := readCPU(s)
	if err != nil {
		return result{}, err
	}
	slices.Sort(lat)
	calls := time.Duration(c.calls)
	return result{
		mean: total / calls,
		p50:  lat[(len(lat)-1)/2],
		p99:  lat[(len(lat)*99+99)/100-1],
		cpu:  (cpu1 - cpu0) / calls,
	}, nil
}

func readCPU(s *server) (time.Duration, error) {
	if s.cpu == nil {
		return 0, nil
	}
	return s.cpu()
}

func us(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Microsecond)) }

func ratio(a, b time.Duration) string {
	if b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", float64(a)/float64(b))
}
