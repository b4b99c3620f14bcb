package gguf

// Q4_K super-block (ggml block_q4_K): 256 elements in 144 bytes, as 8
// sub-blocks of 32 elements, each with its own 6-bit scale and 6-bit min.
//
//	off  size  field
//	  0     2  d       fp16 super-block scale of the sub-block scales
//	  2     2  dmin    fp16 super-block scale of the sub-block mins
//	  4    12  scales  8 scales and 8 mins, 6 bits each (see scaleMinK4)
//	 16   128  qs      4-bit quants, two per byte
//
// Elements 64p..64p+63 (p = 0..3) live in qs[32p..32p+31]: element 64p+l in
// the low nibble of qs[32p+l] and element 64p+32+l in its high nibble, so
// sub-block 2p is the low nibbles and sub-block 2p+1 the high ones.
// Element = d*sc[s]*q - dmin*m[s] for its sub-block s.
const (
	q4_KElems = 256
	q4_KBytes = 2 + 2 + 12 + 128
)

// scaleMinK4 unpacks the 6-bit scale and min of sub-block j (0..7) from the
// 12 scales bytes shared by Q4_K and Q5_K (ggml's get_scale_min_k4):
//
//	bytes 0..3:  scale j (j<4) in bits 0..5; bits 6..7 are the top of scale j+4
//	bytes 4..7:  min j   (j<4) in bits 0..5; bits 6..7 are the top of min j+4
//	bytes 8..11: low 4 bits of scale j+4 (bits 0..3) and of min j+4 (bits 4..7)
func scaleMinK4(j int, s []byte) (sc, m uint8) {
	if j < 4 {
		return s[j] & 63, s[j+4] & 63
	}
	sc = s[j+4]&0xf | s[j-4]>>6<<4
	m = s[j+4]>>4 | s[j]>>6<<4
	return sc, m
}

// putScaleMinK4 packs 8 scales and 8 mins (each < 64) into s, the inverse of
// scaleMinK4.
func putScaleMinK4(s []byte, sc, m *[8]uint8) {
	for j := range 4 {
		s[j] = sc[j] | sc[j+4]>>4<<6
		s[j+4] = m[j] | m[j+4]>>4<<6
		s[j+8] = sc[j+4]&0xf | m[j+4]&0xf<<4
	}
}

func dequantizeQ4_K(src []byte, dst []float32) {
	for b := range len(dst) / q4_KElems {
		blk := src[b*q4_KBytes : (b+1)*q4_KBytes]
		y := dst[b*q4_KElems : (b+1)*q4_KElems]
		d, dmin := f16At(blk, 0), f16At(blk, 2)
		scales, qs := blk[4:16], blk[16:]
		for p := range 4 {
			sc1, m1 := scaleMinK4(2*p, scales)
			sc2, m2 := scaleMinK4(2*p+1, scales)
			d1, min1 := d*float32(sc1), dmin*float32(m1)
			d2, min2 := d*float32(sc2), dmin*float32(m2)
			q, out := qs[32*p:32*p+32], y[64*p:64*p+64]
			for l, v := range q {
				out[l] = d1*float32(v&0xf) - min1
				out[l+32] = d2*float32(v>>4) - min2
			}
		}
	}
}

// quantizeQ4_K follows quantize_row_q4_K_ref: each 32-element sub-block gets
// a scale and min from makeQKX2Quants (weighted by the sub-block's RMS plus
// |x|), the 8 scales and 8 mins are quantized to 6 bits against their
// maxima, and the elements are requantized against the rounded scales.
func quantizeQ4_K(src []float32, dst []byte) {
	for b := range len(src) / q4_KElems {
		x := src[b*q4_KElems : (b+1)*q4_KElems]
		blk := dst[b*q4_KBytes : (b+1)*q4_KBytes]

		var L [256]uint8
		lsc, lm, d, dmin := kQuantScalesMins(x, 15, -1, 0.1, 20, L[:])
		putScaleMinK4(blk[4:16], &lsc, &lm)
		d = putF16(blk, 0, d)
		dmin = putF16(blk, 2, dmin)
		kRequantize(x, 15, d, dmin, blk[4:16], L[:])

		qs := blk[16:]
		for p := range 4 {
			for l := range 32 {
				qs[32*p+l] = L[64*p+l] | L[64*p+32+l]<<4
			}
		}
	}
}

// kQuantScalesMins is the first half of ggml's reference Q4_K and Q5_K
// quantizers: per 32-element sub-block, makeQKX2Quants finds a scale and a
// min (and quants into L, kept where a rounded scale is zero); the scales and
// mins are then quantized to 6 bits (lsc, lm) against their maxima, whose
// ratios to 63 are the super-block scales d and dmin (not yet rounded to
// fp16).
func kQuantScalesMins(x []float32, nmax int, rmin, rdelta float32, nstep int,
	L []uint8) (lsc, lm [8]uint8, d, dmin float32) {
	var scales, mins [8]float32
	var weights [32]float32
	var laux [32]uint8
	var maxScale, maxMin float32
	for j := range 8 {
		xs := x[32*j : 32*j+32]
		var sumX2 float32
		for _, v := range xs {
			sumX2 += float32(v * v)
		}
		avX := sqrt32(sumX2 / 32)
		for l, v := range xs {
			weights[l] = avX + abs32(v)
		}
		scales[j], mins[j] = makeQKX2Quants(nmax, xs, weights[:], L[32*j:32*j+32], laux[:], rmin, rdelta, nstep, false)
		if scales[j] > maxScale {
			maxScale = scales[j]
		}
		if mins[j] > maxMin {
			maxMin = mins[j]
		}
	}

	var invScale, invMin float32
	if maxScale > 0 {
		invScale = 63 / maxScale
	}
	if maxMin > 0 {
		invMin = 63 / maxMin
	}
	for j := range 8 {
		lsc[j] = uint8(clampInt(nearestInt(invScale*scales[j]), 0, 63))
		lm[j] = uint8(clampInt(nearestInt(invMin*mins[j]), 0, 63))
	}
	return lsc, lm, maxScale / 63, maxMin / 63
}

// kRequantize recomputes the quants L (each in [0, nmax]) of the 8
// sub-blocks of x against the scales and mins as stored: d and dmin as the
// halves decode, times the 6-bit values packed in scales. A sub-block whose
// stored scale is zero keeps the quants it had.
func kRequantize(x []float32, nmax int, d, dmin float32, scales []byte, L []uint8) {
	for j := range 8 {
		sc, m := scaleMinK4(j, scales)
		dj := d * float32(sc)
		if dj == 0 {
			continue
		}
		dm := float32(dmin * float32(m))
		for i, v := range x[32*j : 32*j+32] {
			L[32*j+i] = uint8(clampInt(nearestInt((v+dm)/dj), 0, nmax))
		}
	}
}

// makeQKX2Quants fits x ≈ scale*L - theMin with L in [0, nmax], minimizing
// the weighted error (absolute if useMAD, else squared), as ggml's
// make_qkx2_quants does: start from the min/max grid, then try nstep+1
// slightly different grid sizes (nmax + rmin + rdelta*is), each followed by
// a weighted least-squares fit of scale and min, keeping the best. The
// offset is never positive (theMin >= 0), so zero stays representable.
// laux is scratch of len(x). Used by Q2_K, Q4_K and Q5_K.
func makeQKX2Quants(nmax int, x, weights []float32, L, laux []uint8,
	rmin, rdelta float32, nstep int, useMAD bool) (scale, theMin float32) {
	vmin, vmax := x[0], x[0]
	sumW := weights[0]
	sumX := sumW * x[0]
	for i := 1; i < len(x); i++ {
		if x[i] < vmin {
			vmin = x[i]
		}
		if x[i] > vmax {
			vmax = x[i]
		}
		sumW += weights[i]
		sumX += float32(weights[i] * x[i])
	}
	if vmin > 0 {
		vmin = 0
	}
	if vmax == vmin {
		clear(L)
		return 0, -vmin
	}

	errOf := func(scale, off float32, L []uint8) float32 {
		var e float32
		for i, v := range x {
			diff := float32(scale*float32(L[i])) + off - v
			if useMAD {
				diff = abs32(diff)
			} else {
				diff *= diff
			}
			e += float32(weights[i] * diff)
		}
		return e
	}

	iscale := float32(nmax) / (vmax - vmin)
	scale = 1 / iscale
	for i, v := range x {
		L[i] = uint8(clampInt(nearestInt(iscale*(v-vmin)), 0, nmax))
	}
	bestErr := errOf(scale, vmin, L)

	for is := 0; is <= nstep; is++ {
		iscale = (rmin + float32(rdelta*float32(is)) + float32(nmax)) / (vmax - vmin)
		var sumL, sumL2, sumXL float32
		for i, v := range x {
			l := clampInt(nearestInt(iscale*(v-vmin)), 0, nmax)
			laux[i] = uint8(l)
			w := weights[i]
			sumL += float32(w * float32(l))
			sumL2 += float32(w * float32(l) * float32(l))
			sumXL += float32(w * float32(l) * v)
		}
		D := float32(sumW*sumL2) - float32(sumL*sumL)
		if D <= 0 {
			continue
		}
		thisScale := (float32(sumW*sumXL) - float32(sumX*sumL)) / D
		thisMin := (float32(sumL2*sumX) - float32(sumL*sumXL)) / D
		if thisMin > 0 {
			thisMin = 0
			thisScale = sumXL / sumL2
		}
		if e := errOf(thisScale, thisMin, laux); e < bestErr {
			copy(L, laux)
			bestErr = e
			scale, vmin = thisScale, thisMin
		}
	}
	return scale, -vmin
}
