//go:build arm64 && cgo

package cpu

import (
	"testing"

	"golang.org/x/sys/cpu"
)

// An arm64 CPU with the dot product runs the NEON level, so the kernel
// tests that loop over supportedLevels test simd_neon.c (CI runs them
// under qemu-aarch64 -cpu max, which has it).
func TestNEONDetected(t *testing.T) {
	if !cpu.ARM64.HasASIMDDP {
		if detectedLevel != levelScalar {
			t.Fatalf("detected %v on a CPU without the dot product", detectedLevel)
		}
		t.Skip("this CPU lacks the dot product (asimddp): the NEON level is off")
	}
	if detectedLevel != levelNEON || SIMDLevel() != "neon" {
		t.Fatalf("detected %v, SIMDLevel %q on a CPU with the dot product, want neon", detectedLevel, SIMDLevel())
	}
	if got := Levels(); len(got) != 2 || got[0] != "scalar" || got[1] != "neon" {
		t.Fatalf("Levels() = %q, want [scalar neon]", got)
	}
}
