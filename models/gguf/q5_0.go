package gguf

import "encoding/binary"

// Q5_0 block (ggml block_q5_0): 32 elements in 22 bytes.
//
//	off  size  field
//	  0     2  d    fp16 scale
//	  2     4  qh   fifth bits: bit j of this little-endian uint32 is element j's
//	  6    16  qs   low 4 bits, two per byte
//
// Byte qs[j] holds the low bits of element j in its low nibble and of element
// j+16 in its high nibble. Element = d * (q - 16) with q in [0, 31].
const (
	q5_0Elems = 32
	q5_0Bytes = 2 + 4 + 16
)

func dequantizeQ5_0(src []byte, dst []float32) {
	for b := range len(dst) / q5_0Elems {
		blk := src[b*q5_0Bytes : (b+1)*q5_0Bytes]
		y := dst[b*q5_0Elems : (b+1)*q5_0Elems]
		d := f16At(blk, 0)
		qh := binary.LittleEndian.Uint32(blk[2:])
		for j, q := range blk[6:] {
			h0 := byte(qh>>j&1) << 4
			h1 := byte(qh>>(j+16)&1) << 4
			y[j] = float32(int(q&0xf|h0)-16) * d
			y[j+16] = float32(int(q>>4|h1)-16) * d
		}
	}
}

// quantizeQ5_0 follows quantize_row_q5_0_ref: like Q4_0 with d = max / -16
// and quants x/d + 16.5 truncated, capped at 31.
func quantizeQ5_0(src []float32, dst []byte) {
	for b := range len(src) / q5_0Elems {
		x := src[b*q5_0Elems : (b+1)*q5_0Elems]
		blk := dst[b*q5_0Bytes : (b+1)*q5_0Bytes]

		var amax, vmax float32
		for _, v := range x {
			if amax < abs32(v) {
				amax, vmax = abs32(v), v
			}
		}
		d := vmax / -16
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putF16(blk, 0, d)
		var qh uint32
		for j := range 16 {
			q0 := clampInt(truncInt(float32(x[j]*id)+16.5), 0, 31)
			q1 := clampInt(truncInt(float32(x[j+16]*id)+16.5), 0, 31)
			blk[6+j] = byte(q0&0xf | (q1&0xf)<<4)
			qh |= uint32(q0>>4) << j
			qh |= uint32(q1>>4) << (j + 16)
		}
		binary.LittleEndian.PutUint32(blk[2:], qh)
	}
}
