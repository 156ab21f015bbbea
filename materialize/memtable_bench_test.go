package materialize

import (
	"bytes"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// BenchmarkMemtableInsertOrder measures Pebble's memtable insert per key
// (ns/op is per key) for batches of random M-key-sized keys drawn from
// 100,000, applied as they come or sorted first, by batch size: 16 and
// 160 are commit groups of unpipelined and -P 16 clients, 10,000 and
// 60,000 a write-back flush (docs/rfcs/20261123_write_path.md,
// "Write-back of metadata"). The batches are built before the timer
// starts; the memtables are 16 MiB, as the store's.
func BenchmarkMemtableInsertOrder(b *testing.B) {
	for _, group := range []int{16, 160, 10000, 60000} {
		for _, sorted := range []bool{false, true} {
			b.Run(fmt.Sprintf("batch=%d/sorted=%v", group, sorted), func(b *testing.B) {
				benchMemtableInsert(b, group, sorted)
			})
		}
	}
}

func benchMemtableInsert(b *testing.B, group int, sorted bool) {
	db, err := pebble.Open("", &pebble.Options{FS: vfs.NewMem(), MemTableSize: 16 << 20, DisableWAL: true, Logger: pebbleLogger{l: slog.New(slog.DiscardHandler)}})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	all := make([][]byte, 100000)
	for i := range all {
		all[i] = fmt.Appendf(nil, "M\x12\x34\x00\x00\x00\x00\x10key:%012d", i)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	val := make([]byte, 20)
	keys := make([][]byte, group)
	var batches []*pebble.Batch
	for n := 0; n < b.N; n += group {
		for i := range keys {
			keys[i] = all[rng.IntN(len(all))]
		}
		if sorted {
			slices.SortFunc(keys, bytes.Compare)
		}
		bt := db.NewBatch()
		for _, k := range keys {
			if err := bt.Set(k, val, nil); err != nil {
				b.Fatal(err)
			}
		}
		batches = append(batches, bt)
	}
	b.ResetTimer()
	for _, bt := range batches {
		if err := db.Apply(bt, pebble.NoSync); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	for _, bt := range batches {
		bt.Close()
	}
}
