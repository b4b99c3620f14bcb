package cpu

import (
	"fmt"
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
				benchKernel(b, l, kindQ8_0, typ, n, k, true)
			})
		}
	}
}
