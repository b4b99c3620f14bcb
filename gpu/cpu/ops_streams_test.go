package cpu

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"folio/gpu"
)

// TestStreamOps checks Gemma 3n's row ops on the CPU against their
// definitions in float64 (within float32 rounding), and bit for bit
// against the host path a backend without them takes (the same tensors
// through a wrapper that hides the ops), over enough rows that the pool
// splits them.
func TestStreamOps(t *testing.T) {
	b := newTestBackend(t)
	plain := struct{ gpu.Backend }{b} // no RowMixer and the rest: gpu's host path
	r := rand.New(rand.NewPCG(3, 5))
	const rows, n = 37, 99 // a tail past the kernels' vectors
	vals := func() []float32 { return randFloats(r, rows*n, 1) }
	s := [][]float32{vals(), vals(), vals()}
	base, coefs := vals(), randFloats(r, rows*6, 0.5)
	cols := []int{4, 0, 5}
	w := randFloats(r, n, 1)

	// each op run on both backends, the results compared bit for bit
	both := func(name string, op func(be gpu.Backend) []float32) []float32 {
		got, want := op(b), op(plain)
		if !slices.Equal(got, want) {
			t.Fatalf("%s: the CPU op differs from the host path", name)
		}
		return got
	}
	act := func(v []float32) gpu.Tensor { return newAct(t, b, rows, len(v)/rows, v) }
	mixed := both("MixRows", func(be gpu.Backend) []float32 {
		dst := act(make([]float32, rows*n))
		gpu.MixRows(be, dst, act(base), []gpu.Tensor{act(s[0]), act(s[1]), act(s[2])}, act(coefs), cols, 1)
		return download(b, dst)
	})
	// one source in place with a bias (Gemma 3n's correction): a product,
	// then a sum, each rounded
	both("MixRows of one source", func(be gpu.Backend) []float32 {
		dst := act(base)
		gpu.MixRows(be, dst, dst, []gpu.Tensor{act(s[1])}, act(coefs), []int{2}, 1)
		return download(b, dst)
	})
	matched := both("MatchNorm", func(be gpu.Backend) []float32 {
		x := act(s[0])
		gpu.MatchNorm(be, x, x, act(s[1]))
		return download(b, x)
	})
	mul := both("MulRow", func(be gpu.Backend) []float32 {
		dst := act(make([]float32, rows*n))
		gpu.MulRow(be, dst, act(s[2]), w)
		return download(b, dst)
	})
	sparse := both("SparsifyRows", func(be gpu.Backend) []float32 {
		x := act(s[1])
		gpu.SparsifyRows(be, x, 1.6448533535003662)
		return download(b, x)
	})

	near := func(what string, got float32, want float64) {
		if d := math.Abs(float64(got) - want); d > 1e-5*(1+math.Abs(want)) {
			t.Fatalf("%s: %v, want %v", what, got, want)
		}
	}
	kept := 0
	for i := range rows {
		var nx, ny float64
		mean, sq := 0.0, 0.0
		for e := range n {
			nx += float64(s[0][i*n+e]) * float64(s[0][i*n+e])
			ny += float64(s[1][i*n+e]) * float64(s[1][i*n+e])
			mean += float64(s[1][i*n+e]) / n
		}
		for e := range n {
			sq += (float64(s[1][i*n+e]) - mean) * (float64(s[1][i*n+e]) - mean)
		}
		cut := mean + 1.6448533535003662*math.Sqrt(sq/(n-1))
		for e := range n {
			j := i*n + e
			want := float64(base[j])
			for k, c := range cols {
				want += (float64(coefs[i*6+c]) + 1) * float64(s[k][j])
			}
			near("MixRows", mixed[j], want)
			near("MatchNorm", matched[j], float64(s[0][j])*math.Sqrt(ny/nx))
			near("MulRow", mul[j], float64(s[2][j])*float64(w[e]))
			near("SparsifyRows", sparse[j], max(float64(s[1][j])-cut, 0))
			if sparse[j] > 0 {
				kept++
			}
		}
	}
	// a Gaussian's top 5% over 37 rows of 96: some kept, most not
	if kept == 0 || kept > rows*n/5 {
		t.Fatalf("SparsifyRows kept %d of %d values", kept, rows*n)
	}
}
