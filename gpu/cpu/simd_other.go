//go:build (!amd64 && !arm64) || !cgo

package cpu

import (
	"unsafe"

	"folio/gpu"
)

// Without cgo, or off amd64 and arm64, the backend runs its plain Go kernels.

func detectLevel() simdLevel { return levelScalar }

func quantizeX(kernelKind, []float32, int, int, int, []byte, int) {
	panic("cpu: SIMD kernels are not built in")
}

func matmulX(kernelKind, simdLevel, []byte, int, int, []byte, int, int, int, []float32, int) {
	panic("cpu: SIMD kernels are not built in")
}

func matmulPackedX(kernelKind, simdLevel, []byte, int, int, int, []byte, int, int, int, []float32, int) {
	panic("cpu: SIMD kernels are not built in")
}

func readSum(p []byte) uint64 { return readSumGo(p) }

func matmulF32X(simdLevel, []float32, int, int, []float32, int, int, int, []float32, int) {
	panic("cpu: SIMD kernels are not built in")
}

func argmaxX(_ simdLevel, x []float32) int { return gpu.ArgMax(x) }

func geluMulX(_, _, _, _ []float32) { panic("cpu: SIMD kernels are not built in") }

func mixRowsX(dst, base []float32, srcs [][]float32, coefs []float32, wide int, cols []int, bias float32, n int) {
	panic("cpu: the row-mixing kernel is amd64's")
}

// attnTile is a tile of rows as the kernels read it: its first row of q
// and out, its row count, the position of that row and where its
// sequence's block table starts in simdAttentionTask.blocks.
type attnTile struct{ row, rows, pos, blocks int32 }

func newAttnTile(row, rows, pos, blocks int32) attnTile { return attnTile{row, rows, pos, blocks} }

func attentionX(simdLevel, []attnTile, int, int, []float32, int, int, int, int, unsafe.Pointer, unsafe.Pointer, kvKind,
	[]int32, int, int, gpu.AttnOpts, []float32, []float32, []float32) {
	panic("cpu: SIMD kernels are not built in")
}

func siluMulX(simdLevel, []float32, []float32, []float32) {
	panic("cpu: SIMD kernels are not built in")
}

func ropeX(bool, []float32, []float32, int, int, int) {
	panic("cpu: SIMD kernels are not built in")
}

func rmsNormX(simdLevel, []float32, []float32, []float32, int, float32) {
	panic("cpu: SIMD kernels are not built in")
}

func addX(simdLevel, []float32, []float32, []float32, int, int) {
	panic("cpu: SIMD kernels are not built in")
}

func softmaxX(simdLevel, []float32, int) {
	panic("cpu: SIMD kernels are not built in")
}

func writeKVX([]float32, []float32, []int32, []uint16, []uint16, int, int, int) {
	panic("cpu: SIMD kernels are not built in")
}

func writeKVQ8X([]float32, []float32, []int32, []byte, []byte, int, int, int) {
	panic("cpu: SIMD kernels are not built in")
}
