package gpu

import (
	"math"
	"testing"
)

func TestNMSE(t *testing.T) {
	for _, c := range []struct {
		name string
		a, b []float32
		ok   func(float64) bool
	}{
		{"equal", []float32{1, 2}, []float32{1, 2}, func(g float64) bool { return g == 0 }},
		{"one off", []float32{1, 3}, []float32{1, 2}, func(g float64) bool { return math.Abs(g-0.2) <= 1e-12 }},
		{"against zero", []float32{1}, []float32{0}, func(g float64) bool { return math.IsInf(g, 1) }},
		{"NaN", []float32{float32(math.NaN())}, []float32{1}, math.IsNaN},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := NMSE(c.a, c.b); !c.ok(got) {
				t.Errorf("NMSE(%v, %v) = %g", c.a, c.b, got)
			}
		})
	}
}
