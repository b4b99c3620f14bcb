package gpu

import "math"

// NMSE is the normalized mean squared error Σ(a − b)² / Σ b² of a against
// the reference b: 0 for two zero vectors, +Inf for a nonzero a against a
// zero b, NaN when a holds a NaN. Backends are compared by it, op by op
// (gpu/conformance) and step by step (`folio gpu preflight`).
func NMSE(a, b []float32) float64 {
	var num, den float64
	for i := range b {
		d := float64(a[i]) - float64(b[i])
		num += d * d
		den += float64(b[i]) * float64(b[i])
	}
	switch {
	case math.IsNaN(num):
		return math.NaN()
	case den == 0:
		if num == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return num / den
}
