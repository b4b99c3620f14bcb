package gpu

import (
	"fmt"
	"math"
)

// Ops on rows that Gemma 3n's parallel residual streams (AltUp) and its
// sparse feed-forward need, each through the backend's op where it has
// one, else on the host (the tensors downloaded, dst uploaded). The host
// functions are the references every backend's op matches: float32, in
// the order llama.cpp's gemma3n graph computes them.

// RowMixer is a backend's MixRows.
type RowMixer interface {
	MixRows(dst, base Tensor, srcs []Tensor, coefs Tensor, cols []int, bias float32)
}

// MixRows is dst[r] = Σₖ (coefs[r, cols[k]] + bias) · srcs[k][r] + base[r]
// for every row r, the terms summed in k's order and base added last (a
// ggml mul_mat over the streams, then an add). dst may be base or a src.
func MixRows(be Backend, dst, base Tensor, srcs []Tensor, coefs Tensor, cols []int, bias float32) {
	if m, ok := be.(RowMixer); ok {
		m.MixRows(dst, base, srcs, coefs, cols, bias)
		return
	}
	CheckMixRows(be.Name(), dst, base, srcs, coefs, cols)
	d, b, c := Values(be, dst), Values(be, base), Values(be, coefs)
	ss := make([][]float32, len(srcs))
	for k, s := range srcs {
		ss[k] = Values(be, s)
	}
	MixRowsHost(d, b, ss, c, coefs.Cols(), cols, bias, dst.Cols())
	be.Upload(dst, d)
}

// CheckMixRows panics, naming the backend, unless dst, base and every src
// have one shape, coefs has their rows, and cols name its columns, one a src.
func CheckMixRows(backend string, dst, base Tensor, srcs []Tensor, coefs Tensor, cols []int) {
	same := func(t Tensor) bool { return t.Rows() == dst.Rows() && t.Cols() == dst.Cols() }
	ok := same(base) && coefs.Rows() == dst.Rows() && len(cols) == len(srcs)
	for k, s := range srcs {
		ok = ok && same(s) && cols[k] >= 0 && cols[k] < coefs.Cols()
	}
	if !ok {
		panic(fmt.Sprintf("%s: MixRows: dst %d×%d, base %d×%d, %d srcs, coefs %d×%d, cols %v do not fit", backend,
			dst.Rows(), dst.Cols(), base.Rows(), base.Cols(), len(srcs), coefs.Rows(), coefs.Cols(), cols))
	}
}

// MixRowsHost is MixRows on host slices: rows of n values, coefs rows of
// width wide. The terms are summed in float32 by fused multiply-adds, as
// ggml's dot product of fewer float32 values than a SIMD step sums them
// (its loop compiled with contraction): Gemma 3n's streams feed each
// other layer after layer, and a synthetic model's logits move by 1e-5 of
// their range after one layer when these sums round otherwise.
func MixRowsHost(dst, base []float32, srcs [][]float32, coefs []float32, wide int, cols []int, bias float32, n int) {
	c := make([]float32, len(cols))
	for r := range len(dst) / n {
		for k, j := range cols {
			c[k] = coefs[r*wide+j] + bias
		}
		for e := r * n; e < (r+1)*n; e++ {
			var acc float32
			for k, s := range srcs {
				acc = float32(math.FMA(float64(s[e]), float64(c[k]), float64(acc)))
			}
			dst[e] = acc + base[e]
		}
	}
}

// NormMatcher is a backend's MatchNorm.
type NormMatcher interface {
	MatchNorm(dst, x, target Tensor)
}

// MatchNorm is dst[r] = x[r] · ‖target[r]‖ / ‖x[r]‖ (Euclidean norms),
// each element times the target's norm, then divided by x's. dst may be x.
func MatchNorm(be Backend, dst, x, target Tensor) {
	if m, ok := be.(NormMatcher); ok {
		m.MatchNorm(dst, x, target)
		return
	}
	CheckShape(be.Name(), "MatchNorm", "dst", dst, x.Rows(), x.Cols())
	CheckShape(be.Name(), "MatchNorm", "target", target, x.Rows(), x.Cols())
	d, t := Values(be, x), Values(be, target)
	MatchNormHost(d, d, t, x.Cols())
	be.Upload(dst, d)
}

// MatchNormHost is MatchNorm on host slices of rows of n values.
func MatchNormHost(dst, x, target []float32, n int) {
	for r := range len(x) / n {
		want, have := norm2(target[r*n:(r+1)*n]), norm2(x[r*n:(r+1)*n])
		for e := r * n; e < (r+1)*n; e++ {
			dst[e] = float32(x[e]*want) / have
		}
	}
}

// norm2 is √Σv² as ggml's sqr, sum_rows and sqrt make it: the squares
// in float32, their sum in float64 rounded to float32.
func norm2(v []float32) float32 {
	var s float64
	for _, x := range v {
		s += float64(x * x)
	}
	return float32(math.Sqrt(float64(float32(s))))
}

// RowMuler is a backend's MulRow.
type RowMuler interface {
	MulRow(dst, x Tensor, w []float32)
}

// MulRow is dst[r] = x[r] ⊙ w for every row r (w one value a column, on
// the host). dst may be x.
func MulRow(be Backend, dst, x Tensor, w []float32) {
	if m, ok := be.(RowMuler); ok {
		m.MulRow(dst, x, w)
		return
	}
	CheckMulRow(be.Name(), dst, x, w)
	d := Values(be, x)
	MulRowHost(d, d, w)
	be.Upload(dst, d)
}

// CheckMulRow panics, naming the backend, unless dst and x have one shape
// and w a value for each column.
func CheckMulRow(backend string, dst, x Tensor, w []float32) {
	if dst.Rows() != x.Rows() || dst.Cols() != x.Cols() || len(w) != x.Cols() {
		panic(fmt.Sprintf("%s: MulRow: dst %d×%d, x %d×%d, %d weights", backend, dst.Rows(), dst.Cols(), x.Rows(), x.Cols(), len(w)))
	}
}

// MulRowHost is MulRow on host slices.
func MulRowHost(dst, x, w []float32) {
	n := len(w)
	for i := range dst {
		dst[i] = x[i] * w[i%n]
	}
}

// Sparsifier is a backend's SparsifyRows.
type Sparsifier interface {
	SparsifyRows(x Tensor, stdMul float32)
}

// SparsifyRows keeps, in place, what each row's values exceed its mean
// plus stdMul standard deviations by (the sample deviation, over n-1),
// and zero elsewhere: Gemma 3n's activation sparsity, a Gaussian top-k.
func SparsifyRows(be Backend, x Tensor, stdMul float32) {
	if s, ok := be.(Sparsifier); ok {
		s.SparsifyRows(x, stdMul)
		return
	}
	v := Values(be, x)
	SparsifyRowsHost(v, x.Cols(), stdMul)
	be.Upload(x, v)
}

// SparsifyRowsHost is SparsifyRows on host rows of n values (n > 1).
func SparsifyRowsHost(x []float32, n int, stdMul float32) {
	for r := range len(x) / n {
		row := x[r*n : (r+1)*n]
		var sum float64
		for _, v := range row {
			sum += float64(v)
		}
		mean := float32(sum) / float32(n)
		var sq float64
		for _, v := range row {
			d := v - mean
			sq += float64(d * d)
		}
		std := float32(math.Sqrt(float64(float32(sq) * (1 / float32(n-1)))))
		cut := mean + float32(std*stdMul) // rounded before the add, as ggml's two ops
		for i, v := range row {
			row[i] = max(v-cut, 0)
		}
	}
}
