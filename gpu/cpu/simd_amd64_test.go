//go:build amd64 && cgo

package cpu

import (
	"testing"

	"golang.org/x/sys/cpu"
)

// A CPU with AMX-INT8 (and AVX-512) runs the amx level, so TestPackedKernels
// holds its tile kernels (simd_amx.c) to the other levels bit for bit; a CPU
// without it (most CI machines) skips them, and this test says so.
func TestAMXDetected(t *testing.T) {
	avx512 := cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512DQ && cpu.X86.HasAVX512VNNI
	if !avx512 || !cpu.X86.HasAMXTile || !cpu.X86.HasAMXInt8 || !cpu.X86.HasAMXBF16 || !cpu.X86.HasAVX512BF16 {
		if detectedLevel == levelAMX {
			t.Fatal("detected amx on a CPU without AVX-512, AVX512-BF16, AMX-INT8 and AMX-BF16")
		}
		t.Skip("this CPU lacks AMX-INT8 or AMX-BF16 (amx_int8, amx_bf16 in lscpu): the amx level's tile kernels " +
			"(packed matmuls, attention over half and Q8_0 caches) were not run")
	}
	if detectedLevel != levelAMX || SIMDLevel() != "amx" {
		// The OS may withhold the tile data (XCR0, arch_prctl): then AVX-512.
		t.Fatalf("detected %v, SIMDLevel %q on a CPU with AMX-INT8 and AMX-BF16, want amx", detectedLevel, SIMDLevel())
	}
	if got := levelAMX.vector(); got != levelAVX512 {
		t.Fatalf("amx's vector kernels are %v's, want avx512's", got)
	}
}
