package vulkan

import (
	"math"
	"unsafe"

	"folio/gpu"
)

// Gemma 3n's row ops (gpu/streams.go) as kernels of their own.

var (
	_ gpu.RowMixer    = (*Backend)(nil)
	_ gpu.NormMatcher = (*Backend)(nil)
	_ gpu.RowMuler    = (*Backend)(nil)
	_ gpu.Sparsifier  = (*Backend)(nil)
)

// MixRows: dst[r] = Σₖ (coefs[r, cols[k]] + bias) · srcs[k][r] + base[r]
// (mixrows.comp: up to four sources; more in rounds of the host's). dst
// may be base or a source.
func (b *Backend) MixRows(dst, base gpu.Tensor, srcs []gpu.Tensor, coefs gpu.Tensor, cols []int, bias float32) {
	gpu.CheckMixRows("vulkan", dst, base, srcs, coefs, cols)
	if len(srcs) > 4 {
		gpu.MixRows(struct{ gpu.Backend }{b}, dst, base, srcs, coefs, cols, bias)
		return
	}
	vd, vb, vc := b.act(dst), b.f32(base), b.f32(coefs)
	bufs := []*buffer{vb.buf, vb.buf, vb.buf, vb.buf, vb.buf, vc.buf, vd.buf}
	push := []uint32{0, uint32(vd.cols), uint32(vc.cols), uint32(len(srcs)), 0, 0, 0, 0, math.Float32bits(bias)}
	for k, s := range srcs {
		bufs[k], push[4+k] = b.f32(s).buf, uint32(cols[k])
	}
	n := int64(vd.rows) * int64(vd.cols)
	push[0] = uint32(n)
	b.dispatch(kMixRows, b.grid(ceilDiv(n, elementwiseGroup), 1), push, bufs...)
}

// MatchNorm: dst[r] = x[r] · ‖target[r]‖ / ‖x[r]‖ (matchnorm.comp). dst
// may be x.
func (b *Backend) MatchNorm(dst, x, target gpu.Tensor) {
	vd, vx, vt := b.act(dst), b.f32(x), b.f32(target)
	checkShape("MatchNorm", "dst", vd, vx.rows, vx.cols)
	checkShape("MatchNorm", "target", vt, vx.rows, vx.cols)
	b.dispatch(kMatchNorm, b.grid(int64(vx.rows), 1), []uint32{uint32(vx.cols), uint32(vx.rows)}, vx.buf, vt.buf, vd.buf)
}

// MulRow: dst[r] = x[r] ⊙ w (mulrow.comp), w uploaded when it differs
// from the last call's. dst may be x.
func (b *Backend) MulRow(dst, x gpu.Tensor, w []float32) {
	gpu.CheckMulRow("vulkan", dst, x, w)
	vd, vx := b.act(dst), b.f32(x)
	wb := b.putInts(&b.scales, unsafe.Slice((*int32)(unsafe.Pointer(&w[0])), len(w)), "row weights")
	n := int64(vx.rows) * int64(vx.cols)
	b.dispatch(kMulRow, b.grid(ceilDiv(n, elementwiseGroup), 1), []uint32{uint32(n), uint32(vx.cols)}, vx.buf, wb, vd.buf)
}

// SparsifyRows: each row less its mean and stdMul sample deviations, at
// least 0, in place (sparsify.comp).
func (b *Backend) SparsifyRows(x gpu.Tensor, stdMul float32) {
	vx := b.act(x)
	b.dispatch(kSparsify, b.grid(int64(vx.rows), 1), []uint32{uint32(vx.cols), uint32(vx.rows), math.Float32bits(stdMul)}, vx.buf)
}
