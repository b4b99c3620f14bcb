package gguf

import (
	"encoding/binary"
	"math"
)

// F16 layout: one IEEE 754 binary16 per element, 2 bytes, little-endian.
//
//	bit  15     sign
//	bits 14..10 exponent, bias 15 (0: zero/subnormal, 31: inf/NaN)
//	bits  9..0  mantissa

// F16ToF32 converts an IEEE half to float32. Every half is exactly
// representable as a float32, so the conversion is exact. A NaN keeps its
// payload (shifted into the top of the float32 mantissa) and comes out
// quiet, as F16C's vcvtph2ps and ggml's GGML_FP16_TO_FP32 give it.
func F16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch exp {
	case 0x1f: // inf or NaN
		if mant != 0 {
			mant |= 0x200 // the quiet bit
		}
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case 0: // zero or subnormal: mant * 2^-24, exact in float32
		v := float32(mant) * (1.0 / (1 << 24))
		if sign != 0 {
			v = -v
		}
		return v
	}
	// Normal: rebias the exponent from 15 to 127.
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}

// F32ToF16 converts a float32 to the nearest IEEE half, ties to even, as
// F16C's vcvtps2ph (and so ggml's GGML_FP32_TO_FP16 on x86) does. Values
// beyond the half range become ±inf, values too small for a subnormal become
// ±0, and a NaN stays a NaN with the quiet bit set and the top mantissa bits
// kept.
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	mant := b & 0x7fffff

	if exp == 0xff {
		if mant == 0 {
			return sign | 0x7c00
		}
		return sign | 0x7e00 | uint16(mant>>13)
	}

	e := exp - 127 + 15 // the half's biased exponent
	switch {
	case e >= 0x1f:
		return sign | 0x7c00
	case e <= 0:
		// A half subnormal q*2^-24. With the implicit bit, f = m*2^(exp-150),
		// so q = m / 2^(126-exp) = m >> (14-e), rounded to nearest even.
		// Below e = -10, f < 2^-25 (half the smallest subnormal): zero.
		if e < -10 {
			return sign
		}
		m := mant | 0x800000
		shift := uint(14 - e)
		q := m >> shift
		rem := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || rem == half && q&1 == 1 {
			q++ // may carry into the smallest normal, 0x0400: still right
		}
		return sign | uint16(q)
	}

	h := uint32(e)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || rem == 0x1000 && h&1 == 1 {
		h++ // a carry out of the mantissa bumps the exponent, up to inf
	}
	return sign | uint16(h)
}

// dequantizeF16 decodes len(dst) halves from src (2 bytes each).
func dequantizeF16(src []byte, dst []float32) {
	for i := range dst {
		dst[i] = F16ToF32(binary.LittleEndian.Uint16(src[2*i:]))
	}
}

// quantizeF16 encodes src as halves into dst (2 bytes each).
func quantizeF16(src []float32, dst []byte) {
	for i, v := range src {
		binary.LittleEndian.PutUint16(dst[2*i:], F32ToF16(v))
	}
}

// f16At reads the little-endian half at byte offset off of b as a float32.
// The block formats below use it for their fp16 scale fields.
func f16At(b []byte, off int) float32 {
	return F16ToF32(binary.LittleEndian.Uint16(b[off:]))
}

// putF16 stores v at byte offset off of b as a little-endian half, and
// returns the value the half decodes to, which later steps of a quantizer
// must use (ggml requantizes against the rounded scale, not the exact one).
func putF16(b []byte, off int, v float32) float32 {
	h := F32ToF16(v)
	binary.LittleEndian.PutUint16(b[off:], h)
	return F16ToF32(h)
}
