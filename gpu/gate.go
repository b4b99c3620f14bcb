package gpu

import (
	"fmt"
	"math"
)

// SigmoidMuler is a backend's elementwise gate by a sigmoid: dst = x ·
// σ(gate), σ(g) = 1 / (1 + e^-g) in float32, as llama.cpp's ggml_sigmoid
// then ggml_mul make it (Arcee's gated attention: the attention's output
// times the sigmoid of a projection of the layer's input, before the
// output projection). dst may be x.
type SigmoidMuler interface {
	SigmoidMul(dst, x, gate Tensor)
}

// SigmoidMul is dst = x · σ(gate) through be's SigmoidMuler, or on the
// host (x and gate downloaded, dst uploaded) when be has none.
func SigmoidMul(be Backend, dst, x, gate Tensor) {
	if sm, ok := be.(SigmoidMuler); ok {
		sm.SigmoidMul(dst, x, gate)
		return
	}
	CheckSigmoidMul(be.Name(), dst, x, gate)
	xs := make([]float32, x.Rows()*x.Cols())
	gs := make([]float32, len(xs))
	be.Download(xs, x)
	be.Download(gs, gate)
	SigmoidMulHost(xs, xs, gs)
	be.Upload(dst, xs)
}

// CheckSigmoidMul panics, naming the backend, unless dst, x and gate have
// one shape.
func CheckSigmoidMul(backend string, dst, x, gate Tensor) {
	if dst.Rows() != x.Rows() || dst.Cols() != x.Cols() || gate.Rows() != x.Rows() || gate.Cols() != x.Cols() {
		panic(fmt.Sprintf("%s: SigmoidMul: dst %d×%d, x %d×%d, gate %d×%d differ", backend,
			dst.Rows(), dst.Cols(), x.Rows(), x.Cols(), gate.Rows(), gate.Cols()))
	}
}

// SigmoidMulHost is dst[i] = x[i] · σ(gate[i]) on host slices (dst may be
// x): the reference every backend's SigmoidMul matches.
func SigmoidMulHost(dst, x, gate []float32) {
	for i, g := range gate[:len(dst)] {
		dst[i] = x[i] * (1 / (1 + float32(math.Exp(float64(-g)))))
	}
}
