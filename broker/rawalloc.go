package broker

import "unsafe"

// mallocgc is the runtime's allocator. The runtime keeps it reachable by
// go:linkname for packages that allocate without zeroing (Pebble's
// internal/rawalloc among them).
//
//go:linkname mallocgc runtime.mallocgc
func mallocgc(size uintptr, typ unsafe.Pointer, needzero bool) unsafe.Pointer

// rawAllocMin is the capacity from which makeNoZero skips zeroing: below
// it the allocator's small-object path zeroes cheaply.
const rawAllocMin = 32 << 10

// makeNoZero returns an empty byte slice of capacity c. From rawAllocMin
// on, its memory is not zeroed, so the caller must write every byte it
// exposes by extending the slice (append does). A 100 KB argument spent
// 5-9 % of a SET's CPU zeroing its buffer before the socket's bytes
// overwrote it (docs/perf.md, "Large arguments without zeroing").
func makeNoZero(c int) []byte {
	if c < rawAllocMin {
		return make([]byte, 0, c)
	}
	return unsafe.Slice((*byte)(mallocgc(uintptr(c), nil, false)), c)[:0]
}
