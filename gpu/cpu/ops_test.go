package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"folio/gpu"
	"folio/models/gguf"
)

// Tolerances of the elementwise ops against float64: a few float32
// roundings per element.
const (
	rmsNormTol = 1e-6
	addTol     = 1e-7
	siluTol    = 1e-6
	softmaxTol = 1e-6
	// Rope's angles are float32 products as ggml computes them: theta is
	// multiplied by the per-pair ratio once per pair, so at position p the
	// angle is off by up to about p·pairs·2⁻²⁴ radians.
	ropeTol = 2e-3
)

var rowShapes = [][2]int{{1, 1}, {1, 7}, {3, 64}, {5, 33}, {130, 17}, {2, 4096}}

func TestRMSNorm(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, l := range supportedLevels() {
		b := newTestBackend(t)
		b.k = kernelsAt(l)
		type tc struct{ rows, cols, group int }
		cases := []tc{{1, 1, 1}, {1, 7, 7}, {3, 64, 64}, {5, 33, 33}, {130, 17, 17}, {2, 4096, 4096},
			{4, 96, 32}, {3, 60, 12}} // per head, as qwen3's Q/K norms
		for _, c := range cases {
			for _, inPlace := range []bool{false, true} {
				t.Run(fmt.Sprintf("%dx%d/%d/inplace=%v", c.rows, c.cols, c.group, inPlace), func(t *testing.T) {
					xf := randFloats(r, c.rows*c.cols, 3)
					wf := randFloats(r, c.group, 1)
					x := newAct(t, b, c.rows, c.cols, xf)
					w := f32Weight(t, b, 1, c.group, wf)
					dst := x
					if !inPlace {
						dst = newAct(t, b, c.rows, c.cols, nil)
					}
					const eps = 1e-5
					b.RMSNorm(dst, x, w, eps)
					want := make([]float64, len(xf))
					for g := 0; g < len(xf); g += c.group {
						var ss float64
						for j := range c.group {
							ss += float64(xf[g+j]) * float64(xf[g+j])
						}
						s := 1 / math.Sqrt(ss/float64(c.group)+eps)
						for j := range c.group {
							want[g+j] = float64(xf[g+j]) * s * float64(wf[j])
						}
					}
					checkErr(t, fmt.Sprint(l, " RMSNorm"), download(b, dst), want, rmsNormTol)
				})
			}
		}
		// A norm weight in another type than F32 is decoded too.
		x := newAct(t, b, 2, 32, randFloats(r, 64, 1))
		data, wf := quantWeight(t, r, gguf.TypeF16, 1, 32)
		w := newWeight(t, b, gguf.TypeF16, 1, 32, data)
		xf := download(b, x)
		b.RMSNorm(x, x, w, 1e-6)
		want := make([]float64, 64)
		for g := 0; g < 64; g += 32 {
			var ss float64
			for j := range 32 {
				ss += float64(xf[g+j]) * float64(xf[g+j])
			}
			for j := range 32 {
				want[g+j] = float64(xf[g+j]) / math.Sqrt(ss/32+1e-6) * float64(wf[j])
			}
		}
		checkErr(t, "RMSNorm F16 weight", download(b, x), want, rmsNormTol)
	}
}

func TestAdd(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, l := range supportedLevels() {
		b := newTestBackend(t)
		b.k = kernelsAt(l)
		for _, s := range rowShapes {
			for _, bias := range []bool{false, true} {
				rows, cols := s[0], s[1]
				af := randFloats(r, rows*cols, 1)
				brows := rows
				if bias {
					brows = 1
				}
				bf := randFloats(r, brows*cols, 1)
				a := newAct(t, b, rows, cols, af)
				var bt gpu.Tensor
				if bias {
					bt = f32Weight(t, b, 1, cols, bf)
				} else {
					bt = newAct(t, b, rows, cols, bf)
				}
				want := make([]float64, rows*cols)
				for i := range want {
					want[i] = float64(af[i]) + float64(bf[i%(brows*cols)])
				}
				b.Add(a, a, bt) // in place
				checkErr(t, fmt.Sprintf("%v Add %dx%d bias=%v", l, rows, cols, bias), download(b, a), want, addTol)
			}
		}
	}
}

func TestSiLUMul(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	for _, l := range supportedLevels() {
		b := newTestBackend(t)
		b.k = kernelsAt(l)
		for si, s := range append(rowShapes, [2]int{1, 6}) {
			rows, cols := s[0], s[1]
			gf, uf := randFloats(r, rows*cols, 4), randFloats(r, rows*cols, 1)
			if si == len(rowShapes) { // e^-x beyond float32 both ways
				gf = []float32{-200, 200, -90, 90, 0, -1e-30}
			}
			g, u := newAct(t, b, rows, cols, gf), newAct(t, b, rows, cols, uf)
			want := make([]float64, rows*cols)
			for i := range want {
				x := float64(gf[i])
				want[i] = x / (1 + math.Exp(-x)) * float64(uf[i])
			}
			b.SiLUMul(g, g, u)
			checkErr(t, fmt.Sprintf("%v SiLUMul %dx%d", l, rows, cols), download(b, g), want, siluTol)
		}
	}
}

func TestSoftmax(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	for _, l := range supportedLevels() {
		b := newTestBackend(t)
		b.k = kernelsAt(l)
		for _, s := range rowShapes {
			rows, cols := s[0], s[1]
			xf := randFloats(r, rows*cols, 10)
			x := newAct(t, b, rows, cols, xf)
			want := make([]float64, rows*cols)
			for i := 0; i < len(xf); i += cols {
				m := math.Inf(-1)
				for _, v := range xf[i : i+cols] {
					m = max(m, float64(v))
				}
				var sum float64
				for j, v := range xf[i : i+cols] {
					want[i+j] = math.Exp(float64(v) - m)
					sum += want[i+j]
				}
				for j := range cols {
					want[i+j] /= sum
				}
			}
			b.Softmax(x)
			checkErr(t, fmt.Sprintf("%v Softmax %dx%d", l, rows, cols), download(b, x), want, softmaxTol)
		}
	}
}

// ropeRef rotates x (rows of heads) in float64: pair i of a head turns by
// pos · Scale · Base^(-2i/Dims) / Factors[i].
func ropeRef(x []float32, cols int, pos []int32, r *gpu.Rope) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	half := r.Dims / 2
	for row, p := range pos {
		for h := 0; h < cols; h += r.HeadDim {
			head := out[row*cols+h : row*cols+h+r.HeadDim]
			for i := range half {
				f := 1.0
				if r.Factors != nil {
					f = float64(r.Factors[i])
				}
				a := float64(p) * float64(r.Scale) * math.Pow(float64(r.Base), -2*float64(i)/float64(r.Dims)) / f
				j0, j1 := 2*i, 2*i+1
				if r.Neox {
					j0, j1 = i, i+half
				}
				x0, x1 := head[j0], head[j1]
				head[j0] = x0*math.Cos(a) - x1*math.Sin(a)
				head[j1] = x0*math.Sin(a) + x1*math.Cos(a)
			}
		}
	}
	return out
}

func TestRope(t *testing.T) {
	b := newTestBackend(t)
	r := rand.New(rand.NewPCG(19, 20))
	factors := func(n int) []float32 {
		f := make([]float32, n)
		for i := range f {
			f[i] = 1 + float32(i%5)
		}
		return f
	}
	cases := []struct {
		name  string
		rows  int
		heads int
		rope  gpu.Rope
	}{
		{"llama", 1, 4, gpu.Rope{HeadDim: 16, Dims: 16, Base: 10000, Scale: 1}},
		{"neox", 5, 3, gpu.Rope{HeadDim: 16, Dims: 16, Base: 1e6, Scale: 1, Neox: true}},
		{"partial", 3, 2, gpu.Rope{HeadDim: 12, Dims: 8, Base: 10000, Scale: 1}},
		{"partial-neox", 3, 2, gpu.Rope{HeadDim: 12, Dims: 6, Base: 10000, Scale: 1, Neox: true}},
		{"linear", 4, 2, gpu.Rope{HeadDim: 64, Dims: 64, Base: 10000, Scale: 0.25}},
		{"factors", 7, 3, gpu.Rope{HeadDim: 32, Dims: 32, Base: 500000, Scale: 1, Factors: factors(16)}},
		{"factors-neox", 2, 1, gpu.Rope{HeadDim: 128, Dims: 128, Base: 500000, Scale: 1, Neox: true, Factors: factors(64)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cols := c.heads * c.rope.HeadDim
			xf := randFloats(r, c.rows*cols, 1)
			pos := make([]int32, c.rows)
			for i := range pos {
				pos[i] = int32(r.IntN(300))
			}
			pos[0] = 0
			x := newAct(t, b, c.rows, cols, xf)
			b.Rope(x, pos, &c.rope)
			got := download(b, x)
			checkErr(t, "Rope", got, ropeRef(xf, cols, pos, &c.rope), ropeTol)
			// Position 0 and the elements past Dims are left exactly as they were.
			for h := 0; h < cols; h += c.rope.HeadDim {
				for j := range c.rope.HeadDim {
					if (j >= c.rope.Dims) && got[h+j] != xf[h+j] {
						t.Fatalf("element %d of head %d moved", j, h/c.rope.HeadDim)
					}
				}
			}
			for j := range cols {
				if got[j] != xf[j] {
					t.Fatalf("position 0 moved element %d: %v → %v", j, xf[j], got[j])
				}
			}
		})
	}
}

func TestRopeLargePositions(t *testing.T) {
	// Far positions still agree with float64 to within ggml's own float32
	// error (theta is about p·2⁻²⁴ off per pair).
	b := newTestBackend(t)
	r := rand.New(rand.NewPCG(21, 22))
	rope := gpu.Rope{HeadDim: 64, Dims: 64, Base: 10000, Scale: 1}
	xf := randFloats(r, 64, 1)
	x := newAct(t, b, 1, 64, xf)
	pos := []int32{4000}
	b.Rope(x, pos, &rope)
	checkErr(t, "Rope at 4000", download(b, x), ropeRef(xf, 64, pos, &rope), 0.02)
}

// Rope keeps the angles of the last positions; a change to the positions
// (even in place) or to the Rope's parameters or factors must not reuse them.
func TestRopeAnglesKept(t *testing.T) {
	b := newTestBackend(t)
	r := rand.New(rand.NewPCG(23, 24))
	rope := gpu.Rope{HeadDim: 16, Dims: 16, Base: 10000, Scale: 1, Factors: []float32{1, 2, 3, 4, 5, 6, 7, 8}}
	pos := []int32{3, 7, 11}
	check := func(what string) {
		t.Helper()
		xf := randFloats(r, 3*32, 1)
		x := newAct(t, b, 3, 32, xf)
		b.Rope(x, pos, &rope)
		checkErr(t, what, download(b, x), ropeRef(xf, 32, pos, &rope), ropeTol)
	}
	check("first call")
	check("same positions")
	pos[1] = 200
	check("a position changed in place")
	rope.Factors[0] = 9
	check("a factor changed in place")
	rope.Factors = nil
	check("factors dropped")
	rope.Neox = true
	check("neox")
	rope.Base = 500
	check("base")
	check("base, again")
}

// Rope rotates to the same bits at every SIMD level (the C kernel rounds
// each product as the Go one does), partial heads and odd lengths too.
func TestRopeLevels(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	for _, rope := range []gpu.Rope{
		{HeadDim: 64, Dims: 64, Base: 10000, Scale: 1},
		{HeadDim: 40, Dims: 24, Base: 10000, Scale: 1},
		{HeadDim: 18, Dims: 18, Base: 500000, Scale: 1},
		{HeadDim: 64, Dims: 64, Base: 1e6, Scale: 1, Neox: true},
		{HeadDim: 128, Dims: 128, Base: 1e6, Scale: 1, Neox: true},
		{HeadDim: 40, Dims: 24, Base: 10000, Scale: 1, Neox: true},
		{HeadDim: 18, Dims: 18, Base: 500000, Scale: 1, Neox: true},
		{HeadDim: 80, Dims: 70, Base: 10000, Scale: 1, Neox: true},
	} {
		const rows, heads = 5, 3
		cols := heads * rope.HeadDim
		xf := randFloats(r, rows*cols, 2)
		pos := []int32{0, 7, 300, 4095, 70000}
		var first []float32
		for _, l := range supportedLevels() {
			b := newTestBackend(t)
			b.k = kernelsAt(l)
			x := newAct(t, b, rows, cols, xf)
			b.Rope(x, pos, &rope)
			got := download(b, x)
			if first == nil {
				first = got
				continue
			}
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(first[i]) {
					t.Fatalf("%+v at %v: element %d = %v, scalar %v", rope, l, i, got[i], first[i])
				}
			}
		}
	}
}
