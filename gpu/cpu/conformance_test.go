package cpu_test

import (
	"testing"

	"folio/gpu/conformance"
	"folio/gpu/cpu"
)

// Every SIMD level this machine runs passes the conformance table against
// the scalar level, the plain Go reference.
func TestConformanceEveryLevel(t *testing.T) {
	ref := cpu.NewAtLevel(1, "scalar")
	defer ref.Close()
	for _, level := range cpu.Levels() {
		t.Run(level, func(t *testing.T) {
			dev := cpu.NewAtLevel(2, level)
			defer dev.Close()
			checks := conformance.CheckOps(ref, dev, 7)
			for _, c := range checks {
				if !c.Pass() {
					t.Errorf("%-60s NMSE %.3g (tolerance %.0e) %s", c.Op, c.NMSE, c.Tol, c.Err)
				}
			}
			t.Logf("%d cases", len(checks))
		})
	}
}
