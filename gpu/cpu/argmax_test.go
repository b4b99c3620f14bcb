package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"folio/gpu"
)

// ArgMax agrees with gpu.ArgMax at every level, for rows of every length
// up to a few vector widths past two lanes sets and a vocabulary, with
// ties, NaNs (x[0] among them) and infinities.
func TestArgMax(t *testing.T) {
	r := rand.New(rand.NewPCG(80, 81))
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, l := range supportedLevels() {
		for _, cols := range []int{1, 2, 15, 16, 31, 32, 33, 63, 64, 65, 100, 49152} {
			t.Run(fmt.Sprintf("%v/cols=%d", l, cols), func(t *testing.T) {
				b := newTestBackend(t)
				b.k = kernelsAt(l)
				const rows = 24
				x := make([]float32, rows*cols)
				for i := range x {
					switch row := i / cols; {
					case row%4 == 0: // distinct values
						x[i] = float32(r.NormFloat64())
					case r.IntN(12) == 0:
						x[i] = nan
					case r.IntN(12) == 0:
						x[i] = -inf
					case row%4 == 1 && r.IntN(50) == 0:
						x[i] = inf
					default:
						x[i] = float32(r.IntN(4)) // ties
					}
				}
				src := newAct(t, b, rows, cols, x)
				got := make([]int32, rows)
				b.ArgMax(got, src)
				for i := range rows {
					if want := gpu.ArgMax(x[i*cols : (i+1)*cols]); int(got[i]) != want {
						t.Fatalf("row %d: %d, want %d (%v)", i, got[i], want, x[i*cols:min((i+1)*cols, i*cols+70)])
					}
				}
			})
		}
	}
}

// BenchmarkArgMax is a serving step's greedy sampling: 16 rows of a
// 49,152-token vocabulary, at each level (scalar: gpu.ArgMax in Go).
func BenchmarkArgMax(b *testing.B) {
	r := rand.New(rand.NewPCG(82, 83))
	const rows, cols = 16, 49152
	x := randFloats(r, rows*cols, 1)
	for _, l := range supportedLevels() {
		b.Run(l.String(), func(b *testing.B) {
			be := newTestBackend(b)
			be.k = kernelsAt(l)
			src := newAct(b, be, rows, cols, x)
			dst := make([]int32, rows)
			b.SetBytes(4 * rows * cols)
			for b.Loop() {
				be.ArgMax(dst, src)
			}
		})
	}
}
