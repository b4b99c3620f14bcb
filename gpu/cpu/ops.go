package cpu

import (
	"fmt"
	"math"
	"slices"

	"folio/gpu"
)

// The elementwise ops round as ggml's CPU kernels do, step by step in
// float32 (with a float64 sum where ggml sums in ggml_float), so that a
// forward pass can be compared with llama.cpp's to the last bits.

// simdCost is the pool cost of a unit of an elementwise op that costs
// goCost in the Go kernel: the C kernels stream 8-16 elements a
// nanosecond, so that a decode step's few rows are not worth handing to
// another thread (its hand-off, and the rows' trip to its cache, cost
// more than the op).
func simdCost(goCost int) int { return max(1, goCost/8) }

// RMSNorm: each run of w.Cols elements of x becomes x / sqrt(mean(x²) + eps)
// · w. dst may be x.
func (b *Backend) RMSNorm(dst, x, w gpu.Tensor, eps float32) {
	cd, cx, cw := b.tensor(dst), b.tensor(x), b.tensor(w)
	g := cw.cols
	if cw.rows != 1 || cx.cols%g != 0 {
		panic(fmt.Sprintf("cpu: RMSNorm: weight %v does not divide the rows of %v", cw, cx))
	}
	checkShape("RMSNorm", "dst", cd, cx.rows, cx.cols)
	t := &b.rmsnorm
	*t = rmsNormTask{dst: b.act(dst), x: b.f32(x), w: cw, g: g, eps: eps, kern: b.k}
	b.pool.run(t, cx.rows*cx.cols/g, b.k.elemCost(2*g))
	*t = rmsNormTask{}
}

type rmsNormTask struct {
	dst, x []float32
	w      *Tensor
	g      int // elements per run
	eps    float32
	kern   *kernels
}

// run normalizes runs lo … hi-1 as ggml_compute_forward_rms_norm_f32 and
// the ggml_mul after it do: the squares in float32 summed in float64, the
// mean rounded to float32, scale = 1/sqrtf(mean+eps), then (x·scale)·w.
func (t *rmsNormTask) run(wk *worker, lo, hi int) {
	g := t.g
	w := t.w.rowView(0, &wk.row)
	t.kern.rmsNorm(t.x[lo*g:hi*g], w, t.dst[lo*g:hi*g], g, t.eps)
}

// rmsNormGo is the Go kernel of RMSNorm over the runs of g elements of x.
func rmsNormGo(xs, w, dst []float32, g int, eps float32) {
	for r := range len(xs) / g {
		x, y := xs[r*g:(r+1)*g], dst[r*g:(r+1)*g]
		var sum float64
		for _, v := range x {
			sum += float64(v * v)
		}
		mean := float32(sum / float64(g))
		scale := 1 / sqrt32(mean+eps)
		for i, v := range x {
			y[i] = (v * scale) * w[i]
		}
	}
}

// Add: dst = a + b, with b broadcast over rows when b.Rows == 1. dst may
// be a.
func (b *Backend) Add(dst, a, bias gpu.Tensor) {
	cd, ca, cb := b.tensor(dst), b.tensor(a), b.tensor(bias)
	if cb.cols != ca.cols || cb.rows != 1 && cb.rows != ca.rows {
		panic(fmt.Sprintf("cpu: Add: %v cannot be added to %v", cb, ca))
	}
	checkShape("Add", "dst", cd, ca.rows, ca.cols)
	t := &b.add
	*t = addTask{dst: b.act(dst), a: b.f32(a), b: cb, c: ca.cols, kern: b.k}
	b.pool.run(t, ca.rows, b.k.elemCost(ca.cols))
	*t = addTask{}
}

type addTask struct {
	dst, a []float32
	b      *Tensor
	c      int
	kern   *kernels
}

func (t *addTask) run(wk *worker, lo, hi int) {
	c := t.c
	if t.b.f32 != nil {
		bstride, b := 0, t.b.f32
		if t.b.rows > 1 {
			bstride, b = c, b[lo*c:]
		}
		t.kern.add(t.a[lo*c:hi*c], b, t.dst[lo*c:hi*c], c, bstride)
		return
	}
	for r := lo; r < hi; r++ {
		br := 0
		if t.b.rows > 1 {
			br = r
		}
		bv := t.b.rowView(br, &wk.row)
		a, y := t.a[r*c:(r+1)*c], t.dst[r*c:(r+1)*c]
		for i := range y {
			y[i] = a[i] + bv[i]
		}
	}
}

// addGo is the Go kernel of Add over the rows of c elements of a, with
// b's rows bstride apart (0: one row broadcast).
func addGo(a, b, dst []float32, c, bstride int) {
	for r := range len(a) / c {
		bv, x, y := b[r*bstride:r*bstride+c], a[r*c:(r+1)*c], dst[r*c:(r+1)*c]
		for i := range y {
			y[i] = x[i] + bv[i]
		}
	}
}

// SiLUMul: dst = silu(gate) · up with silu(x) = x / (1 + e^-x), in float32.
// dst may be gate.
func (b *Backend) SiLUMul(dst, gate, up gpu.Tensor) {
	cd, cg, cu := b.tensor(dst), b.tensor(gate), b.tensor(up)
	checkShape("SiLUMul", "up", cu, cg.rows, cg.cols)
	checkShape("SiLUMul", "dst", cd, cg.rows, cg.cols)
	t := &b.silumul
	*t = siluMulTask{dst: b.act(dst), gate: b.f32(gate), up: b.f32(up), kern: b.k}
	b.pool.run(t, len(t.dst), b.k.elemCost(16))
	*t = siluMulTask{}
}

type siluMulTask struct {
	dst, gate, up []float32
	kern          *kernels
}

func (t *siluMulTask) run(_ *worker, lo, hi int) {
	gate, up, y := t.gate[lo:hi], t.up[lo:hi], t.dst[lo:hi]
	t.kern.siluMul(gate, up, y)
}

// siluMulGo is the Go kernel of SiLUMul.
func siluMulGo(gate, up, y []float32) {
	for i, g := range gate {
		y[i] = g / (1 + exp32(-g)) * up[i]
	}
}

// Softmax: each row of x becomes softmax(x row), in place.
func (b *Backend) Softmax(x gpu.Tensor) {
	cx := b.tensor(x)
	t := &b.softmax
	*t = softmaxTask{x: b.act(x), c: cx.cols, kern: b.k}
	b.pool.run(t, cx.rows, 8*cx.cols)
	*t = softmaxTask{}
}

type softmaxTask struct {
	x    []float32
	c    int
	kern *kernels
}

func (t *softmaxTask) run(_ *worker, lo, hi int) {
	t.kern.softmax(t.x[lo*t.c:hi*t.c], t.c)
}

// softmaxGo is the Go kernel of Softmax over the rows of c elements of x.
func softmaxGo(x []float32, c int) {
	for r := range len(x) / c {
		softmax(x[r*c : (r+1)*c])
	}
}

// softmax replaces x by softmax(x) as ggml_vec_soft_max_f32 and its
// caller do: e^(x - max) in float32, summed in float64, then scaled by the
// float32 of 1/sum. It is softmaxSink without a sink (e^-∞ adds 0).
func softmax(x []float32) { softmaxSink(x, float32(math.Inf(-1))) }

// softmaxSink is softmax with a sink: a logit that joins the max and the
// sum but has no probability of its own, so that x sums to less than 1
// (llama.cpp's soft_max with sinks: the sink's e^(sink - max) added to
// the float64 sum after the row's).
func softmaxSink(x []float32, sink float32) {
	m := sink
	for _, v := range x {
		m = max(m, v)
	}
	var sum float64
	for i, v := range x {
		e := exp32(v - m)
		x[i] = e
		sum += float64(e)
	}
	sum += float64(exp32(sink - m))
	inv := float32(1 / sum)
	for i := range x {
		x[i] *= inv
	}
}

// Rope rotates, in place, each head of row i of x by the angles of
// position pos[i].
func (b *Backend) Rope(x gpu.Tensor, pos []int32, r *gpu.Rope) {
	cx := b.tensor(x)
	r.Check("cpu", cx, pos)
	if !b.ropeAngles.holds(pos, r) {
		b.ropeAngles.compute(b, pos, r)
	}
	t := &b.rope
	*t = ropeTask{x: b.act(x), c: cx.cols, r: r, cs: b.ropeAngles.cs, kern: b.k}
	b.pool.run(t, cx.rows, b.k.ropeCost(2*cx.cols))
	*t = ropeTask{}
}

// ropeAngles keeps the cos and sin of every pair's angle at the positions
// of the last Rope: a forward pass rotates Q and K of every layer at the
// same positions, so the angles are computed once per batch, not once per
// call. The key is a copy of the positions and of the Rope.
type ropeAngles struct {
	pos     []int32
	rope    ropeKey
	factors []float32 // a copy of the Rope's
	scaled  bool      // the Rope has factors
	cs      []float32 // row i: cos, sin of each pair at pos[i] (Dims floats)
	task    ropeAnglesTask
}

// holds reports whether the kept angles are those of pos and r.
func (a *ropeAngles) holds(pos []int32, r *gpu.Rope) bool {
	return a.cs != nil && keyOf(r) == a.rope && slices.Equal(pos, a.pos) && slices.Equal(r.Factors, a.factors) &&
		(r.Factors != nil) == a.scaled
}

// ropeKey is a gpu.Rope without its factors: comparable.
type ropeKey struct {
	headDim, dims       int
	base, scale, mscale float32
	neox                bool
}

func keyOf(r *gpu.Rope) ropeKey {
	return ropeKey{r.HeadDim, r.Dims, r.Base, r.Scale, r.Magnitude(), r.Neox}
}

// compute fills the angles of pos and r over the pool.
func (a *ropeAngles) compute(b *Backend, pos []int32, r *gpu.Rope) {
	a.pos = append(a.pos[:0], pos...)
	a.rope = keyOf(r)
	a.factors = append(a.factors[:0], r.Factors...)
	a.scaled = r.Factors != nil
	a.cs = grow(&a.cs, len(pos)*r.Dims)
	t := &a.task
	*t = ropeAnglesTask{cs: a.cs, pos: a.pos, r: r}
	b.pool.run(t, len(pos), 16*r.Dims)
	*t = ropeAnglesTask{}
}

type ropeAnglesTask struct {
	cs  []float32
	pos []int32
	r   *gpu.Rope
}

// run computes the angles of rows lo … hi-1 (gpu.Rope.Angles).
func (t *ropeAnglesTask) run(_ *worker, lo, hi int) {
	d := t.r.Dims
	t.r.Angles(t.cs[lo*d:hi*d], t.pos[lo:hi])
}

type ropeTask struct {
	x    []float32
	c    int
	r    *gpu.Rope
	cs   []float32 // the rows' angles (ropeAngles)
	kern *kernels
}

// run rotates rows lo … hi-1 by their angles.
func (t *ropeTask) run(_ *worker, lo, hi int) {
	r := t.r
	t.kern.rope(r.Neox, t.cs[lo*r.Dims:hi*r.Dims], t.x[lo*t.c:hi*t.c], t.c, r.HeadDim, r.Dims)
}

// ropeGo is the Go kernel of Rope: it rotates the rows of xs (c elements
// each) by their angles in css, as ropeX does.
func ropeGo(neox bool, css, xs []float32, c, hd, dims int) {
	half := dims / 2
	for row := range len(xs) / c {
		cs := css[row*dims : (row+1)*dims]
		x := xs[row*c : (row+1)*c]
		for h := 0; h < c; h += hd {
			head := x[h : h+hd]
			// Pair i is (2i, 2i+1), or (i, i+half) for NeoX.
			stride, step := 1, 2
			if neox {
				stride, step = half, 1
			}
			for i := range half {
				j := i * step
				c, s := cs[2*i], cs[2*i+1]
				x0, x1 := head[j], head[j+stride]
				head[j] = float32(x0*c) - float32(x1*s)
				head[j+stride] = float32(x0*s) + float32(x1*c)
			}
		}
	}
}

// exp32 is expf: e^x rounded to float32.
func exp32(x float32) float32 { return float32(math.Exp(float64(x))) }

// sqrt32 is sqrtf: the float64 square root rounded to float32 is the
// correctly rounded float32 square root.
func sqrt32(x float32) float32 { return float32(math.Sqrt(float64(x))) }
