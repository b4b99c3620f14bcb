package synth

import (
	"fmt"
	"testing"

	"folio/models/gguf"
)

// TestGemmaStructure checks the tiny gemma2 and gemma3 files against
// llama.cpp's tensor list (src/models/gemma2.cpp, gemma3.cpp) and keys.
func TestGemmaStructure(t *testing.T) {
	for _, tc := range []struct {
		arch   string
		layers int
		kvDim  uint64
		qDim   uint64
		keys   map[string]any
	}{
		{"gemma2", 2, 128, 256, map[string]any{
			"gemma2.attention.sliding_window": int64(16),
			"gemma2.attn_logit_softcapping":   float64(5),
			"gemma2.final_logit_softcapping":  float64(4),
			"gemma2.attention.key_length":     int64(64),
			"gemma2.rope.freq_base":           10000.0,
		}},
		{"gemma3", 6, 128, 512, map[string]any{
			"gemma3.attention.sliding_window": int64(16),
			"gemma3.attention.key_length":     int64(128),
			"gemma3.attention.value_length":   int64(128),
			"gemma3.attention.head_count_kv":  int64(1),
			"gemma3.rope.freq_base":           1e6,
			"gemma3.rope.scaling.type":        "linear",
			"gemma3.rope.scaling.factor":      8.0,
		}},
	} {
		t.Run(tc.arch, func(t *testing.T) {
			typ, f32 := gguf.TypeQ8_0, gguf.TypeF32
			f := open(t, writeTiny(t, tc.arch, typ, 7, nil))
			checkKeys(t, f, tc.keys)
			if _, ok := f.Get("gemma3.attn_logit_softcapping"); ok {
				t.Error("gemma3 file has an attention soft-cap")
			}
			want := []wantTensor{{"token_embd.weight", []uint64{256, 512}, typ}}
			for l := range tc.layers {
				p := fmt.Sprintf("blk.%d.", l)
				want = append(want,
					wantTensor{p + "attn_norm.weight", []uint64{256}, f32},
					wantTensor{p + "attn_q.weight", []uint64{256, tc.qDim}, typ},
					wantTensor{p + "attn_k.weight", []uint64{256, tc.kvDim}, typ},
					wantTensor{p + "attn_v.weight", []uint64{256, tc.kvDim}, typ})
				if tc.arch == "gemma3" {
					want = append(want,
						wantTensor{p + "attn_q_norm.weight", []uint64{128}, f32},
						wantTensor{p + "attn_k_norm.weight", []uint64{128}, f32})
				}
				want = append(want,
					wantTensor{p + "attn_output.weight", []uint64{tc.qDim, 256}, typ},
					wantTensor{p + "post_attention_norm.weight", []uint64{256}, f32},
					wantTensor{p + "ffn_norm.weight", []uint64{256}, f32},
					wantTensor{p + "ffn_gate.weight", []uint64{256, 512}, typ},
					wantTensor{p + "ffn_up.weight", []uint64{256, 512}, typ},
					wantTensor{p + "ffn_down.weight", []uint64{512, 256}, typ},
					wantTensor{p + "post_ffw_norm.weight", []uint64{256}, f32})
			}
			want = append(want, wantTensor{"output_norm.weight", []uint64{256}, f32}) // tied: no output.weight
			checkTensors(t, f, want)
		})
	}
}

// TestGemmaPresets plans the real shapes (nothing is written): their
// parameter counts are the published models' (Gemma 3 4B's text part).
func TestGemmaPresets(t *testing.T) {
	for name, want := range map[string]int64{"gemma3-1b": 999_885_952, "gemma3-4b": 3_880_263_168, "gemma2-2b": 2_614_341_888} {
		c, err := ArchPreset("", name)
		if err != nil {
			t.Fatal(err)
		}
		m, err := New(c)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := m.Params(); got != want {
			t.Errorf("%s: %d parameters, want %d", name, got, want)
		}
	}
}
