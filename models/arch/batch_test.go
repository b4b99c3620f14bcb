package arch_test

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"testing"

	"folio/gpu"
	"folio/models/arch"
	"folio/models/gguf"
	"folio/models/synth"
)

// The same prompt must give the same logits however the engine schedules
// it: alone, batched with other sequences, in prefill chunks of any size,
// after a copy-on-write fork, and with any block size.

// sameTol bounds max|a−b| relative to max|logit| between two schedules.
const sameTol = 1e-5

func synthModel(t testing.TB, arch string, typ gguf.TensorType) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), arch+".gguf")
	err := synth.WriteTiny(path, arch, typ, 9, func(c *synth.Config) {
		if arch == "qwen3" {
			c.HeadDim = 96 // Heads·HeadDim ≠ Dim
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return path
}

func randomIDs(n int, seed uint64, vocab int) []int32 {
	r := rand.New(rand.NewPCG(seed, 1))
	ids := []int32{1}
	for len(ids) < n {
		ids = append(ids, int32(3+r.IntN(vocab-3)))
	}
	return ids
}

func assertSame(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if diff, scale := maxDiff(got, want); diff > sameTol*scale {
		t.Errorf("%s: max|diff| %.3g > %.0e × max|logit| %.3g", what, diff, sameTol, scale)
	}
}

func TestScheduleInvariance(t *testing.T) {
	for _, a := range []string{"llama", "qwen2", "qwen3", "phi3", "granite"} {
		t.Run(a, func(t *testing.T) {
			t.Parallel()
			path := synthModel(t, a, gguf.TypeQ8_0)
			r := openRig(t, path, 16, gguf.TypeF16)
			vocab := r.m.Vocab
			p := randomIDs(45, 1, vocab)
			want := r.prompt(t, p)

			t.Run("batched", func(t *testing.T) {
				other1, other2 := randomIDs(20, 2, vocab), randomIDs(33, 3, vocab)
				got := r.run(t, []seqRun{
					{ids: other1, table: r.table(1)},
					{ids: p, table: r.table(0)},
					{ids: other2, table: r.table(2)},
				})
				assertSame(t, "middle of a batch of 3", got[1], want)
				// decode steps mixed with a prefill chunk in one batch
				got = r.run(t, []seqRun{
					{ids: randomIDs(10, 4, vocab), table: r.table(3)},
					{ids: p[44:], pos: 44, table: r.table(0)},
					{ids: []int32{7}, pos: 20, table: r.table(1)},
				})
				assertSame(t, "decode row among prefill and decode rows", got[1], want)
			})
			for _, chunk := range []int{1, 7, 16, 33} {
				t.Run("chunks", func(t *testing.T) {
					var got []float32
					for from := 0; from < len(p); from += chunk {
						to := min(from+chunk, len(p))
						got = r.run(t, []seqRun{{ids: p[from:to], pos: from, table: r.table(0)}})[0]
					}
					assertSame(t, "chunks of "+strconv.Itoa(chunk), got, want)
				})
			}
			t.Run("fork", func(t *testing.T) {
				// Parent runs 37 tokens (2 full blocks and 5 tokens of a
				// third); the child shares the full blocks, gets a copy of
				// the partial one, and both go on with different tokens.
				const k = 37
				parent := r.table(0)
				r.run(t, []seqRun{{ids: p[:k], table: parent}})
				child := append([]int32{}, parent[:2]...)
				child = append(child, r.table(1)...)
				r.m.Backend().CopyBlocks(r.kv, []gpu.BlockCopy{{Src: parent[2], Dst: child[2]}})
				// the parent overwrites the rest of its third block first
				r.run(t, []seqRun{{ids: randomIDs(8, 5, vocab), pos: k, table: parent}})
				got := r.run(t, []seqRun{{ids: p[k:], pos: k, table: child}})[0]
				assertSame(t, "child after copy-on-write fork", got, want)
			})
		})
	}
}

func TestBlockSizes(t *testing.T) {
	path := synthModel(t, "llama", gguf.TypeF32)
	p := randomIDs(100, 6, 512)
	want := openRig(t, path, 16, gguf.TypeF32).prompt(t, p)
	for _, bs := range []int{8, 32, 64} {
		got := openRig(t, path, bs, gguf.TypeF32).prompt(t, p)
		assertSame(t, "block size "+strconv.Itoa(bs), got, want)
	}
}

// Every architecture ReadConfig accepts builds its blocks and runs a pass:
// an entry the table knows without a block constructor would be a nil call
// here, not in a user's first request.
func TestEveryArchitectureRuns(t *testing.T) {
	for _, a := range arch.Architectures() {
		t.Run(a, func(t *testing.T) {
			r := openRig(t, synthModel(t, a, gguf.TypeF32), 16, gguf.TypeF32)
			if got := r.m.Config.Arch; got != a {
				t.Fatalf("loaded architecture %q, want %q", got, a)
			}
			ids, n := randomIDs(20, 1, r.m.Config.Vocab), r.m.Config.Vocab
			var logits []float32
			if r.m.Encoder { // hidden states instead of logits
				rows := r.hidden(t, []seqRun{{ids: ids, table: r.table(0)}})[0]
				logits, n = pool(rows, r.m.Pooling), r.m.Dim
			} else {
				logits = r.prompt(t, ids)
			}
			if len(logits) != n {
				t.Fatalf("%d values, want %d", len(logits), n)
			}
			for i, l := range logits {
				if math.IsNaN(float64(l)) || math.IsInf(float64(l), 0) {
					t.Fatalf("logit %d is %v", i, l)
				}
			}
		})
	}
}
