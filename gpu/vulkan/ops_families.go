package vulkan

import (
	"fmt"
	"math"

	"folio/gpu"
	"folio/models/gguf"
)

// The ops beyond llama's (gemma, gpt-oss, encoders) and the row lookups.

// Embed: dst[i,:] = table[ids[i],:], dequantized.
func (b *Backend) Embed(dst, table gpu.Tensor, ids []int32) {
	b.getRows("Embed", dst, table, ids, &b.ids)
}

// Gather: dst[i,:] = x[rows[i],:].
func (b *Backend) Gather(dst, x gpu.Tensor, rows []int32) {
	b.getRows("Gather", dst, x, rows, &b.rows)
}

// getRowsTypes are the table types getrows.comp reads: every type a
// weight keeps on the device (matmulTypes). Its typ code is the GGUF id.
var getRowsTypes = map[gguf.TensorType]bool{gguf.TypeF32: true, gguf.TypeF16: true, gguf.TypeQ8_0: true, gguf.TypeQ4_0: true,
	gguf.TypeQ4_K: true, gguf.TypeQ5_K: true, gguf.TypeQ6_K: true, gguf.TypeMXFP4: true}

func (b *Backend) getRows(op string, dst, table gpu.Tensor, ids []int32, buf *intBuf) {
	vd, vt := b.act(dst), b.tensor(table)
	checkShape(op, "dst", vd, len(ids), vt.cols)
	if !getRowsTypes[vt.typ] {
		panic(fmt.Sprintf("vulkan: %s: table %v has no kernel", op, vt))
	}
	for i, id := range ids {
		if id < 0 || int(id) >= vt.rows {
			panic(fmt.Sprintf("vulkan: %s: row %d (index %d) outside %v", op, id, i, vt))
		}
	}
	if len(ids) == 0 {
		return
	}
	ib := b.putInts(buf, ids, op+" ids")
	n := int64(len(ids)) * int64(vt.cols)
	b.dispatch(kGetRows, b.grid(ceilDiv(n, elementwiseGroup), 1), []uint32{uint32(n), uint32(vt.cols), uint32(vt.rowBytes), uint32(vt.typ)},
		vt.buf, ib, vd.buf)
}

// Scale: dst = x · s. dst may be x.
func (b *Backend) Scale(dst, x gpu.Tensor, s float32) {
	vd, vx := b.act(dst), b.f32(x)
	checkShape("Scale", "dst", vd, vx.rows, vx.cols)
	n := int64(vx.rows) * int64(vx.cols)
	b.dispatch(kScale, b.grid(ceilDiv(n, elementwiseGroup), 1), []uint32{uint32(n), math.Float32bits(s)}, vx.buf, vd.buf)
}

// Softcap: x = c · tanh(x / c), in place.
func (b *Backend) Softcap(x gpu.Tensor, c float32) {
	if !(c > 0) {
		panic(fmt.Sprintf("vulkan: Softcap: cap %v (want > 0)", c))
	}
	vx := b.act(x)
	n := int64(vx.rows) * int64(vx.cols)
	b.dispatch(kSoftcap, b.grid(ceilDiv(n, elementwiseGroup), 1), []uint32{uint32(n), math.Float32bits(c), math.Float32bits(1 / c)}, vx.buf)
}

// GELUMul: dst = gelu(gate) · up, or gelu(gate) with up nil, gelu as
// gpu/cpu computes it (gelumul.comp). dst may be gate.
func (b *Backend) GELUMul(dst, gate, up gpu.Tensor) {
	vd, vg := b.act(dst), b.f32(gate)
	checkShape("GELUMul", "dst", vd, vg.rows, vg.cols)
	ub, hasUp := vg.buf, uint32(0)
	if up != nil {
		vu := b.f32(up)
		checkShape("GELUMul", "up", vu, vg.rows, vg.cols)
		ub, hasUp = vu.buf, 1
	}
	n := int64(vg.rows) * int64(vg.cols)
	b.dispatch(kGELUMul, b.grid(ceilDiv(n, elementwiseGroup), 1), []uint32{uint32(n), hasUp}, vg.buf, ub, vd.buf)
}

var _ gpu.SigmoidMuler = (*Backend)(nil)

// SigmoidMul: dst = x · σ(gate), elementwise (sigmoidmul.comp). dst may
// be x.
func (b *Backend) SigmoidMul(dst, x, gate gpu.Tensor) {
	gpu.CheckSigmoidMul("vulkan", dst, x, gate)
	vd, vx, vg := b.act(dst), b.f32(x), b.f32(gate)
	n := int64(vx.rows) * int64(vx.cols)
	b.dispatch(kSigmoidMul, b.grid(ceilDiv(n, elementwiseGroup), 1), []uint32{uint32(n)}, vx.buf, vg.buf, vd.buf)
}

// SwiGLUOAI is gpt-oss's clamped SwiGLU (swigluoai.comp). dst may be gate.
func (b *Backend) SwiGLUOAI(dst, gate, up gpu.Tensor, alpha, limit float32) {
	vd, vg, vu := b.act(dst), b.f32(gate), b.f32(up)
	checkShape("SwiGLUOAI", "dst", vd, vg.rows, vg.cols)
	checkShape("SwiGLUOAI", "up", vu, vg.rows, vg.cols)
	n := int64(vg.rows) * int64(vg.cols)
	b.dispatch(kSwiGLUOAI, b.grid(ceilDiv(n, elementwiseGroup), 1), []uint32{uint32(n), math.Float32bits(alpha), math.Float32bits(limit)},
		vg.buf, vu.buf, vd.buf)
}

// LayerNorm: each row of x becomes (x - mean) / sqrt(var + eps) · w + b,
// w and b [1, x.Cols] or nil. dst may be x.
func (b *Backend) LayerNorm(dst, x, w, bias gpu.Tensor, eps float32) {
	vd, vx := b.act(dst), b.f32(x)
	checkShape("LayerNorm", "dst", vd, vx.rows, vx.cols)
	wb, bb, hasW, hasB := vx.buf, vx.buf, uint32(0), uint32(0)
	if w != nil {
		vw := b.f32(w)
		checkShape("LayerNorm", "w", vw, 1, vx.cols)
		wb, hasW = vw.buf, 1
	}
	if bias != nil {
		vb := b.f32(bias)
		checkShape("LayerNorm", "b", vb, 1, vx.cols)
		bb, hasB = vb.buf, 1
	}
	b.dispatch(kLayerNorm, b.grid(int64(vx.rows), 1), []uint32{uint32(vx.cols), math.Float32bits(eps), uint32(vx.rows), hasW, hasB},
		vx.buf, wb, bb, vd.buf)
}

// intBuf is a device buffer of int32s that ops refill per call (row ids,
// positions), with what it was last given: a call with the same values
// does not upload them again. Refills are copies in queue order, so the
// dispatches queued before still read the old values.
type intBuf struct {
	buf  *buffer
	last []int32
}

// putInts makes ib hold vals and returns its buffer.
func (b *Backend) putInts(ib *intBuf, vals []int32, what string) *buffer {
	if ib.buf != nil && len(vals) == len(ib.last) && equalInts(vals, ib.last) {
		return ib.buf
	}
	if n := 4 * int64(len(vals)); ib.buf == nil || n > ib.buf.size {
		old := int64(0)
		if ib.buf != nil {
			old = ib.buf.size
			b.flush() // queued dispatches may read the old buffer
			b.freeBuffer(ib.buf)
			ib.buf = nil
		}
		buf, err := b.newBuffer(max(n, 2*old, 4096), false, what) // doubling: tables grow a little at a time
		if err != nil {
			panic(err)
		}
		ib.buf = buf
	}
	ib.last = append(ib.last[:0], vals...)
	b.write(ib.buf, 0, i32Bytes(ib.last))
	return ib.buf
}

func equalInts(a, b []int32) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
