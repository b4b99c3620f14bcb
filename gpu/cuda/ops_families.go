package cuda

import (
	"fmt"

	"folio/gpu"
)

// The ops that came with the families beyond llama (Gemma, Phi, Granite,
// BERT), rounded as gpu/cpu's Go kernels round them (kernels/ops.cu).

// Scale: dst = x · s. dst may be x.
func (b *Backend) Scale(dst, x gpu.Tensor, s float32) {
	cd, cx := b.act(dst), b.f32(x)
	checkShape("Scale", "dst", cd, cx.rows, cx.cols)
	b.enter()
	defer b.leave()
	n := int64(cx.rows) * int64(cx.cols)
	b.a.reset().ptr(cx.ptr).ptr(cd.ptr).i64(n).f32(s)
	b.launch(kScale, elementwiseDims(kScale, n))
}

// Softcap: x = c · tanh(x / c), in place. c > 0.
func (b *Backend) Softcap(x gpu.Tensor, c float32) {
	if !(c > 0) {
		panic(fmt.Sprintf("cuda: Softcap: cap %v (want > 0)", c))
	}
	cx := b.act(x)
	b.enter()
	defer b.leave()
	n := int64(cx.rows) * int64(cx.cols)
	b.a.reset().ptr(cx.ptr).i64(n).f32(c).f32(1 / c)
	b.launch(kSoftcap, elementwiseDims(kSoftcap, n))
}

// GELUMul: dst = gelu(gate) · up (up nil: gelu(gate)), gelu as ggml's CPU
// looks it up in halves (see gelu_f16). dst may be gate.
func (b *Backend) GELUMul(dst, gate, up gpu.Tensor) {
	cd, cg := b.act(dst), b.f32(gate)
	checkShape("GELUMul", "dst", cd, cg.rows, cg.cols)
	var pu uint64
	if up != nil {
		cu := b.f32(up)
		checkShape("GELUMul", "up", cu, cg.rows, cg.cols)
		pu = cu.ptr
	}
	b.enter()
	defer b.leave()
	n := int64(cg.rows) * int64(cg.cols)
	b.a.reset().ptr(cg.ptr).ptr(pu).ptr(cd.ptr).i64(n)
	b.launch(kGELUMul, elementwiseDims(kGELUMul, n))
}

// LayerNorm: each row of x becomes (x - mean) / sqrt(var + eps) · w + b,
// w and b [1, x.Cols] and either may be nil. dst may be x.
func (b *Backend) LayerNorm(dst, x, w, bias gpu.Tensor, eps float32) {
	cd, cx := b.act(dst), b.f32(x)
	checkShape("LayerNorm", "dst", cd, cx.rows, cx.cols)
	var pw, pb uint64
	if w != nil {
		cw := b.f32(w)
		checkShape("LayerNorm", "w", cw, 1, cx.cols)
		pw = cw.ptr
	}
	if bias != nil {
		cb := b.f32(bias)
		checkShape("LayerNorm", "b", cb, 1, cx.cols)
		pb = cb.ptr
	}
	b.enter()
	defer b.leave()
	b.a.reset().ptr(cx.ptr).ptr(pw).ptr(pb).ptr(cd.ptr).i32(cx.cols).f32(eps)
	b.launch(kLayerNorm, rowDims(kLayerNorm, int64(cx.rows), cx.cols))
}

var _ gpu.SigmoidMuler = (*Backend)(nil)

// SigmoidMul: dst = x · σ(gate), elementwise (sigmoid_mul). dst may be x.
func (b *Backend) SigmoidMul(dst, x, gate gpu.Tensor) {
	gpu.CheckSigmoidMul("cuda", dst, x, gate)
	cd, cx, cg := b.act(dst), b.f32(x), b.f32(gate)
	b.enter()
	defer b.leave()
	n := int64(cx.rows) * int64(cx.cols)
	b.a.reset().ptr(cx.ptr).ptr(cg.ptr).ptr(cd.ptr).i64(n)
	b.launch(kSigmoidMul, elementwiseDims(kSigmoidMul, n))
}

// SwiGLUOAI: dst = g / (1 + e^(-alpha·g)) · (u + 1), g = min(gate,
// limit), u = clamp(up, -limit, limit). dst may be gate.
func (b *Backend) SwiGLUOAI(dst, gate, up gpu.Tensor, alpha, limit float32) {
	cd, cg, cu := b.act(dst), b.f32(gate), b.f32(up)
	checkShape("SwiGLUOAI", "up", cu, cg.rows, cg.cols)
	checkShape("SwiGLUOAI", "dst", cd, cg.rows, cg.cols)
	b.enter()
	defer b.leave()
	n := int64(cg.rows) * int64(cg.cols)
	b.a.reset().ptr(cg.ptr).ptr(cu.ptr).ptr(cd.ptr).i64(n).f32(alpha).f32(limit)
	b.launch(kSwiGLUOAI, elementwiseDims(kSwiGLUOAI, n))
}
