package broker

import (
	"math"
	"runtime"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/materialize"
)

// MEMORY (USAGE, STATS, DOCTOR, MALLOC-STATS, PURGE, HELP) and the memory
// figures INFO memory shares with it.

// memFigures is what Sediment holds in memory: the Go heap in use and
// Pebble's block cache and memtables (outside the Go heap). The data
// itself lives on disk (maxmemory does not apply).
type memFigures struct {
	used, peak, heap, cache, memtables int64
}

// memoryFigures reads the figures (runtime.ReadMemStats stops the world
// briefly) and raises the peak.
func (s *Server) memoryFigures() memFigures {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	cache, memtables := s.store.MemoryUsage()
	m := memFigures{heap: int64(ms.HeapAlloc), cache: cache, memtables: memtables}
	m.used = m.heap + cache + memtables
	peak := s.stats.memPeak.Load()
	for m.used > peak && !s.stats.memPeak.CompareAndSwap(peak, m.used) {
		peak = s.stats.memPeak.Load()
	}
	m.peak = max(peak, m.used)
	return m
}

// errOOM is Redis's reply to a command maxmemory refuses.
var errOOM = wireError("OOM command not allowed when used memory > 'maxmemory'.")

// maxMemoryEvery is how often used memory is compared with maxmemory.
const maxMemoryEvery = 100 * time.Millisecond

// watchMaxMemory compares used_memory (the Go heap, Pebble's block cache
// and memtables: memoryFigures) with maxmemory every maxMemoryEvery while
// maxmemory is set, and sets overMemory, which refuses the commands Redis
// refuses under maxmemory-policy noeviction (conn.oomRefuses). Sediment
// evicts no keys whatever the policy: the data lives on disk, and the
// memory is its own caches and buffers (docs/operations.md).
func (s *Server) watchMaxMemory() {
	s.every(maxMemoryEvery, func() {
		limit, _ := strconv.ParseInt(s.cfg.load("maxmemory"), 10, 64)
		over := limit > 0 && s.memoryFigures().used > limit
		if over != s.overMemory.Load() {
			s.overMemory.Store(over)
			if over {
				s.opts.Logger.Warn("used memory above maxmemory: refusing the commands that may grow it (OOM)", "maxmemory", limit)
			} else {
				s.opts.Logger.Info("used memory back under maxmemory")
			}
		}
	})
}

var memoryHelp = []string{
	"MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"DOCTOR",
	"    Return memory problems reports.",
	"MALLOC-STATS",
	"    Return internal statistics report from the memory allocator.",
	"PURGE",
	"    Attempt to purge dirty pages for reclamation by the allocator.",
	"STATS",
	"    Return information about the memory usage of the server.",
	"USAGE <key> [SAMPLES <count>]",
	"    Return memory in bytes used by <key> and its value. Nested values are",
	"    sampled up to <count> times (default: 5, 0 means sample all).",
	"HELP",
	"    Prints this help.",
}

const memoryDoctorText = "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base."

func init() {
	register(&cmdSpec{name: "memory", arity: -2, flags: flagReadonly, group: "server", since: "4.0.0",
		summary: "A container for memory diagnostics commands.", run: runMemory})
}

// MEMORY USAGE key [SAMPLES count] | STATS | DOCTOR | MALLOC-STATS | PURGE | HELP.
// https://redis.io/docs/latest/commands/memory-usage/
func runMemory(x *exec) error {
	sub, n := x.args[1], len(x.args)
	w := x.reply()
	switch {
	case equalFold(sub, "USAGE") && n >= 3:
		samples := int64(5)
		for i := 3; i < n; i++ {
			if !equalFold(x.args[i], "SAMPLES") || i+1 >= n {
				return errSyntax
			}
			v, ok := parseInt(x.args[i+1])
			if !ok {
				return errNotInteger
			}
			if v < 0 {
				return errSyntax
			}
			samples = v
			i++
		}
		size, ok, err := memoryUsage(x.view(), x.storageDB(), x.args[2], samples)
		if err != nil {
			return err
		}
		if !ok {
			w.NullBulk()
			return nil
		}
		w.Int(size)
	case equalFold(sub, "STATS") && n == 2:
		s := x.c.s
		m := s.memoryFigures()
		v := x.view()
		var keys int64
		for db := 0; db < s.opts.Databases; db++ {
			k, _ := v.KeyCount(v.StorageDB(uint8(db)))
			keys += k
		}
		perKey := int64(0)
		if keys > 0 {
			perKey = m.used / keys
		}
		w.Map(7)
		w.BulkString("peak.allocated")
		w.Int(m.peak)
		w.BulkString("total.allocated")
		w.Int(m.used)
		w.BulkString("keys.count")
		w.Int(keys)
		w.BulkString("keys.bytes-per-key")
		w.Int(perKey)
		w.BulkString("sediment.go-heap")
		w.Int(m.heap)
		w.BulkString("sediment.pebble-block-cache")
		w.Int(m.cache)
		w.BulkString("sediment.pebble-memtables")
		w.Int(m.memtables)
	case equalFold(sub, "DOCTOR") && n == 2:
		w.Verbatim("txt", []byte(memoryDoctorText))
	case equalFold(sub, "MALLOC-STATS") && n == 2:
		w.Verbatim("txt", []byte("Stats not supported for the current allocator"))
	case equalFold(sub, "PURGE") && n == 2:
		debug.FreeOSMemory()
		w.OK()
	case equalFold(sub, "HELP") && n == 2:
		command.WriteHelp(w, memoryHelp)
	case equalFold(sub, "USAGE"), equalFold(sub, "STATS"), equalFold(sub, "DOCTOR"), equalFold(sub, "MALLOC-STATS"),
		equalFold(sub, "PURGE"), equalFold(sub, "HELP"):
		return errWrongArgsSub("memory", sub)
	default:
		return errUnknownSubcommand(sub, "memory")
	}
	return nil
}

// memoryUsage estimates the bytes key takes in storage: its metadata key
// and value, plus its elements' keys and values (a stream's entries, a
// hash's fields, ...), of which the first samples (0: all) are read and
// the rest taken to be of their average size; a sorted set's score index
// doubles its members. It reports false for a missing key. It reads no
// consumer group or PEL.
func memoryUsage(v *materialize.View, db uint8, key []byte, samples int64) (int64, bool, error) {
	m, ok, err := v.Meta(db, key)
	if err != nil || !ok {
		return 0, false, err
	}
	size := int64(len(codec.KeyPrefix(codec.TagMeta, db, key)) + len(codec.AppendMeta(nil, m)))
	var tag codec.Tag
	count := int64(m.Count)
	switch m.Type {
	case codec.TypeString:
		return size, true, nil
	case codec.TypeHash:
		tag = codec.TagHash
	case codec.TypeSet:
		tag = codec.TagSet
	case codec.TypeList:
		tag = codec.TagList
	case codec.TypeZSet:
		tag = codec.TagZMember
	case codec.TypeStream:
		tag, count = codec.TagStreamEntry, int64(m.Stream.Length)
	default:
		return size, true, nil
	}
	p := codec.KeyPrefix(tag, db, key)
	var sum, seen int64
	err = v.IterateKeys(p, codec.PrefixEnd(p), func(k, val []byte) (bool, error) {
		sum += int64(len(k) + len(val))
		seen++
		return samples == 0 || seen < samples, nil
	})
	if err != nil {
		return 0, false, err
	}
	if seen > 0 && count > seen {
		sum = int64(math.Round(float64(sum) / float64(seen) * float64(count)))
	}
	if m.Type == codec.TypeZSet {
		sum *= 2
	}
	return size + sum, true, nil
}
