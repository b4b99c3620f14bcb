package gpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// ArgMax picks what the plain loop picks (the first of the largest, NaNs
// never; index 0 when x[0] is a NaN or nothing beats it), at every length
// and alignment, with ties, NaNs and infinities.
func TestArgMax(t *testing.T) {
	plain := func(x []float32) int {
		best := 0
		for i, l := range x {
			if l > x[best] {
				best = i
			}
		}
		return best
	}
	r := rand.New(rand.NewPCG(5, 6))
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for n := range 40 {
		for trial := range 200 {
			x := make([]float32, n)
			for i := range x {
				switch r.IntN(10) {
				case 0:
					x[i] = nan
				case 1:
					x[i] = -inf
				case 2:
					x[i] = inf * float32(trial%2)
				default:
					x[i] = float32(r.IntN(5)) // ties
				}
			}
			if got, want := ArgMax(x), plain(x); got != want {
				t.Fatalf("ArgMax(%v) = %d, want %d", x, got, want)
			}
		}
	}
	big := make([]float32, 49152)
	for i := range big {
		big[i] = float32(r.NormFloat64())
	}
	if got, want := ArgMax(big), plain(big); got != want {
		t.Fatalf("vocabulary-sized: %d, want %d", got, want)
	}
}

func BenchmarkArgMax(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	x := make([]float32, 49152)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	for b.Loop() {
		ArgMax(x)
	}
}
