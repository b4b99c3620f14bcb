package gguf

import "encoding/binary"

// The 4-bit non-linear types: each 4-bit code indexes IQ4NLValues, a table
// of 16 levels spaced for a bell-shaped distribution, times a scale.
//
// IQ4_NL block (ggml block_iq4_nl): 32 elements in 18 bytes.
//
//	off  size  field
//	  0     2  d    half scale
//	  2    16  qs   codes: qs[j] holds element j in its low nibble and
//	                element j+16 in its high nibble (Q4_0's order)
//
// element = d · IQ4NLValues[code].
//
// IQ4_XS block (ggml block_iq4_xs): 256 elements in 136 bytes, eight
// sub-blocks of 32 with 6-bit scales.
//
//	off  size  field
//	  0     2  d         half super-block scale
//	  2     2  scales_h  the high two bits of sub-block ib's scale at 2ib
//	  4     4  scales_l  the low four: sub-block ib's in nibble ib%2 of
//	                     byte ib/2
//	  8   128  qs        sub-block ib's codes in qs[16ib … 16ib+15], as
//	                     IQ4_NL's
//
// element = d · (scale - 32) · IQ4NLValues[code].
const (
	iq4NLElems = 32
	iq4NLBytes = 18
	iq4XSElems = 256
	iq4XSBytes = 136
)

// IQ4NLValues are the 16 levels of the IQ4_NL and IQ4_XS codes (ggml's
// kvalues_iq4nl), in increasing order.
var IQ4NLValues = [16]int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

// IQ4XSScale returns the 6-bit scale (0-63, ggml's less 32) of sub-block
// ib of the IQ4_XS block blk.
func IQ4XSScale(blk []byte, ib int) int {
	h := binary.LittleEndian.Uint16(blk[2:])
	return int(blk[4+ib/2]>>(4*(ib%2))&0xf) | int(h>>(2*ib)&3)<<4
}

func dequantizeIQ4_NL(src []byte, dst []float32) {
	for b := range len(dst) / iq4NLElems {
		blk := src[b*iq4NLBytes : (b+1)*iq4NLBytes]
		y := dst[b*iq4NLElems : (b+1)*iq4NLElems]
		d := f16At(blk, 0)
		for j, q := range blk[2:] {
			y[j] = d * float32(IQ4NLValues[q&0xf])
			y[j+16] = d * float32(IQ4NLValues[q>>4])
		}
	}
}

func dequantizeIQ4_XS(src []byte, dst []float32) {
	for b := range len(dst) / iq4XSElems {
		blk := src[b*iq4XSBytes : (b+1)*iq4XSBytes]
		y := dst[b*iq4XSElems : (b+1)*iq4XSElems]
		d := f16At(blk, 0)
		for ib := range 8 {
			dl := d * float32(IQ4XSScale(blk, ib)-32)
			for j, q := range blk[8+16*ib : 24+16*ib] {
				y[32*ib+j] = dl * float32(IQ4NLValues[q&0xf])
				y[32*ib+j+16] = dl * float32(IQ4NLValues[q>>4])
			}
		}
	}
}

// quantizeIQ4_NL follows ggml's quantize_iq4_nl without an importance
// matrix, as llama-quantize runs it: iq4Block on each block of 32.
func quantizeIQ4_NL(src []float32, dst []byte) {
	for b := range len(src) / iq4NLElems {
		blk := dst[b*iq4NLBytes : (b+1)*iq4NLBytes]
		var L [iq4NLElems]uint8
		x := src[b*iq4NLElems : (b+1)*iq4NLElems]
		d := iq4Scale(x, L[:])
		binary.LittleEndian.PutUint16(blk, F32ToF16(d))
		id := float32(0)
		if d != 0 {
			id = 1 / d
		}
		for j, v := range x {
			L[j] = iq4Index(id * v)
		}
		iq4Pack(blk[2:], L[:])
	}
}

// quantizeIQ4_XS follows ggml's quantize_iq4_xs without an importance
// matrix: each sub-block's best scale (iq4Scale), the scales quantized to
// six bits against the one of largest magnitude, and the codes chosen
// again for the rounded scales.
func quantizeIQ4_XS(src []float32, dst []byte) {
	for b := range len(src) / iq4XSElems {
		blk := dst[b*iq4XSBytes : (b+1)*iq4XSBytes]
		x := src[b*iq4XSElems : (b+1)*iq4XSElems]
		var L [iq4XSElems]uint8
		var scales [8]float32
		var maxScale, amaxScale float32
		for ib := range 8 {
			scales[ib] = iq4Scale(x[32*ib:32*ib+32], L[32*ib:32*ib+32])
			if a := abs32(scales[ib]); a > amaxScale {
				amaxScale, maxScale = a, scales[ib]
			}
		}
		d := -maxScale / 32
		binary.LittleEndian.PutUint16(blk, F32ToF16(d))
		id := float32(0)
		if d != 0 {
			id = 1 / d
		}
		var sh uint16
		clear(blk[4:8])
		for ib := range 8 {
			l := clampInt(nearestInt(id*scales[ib]), -32, 31)
			dl := d * float32(l)
			idl := float32(0)
			if dl != 0 {
				idl = 1 / dl
			}
			for j, v := range x[32*ib : 32*ib+32] {
				L[32*ib+j] = iq4Index(idl * v)
			}
			l += 32
			blk[4+ib/2] |= byte(l&0xf) << (4 * (ib % 2))
			sh |= uint16(l>>4) << (2 * ib)
		}
		binary.LittleEndian.PutUint16(blk[2:], sh)
		for ib := range 8 {
			iq4Pack(blk[8+16*ib:24+16*ib], L[32*ib:32*ib+32])
		}
	}
}

// iq4Scale is the scale search of ggml's quantize_row_iq4_nl_impl (ntry
// 7, each element weighted by its square) for one block of 32: the codes
// for d = -max/IQ4NLValues[0] and the least-squares scale they give, then
// 15 more candidate scales around it, keeping the one of least weighted
// error. It leaves the codes of the first in L and returns the scale (0
// for a block of magnitudes below 1e-15).
func iq4Scale(x []float32, L []uint8) float32 {
	var amax, vmax float32
	for _, v := range x {
		if a := abs32(v); a > amax {
			amax, vmax = a, v
		}
	}
	if amax < 1e-15 {
		return 0
	}
	v0 := float32(IQ4NLValues[0])
	d := -vmax / v0
	id := 1 / d
	sums := func(id float32, keep bool) (sumqx, sumq2 float32) {
		for j, v := range x {
			l := iq4Index(id * v)
			if keep {
				L[j] = l
			}
			q := float32(IQ4NLValues[l])
			wq := float32(float32(v*v) * q)
			sumqx += float32(wq * v)
			sumq2 += float32(wq * q)
		}
		return sumqx, sumq2
	}
	sumqx, sumq2 := sums(id, true)
	d = sumqx / sumq2
	best := d * sumqx
	for itry := -7; itry <= 7; itry++ {
		id = float32(itry+int(IQ4NLValues[0])) / vmax
		sqx, sq2 := sums(id, false)
		if sq2 > 0 && float32(sqx*sqx) > float32(best*sq2) {
			d = sqx / sq2
			best = d * sqx
		}
	}
	return d
}

// iq4Index is ggml's best_index_int8 over IQ4NLValues: the code of the
// level nearest x, the lower one on a tie.
func iq4Index(x float32) uint8 {
	v := &IQ4NLValues
	if x <= float32(v[0]) {
		return 0
	}
	if x >= float32(v[15]) {
		return 15
	}
	lo, hi := 0, 15
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if x < float32(v[mid]) {
			hi = mid
		} else {
			lo = mid
		}
	}
	if x-float32(v[hi-1]) < float32(v[hi])-x {
		return uint8(hi - 1)
	}
	return uint8(hi)
}

// iq4Pack writes 32 codes as IQ4_NL's 16 bytes: code j in the low nibble
// of byte j, code j+16 in its high nibble.
func iq4Pack(qs []byte, L []uint8) {
	for j := range 16 {
		qs[j] = L[j] | L[j+16]<<4
	}
}
