package gguf

import (
	"encoding/binary"
	"math"
)

// Q5_1 block (ggml block_q5_1): 32 elements in 24 bytes.
//
//	off  size  field
//	  0     2  d    fp16 scale
//	  2     2  m    fp16 minimum
//	  4     4  qh   fifth bits: bit j of this little-endian uint32 is element j's
//	  8    16  qs   low 4 bits, two per byte
//
// Byte qs[j] holds the low bits of element j in its low nibble and of element
// j+16 in its high nibble. Element = d * q + m with q in [0, 31].
const (
	q5_1Elems = 32
	q5_1Bytes = 2 + 2 + 4 + 16
)

func dequantizeQ5_1(src []byte, dst []float32) {
	for b := range len(dst) / q5_1Elems {
		blk := src[b*q5_1Bytes : (b+1)*q5_1Bytes]
		y := dst[b*q5_1Elems : (b+1)*q5_1Elems]
		d, m := f16At(blk, 0), f16At(blk, 2)
		qh := binary.LittleEndian.Uint32(blk[4:])
		for j, q := range blk[8:] {
			h0 := byte(qh>>j&1) << 4
			h1 := byte(qh>>(j+16)&1) << 4
			y[j] = float32(q&0xf|h0)*d + m
			y[j+16] = float32(q>>4|h1)*d + m
		}
	}
}

// quantizeQ5_1 follows quantize_row_q5_1_ref: like Q4_1 with d =
// (max-min)/31.
func quantizeQ5_1(src []float32, dst []byte) {
	for b := range len(src) / q5_1Elems {
		x := src[b*q5_1Elems : (b+1)*q5_1Elems]
		blk := dst[b*q5_1Bytes : (b+1)*q5_1Bytes]

		vmin, vmax := float32(math.MaxFloat32), float32(-math.MaxFloat32)
		for _, v := range x {
			if v < vmin {
				vmin = v
			}
			if v > vmax {
				vmax = v
			}
		}
		d := (vmax - vmin) / 31
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putF16(blk, 0, d)
		putF16(blk, 2, vmin)
		var qh uint32
		for j := range 16 {
			q0 := clampInt(truncInt(float32((x[j]-vmin)*id)+0.5), 0, 31)
			q1 := clampInt(truncInt(float32((x[j+16]-vmin)*id)+0.5), 0, 31)
			blk[8+j] = byte(q0&0xf | (q1&0xf)<<4)
			qh |= uint32(q0>>4) << j
			qh |= uint32(q1>>4) << (j + 16)
		}
		binary.LittleEndian.PutUint32(blk[4:], qh)
	}
}
