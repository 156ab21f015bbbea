package materialize

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/sediment-dev/sediment/codec"
)

// BenchmarkMetaCache measures the committed metadata cache alone: get of a
// cached string key and put of a new value for one (the writer's publish),
// picked at random among n keys of redis-benchmark's shape
// ("key:%012d"), with n from what fits the processor's caches to past
// them. heap-B/key is the Go heap the cache holds per key after the fill.
func BenchmarkMetaCache(b *testing.B) {
	for _, n := range []int{10_000, 100_000, 200_000} {
		keys := make([][]byte, n)
		for i := range keys {
			keys[i] = fmt.Appendf(nil, "key:%012d", i)
		}
		order := make([]int32, 1<<20)
		for i := range order {
			order[i] = int32(rand.IntN(n))
		}
		val := []byte("xxx")
		fill := func() (*metaCache, float64) {
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			c := newMetaCache()
			for i, k := range keys {
				c.put(0, k, &codec.Meta{Type: codec.TypeString, Value: val}, true, uint64(i))
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			return c, float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
		}
		b.Run(fmt.Sprintf("get/keys=%d", n), func(b *testing.B) {
			c, heap := fill()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				e, ok := c.get(0, keys[order[i&(len(order)-1)]])
				if !ok || len(e.meta.Value) != 3 {
					b.Fatal("a cached key missed")
				}
			}
			b.ReportMetric(heap, "heap-B/key")
		})
		b.Run(fmt.Sprintf("put/keys=%d", n), func(b *testing.B) {
			c, heap := fill()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c.put(0, keys[order[i&(len(order)-1)]], &codec.Meta{Type: codec.TypeString, Value: val}, true, uint64(i))
			}
			b.ReportMetric(heap, "heap-B/key")
		})
	}
}
