package gguf

import (
	"encoding/binary"
	"math"
)

// BF16 layout: one bfloat16 per element, 2 bytes, little-endian. A bfloat16
// is the top half of a float32: sign, 8-bit exponent, 7-bit mantissa.

// BF16ToF32 converts a bfloat16 to float32 (exact: the low 16 bits are zero).
func BF16ToF32(h uint16) float32 {
	return math.Float32frombits(uint32(h) << 16)
}

// F32ToBF16 converts a float32 to the nearest bfloat16, ties to even, as
// ggml's GGML_FP32_TO_BF16 does: subnormals are rounded, not flushed, and a
// NaN keeps its top bits with the quiet bit forced on, so it cannot round
// into an infinity.
func F32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x0040
	}
	// Adding 0x7fff rounds up anything above half an ulp; the extra 1 when
	// the kept lsb is odd turns an exact half into a round-up, so ties go
	// to even. A carry into the exponent is the right answer, up to inf.
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// dequantizeBF16 decodes len(dst) bfloat16s from src (2 bytes each).
func dequantizeBF16(src []byte, dst []float32) {
	for i := range dst {
		dst[i] = BF16ToF32(binary.LittleEndian.Uint16(src[2*i:]))
	}
}

// quantizeBF16 encodes src as bfloat16s into dst (2 bytes each).
func quantizeBF16(src []float32, dst []byte) {
	for i, v := range src {
		binary.LittleEndian.PutUint16(dst[2*i:], F32ToBF16(v))
	}
}
