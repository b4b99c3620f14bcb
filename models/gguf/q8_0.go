package gguf

import "math"

// Q8_0 block (ggml block_q8_0): 32 elements in 34 bytes.
//
//	off  size  field
//	  0     2  d    fp16 scale
//	  2    32  qs   int8 quants
//
// Element j = d * qs[j].
const (
	q8_0Elems = 32
	q8_0Bytes = 2 + 32
)

func dequantizeQ8_0(src []byte, dst []float32) {
	for b := range len(dst) / q8_0Elems {
		blk := src[b*q8_0Bytes : (b+1)*q8_0Bytes]
		y := dst[b*q8_0Elems : (b+1)*q8_0Elems]
		d := f16At(blk, 0)
		for j, q := range blk[2:] {
			y[j] = float32(int8(q)) * d
		}
	}
}

// quantizeQ8_0 follows quantize_row_q8_0_ref: d = amax/127 and each quant is
// x/d rounded half away from zero.
func quantizeQ8_0(src []float32, dst []byte) {
	for b := range len(src) / q8_0Elems {
		x := src[b*q8_0Elems : (b+1)*q8_0Elems]
		blk := dst[b*q8_0Bytes : (b+1)*q8_0Bytes]

		var amax float32
		for _, v := range x {
			amax = max(amax, abs32(v))
		}
		d := amax / 127
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putF16(blk, 0, d)
		for j, v := range x {
			q := float32(math.Round(float64(v * id)))
			blk[2+j] = byte(int8(clampInt(truncInt(q), -128, 127)))
		}
	}
}
