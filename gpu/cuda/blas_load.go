//go:build linux || darwin

package cuda

import "fmt"

// loadBLAS opens cuBLAS and makes a handle on stream, with TF32 tensor
// cores allowed. The context must be current.
func loadBLAS(stream uintptr, toolkit []string) (*blas, error) {
	b, _, err := loadBLASTried(stream, toolkit)
	return b, err
}

// loadBLASTried is loadBLAS with every path it tried, cuBLASLt's first.
func loadBLASTried(stream uintptr, toolkit []string) (*blas, []dlAttempt, error) {
	// cuBLAS needs cuBLASLt; opened first, it is found wherever cuBLAS is.
	_, tried, _ := dlopenFirst("cuBLASLt", libNames("libcublasLt.so", toolkit, "", ".13", ".12"))
	h, more, err := dlopenFirst("cuBLAS", libNames("libcublas.so", toolkit, "", ".13", ".12"))
	tried = append(tried, more...)
	if err != nil {
		return nil, tried, err
	}
	var f struct{ create, destroy, setStream, setMath, sgemm, version uintptr }
	err = symbols("libcublas", h, map[string]*uintptr{"cublasCreate_v2": &f.create, "cublasDestroy_v2": &f.destroy,
		"cublasSetStream_v2": &f.setStream, "cublasSetMathMode": &f.setMath, "cublasSgemm_v2": &f.sgemm,
		"cublasGetVersion_v2": &f.version})
	if err != nil {
		return nil, tried, err
	}
	handle := new(uintptr)
	if err := blasError("cublasCreate_v2", call(f.create, addr(handle))); err != nil {
		return nil, tried, err
	}
	hd := *handle
	const tf32TensorOpMath = 3 // CUBLAS_TF32_TENSOR_OP_MATH
	if err := blasError("cublasSetStream_v2", call(f.setStream, hd, stream)); err != nil {
		call(f.destroy, hd)
		return nil, tried, err
	}
	if err := blasError("cublasSetMathMode", call(f.setMath, hd, tf32TensorOpMath)); err != nil {
		call(f.destroy, hd)
		return nil, tried, fmt.Errorf("%w (TF32)", err)
	}
	i := func(v int32) uintptr { return uintptr(uint32(v)) }
	return &blas{
		Sgemm: func(opA, opB, m, n, k int32, alpha *float32, a uint64, lda int32, b uint64, ldb int32, beta *float32, c uint64, ldc int32) result {
			return call(f.sgemm, hd, i(opA), i(opB), i(m), i(n), i(k), addr(alpha), uintptr(a), i(lda), uintptr(b), i(ldb),
				addr(beta), uintptr(c), i(ldc))
		},
		Version: func() int {
			v := new(int32)
			if call(f.version, hd, addr(v)) != 0 {
				return 0
			}
			return int(*v)
		},
		Destroy: func() result { return call(f.destroy, hd) },
	}, tried, nil
}
