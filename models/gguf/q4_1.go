package gguf

import "math"

// Q4_1 block (ggml block_q4_1): 32 elements in 20 bytes.
//
//	off  size  field
//	  0     2  d    fp16 scale
//	  2     2  m    fp16 minimum
//	  4    16  qs   4-bit quants, two per byte
//
// Byte qs[j] holds element j in its low nibble and element j+16 in its high
// nibble. Element = d * q + m.
const (
	q4_1Elems = 32
	q4_1Bytes = 2 + 2 + 16
)

func dequantizeQ4_1(src []byte, dst []float32) {
	for b := range len(dst) / q4_1Elems {
		blk := src[b*q4_1Bytes : (b+1)*q4_1Bytes]
		y := dst[b*q4_1Elems : (b+1)*q4_1Elems]
		d, m := f16At(blk, 0), f16At(blk, 2)
		for j, q := range blk[4:] {
			y[j] = float32(q&0xf)*d + m
			y[j+16] = float32(q>>4)*d + m
		}
	}
}

// quantizeQ4_1 follows quantize_row_q4_1_ref: m is the block minimum,
// d = (max-min)/15, quants are (x-min)/d + 0.5 truncated, capped at 15.
func quantizeQ4_1(src []float32, dst []byte) {
	for b := range len(src) / q4_1Elems {
		x := src[b*q4_1Elems : (b+1)*q4_1Elems]
		blk := dst[b*q4_1Bytes : (b+1)*q4_1Bytes]

		vmin, vmax := float32(math.MaxFloat32), float32(-math.MaxFloat32)
		for _, v := range x {
			if v < vmin {
				vmin = v
			}
			if v > vmax {
				vmax = v
			}
		}
		d := (vmax - vmin) / 15
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putF16(blk, 0, d)
		putF16(blk, 2, vmin)
		for j := range 16 {
			q0 := clampInt(truncInt(float32((x[j]-vmin)*id)+0.5), 0, 15)
			q1 := clampInt(truncInt(float32((x[j+16]-vmin)*id)+0.5), 0, 15)
			blk[4+j] = byte(q0 | q1<<4)
		}
	}
}
