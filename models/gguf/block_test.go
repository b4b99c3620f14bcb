package gguf

import (
	"encoding/binary"
	"fmt"
	"testing"
)

// The tests in this file build one block of each format field by field,
// from the layout as documented (where element e's bits live), and check
// every decoded element against the layout's formula. The placement code
// here is written per element, independently of the decoders' loops, so a
// swapped nibble, a wrong shift or a misread scale shows up as a mismatch.

// blockLayout describes one format for the tests.
type blockLayout struct {
	t TensorType
	// qmax is the largest stored quant (quants are stored in [0, qmax]).
	qmax int
	// build returns a block whose element e has stored quant q(e), with the
	// format's scales set to fixed, distinct per-sub-block values.
	build func(q func(e int) int) []byte
	// want is the value element e must decode to when its stored quant is q.
	want func(e, q int) float32
}

// Fixed scale fields, distinct per sub-block and using the high bits.
var (
	testScale6 = [8]uint8{1, 63, 17, 32, 5, 48, 33, 60}  // Q4_K/Q5_K scales
	testMin6   = [8]uint8{62, 3, 40, 16, 59, 7, 31, 45}  // Q4_K/Q5_K mins
	testQ3     = [16]uint8{0, 63, 31, 32, 1, 47, 16, 33, // Q3_K biased scales
		62, 8, 55, 24, 40, 2, 61, 20}
	testQ2Scale = [16]uint8{0, 15, 7, 8, 1, 14, 3, 12, 5, 10, 9, 6, 11, 4, 13, 2}
	testQ2Min   = [16]uint8{15, 0, 9, 6, 2, 13, 4, 11, 7, 8, 1, 14, 3, 12, 10, 5}
	testQ6Scale = [16]int8{-128, 127, -1, 1, 64, -64, 3, -100, 90, 17, -33, 45, -7, 120, -77, 5}
)

const (
	dHalf  = 0x3800 // 0.5
	dQuart = 0x3400 // 0.25
	mHalf  = 0xbe00 // -1.5
)

func putHalf(b []byte, off int, h uint16) { binary.LittleEndian.PutUint16(b[off:], h) }

// setBits ORs v (already masked to its width) into b[i] at bit shift.
func setBits(b []byte, i, shift, v int) { b[i] |= byte(v << shift) }

// putScaleMin6 places 6-bit scale sc and min m of sub-block s (0..7) in the
// 12-byte Q4_K/Q5_K scales field, as ggml-common.h describes it: the first
// four sub-blocks use the low 6 bits of bytes s and s+4; the last four keep
// their low 4 bits in byte s+4 (scale low nibble, min high nibble) and their
// top 2 bits in bits 6..7 of bytes s-4 (scale) and s (min).
func putScaleMin6(scales []byte, s int, sc, m uint8) {
	if s < 4 {
		scales[s] |= sc
		scales[s+4] |= m
		return
	}
	scales[s+4] |= sc&0xf | m&0xf<<4
	scales[s-4] |= sc >> 4 << 6
	scales[s] |= m >> 4 << 6
}

var layouts = []blockLayout{
	{
		t: TypeQ8_0, qmax: 255,
		build: func(q func(int) int) []byte {
			b := make([]byte, 34)
			putHalf(b, 0, dHalf)
			for e := range 32 {
				b[2+e] = byte(q(e))
			}
			return b
		},
		want: func(e, q int) float32 { return 0.5 * float32(int8(q)) },
	},
	{
		t: TypeQ4_0, qmax: 15,
		build: func(q func(int) int) []byte {
			b := make([]byte, 18)
			putHalf(b, 0, dHalf)
			for e := range 32 {
				setBits(b, 2+e%16, 4*(e/16), q(e))
			}
			return b
		},
		want: func(e, q int) float32 { return 0.5 * float32(q-8) },
	},
	{
		t: TypeQ4_1, qmax: 15,
		build: func(q func(int) int) []byte {
			b := make([]byte, 20)
			putHalf(b, 0, dQuart)
			putHalf(b, 2, mHalf)
			for e := range 32 {
				setBits(b, 4+e%16, 4*(e/16), q(e))
			}
			return b
		},
		want: func(e, q int) float32 { return 0.25*float32(q) - 1.5 },
	},
	{
		t: TypeQ5_0, qmax: 31,
		build: func(q func(int) int) []byte {
			b := make([]byte, 22)
			putHalf(b, 0, dHalf)
			for e := range 32 {
				setBits(b, 6+e%16, 4*(e/16), q(e)&0xf)
				setBits(b, 2+e/8, e%8, q(e)>>4) // bit e of the LE uint32 qh
			}
			return b
		},
		want: func(e, q int) float32 { return 0.5 * float32(q-16) },
	},
	{
		t: TypeQ5_1, qmax: 31,
		build: func(q func(int) int) []byte {
			b := make([]byte, 24)
			putHalf(b, 0, dQuart)
			putHalf(b, 2, mHalf)
			for e := range 32 {
				setBits(b, 8+e%16, 4*(e/16), q(e)&0xf)
				setBits(b, 4+e/8, e%8, q(e)>>4)
			}
			return b
		},
		want: func(e, q int) float32 { return 0.25*float32(q) - 1.5 },
	},
	{
		t: TypeQ2_K, qmax: 3,
		build: func(q func(int) int) []byte {
			b := make([]byte, 84)
			for s := range 16 {
				b[s] = testQ2Scale[s] | testQ2Min[s]<<4
			}
			for e := range 256 {
				setBits(b, 16+32*(e/128)+e%32, 2*(e%128/32), q(e))
			}
			putHalf(b, 80, dHalf)
			putHalf(b, 82, dQuart)
			return b
		},
		want: func(e, q int) float32 {
			s := e / 16
			return 0.5*float32(testQ2Scale[s])*float32(q) - 0.25*float32(testQ2Min[s])
		},
	},
	{
		t: TypeQ3_K, qmax: 7, // stored as 2 low bits in qs plus the hmask bit
		build: func(q func(int) int) []byte {
			b := make([]byte, 110)
			for e := range 256 {
				setBits(b, 32+32*(e/128)+e%32, 2*(e%128/32), q(e)&3)
				setBits(b, e%32, e/32, q(e)>>2)
			}
			for s, l := range testQ3 {
				// Low nibble: byte s%8, nibble s/8; high 2 bits: byte
				// 8+s%4, bits 2*(s/4).
				setBits(b, 96+s%8, 4*(s/8), int(l&0xf))
				setBits(b, 96+8+s%4, 2*(s/4), int(l>>4))
			}
			putHalf(b, 108, dHalf)
			return b
		},
		// The stored 3-bit value q has its high bit set for "no -4".
		want: func(e, q int) float32 { return 0.5 * float32(int(testQ3[e/16])-32) * float32(q-4) },
	},
	{
		t: TypeQ4_K, qmax: 15,
		build: func(q func(int) int) []byte {
			b := make([]byte, 144)
			putHalf(b, 0, dHalf)
			putHalf(b, 2, dQuart)
			for s := range 8 {
				putScaleMin6(b[4:16], s, testScale6[s], testMin6[s])
			}
			for e := range 256 {
				setBits(b, 16+32*(e/64)+e%32, 4*(e%64/32), q(e))
			}
			return b
		},
		want: func(e, q int) float32 {
			s := e / 32
			return 0.5*float32(testScale6[s])*float32(q) - 0.25*float32(testMin6[s])
		},
	},
	{
		t: TypeQ5_K, qmax: 31,
		build: func(q func(int) int) []byte {
			b := make([]byte, 176)
			putHalf(b, 0, dHalf)
			putHalf(b, 2, dQuart)
			for s := range 8 {
				putScaleMin6(b[4:16], s, testScale6[s], testMin6[s])
			}
			for e := range 256 {
				setBits(b, 48+32*(e/64)+e%32, 4*(e%64/32), q(e)&0xf)
				setBits(b, 16+e%32, e/32, q(e)>>4)
			}
			return b
		},
		want: func(e, q int) float32 {
			s := e / 32
			return 0.5*float32(testScale6[s])*float32(q) - 0.25*float32(testMin6[s])
		},
	},
	{
		t: TypeQ6_K, qmax: 63,
		build: func(q func(int) int) []byte {
			b := make([]byte, 210)
			for e := range 256 {
				h, g, l := e/128, e%128/32, e%32
				setBits(b, 64*h+32*(g%2)+l, 4*(g/2), q(e)&0xf)
				setBits(b, 128+32*h+l, 2*g, q(e)>>4)
			}
			for s, sc := range testQ6Scale {
				b[192+s] = byte(sc)
			}
			putHalf(b, 208, dHalf)
			return b
		},
		want: func(e, q int) float32 { return 0.5 * float32(testQ6Scale[e/16]) * float32(q-32) },
	},
}

// hashQuant is a fixed, position-dependent pattern of quants in [0, qmax].
func hashQuant(e, qmax int) int {
	return int(uint32(e+1)*0x9e3779b1>>7) % (qmax + 1)
}

func checkBlock(t *testing.T, lay blockLayout, q func(int) int, what string) {
	t.Helper()
	blk := lay.build(q)
	n := lay.t.BlockSize()
	got := make([]float32, n)
	if err := Dequantize(lay.t, blk, got); err != nil {
		t.Fatal(err)
	}
	for e := range n {
		if want := lay.want(e, q(e)); got[e] != want {
			t.Fatalf("%s: element %d = %g, want %g (stored quant %d)", what, e, got[e], want, q(e))
		}
	}
}

func TestBlockLayouts(t *testing.T) {
	for _, lay := range layouts {
		t.Run(lay.t.String(), func(t *testing.T) {
			if n := len(lay.build(func(int) int { return 0 })); n != lay.t.TypeSize() {
				t.Fatalf("test block has %d bytes, type size is %d", n, lay.t.TypeSize())
			}
			checkBlock(t, lay, func(e int) int { return hashQuant(e, lay.qmax) }, "hashed quants")
			checkBlock(t, lay, func(int) int { return lay.qmax }, "all quants max")
			// One element at a time carries the largest quant, the rest 0.
			for pos := range lay.t.BlockSize() {
				q := func(e int) int {
					if e == pos {
						return lay.qmax
					}
					return 0
				}
				checkBlock(t, lay, q, fmt.Sprintf("only element %d set", pos))
			}
		})
	}
}

// TestBlockSizeConstants ties each file's layout constants to tensortype.go.
func TestBlockSizeConstants(t *testing.T) {
	for _, c := range []struct {
		t            TensorType
		elems, bytes int
	}{
		{TypeQ8_0, q8_0Elems, q8_0Bytes},
		{TypeQ4_0, q4_0Elems, q4_0Bytes},
		{TypeQ4_1, q4_1Elems, q4_1Bytes},
		{TypeQ5_0, q5_0Elems, q5_0Bytes},
		{TypeQ5_1, q5_1Elems, q5_1Bytes},
		{TypeQ2_K, q2_KElems, q2_KBytes},
		{TypeQ3_K, q3_KElems, q3_KBytes},
		{TypeQ4_K, q4_KElems, q4_KBytes},
		{TypeQ5_K, q5_KElems, q5_KBytes},
		{TypeQ6_K, q6_KElems, q6_KBytes},
		{TypeMXFP4, mxfp4Elems, mxfp4Bytes},
	} {
		if c.elems != c.t.BlockSize() || c.bytes != c.t.TypeSize() {
			t.Errorf("%v: file says %d elements in %d bytes, tensortype.go says %d in %d",
				c.t, c.elems, c.bytes, c.t.BlockSize(), c.t.TypeSize())
		}
	}
}

// TestScalePacking round-trips every 6-bit value through the Q4_K/Q5_K and
// Q3_K scale packers and unpackers.
func TestScalePacking(t *testing.T) {
	for v := range 64 {
		var sc, m [8]uint8
		for j := range 8 {
			sc[j] = uint8((v + 7*j) % 64)
			m[j] = uint8((v + 13*j + 5) % 64)
		}
		var s [12]byte
		putScaleMinK4(s[:], &sc, &m)
		for j := range 8 {
			if gs, gm := scaleMinK4(j, s[:]); gs != sc[j] || gm != m[j] {
				t.Fatalf("K4 sub-block %d: got (%d, %d), want (%d, %d)", j, gs, gm, sc[j], m[j])
			}
		}

		var ls [16]uint8
		for j := range 16 {
			ls[j] = uint8((v + 11*j) % 64)
		}
		var s3 [12]byte
		putQ3KScales(s3[:], &ls)
		got := q3KScales(s3[:])
		for j := range 16 {
			if int(got[j]) != int(ls[j])-32 {
				t.Fatalf("Q3_K scale %d: got %d, want %d", j, got[j], int(ls[j])-32)
			}
		}
	}
}

// TestPlainLayouts checks F32, F16 and BF16 decode little-endian words.
func TestPlainLayouts(t *testing.T) {
	tests := []struct {
		t    TensorType
		src  []byte
		want []float32
	}{
		{TypeF32, []byte{0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0}, []float32{1, -2}},
		{TypeF16, []byte{0x00, 0x3c, 0x00, 0xc0, 0xff, 0x7b}, []float32{1, -2, 65504}},
		{TypeBF16, []byte{0x80, 0x3f, 0x00, 0xc0, 0x49, 0x40}, []float32{1, -2, 3.140625}},
	}
	for _, tt := range tests {
		got := make([]float32, len(tt.want))
		if err := Dequantize(tt.t, tt.src, got); err != nil {
			t.Fatalf("%v: %v", tt.t, err)
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("%v: element %d = %g, want %g", tt.t, i, got[i], tt.want[i])
			}
		}
		enc := make([]byte, len(tt.src))
		if err := Quantize(tt.t, tt.want, enc); err != nil {
			t.Fatalf("%v: %v", tt.t, err)
		}
		if string(enc) != string(tt.src) {
			t.Errorf("%v: Quantize = % x, want % x", tt.t, enc, tt.src)
		}
	}
}
