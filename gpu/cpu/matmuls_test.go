package cpu

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"folio/gpu"
	"folio/models/gguf"
)

// MatMuls gives, bit for bit, what one MatMul per weight gives: for
// weights of one kernel (one op over all their rows, a part's last group
// short), of different kernels (one MatMul each), through gpu.MatMuls,
// for a decode row, a batch and a prefill taller than a tile; and x's
// quantization is still reused by a MatMul after it.
func TestMatMuls(t *testing.T) {
	r := rand.New(rand.NewPCG(70, 71))
	const k = 256
	type wt struct {
		typ  gguf.TensorType
		rows int
	}
	sets := [][]wt{
		{{gguf.TypeQ8_0, 72}, {gguf.TypeQ8_0, 24}, {gguf.TypeQ8_0, 24}}, // Q, K, V
		{{gguf.TypeQ4_K, 100}, {gguf.TypeQ4_K, 100}},                    // gate, up
		{{gguf.TypeQ4_K, 48}, {gguf.TypeQ4_K, 16}, {gguf.TypeQ6_K, 16}}, // Q4_K_M: V in Q6_K
		{{gguf.TypeF32, 20}, {gguf.TypeQ8_0, 33}},                       // no shared kernel
	}
	for si, set := range sets {
		for _, n := range []int{1, 16, 130} {
			t.Run(fmt.Sprintf("set%d/n=%d", si, n), func(t *testing.T) {
				b := newTestBackend(t)
				xf := randFloats(r, n*k, 1)
				x := newAct(t, b, n, k, xf)
				var ws, dsts, singles []gpu.Tensor
				for _, w := range set {
					data, _ := quantWeight(t, r, w.typ, w.rows, k)
					ws = append(ws, newWeight(t, b, w.typ, w.rows, k, data))
					dsts = append(dsts, newAct(t, b, n, w.rows, nil))
					singles = append(singles, newAct(t, b, n, w.rows, nil))
				}
				for i := range ws {
					b.MatMul(singles[i], x, ws[i])
				}
				b.Add(x, x, x) // an op: the next MatMuls quantizes x again
				b.Upload(x, xf)
				b.MatMuls(dsts, x, ws)
				for i := range ws {
					if !slices.Equal(download(b, dsts[i]), download(b, singles[i])) {
						t.Fatalf("MatMuls: weight %d (%v, %d rows) differs from its MatMul", i, set[i].typ, set[i].rows)
					}
				}
				b.MatMul(singles[0], x, ws[0]) // reuses x quantized by MatMuls
				if !slices.Equal(download(b, dsts[0]), download(b, singles[0])) {
					t.Fatal("a MatMul after MatMuls differs")
				}
				clear(dsts)
				for i := range ws {
					dsts[i] = newAct(t, b, n, set[i].rows, nil)
				}
				gpu.MatMuls(b, dsts, x, ws)
				for i := range ws {
					if !slices.Equal(download(b, dsts[i]), download(b, singles[i])) {
						t.Fatalf("gpu.MatMuls: weight %d differs", i)
					}
				}
			})
		}
	}
}
