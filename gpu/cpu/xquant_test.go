package cpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"folio/models/gguf"
)

// The scalar reference of each activation format (xquant.go): quantizeXRef
// writes the exact bytes the C quantizers must write, and dequantizeXRef
// reads back the values a kernel multiplies by.

// quant32Ref quantizes 32 floats as ggml's x86 quantize_row_q8_0: d =
// amax/127 kept as a half, quants x·(127/amax) rounded to nearest even.
func quant32Ref(x []float32) (d float32, q [32]int8, sum int) {
	var amax float32
	for _, v := range x {
		amax = max(amax, float32(math.Abs(float64(v))))
	}
	var id float32
	if amax != 0 {
		id = 127 / amax
	}
	for j, v := range x {
		q[j] = int8(math.RoundToEven(float64(v * id)))
		sum += int(q[j])
	}
	return gguf.F16ToF32(gguf.F32ToF16(amax / 127)), q, sum
}

func quantizeXRef(kind kernelKind, x []float32) []byte {
	k := len(x)
	out := make([]byte, xRowBytes(kind, k))
	le := binary.LittleEndian
	switch kind {
	case kindQ8_0, kindMXFP4, kindIQ4_NL, kindIQ4_XS, kindQ8_0S, kindIQ4_NLS:
		for b := range k / 32 {
			p := out[b/2*x8pBytes:]
			h := b % 2
			d, q, _ := quant32Ref(x[32*b : 32*b+32])
			for j, v := range q {
				p[32*h+j] = byte(v) ^ x8pBias(kind)
			}
			for j := range 8 {
				le.PutUint32(p[64+32*h+4*j:], math.Float32bits(d))
			}
		}
		if nb := k / 32; nb%2 == 1 { // the zero block pairing an odd last one
			for j := range 32 {
				out[nb/2*x8pBytes+32+j] = x8pBias(kind)
			}
		}
	case kindQ4_0, kindQ5_0, kindQ4_1, kindQ5_1:
		for b := range k / 32 {
			g := out[b/4*x4gBytes:]
			j := b % 4
			d, q, sum := quant32Ref(x[32*b : 32*b+32])
			for l := range 16 {
				g[16*j+l] = byte(q[l])
				g[64+16*j+l] = byte(q[16+l])
			}
			for l := range 4 {
				le.PutUint32(g[128+16*j+4*l:], math.Float32bits(d))
			}
			le.PutUint32(g[192+16*j:], uint32(int32(-8*sum)))
		}
	case kindQ4_K, kindQ5_K, kindQ6_K, kindQ3_K, kindQ2_K, kindIQ4_XSK:
		for s := range k / 256 {
			xs, blk := x[256*s:256*s+256], out[s*xkBytes:]
			var amax, vmax float32
			for _, v := range xs {
				if a := float32(math.Abs(float64(v))); a > amax {
					amax, vmax = a, v
				}
			}
			if amax == 0 {
				continue
			}
			iscale := -127 / vmax
			for g := range 16 {
				sum := 0
				for j := 16 * g; j < 16*g+16; j++ {
					q := min(127, int(math.RoundToEven(float64(iscale*xs[j]))))
					blk[j] = byte(int8(q))
					sum += q
				}
				le.PutUint16(blk[288+2*g:], uint16(int16(sum)))
			}
			for j := range 8 { // sums of 32: a sub-block of Q4_K
				s := int16(le.Uint16(blk[288+4*j:])) + int16(le.Uint16(blk[290+4*j:]))
				le.PutUint16(blk[260+2*j:], uint16(s))
			}
			le.PutUint32(blk[256:], math.Float32bits(1/iscale))
		}
	case kindF16:
		for j, v := range x {
			le.PutUint16(out[2*j:], gguf.F32ToF16(v))
		}
	case kindBF16:
		for j, v := range x {
			le.PutUint16(out[2*j:], gguf.F32ToBF16(v))
		}
	}
	return out
}

// dequantizeXRef returns the k values an activation row of kind stands for.
func dequantizeXRef(kind kernelKind, row []byte, k int) []float32 {
	le := binary.LittleEndian
	f32 := func(b []byte) float32 { return math.Float32frombits(le.Uint32(b)) }
	x := make([]float32, k)
	for e := range x {
		b, j := e/32, e%32
		switch kind {
		case kindQ8_0, kindMXFP4, kindIQ4_NL, kindIQ4_XS, kindQ8_0S, kindIQ4_NLS:
			p := row[b/2*x8pBytes:]
			x[e] = float32(int8(p[32*(b%2)+j]^x8pBias(kind))) * f32(p[64+32*(b%2):])
		case kindQ4_0, kindQ5_0, kindQ4_1, kindQ5_1:
			g := row[b/4*x4gBytes:]
			at := 16*(b%4) + j
			if j >= 16 {
				at = 64 + 16*(b%4) + j - 16
			}
			x[e] = float32(int8(g[at])) * f32(g[128+16*(b%4):])
		case kindQ4_K, kindQ5_K, kindQ6_K, kindQ3_K, kindQ2_K, kindIQ4_XSK:
			blk := row[e/256*xkBytes:]
			x[e] = float32(int8(blk[e%256])) * f32(blk[256:])
		case kindF16:
			x[e] = gguf.F16ToF32(le.Uint16(row[2*e:]))
		case kindBF16:
			x[e] = gguf.BF16ToF32(le.Uint16(row[2*e:]))
		}
	}
	return x
}

var kernelTypes = map[kernelKind]gguf.TensorType{
	kindQ8_0: gguf.TypeQ8_0, kindQ8_0S: gguf.TypeQ8_0, kindQ4_0: gguf.TypeQ4_0, kindQ4_K: gguf.TypeQ4_K, kindQ6_K: gguf.TypeQ6_K, kindF16: gguf.TypeF16,
	kindBF16: gguf.TypeBF16,
}

// packedOnlyTypes are the kinds with packed kernels and no others.
var packedOnlyTypes = map[kernelKind]gguf.TensorType{kindQ5_0: gguf.TypeQ5_0, kindQ5_K: gguf.TypeQ5_K, kindQ3_K: gguf.TypeQ3_K, kindQ2_K: gguf.TypeQ2_K,
	kindMXFP4: gguf.TypeMXFP4, kindIQ4_NL: gguf.TypeIQ4_NL, kindIQ4_XS: gguf.TypeIQ4_XS, kindQ4_1: gguf.TypeQ4_1, kindQ5_1: gguf.TypeQ5_1,
	kindIQ4_XSK: gguf.TypeIQ4_XS, kindIQ4_NLS: gguf.TypeIQ4_NL}

// kindAt reports whether level l has kernels of kind: those with another
// kind's layout (IQ4_XS on XK, Q8_0 and IQ4_NL on unbiased X8P) are
// AVX2's alone.
func kindAt(kind kernelKind, l simdLevel) bool {
	return kind.layout() == kind || l == levelAVX2
}

// x8pBias is what X8P's quants of kind are stored xor'd with: 0x80, or
// nothing for AVX2's unbiased kinds.
func x8pBias(kind kernelKind) byte {
	if kind == kindQ8_0S || kind == kindIQ4_NLS {
		return 0
	}
	return 0x80
}

// kindName names typ's kernels of kind in a test or benchmark: typ, and
// "-xk" for IQ4_XS on XK activations, "-x8s" on unbiased X8P.
func kindName(kind kernelKind, typ gguf.TensorType) string {
	switch kind {
	case kindIQ4_XSK:
		return typ.String() + "-xk"
	case kindQ8_0S, kindIQ4_NLS:
		return typ.String() + "-x8s"
	}
	return typ.String()
}

// awkwardKs are row lengths for kind: one block, odd block counts, tails
// of the kernels' steps of 2 and 4 blocks (or 8, 16, 32 elements for F16).
func awkwardKs(kind kernelKind) []int {
	switch kind {
	case kindQ4_K, kindQ5_K, kindQ6_K, kindQ3_K, kindQ2_K, kindIQ4_XS, kindIQ4_XSK:
		return []int{256, 512, 768, 1280}
	case kindF16, kindBF16:
		return []int{1, 3, 17, 64, 100, 575}
	}
	return []int{32, 64, 96, 160, 224, 576}
}

func TestQuantizeX(t *testing.T) {
	if bestLevel == levelScalar {
		t.Skip("no SIMD kernels on this machine")
	}
	r := rand.New(rand.NewPCG(40, 41))
	for kind, typ := range kernelTypes {
		for _, k := range awkwardKs(kind) {
			const n = 3
			x := randFloats(r, n*k, 1)
			if k >= 32 {
				x[0], x[4], x[5] = 0, 10, -10 // a zero, and a tie of the largest magnitudes
			}
			if k >= 64 {
				clear(x[k : k+32]) // an all-zero block
			}
			if k >= 512 {
				clear(x[256:512]) // an all-zero super-block
			}
			stride := xRowBytes(kind, k)
			out := make([]byte, n*stride)
			for i := range out {
				out[i] = 0xa5 // padding must be written too
			}
			quantizeX(kind, x, k, n, k, out, stride)
			for i := range n {
				want := quantizeXRef(kind, x[i*k:(i+1)*k])
				if got := out[i*stride : (i+1)*stride]; !slices.Equal(got, want) {
					at := 0
					for got[at] == want[at] {
						at++
					}
					t.Errorf("%v k=%d row %d: byte %d of %d is %#x, want %#x", typ, k, i, at, stride, got[at], want[at])
				}
			}
		}
	}
}

// TestKernels checks every SIMD kernel, at every level this machine has,
// against the float64 dot of the values its inputs stand for: the weights
// dequantized, the activations as quantized. Only float32 sums differ.
// Sizes are awkward: one row, odd rows, tails of every step.
func TestKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(42, 43))
	for _, l := range supportedLevels()[1:] {
		for kind, typ := range kernelTypes {
			if !kindAt(kind, l) {
				continue
			}
			for _, k := range awkwardKs(kind) {
				for _, nm := range [][2]int{{1, 1}, {1, 17}, {3, 5}, {4, 3}, {17, 33}, {64, 7}} {
					n, m := nm[0], nm[1]
					t.Run(fmt.Sprintf("%v/%v/n=%d,k=%d,m=%d", l, kindName(kind, typ), n, k, m), func(t *testing.T) {
						data, wf := quantWeight(t, r, typ, m, k)
						x := randFloats(r, n*k, 1)
						stride := xRowBytes(kind, k)
						xq := alignedBytes(n * stride)
						quantizeX(kind, x, k, n, k, xq, stride)
						dst := make([]float32, n*m+1)
						dst[n*m] = 42 // a guard past the end
						matmulX(kind, l, data, len(data)/m, m, xq, stride, n, k, dst, m)
						if dst[n*m] != 42 {
							t.Fatal("the kernel wrote past dst")
						}
						var xs []float32
						for i := range n {
							xs = append(xs, dequantizeXRef(kind, xq[i*stride:], k)...)
						}
						checkDots(t, dst[:n*m], xs, wf, n, k, m, matmulTol)
						// A row's results are the same bits whatever rows
						// it is computed with (a prompt in chunks or whole:
						// models/arch's TestScheduleInvariance).
						for i := range n {
							one := make([]float32, m)
							matmulX(kind, l, data, len(data)/m, m, xq[i*stride:], stride, 1, k, one, m)
							for o, v := range one {
								if math.Float32bits(v) != math.Float32bits(dst[i*m+o]) {
									t.Fatalf("row %d alone: dst[%d] = %v, in a tile of %d: %v", i, o, v, n, dst[i*m+o])
								}
							}
						}
					})
				}
			}
		}
	}
}

func alignedBytes(n int) []byte {
	b := new(Backend)
	return b.xqBuf(n)
}
