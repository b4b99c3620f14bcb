package gguf

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// mxfp4Ref pins MXFP4 to llama.cpp's kernels bit for bit, as ggmlRef does
// for the other types, on the same inputs (normalData(16Ki, 42) and random
// bytes from PCG(7, 39)), plus two sets of its own:
//
//   - every block byte: mxfp4AllBlocks, each scale byte e with the 256
//     code bytes, so every nibble in both halves under every scale;
//   - the quantizer's edges: mxfp4EdgeData.
//
// Computed by testdata/ggmlref/mxfp4.c against the prebuilt
// libggml-base.so that llamaref installs (node-llama-cpp 3.22.1), with
// NaNs written as 0x7fc00000 (no NaN comes out of MXFP4 dequantization).
var mxfp4Ref = struct {
	quantNormal, quantEdge, dequantRandom, dequantAll string
}{
	quantNormal:   "59bbc77b74090c5da22a6de8109f8bbab838b308674d3fc1653d2673ea2a5ac9",
	quantEdge:     "243af395930bfc0cf28683b323e02cf49f833e0a2560dd56aada555bc368b2f8",
	dequantRandom: "3ae2118a27da3efb43993f43de1fe532665d59530967ce46c71a54c7edc41490",
	dequantAll:    "abd2317654e36366f6dfd62d6f78d2fa92154a4d04c6af79f974d7f8a27f4da3",
}

// mxfp4AllBlocks returns 256*16 MXFP4 blocks: for each scale byte e, 16
// blocks whose code bytes run through 0..255.
func mxfp4AllBlocks() []byte {
	src := make([]byte, 0, 256*16*mxfp4Bytes)
	for e := range 256 {
		for b := range 16 {
			src = append(src, byte(e))
			for j := range 16 {
				src = append(src, byte(16*b+j))
			}
		}
	}
	return src
}

// mxfp4EdgeData returns blocks that reach the quantizer's edge cases: an
// amax just below, at and just above each power of two from 2^-149 to
// 2^127 (where log2f's rounding decides the scale), elements exactly
// halfway between two codes (ties go to the lower code), ±0, all-zero
// blocks, and subnormals (whose scale byte wraps as in C).
func mxfp4EdgeData() []float32 {
	var x []float32
	block := func(amax float32, fill func(j int) float32) {
		for j := range mxfp4Elems {
			x = append(x, fill(j))
		}
		x[len(x)-mxfp4Elems+5] = amax
	}
	rng := rand.New(rand.NewPCG(3, 39))
	for k := -149; k <= 127; k++ {
		p := float32(math.Ldexp(1, k))
		for _, amax := range []float32{math.Nextafter32(p, 0), p, math.Nextafter32(p, float32(math.Inf(1)))} {
			if math.IsInf(float64(amax), 0) {
				continue
			}
			block(amax, func(int) float32 { return amax * float32(rng.Float64()*2-1) })
			block(-amax, func(int) float32 { return amax * float32(rng.Float64()*2-1) })
		}
	}
	// Halfway points between neighbouring codes, and just off them, under
	// a scale of one (amax 4: e = 127 + 2 - 2, d = 0.5).
	half := []float32{0, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75, 2, 2.5, 3, 3.5, 4, 5, 6}
	for _, s := range []float32{1, -1} {
		block(4, func(j int) float32 { return s * half[j%len(half)] })
		block(4, func(j int) float32 { return math.Nextafter32(s*half[j%len(half)], 0) })
		block(4, func(j int) float32 { return math.Nextafter32(s*half[j%len(half)], 10*s) })
	}
	negZero := float32(math.Copysign(0, -1))
	block(0, func(int) float32 { return 0 })
	block(negZero, func(int) float32 { return negZero })
	block(1, func(j int) float32 { return [2]float32{0, negZero}[j%2] })
	block(1e-40, func(j int) float32 { return float32(j) * 1e-42 })
	return x
}

// sha256Floats is the SHA-256 of the little-endian bits of y.
func sha256Floats(y []float32) string {
	raw := make([]byte, 4*len(y))
	for i, v := range y {
		bits := math.Float32bits(v)
		if v != v {
			bits = 0x7fc00000
		}
		binary.LittleEndian.PutUint32(raw[4*i:], bits)
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

func TestMXFP4MatchesGGML(t *testing.T) {
	quant := func(x []float32) string {
		q := make([]byte, TypeMXFP4.RowBytes(int64(len(x))))
		if err := Quantize(TypeMXFP4, x, q); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(q)
		return hex.EncodeToString(sum[:])
	}
	dequant := func(src []byte) string {
		y := make([]float32, len(src)/mxfp4Bytes*mxfp4Elems)
		if err := Dequantize(TypeMXFP4, src, y); err != nil {
			t.Fatal(err)
		}
		return sha256Floats(y)
	}
	const n = 1 << 14
	random := make([]byte, TypeMXFP4.RowBytes(n))
	rng := rand.New(rand.NewPCG(7, uint64(TypeMXFP4)))
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	normal, edge, all := normalData(n, 42), mxfp4EdgeData(), mxfp4AllBlocks()
	if dir := os.Getenv("FOLIO_MXFP4_DUMP"); dir != "" {
		dumpMXFP4Inputs(t, dir, normal, edge, random, all)
	}
	for _, c := range []struct{ name, got, want string }{
		{"quantize normal", quant(normal), mxfp4Ref.quantNormal},
		{"quantize edges", quant(edge), mxfp4Ref.quantEdge},
		{"dequantize random", dequant(random), mxfp4Ref.dequantRandom},
		{"dequantize all blocks", dequant(all), mxfp4Ref.dequantAll},
	} {
		if c.got != c.want {
			t.Errorf("%s: sha256 %s, ggml gives %s", c.name, c.got, c.want)
		}
	}
}

// dumpMXFP4Inputs writes the test's inputs for testdata/ggmlref/mxfp4.c.
func dumpMXFP4Inputs(t *testing.T, dir string, normal, edge []float32, random, all []byte) {
	f32 := func(x []float32) []byte {
		b := make([]byte, 4*len(x))
		for i, v := range x {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
		return b
	}
	for name, b := range map[string][]byte{
		"normal.f32": f32(normal), "edge.f32": f32(edge), "random.q": random, "all.q": all,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// e2m1 decodes a 4-bit E2M1 code from its fields, as the OCP MX spec
// defines it: sign s, exponent bits E (bias 1), mantissa bit m; E = 0 is
// the subnormal 0.m * 2^0.
func e2m1(code byte) float64 {
	s, e, m := code>>3, int(code>>1&3), float64(code&1)
	v := math.Ldexp(1+m/2, e-1)
	if e == 0 {
		v = m / 2
	}
	if s == 1 {
		return -v
	}
	return v
}

// TestMXFP4Formula checks every code under every scale byte against the
// format's definition: element = E2M1(code) * 2^(e-127), computed in
// float64 from the bit fields (no table shared with the kernel).
func TestMXFP4Formula(t *testing.T) {
	all := mxfp4AllBlocks()
	y := make([]float32, len(all)/mxfp4Bytes*mxfp4Elems)
	if err := Dequantize(TypeMXFP4, all, y); err != nil {
		t.Fatal(err)
	}
	for b := range len(all) / mxfp4Bytes {
		blk := all[b*mxfp4Bytes : (b+1)*mxfp4Bytes]
		for j, q := range blk[1:] {
			for half, code := range []byte{q & 0xf, q >> 4} {
				want := float32(e2m1(code) * math.Ldexp(1, int(blk[0])-127))
				got := y[b*mxfp4Elems+j+16*half]
				if math.Float32bits(got) != math.Float32bits(want) && !(got == 0 && want == 0) {
					t.Fatalf("scale byte %d, code %#x: got %g, want %g", blk[0], code, got, want)
				}
			}
		}
	}
	for e := range 256 {
		if got, want := E8M0Half(byte(e)), float32(math.Ldexp(1, e-128)); got != want {
			t.Errorf("E8M0Half(%d) = %g, want 2^%d", e, got, e-128)
		}
	}
}

// TestMXFP4QuantizeExact: values that MXFP4 represents come back unchanged,
// for every scale whose elements, up to 6·2^(e-127), are normal float32s.
func TestMXFP4QuantizeExact(t *testing.T) {
	for e := 2; e <= 252; e++ {
		x := make([]float32, mxfp4Elems)
		for j := range x {
			x[j] = float32(e2m1(byte(j%16)) * math.Ldexp(1, e-127))
		}
		x[0] = float32(6 * math.Ldexp(1, e-127)) // fixes the scale at e
		got := roundTrip(t, TypeMXFP4, x)
		for j := range x {
			if got[j] != x[j] {
				t.Fatalf("scale 2^%d, element %d: %g came back as %g", e-127, j, x[j], got[j])
			}
		}
	}
}
