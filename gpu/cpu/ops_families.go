package cpu

import (
	"fmt"
	"math"
	"sync"

	"folio/gpu"
	"folio/models/gguf"
)

// The ops below came with the families beyond llama (Gemma, Phi, Granite,
// BERT): elementwise and per-row, Go kernels split over the pool.

// Scale: dst = x · s. dst may be x.
func (b *Backend) Scale(dst, x gpu.Tensor, s float32) {
	cd, cx := b.tensor(dst), b.tensor(x)
	checkShape("Scale", "dst", cd, cx.rows, cx.cols)
	b.elementwise(func(lo, hi int) {
		d, v := b.act(dst)[lo:hi], b.f32(x)[lo:hi]
		for i := range d {
			d[i] = v[i] * s
		}
	}, cx.rows*cx.cols, 1)
}

// Softcap: x = c · tanh(x / c), in place, in float32 as ggml's scale,
// tanh, scale do it.
func (b *Backend) Softcap(x gpu.Tensor, c float32) {
	if !(c > 0) {
		panic(fmt.Sprintf("cpu: Softcap: cap %v (want > 0)", c))
	}
	cx := b.tensor(x)
	b.elementwise(func(lo, hi int) {
		softcapGo(b.act(x)[lo:hi], c)
	}, cx.rows*cx.cols, 16)
}

// softcapGo soft-caps x in place: c·tanh(x/c), each step rounded to
// float32 (ggml_scale, ggml_tanh, ggml_scale).
func softcapGo(x []float32, c float32) {
	inv := 1 / c
	for i, v := range x {
		x[i] = float32(math.Tanh(float64(v*inv))) * c
	}
}

// GELUMul: dst = gelu(gate) · up (up nil: gelu(gate)). gelu is ggml's CPU
// gelu: the tanh approximation looked up in a table of halves — gate
// rounded to F16, gelu of that rounded to F16 — for |gate| < 10; 0 below
// -10 and gate itself above 10. dst may be gate.
func (b *Backend) GELUMul(dst, gate, up gpu.Tensor) {
	cd, cg := b.tensor(dst), b.tensor(gate)
	checkShape("GELUMul", "dst", cd, cg.rows, cg.cols)
	var u []float32
	if up != nil {
		checkShape("GELUMul", "up", b.tensor(up), cg.rows, cg.cols)
		u = b.f32(up)
	}
	tab := geluTable()
	b.elementwise(func(lo, hi int) {
		var ui []float32
		if u != nil {
			ui = u[lo:hi]
		}
		b.k.geluMul(tab, b.f32(gate)[lo:hi], ui, b.act(dst)[lo:hi])
	}, cg.rows*cg.cols, 8)
}

// geluMulGo is the Go kernel of GELUMul: dst = gelu(gate) · up (up nil:
// gelu(gate)), gelu 0 at or below -10, the gate itself at or above 10,
// else tab[the half nearest the gate].
func geluMulGo(tab, gate, up, dst []float32) {
	for i, x := range gate {
		y := x
		switch {
		case x <= -10:
			y = 0
		case x < 10:
			y = tab[gguf.F32ToF16(x)]
		}
		if up != nil {
			y *= up[i]
		}
		dst[i] = y
	}
}

var (
	geluOnce sync.Once
	geluTab  []float32
)

// geluTable maps every half h to the float32 of the half nearest
// gelu(h), as ggml_table_gelu_f16 does.
func geluTable() []float32 {
	geluOnce.Do(func() {
		initF16Table()
		geluTab = make([]float32, 1<<16)
		for h := range geluTab {
			x := f16Table[h]
			g := float32(0.5) * x * (1 + float32(math.Tanh(float64(float32(0.7978845608028654)*x*(1+float32(0.044715)*x*x)))))
			geluTab[h] = f16Table[gguf.F32ToF16(g)]
		}
	})
	return geluTab
}

// LayerNorm: each row of x becomes (x - mean) / sqrtf(var + eps) · w + b,
// as ggml_norm then ggml_mul and ggml_add compute it: the row summed in
// float64 and rounded, the mean a float32 quotient, the squares of the
// centred row summed in float64.
// w and b may be nil. dst may be x.
func (b *Backend) LayerNorm(dst, x, w, bias gpu.Tensor, eps float32) {
	cd, cx := b.tensor(dst), b.tensor(x)
	checkShape("LayerNorm", "dst", cd, cx.rows, cx.cols)
	var wv, bv []float32
	if w != nil {
		checkShape("LayerNorm", "w", b.tensor(w), 1, cx.cols)
		wv = b.tensor(w).rowView(0, &b.lnW)
	}
	if bias != nil {
		checkShape("LayerNorm", "b", b.tensor(bias), 1, cx.cols)
		bv = b.tensor(bias).rowView(0, &b.lnB)
	}
	c := cx.cols
	b.elementwise(func(lo, hi int) {
		layerNormGo(b.f32(x)[lo*c:hi*c], b.act(dst)[lo*c:hi*c], wv, bv, c, eps)
	}, cx.rows, 4*c)
}

// layerNormGo is LayerNorm's kernel over the rows of c elements of xs.
func layerNormGo(xs, dst, w, bias []float32, c int, eps float32) {
	for r := range len(xs) / c {
		x, y := xs[r*c:(r+1)*c], dst[r*c:(r+1)*c]
		var sum float64
		for _, v := range x {
			sum += float64(v)
		}
		mean := float32(sum) / float32(c)
		var sq float64
		for i, v := range x {
			d := v - mean
			y[i] = d
			sq += float64(d * d)
		}
		scale := 1 / sqrt32(float32(sq/float64(c))+eps)
		for i := range y {
			v := y[i] * scale
			if w != nil {
				v *= w[i]
			}
			if bias != nil {
				v += bias[i]
			}
			y[i] = v
		}
	}
}

// elementwise runs f over [0, n) split between the pool's threads, each
// unit costing cost.
func (b *Backend) elementwise(f func(lo, hi int), n, cost int) {
	t := &b.elem
	t.f = f
	b.pool.run(t, n, cost)
	t.f = nil
}

type funcTask struct{ f func(lo, hi int) }

func (t *funcTask) run(_ *worker, lo, hi int) { t.f(lo, hi) }

// SwiGLUOAI: dst = g / (1 + e^(-alpha·g)) · (u + 1) with g = min(gate,
// limit) and u = clamp(up, -limit, limit), in float32 as ggml's
// swiglu_oai (expf). dst may be gate.
func (b *Backend) SwiGLUOAI(dst, gate, up gpu.Tensor, alpha, limit float32) {
	cd, cg := b.tensor(dst), b.tensor(gate)
	checkShape("SwiGLUOAI", "dst", cd, cg.rows, cg.cols)
	checkShape("SwiGLUOAI", "up", b.tensor(up), cg.rows, cg.cols)
	b.elementwise(func(lo, hi int) {
		swigluOAIGo(b.f32(gate)[lo:hi], b.f32(up)[lo:hi], b.act(dst)[lo:hi], alpha, limit)
	}, cg.rows*cg.cols, 16)
}

// swigluOAIGo is SwiGLUOAI's kernel. A NaN stays NaN, as through
// std::min and std::clamp.
func swigluOAIGo(gate, up, y []float32, alpha, limit float32) {
	for i, g := range gate {
		if g > limit {
			g = limit
		}
		u := up[i]
		switch {
		case u < -limit:
			u = -limit
		case u > limit:
			u = limit
		}
		y[i] = g / (1 + exp32(alpha*-g)) * (u + 1)
	}
}

var _ gpu.Rearranger = (*Backend)(nil)

// Rearrange copies r's runs from src to dst (deepseek2's latent attention
// splits and joins heads with it), the rows split over the pool.
func (b *Backend) Rearrange(dst, src gpu.Tensor, r gpu.Rearrangement) {
	r.Check("cpu", dst, src)
	d, s := b.act(dst), b.f32(src)
	b.elementwise(func(lo, hi int) {
		part := r
		part.Rows, part.Dst.Off, part.Src.Off = hi-lo, r.Dst.At(lo, 0), r.Src.At(lo, 0)
		part.Apply(d, s)
	}, r.Rows, max(1, r.Heads*r.Len/4))
}

var _ gpu.SigmoidMuler = (*Backend)(nil)

// SigmoidMul: dst = x · σ(gate), elementwise (gpu.SigmoidMulHost's
// arithmetic).
func (b *Backend) SigmoidMul(dst, x, gate gpu.Tensor) {
	gpu.CheckSigmoidMul("cpu", dst, x, gate)
	n := x.Rows() * x.Cols()
	b.elementwise(func(lo, hi int) {
		gpu.SigmoidMulHost(b.act(dst)[lo:hi], b.f32(x)[lo:hi], b.f32(gate)[lo:hi])
	}, n, 16)
}
