package gpu

import "math"

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
