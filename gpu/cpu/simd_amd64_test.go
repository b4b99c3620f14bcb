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

// A CPU with AVX-512 BF16 (Zen 4 and later, Cooper Lake) runs the
// avx512bf16 level below amx, so the attention tests hold its vdpbf16ps
// kernel (simd_attn_bf16.c) to float64 at attentionTolBF16; a CPU without
// it skips them, and this test says so.
func TestAVX512BF16Detected(t *testing.T) {
	avx512 := cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512DQ && cpu.X86.HasAVX512VNNI
	if !avx512 || !cpu.X86.HasAVX512BF16 {
		if detectedLevel >= levelAVX512BF16 {
			t.Fatalf("detected %v on a CPU without AVX-512 and AVX512-BF16", detectedLevel)
		}
		t.Skip("this CPU lacks AVX-512 or AVX512-BF16 (avx512_bf16 in lscpu): the avx512bf16 level's attention was not run")
	}
	if detectedLevel != levelAVX512BF16 && detectedLevel != levelAMX {
		t.Fatalf("detected %v on a CPU with AVX-512 BF16, want avx512bf16 or amx", detectedLevel)
	}
	if v, p := levelAVX512BF16.vector(), levelAVX512BF16.packed(); v != levelAVX512 || p != levelAVX512 {
		t.Fatalf("avx512bf16's vector and packed kernels are %v's and %v's, want avx512's", v, p)
	}
	if !levelAVX512BF16.attnBF16(kvF16) || !levelAVX512BF16.attnBF16(kvQ8) || levelAVX512BF16.attnBF16(kvF32) {
		t.Fatal("avx512bf16 takes the bfloat16 attention for half and Q8_0 caches only")
	}
}
