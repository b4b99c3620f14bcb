package vulkan

import (
	"fmt"
	"math"
	"slices"
	"unsafe"

	"folio/gpu"
)

// Each op checks its shapes as gpu.Backend says, then records one
// dispatch; the shaders' comments give their contracts.

// Add: dst = a + b, b broadcast over rows when it has one. dst may be a.
func (b *Backend) Add(dst, a, bias gpu.Tensor) {
	vd, va, vb := b.act(dst), b.f32(a), b.f32(bias)
	if vb.cols != va.cols || vb.rows != 1 && vb.rows != va.rows {
		panic(fmt.Sprintf("vulkan: Add: %v cannot be added to %v", vb, va))
	}
	checkShape("Add", "dst", vd, va.rows, va.cols)
	n := int64(va.rows) * int64(va.cols)
	b.dispatch(kAdd, b.grid(ceilDiv(n, elementwiseGroup), 1), []uint32{uint32(n), uint32(va.cols), uint32(vb.rows)},
		va.buf, vb.buf, vd.buf)
}

// SiLUMul: dst = silu(gate) · up. dst may be gate.
func (b *Backend) SiLUMul(dst, gate, up gpu.Tensor) {
	vd, vg, vu := b.act(dst), b.f32(gate), b.f32(up)
	checkShape("SiLUMul", "up", vu, vg.rows, vg.cols)
	checkShape("SiLUMul", "dst", vd, vg.rows, vg.cols)
	n := int64(vg.rows) * int64(vg.cols)
	b.dispatch(kSiLUMul, b.grid(ceilDiv(n, elementwiseGroup), 1), []uint32{uint32(n)}, vg.buf, vu.buf, vd.buf)
}

// RMSNorm: each run of w.Cols elements of x becomes x / sqrt(mean(x²) +
// eps) · w. dst may be x.
func (b *Backend) RMSNorm(dst, x, w gpu.Tensor, eps float32) {
	vd, vx, vw := b.act(dst), b.f32(x), b.f32(w)
	g := vw.cols
	if vw.rows != 1 || vx.cols%g != 0 {
		panic(fmt.Sprintf("vulkan: RMSNorm: weight %v does not divide the rows of %v", vw, vx))
	}
	checkShape("RMSNorm", "dst", vd, vx.rows, vx.cols)
	runs := int64(vx.rows) * int64(vx.cols/g)
	b.dispatch(kRMSNorm, b.grid(runs, 1), []uint32{uint32(g), math.Float32bits(eps), uint32(runs)}, vx.buf, vw.buf, vd.buf)
}

// Softmax: each row of x becomes its softmax, in place.
func (b *Backend) Softmax(x gpu.Tensor) {
	vx := b.act(x)
	b.dispatch(kSoftmax, b.grid(int64(vx.rows), 1), []uint32{uint32(vx.cols), uint32(vx.rows)}, vx.buf)
}

// MatMul: dst[i,o] = x[i,:] · w[o,:], the weight dequantized in the
// kernel. A workgroup computes one output column o for up to matmulRows
// rows of x, so each block of w is read once for them all.
func (b *Backend) MatMul(dst, x, w gpu.Tensor) {
	vd, vx, vw := b.act(dst), b.f32(x), b.tensor(w)
	n, k, m := vx.rows, vx.cols, vw.rows
	if vw.cols != k {
		panic(fmt.Sprintf("vulkan: MatMul: x %v and w %v differ in k", vx, vw))
	}
	checkShape("MatMul", "dst", vd, n, m)
	kern, ok := matmulTypes[vw.typ]
	if !ok {
		panic(fmt.Sprintf("vulkan: MatMul: weight %v has no kernel", vw))
	}
	b.dispatch(kern, b.grid(int64(m), ceilDiv(n, matmulRows)), []uint32{uint32(n), uint32(k), uint32(m), uint32(vw.rowBytes)},
		vw.buf, vx.buf, vd.buf)
}

func ceilDiv[T int | int64](a, b T) T { return (a + b - 1) / b }

// Rope rotates each head of row i of x by the angles of position pos[i],
// in place. The angles are gpu.Rope.Angles, computed here and uploaded:
// once for the Q and K of every layer of a pass, whose positions and
// rope are the same.
func (b *Backend) Rope(x gpu.Tensor, pos []int32, r *gpu.Rope) {
	vx := b.act(x)
	r.Check("vulkan", vx, pos)
	if !b.ropeAt.holds(pos, r) {
		b.ropeAt.set(pos, r)
		cs := make([]float32, len(pos)*r.Dims)
		r.Angles(cs, pos)
		b.putInts(&b.angles, unsafe.Slice((*int32)(unsafe.Pointer(&cs[0])), len(cs)), "rope angles")
	}
	n := int64(vx.rows) * int64(vx.cols/r.HeadDim) * int64(r.Dims/2)
	neox := uint32(0)
	if r.Neox {
		neox = 1
	}
	b.dispatch(kRope, b.grid(ceilDiv(n, elementwiseGroup), 1), []uint32{uint32(n), uint32(vx.cols), uint32(r.HeadDim), uint32(r.Dims), neox},
		vx.buf, b.angles.buf)
}

// ropeKey is the positions and rope whose angles b.angles holds.
type ropeKey struct {
	pos   []int32
	rope  gpu.Rope // Factors a copy
	valid bool
}

func (k *ropeKey) holds(pos []int32, r *gpu.Rope) bool {
	q := k.rope
	return k.valid && slices.Equal(pos, k.pos) && slices.Equal(r.Factors, q.Factors) && (r.Factors == nil) == (q.Factors == nil) &&
		r.HeadDim == q.HeadDim && r.Dims == q.Dims && r.Base == q.Base && r.Scale == q.Scale && r.Magnitude() == q.Magnitude()
}

func (k *ropeKey) set(pos []int32, r *gpu.Rope) {
	k.pos = append(k.pos[:0], pos...)
	k.rope = *r
	k.rope.Factors = slices.Clone(r.Factors)
	k.valid = true
}
