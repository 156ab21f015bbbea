package broker

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/command/reply"
)

// Per-command latency histograms (Redis 7's latency-tracking: INFO
// latencystats, LATENCY HISTOGRAM; and the sediment.command.duration
// metric, telemetry.go) and the latency monitor (latency-monitor-threshold:
// LATENCY LATEST, HISTORY, RESET, DOCTOR, GRAPH).
//
// A histogram counts durations in nanoseconds in log-linear buckets: one
// bucket below 2^10 ns (1.024 µs), then each power of two up to 2^30 ns
// (1.07 s) split into 8 equal buckets, then one bucket above. Recording is
// a bucket index and two atomic adds (no lock), so every command pays it.
// Percentiles (INFO latencystats) are the upper bound of the bucket they
// fall in: at most 1/8 of a power of two (12.5 %) above the true value,
// where Redis's HDR histogram keeps 3 significant digits.

const (
	latMinExp  = 10 // the first bucket: below 2^10 ns
	latMaxExp  = 30 // the last bucket: 2^30 ns (1.07 s) and above, as Redis's +Inf
	latSub     = 8  // buckets per power of two
	latBuckets = 1 + (latMaxExp-latMinExp)*latSub + 1
)

// latHist is one histogram.
type latHist struct {
	counts [latBuckets]atomic.Uint64
	sumNs  atomic.Uint64
}

// latBucket returns the bucket of a duration of ns nanoseconds.
func latBucket(ns uint64) int {
	if ns < 1<<latMinExp {
		return 0
	}
	e := bits.Len64(ns) - 1 // ns in [2^e, 2^(e+1))
	if e >= latMaxExp {
		return latBuckets - 1
	}
	sub := int(ns>>(e-3)) & (latSub - 1)
	return 1 + (e-latMinExp)*latSub + sub
}

// latUpper returns the upper bound of bucket i in nanoseconds (+Inf for
// the last).
func latUpper(i int) float64 {
	switch {
	case i == 0:
		return 1 << latMinExp
	case i == latBuckets-1:
		return math.Inf(1)
	}
	e, sub := (i-1)/latSub+latMinExp, (i-1)%latSub
	return float64(uint64(1)<<e + uint64(sub+1)<<(e-3))
}

func (h *latHist) record(d time.Duration) {
	ns := uint64(max(d, 0))
	h.counts[latBucket(ns)].Add(1)
	h.sumNs.Add(ns)
}

// snapshot returns the counts and their total.
func (h *latHist) snapshot() (counts [latBuckets]uint64, total uint64) {
	for i := range h.counts {
		counts[i] = h.counts[i].Load()
		total += counts[i]
	}
	return counts, total
}

// latHistOf returns the histogram at p, made at the first call.
func latHistOf(p *atomic.Pointer[latHist]) *latHist {
	if h := p.Load(); h != nil {
		return h
	}
	p.CompareAndSwap(nil, new(latHist))
	return p.Load()
}

// merged returns the sum of a command's success and failure histograms.
func (st *cmdStat) merged() (counts [latBuckets]uint64, total uint64) {
	for i := range st.lat {
		if h := st.lat[i].Load(); h != nil {
			c, _ := h.snapshot()
			for j, n := range c {
				counts[j] += n
				total += n
			}
		}
	}
	return counts, total
}

// percentileUs returns the p-th percentile (0..100) of counts in µs.
func percentileUs(counts [latBuckets]uint64, total uint64, p float64) float64 {
	rank := uint64(math.Ceil(p / 100 * float64(total)))
	rank = max(rank, 1)
	var seen uint64
	for i, n := range counts {
		seen += n
		if seen >= rank {
			if i == latBuckets-1 {
				return float64(uint64(1)<<latMaxExp) / 1000 // +Inf: the largest tracked value, as Redis
			}
			return latUpper(i) / 1000
		}
	}
	return 0
}

// defaultPercentiles is latency-tracking-info-percentiles' default.
var defaultPercentiles = []float64{50, 99, 99.9}

// formatPercentiles renders latency-tracking-info-percentiles.
func formatPercentiles(ps []float64) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = strconv.FormatFloat(p, 'f', -1, 64)
	}
	return strings.Join(s, " ")
}

// parsePercentiles parses latency-tracking-info-percentiles: numbers in
// [0, 100] separated by spaces; empty is none. The error is CONFIG SET's
// reason text.
func parsePercentiles(v []byte) ([]float64, error) {
	var ps []float64
	for _, f := range strings.Fields(string(v)) {
		p, err := strconv.ParseFloat(f, 64)
		if err != nil || math.IsNaN(p) {
			return nil, errors.New("Invalid latency-tracking-info-percentiles parameters")
		}
		if p < 0 || p > 100 {
			return nil, errors.New("latency-tracking-info-percentiles parameters should sit between [0.0,100.0]")
		}
		ps = append(ps, p)
	}
	return ps, nil
}

// eachStat calls fn with every command's (and subcommand's) full name and
// counters that have calls, sorted by name.
func (s *cmdStats) eachStat(fn func(name string, st *cmdStat)) {
	stats := map[string]*cmdStat{}
	s.m.Range(func(k, v any) bool { stats[k.(string)] = v.(*cmdStat); return true })
	for n, c := range commandTable {
		if st := s.of(c); st.calls.Load()+st.rejected.Load() > 0 {
			stats[n] = st
		}
	}
	for _, n := range slices.Sorted(maps.Keys(stats)) {
		fn(n, stats[n])
	}
}

// latencystats renders INFO's latencystats lines.
func (s *cmdStats) latencystats(kv func(k string, v any)) {
	if !s.tracking.Load() {
		return
	}
	ps := *s.percentiles.Load()
	s.eachStat(func(name string, st *cmdStat) {
		counts, total := st.merged()
		if total == 0 {
			return
		}
		var b strings.Builder
		for i, p := range ps {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "p%s=%.3f", strconv.FormatFloat(p, 'f', -1, 64), percentileUs(counts, total, p))
		}
		kv("latency_percentiles_usec_"+name, b.String())
	})
}

// histogramUsecKey is Redis's name of the power-of-two bucket ending at
// 2^e ns: that bound in µs, rounded (1, 2, 4, 8, 16, 33, 66, ...).
func histogramUsecKey(e int) int64 {
	return int64(math.Round(float64(uint64(1)<<e) / 1000))
}

// writeHistogram writes one command's LATENCY HISTOGRAM part: calls, and
// the cumulative count at the end of each power-of-two bucket that has any
// (durations of 2^30 ns or more in the last, as Redis clamps them to its
// largest trackable value).
func writeHistogram(w reply.Writer, counts [latBuckets]uint64, total uint64) {
	var pow [latMaxExp - latMinExp + 1]uint64 // pow[k] ends at 2^(latMinExp+k) ns
	pow[0] = counts[0]
	for i := 1; i < latBuckets-1; i++ {
		pow[1+(i-1)/latSub] += counts[i]
	}
	pow[len(pow)-1] += counts[latBuckets-1]
	type point struct{ key, cum int64 }
	var points []point
	var cum uint64
	for k, n := range pow {
		if n > 0 {
			cum += n
			points = append(points, point{histogramUsecKey(latMinExp + k), int64(cum)})
		}
	}
	w.Map(2)
	w.BulkString("calls")
	w.Int(int64(total))
	w.BulkString("histogram_usec")
	w.Map(len(points))
	for _, p := range points {
		w.Int(p.key)
		w.Int(p.cum)
	}
}

// latencyMonitor is Redis's latency monitor: with a threshold (ms, 0: off)
// every command that takes at least that long is a sample of the event
// "command" ("fast-command" for commands flagged fast). Each event keeps
// its latest 160 samples, one per second (the largest of that second), and
// its all-time maximum.
type latencyMonitor struct {
	threshold atomic.Int64 // latency-monitor-threshold, ms
	mu        sync.Mutex
	events    map[string]*latencyEvent
}

const latencySamples = 160

type latencySample struct{ unix, ms int64 }

type latencyEvent struct {
	samples []latencySample // oldest first, at most latencySamples
	max     int64
}

// add records a sample of event at unix seconds.
func (m *latencyMonitor) add(event string, unix, ms int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.events == nil {
		m.events = map[string]*latencyEvent{}
	}
	e := m.events[event]
	if e == nil {
		e = &latencyEvent{}
		m.events[event] = e
	}
	e.max = max(e.max, ms)
	if n := len(e.samples); n > 0 && e.samples[n-1].unix == unix {
		e.samples[n-1].ms = max(e.samples[n-1].ms, ms)
		return
	}
	if len(e.samples) == latencySamples {
		e.samples = append(e.samples[:0], e.samples[1:]...)
	}
	e.samples = append(e.samples, latencySample{unix, ms})
}

var latencyHelp = []string{
	"LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"DOCTOR",
	"    Return a human readable latency analysis report.",
	"GRAPH <event>",
	"    Return an ASCII latency graph for the <event> class.",
	"HISTORY <event>",
	"    Return time-latency samples for the <event> class.",
	"LATEST",
	"    Return the latest latency samples for all events.",
	"RESET [<event> ...]",
	"    Reset latency data of one or more <event> classes.",
	"    (default: reset all data for all event classes)",
	"HISTOGRAM [COMMAND ...]",
	"    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
	"    If no commands are specified then all histograms are replied.",
	"HELP",
	"    Prints this help.",
}

const latencyDoctorOff = "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. " +
	"You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. " +
	"If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n"

const latencyDoctorNone = "Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. " +
	"I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n"

func init() {
	register(&cmdSpec{name: "latency", arity: -2, flags: flagAdmin | flagLoading | flagStale, group: "server", since: "2.8.13",
		summary: "A container for latency diagnostics commands.", run: runLatency})
}

// LATENCY DOCTOR | GRAPH event | HISTORY event | LATEST | RESET [event ...]
// | HISTOGRAM [command ...] | HELP.
// https://redis.io/docs/latest/commands/latency/
func runLatency(x *exec) error {
	m := &x.c.s.latency
	sub, n := x.args[1], len(x.args)
	w := x.reply()
	switch {
	case equalFold(sub, "HISTOGRAM"):
		return runLatencyHistogram(x)
	case equalFold(sub, "LATEST") && n == 2:
		m.mu.Lock()
		names := slices.Sorted(maps.Keys(m.events))
		w.Array(len(names))
		for _, name := range names {
			e := m.events[name]
			last := e.samples[len(e.samples)-1]
			w.Array(4)
			w.BulkString(name)
			w.Int(last.unix)
			w.Int(last.ms)
			w.Int(e.max)
		}
		m.mu.Unlock()
	case equalFold(sub, "HISTORY") && n == 3:
		m.mu.Lock()
		e := m.events[string(x.args[2])]
		var samples []latencySample
		if e != nil {
			samples = slices.Clone(e.samples)
		}
		m.mu.Unlock()
		w.Array(len(samples))
		for _, s := range samples {
			w.Array(2)
			w.Int(s.unix)
			w.Int(s.ms)
		}
	case equalFold(sub, "RESET"):
		m.mu.Lock()
		var reset int64
		if n == 2 {
			reset = int64(len(m.events))
			m.events = nil
		}
		for _, ev := range x.args[2:] {
			if _, ok := m.events[string(ev)]; ok {
				delete(m.events, string(ev))
				reset++
			}
		}
		m.mu.Unlock()
		w.Int(reset)
	case equalFold(sub, "GRAPH") && n == 3:
		m.mu.Lock()
		e := m.events[string(x.args[2])]
		var text string
		if e != nil {
			text = latencyGraph(string(x.args[2]), e)
		}
		m.mu.Unlock()
		if e == nil {
			return wireError(fmt.Sprintf("ERR No samples available for event '%s'", x.args[2]))
		}
		w.Verbatim("txt", []byte(text))
	case equalFold(sub, "DOCTOR") && n == 2:
		w.Verbatim("txt", []byte(latencyDoctor(m)))
	case equalFold(sub, "HELP") && n == 2:
		command.WriteHelp(w, latencyHelp)
	case equalFold(sub, "LATEST"), equalFold(sub, "HISTORY"), equalFold(sub, "GRAPH"),
		equalFold(sub, "DOCTOR"), equalFold(sub, "HELP"):
		return errWrongArgsSub("latency", sub)
	default:
		return errUnknownSubcommand(sub, "latency")
	}
	return nil
}

// runLatencyHistogram replies LATENCY HISTOGRAM [command ...]: a map of
// command name to its histogram, for every command with calls (sorted by
// name), or for those named; a container command names its subcommands.
func runLatencyHistogram(x *exec) error {
	s := &x.c.s.cmdstats
	type entry struct {
		name string
		st   *cmdStat
	}
	var out []entry
	seen := map[string]bool{}
	add := func(name string, st *cmdStat) {
		if seen[name] {
			return
		}
		if _, total := st.merged(); total > 0 {
			seen[name] = true
			out = append(out, entry{name, st})
		}
	}
	if len(x.args) == 2 {
		s.eachStat(add)
	} else {
		for _, a := range x.args[2:] {
			name := command.Lower(a)
			if base, sub, ok := strings.Cut(name, "|"); ok {
				if v, ok := s.m.Load(name); ok && slices.Contains(subcommands[base], sub) {
					add(name, v.(*cmdStat)) // a read: no counters are made for it
				}
				continue
			}
			c := commandTable[name]
			switch {
			case c == nil:
			case c.container:
				for _, sub := range subcommands[name] {
					if v, ok := s.m.Load(name + "|" + sub); ok {
						add(name+"|"+sub, v.(*cmdStat))
					}
				}
			default:
				add(name, s.of(c))
			}
		}
	}
	w := x.reply()
	w.Map(len(out))
	for _, e := range out {
		w.BulkString(e.name)
		counts, total := e.st.merged()
		writeHistogram(w, counts, total)
	}
	return nil
}

// latencyDoctor is LATENCY DOCTOR's report: Redis's texts when the
// monitor is off or saw nothing; otherwise a summary per event (Redis's
// own report analyses causes, which Sediment does not).
func latencyDoctor(m *latencyMonitor) string {
	if m.threshold.Load() == 0 {
		return latencyDoctorOff
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.events) == 0 {
		return latencyDoctorNone
	}
	var b strings.Builder
	b.WriteString("Dave, I have observed latency spikes in this Sediment instance.\n\n")
	for i, name := range slices.Sorted(maps.Keys(m.events)) {
		e := m.events[name]
		var sum int64
		for _, s := range e.samples {
			sum += s.ms
		}
		fmt.Fprintf(&b, "%d. %s: %d latency spikes (average %dms). Worst all time event %dms.\n",
			i+1, name, len(e.samples), sum/int64(len(e.samples)), e.max)
	}
	return b.String()
}

// latencyGraph is LATENCY GRAPH's text for one event: its samples, oldest
// first, each with its time and a bar scaled to the largest (Redis draws
// an ASCII chart; the figures are the same, the drawing is not).
func latencyGraph(name string, e *latencyEvent) string {
	var b strings.Builder
	lo, hi := e.samples[0].ms, e.samples[0].ms
	for _, s := range e.samples {
		lo, hi = min(lo, s.ms), max(hi, s.ms)
	}
	fmt.Fprintf(&b, "%s - high %d ms, low %d ms (all time high %d ms)\n", name, hi, lo, e.max)
	for _, s := range e.samples {
		bar := 1
		if hi > 0 {
			bar = max(1, int(s.ms*40/hi))
		}
		fmt.Fprintf(&b, "%s %6d ms %s\n", time.Unix(s.unix, 0).UTC().Format(time.DateTime), s.ms, strings.Repeat("#", bar))
	}
	return b.String()
}
