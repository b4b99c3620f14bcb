package cuda

import "fmt"

// blas is the part of cuBLAS folio calls, bound to one handle on the
// backend's stream: SGEMM with TF32 tensor cores, for MatMul over many rows
// (prefill) once the weight is dequantized to F32. cublasGemmEx would take
// F16 operands but has 19 parameters, past what purego passes (15);
// cublasSgemm_v2 has 14. Tests put fakes in its place.
type blas struct {
	// Sgemm is column-major C = α·op(A)·op(B) + β·C (cublasSgemm_v2); op
	// is 0 (N) or 1 (T); alpha and beta point to host floats in heap memory.
	Sgemm func(opA, opB int32, m, n, k int32, alpha *float32, a uint64, lda int32, b uint64, ldb int32, beta *float32, c uint64, ldc int32) result
	// Version is cublasGetVersion's: 130100 is 13.1.0; 0 if unknown.
	Version func() int
	Destroy func() result
}

const (
	blasOpN = 0 // CUBLAS_OP_N
	blasOpT = 1 // CUBLAS_OP_T
	// blasMinRows is the fewest rows of x for which MatMul dequantizes the
	// weight and calls cuBLAS; fewer take the matvec or tiled kernels.
	blasMinRows = 16
)

// blasStatusNames are cublasStatus_t's names.
var blasStatusNames = map[result]string{1: "CUBLAS_STATUS_NOT_INITIALIZED", 3: "CUBLAS_STATUS_ALLOC_FAILED",
	7: "CUBLAS_STATUS_INVALID_VALUE", 8: "CUBLAS_STATUS_ARCH_MISMATCH", 11: "CUBLAS_STATUS_MAPPING_ERROR",
	13: "CUBLAS_STATUS_EXECUTION_FAILED", 14: "CUBLAS_STATUS_INTERNAL_ERROR", 15: "CUBLAS_STATUS_NOT_SUPPORTED",
	16: "CUBLAS_STATUS_LICENSE_ERROR"}

func blasError(call string, r result) error {
	if r == 0 {
		return nil
	}
	name, ok := blasStatusNames[r]
	if !ok {
		name = "CUBLAS_STATUS_UNKNOWN"
	}
	return &Error{Call: call, Code: int(r), Name: name}
}

// sgemmRowMajor computes dst[n, m] = x[n, k] · w[m, k]ᵀ, row-major, with
// column-major SGEMM: row-major dst is column-major m × n (ldc m), w is
// column-major k × m (lda k) used transposed, x is column-major k × n (ldb
// k): C(m×n) = wᵀ(m×k) · x(k×n).
func (b *Backend) sgemmRowMajor(dst, x, w uint64, n, k, m int) {
	b.alphaBeta = [2]float32{1, 0}
	b.blasCalls++
	r := b.blas.Sgemm(blasOpT, blasOpN, int32(m), int32(n), int32(k), &b.alphaBeta[0], w, int32(k), x, int32(k),
		&b.alphaBeta[1], dst, int32(m))
	if err := blasError("cublasSgemm_v2", r); err != nil {
		panic(fmt.Errorf("cuda: MatMul [%d×%d]·[%d×%d]ᵀ: %w", n, k, m, k, err))
	}
}
