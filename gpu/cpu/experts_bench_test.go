package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"folio/gpu"
	"folio/models/gguf"
)

// BenchmarkExpertMatMuls times one ExpertMatMuls op of qwen3moe-mini's
// shape (64 experts of gate and up, 768 × 1024 Q4_K, each row choosing 8
// at random) over 1 and 16 rows on 1 and 2 threads, as bytes of the
// chosen experts' weights per second. Twenty layers of experts (2.2 GB
// with their repacked copies) take turns, so that the weights stream from
// memory as a model's do, not from the last-level cache.
func BenchmarkExpertMatMuls(b *testing.B) {
	const experts, top, dim, ff, layers = 64, 8, 1024, 768, 20
	for _, threads := range []int{1, 2} {
		for _, n := range []int{1, 16} {
			b.Run(fmt.Sprintf("threads=%d/rows=%d", threads, n), func(b *testing.B) {
				be := New(threads)
				defer be.Close()
				r := rand.New(rand.NewPCG(1, 1))
				one, _ := quantWeight(b, r, gguf.TypeQ4_K, ff, dim)
				ws := make([][][]gpu.Tensor, layers) // layer, gate or up, expert
				for l := range ws {
					ws[l] = make([][]gpu.Tensor, 2)
					for j := range ws[l] {
						for range experts {
							w, err := be.Weight("expert", gguf.TypeQ4_K, ff, dim, append([]byte(nil), one...))
							if err != nil {
								b.Fatal(err)
							}
							ws[l][j] = append(ws[l][j], w)
						}
					}
				}
				x, _ := be.NewTensor(n, dim)
				copy(be.tensor(x).f32, randFloats(r, n*dim, 1))
				chose := make([][]int32, experts) // the rows that chose each expert
				for i := range n {
					for _, e := range r.Perm(experts)[:top] {
						chose[e] = append(chose[e], int32(i))
					}
				}
				var rows []int32
				var spans []gpu.ExpertSpan
				for e, rs := range chose {
					if len(rs) > 0 {
						spans = append(spans, gpu.ExpertSpan{Expert: e, Start: len(rows), Len: len(rs)})
						rows = append(rows, rs...)
					}
				}
				gate, _ := be.NewTensor(len(rows), ff)
				up, _ := be.NewTensor(len(rows), ff)
				b.SetBytes(int64(2 * len(spans) * len(one)))
				l := 0
				for b.Loop() {
					be.ExpertMatMuls([]gpu.Tensor{gate, up}, x, rows, ws[l], spans)
					l = (l + 1) % layers
				}
			})
		}
	}
}
