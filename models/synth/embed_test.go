package synth

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"folio/internal/fixtures"
	"folio/models/gguf"
)

// TestEncoderStructure: the embedding architectures have llama.cpp's
// tensors (names, shapes, F32 token types) and keys, and no output matrix.
func TestEncoderStructure(t *testing.T) {
	for _, tc := range []struct {
		arch    string
		tensors []string // of the model, before the layers'
		layer   []string // of each layer
		after   []string // of the model, after the layers'
		keys    map[string]any
	}{
		{"bert",
			[]string{"token_embd.weight", "token_types.weight", "position_embd.weight", "token_embd_norm.weight", "token_embd_norm.bias"},
			[]string{"attn_q.weight", "attn_q.bias", "attn_k.weight", "attn_k.bias", "attn_v.weight", "attn_v.bias",
				"attn_output.weight", "attn_output.bias", "attn_output_norm.weight", "attn_output_norm.bias",
				"ffn_up.weight", "ffn_up.bias", "ffn_down.weight", "ffn_down.bias", "layer_output_norm.weight", "layer_output_norm.bias"},
			nil,
			map[string]any{"bert.pooling_type": int64(2), "bert.attention.layer_norm_epsilon": float64(float32(1e-12)),
				"tokenizer.ggml.model": "bert", "tokenizer.ggml.token_type_count": int64(2), "tokenizer.ggml.cls_token_id": int64(2)}},
		{"nomic-bert",
			[]string{"token_embd.weight", "token_types.weight", "token_embd_norm.weight", "token_embd_norm.bias"},
			[]string{"attn_qkv.weight", "attn_output.weight", "attn_output_norm.weight", "attn_output_norm.bias",
				"ffn_up.weight", "ffn_gate.weight", "ffn_down.weight", "layer_output_norm.weight", "layer_output_norm.bias"},
			nil,
			map[string]any{"nomic-bert.pooling_type": int64(2), "nomic-bert.rope.freq_base": 10000.0,
				"nomic-bert.attention.layer_norm_epsilon": float64(float32(1e-12))}},
		{"gemma-embedding",
			[]string{"token_embd.weight"},
			[]string{"attn_norm.weight", "attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_q_norm.weight", "attn_k_norm.weight",
				"attn_output.weight", "post_attention_norm.weight", "ffn_norm.weight", "ffn_gate.weight", "ffn_up.weight", "ffn_down.weight", "post_ffw_norm.weight"},
			[]string{"output_norm.weight", "dense_2.weight", "dense_3.weight"},
			map[string]any{"gemma-embedding.pooling_type": int64(2), "gemma-embedding.attention.sliding_window": int64(16),
				"gemma-embedding.dense_2_feat_out": int64(512), "gemma-embedding.dense_3_feat_in": int64(512),
				"gemma-embedding.attention.layer_norm_rms_epsilon": float64(float32(1e-6)), "tokenizer.ggml.model": "llama"}},
	} {
		t.Run(tc.arch, func(t *testing.T) {
			f := open(t, writeTiny(t, tc.arch, gguf.TypeQ8_0, 1, func(c *Config) { c.Pooling = "cls" }))
			var names []string
			for _, ti := range f.Tensors {
				names = append(names, ti.Name)
			}
			want := slices.Clone(tc.tensors)
			layers, _ := f.Int(tc.arch + ".block_count")
			for l := range layers {
				for _, n := range tc.layer {
					want = append(want, fmt.Sprintf("blk.%d.%s", l, n))
				}
			}
			want = append(want, tc.after...)
			if !slices.Equal(names, want) {
				t.Errorf("tensors:\n got %v\nwant %v", names, want)
			}
			if ti, ok := f.Tensor("token_types.weight"); ok && (ti.Type != gguf.TypeF32 || !slices.Equal(ti.Shape, []uint64{256, 2})) {
				t.Errorf("token_types.weight is %v %v, want F32 [256 2]", ti.Type, ti.Shape)
			}
			if ti, ok := f.Tensor("blk.0.attn_qkv.weight"); ok && !slices.Equal(ti.Shape, []uint64{256, 256 + 2*128}) {
				t.Errorf("attn_qkv.weight shape %v, want [256 512]", ti.Shape)
			}
			checkKeys(t, f, tc.keys)
			if v, ok := f.Get(tc.arch + ".attention.causal"); tc.arch != "gemma-embedding" && (!ok || v != false) {
				t.Errorf("%s.attention.causal = %v, want false", tc.arch, v)
			}
		})
	}
	if _, err := New(Config{Arch: "llama", Embd: 64, Layers: 1, Heads: 1, HeadsKV: 1, FFN: 64, Ctx: 64, Pooling: "mean"}); err == nil {
		t.Error("a llama with a pooling: no error")
	}
	if _, err := Tiny("bert", gguf.TypeF32, 1, func(c *Config) { c.Pooling = "max" }); err == nil {
		t.Error("pooling max: no error")
	}
}

// TestLlamaCppEmbeds runs the tiny preset of each embedding architecture
// in llama.cpp, weights of each type: it loads and embeds to a vector of
// the model's width that depends on the input.
func TestLlamaCppEmbeds(t *testing.T) {
	for _, arch := range []string{"bert", "nomic-bert", "gemma-embedding"} {
		for _, typ := range []gguf.TensorType{gguf.TypeF32, gguf.TypeQ8_0} {
			t.Run(arch+"/"+typ.String(), func(t *testing.T) {
				path := writeTiny(t, arch, typ, 1, nil)
				ids := []int32{2, 80, 75, 3} // [CLS] … [SEP]; BOS and three tokens for gemma-embedding
				if arch == "gemma-embedding" {
					ids = []int32{1, 80, 75, 90}
				}
				a := fixtures.LlamaEmbed(t, path, ids).Embedding
				ids[1]++
				b := fixtures.LlamaEmbed(t, path, ids).Embedding
				if len(a) != 256 || len(b) != 256 {
					t.Fatalf("embeddings of %d and %d values, want 256", len(a), len(b))
				}
				var d float64
				for i := range a {
					if math.IsNaN(a[i]) || math.IsInf(a[i], 0) {
						t.Fatalf("value %d is %v", i, a[i])
					}
					d = max(d, math.Abs(a[i]-b[i]))
				}
				if d < 1e-3 {
					t.Errorf("two inputs give embeddings within %g: the model barely depends on its input", d)
				}
			})
		}
	}
}
