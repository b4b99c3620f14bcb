// Package conformance checks one gpu.Backend against another, op by op, as
// llama.cpp's test-backend-ops does: one table of op cases (Cases), each
// with its error bound, run on a reference backend and on the backend
// under test with the same inputs, compared by normalized mean squared
// error. A generation check (CheckGeneration) then decodes greedily on
// both and compares the logits of every step.
//
// The reference is gpu/cpu's scalar level. The checks run over every SIMD
// level of gpu/cpu and the CUDA kernels' CPU emulation in tests, and over
// a real GPU in `folio gpu selftest`.
package conformance

import (
	"fmt"
	"math"

	"folio/gpu"
)

// Case is one op on fixed inputs: Run does it on a backend and returns the
// values to compare (the op's output, and the pool's bytes for K/V ops);
// Tol bounds the NMSE against the reference.
type Case struct {
	Op  string // the op and its case: "MatMul q4_K [3×512]·[130×512]ᵀ"
	Tol float64
	Run func(be gpu.Backend) []float32
}

// OpCheck is one case's result: the normalized mean squared error NMSE =
// Σ(dev − ref)² / Σ ref² against the case's tolerance.
type OpCheck struct {
	Op   string
	NMSE float64 // NaN when the backend panicked or produced NaN
	Tol  float64
	Err  string // the panic, if any
}

// Pass reports whether the op is within its tolerance.
func (c OpCheck) Pass() bool { return c.Err == "" && c.NMSE <= c.Tol }

// CheckOps runs every case of Cases(seed) on ref and dev.
func CheckOps(ref, dev gpu.Backend, seed uint64) []OpCheck {
	return Check(ref, dev, Cases(seed))
}

// CheckMatMuls runs the MatMul cases alone: for a second pass over another
// matmul path (cuBLAS off).
func CheckMatMuls(ref, dev gpu.Backend, seed uint64) []OpCheck {
	return Check(ref, dev, MatMulCases(seed))
}

// Check runs each case on ref and then dev and compares the values. A
// panic (on either side) is the case's error.
func Check(ref, dev gpu.Backend, cases []Case) []OpCheck {
	out := make([]OpCheck, 0, len(cases))
	for _, c := range cases {
		out = append(out, check(ref, dev, c))
	}
	return out
}

func check(ref, dev gpu.Backend, c Case) OpCheck {
	res := OpCheck{Op: c.Op, Tol: c.Tol, NMSE: math.NaN()}
	want, err := try(c.Run, ref)
	if err != "" {
		res.Err = "reference: " + err
		return res
	}
	got, err := try(c.Run, dev)
	if err != "" {
		res.Err = err
		return res
	}
	if len(got) != len(want) {
		res.Err = fmt.Sprintf("%d values, reference %d", len(got), len(want))
		return res
	}
	res.NMSE = gpu.NMSE(got, want)
	if math.IsNaN(res.NMSE) {
		res.Err = "NaN in the result"
	}
	return res
}

func try(f func(gpu.Backend) []float32, be gpu.Backend) (out []float32, err string) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Sprint(r)
		}
	}()
	return f(be), ""
}
