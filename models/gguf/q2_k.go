package gguf

// Q2_K super-block (ggml block_q2_K): 256 elements in 84 bytes, as 16
// sub-blocks of 16 elements, each with a 4-bit scale and a 4-bit min.
//
//	off  size  field
//	  0    16  scales  per sub-block: scale in the low nibble, min in the high
//	 16    64  qs      2-bit quants, four per byte
//	 80     2  d       fp16 super-block scale of the sub-block scales
//	 82     2  dmin    fp16 super-block scale of the sub-block mins
//
// Each half h (elements 128h..128h+127) uses qs[32h..32h+31]: element
// 128h+32g+l (g = 0..3, l = 0..31) is bits 2g..2g+1 of qs[32h+l].
// Element e = d*(scales[e/16]&15)*q - dmin*(scales[e/16]>>4).
const (
	q2_KElems = 256
	q2_KBytes = 16 + 64 + 2 + 2
)

func dequantizeQ2_K(src []byte, dst []float32) {
	for b := range len(dst) / q2_KElems {
		blk := src[b*q2_KBytes : (b+1)*q2_KBytes]
		y := dst[b*q2_KElems : (b+1)*q2_KElems]
		d, dmin := f16At(blk, 80), f16At(blk, 82)
		scales := blk[0:16]
		for h := range 2 {
			q := blk[16+32*h : 16+32*h+32]
			for g := range 4 {
				shift := 2 * g
				// Two sub-blocks per group: q[0:16] and q[16:32].
				for k := range 2 {
					sc := scales[8*h+2*g+k]
					dl, ml := d*float32(sc&0xf), dmin*float32(sc>>4)
					out := y[128*h+32*g+16*k : 128*h+32*g+16*k+16]
					for l := range 16 {
						out[l] = dl*float32(q[16*k+l]>>shift&3) - ml
					}
				}
			}
		}
	}
}

// quantizeQ2_K follows quantize_row_q2_K_ref: each 16-element sub-block gets
// a scale and min from makeQKX2Quants (weights |x|, absolute error), both
// are quantized to 4 bits against their maxima, and the elements are
// requantized against the rounded values.
func quantizeQ2_K(src []float32, dst []byte) {
	for b := range len(src) / q2_KElems {
		x := src[b*q2_KElems : (b+1)*q2_KElems]
		blk := dst[b*q2_KBytes : (b+1)*q2_KBytes]

		var L [256]uint8
		var laux [16]uint8
		var weights, scales, mins [16]float32
		var maxScale, maxMin float32
		for j := range 16 {
			xs := x[16*j : 16*j+16]
			for l, v := range xs {
				weights[l] = abs32(v)
			}
			scales[j], mins[j] = makeQKX2Quants(3, xs, weights[:], L[16*j:16*j+16], laux[:], -0.5, 0.1, 15, true)
			maxScale = max(maxScale, scales[j])
			maxMin = max(maxMin, mins[j])
		}

		sc := blk[0:16]
		clear(sc)
		var d, dmin float32
		if maxScale > 0 {
			iscale := 15 / maxScale
			for j := range 16 {
				sc[j] = byte(clampInt(nearestInt(iscale*scales[j]), 0, 15))
			}
			d = maxScale / 15
		}
		if maxMin > 0 {
			iscale := 15 / maxMin
			for j := range 16 {
				sc[j] |= byte(clampInt(nearestInt(iscale*mins[j]), 0, 15)) << 4
			}
			dmin = maxMin / 15
		}
		d = putF16(blk, 80, d)
		dmin = putF16(blk, 82, dmin)

		for j := range 16 {
			dj := d * float32(sc[j]&0xf)
			if dj == 0 {
				continue
			}
			dm := float32(dmin * float32(sc[j]>>4))
			for i, v := range x[16*j : 16*j+16] {
				L[16*j+i] = uint8(clampInt(nearestInt((v+dm)/dj), 0, 3))
			}
		}
		packQ2Bits(blk[16:80], &L)
	}
}

// packQ2Bits stores 256 2-bit values into 64 bytes in the Q2_K/Q3_K order:
// value 128h+32g+l goes to bits 2g..2g+1 of byte 32h+l.
func packQ2Bits(qs []byte, L *[256]uint8) {
	for h := range 2 {
		for l := range 32 {
			e := 128*h + l
			qs[32*h+l] = L[e] | L[e+32]<<2 | L[e+64]<<4 | L[e+96]<<6
		}
	}
}
