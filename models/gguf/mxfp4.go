package gguf

import "math"

// MXFP4 block (ggml block_mxfp4): 32 elements in 17 bytes.
//
//	off  size  field
//	  0     1  e    E8M0 shared scale: the power of two 2^(e-127)
//	  1    16  qs   4-bit E2M1 codes, two per byte
//
// Byte qs[j] holds element j in its low nibble and element j+16 in its high
// nibble. A code is a sign bit over the E2M1 magnitudes {0, 0.5, 1, 1.5, 2,
// 3, 4, 6}; ggml keeps them doubled as the integers of MXFP4Values and halves
// the scale instead, so element = MXFP4Values[q] * 2^(e-128). Both factors
// are exact and so is their product, which is why every kernel that takes
// its values from here gives the same floats as ggml.
const (
	mxfp4Elems = 32
	mxfp4Bytes = 1 + 16
)

// MXFP4Values are the 16 E2M1 codes times two (ggml's kvalues_mxfp4).
var MXFP4Values = [16]int8{0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12}

// E8M0Half returns 2^(e-128): half the E8M0 scale e, as ggml's
// ggml_e8m0_to_fp32_half. For e < 2 that is a float32 subnormal (2^-128
// and 2^-127), whose bits ggml writes out directly; e = 255 gives 2^127,
// not the NaN the OCP format reserves it for (ggml does not check either).
func E8M0Half(e byte) float32 {
	if e < 2 {
		return math.Float32frombits(0x00200000 << e)
	}
	return math.Float32frombits(uint32(e-1) << 23)
}

func dequantizeMXFP4(src []byte, dst []float32) {
	for b := range len(dst) / mxfp4Elems {
		blk := src[b*mxfp4Bytes : (b+1)*mxfp4Bytes]
		y := dst[b*mxfp4Elems : (b+1)*mxfp4Elems]
		d := E8M0Half(blk[0])
		for j, q := range blk[1:] {
			y[j] = float32(MXFP4Values[q&0xf]) * d
			y[j+16] = float32(MXFP4Values[q>>4]) * d
		}
	}
}

// quantizeMXFP4 follows quantize_row_mxfp4_ref: the scale is the power of
// two 2^(floor(log2(amax)) - 2), so that amax/scale lies in [4, 8) and the
// largest E2M1 magnitude 6 is near it; each element then takes the code of
// least |value*d - x|, the first such code on a tie (so +0 before -0).
func quantizeMXFP4(src []float32, dst []byte) {
	for b := range len(src) / mxfp4Elems {
		x := src[b*mxfp4Elems : (b+1)*mxfp4Elems]
		blk := dst[b*mxfp4Bytes : (b+1)*mxfp4Bytes]

		var amax float32
		for _, v := range x {
			if amax < abs32(v) {
				amax = abs32(v)
			}
		}
		var e byte
		if amax > 0 {
			// A subnormal amax gives a negative exponent, which the
			// C cast wraps modulo 256 on x86; so does byte(int).
			e = byte(int(math.Floor(float64(log2f(amax)))) - 2 + 127)
		}
		d := E8M0Half(e)
		blk[0] = e
		for j := range 16 {
			blk[1+j] = byte(nearestMXFP4(x[j], d) | nearestMXFP4(x[j+16], d)<<4)
		}
	}
}

// log2f is C's log2f: the base-2 logarithm rounded to float32. The
// rounding matters to the quantizer: just below a power of two 2^k with
// |k| ≥ 2, log2f rounds up to k, and ggml's floorf then takes k, not k-1.
func log2f(f float32) float32 {
	return float32(math.Log2(float64(f)))
}

// nearestMXFP4 is best_index_mxfp4: the code whose value times d is nearest
// to x, the lowest code on a tie. The products are exact (a small integer
// times a power of two), so an FMA could not change them; the conversions
// keep to the package's rule all the same.
func nearestMXFP4(x, d float32) int {
	best := 0
	bestErr := abs32(float32(float32(MXFP4Values[0])*d) - x)
	for i := 1; i < 16; i++ {
		if err := abs32(float32(float32(MXFP4Values[i])*d) - x); err < bestErr {
			best, bestErr = i, err
		}
	}
	return best
}
