package gpu

import (
	"fmt"
	"math"
)

// Angles writes into cs (len(pos)·Dims values) the cos and sin of every
// pair's angle at each position, row by row, pair i's cos at 2i and its
// sin at 2i+1: as ggml_rope_cache_init and rope_yarn without its ramp
// (which folds into Factors) compute them. theta starts at the position
// and is multiplied by powf(Base, -2/Dims) from one pair to the next;
// pair i turns by Scale · (theta / Factors[i]), its cos and sin taken in
// float64, rounded to float32 and multiplied by the magnitude. A device
// backend computes them here and uploads them, so that every device
// rotates by the CPU's angles, whatever its sin and cos.
func (r *Rope) Angles(cs []float32, pos []int32) {
	ms := r.Magnitude()
	thetaScale := float32(math.Pow(float64(r.Base), float64(-2/float32(r.Dims))))
	for row, p := range pos {
		c := cs[row*r.Dims : (row+1)*r.Dims]
		theta := float32(p)
		for i := range r.Dims / 2 {
			ff := float32(1)
			if r.Factors != nil {
				ff = r.Factors[i]
			}
			a := r.Scale * (theta / ff)
			c[2*i] = float32(math.Cos(float64(a))) * ms
			c[2*i+1] = float32(math.Sin(float64(a))) * ms
			theta *= thetaScale
		}
	}
}

// Check panics, naming backend, unless r can rotate the heads of x, a
// tensor of one row per position in pos: what every backend's Rope checks.
func (r *Rope) Check(backend string, x Tensor, pos []int32) {
	switch {
	case r.HeadDim <= 0 || x.Cols()%r.HeadDim != 0:
		panic(fmt.Sprintf("%s: Rope: head dim %d does not divide %v", backend, r.HeadDim, x))
	case r.Dims <= 0 || r.Dims > r.HeadDim || r.Dims%2 != 0:
		panic(fmt.Sprintf("%s: Rope: %d rotated dims of a %d-element head (want even, ≤ head dim)", backend, r.Dims, r.HeadDim))
	case r.Factors != nil && len(r.Factors) != r.Dims/2:
		panic(fmt.Sprintf("%s: Rope: %d factors for %d pairs", backend, len(r.Factors), r.Dims/2))
	case r.Scale == 0 || r.Base <= 0:
		panic(fmt.Sprintf("%s: Rope: scale %v, base %v (scale is 1 without scaling)", backend, r.Scale, r.Base))
	case len(pos) != x.Rows():
		panic(fmt.Sprintf("%s: Rope: %d positions for %v", backend, len(pos), x))
	}
}
