package gguf

// Q6_K super-block (ggml block_q6_K): 256 elements in 210 bytes, as 16
// sub-blocks of 16 elements, each with an 8-bit signed scale.
//
//	off  size  field
//	  0   128  ql      low 4 bits of the quants, two per byte
//	128    64  qh      high 2 bits of the quants, four per byte
//	192    16  scales  int8 sub-block scales
//	208     2  d       fp16 super-block scale
//
// Each half h (elements 128h..128h+127) uses ql[64h..64h+63] and
// qh[32h..32h+31]. For l in 0..31 and g in 0..3, element 128h+32g+l takes
// its low bits from ql[64h+l+32*(g&1)] (low nibble for g < 2, high nibble
// for g >= 2) and its high bits from bits 2g..2g+1 of qh[32h+l].
// Element e = d * scales[e/16] * (q - 32) with q in [0, 63].
const (
	q6_KElems = 256
	q6_KBytes = 128 + 64 + 16 + 2
)

func dequantizeQ6_K(src []byte, dst []float32) {
	for b := range len(dst) / q6_KElems {
		blk := src[b*q6_KBytes : (b+1)*q6_KBytes]
		y := dst[b*q6_KElems : (b+1)*q6_KElems]
		d := f16At(blk, 208)
		for h := range 2 {
			ql := blk[64*h : 64*h+64]
			qh := blk[128+32*h : 128+32*h+32]
			sc := blk[192+8*h : 192+8*h+8]
			out := y[128*h : 128*h+128]
			for l := range 32 {
				is := l / 16
				q1 := int(ql[l]&0xf|(qh[l]>>0&3)<<4) - 32
				q2 := int(ql[l+32]&0xf|(qh[l]>>2&3)<<4) - 32
				q3 := int(ql[l]>>4|(qh[l]>>4&3)<<4) - 32
				q4 := int(ql[l+32]>>4|(qh[l]>>6&3)<<4) - 32
				out[l] = d * float32(int8(sc[is])) * float32(q1)
				out[l+32] = d * float32(int8(sc[is+2])) * float32(q2)
				out[l+64] = d * float32(int8(sc[is+4])) * float32(q3)
				out[l+96] = d * float32(int8(sc[is+6])) * float32(q4)
			}
		}
	}
}

// quantizeQ6_K follows quantize_row_q6_K_ref: each 16-element sub-block
// gets a signed scale from makeQXQuants (weights x²), the 16 scales are
// quantized to int8 against the one of largest magnitude (which maps to
// -128), and the elements are requantized against the rounded scales.
func quantizeQ6_K(src []float32, dst []byte) {
	for b := range len(src) / q6_KElems {
		x := src[b*q6_KElems : (b+1)*q6_KElems]
		blk := dst[b*q6_KBytes : (b+1)*q6_KBytes]

		var L [256]uint8 // quants biased by 32, in [0, 63]
		var scales [16]float32
		var maxScale, maxAbsScale float32
		for ib := range 16 {
			scales[ib] = makeQXQuants(32, x[16*ib:16*ib+16], L[16*ib:16*ib+16])
			if a := abs32(scales[ib]); a > maxAbsScale {
				maxAbsScale, maxScale = a, scales[ib]
			}
		}
		if maxAbsScale < groupMaxEps {
			clear(blk) // all quants 0 with d = +0 decode to zeros
			continue
		}

		iscale := -128 / maxScale
		d := putF16(blk, 208, 1/iscale)
		for ib := range 16 {
			blk[192+ib] = byte(int8(clampInt(nearestInt(iscale*scales[ib]), -128, 127)))
		}
		for j := range 16 {
			dj := d * float32(int8(blk[192+j]))
			if dj == 0 {
				continue
			}
			for i, v := range x[16*j : 16*j+16] {
				L[16*j+i] = uint8(clampInt(nearestInt(v/dj), -32, 31) + 32)
			}
		}

		for h := range 2 {
			ql, qh, Lh := blk[64*h:64*h+64], blk[128+32*h:128+32*h+32], L[128*h:128*h+128]
			for l := range 32 {
				q1, q2, q3, q4 := Lh[l], Lh[l+32], Lh[l+64], Lh[l+96]
				ql[l] = q1&0xf | (q3&0xf)<<4
				ql[l+32] = q2&0xf | (q4&0xf)<<4
				qh[l] = q1>>4 | q2>>4<<2 | q3>>4<<4 | q4>>4<<6
			}
		}
	}
}

// makeQXQuants fits x ≈ scale*(L-nmax) with L-nmax in [-nmax, nmax-1],
// weighting each element by x², as ggml's make_qx_quants with rmse_type 1
// does: the element of largest magnitude maps to -nmax, then 18 nearby grid
// sizes are tried, each with a least-squares scale, keeping the best. The
// returned scale is signed (opposite in sign to that element). L receives
// the biased quants.
func makeQXQuants(nmax int, x []float32, L []uint8) float32 {
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

	// fit quantizes x on the grid iscale and returns the weighted sums of
	// x*l and l*l, storing the biased quants in L when L is not nil.
	fit := func(iscale float32, L []uint8) (sumLX, sumL2 float32) {
		for i, v := range x {
			l := clampInt(nearestInt(iscale*v), -nmax, nmax-1)
			if L != nil {
				L[i] = uint8(l + nmax)
			}
			w := v * v
			sumLX += float32(w * v * float32(l))
			sumL2 += float32(w * float32(l) * float32(l))
		}
		return sumLX, sumL2
	}

	sumLX, sumL2 := fit(float32(-nmax)/vmax, L)
	var scale float32
	if sumL2 != 0 {
		scale = sumLX / sumL2
	}
	best := scale * sumLX
	for is := -9; is <= 9; is++ {
		if is == 0 {
			continue
		}
		iscale := -(float32(nmax) + float32(0.1*float32(is))) / vmax
		sumLX, sumL2 = fit(iscale, nil)
		if sumL2 > 0 && sumLX*sumLX > best*sumL2 {
			fit(iscale, L)
			scale = sumLX / sumL2
			best = scale * sumLX
		}
	}
	return scale
}
