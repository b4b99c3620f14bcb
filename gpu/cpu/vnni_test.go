package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"folio/models/gguf"
)

// TestVNNIMatchesAVX2: the AVX-VNNI kernels compute the AVX2 ones' integer
// sums another way (vpdpbusd, vpdpwssd) and scale them by the same float
// ops in the same order, so their results are the same bits: the packed
// kernels (Q4_0, Q4_K, Q8_0; one activation row and tiles, rows not a
// whole group) and the unpacked ones the level has its own of (Q6_K,
// MXFP4).
func TestVNNIMatchesAVX2(t *testing.T) {
	if !slices.Contains(supportedLevels(), levelAVXVNNI) {
		t.Skipf("this CPU runs %v, not AVX-VNNI (avx_vnni in /proc/cpuinfo): nothing to compare", supportedLevels())
	}
	r := rand.New(rand.NewPCG(60, 61))
	b := newTestBackend(t)
	b.k = kernelsAt(levelAVXVNNI)
	for _, typ := range []gguf.TensorType{gguf.TypeQ4_0, gguf.TypeQ4_K, gguf.TypeQ8_0, gguf.TypeQ6_K, gguf.TypeMXFP4} {
		kind, _ := kernelFor(typ, levelAVXVNNI)
		_, packed := packedKind(typ, levelAVXVNNI)
		for _, k := range awkwardKs(kind) {
			for _, nm := range [][2]int{{1, 1}, {1, 23}, {2, 16}, {3, 9}, {4, 33}, {7, 17}, {9, 40}} {
				n, m := nm[0], nm[1]
				t.Run(fmt.Sprintf("%v/packed=%v/n=%d,k=%d,m=%d", typ, packed, n, k, m), func(t *testing.T) {
					data, _ := quantWeight(t, r, typ, m, k)
					stride := xRowBytes(kind, k)
					xq := alignedBytes(n * stride)
					quantizeX(kind, randFloats(r, n*k, 1), k, n, k, xq, stride)
					run := func(l simdLevel) []float32 {
						dst := make([]float32, n*m)
						if packed {
							p := newWeight(t, b, typ, m, k, data).(*Tensor).packed
							matmulPackedX(kind, l, p.data, p.group, p.blocks, m, xq, stride, n, k, dst, m)
						} else {
							matmulX(kind, l, data, len(data)/m, m, xq, stride, n, k, dst, m)
						}
						return dst
					}
					want, got := run(levelAVX2), run(levelAVXVNNI)
					for j := range want {
						if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
							t.Fatalf("dst[%d] (row %d of x, of w %d) = %v at avxvnni, %v at avx2", j, j/m, j%m, got[j], want[j])
						}
					}
				})
			}
		}
	}
}
