// Command pubsubbench measures PUBLISH against one server or several side
// by side: the publish rate of one unpipelined publisher, the latency from
// a message's PUBLISH to its arrival at each subscriber (p50, p99, max),
// and, with -pid, the server's CPU time per PUBLISH.
//
//	pubsubbench -addr 127.0.0.1:6380[,127.0.0.1:6379] [-name sediment,redis]
//	            [-pid PID[,PID]] [-subs 1,100] [-n 20000] [-warmup 1000] [-size 64]
//
// For each -subs count S and each server in turn, S connections SUBSCRIBE
// to one channel, then one connection sends -warmup untimed and -n timed
// PUBLISH commands, one at a time, each message carrying its send time.
// Every subscriber must receive every message, in order, and every PUBLISH
// must reply S; anything else stops the program. The server's CPU time is
// the sum of its threads' run time (internal/proccpu). With two servers it
// adds the ratios first / second (rate: above 1 the first is faster;
// latency and CPU: above 1 the first is slower).
//
// `make bench-pubsub` runs it against Sediment and redis-server
// (scripts/bench.sh); docs/perf.md has its figures.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sediment-dev/sediment/internal/proccpu"
)

const channel = "pubsubbench"

type server struct {
	name, addr string
	cpu        func() (time.Duration, error)
}

type result struct {
	server            string
	subs              int
	rate              float64 // timed PUBLISH commands per second
	p50, p99, maxLat  time.Duration
	cpuPerPub         time.Duration // -1 without -pid
	deliveriesPerSec  float64
	elapsed, received time.Duration
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "pubsubbench:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("pubsubbench", flag.ContinueOnError)
	addrs := fs.String("addr", "127.0.0.1:6380", "server addresses, comma-separated")
	names := fs.String("name", "", "server names, comma-separated (default: the addresses)")
	pids := fs.String("pid", "", "server process IDs, comma-separated, for CPU time")
	subsFlag := fs.String("subs", "1,100", "subscriber counts, comma-separated: one run each")
	n := fs.Int("n", 20000, "timed PUBLISH commands per run")
	warmup := fs.Int("warmup", 1000, "untimed PUBLISH commands before them")
	size := fs.Int("size", 64, "message size in bytes (at least 20)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *n < 1 || *warmup < 0 || *size < 20 {
		return errors.New("-n must be at least 1, -warmup at least 0, -size at least 20")
	}
	var servers []*server
	for i, a := range strings.Split(*addrs, ",") {
		servers = append(servers, &server{name: a, addr: a})
		if *names != "" {
			ns := strings.Split(*names, ",")
			if len(ns) != len(strings.Split(*addrs, ",")) {
				return errors.New("-name needs one name per -addr")
			}
			servers[i].name = ns[i]
		}
	}
	if *pids != "" {
		ps := strings.Split(*pids, ",")
		if len(ps) != len(servers) {
			return errors.New("-pid needs one process ID per -addr")
		}
		for i, p := range ps {
			pid, err := strconv.Atoi(p)
			if err != nil {
				return fmt.Errorf("-pid %q: %w", p, err)
			}
			if servers[i].cpu, _, err = proccpu.Reader(pid); err != nil {
				return err
			}
		}
	}
	var subs []int
	for _, s := range strings.Split(*subsFlag, ",") {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			return fmt.Errorf("-subs: bad count %q", s)
		}
		subs = append(subs, v)
	}
	var results []*result
	for _, s := range subs {
		for _, srv := range servers {
			r, err := runOne(srv, s, *n, *warmup, *size)
			if err != nil {
				return fmt.Errorf("%s, %d subscribers: %w", srv.name, s, err)
			}
			results = append(results, r)
		}
	}
	writeTable(out, results, len(servers), servers[0].cpu != nil, *n, *size)
	return nil
}

// runOne is one run: s subscribers, one publisher.
func runOne(srv *server, s, n, warmup, size int) (*result, error) {
	var subs []net.Conn
	defer func() {
		for _, c := range subs {
			c.Close()
		}
	}()
	type got struct {
		lat []time.Duration
		err error
	}
	done := make(chan got, s)
	for range s {
		c, err := net.DialTimeout("tcp", srv.addr, 5*time.Second)
		if err != nil {
			return nil, err
		}
		subs = append(subs, c)
		br := bufio.NewReaderSize(c, 64<<10)
		if _, err := c.Write(command("SUBSCRIBE", channel)); err != nil {
			return nil, err
		}
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := readFrame(br); err != nil {
			return nil, fmt.Errorf("SUBSCRIBE: %w", err)
		}
		go func() {
			lat := make([]time.Duration, 0, n)
			for i := range warmup + n {
				c.SetReadDeadline(time.Now().Add(60 * time.Second))
				p, err := readFrame(br)
				if err != nil {
					done <- got{err: fmt.Errorf("message %d: %w", i, err)}
					return
				}
				at := time.Now()
				seq, sent, ok := parsePayload(p)
				if !ok || seq != i {
					done <- got{err: fmt.Errorf("message %d: got %q (lost or out of order)", i, p[:min(len(p), 40)])}
					return
				}
				if i >= warmup {
					lat = append(lat, at.Sub(time.Unix(0, sent)))
				}
			}
			done <- got{lat: lat}
		}()
	}
	pub, err := net.DialTimeout("tcp", srv.addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	defer pub.Close()
	pr := bufio.NewReader(pub)
	publish := func(i int) error {
		msg := fmt.Appendf(nil, "%08d %019d ", i, time.Now().UnixNano())
		for len(msg) < size {
			msg = append(msg, 'x')
		}
		if _, err := pub.Write(command("PUBLISH", channel, string(msg))); err != nil {
			return err
		}
		pub.SetReadDeadline(time.Now().Add(10 * time.Second))
		line, err := pr.ReadString('\n')
		if err != nil {
			return err
		}
		if line != ":"+strconv.Itoa(s)+"\r\n" {
			return fmt.Errorf("PUBLISH %d replied %q, want :%d", i, line, s)
		}
		return nil
	}
	for i := range warmup {
		if err := publish(i); err != nil {
			return nil, err
		}
	}
	var cpu0 time.Duration
	if srv.cpu != nil {
		if cpu0, err = srv.cpu(); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	for i := warmup; i < warmup+n; i++ {
		if err := publish(i); err != nil {
			return nil, err
		}
	}
	elapsed := time.Since(start)
	var all []time.Duration
	for range s {
		g := <-done
		if g.err != nil {
			return nil, g.err
		}
		all = append(all, g.lat...)
	}
	received := time.Since(start)
	r := &result{server: srv.name, subs: s, rate: float64(n) / elapsed.Seconds(), cpuPerPub: -1,
		elapsed: elapsed, received: received, deliveriesPerSec: float64(n*s) / received.Seconds()}
	if srv.cpu != nil {
		cpu1, err := srv.cpu()
		if err != nil {
			return nil, err
		}
		r.cpuPerPub = (cpu1 - cpu0) / time.Duration(n)
	}
	slices.Sort(all)
	r.p50, r.p99, r.maxLat = all[len(all)/2], all[len(all)*99/100], all[len(all)-1]
	return r, nil
}

// command encodes args as a RESP array of bulk strings.
func command(args ...string) []byte {
	b := fmt.Appendf(nil, "*%d\r\n", len(args))
	for _, a := range args {
		b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b
}

// readFrame reads one RESP2 array of bulk strings (a subscribe
// confirmation or a message) and returns its last element.
func readFrame(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 4 || line[0] != '*' {
		return nil, fmt.Errorf("unexpected reply %q", line)
	}
	k, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil {
		return nil, err
	}
	var last []byte
	for range k {
		h, err := br.ReadString('\n')
		if err != nil {
			return nil, err
		}
		switch h[0] {
		case ':':
			last = nil
		case '$':
			l, err := strconv.Atoi(strings.TrimSpace(h[1:]))
			if err != nil {
				return nil, err
			}
			last = make([]byte, l+2)
			if _, err := io.ReadFull(br, last); err != nil {
				return nil, err
			}
			last = last[:l]
		default:
			return nil, fmt.Errorf("unexpected element %q", h)
		}
	}
	return last, nil
}

// parsePayload reads a message's sequence number and send time (Unix ns).
func parsePayload(p []byte) (seq int, sent int64, ok bool) {
	f := strings.Fields(string(p[:min(len(p), 29)]))
	if len(f) < 2 {
		return 0, 0, false
	}
	s, err1 := strconv.Atoi(f[0])
	t, err2 := strconv.ParseInt(f[1], 10, 64)
	return s, t, err1 == nil && err2 == nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f", float64(d)/float64(time.Millisecond)) }

func writeTable(out io.Writer, rs []*result, servers int, withCPU bool, n, size int) {
	fmt.Fprintf(out, "pubsubbench: one publisher, unpipelined, %d timed PUBLISH of %d bytes per run\n", n, size)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "server\tsubs\tPUBLISH/s\tdeliveries/s\tp50 ms\tp99 ms\tmax ms\tCPU µs/PUBLISH\t")
	for i, r := range rs {
		cpu := "-"
		if withCPU {
			cpu = fmt.Sprintf("%.1f", float64(r.cpuPerPub)/float64(time.Microsecond))
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.0f\t%s\t%s\t%s\t%s\t\n", r.server, r.subs, r.rate, r.deliveriesPerSec,
			ms(r.p50), ms(r.p99), ms(r.maxLat), cpu)
		if servers == 2 && i%2 == 1 {
			a, b := rs[i-1], r
			cpu := "-"
			if withCPU && b.cpuPerPub > 0 {
				cpu = fmt.Sprintf("%.2f", float64(a.cpuPerPub)/float64(b.cpuPerPub))
			}
			fmt.Fprintf(tw, "%s/%s\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%s\t\n", a.server, b.server, r.subs,
				a.rate/b.rate, a.deliveriesPerSec/b.deliveriesPerSec,
				float64(a.p50)/float64(b.p50), float64(a.p99)/float64(b.p99), float64(a.maxLat)/float64(b.maxLat), cpu)
		}
	}
	tw.Flush()
}
