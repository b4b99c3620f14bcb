package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"folio/models/gguf"
)

// BenchmarkPackedQ8 times the AVX-512 packed Q8_0 kernel on one thread at
// the tile sizes of batched decode (n = 8 … 25: a serving step of
// smollm-135m batches 16 sequences) besides 1, 2, 4 and 64: a 1024 × k
// weight, k = 576 (smollm's dim), 1536 (its FFN) and 2048.
func BenchmarkPackedQ8(b *testing.B) {
	const l, typ = levelAVX512, gguf.TypeQ8_0
	for _, n := range []int{1, 2, 4, 8, 16, 25, 64} {
		for _, k := range []int{576, 1536, 2048} {
			b.Run(fmt.Sprintf("n=%d/k=%d", n, k), func(b *testing.B) {
				if bestLevel < l {
					b.Skip("no AVX-512 on this machine")
				}
				const m = 1024
				r := rand.New(rand.NewPCG(1, 1))
				data, _ := quantWeight(b, r, typ, m, k)
				stride := xRowBytes(kindQ8_0, k)
				xq := alignedBytes(n * stride)
				quantizeX(kindQ8_0, randFloats(r, n*k, 1), k, n, k, xq, stride)
				dst := make([]float32, n*m)
				be := New(1)
				defer be.Close()
				be.level = l
				p := newWeight(b, be, typ, m, k, data).(*Tensor).packed
				b.SetBytes(int64(len(data)))
				for b.Loop() {
					matmulPackedX(kindQ8_0, l, p.data, p.group, p.blocks, m, xq, stride, n, k, dst, m)
				}
				b.ReportMetric(float64(b.N)*float64(n*m*k)/b.Elapsed().Seconds()/1e9, "GMAC/s")
			})
		}
	}
}
