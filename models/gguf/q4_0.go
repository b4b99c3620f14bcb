package gguf

// Q4_0 block (ggml block_q4_0): 32 elements in 18 bytes.
//
//	off  size  field
//	  0     2  d    fp16 scale
//	  2    16  qs   4-bit quants, two per byte
//
// Byte qs[j] holds element j in its low nibble and element j+16 in its high
// nibble. Element = d * (q - 8).
const (
	q4_0Elems = 32
	q4_0Bytes = 2 + 16
)

func dequantizeQ4_0(src []byte, dst []float32) {
	for b := range len(dst) / q4_0Elems {
		blk := src[b*q4_0Bytes : (b+1)*q4_0Bytes]
		y := dst[b*q4_0Elems : (b+1)*q4_0Elems]
		d := f16At(blk, 0)
		for j, q := range blk[2:] {
			y[j] = float32(int(q&0xf)-8) * d
			y[j+16] = float32(int(q>>4)-8) * d
		}
	}
}

// quantizeQ4_0 follows quantize_row_q4_0_ref: the element of largest
// magnitude, max, maps to quant 0 (d = max / -8) so the full range [-8, 7]
// is used on its side; quants are x/d + 8.5 truncated, capped at 15.
func quantizeQ4_0(src []float32, dst []byte) {
	for b := range len(src) / q4_0Elems {
		x := src[b*q4_0Elems : (b+1)*q4_0Elems]
		blk := dst[b*q4_0Bytes : (b+1)*q4_0Bytes]

		var amax, vmax float32
		for _, v := range x {
			if amax < abs32(v) {
				amax, vmax = abs32(v), v
			}
		}
		d := vmax / -8
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putF16(blk, 0, d)
		for j := range 16 {
			q0 := clampInt(truncInt(float32(x[j]*id)+8.5), 0, 15)
			q1 := clampInt(truncInt(float32(x[j+16]*id)+8.5), 0, 15)
			blk[2+j] = byte(q0 | q1<<4)
		}
	}
}
