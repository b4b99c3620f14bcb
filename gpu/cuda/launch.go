package cuda

import (
	"fmt"
	"math"
	"unsafe"

	"folio/models/gguf"
)

// kernel names an extern "C" kernel of kernels/*.cu.
type kernel int

const (
	kMatvecF32 kernel = iota
	kMatvecF16
	kMatvecQ8_0
	kMatvecQ4_0
	kMatvecQ4_K
	kMatvecQ6_K
	kMatvecMXFP4
	kMatmulF32
	kMatmulF16
	kMatmulQ8_0
	kMatmulQ4_0
	kMatmulQ4_K
	kMatmulQ6_K
	kMatmulMXFP4
	kGetRowsF32
	kGetRowsF16
	kGetRowsQ8_0
	kGetRowsQ4_0
	kGetRowsQ4_K
	kGetRowsQ6_K
	kGetRowsMXFP4
	kDequantF32
	kDequantF16
	kDequantQ8_0
	kDequantQ4_0
	kDequantQ4_K
	kDequantQ6_K
	kDequantMXFP4
	kRMSNorm
	kAdd
	kSiLUMul
	kSoftmax
	kRope
	kScale
	kSoftcap
	kGELUMul
	kLayerNorm
	kSwiGLUOAI
	kSigmoidMul
	kMixRows
	kMatchNorm
	kMulRow
	kSparsifyRows
	kWriteKVF16
	kWriteKVF32
	kAttentionF16
	kAttentionF32
	kAttentionF16Wide
	kAttentionF32Wide
	numKernels
)

// kernelNames are the kernels' names in the sources, by kernel.
var kernelNames = [numKernels]string{
	"matvec_f32", "matvec_f16", "matvec_q8_0", "matvec_q4_0", "matvec_q4_k", "matvec_q6_k", "matvec_mxfp4",
	"matmul_f32", "matmul_f16", "matmul_q8_0", "matmul_q4_0", "matmul_q4_k", "matmul_q6_k", "matmul_mxfp4",
	"get_rows_f32", "get_rows_f16", "get_rows_q8_0", "get_rows_q4_0", "get_rows_q4_k", "get_rows_q6_k", "get_rows_mxfp4",
	"dequant_f32", "dequant_f16", "dequant_q8_0", "dequant_q4_0", "dequant_q4_k", "dequant_q6_k", "dequant_mxfp4",
	"rms_norm", "add", "silu_mul", "softmax", "rope",
	"scale", "softcap", "gelu_mul", "layer_norm", "swiglu_oai", "sigmoid_mul",
	"mix_rows", "match_norm", "mul_row", "sparsify_rows",
	"write_kv_f16", "write_kv_f32", "attention_f16", "attention_f32", "attention_f16_wide", "attention_f32_wide",
}

func (k kernel) String() string { return kernelNames[k] }

// nativeTypes are the weight types the kernels read as they are, each
// with its matvec kernel (matmul and get_rows follow at fixed distances).
// Other types are converted to F32 when loaded.
var nativeTypes = map[gguf.TensorType]kernel{
	gguf.TypeF32: kMatvecF32, gguf.TypeF16: kMatvecF16, gguf.TypeQ8_0: kMatvecQ8_0,
	gguf.TypeQ4_0: kMatvecQ4_0, gguf.TypeQ4_K: kMatvecQ4_K, gguf.TypeQ6_K: kMatvecQ6_K,
	gguf.TypeMXFP4: kMatvecMXFP4,
}

func matvecKernel(t gguf.TensorType) kernel  { return nativeTypes[t] }
func matmulKernel(t gguf.TensorType) kernel  { return nativeTypes[t] + kMatmulF32 - kMatvecF32 }
func getRowsKernel(t gguf.TensorType) kernel { return nativeTypes[t] + kGetRowsF32 - kMatvecF32 }
func dequantKernel(t gguf.TensorType) kernel { return nativeTypes[t] + kDequantF32 - kMatvecF32 }

// Geometry constants shared with the kernels' #defines.
const (
	mvWarps    = 4   // matvec: MV_WARPS, warps per block
	mvRows     = 2   // matvec: MV_ROWS, weight rows per warp
	mmTile     = 64  // matmul: TM and TN
	matvecMaxN = 8   // MatMul uses matvec below this many rows of x
	attWarps   = 16  // attention: ATT_WARPS
	attHead    = 256 // attention: 32·ATT_HD, the largest head of attention_f16 and _f32
	attMaxHead = 512 // attention: 32·ATT_HD_WIDE, the largest head (the _wide kernels')
	maxGridY   = 65535
)

// dims is a launch's grid and block. The helpers below take the block
// from kernelThreads (bounds.go), the kernels' launch bounds.
type dims struct{ grid, block [3]uint32 }

func ceilDiv64(a, b int64) int64 { return (a + b - 1) / b }

// grid3 checks x and y against the device's limits (2³¹−1 and 65535):
// larger ones are a shape no model has, refused as a broken invariant.
func grid3(x, y int64) [3]uint32 {
	if x <= 0 || y <= 0 || x > math.MaxInt32 || y > maxGridY {
		panic(fmt.Sprintf("cuda: launch grid %d × %d is outside the device's limits", x, y))
	}
	return [3]uint32{uint32(x), uint32(y), 1}
}

func block1(n int) [3]uint32 { return [3]uint32{uint32(n), 1, 1} }

// matmulDims is the launch of MatMul for x [n, k] and w [m, k] of typ:
// matvec for few rows of x (a warp per mvRows weight rows, a grid row per
// x row), else tiles.
func matmulDims(typ gguf.TensorType, n, m int) (k kernel, d dims, tiled bool) {
	if n < matvecMaxN {
		k = matvecKernel(typ)
		return k, dims{grid3(ceilDiv64(int64(m), mvWarps*mvRows), int64(n)), block1(kernelThreads[k])}, false
	}
	k = matmulKernel(typ)
	return k, dims{grid3(ceilDiv64(int64(m), mmTile), ceilDiv64(int64(n), mmTile)), block1(kernelThreads[k])}, true
}

// getRowsDims covers n rows of cols elements, 8 per thread of k.
func getRowsDims(k kernel, n, cols int) dims {
	t := kernelThreads[k]
	return dims{grid3(ceilDiv64(ceilDiv64(int64(cols), 8), int64(t)), int64(n)), block1(t)}
}

// elementwiseDims is a thread of k per element of n.
func elementwiseDims(k kernel, n int64) dims {
	t := kernelThreads[k]
	return dims{grid3(ceilDiv64(n, int64(t)), 1), block1(t)}
}

// rowDims is a block of k per row (or run) of cols elements: as many whole
// warps as cover cols, at most k's bound.
func rowDims(k kernel, rows int64, cols int) dims {
	t := min(kernelThreads[k], max(32, (cols+31)/32*32))
	return dims{grid3(rows, 1), block1(t)}
}

// attentionDims is a block of k per (query head, row).
func attentionDims(k kernel, heads, rows int) dims {
	return dims{grid3(int64(heads), int64(rows)), block1(kernelThreads[k])}
}

// maxArgs bounds the parameters of a kernel.
const maxArgs = 16

// args packs the parameters of one launch for cuLaunchKernel, which takes
// an array of pointers, one per parameter, to its value. Each value has an
// 8-byte slot; a 4-byte parameter is read from the slot's first bytes,
// which hold it on a little-endian machine (every machine CUDA runs on).
type args struct {
	vals [maxArgs]uint64
	ptrs [maxArgs]unsafe.Pointer
	n    int
}

// reset empties a for the next launch, values and pointers too: a
// recorded launch ends at the first nil pointer, and two launches with
// the same parameters compare equal whole (graph.go).
func (a *args) reset() *args {
	*a = args{}
	return a
}

func (a *args) put(v uint64) *args {
	if a.n == maxArgs {
		panic("cuda: more than 16 kernel parameters")
	}
	a.vals[a.n] = v
	a.ptrs[a.n] = unsafe.Pointer(&a.vals[a.n])
	a.n++
	return a
}

// ptr is a device pointer (8 bytes).
func (a *args) ptr(p uint64) *args { return a.put(p) }

// i64 is a long long.
func (a *args) i64(v int64) *args { return a.put(uint64(v)) }

// i32 is an int; a value past int32 is a shape no kernel indexes.
func (a *args) i32(v int) *args {
	if v < math.MinInt32 || v > math.MaxInt32 {
		panic(fmt.Sprintf("cuda: kernel parameter %d does not fit an int", v))
	}
	return a.put(uint64(uint32(int32(v))))
}

// f32 is a float.
func (a *args) f32(v float32) *args { return a.put(uint64(math.Float32bits(v))) }

// params is the kernelParams array.
func (a *args) params() unsafe.Pointer { return unsafe.Pointer(&a.ptrs[0]) }
