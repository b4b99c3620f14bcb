package cpu

import "unsafe"

// hugePage is the size of a transparent huge page on x86-64 and arm64.
const hugePage = 2 << 20

// alignedAlloc returns n zeroed bytes that start on a 64-byte boundary.
// Allocations of a few huge pages or more (repacked weights, K/V caches)
// start on a huge page instead and ask the OS to back them with huge
// pages (adviseHuge): a decode step streams every weight and reads K/V
// blocks scattered over the pool, and with 4 KiB pages each 4 KiB costs a
// TLB miss, and each first touch of the K/V pool a page fault.
func alignedAlloc(n int) []byte {
	align := 64
	if n >= 2*hugePage {
		align = hugePage
	}
	raw := make([]byte, n+align-1)
	off := int(-uintptr(unsafe.Pointer(&raw[0])) & uintptr(align-1))
	b := raw[off : off+n : off+n]
	if align == hugePage {
		adviseHuge(b[:n&^(hugePage-1)])
	}
	return b
}

// alignedU16 is alignedAlloc for n uint16s.
func alignedU16(n int) []uint16 {
	b := alignedAlloc(2 * n)
	return unsafe.Slice((*uint16)(unsafe.Pointer(&b[0])), n)
}

// alignedF32 is alignedAlloc for n float32s.
func alignedF32(n int) []float32 {
	b := alignedAlloc(4 * n)
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), n)
}

// arena hands out 64-byte aligned pieces of chunks of huge pages, so that
// the many small weights of a model (a few hundred KiB each) share huge
// pages instead of each taking 4 KiB ones. A chunk lives as long as any
// piece of it does.
type arena struct {
	free []byte // what is left of the current chunk
}

// arenaChunk is the size of an arena's chunks; an allocation of half of
// it or more gets a chunk of its own.
const arenaChunk = 16 * hugePage

// alloc returns n zeroed bytes, 64-byte aligned.
func (a *arena) alloc(n int) []byte {
	if n >= arenaChunk/2 {
		return alignedAlloc(n)
	}
	n64 := (n + 63) &^ 63
	if len(a.free) < n64 {
		a.free = alignedAlloc(arenaChunk)
	}
	b := a.free[:n:n]
	a.free = a.free[n64:]
	return b
}
