package cuda

import "fmt"

// Threads per block of each kernel family: the launches use them (through
// kernelThreads) and the kernels declare them as __launch_bounds__, so
// ptxas keeps each kernel's registers within what a block of that size
// may use (64K registers per SM: at most 128 a thread for 512 threads).
// A kernel compiled for fewer threads than it is launched with fails
// every launch with CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES.
const (
	matvecThreads  = 32 * mvWarps                // MV_WARPS warps
	matmulThreads  = (mmTile / 4) * (mmTile / 4) // 16 × 16 threads of 4 × 4 outputs
	getRowsThreads = 128                         // 8 elements each
	ewThreads      = 256                         // elementwise: a thread per element
	rowThreads     = 256                         // rms_norm, softmax, layer_norm, match_norm, sparsify_rows: the most; fewer whole warps for short rows
	attThreads     = 32 * attWarps               // ATT_WARPS warps
)

// kernelThreads is, by kernel, the threads per block it is launched with
// (at most, for the row kernels) and its __launch_bounds__ in
// kernels/*.cu (a test reads the sources). launch refuses a block larger
// than this.
var kernelThreads = [numKernels]int{
	kMatvecF32: matvecThreads, kMatvecF16: matvecThreads, kMatvecQ8_0: matvecThreads,
	kMatvecQ4_0: matvecThreads, kMatvecQ4_K: matvecThreads, kMatvecQ6_K: matvecThreads,
	kMatvecMXFP4: matvecThreads,
	kMatmulF32:   matmulThreads, kMatmulF16: matmulThreads, kMatmulQ8_0: matmulThreads,
	kMatmulQ4_0: matmulThreads, kMatmulQ4_K: matmulThreads, kMatmulQ6_K: matmulThreads,
	kMatmulMXFP4: matmulThreads,
	kGetRowsF32:  getRowsThreads, kGetRowsF16: getRowsThreads, kGetRowsQ8_0: getRowsThreads,
	kGetRowsQ4_0: getRowsThreads, kGetRowsQ4_K: getRowsThreads, kGetRowsQ6_K: getRowsThreads,
	kGetRowsMXFP4: getRowsThreads,
	kDequantF32:   ewThreads, kDequantF16: ewThreads, kDequantQ8_0: ewThreads,
	kDequantQ4_0: ewThreads, kDequantQ4_K: ewThreads, kDequantQ6_K: ewThreads,
	kDequantMXFP4: ewThreads,
	kRMSNorm:      rowThreads, kAdd: ewThreads, kSiLUMul: ewThreads, kSoftmax: rowThreads, kRope: ewThreads,
	kScale: ewThreads, kSoftcap: ewThreads, kGELUMul: ewThreads, kLayerNorm: rowThreads, kSwiGLUOAI: ewThreads,
	kSigmoidMul: ewThreads, kMixRows: ewThreads, kMatchNorm: rowThreads, kMulRow: ewThreads, kSparsifyRows: rowThreads,
	kWriteKVF16: ewThreads, kWriteKVF32: ewThreads, kAttentionF16: attThreads, kAttentionF32: attThreads,
	kAttentionF16Wide: attThreads, kAttentionF32Wide: attThreads,
}

// fixedThreads reports whether every launch of k has exactly
// kernelThreads[k] threads (all but the row kernels).
func fixedThreads(k kernel) bool {
	return k != kRMSNorm && k != kSoftmax && k != kLayerNorm && k != kMatchNorm && k != kSparsifyRows
}

// KernelBound is a kernel of the module, by its name there, and the most
// threads per block folio launches it with, which is its
// __launch_bounds__: the device must report at least Threads for the
// kernel's CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, or its launches fail.
type KernelBound struct {
	Name    string
	Threads int
}

// Kernels lists every kernel of the module with its launch size, in the
// order Open loads them.
func Kernels() []KernelBound {
	ks := make([]KernelBound, numKernels)
	for k := range numKernels {
		ks[k] = KernelBound{Name: k.String(), Threads: kernelThreads[k]}
	}
	return ks
}

// checkBlock panics when d's block is larger than k's launch bound (a
// launch the device would refuse) or smaller than the fixed size the
// kernel's indexing assumes.
func checkBlock(k kernel, d dims) {
	n := int(d.block[0]) * int(d.block[1]) * int(d.block[2])
	if n > kernelThreads[k] || fixedThreads(k) && n != kernelThreads[k] || n%32 != 0 {
		panic(fmt.Sprintf("cuda: %s launched with %d threads a block; its __launch_bounds__ is %d", k, n, kernelThreads[k]))
	}
}
