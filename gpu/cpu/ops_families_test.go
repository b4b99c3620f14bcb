package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"folio/gpu"
	"folio/models/gguf"
)

// TestFamilyOps checks Scale, Softcap, GELUMul and LayerNorm against
// float64 references, in place and not, over rows that split between
// threads. GELU is looked up in halves as ggml does, so it is checked to
// a half's precision, and exactly at the table's ends.
func TestFamilyOps(t *testing.T) {
	b := newTestBackend(t)
	r := rand.New(rand.NewPCG(43, 44))
	const rows, cols = 37, 96
	x := randFloats(r, rows*cols, 3)
	x[5], x[6], x[7] = -12, 11, 10 // beyond ±10: 0 and x itself
	up := randFloats(r, rows*cols, 1)
	ref := func(f func(i int, v float64) float64) []float64 {
		out := make([]float64, len(x))
		for i, v := range x {
			out[i] = f(i, float64(v))
		}
		return out
	}

	dst := newAct(t, b, rows, cols, nil)
	b.Scale(dst, newAct(t, b, rows, cols, x), -0.75)
	checkErr(t, "Scale", download(b, dst), ref(func(_ int, v float64) float64 { return -0.75 * v }), 1e-7)

	xs := newAct(t, b, rows, cols, x)
	b.Softcap(xs, 2.5)
	checkErr(t, "Softcap", download(b, xs), ref(func(_ int, v float64) float64 { return 2.5 * math.Tanh(v/2.5) }), 1e-6)

	gelu := func(v float64) float64 {
		switch {
		case v <= -10:
			return 0
		case v >= 10:
			return v
		}
		return 0.5 * v * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(v+0.044715*v*v*v)))
	}
	g := newAct(t, b, rows, cols, x)
	b.GELUMul(g, g, newAct(t, b, rows, cols, up))
	got := download(b, g)
	checkErr(t, "GELUMul", got, ref(func(i int, v float64) float64 { return gelu(v) * float64(up[i]) }), 2e-3)
	b.GELUMul(dst, newAct(t, b, rows, cols, x), nil)
	plain := download(b, dst)
	checkErr(t, "GELUMul without up", plain, ref(func(_ int, v float64) float64 { return gelu(v) }), 2e-3)
	if plain[5] != 0 || plain[6] != 11 || plain[7] != 10 {
		t.Errorf("gelu(-12, 11, 10) = %v, want 0, 11, 10", plain[5:8])
	}
	// Inside ±10 the value is a half: ggml's table holds halves.
	for i, v := range plain {
		if math.Abs(float64(x[i])) < 10 && gguf.F16ToF32(gguf.F32ToF16(v)) != v {
			t.Fatalf("gelu(%v) = %v is not a half", x[i], v)
		}
	}

	w, bias := randFloats(r, cols, 1), randFloats(r, cols, 1)
	norm := func(withW, withB bool) []float64 {
		out := make([]float64, len(x))
		for row := range rows {
			xr := x[row*cols : (row+1)*cols]
			var mean, sq float64
			for _, v := range xr {
				mean += float64(v)
			}
			mean /= cols
			for _, v := range xr {
				sq += (float64(v) - mean) * (float64(v) - mean)
			}
			s := 1 / math.Sqrt(sq/cols+1e-5)
			for j, v := range xr {
				o := (float64(v) - mean) * s
				if withW {
					o *= float64(w[j])
				}
				if withB {
					o += float64(bias[j])
				}
				out[row*cols+j] = o
			}
		}
		return out
	}
	wt, bt := newAct(t, b, 1, cols, w), newAct(t, b, 1, cols, bias)
	ln := newAct(t, b, rows, cols, x)
	b.LayerNorm(ln, ln, wt, bt, 1e-5)
	checkErr(t, "LayerNorm", download(b, ln), norm(true, true), 1e-6)
	b.LayerNorm(dst, newAct(t, b, rows, cols, x), nil, nil, 1e-5)
	checkErr(t, "LayerNorm without weight and bias", download(b, dst), norm(false, false), 1e-6)
	b.LayerNorm(dst, newAct(t, b, rows, cols, x), wt, nil, 1e-5)
	checkErr(t, "LayerNorm without bias", download(b, dst), norm(true, false), 1e-6)
}

// TestRopeMScale: a magnitude scale multiplies cos and sin, so the
// rotated heads come out scaled by it (the rotation is linear), and the
// angles kept between calls are not reused across scales.
func TestRopeMScale(t *testing.T) {
	b := newTestBackend(t)
	r := rand.New(rand.NewPCG(45, 46))
	x := randFloats(r, 3*64, 1)
	pos := []int32{0, 5, 900}
	one := newAct(t, b, 3, 64, x)
	b.Rope(one, pos, &gpu.Rope{HeadDim: 32, Dims: 16, Base: 10000, Scale: 1, Neox: true})
	scaled := newAct(t, b, 3, 64, x)
	b.Rope(scaled, pos, &gpu.Rope{HeadDim: 32, Dims: 16, Base: 10000, Scale: 1, Neox: true, MScale: 1.25})
	want := make([]float64, len(x))
	for i, v := range download(b, one) {
		want[i] = 1.25 * float64(v)
		if i%32 >= 16 { // beyond the rotated dims: left alone
			want[i] = float64(x[i])
		}
	}
	checkErr(t, "Rope with MScale", download(b, scaled), want, 1e-6)
}

// TestSwiGLUOAI checks gpt-oss's clamped SwiGLU against a float64
// reference, in place and not: gates above the limit are cut to it (and
// below it are not), ups clamped on both sides, the +1 on up; a NaN gate
// stays NaN (ggml's std::min keeps its first argument).
func TestSwiGLUOAI(t *testing.T) {
	b := newTestBackend(t)
	r := rand.New(rand.NewPCG(49, 50))
	const rows, cols = 29, 64
	g, u := randFloats(r, rows*cols, 12), randFloats(r, rows*cols, 12)
	copy(g, []float32{7, 7.5, -20, 0, 3})
	copy(u, []float32{-9, 9, 0.5, 3, -1})
	ref := func(alpha, limit float64) []float64 {
		out := make([]float64, len(g))
		for i := range g {
			x, y := min(float64(g[i]), limit), max(-limit, min(float64(u[i]), limit))
			out[i] = x / (1 + math.Exp(-alpha*x)) * (y + 1)
		}
		return out
	}
	dst := newAct(t, b, rows, cols, nil)
	b.SwiGLUOAI(dst, newAct(t, b, rows, cols, g), newAct(t, b, rows, cols, u), 1.702, 7)
	got := download(b, dst)
	checkErr(t, "SwiGLUOAI", got, ref(1.702, 7), 1e-6)
	want := []float64{7 / (1 + math.Exp(-1.702*7)) * -6, 7 / (1 + math.Exp(-1.702*7)) * 8}
	for i, w := range want {
		if math.Abs(float64(got[i])-w) > 1e-5*math.Abs(w) {
			t.Errorf("SwiGLUOAI(%v, %v) = %v, want %v", g[i], u[i], got[i], w)
		}
	}
	gt := newAct(t, b, rows, cols, g)
	b.SwiGLUOAI(gt, gt, newAct(t, b, rows, cols, u), 1, 2.5)
	checkErr(t, "SwiGLUOAI in place, alpha 1, limit 2.5", download(b, gt), ref(1, 2.5), 1e-6)

	nan := newAct(t, b, 1, 2, []float32{float32(math.NaN()), 1})
	b.SwiGLUOAI(nan, nan, newAct(t, b, 1, 2, []float32{1, float32(math.NaN())}), 1.702, 7)
	if v := download(b, nan); !math.IsNaN(float64(v[0])) || !math.IsNaN(float64(v[1])) {
		t.Errorf("SwiGLUOAI of NaNs = %v, want NaN, NaN", v)
	}
}

// TestGELUMulKernel: the GELU kernel of every level gives the Go
// kernel's bits: over float32 patterns across ±10 (every 4099th), the
// edges (±10 and their neighbours, subnormals, ±0, ±Inf, NaN) and random
// gates with and without up, at lengths that leave a tail.
func TestGELUMulKernel(t *testing.T) {
	tab := geluTable()
	var gate []float32
	for b := uint32(0); b < 0x41200001; b += 4099 { // up to 10
		gate = append(gate, math.Float32frombits(b), -math.Float32frombits(b))
	}
	gate = append(gate, 10, -10, math.Nextafter32(10, 0), math.Nextafter32(-10, 0), math.Nextafter32(10, 11),
		math.Nextafter32(-10, -11), 0, float32(math.Copysign(0, -1)), 1e-40, -1e-40, 6.1e-5, 65504, 65520,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()))
	r := rand.New(rand.NewPCG(71, 72))
	for range 1003 {
		gate = append(gate, float32(r.NormFloat64()*6))
	}
	up := make([]float32, len(gate))
	for i := range up {
		up[i] = float32(r.NormFloat64())
	}
	for _, l := range supportedLevels() {
		k := kernelsAt(l)
		for _, n := range []int{len(gate), len(gate) - 3, 5} {
			for _, u := range [][]float32{nil, up[:n]} {
				want, got := make([]float32, n), make([]float32, n)
				geluMulGo(tab, gate[:n], u, want)
				k.geluMul(tab, gate[:n], u, got)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%v, n %d, up %v: gelu(%v) = %v, Go %v", l, n, u != nil, gate[i], got[i], want[i])
					}
				}
			}
		}
	}
}
