package arch_test

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"folio/gpu"
	"folio/internal/fixtures"
	"folio/models/arch"
	"folio/models/gguf"
	"folio/models/synth"
)

// minCosine is the least cosine similarity allowed between folio's
// embedding of an F32 model and llama.cpp's.
const minCosine = 0.9999

// encoderModel writes the tiny preset of an embedding architecture with
// the given pooling, F32.
func encoderModel(t testing.TB, arch, pooling string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), arch+"-"+pooling+".gguf")
	if err := synth.WriteTiny(path, arch, gguf.TypeF32, 3, func(c *synth.Config) { c.Pooling = pooling }); err != nil {
		t.Fatal(err)
	}
	return path
}

// wordPieceIDs is [CLS], n-2 random tokens, [SEP] of synth's WordPiece
// vocabulary padded to vocab tokens.
func wordPieceIDs(n int, seed uint64, vocab int) []int32 {
	r := rand.New(rand.NewPCG(seed, 7))
	ids := []int32{2}
	for len(ids) < n-1 {
		ids = append(ids, int32(5+r.IntN(vocab-5)))
	}
	return append(ids, 3)
}

// hidden runs the sequences as one batch through Hidden and returns each
// one's rows, [len(ids)][Dim].
func (r *rig) hidden(t testing.TB, seqs []seqRun) [][][]float32 {
	t.Helper()
	b := &gpu.Batch{BlockSize: r.bs}
	var tokens []int32
	for _, s := range seqs {
		b.Seqs = append(b.Seqs, gpu.Seq{Start: len(tokens), Len: len(s.ids), Pos: s.pos, Blocks: s.table})
		tokens = append(tokens, s.ids...)
	}
	h, err := r.m.Hidden(r.kv, b, tokens)
	if err != nil {
		t.Fatal(err)
	}
	dim := h.Cols()
	all := make([]float32, h.Rows()*dim)
	r.m.Backend().Download(all, h)
	out := make([][][]float32, len(seqs))
	row := 0
	for i, s := range seqs {
		for range s.ids {
			out[i] = append(out[i], all[row*dim:(row+1)*dim])
			row++
		}
	}
	return out
}

// pool is the definition of each pooling: the mean of the rows, the first
// row, the last row.
func pool(rows [][]float32, p arch.Pooling) []float32 {
	switch p {
	case arch.PoolMean:
		out := make([]float32, len(rows[0]))
		for j := range out {
			var s float64
			for _, r := range rows {
				s += float64(r[j])
			}
			out[j] = float32(s / float64(len(rows)))
		}
		return out
	case arch.PoolCLS:
		return rows[0]
	}
	return rows[len(rows)-1]
}

// inputIDs is n tokens for the tiny model of arch: WordPiece's [CLS] …
// [SEP] for the BERTs, BOS and random tokens for the SentencePiece ones.
func inputIDs(arch string, n int, seed uint64, vocab int) []int32 {
	if arch == "gemma-embedding" {
		return randomIDs(n, seed, vocab)
	}
	return wordPieceIDs(n, seed, vocab)
}

// TestEncodersMatchLlamaCpp: the pooled (and, for gemma-embedding,
// projected) embedding of each embedding architecture and pooling agrees
// with llama.cpp's (node-llama-cpp's getEmbeddingFor) to cosine ≥ 0.9999,
// the sequence in the middle of a batch of three with scrambled block
// tables, over several blocks and past gemma-embedding's 16-token window.
func TestEncodersMatchLlamaCpp(t *testing.T) {
	for _, tc := range []struct{ arch, pooling string }{
		{"bert", "mean"}, {"bert", "cls"}, {"bert", "last"},
		{"nomic-bert", "mean"}, {"nomic-bert", "cls"},
		{"gemma-embedding", "mean"}, {"gemma-embedding", "last"},
	} {
		t.Run(tc.arch+"/"+tc.pooling, func(t *testing.T) {
			path := encoderModel(t, tc.arch, tc.pooling)
			r := openRig(t, path, 16, gguf.TypeF32)
			if !r.m.Encoder || r.m.Pooling.String() != tc.pooling {
				t.Fatalf("config: encoder %v, pooling %v; want an encoder pooling %s", r.m.Encoder, r.m.Pooling, tc.pooling)
			}
			ids := inputIDs(tc.arch, 41, 1, r.m.Vocab)
			ref := fixtures.LlamaEmbed(t, path, ids)
			rows := r.hidden(t, []seqRun{
				{ids: inputIDs(tc.arch, 23, 2, r.m.Vocab), table: r.table(1)},
				{ids: ids, table: r.table(0)},
				{ids: inputIDs(tc.arch, 9, 3, r.m.Vocab), table: r.table(2)},
			})[1]
			got := slices.Clone(pool(rows, r.m.Pooling))
			r.m.Project(got)
			cos, err := fixtures.Cosine(got, ref.Embedding)
			if err != nil {
				t.Fatal(err)
			}
			var diff, scale float64
			for i, v := range ref.Embedding {
				diff, scale = max(diff, math.Abs(float64(got[i])-v)), max(scale, math.Abs(v))
			}
			t.Logf("1 − cosine %.2g, max|Δ| %.2g × max|value| %.3g (%d values)", 1-cos, diff/scale, scale, len(got))
			if cos < minCosine {
				t.Errorf("cosine %.6f to llama.cpp's embedding, want ≥ %v", cos, minCosine)
			}
		})
	}
}

// TestEncoderWholeInput: an encoder refuses logits and a sequence that
// does not start at position 0 (its rows would miss the earlier ones);
// bert refuses positions past its position embeddings.
func TestEncoderWholeInput(t *testing.T) {
	r := openRig(t, encoderModel(t, "bert", "cls"), 16, gguf.TypeF32)
	ids := wordPieceIDs(8, 1, r.m.Vocab)
	b := &gpu.Batch{BlockSize: 16, Seqs: []gpu.Seq{{Len: len(ids), Pos: 0, Blocks: r.table(0)}}}
	if _, err := r.m.Forward(r.kv, b, ids, []int32{7}); err == nil || !strings.Contains(err.Error(), "not logits") {
		t.Errorf("Forward asking logits of bert: %v, want an error saying it makes embeddings", err)
	}
	b.Seqs[0].Pos = 16
	if _, err := r.m.Hidden(r.kv, b, ids); err == nil || !strings.Contains(err.Error(), "position 16") {
		t.Errorf("Hidden of a sequence at position 16: %v, want an error naming the position", err)
	}
	path := filepath.Join(t.TempDir(), "bert-ctx64.gguf")
	if err := synth.WriteTiny(path, "bert", gguf.TypeF32, 3, func(c *synth.Config) { c.Ctx = 64 }); err != nil {
		t.Fatal(err)
	}
	r2 := openRig(t, path, 16, gguf.TypeF32)
	long := wordPieceIDs(65, 1, r2.m.Vocab)
	b = &gpu.Batch{BlockSize: 16, Seqs: []gpu.Seq{{Len: len(long), Blocks: r2.table(0)}}}
	if _, err := r2.m.Hidden(r2.kv, b, long); err == nil || !strings.Contains(err.Error(), "position embeddings for 64") {
		t.Errorf("Hidden of 65 tokens with 64 position embeddings: %v, want an error saying so", err)
	}
}
