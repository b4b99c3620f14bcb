package gguf

// Q5_K super-block (ggml block_q5_K): 256 elements in 176 bytes, as 8
// sub-blocks of 32 elements, each with its own 6-bit scale and 6-bit min.
//
//	off  size  field
//	  0     2  d       fp16 super-block scale of the sub-block scales
//	  2     2  dmin    fp16 super-block scale of the sub-block mins
//	  4    12  scales  8 scales and 8 mins, 6 bits each, packed as in Q4_K
//	 16    32  qh      fifth bits: bit s of qh[l] belongs to element 32s+l
//	 48   128  qs      low 4 bits, two per byte, nibble order as in Q4_K
//
// Elements 64p..64p+63 (p = 0..3) take their low bits from qs[32p..32p+31]:
// element 64p+l from the low nibble of qs[32p+l], element 64p+32+l from its
// high nibble. Element = d*sc[s]*q - dmin*m[s] with q in [0, 31], s = e/32.
const (
	q5_KElems = 256
	q5_KBytes = 2 + 2 + 12 + 32 + 128
)

func dequantizeQ5_K(src []byte, dst []float32) {
	for b := range len(dst) / q5_KElems {
		blk := src[b*q5_KBytes : (b+1)*q5_KBytes]
		y := dst[b*q5_KElems : (b+1)*q5_KElems]
		d, dmin := f16At(blk, 0), f16At(blk, 2)
		scales, qh, qs := blk[4:16], blk[16:48], blk[48:]
		for p := range 4 {
			sc1, m1 := scaleMinK4(2*p, scales)
			sc2, m2 := scaleMinK4(2*p+1, scales)
			d1, min1 := d*float32(sc1), dmin*float32(m1)
			d2, min2 := d*float32(sc2), dmin*float32(m2)
			u1, u2 := byte(1)<<(2*p), byte(1)<<(2*p+1)
			q, out := qs[32*p:32*p+32], y[64*p:64*p+64]
			for l, v := range q {
				lo, hi := v&0xf, v>>4
				if qh[l]&u1 != 0 {
					lo += 16
				}
				if qh[l]&u2 != 0 {
					hi += 16
				}
				out[l] = d1*float32(lo) - min1
				out[l+32] = d2*float32(hi) - min2
			}
		}
	}
}

// quantizeQ5_K follows quantize_row_q5_K_ref: Q4_K's method with 5-bit
// quants and a narrower search (makeQKX2Quants with rmin -0.5, 16 steps).
func quantizeQ5_K(src []float32, dst []byte) {
	for b := range len(src) / q5_KElems {
		x := src[b*q5_KElems : (b+1)*q5_KElems]
		blk := dst[b*q5_KBytes : (b+1)*q5_KBytes]

		var L [256]uint8
		lsc, lm, d, dmin := kQuantScalesMins(x, 31, -0.5, 0.1, 15, L[:])
		putScaleMinK4(blk[4:16], &lsc, &lm)
		d = putF16(blk, 0, d)
		dmin = putF16(blk, 2, dmin)
		kRequantize(x, 31, d, dmin, blk[4:16], L[:])

		qh, qs := blk[16:48], blk[48:]
		clear(qh)
		for p := range 4 {
			for l := range 32 {
				lo, hi := L[64*p+l], L[64*p+32+l]
				qs[32*p+l] = lo&0xf | (hi&0xf)<<4
				qh[l] |= lo>>4<<(2*p) | hi>>4<<(2*p+1)
			}
		}
	}
}
