package cpu

import "folio/gpu"

// Gemma 3n's row ops (gpu/streams.go), the host references run in place
// on the tensors' rows, split over the pool.

var (
	_ gpu.RowMixer    = (*Backend)(nil)
	_ gpu.NormMatcher = (*Backend)(nil)
	_ gpu.RowMuler    = (*Backend)(nil)
	_ gpu.Sparsifier  = (*Backend)(nil)
)

// MixRows: dst[r] = Σₖ (coefs[r, cols[k]] + bias) · srcs[k][r] + base[r].
func (b *Backend) MixRows(dst, base gpu.Tensor, srcs []gpu.Tensor, coefs gpu.Tensor, cols []int, bias float32) {
	gpu.CheckMixRows("cpu", dst, base, srcs, coefs, cols)
	n, wide := dst.Cols(), coefs.Cols()
	d, bs, c := b.act(dst), b.f32(base), b.f32(coefs)
	ss := make([][]float32, len(srcs))
	for k, s := range srcs {
		ss[k] = b.f32(s)
	}
	b.elementwise(func(lo, hi int) {
		sub := make([][]float32, len(ss))
		for k, s := range ss {
			sub[k] = s[lo*n : hi*n]
		}
		b.k.mixRows(d[lo*n:hi*n], bs[lo*n:hi*n], sub, c[lo*wide:hi*wide], wide, cols, bias, n)
	}, dst.Rows(), n*len(srcs))
}

// MatchNorm: dst[r] = x[r] · ‖target[r]‖ / ‖x[r]‖.
func (b *Backend) MatchNorm(dst, x, target gpu.Tensor) {
	cd, cx, ct := b.tensor(dst), b.tensor(x), b.tensor(target)
	checkShape("MatchNorm", "dst", cd, cx.rows, cx.cols)
	checkShape("MatchNorm", "target", ct, cx.rows, cx.cols)
	n := cx.cols
	b.elementwise(func(lo, hi int) {
		gpu.MatchNormHost(b.act(dst)[lo*n:hi*n], b.f32(x)[lo*n:hi*n], b.f32(target)[lo*n:hi*n], n)
	}, cx.rows, 2*n)
}

// MulRow: dst[r] = x[r] ⊙ w.
func (b *Backend) MulRow(dst, x gpu.Tensor, w []float32) {
	gpu.CheckMulRow("cpu", dst, x, w)
	n := x.Cols()
	b.elementwise(func(lo, hi int) {
		gpu.MulRowHost(b.act(dst)[lo*n:hi*n], b.f32(x)[lo*n:hi*n], w)
	}, x.Rows(), n)
}

// SparsifyRows: each row less its mean and stdMul deviations, at least 0.
func (b *Backend) SparsifyRows(x gpu.Tensor, stdMul float32) {
	n := x.Cols()
	b.elementwise(func(lo, hi int) {
		gpu.SparsifyRowsHost(b.act(x)[lo*n:hi*n], n, stdMul)
	}, x.Rows(), 3*n)
}
