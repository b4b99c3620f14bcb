package cpu

import "unsafe"

// matmulSIMD is MatMul through the SIMD kernels of kind: the activation
// rows are quantized once into the backend's scratch (a first pass over
// the threads), then each unit dots a group of simdWRows weight rows with
// a tile of activation rows in one cgo call. A weight row is read once per
// tile, and a tile is every row of the batch unless it is tall (prefill):
// batched decode reads each weight once per step for all sequences.
func (b *Backend) matmulSIMD(kind kernelKind, dst, xt *Tensor, w *Tensor) {
	b.mmParts = append(b.mmParts[:0], mmPart{w: w, dst: dst})
	b.matmulsSIMD(kind, xt)
}

// matmulsSIMD multiplies xt by the weights of b.mmParts (of one kind and
// width k) into their dsts as one op: the units of every part, a tile at
// a time, are split between the threads together.
func (b *Backend) matmulsSIMD(kind kernelKind, xt *Tensor) {
	n, k := xt.rows, xt.cols
	xq, stride := b.quantized(kind, xt)

	t := &b.matmulX
	*t = simdMatmulTask{kind: kind, kern: b.k, xq: xq, xstride: stride, n: n, k: k, nTile: n, parts: b.mmParts}
	if n > 2*xTile {
		t.nTile = xTile
	}
	for i := range t.parts {
		p := &t.parts[i]
		p.g0 = t.wGroups
		t.wGroups += (p.w.rows + simdWRows - 1) / simdWRows
	}
	rowBytes := t.parts[0].w.rowBytes // one kind and width: every part's
	units := (n + t.nTile - 1) / t.nTile * t.wGroups
	// A unit's cost is in the pool's units (minChunkCost is the least worth
	// a thread): a chunk reads at least minChunkBytes of weights per
	// activation row, a few microseconds of streaming from memory.
	cost := max(1, minChunkCost*simdWRows*rowBytes*t.nTile/minChunkBytes)
	if n > fineRows {
		b.pool.runFine(t, units, cost)
	} else {
		b.pool.run(t, units, cost)
	}
	*t = simdMatmulTask{}
	b.xqOf = xqKey{x: xt, kind: kind, ops: b.pool.ops}
	for _, p := range b.mmParts {
		if p.dst == xt { // x was overwritten
			b.xqOf = xqKey{}
		}
	}
	clear(b.mmParts)
}

// quantized returns the rows of xt quantized for kind's kernels, in xq,
// stride bytes a row: quantized now, or the last MatMul's when that was
// of xt and no op has run since.
func (b *Backend) quantized(kind kernelKind, xt *Tensor) (xq []byte, stride int) {
	n, k := xt.rows, xt.cols
	stride = xRowBytes(kind, k)
	if c := &b.xqOf; c.x == xt && c.kind == kind && c.ops == b.pool.ops {
		return b.xq[:n*stride], stride
	}
	xq = b.xqBuf(n * stride)
	q := &b.quant
	*q = quantTask{kind: kind, x: xt.f32, k: k, out: xq, stride: stride}
	// Priced as the elementwise ops are: a decode step's rows stay on
	// this thread. Split a row at a time over the pool, it was slower
	// than alone (bench/results/2026-12-02-comment-numbers.md).
	b.pool.run(q, n, b.k.elemCost(k))
	*q = quantTask{}
	return xq, stride
}

// xqKey names what the backend's xq holds: x quantized for kind, valid
// while no op has run since pool.ops was ops. Q, K and V (and gate and up)
// are MatMuls of one x in a row, quantized once.
type xqKey struct {
	x    *Tensor
	kind kernelKind
	ops  uint64
}

// fineRows is the most activation rows of a MatMul whose units go out in
// the pool's plain guided chunks; taller ones (prefill, and decode steps
// with a prompt's chunk) take runFine's smaller ones.
const fineRows = 32

// simdWRows is the weight rows of one unit of a SIMD MatMul: a multiple of
// packRows, so that a unit starts at a packed group.
const simdWRows = 16

// minChunkBytes is the least weight bytes (per activation row) worth
// handing to another thread: handing over costs about the time one thread
// streams 24 KiB. (At 64 KiB smollm's K and V projections ran on one
// thread; splitting them gained decode speed, bench/results/2026-12-01-cpu2.md.)
const minChunkBytes = 24 << 10

// xqBuf returns n bytes of 64-byte aligned scratch for quantized
// activations, kept for the next MatMul.
func (b *Backend) xqBuf(n int) []byte { return alignedBuf(&b.xq, n) }

// alignedBuf returns (*buf)[:n], reallocating *buf 64-byte aligned only
// when it is too small.
func alignedBuf(buf *[]byte, n int) []byte {
	if cap(*buf) < n {
		raw := make([]byte, n+63)
		off := int(-uintptr(unsafe.Pointer(&raw[0])) & 63)
		*buf = raw[off:off]
	}
	return (*buf)[:n]
}

// quantTask quantizes activation rows lo … hi-1 into kind's format.
type quantTask struct {
	kind   kernelKind
	x      []float32
	k      int
	out    []byte
	stride int
}

func (t *quantTask) run(_ *worker, lo, hi int) {
	quantizeX(t.kind, t.x[lo*t.k:], t.k, hi-lo, t.k, t.out[lo*t.stride:], t.stride)
}

// simdMatmulTask's units are (tile of nTile activation rows, group of
// simdWRows weight rows), weight groups innermost, over the groups of
// every part in turn; a run of units within one tile and part is one cgo
// call.
type simdMatmulTask struct {
	kind    kernelKind
	kern    *kernels
	xq      []byte // quantized activations, xstride bytes a row
	xstride int
	n, k    int
	nTile   int      // activation rows per tile
	parts   []mmPart // the weights and their dsts
	wGroups int      // units per tile: the parts' groups
}

// mmPart is one weight of a simdMatmulTask: dst = x · wᵀ, its groups
// the units g0 … of each tile.
type mmPart struct {
	w, dst *Tensor
	g0     int
}

func (t *simdMatmulTask) run(_ *worker, lo, hi int) {
	for lo < hi {
		tile, g := lo/t.wGroups, lo%t.wGroups
		j := len(t.parts) - 1
		for t.parts[j].g0 > g {
			j--
		}
		p := &t.parts[j]
		w, m := p.w, p.w.rows
		end := min(hi, tile*t.wGroups+p.g0+(m+simdWRows-1)/simdWRows)
		o0 := (g - p.g0) * simdWRows
		o1 := min((end-tile*t.wGroups-p.g0)*simdWRows, m)
		i0 := tile * t.nTile
		i1 := min(i0+t.nTile, t.n)
		if pw := w.packed; pw != nil {
			t.kern.matmulPacked(t.kind, pw.data[o0/packRows*pw.group:], pw.group, pw.blocks, o1-o0,
				t.xq[i0*t.xstride:], t.xstride, i1-i0, t.k, p.dst.f32[i0*m+o0:], m)
		} else {
			rb := w.rowBytes
			t.kern.matmul(t.kind, w.data[o0*rb:o1*rb], rb, o1-o0, t.xq[i0*t.xstride:], t.xstride, i1-i0, t.k,
				p.dst.f32[i0*m+o0:], m)
		}
		lo = end
	}
}
