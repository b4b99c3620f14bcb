//go:build arm64 && cgo

package cpu

import (
	"slices"
	"testing"

	"golang.org/x/sys/cpu"
)

// An arm64 CPU with the dot product runs the NEON level, and with the
// int8 matrix multiply the i8mm level above it, so the kernel tests that
// loop over supportedLevels test simd_neon.c and simd_neon_i8mm.h (CI runs
// them under qemu-aarch64 -cpu max, which has both).
func TestNEONDetected(t *testing.T) {
	if !cpu.ARM64.HasASIMDDP {
		if detectedLevel != levelScalar {
			t.Fatalf("detected %v on a CPU without the dot product", detectedLevel)
		}
		t.Skip("this CPU lacks the dot product (asimddp): the NEON level is off")
	}
	want := []string{"scalar", "neon"}
	if cpu.ARM64.HasI8MM {
		want = append(want, "i8mm")
	}
	if got := SIMDLevel(); got != want[len(want)-1] {
		t.Fatalf("SIMDLevel() = %q on a CPU with %v, want %q", got, want[1:], want[len(want)-1])
	}
	if got := Levels(); !slices.Equal(got, want) {
		t.Fatalf("Levels() = %q, want %q", got, want)
	}
}
