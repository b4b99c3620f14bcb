package cpu

import (
	"encoding/binary"
	"math"

	"folio/models/gguf"
)

// Q4_0, Q4_1, IQ4_NL, IQ4_XS, MXFP4, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_0, F16 and BF16 weights are repacked once, in Weight, into
// groups of packRows rows whose blocks are interleaved, so that the kernels
// (simd_packed.c, simd_packed_f16.c) hold one weight row per 32-bit lane
// and broadcast the activations: a block's scales then cost one vector op
// for 16 rows, the 4-bit quants of 16 rows unpack with three vector ops
// per 64 bytes, and one conversion of 16 rows' halves feeds an FMA per
// activation row. This is what llama.cpp's REPACK does (q4_0_8x8,
// q4_K_8x8) for the same reason. The copy is as large as the weight
// (Q4_K's 2.8% more, below; F16's rows padded to 32 columns), and it
// replaces the mmap'd bytes, whose pages the loader releases: Embed
// decodes its rows too (unpack.go). A group past the last row is padded with zero rows, whose sums
// the kernels never store.
//
// Q4_0, per group of blocks blocks: the quants of every block, then the
// scales of every block (so that the quants' vectors stay 64-byte aligned),
// q4_0PackBytes = 16 · 18 bytes a block:
//
//	qs[blocks][4][64] block b's vector j, lane r: bytes 4j … 4j+3 of row
//	                  r's 16 quant bytes; low nibbles are elements
//	                  4j … 4j+3, high nibbles 16+4j … 16+4j+3.
//	d[blocks][16]     block b's scales (halves).
//
// Q4_K, per group and 256-element super-block, q4KPackBytes = 16 · 148:
//
//	d[16], dmin[16]  halves
//	sc[8][16]        sub-block j's 6-bit scale of row r, a byte
//	mins[4][16][2]   vector p, lane r: the mins of sub-blocks 2p, 2p+1
//	qs[4][8][64]     vector (p, j), lane r: bytes 32p+4j … 32p+4j+3 of row
//	                 r's quants: sub-block 2p's elements 4j … 4j+3 in the
//	                 low nibbles, sub-block 2p+1's in the high ones.
//
// Q5_0, per group of blocks blocks, q5_0PackBytes = 16 · 22 bytes a block
// (Q5_0, Q5_1, Q4_1, Q2_K, Q3_K, Q5_K, IQ4_NL and IQ4_XS have no unpacked
// x86 kernels, only NEON ones):
//
//	blk[blocks]       320 bytes a block: its quants' low four bits as Q4_0's
//	                  qs[4][64], then qh[64]: lane r, the fifth bits of row
//	                  r's elements, bit 2j of byte i element 4j+i's and bit
//	                  2j+1 element 16+4j+i's (vector j's byte i, each
//	                  nibble's fifth bit where a shift moves it to bit 4).
//	d[blocks][16]     block b's scales (halves).
//
// Q5_K, per group and super-block, q5KPackBytes = 16 · 180: Q4_K's 2368
// bytes (its quants' low four bits), then
//
//	qh[8][64]        vector t, lane r: bytes 4t … 4t+3 of row r's fifth
//	                 bits: bit j of byte i is sub-block j's element 4t+i's
//	                 (sub-block j's elements 4t … 4t+3 are Q4_K's vector
//	                 (j/2, t), in its low or high nibbles).
//
// Q4_1 and Q5_1, as Q4_0 and Q5_0, then each block's min (halves,
// m[blocks][16]) after the scales: q4_1PackBytes = 16 · 20, q5_1PackBytes =
// 16 · 24 bytes a block.
//
// IQ4_NL, as Q4_0 (its blocks are a half d and 16 bytes of codes too); the
// kernels are Q8_0's, on the codes looked up in the IQ4_NL table. IQ4_XS
// as IQ4_NL, each sub-block of 32 a block, its scale d·(scale−32) made
// by the kernels from its super-block's half and its int8 scale (the
// float32 product gguf.Dequantize takes), iq4XSPackBytes = 16 · 17.25
// bytes a block (the file's 17 and the halves' alignment):
//
//	qs[blocks][4][64] as Q4_0's.
//	d[blocks/8][16]   super-block s's halves.
//	sc[blocks][16]    block b's scales less 32 (int8).
//
// MXFP4 as IQ4_NL, each block's scale its E8M0 byte, which the kernels
// turn into its power of two halved (the codes' values are doubled:
// gguf.E8M0Half), mxfp4PackBytes = 16 · 17 bytes a block, the file's:
//
//	qs[blocks][4][64] as Q4_0's.
//	e[blocks][16]     block b's E8M0 scales.
//
// Q8_0, per group of blocks blocks, as Q4_0's, q8_0PackBytes = 16 · 34
// bytes a block:
//
//	qs[blocks][8][64] block b's vector j, lane r: quants 4j … 4j+3 of row r.
//	d[blocks][16]     block b's scales (halves).
//
// Q6_K, per group and 256-element super-block,
// q6KPackBytes = 16 · 212, a row's quants q (0-63, ggml's q+32) split into
// their low four bits and their high two:
//
//	ql[8][4][64]  vector (p, j), lane r: bytes 4j … 4j+3 of sub-blocks 2p
//	              and 2p+1 of row r: the low bits of sub-block 2p's
//	              elements 4j … 4j+3 in the low nibbles, 2p+1's in the
//	              high ones.
//	qh[4][4][64]  vector (u, j), lane r: bits 2m, 2m+1 of byte 4j+i are
//	              the high bits of sub-block 4u+m's element 4j+i.
//	sc[8][16][2]  pair p, row r: the int8 scales of sub-blocks 2p, 2p+1.
//	d[16]         float32 (the half, exactly).
//
// Q3_K, per group and super-block, q3KPackBytes = 16 · 116, a row's
// quants q (0-7, ggml's q+4) split into their low two bits and their
// third, the scales decoded from six bits (ggml's less 32):
//
//	ql[4][4][64]  vector (u, j), lane r: bits 2m, 2m+1 of byte 4j+i are
//	              the low bits of sub-block 4u+m's element 4j+i.
//	qh[2][4][64]  vector (v, j), lane r: bit m of byte 4j+i is the third
//	              bit of sub-block 8v+m's element 4j+i.
//	sc[8][16][2]  pair p, row r: the int8 scales of sub-blocks 2p, 2p+1.
//	d[16]         float32 (the half, exactly).
//
// Q2_K, per group and super-block, q2KPackBytes = 16 · 88:
//
//	q[4][4][64]   Q3_K's ql: the quants (0-3).
//	sm[8][16][2]  pair p, row r: the bytes of sub-blocks 2p, 2p+1 (scale
//	              in the low nibble, min in the high one, as ggml's).
//	d[16], dmin[16] float32 (the halves, exactly).
//
// F16 and BF16, per group of blocks blocks of 32 columns, the
// columns past the last padded with zeros, f16PackBytes = 16 · 64 bytes a
// block:
//
//	w[32·blocks][16] column c's halves (bfloat16s) of rows 0 … 15: 32
//	                 bytes, which vcvtph2ps (a widening and a shift)
//	                 turns into one vector of 16 rows (at AVX2 two of 8).
//
// Every SIMD level reads the same layout (AVX2 a vector's first or second
// 32 bytes: lanes 0-7 or 8-15), so the result of a row never depends on
// which other rows share its group or its batch.
const (
	packRows       = 16
	q4_0PackBytes  = packRows * 18
	q4KPackBytes   = packRows * 148
	q6KPackBytes   = packRows * 212
	q3KPackBytes   = packRows * 116
	q2KPackBytes   = packRows * 88
	iq4XSPackBytes = packRows*17 + packRows/4 // 16 bytes of codes, a byte of scale, an eighth of a half
	mxfp4PackBytes = packRows * 17
	q4_1PackBytes  = packRows * 20
	q5_1PackBytes  = packRows * 24
	q5_0PackBytes  = packRows * 22
	q5KPackBytes   = packRows * 180
	q8_0PackBytes  = packRows * 34
	f16PackBytes   = packRows * 64
)

// packedKind reports whether weights of typ are repacked at level l, and
// the kernel kind they then use.
func packedKind(typ gguf.TensorType, l simdLevel) (kernelKind, bool) {
	l = l.vector()
	kind, ok := kernelFor(typ, l)
	return kind, ok && !l.arm()
}

// packBlockBytes is the bytes of one packed block (or super-block) of
// packRows rows of kind.
func packBlockBytes(kind kernelKind) int {
	switch kind.layout() {
	case kindQ4_K:
		return q4KPackBytes
	case kindQ6_K:
		return q6KPackBytes
	case kindQ3_K:
		return q3KPackBytes
	case kindQ2_K:
		return q2KPackBytes
	case kindIQ4_XS:
		return iq4XSPackBytes
	case kindMXFP4:
		return mxfp4PackBytes
	case kindQ4_1:
		return q4_1PackBytes
	case kindQ5_1:
		return q5_1PackBytes
	case kindQ5_0:
		return q5_0PackBytes
	case kindQ5_K:
		return q5KPackBytes
	case kindQ8_0:
		return q8_0PackBytes
	case kindF16, kindBF16:
		return f16PackBytes
	}
	return q4_0PackBytes
}

// RepackedBytes is the memory Weight allocates, besides the caller's bytes,
// for a rows × cols weight of typ on this machine: the repacked copy of
// every type with packed kernels (all but F32) at x86 levels; 0
// for other types, on arm64 or without SIMD kernels. A loader adds it to
// what it needs in RAM.
func RepackedBytes(typ gguf.TensorType, rows, cols int) int64 {
	kind, ok := packedKind(typ, bestLevel)
	if !ok || rows <= 0 || cols%typ.BlockSize() != 0 {
		return 0
	}
	return packedSize(kind, rows, cols)
}

// packBlockElems is the elements of one of kind's blocks (or
// super-blocks); an F16 row is cut into blocks of 32 columns, its last
// one padded.
func packBlockElems(kind kernelKind) int {
	if kind == kindQ4_K || kind == kindQ5_K || kind == kindQ6_K || kind == kindQ3_K || kind == kindQ2_K {
		return 256
	}
	return 32
}

// packedSize is the bytes of the packed copy of a rows × cols weight.
func packedSize(kind kernelKind, rows, cols int) int64 {
	groups := int64(rows+packRows-1) / packRows
	return groups * int64(groupBytes(kind, packBlocks(kind, cols)))
}

// packBlocks is the blocks (or super-blocks) of a packed row of cols
// elements.
func packBlocks(kind kernelKind, cols int) int {
	e := packBlockElems(kind)
	return (cols + e - 1) / e
}

// groupBytes is the bytes of a packed group of blocks blocks, rounded up
// to 64 so that every group's vectors stay 64-byte aligned (a Q4_0 or
// Q8_0 block's bytes are not a multiple of 64).
func groupBytes(kind kernelKind, blocks int) int {
	return (blocks*packBlockBytes(kind) + 63) &^ 63
}

// packedWeight is a weight's repacked copy.
type packedWeight struct {
	kind   kernelKind
	data   []byte // ⌈rows/packRows⌉ groups of blocks · packBlockBytes, 64-byte aligned
	group  int    // bytes of one group
	blocks int    // blocks (or super-blocks) per row
}

// repack returns t's weight in the packed layout of kind, repacked over
// the pool, one unit per group. The caller has checked that the copy fits
// in memory.
func (b *Backend) repack(t *Tensor, kind kernelKind) *packedWeight {
	p := &packedWeight{kind: kind, blocks: packBlocks(kind, t.cols)}
	p.group = groupBytes(kind, p.blocks)
	groups := (t.rows + packRows - 1) / packRows
	p.data = b.weights.alloc(int(packedSize(kind, t.rows, t.cols)))
	task := &repackTask{src: t, dst: p}
	b.pool.run(task, groups, p.group)
	return p
}

type repackTask struct {
	src *Tensor
	dst *packedWeight
}

func (t *repackTask) run(_ *worker, lo, hi int) {
	for g := lo; g < hi; g++ {
		out := t.dst.data[g*t.dst.group : (g+1)*t.dst.group]
		for r := range packRows {
			row := g*packRows + r
			if row >= t.src.rows {
				break // the padding rows stay zero
			}
			src := t.src.data[row*t.src.rowBytes : (row+1)*t.src.rowBytes]
			switch t.dst.kind.layout() {
			case kindQ4_K:
				packKRow(out, src, r, t.dst.blocks, false)
			case kindQ5_K:
				packKRow(out, src, r, t.dst.blocks, true)
			case kindQ6_K:
				packQ6KRow(out, src, r, t.dst.blocks)
			case kindQ3_K:
				packQ3KRow(out, src, r, t.dst.blocks)
			case kindQ2_K:
				packQ2KRow(out, src, r, t.dst.blocks)
			case kindIQ4_XS:
				packIQ4XSRow(out, src, r, t.dst.blocks)
			case kindMXFP4:
				packMXFP4Row(out, src, r, t.dst.blocks)
			case kindQ5_0:
				packQ5_0Row(out, src, r, t.dst.blocks, false)
			case kindQ5_1:
				packQ5_0Row(out, src, r, t.dst.blocks, true)
			case kindQ4_1:
				packQ4_1Row(out, src, r, t.dst.blocks)
			case kindQ8_0:
				packRow(out, src, r, t.dst.blocks, 32)
			case kindF16, kindBF16:
				packF16Row(out, src, r)
			default:
				packRow(out, src, r, t.dst.blocks, 16)
			}
		}
	}
}

// packRow places one Q4_0 or Q8_0 row (blocks of a half d and qb quant
// bytes: 16 for Q4_0, 32 for Q8_0) at lane r of a group: block b's quant
// bytes 4j … 4j+3 in its vector j, its scale after every block's quants.
func packRow(out, src []byte, r, blocks, qb int) {
	bb, vb := 2+qb, 16*qb // a block's bytes in the row and in the group
	for b := range blocks {
		blk, qs := src[bb*b:bb*(b+1)], out[vb*b:]
		copy(out[vb*blocks+32*b+2*r:], blk[:2])
		for j := range qb / 4 {
			copy(qs[64*j+4*r:], blk[2+4*j:6+4*j])
		}
	}
}

// packF16Row places one F16 or BF16 row (2 bytes a column) at lane r:
// column c's half at bytes 32c + 2r of the group.
func packF16Row(out, src []byte, r int) {
	for c := range len(src) / 2 {
		out[32*c+2*r], out[32*c+2*r+1] = src[2*c], src[2*c+1]
	}
}

// packKRow places one Q4_K row (144-byte super-blocks: halves d and
// dmin, 12 bytes of 6-bit scales and mins, 128 quant bytes) at lane r, or
// with five a Q5_K row (176 bytes: the same with 32 bytes of fifth bits
// before the quants).
func packKRow(out, src []byte, r, blocks int, five bool) {
	bb, qs, pb := 144, 16, q4KPackBytes
	if five {
		bb, qs, pb = 176, 48, q5KPackBytes
	}
	for s := range blocks {
		blk, dst := src[bb*s:bb*s+bb], out[s*pb:]
		if five {
			for t := range 8 {
				copy(dst[q4KPackBytes+64*t+4*r:], blk[16+4*t:20+4*t])
			}
		}
		copy(dst[2*r:], blk[:2])
		copy(dst[32+2*r:], blk[2:4])
		for j := range 8 {
			sc, m := q4KScaleMin(blk[4:16], j)
			dst[64+16*j+r] = sc
			dst[192+32*(j/2)+2*r+j%2] = m
		}
		for p := range 4 {
			for j := range 8 {
				copy(dst[320+512*p+64*j+4*r:], blk[qs+32*p+4*j:qs+4+32*p+4*j])
			}
		}
	}
}

// q4KScaleMin is ggml's get_scale_min_k4: sub-block j's 6-bit scale and
// min from a Q4_K super-block's 12 scale bytes.
func q4KScaleMin(s []byte, j int) (byte, byte) {
	if j < 4 {
		return s[j] & 63, s[j+4] & 63
	}
	return s[j+4]&0x0f | (s[j-4]>>6)<<4, s[j+4]>>4 | (s[j]>>6)<<4
}

// packQ6KRow places one Q6_K row (210-byte super-blocks: ql[128], qh[64],
// int8 scales[16], half d) at lane r.
func packQ6KRow(out, src []byte, r, blocks int) {
	for s := range blocks {
		blk, dst := src[210*s:210*s+210], out[s*q6KPackBytes:]
		var q [256]byte
		for e := range q {
			q[e] = q6KQuant(blk, e)
		}
		for g := range 16 { // sub-blocks of 16
			p, u, m := g/2, g/4, g%4
			for t := range 16 {
				at := 64*(t/4) + 4*r + t%4
				lo, hi := q[16*g+t]&0x0f, q[16*g+t]>>4
				if g%2 == 0 {
					dst[256*p+at] = dst[256*p+at]&0xf0 | lo
				} else {
					dst[256*p+at] = dst[256*p+at]&0x0f | lo<<4
				}
				qh := &dst[2048+256*u+at]
				*qh = *qh&^(3<<(2*m)) | hi<<(2*m)
			}
			dst[3072+32*p+2*r+g%2] = blk[192+g]
		}
		binary.LittleEndian.PutUint32(dst[3328+4*r:], math.Float32bits(gguf.F16ToF32(binary.LittleEndian.Uint16(blk[208:]))))
	}
}

// q6KQuant is element e's quant (0-63) of a Q6_K super-block, as ggml's
// dequantize_row_q6_K orders them: in each half of 128, element l of each
// 32 takes its low bits from ql's nibbles and its high two from qh.
func q6KQuant(blk []byte, e int) byte {
	h, t := e/128, e%128
	l, part := t%32, t/32
	ql := blk[64*h+l+32*(part%2)]
	if part >= 2 {
		ql >>= 4
	}
	return ql&0x0f | (blk[128+32*h+l]>>(2*part)&3)<<4
}

// packQ5_0Row places one Q5_0 row (22-byte blocks: a half d, the uint32 of
// fifth bits qh, 16 bytes of nibbles) at lane r, or with one a Q5_1 row
// (24-byte blocks: a half min m after d).
func packQ5_0Row(out, src []byte, r, blocks int, one bool) {
	bb, o := 22, 0
	if one { // Q5_1: the half min after d, its copy after every block's scales
		bb, o = 24, 2
	}
	for b := range blocks {
		blk, dst := src[bb*b:bb*b+bb], out[320*b:]
		copy(out[320*blocks+32*b+2*r:], blk[:2])
		if one {
			copy(out[320*blocks+32*(blocks+b)+2*r:], blk[2:4])
		}
		qh := binary.LittleEndian.Uint32(blk[o+2 : o+6])
		var h uint32
		for j := range 4 {
			copy(dst[64*j+4*r:], blk[o+6+4*j:o+10+4*j])
			for i := range 4 {
				h |= (qh>>(4*j+i)&1)<<(8*i+2*j) | (qh>>(16+4*j+i)&1)<<(8*i+2*j+1)
			}
		}
		binary.LittleEndian.PutUint32(dst[256+4*r:], h)
	}
}

// packQ4_1Row places one Q4_1 row (20-byte blocks: halves d and m, 16
// quant bytes) at lane r as Q4_0's, the mins after the scales.
func packQ4_1Row(out, src []byte, r, blocks int) {
	for b := range blocks {
		blk, qs := src[20*b:20*b+20], out[256*b:]
		copy(out[256*blocks+32*b+2*r:], blk[:2])
		copy(out[256*blocks+32*(blocks+b)+2*r:], blk[2:4])
		for j := range 4 {
			copy(qs[64*j+4*r:], blk[4+4*j:8+4*j])
		}
	}
}

// packQ3KRow places one Q3_K row (110-byte super-blocks: hmask[32], the
// quants' low bits qs[64], 12 bytes of 6-bit scales, the half d) at lane
// r. Element e of a super-block has its low bits at bit 2(e%128/32) of
// qs[32(e/128) + e%32] and its third bit at bit 4(e/128) + e%128/32 of
// hmask[e%32].
func packQ3KRow(out, src []byte, r, blocks int) {
	for s := range blocks {
		blk, dst := src[110*s:110*s+110], out[s*q3KPackBytes:]
		for e := range 256 {
			n, j, l := e/128, e%128/32, e%32
			lo := blk[32+32*n+l] >> (2 * j) & 3
			hi := blk[l] >> (4*n + j) & 1
			sb, t := e/16, e%16
			at := 64*(t/4) + 4*r + t%4
			dst[256*(sb/4)+at] |= lo << (2 * (sb % 4))
			dst[1024+256*(sb/8)+at] |= hi << (sb % 8)
		}
		sc := blk[96:108]
		for i := range 16 {
			lo := sc[i%8] >> (4 * (i / 8)) & 0x0f
			hi := sc[8+i%4] >> (2 * (i / 4)) & 3
			dst[1536+32*(i/2)+2*r+i%2] = byte(int8(lo|hi<<4) - 32)
		}
		binary.LittleEndian.PutUint32(dst[1792+4*r:], math.Float32bits(gguf.F16ToF32(binary.LittleEndian.Uint16(blk[108:]))))
	}
}

// packQ2KRow places one Q2_K row (84-byte super-blocks: a byte of scale
// and min for each sub-block, the quants qs[64] as Q3_K's low bits, the
// halves d and dmin) at lane r.
func packQ2KRow(out, src []byte, r, blocks int) {
	le := binary.LittleEndian
	for s := range blocks {
		blk, dst := src[84*s:84*s+84], out[s*q2KPackBytes:]
		for e := range 256 {
			q := blk[16+32*(e/128)+e%32] >> (2 * (e % 128 / 32)) & 3
			sb, t := e/16, e%16
			dst[256*(sb/4)+64*(t/4)+4*r+t%4] |= q << (2 * (sb % 4))
		}
		for i := range 16 {
			dst[1024+32*(i/2)+2*r+i%2] = blk[i]
		}
		le.PutUint32(dst[1280+4*r:], math.Float32bits(gguf.F16ToF32(le.Uint16(blk[80:]))))
		le.PutUint32(dst[1344+4*r:], math.Float32bits(gguf.F16ToF32(le.Uint16(blk[82:]))))
	}
}

// packIQ4XSRow places one IQ4_XS row (136-byte super-blocks: the half d,
// the 6-bit scales, eight sub-blocks' 16 bytes of codes) at lane r as
// blocks blocks of 32 (eight a super-block).
func packIQ4XSRow(out, src []byte, r, blocks int) {
	for b := range blocks {
		blk, ib := src[136*(b/8):136*(b/8)+136], b%8
		qs := out[256*b:]
		for j := range 4 {
			copy(qs[64*j+4*r:], blk[8+16*ib+4*j:12+16*ib+4*j])
		}
		if ib == 0 {
			copy(out[256*blocks+32*(b/8)+2*r:], blk[:2])
		}
		out[256*blocks+32*(blocks/8)+16*b+r] = byte(int8(gguf.IQ4XSScale(blk, ib) - 32))
	}
}

// packMXFP4Row places one MXFP4 row (17-byte blocks: the E8M0 scale e, 16
// bytes of codes in Q4_0's order) at lane r.
func packMXFP4Row(out, src []byte, r, blocks int) {
	for b := range blocks {
		blk, qs := src[17*b:17*b+17], out[256*b:]
		for j := range 4 {
			copy(qs[64*j+4*r:], blk[1+4*j:5+4*j])
		}
		out[256*blocks+16*b+r] = blk[0]
	}
}
