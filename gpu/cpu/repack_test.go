package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"folio/models/gguf"
)

// packedTypes are the weight types this machine repacks.
func packedTypes() []gguf.TensorType {
	var ts []gguf.TensorType
	for _, typ := range []gguf.TensorType{gguf.TypeQ4_0, gguf.TypeQ5_0, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K, gguf.TypeQ3_K, gguf.TypeQ2_K, gguf.TypeIQ4_NL, gguf.TypeIQ4_XS, gguf.TypeQ4_1, gguf.TypeQ5_1, gguf.TypeMXFP4, gguf.TypeQ8_0, gguf.TypeF16, gguf.TypeBF16} {
		if _, ok := packedKind(typ, bestLevel); ok {
			ts = append(ts, typ)
		}
	}
	return ts
}

// TestRepack: a packed weight holds the same values as the GGUF bytes,
// row by row: unpackRow, which reads each layout as repack.go documents
// it, gives gguf.Dequantize's values bit for bit; and its padding rows are
// zero.
func TestRepack(t *testing.T) {
	if bestLevel == levelScalar {
		t.Skip("no SIMD kernels on this machine")
	}
	b := newTestBackend(t)
	r := rand.New(rand.NewPCG(50, 51))
	for _, typ := range packedTypes() {
		for _, rk := range [][2]int{{1, 256}, {16, 512}, {17, 768}, {45, 256}, {3, 17}} {
			rows, k := rk[0], rk[1]
			if k%typ.BlockSize() != 0 {
				continue
			}
			data, wf := quantWeight(t, r, typ, rows, k)
			p := newWeight(t, b, typ, rows, k, data).(*Tensor).packed
			if p == nil {
				t.Fatalf("%v: no packed copy", typ)
			}
			for row := range (rows + packRows - 1) / packRows * packRows {
				got := make([]float32, k)
				unpackRow(p, row, got)
				for j, v := range got {
					want, same := float32(0), v == 0 // a padding row: zeros of either sign
					if row < rows {
						want = wf[row*k+j]
						same = math.Float32bits(v) == math.Float32bits(want)
					}
					if !same {
						t.Fatalf("%v %dx%d: packed row %d element %d = %v, want %v", typ, rows, k, row, j, v, want)
					}
				}
			}
		}
	}
}

// quantActs quantizes n rows of k activations x into kind's format (xq,
// stride bytes a row) and returns the values they stand for, xs.
func quantActs(kind kernelKind, x []float32, n, k int) (xq []byte, stride int, xs []float32) {
	stride = xRowBytes(kind, k)
	xq = alignedBytes(n * stride)
	quantizeX(kind, x, k, n, k, xq, stride)
	for i := range n {
		xs = append(xs, dequantizeXRef(kind, xq[i*stride:], k)...)
	}
	return xq, stride, xs
}

// TestPackedKernels checks the packed kernels at every SIMD level against
// the float64 dot of the values their inputs stand for, over awkward
// shapes (rows not a whole group, one activation row, odd tiles), and that
// a row's result is the same bits whatever rows are computed with it and
// at whichever level runs the same kind (IQ4_XS's activations at AVX2 are
// another format).
func TestPackedKernels(t *testing.T) {
	if bestLevel == levelScalar {
		t.Skip("no SIMD kernels on this machine")
	}
	r := rand.New(rand.NewPCG(52, 53))
	b := newTestBackend(t)
	for _, typ := range packedTypes() {
		best, _ := packedKind(typ, bestLevel)
		for _, k := range awkwardKs(best) {
			for _, nm := range [][2]int{{1, 1}, {1, 17}, {2, 70}, {3, 5}, {5, 16}, {20, 24}, {9, 33}, {16, 37}, {17, 48}, {25, 50}, {32, 16}, {33, 31}, {47, 64}, {64, 33}, {70, 33}, {130, 17}} {
				n, m := nm[0], nm[1]
				t.Run(fmt.Sprintf("%v/n=%d,k=%d,m=%d", typ, n, k, m), func(t *testing.T) {
					data, wf := quantWeight(t, r, typ, m, k)
					p := newWeight(t, b, typ, m, k, data).(*Tensor).packed
					x := randFloats(r, n*k, 1)
					first := map[kernelKind][]float32{}
					for _, l := range supportedLevels()[1:] {
						kind, ok := packedKind(typ, l)
						if !ok {
							continue
						}
						xq, stride, xs := quantActs(kind, x, n, k)
						dst := make([]float32, n*m+1)
						dst[n*m] = 42 // a guard past the end
						matmulPackedX(kind, l, p.data, p.group, p.blocks, m, xq, stride, n, k, dst, m)
						if dst[n*m] != 42 {
							t.Fatalf("%v: the kernel wrote past dst", l)
						}
						checkDots(t, dst[:n*m], xs, wf, n, k, m, matmulTol)
						// Each row alone, and the rows from the second on.
						for i := range n {
							one := make([]float32, m)
							matmulPackedX(kind, l, p.data, p.group, p.blocks, m, xq[i*stride:], stride, 1, k, one, m)
							for o := range m {
								if math.Float32bits(one[o]) != math.Float32bits(dst[i*m+o]) {
									t.Fatalf("%v: row %d alone: dst[%d] = %v, in a tile of %d: %v", l, i, o, one[o], n, dst[i*m+o])
								}
							}
						}
						if first[kind] == nil {
							first[kind] = dst
							continue
						}
						for j, want := range first[kind] {
							if math.Float32bits(want) != math.Float32bits(dst[j]) {
								t.Fatalf("%v: dst[%d] = %v, at the first level with %v kernels %v", l, j, dst[j], kindName(kind, typ), want)
							}
						}
					}
				})
			}
		}
	}
}

// RepackedBytes is the size of the copy Weight makes, and a view of a
// packed weight computes its rows bit for bit as the weight does.
func TestRepackedBytesAndSlice(t *testing.T) {
	if bestLevel == levelScalar {
		t.Skip("no SIMD kernels on this machine")
	}
	b := newTestBackend(t)
	r := rand.New(rand.NewPCG(54, 55))
	if n := RepackedBytes(gguf.TypeF32, 16, 256); n != 0 {
		t.Errorf("RepackedBytes(F32) = %d, want 0", n)
	}
	for _, typ := range packedTypes() {
		const rows, k = 37, 512
		data, _ := quantWeight(t, r, typ, rows, k)
		w := newWeight(t, b, typ, rows, k, data)
		p := w.(*Tensor).packed
		if got, want := RepackedBytes(typ, rows, k), int64(len(p.data)); got != want {
			t.Errorf("%v: RepackedBytes = %d, the copy is %d", typ, got, want)
		}
		if got, want := RepackedBytes(typ, rows, k), int64(3*k/packBlockElems(p.kind)*packBlockBytes(p.kind)); got != want {
			t.Errorf("%v: RepackedBytes = %d, want 3 groups: %d", typ, got, want)
		}
		x := newAct(t, b, 2, k, randFloats(r, 2*k, 1))
		full := newAct(t, b, 2, rows, nil)
		b.MatMul(full, x, w)
		for _, n := range []int{16, 5} {
			v := b.Slice(w, n)
			if v.(*Tensor).packed == nil {
				t.Errorf("%v: view of %d rows has no packed copy", typ, n)
			}
			dst := newAct(t, b, 2, n, nil)
			b.MatMul(dst, x, v)
			got, want := download(b, dst), download(b, full)
			for i := range 2 {
				for o := range n {
					if got[i*n+o] != want[i*rows+o] {
						t.Fatalf("%v: view of %d rows: dst[%d,%d] = %v, the weight's %v", typ, n, i, o, got[i*n+o], want[i*rows+o])
					}
				}
			}
		}
	}
}

// TestPackedMXFP4Scales: the packed kernels turn every E8M0 scale into
// gguf.E8M0Half's power of two, the two subnormal ones (e = 0, 1)
// included: rows whose blocks have scales 0 … 15 (row o's results are
// ~2^(o-128) times the activations', and checkDots' bound is relative to
// each).
func TestPackedMXFP4Scales(t *testing.T) {
	kind, ok := packedKind(gguf.TypeMXFP4, bestLevel)
	if !ok {
		t.Skip("MXFP4 is not packed on this machine")
	}
	const m, k, n = 16, 64, 3
	r := rand.New(rand.NewPCG(54, 55))
	data := make([]byte, m*k/32*17)
	for i := range m * k / 32 {
		blk := data[17*i : 17*i+17]
		blk[0] = byte(i / (k / 32)) // row i/2's scales: its row number
		for j := 1; j < 17; j++ {
			blk[j] = byte(r.Uint32())
		}
	}
	wf := make([]float32, m*k)
	if err := gguf.Dequantize(gguf.TypeMXFP4, data, wf); err != nil {
		t.Fatal(err)
	}
	b := newTestBackend(t)
	p := newWeight(t, b, gguf.TypeMXFP4, m, k, data).(*Tensor).packed
	xq, stride, xs := quantActs(kind, randFloats(r, n*k, 1e4), n, k)
	for _, l := range supportedLevels()[1:] {
		if _, ok := packedKind(gguf.TypeMXFP4, l); !ok {
			continue
		}
		for _, rows := range []int{n, 1} { // a tile, and decode's kernel
			dst := make([]float32, rows*m)
			matmulPackedX(kind, l, p.data, p.group, p.blocks, m, xq, stride, rows, k, dst, m)
			checkDots(t, dst, xs, wf, rows, k, m, matmulTol)
		}
	}
}
