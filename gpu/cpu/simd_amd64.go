//go:build amd64 && cgo

package cpu

// The cgo wrappers of kernels that only the x86 levels have: on arm64
// (simd_arm64.go) these ops run in Go.

// #include "simd.h"
import "C"

import (
	"unsafe"

	"folio/gpu"
)

// argmaxX is gpu.ArgMax of x, one cgo call at AVX2 and AVX-512.
func argmaxX(l simdLevel, x []float32) int {
	if l < levelAVX2 || len(x) == 0 {
		return gpu.ArgMax(x)
	}
	return int(C.folio_argmax(C.int(l.vector()), (*C.float)(unsafe.Pointer(&x[0])), C.int64_t(len(x))))
}

// matmulPackedX sets dst[i·dstride + r] = w row r · x row i for r < rows
// and i < nx: w holds ⌈rows/packRows⌉ groups of nb blocks of kind's packed
// layout (repack.go), group bytes apart, 64-byte aligned. One cgo call.
func matmulPackedX(kind kernelKind, l simdLevel, w []byte, group, nb, rows int, x []byte, xstride, nx, k int, dst []float32, dstride int) {
	_ = w[((rows+packRows-1)/packRows)*group-1]
	_ = x[(nx-1)*xstride+xRowBytes(kind, k)-1]
	_ = dst[(nx-1)*dstride+rows-1]
	C.folio_matmul_packed(C.int(kind), C.int(l.packed()), (*C.uint8_t)(unsafe.Pointer(&w[0])), C.int64_t(group), C.int(nb), C.int(rows),
		(*C.uint8_t)(unsafe.Pointer(&x[0])), C.int64_t(xstride), C.int(nx), (*C.float)(unsafe.Pointer(&dst[0])), C.int64_t(dstride))
}

// matmulF32X sets dst[i·dstride + r] = w row r · x row i for r < rows and
// i < nx, rows of k float32s wstride and xstride apart (simd_f32.c). One
// cgo call.
func matmulF32X(l simdLevel, w []float32, wstride, rows int, x []float32, xstride, nx, k int, dst []float32, dstride int) {
	_ = w[(rows-1)*wstride+k-1]
	_ = x[(nx-1)*xstride+k-1]
	_ = dst[(nx-1)*dstride+rows-1]
	C.folio_matmul_f32(C.int(l.vector()), (*C.float)(unsafe.Pointer(&w[0])), C.int64_t(wstride), C.int(rows),
		(*C.float)(unsafe.Pointer(&x[0])), C.int64_t(xstride), C.int(nx), C.int(k), (*C.float)(unsafe.Pointer(&dst[0])), C.int64_t(dstride))
}

// readSum sums the bytes of p (len a multiple of 128, 32-byte aligned) in
// 64-bit lanes, at the speed of memory.
func readSum(p []byte) uint64 {
	if bestLevel < levelAVX2 {
		return readSumGo(p)
	}
	return uint64(C.folio_read_sum((*C.uint8_t)(unsafe.Pointer(&p[0])), C.int64_t(len(p))))
}

// ropeX rotates the rows of x (c elements each) by their angles in cs:
// each hd-element head's first dims elements, by adjacent pairs (2i,
// 2i+1), or by NeoX's (i, i + dims/2). One cgo call.
func ropeX(neox bool, cs, x []float32, c, hd, dims int) {
	n := len(x) / c
	_ = cs[n*dims-1]
	pcs, px := (*C.float)(unsafe.Pointer(&cs[0])), (*C.float)(unsafe.Pointer(&x[0]))
	if neox {
		C.folio_rope_neox(pcs, px, C.int64_t(n), C.int64_t(c), C.int(hd), C.int(dims))
		return
	}
	C.folio_rope_pairs(pcs, px, C.int64_t(n), C.int64_t(c), C.int(hd), C.int(dims))
}

// writeKVX stores rows of k and v (len(slots) rows of kvheads·d) as halves
// at their slots of a layer's K and V (kd, vd). One cgo call.
func writeKVX(k, v []float32, slots []int32, kd, vd []uint16, bs, kvheads, d int) {
	n := len(slots)
	_, _ = k[n*kvheads*d-1], v[n*kvheads*d-1]
	C.folio_write_kv_f16((*C.float)(unsafe.Pointer(&k[0])), (*C.float)(unsafe.Pointer(&v[0])), C.int(n),
		(*C.int32_t)(unsafe.Pointer(&slots[0])), (*C.uint16_t)(unsafe.Pointer(&kd[0])), (*C.uint16_t)(unsafe.Pointer(&vd[0])),
		C.int(bs), C.int(kvheads), C.int(d))
}

// writeKVQ8X stores rows of k and v (len(slots) rows of kvheads·d, d a
// multiple of 32) as Q8_0 blocks at their slots of a layer's K and V (kd,
// vd). One cgo call.
func writeKVQ8X(k, v []float32, slots []int32, kd, vd []byte, bs, kvheads, d int) {
	n := len(slots)
	_, _ = k[n*kvheads*d-1], v[n*kvheads*d-1]
	C.folio_write_kv_q8((*C.float)(unsafe.Pointer(&k[0])), (*C.float)(unsafe.Pointer(&v[0])), C.int(n),
		(*C.int32_t)(unsafe.Pointer(&slots[0])), (*C.uint8_t)(unsafe.Pointer(&kd[0])), (*C.uint8_t)(unsafe.Pointer(&vd[0])),
		C.int(bs), C.int(kvheads), C.int(d))
}

// The Go names of the x86 levels (simd.h).
func _() {
	var x [1]int
	_ = x[levelScalar-C.LEVEL_SCALAR] + x[levelAVX2-C.LEVEL_AVX2] + x[levelAVXVNNI-C.LEVEL_AVXVNNI] + x[levelAVX512-C.LEVEL_AVX512] + x[levelAVX512BF16-C.LEVEL_AVX512BF16] + x[levelAMX-C.LEVEL_AMX]
	_ = x[C.LEVEL_SCALAR-levelScalar] + x[C.LEVEL_AVX2-levelAVX2] + x[C.LEVEL_AVXVNNI-levelAVXVNNI] + x[C.LEVEL_AVX512-levelAVX512] + x[C.LEVEL_AVX512BF16-levelAVX512BF16] + x[C.LEVEL_AMX-levelAMX]
}
