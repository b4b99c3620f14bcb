package cuda

import (
	"math"

	"folio/gpu"
)

// Gemma 3n's row ops (gpu/streams.go) as kernels of their own
// (kernels/ops.cu).

var (
	_ gpu.RowMixer    = (*Backend)(nil)
	_ gpu.NormMatcher = (*Backend)(nil)
	_ gpu.RowMuler    = (*Backend)(nil)
	_ gpu.Sparsifier  = (*Backend)(nil)
)

// MixRows: dst[r] = Σₖ (coefs[r, cols[k]] + bias) · srcs[k][r] + base[r]
// (mix_rows: up to four sources; more through the host). dst may be base
// or a source.
func (b *Backend) MixRows(dst, base gpu.Tensor, srcs []gpu.Tensor, coefs gpu.Tensor, cols []int, bias float32) {
	gpu.CheckMixRows("cuda", dst, base, srcs, coefs, cols)
	if len(srcs) > 4 {
		gpu.MixRows(struct{ gpu.Backend }{b}, dst, base, srcs, coefs, cols, bias)
		return
	}
	cd, cb, cc := b.act(dst), b.f32(base), b.f32(coefs)
	ps, cs := [4]uint64{cb.ptr, cb.ptr, cb.ptr, cb.ptr}, [4]int{}
	for k, s := range srcs {
		ps[k], cs[k] = b.f32(s).ptr, cols[k]
	}
	b.enter()
	defer b.leave()
	n := int64(cd.rows) * int64(cd.cols)
	b.a.reset().ptr(ps[0]).ptr(ps[1]).ptr(ps[2]).ptr(ps[3]).ptr(cb.ptr).ptr(cc.ptr).ptr(cd.ptr).i64(n).
		i32(cd.cols).i32(cc.cols).i32(len(srcs)).i32(cs[0]).i32(cs[1]).i32(cs[2]).i32(cs[3]).f32(bias)
	b.launch(kMixRows, elementwiseDims(kMixRows, n))
}

// MatchNorm: dst[r] = x[r] · ‖target[r]‖ / ‖x[r]‖ (match_norm). dst may
// be x.
func (b *Backend) MatchNorm(dst, x, target gpu.Tensor) {
	cd, cx, ct := b.act(dst), b.f32(x), b.f32(target)
	checkShape("MatchNorm", "dst", cd, cx.rows, cx.cols)
	checkShape("MatchNorm", "target", ct, cx.rows, cx.cols)
	b.enter()
	defer b.leave()
	b.a.reset().ptr(cx.ptr).ptr(ct.ptr).ptr(cd.ptr).i32(cx.cols)
	b.launch(kMatchNorm, rowDims(kMatchNorm, int64(cx.rows), cx.cols))
}

// MulRow: dst[r] = x[r] ⊙ w (mul_row), w uploaded when it differs from
// the last call's. dst may be x.
func (b *Backend) MulRow(dst, x gpu.Tensor, w []float32) {
	gpu.CheckMulRow("cuda", dst, x, w)
	cd, cx := b.act(dst), b.f32(x)
	b.enter()
	defer b.leave()
	b.host = b.host[:0]
	for _, v := range w {
		b.host = append(b.host, int32(math.Float32bits(v)))
	}
	wp := b.put(&b.scales, b.host, "row weights") // before the list: put may launch (graph.go)
	n := int64(cx.rows) * int64(cx.cols)
	b.a.reset().ptr(cx.ptr).ptr(wp).ptr(cd.ptr).i64(n).i32(cx.cols)
	b.launch(kMulRow, elementwiseDims(kMulRow, n))
}

// SparsifyRows: each row less its mean and stdMul sample deviations, at
// least 0, in place (sparsify_rows).
func (b *Backend) SparsifyRows(x gpu.Tensor, stdMul float32) {
	cx := b.act(x)
	b.enter()
	defer b.leave()
	b.a.reset().ptr(cx.ptr).i32(cx.cols).f32(stdMul)
	b.launch(kSparsifyRows, rowDims(kSparsifyRows, int64(cx.rows), cx.cols))
}
