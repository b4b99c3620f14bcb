package cpu

import "folio/models/gguf"

// simdLevel is the instruction set the kernels use. The backend starts at
// the best one the CPU has (bestLevel, from CPUID at start-up); the scalar
// level is the plain Go of matmul.go and attention.go, which runs anywhere
// and is the reference the SIMD kernels are tested against.
type simdLevel int

const (
	levelScalar simdLevel = iota // plain Go
	levelAVX2                    // AVX2, FMA, F16C (x86-64-v3)
	levelAVX512                  // AVX-512 F, BW, VL, DQ and VNNI
)

func (l simdLevel) String() string {
	return [...]string{"scalar", "avx2", "avx512"}[l]
}

// bestLevel is the best level this CPU and build support: scalar without
// cgo or off amd64.
var bestLevel = detectLevel()

// SIMDLevel names the kernels the backend runs on this machine: "avx512",
// "avx2" or "scalar".
func SIMDLevel() string { return bestLevel.String() }

// supportedLevels are the levels this machine can run, scalar first.
func supportedLevels() []simdLevel {
	var ls []simdLevel
	for l := levelScalar; l <= bestLevel; l++ {
		ls = append(ls, l)
	}
	return ls
}

// kernelKind is a weight type with SIMD matmul kernels; it also fixes the
// format its activations are quantized to (xquant.go). The values are the
// C side's KIND_*.
type kernelKind int

const (
	kindQ8_0 kernelKind = iota
	kindQ4_0
	kindQ4_K
	kindQ6_K
	kindF16
	kindMXFP4
)

// kernelFor returns the SIMD kernel of weight type typ at level l, if any.
func kernelFor(typ gguf.TensorType, l simdLevel) (kernelKind, bool) {
	if l == levelScalar {
		return 0, false
	}
	switch typ {
	case gguf.TypeQ8_0:
		return kindQ8_0, true
	case gguf.TypeQ4_0:
		return kindQ4_0, true
	case gguf.TypeQ4_K:
		return kindQ4_K, true
	case gguf.TypeQ6_K:
		return kindQ6_K, true
	case gguf.TypeF16:
		return kindF16, true
	case gguf.TypeMXFP4:
		return kindMXFP4, true
	}
	return 0, false
}
