package cuda

import (
	"fmt"
	"math"

	"folio/gpu"
	"folio/models/gguf"
)

// MatMul: dst[i,o] = x[i,:] · w[o,:], the weight dequantized in the kernel.
func (b *Backend) MatMul(dst, x, w gpu.Tensor) {
	cd, cx, cw := b.act(dst), b.f32(x), b.tensor(w)
	n, k, m := cx.rows, cx.cols, cw.rows
	if cw.cols != k {
		panic(fmt.Sprintf("cuda: MatMul: x %v and w %v differ in k", cx, cw))
	}
	checkShape("MatMul", "dst", cd, n, m)
	if _, ok := nativeTypes[cw.typ]; !ok {
		panic(fmt.Sprintf("cuda: MatMul: weight %v has no kernel", cw))
	}
	b.enter()
	defer b.leave()
	if b.blas != nil && !b.blasOff && n >= blasMinRows && b.matmulBLAS(cd, cx, cw) {
		return
	}
	kern, d, tiled := matmulDims(cw.typ, n, m)
	b.a.reset().ptr(cw.ptr).i64(cw.rowBytes).ptr(cx.ptr).ptr(cd.ptr)
	if tiled {
		b.a.i32(n).i32(k).i32(m)
	} else {
		b.a.i32(k).i32(m)
	}
	b.launch(kern, d)
}

// Embed: dst[i,:] = table[ids[i],:], dequantized.
func (b *Backend) Embed(dst, table gpu.Tensor, ids []int32) {
	b.getRows("Embed", dst, table, ids, &b.ids)
}

// Gather: dst[i,:] = x[rows[i],:].
func (b *Backend) Gather(dst, x gpu.Tensor, rows []int32) {
	b.getRows("Gather", dst, x, rows, &b.rows)
}

func (b *Backend) getRows(op string, dst, table gpu.Tensor, ids []int32, buf *devInts) {
	cd, ct := b.act(dst), b.tensor(table)
	checkShape(op, "dst", cd, len(ids), ct.cols)
	for i, id := range ids {
		if id < 0 || int(id) >= ct.rows {
			panic(fmt.Sprintf("cuda: %s: row %d (index %d) outside %v", op, id, i, ct))
		}
	}
	if len(ids) == 0 {
		return
	}
	b.enter()
	defer b.leave()
	p := b.put(buf, ids, "row ids")
	b.a.reset().ptr(ct.ptr).i64(ct.rowBytes).ptr(p).ptr(cd.ptr).i32(ct.cols)
	k := getRowsKernel(ct.typ)
	b.launch(k, getRowsDims(k, len(ids), ct.cols))
}

// RMSNorm: each run of w.Cols elements of x becomes x / sqrt(mean(x²) +
// eps) · w. dst may be x.
func (b *Backend) RMSNorm(dst, x, w gpu.Tensor, eps float32) {
	cd, cx, cw := b.act(dst), b.f32(x), b.f32(w)
	g := cw.cols
	if cw.rows != 1 || cx.cols%g != 0 {
		panic(fmt.Sprintf("cuda: RMSNorm: weight %v does not divide the rows of %v", cw, cx))
	}
	checkShape("RMSNorm", "dst", cd, cx.rows, cx.cols)
	b.enter()
	defer b.leave()
	b.a.reset().ptr(cx.ptr).ptr(cw.ptr).ptr(cd.ptr).i32(g).f32(eps)
	b.launch(kRMSNorm, rowDims(kRMSNorm, int64(cx.rows)*int64(cx.cols/g), g))
}

// Add: dst = a + b, b broadcast over rows when it has one. dst may be a.
func (b *Backend) Add(dst, a, bias gpu.Tensor) {
	cd, ca, cb := b.act(dst), b.f32(a), b.f32(bias)
	if cb.cols != ca.cols || cb.rows != 1 && cb.rows != ca.rows {
		panic(fmt.Sprintf("cuda: Add: %v cannot be added to %v", cb, ca))
	}
	checkShape("Add", "dst", cd, ca.rows, ca.cols)
	b.enter()
	defer b.leave()
	n := int64(ca.rows) * int64(ca.cols)
	b.a.reset().ptr(ca.ptr).ptr(cb.ptr).ptr(cd.ptr).i64(n).i32(ca.cols).i32(cb.rows)
	b.launch(kAdd, elementwiseDims(kAdd, n))
}

// SiLUMul: dst = silu(gate) · up. dst may be gate.
func (b *Backend) SiLUMul(dst, gate, up gpu.Tensor) {
	cd, cg, cu := b.act(dst), b.f32(gate), b.f32(up)
	checkShape("SiLUMul", "up", cu, cg.rows, cg.cols)
	checkShape("SiLUMul", "dst", cd, cg.rows, cg.cols)
	b.enter()
	defer b.leave()
	n := int64(cg.rows) * int64(cg.cols)
	b.a.reset().ptr(cg.ptr).ptr(cu.ptr).ptr(cd.ptr).i64(n)
	b.launch(kSiLUMul, elementwiseDims(kSiLUMul, n))
}

// Softmax: each row of x becomes its softmax, in place.
func (b *Backend) Softmax(x gpu.Tensor) {
	cx := b.act(x)
	b.enter()
	defer b.leave()
	b.a.reset().ptr(cx.ptr).i32(cx.cols)
	b.launch(kSoftmax, rowDims(kSoftmax, int64(cx.rows), cx.cols))
}

// Rope rotates each head of row i of x by the angles of position pos[i],
// in place, as gpu/cpu does (see the rope kernel), cos and sin multiplied
// by r's MScale.
func (b *Backend) Rope(x gpu.Tensor, pos []int32, r *gpu.Rope) {
	cx := b.act(x)
	r.Check("cuda", cx, pos)
	b.enter()
	defer b.leave()
	var factors uint64
	if r.Factors != nil {
		b.host = b.host[:0]
		for _, f := range r.Factors {
			b.host = append(b.host, int32(math.Float32bits(f)))
		}
		factors = b.put(&b.factors, b.host, "rope factors")
	}
	thetaScale := float32(math.Pow(float64(r.Base), float64(-2/float32(r.Dims))))
	neox := 0
	if r.Neox {
		neox = 1
	}
	pp := b.put(&b.pos, pos, "positions") // before the list: put may launch (graph.go)
	b.a.reset().ptr(cx.ptr).ptr(pp).ptr(factors).
		i32(cx.rows).i32(cx.cols).i32(r.HeadDim).i32(r.Dims).i32(neox).f32(r.Scale).f32(thetaScale).f32(r.Magnitude())
	b.launch(kRope, elementwiseDims(kRope, int64(cx.rows)*int64(cx.cols/r.HeadDim)*int64(r.Dims/2)))
}

// kvTypeKernel picks the F16 or F32 variant of a K/V kernel.
func kvTypeKernel(t gguf.TensorType, f16, f32 kernel) kernel {
	if t == gguf.TypeF16 {
		return f16
	}
	return f32
}

// matmulBLAS is MatMul through cuBLAS: the weight dequantized to F32 in
// scratch (exact: SGEMM reads it as it is), then SGEMM. Without the memory
// for the scratch it turns cuBLAS off, says why, and returns false: the
// kernels need none.
func (b *Backend) matmulBLAS(cd, cx, cw *Tensor) bool {
	b.graphBreak() // cuBLAS launches kernels of its own
	n, k, m := cx.rows, cx.cols, cw.rows
	wp := cw.ptr
	if cw.typ != gguf.TypeF32 {
		var err error
		if wp, err = b.tryGrow(&b.wbuf, 4*int64(m)*int64(k), "a weight dequantized for cuBLAS"); err != nil {
			b.blas.Destroy()
			b.blas, b.blasNote = nil, "off: "+err.Error()
			return false
		}
		b.a.reset().ptr(cw.ptr).i64(cw.rowBytes).ptr(wp).i32(m).i32(k)
		dk := dequantKernel(cw.typ)
		b.launch(dk, elementwiseDims(dk, int64(m)*ceilDiv64(int64(k), 8)))
	}
	b.sgemmRowMajor(cd.ptr, cx.ptr, wp, n, k, m)
	return true
}
