package cpu

import (
	"encoding/binary"
	"math"

	"folio/models/gguf"
)

// unpackRow decodes row r of the packed weight p into out (the row's k
// elements), reading the layouts repack.go documents: the values
// gguf.Dequantize gives for the row's GGUF bytes, bit for bit (each value
// takes the same float32 steps in the same order). Embed reads a repacked
// weight's rows (the token embeddings tied to the output) so, and not
// from the file's bytes, whose pages the loader released.
func unpackRow(p *packedWeight, r int, out []float32) {
	le := binary.LittleEndian
	kind := p.kind.layout()
	g, lane := p.data[r/packRows*p.group:], r%packRows
	half := func(off int) float32 { return gguf.F16ToF32(le.Uint16(g[off:])) }
	switch kind {
	case kindQ4_0, kindIQ4_NL, kindIQ4_XS, kindQ4_1, kindMXFP4, kindQ5_0, kindQ5_1:
		five, bb := kind == kindQ5_0 || kind == kindQ5_1, 256 // bb: a block's bytes before the scales
		if five {
			bb = 320
		}
		for b := range len(out) / 32 {
			y := out[32*b : 32*b+32]
			var d, m float32
			switch kind {
			case kindIQ4_XS:
				d = half(bb*p.blocks+32*(b/8)+2*lane) * float32(int8(g[bb*p.blocks+32*(p.blocks/8)+16*b+lane]))
			case kindMXFP4:
				d = gguf.E8M0Half(g[bb*p.blocks+16*b+lane])
			default:
				d = half(bb*p.blocks + 32*b + 2*lane)
			}
			if kind == kindQ4_1 || kind == kindQ5_1 {
				m = half(bb*p.blocks + 32*(p.blocks+b) + 2*lane)
			}
			for j := range 16 {
				at := bb*b + 64*(j/4) + 4*lane + j%4
				lo, hi := g[at]&0x0f, g[at]>>4
				if five {
					h := g[bb*b+256+4*lane+j%4] >> (2 * (j / 4))
					lo, hi = lo|h&1<<4, hi|h>>1&1<<4
				}
				switch kind {
				case kindQ4_0:
					y[j], y[j+16] = float32(int(lo)-8)*d, float32(int(hi)-8)*d
				case kindQ5_0:
					y[j], y[j+16] = float32(int(lo)-16)*d, float32(int(hi)-16)*d
				case kindQ4_1, kindQ5_1:
					y[j], y[j+16] = float32(lo)*d+m, float32(hi)*d+m
				case kindMXFP4:
					y[j], y[j+16] = float32(gguf.MXFP4Values[lo])*d, float32(gguf.MXFP4Values[hi])*d
				default:
					y[j], y[j+16] = d*float32(gguf.IQ4NLValues[lo]), d*float32(gguf.IQ4NLValues[hi])
				}
			}
		}
	case kindQ8_0:
		for b := range len(out) / 32 {
			d := half(512*p.blocks + 32*b + 2*lane)
			for j := range 32 {
				out[32*b+j] = float32(int8(g[512*b+64*(j/4)+4*lane+j%4])) * d
			}
		}
	case kindQ4_K, kindQ5_K:
		pb := q4KPackBytes
		if kind == kindQ5_K {
			pb = q5KPackBytes
		}
		for s := range len(out) / 256 {
			blk := g[s*pb:]
			d, dmin := gguf.F16ToF32(le.Uint16(blk[2*lane:])), gguf.F16ToF32(le.Uint16(blk[32+2*lane:]))
			for sb := range 8 {
				dl := d * float32(blk[64+16*sb+lane])
				ml := dmin * float32(blk[192+32*(sb/2)+2*lane+sb%2])
				y := out[256*s+32*sb : 256*s+32*sb+32]
				for t := range 32 {
					q := blk[320+512*(sb/2)+64*(t/4)+4*lane+t%4] >> (4 * (sb % 2)) & 0x0f
					if kind == kindQ5_K {
						q |= blk[q4KPackBytes+64*(t/4)+4*lane+t%4] >> sb & 1 << 4
					}
					y[t] = dl*float32(q) - ml
				}
			}
		}
	case kindQ6_K:
		for s := range len(out) / 256 {
			blk := g[s*q6KPackBytes:]
			d := math.Float32frombits(le.Uint32(blk[3328+4*lane:]))
			for sb := range 16 {
				dl, y := d*float32(int8(blk[3072+32*(sb/2)+2*lane+sb%2])), out[256*s+16*sb:256*s+16*sb+16]
				lo, hi := blk[256*(sb/2):], blk[2048+256*(sb/4):]
				for t := range 16 {
					at := 64*(t/4) + 4*lane + t%4
					q := lo[at]>>(4*(sb%2))&0x0f | hi[at]>>(2*(sb%4))&3<<4
					y[t] = dl * float32(int(q)-32)
				}
			}
		}
	case kindQ3_K:
		for s := range len(out) / 256 {
			blk := g[s*q3KPackBytes:]
			d := math.Float32frombits(le.Uint32(blk[1792+4*lane:]))
			for sb := range 16 {
				dl, y := d*float32(int8(blk[1536+32*(sb/2)+2*lane+sb%2])), out[256*s+16*sb:256*s+16*sb+16]
				lo, hi := blk[256*(sb/4):], blk[1024+256*(sb/8):]
				for t := range 16 {
					at := 64*(t/4) + 4*lane + t%4
					q := lo[at]>>(2*(sb%4))&3 | hi[at]>>(sb%8)&1<<2
					y[t] = dl * float32(int(q)-4)
				}
			}
		}
	case kindQ2_K:
		for s := range len(out) / 256 {
			blk := g[s*q2KPackBytes:]
			d := math.Float32frombits(le.Uint32(blk[1280+4*lane:]))
			dmin := math.Float32frombits(le.Uint32(blk[1344+4*lane:]))
			for sb := range 16 {
				sm := blk[1024+32*(sb/2)+2*lane+sb%2]
				dl, ml, y := d*float32(sm&0x0f), dmin*float32(sm>>4), out[256*s+16*sb:256*s+16*sb+16]
				q := blk[256*(sb/4):]
				for t := range 16 {
					y[t] = dl*float32(q[64*(t/4)+4*lane+t%4]>>(2*(sb%4))&3) - ml
				}
			}
		}
	case kindF16:
		for e := range out {
			out[e] = half(32*e + 2*lane)
		}
	case kindBF16:
		for e := range out {
			out[e] = gguf.BF16ToF32(le.Uint16(g[32*e+2*lane:]))
		}
	default:
		panic("cpu: unpackRow of an unknown packed kind")
	}
}
