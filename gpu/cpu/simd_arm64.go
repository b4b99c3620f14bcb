//go:build arm64 && cgo

package cpu

// #include "simd.h"
import "C"

import "folio/gpu"

// On arm64 the NEON level has the matmuls (simd_neon.c), on the
// activation formats the x86 kernels read (xquant.go), attention
// (simd_neon_attn.c) and RMSNorm, Add, softmax, SiLU·mul, GELU·mul and
// MixRows (simd_neon_ops.c), whose wrappers simd_cgo.go shares with amd64; its
// kernel table (kernels.go) runs the other ops in Go, so the functions
// below that panic are never reached.

func matmulPackedX(kernelKind, simdLevel, []byte, int, int, int, []byte, int, int, int, []float32, int) {
	panic("cpu: no packed matmul at the NEON level")
}

func readSum(p []byte) uint64 { return readSumGo(p) }

func matmulF32X(simdLevel, []float32, int, int, []float32, int, int, int, []float32, int) {
	panic("cpu: no SIMD float32 matmul at the NEON level")
}

func argmaxX(_ simdLevel, x []float32) int { return gpu.ArgMax(x) }

func ropeX(bool, []float32, []float32, int, int, int) {
	panic("cpu: no SIMD rope at the NEON level")
}

func writeKVX([]float32, []float32, []int32, []uint16, []uint16, int, int, int) {
	panic("cpu: no SIMD K/V store at the NEON level")
}

func writeKVQ8X([]float32, []float32, []int32, []byte, []byte, int, int, int) {
	panic("cpu: no SIMD K/V store at the NEON level")
}

// The Go names of the arm64 levels (simd.h).
func _() {
	var x [1]int
	_ = x[levelScalar-C.LEVEL_SCALAR] + x[levelNEON-C.LEVEL_NEON] + x[C.LEVEL_SCALAR-levelScalar] + x[C.LEVEL_NEON-levelNEON]
	_ = x[levelI8MM-C.LEVEL_I8MM] + x[C.LEVEL_I8MM-levelI8MM]
}
