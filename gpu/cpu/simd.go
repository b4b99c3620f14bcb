package cpu

import (
	"fmt"
	"strings"

	"folio/models/gguf"
)

// simdLevel is the instruction set the kernels use. The backend starts at
// the best one the CPU has (bestLevel, from CPUID at start-up) unless
// SetLevel picks a lower one (FOLIO_CPU_LEVEL); the scalar level is the
// plain Go of matmul.go and attention.go, which runs anywhere and is the
// reference the SIMD kernels are tested against.
//
// The x86 levels are ordered: each runs every kernel of the ones below it.
// levelNEON and levelI8MM are arm64's levels (arm), above scalar only:
// they follow the x86 levels in value but run none of their kernels, so
// code that picks an x86 kernel names its level (l == levelAVX512), never
// a range of them.
type simdLevel int

const (
	levelScalar     simdLevel = iota // plain Go
	levelAVX2                        // AVX2, FMA, F16C (x86-64-v3)
	levelAVXVNNI                     // AVX2 with AVX-VNNI's VEX vpdpbusd (Alder Lake and later, Zen 5)
	levelAVX512                      // AVX-512 F, BW, VL, DQ and VNNI
	levelAVX512BF16                  // AVX-512 with BF16's vdpbf16ps for attention over half and Q8_0 caches (Zen 4 and later, Cooper Lake)
	levelAMX                         // AVX-512 with AMX tiles: INT8 for the packed matmuls of many rows, BF16 for attention over half and Q8_0 caches (Sapphire Rapids and later)
	levelNEON                        // arm64: Advanced SIMD with the dot product (Armv8.2 dotprod)
	levelI8MM                        // arm64: NEON with the int8 matrix multiply (Armv8.6 i8mm: Graviton 3 and later, Grace, Snapdragon X)
)

var levelNames = [...]string{"scalar", "avx2", "avxvnni", "avx512", "avx512bf16", "amx", "neon", "i8mm"}

// arm reports whether l is an arm64 level: no packed weights, and argmax,
// rope and the K/V store in Go (kernels.go).
func (l simdLevel) arm() bool { return l == levelNEON || l == levelI8MM }

// vector is the level of l's vector kernels: every kernel of levelAMX but
// the packed matmul (simd_amx.c) and attention is AVX-512's, and every
// one of levelAVX512BF16 but attention.
func (l simdLevel) vector() simdLevel {
	if l == levelAMX || l == levelAVX512BF16 {
		return levelAVX512
	}
	return l
}

// packed is the level of l's packed matmuls: AMX's own, else vector's.
// The cgo wrappers pass each C kernel l.vector() or l.packed(), so that
// their callers may name any level.
func (l simdLevel) packed() simdLevel {
	if l == levelAMX {
		return l
	}
	return l.vector()
}

// attnBF16 reports whether attention at level l over a cache of kind
// runs a bfloat16 kernel (simd_attn_bf16.h): at amx and avx512bf16, over
// half and Q8_0 caches.
func (l simdLevel) attnBF16(kind kvKind) bool {
	return (l == levelAMX || l == levelAVX512BF16) && kind != kvF32
}

func (l simdLevel) String() string { return levelNames[l] }

// detectedLevel is the best level this CPU and build support: scalar
// without cgo or off amd64 and arm64.
var detectedLevel = detectLevel()

// bestLevel is the level new backends run: detectedLevel, or a lower one
// SetLevel chose.
var bestLevel = detectedLevel

// SIMDLevel names the kernels new backends run: "amx", "avx512bf16", "avx512",
// "avxvnni", "avx2", "i8mm", "neon" or "scalar".
func SIMDLevel() string { return bestLevel.String() }

// Levels names the levels this machine can run, scalar first.
func Levels() []string {
	var names []string
	for _, l := range supportedLevels() {
		names = append(names, l.String())
	}
	return names
}

// SetLevel makes backends created after it run level name (one of
// Levels); "" restores the best. The program calls it once, before any
// backend (FOLIO_CPU_LEVEL): weights repacked for one level are not read
// at another.
func SetLevel(name string) error {
	if name == "" {
		bestLevel = detectedLevel
		return nil
	}
	for _, l := range supportedLevels() {
		if l.String() == name {
			bestLevel = l
			return nil
		}
	}
	return fmt.Errorf("cpu level %q: this machine runs %s; set one of those, or unset it for the best (%s)",
		name, strings.Join(Levels(), ", "), detectedLevel)
}

// supportedLevels are the levels this machine can run, scalar first.
func supportedLevels() []simdLevel {
	switch detectedLevel {
	case levelNEON:
		return []simdLevel{levelScalar, levelNEON}
	case levelI8MM:
		return []simdLevel{levelScalar, levelNEON, levelI8MM}
	}
	var ls []simdLevel
	for l := levelScalar; l <= detectedLevel; l++ {
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
	kindQ5_0
	kindQ5_K
	kindBF16
	kindQ3_K
	kindQ2_K
	kindIQ4_NL
	kindIQ4_XS
	kindQ4_1
	kindQ5_1
	// kindIQ4_XSK is IQ4_XS at AVX2: its packed layout (layout), on XK
	// activations, as ggml's AVX2 dot takes Q8_K's: a block's int8 scale
	// multiplies its integer sums, one float32 step a super-block
	// (simd_packed256_q8.h, pq_iq4_xsk_256).
	kindIQ4_XSK
	// kindQ8_0S and kindIQ4_NLS are Q8_0 and IQ4_NL at AVX2: their
	// layouts, on X8P activations without its bias (the sign trick wants
	// them signed: a vpxor a step saved).
	kindQ8_0S
	kindIQ4_NLS
)

// layout is the kind whose packed layout kind's weights take: the base
// kind of AVX2's own (kindIQ4_XSK, kindQ8_0S, kindIQ4_NLS), else kind.
func (k kernelKind) layout() kernelKind {
	switch k {
	case kindIQ4_XSK:
		return kindIQ4_XS
	case kindQ8_0S:
		return kindQ8_0
	case kindIQ4_NLS:
		return kindIQ4_NL
	}
	return k
}

// kernelFor returns the SIMD kernel of weight type typ at level l, if any.
func kernelFor(typ gguf.TensorType, l simdLevel) (kernelKind, bool) {
	if l == levelScalar {
		return 0, false
	}
	switch typ {
	case gguf.TypeQ8_0:
		if l == levelAVX2 {
			return kindQ8_0S, true
		}
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
		// at x86 levels packed kernels only, as IQ4_XS
		return kindMXFP4, true
	case gguf.TypeQ5_0:
		// Q5_0 and Q5_K: at x86 levels packed kernels only (repack.go:
		// every weight that is multiplied is repacked), at NEON
		// unpacked ones
		return kindQ5_0, true
	case gguf.TypeQ5_K:
		return kindQ5_K, true
	case gguf.TypeBF16:
		return kindBF16, true
	case gguf.TypeQ3_K:
		// Q3_K and Q2_K: as Q5_0 and Q5_K
		return kindQ3_K, true
	case gguf.TypeQ2_K:
		return kindQ2_K, true
	case gguf.TypeIQ4_NL:
		// IQ4_NL and IQ4_XS: packed kernels only at x86 levels (as Q4_0)
		if l == levelAVX2 {
			return kindIQ4_NLS, true
		}
		return kindIQ4_NL, true
	case gguf.TypeIQ4_XS:
		if l == levelAVX2 {
			return kindIQ4_XSK, true
		}
		return kindIQ4_XS, true
	case gguf.TypeQ4_1:
		// Q4_1 and Q5_1: as Q4_0 and Q5_0 with a min a block, packed
		// only at x86 levels
		return kindQ4_1, true
	case gguf.TypeQ5_1:
		return kindQ5_1, true
	}
	return 0, false
}
