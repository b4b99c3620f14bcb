package runner

import (
	"context"
	"path/filepath"
	"testing"

	"folio/internal/fixtures"
	"folio/models/gguf"
	"folio/models/synth"
	"folio/models/tokenizer"
)

// TestEmbedMatchesLlamaCpp: Engine.Embed of an embedding model, the whole
// input in one pass and pooled as the file says, agrees with llama.cpp's
// embedding to cosine ≥ 0.9999, for input longer than num_batch would be
// for a generative model and past gemma-embedding's 16-token window (its
// windowed layers in a sliding group's cache of their own).
func TestEmbedMatchesLlamaCpp(t *testing.T) {
	for _, tc := range []struct{ arch, pooling string }{{"bert", "cls"}, {"nomic-bert", "mean"}, {"gemma-embedding", "mean"}} {
		t.Run(tc.arch, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tc.arch+".gguf")
			if err := synth.WriteTiny(path, tc.arch, gguf.TypeF32, 4, func(c *synth.Config) { c.Pooling, c.Ctx = tc.pooling, 512 }); err != nil {
				t.Fatal(err)
			}
			m, err := Load(path, LoadOptions{KVType: "f32", NumBatch: 32, Device: "cpu", Threads: 2})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { m.Close() })
			if m.Opt.NumBatch != 512 {
				t.Errorf("num_batch %d, want 512: an encoder's whole input goes in one pass", m.Opt.NumBatch)
			}
			e := newEngine(t, m, EngineOptions{})
			ids := m.Tok.Encode("the quick brown fox jumps over the lazy dog, twice: the quick brown fox jumps over the lazy dog.", tokenizer.EncodeOptions{AddSpecial: true})
			bos := m.Tok.Vocab().BOS // [CLS] for the BERTs, then [SEP] last
			if len(ids) <= 32 || ids[0] != bos || tc.arch != "gemma-embedding" && ids[len(ids)-1] != m.Tok.Vocab().SEP {
				t.Fatalf("ids %v: want more than 32, BOS first (and [SEP] last for BERT)", ids)
			}
			got, err := e.Embed(context.Background(), ids)
			if err != nil {
				t.Fatal(err)
			}
			ref := fixtures.LlamaEmbed(t, path, ids)
			cos, err := fixtures.Cosine(got, ref.Embedding)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s %s pooling, %d tokens: 1 − cosine %.2g to llama.cpp's", tc.arch, tc.pooling, len(ids), 1-cos)
			if cos < 0.9999 {
				t.Errorf("cosine %.6f to llama.cpp's embedding, want ≥ 0.9999", cos)
			}
		})
	}
}
