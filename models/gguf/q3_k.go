package gguf

// Q3_K super-block (ggml block_q3_K): 256 elements in 110 bytes, as 16
// sub-blocks of 16 elements, each with a 6-bit signed scale.
//
//	off  size  field
//	  0    32  hmask   high (third) bits: bit g of hmask[l] belongs to element 32g+l
//	 32    64  qs      low 2 bits, four per byte, in Q2_K's order
//	 96    12  scales  16 scales, 6 bits each, biased by 32 (see q3KScales)
//	108     2  d       fp16 super-block scale
//
// Element e takes its low bits from qs (bits 2g..2g+1 of qs[32h+l] for
// e = 128h+32g+l) and its high bit from hmask[e%32] bit e/32. The quant is
// the low bits minus 4 when the high bit is clear, so q is in [-4, 3].
// Element e = d * (scale[e/16]-32) * q.
const (
	q3_KElems = 256
	q3_KBytes = 32 + 64 + 12 + 2
)

// q3KScales unpacks the 16 6-bit scales of a Q3_K block, minus their bias of
// 32. Scale j keeps its low 4 bits in the low nibble of s[j] for j < 8 and in
// the high nibble of s[j-8] for j >= 8, and its high 2 bits in bits
// 2*(j/4)..2*(j/4)+1 of s[8+j%4]. (ggml's dequantize_row_q3_K does the same
// with 32-bit masks, kmask1 and kmask2.)
func q3KScales(s []byte) (sc [16]int8) {
	for j := range 16 {
		lo := s[j%8] >> (4 * (j / 8)) & 0xf
		hi := s[8+j%4] >> (2 * (j / 4)) & 3
		sc[j] = int8(lo|hi<<4) - 32
	}
	return sc
}

// putQ3KScales packs 16 biased scales (each < 64), the inverse of q3KScales.
func putQ3KScales(s []byte, ls *[16]uint8) {
	clear(s[:12])
	for j, l := range ls {
		s[j%8] |= (l & 0xf) << (4 * (j / 8))
		s[8+j%4] |= (l >> 4) << (2 * (j / 4))
	}
}

func dequantizeQ3_K(src []byte, dst []float32) {
	for b := range len(dst) / q3_KElems {
		blk := src[b*q3_KBytes : (b+1)*q3_KBytes]
		y := dst[b*q3_KElems : (b+1)*q3_KElems]
		d := f16At(blk, 108)
		scales := q3KScales(blk[96:108])
		hmask := blk[0:32]
		for h := range 2 {
			q := blk[32+32*h : 32+32*h+32]
			for g := range 4 {
				shift := 2 * g
				bit := byte(1) << (4*h + g)
				// Two sub-blocks per group: q[0:16] and q[16:32].
				for k := range 2 {
					dl := d * float32(scales[8*h+2*g+k])
					out := y[128*h+32*g+16*k : 128*h+32*g+16*k+16]
					for l := range 16 {
						v := int(q[16*k+l] >> shift & 3)
						if hmask[16*k+l]&bit == 0 {
							v -= 4
						}
						out[l] = dl * float32(v)
					}
				}
			}
		}
	}
}

// quantizeQ3_K follows quantize_row_q3_K_ref: each 16-element sub-block gets
// a signed scale from makeQ3Quants, the 16 scales are quantized to 6 bits
// against the one of largest magnitude (which maps to -32), and the elements
// are requantized against the rounded scales.
func quantizeQ3_K(src []float32, dst []byte) {
	for b := range len(src) / q3_KElems {
		x := src[b*q3_KElems : (b+1)*q3_KElems]
		blk := dst[b*q3_KBytes : (b+1)*q3_KBytes]

		var L [256]uint8 // quants biased by 4, in [0, 7]
		var scales [16]float32
		var maxScale, amax float32
		for j := range 16 {
			scales[j] = makeQ3Quants(4, x[16*j:16*j+16], L[16*j:16*j+16])
			if a := abs32(scales[j]); a > amax {
				amax, maxScale = a, scales[j]
			}
		}

		// With no signal, ggml leaves the scales bytes zero (every scale -32)
		// and d = 0; the block decodes to zeros all the same.
		var ls [16]uint8
		var d float32
		if maxScale != 0 {
			iscale := -32 / maxScale
			for j := range 16 {
				ls[j] = uint8(clampInt(nearestInt(iscale*scales[j]), -32, 31) + 32)
			}
			d = 1 / iscale
		}
		putQ3KScales(blk[96:108], &ls)
		d = putF16(blk, 108, d)

		sc := q3KScales(blk[96:108])
		for j := range 16 {
			dj := d * float32(sc[j])
			if dj == 0 {
				continue
			}
			for i, v := range x[16*j : 16*j+16] {
				L[16*j+i] = uint8(clampInt(nearestInt(v/dj), -4, 3) + 4)
			}
		}

		hmask := blk[0:32]
		clear(hmask)
		for e := range L {
			if L[e] > 3 {
				hmask[e%32] |= 1 << (e / 32)
				L[e] -= 4
			}
		}
		packQ2Bits(blk[32:96], &L)
	}
}

// makeQ3Quants fits x ≈ scale*(L-nmax) with L-nmax in [-nmax, nmax-1],
// weighting each element by x², as ggml's make_q3_quants with do_rmse
// does: the element of largest magnitude maps to -nmax, then up to 5 passes
// move single quants wherever that lowers the weighted error of the
// least-squares scale. The returned scale is signed. L receives the biased
// quants.
func makeQ3Quants(nmax int, x []float32, L []uint8) float32 {
	var vmax, amax float32
	for _, v := range x {
		if a := abs32(v); a > amax {
			amax, vmax = a, v
		}
	}
	if amax < groupMaxEps {
		clear(L)
		return 0
	}

	iscale := float32(-nmax) / vmax
	var q [16]int // unbiased quants; Q3_K sub-blocks have 16 elements
	var sumLX, sumL2 float32
	for i, v := range x {
		l := clampInt(nearestInt(iscale*v), -nmax, nmax-1)
		q[i] = l
		w := v * v
		sumLX += float32(w * v * float32(l))
		sumL2 += float32(w * float32(l) * float32(l))
	}
	for range 5 {
		changed := 0
		for i, v := range x {
			w := v * v
			slx := sumLX - float32(w*v*float32(q[i]))
			if slx <= 0 {
				continue
			}
			sl2 := sumL2 - float32(w*float32(q[i])*float32(q[i]))
			newL := clampInt(nearestInt(v*sl2/slx), -nmax, nmax-1)
			if newL == q[i] {
				continue
			}
			slx += float32(w * v * float32(newL))
			sl2 += float32(w * float32(newL) * float32(newL))
			if sl2 > 0 && slx*slx*sumL2 > sumLX*sumLX*sl2 {
				q[i], sumLX, sumL2 = newL, slx, sl2
				changed++
			}
		}
		if changed == 0 {
			break
		}
	}
	for i, l := range q {
		L[i] = uint8(l + nmax)
	}
	if sumL2 > 0 {
		return sumLX / sumL2
	}
	return 0
}
