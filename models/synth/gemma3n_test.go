package synth

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"folio/models/gguf"
)

// TestGemma3nStructure checks the tiny gemma3n file against llama.cpp's
// loader (src/models/gemma3n.cpp: its fixed 256-wide per-layer
// embeddings, LAuReL rank 64 and four AltUp copies) and the keys its
// converter writes, in a K-quant: AltUp's, LAuReL's and
// per_layer_model_proj stay F32, as llama.cpp's quantizer leaves them.
func TestGemma3nStructure(t *testing.T) {
	typ, f32 := gguf.TypeQ4_K, gguf.TypeF32
	m, err := Tiny("gemma3n", typ, 7)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Fallbacks) != 0 {
		t.Errorf("fallbacks %v: every row of the tiny preset fills Q4_K's blocks", m.Fallbacks)
	}
	path := t.TempDir() + "/gemma3n.gguf"
	if err := m.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	f := open(t, path)
	checkKeys(t, f, map[string]any{
		"gemma3n.block_count":                      int64(25),
		"gemma3n.embedding_length":                 int64(256),
		"gemma3n.attention.head_count":             int64(4),
		"gemma3n.attention.head_count_kv":          int64(2),
		"gemma3n.attention.key_length":             int64(64),
		"gemma3n.attention.value_length":           int64(64),
		"gemma3n.attention.sliding_window":         int64(16),
		"gemma3n.attention.layer_norm_rms_epsilon": float64(float32(1e-6)),
		"gemma3n.attention.shared_kv_layers":       int64(5),
		"gemma3n.rope.freq_base":                   1e6,
		"gemma3n.rope.freq_base_swa":               1e4,
		"gemma3n.final_logit_softcapping":          30.0,
		"gemma3n.embedding_length_per_layer_input": int64(256),
		"gemma3n.altup.active_idx":                 int64(0),
		"gemma3n.altup.num_inputs":                 int64(4),
		"general.name":                             "synth-gemma3n-25x256-Q4_K",
		"general.file_type":                        int64(14),
		"gemma3n.context_length":                   int64(2048),
		"gemma3n.rope.dimension_count":             int64(64),
		"gemma3n.vocab_size":                       int64(512),
	})
	pattern, ok := arrayKey[bool](f, "gemma3n.attention.sliding_window_pattern")
	if want := 25; !ok || len(pattern) != want {
		t.Fatalf("sliding_window_pattern %v, want %d bools", pattern, want)
	}
	for l, windowed := range pattern {
		if windowed != (l%5 != 4) {
			t.Errorf("layer %d windowed %v; every fifth layer (4, 9, ...) is global", l, windowed)
		}
	}
	if ffn, ok := arrayKey[uint32](f, "gemma3n.feed_forward_length"); !ok || len(ffn) != 25 || slices.ContainsFunc(ffn, func(w uint32) bool { return w != 512 }) {
		t.Errorf("feed_forward_length %v, want 25 widths of 512", ffn)
	}
	sparsity, ok := arrayKey[float32](f, "gemma3n.activation_sparsity_scale")
	if !ok || len(sparsity) != 25 {
		t.Fatalf("activation_sparsity_scale %v, want 25 values", sparsity)
	}
	for l, s := range sparsity {
		if l < 10 && s != float32(1.6448533535003662) || l >= 10 && !math.IsInf(float64(s), -1) {
			t.Errorf("activation_sparsity_scale[%d] = %v, want the normal's 0.95 quantile on layers 0-9, -Inf after", l, s)
		}
	}

	want := []wantTensor{
		{"token_embd.weight", []uint64{256, 512}, typ},
		{"altup_proj.weight", []uint64{256, 256, 3}, f32},
		{"altup_unembd_proj.weight", []uint64{256, 256, 3}, f32},
		{"per_layer_token_embd.weight", []uint64{256 * 25, 512}, typ},
		{"per_layer_model_proj.weight", []uint64{256, 256 * 25}, f32},
		{"per_layer_proj_norm.weight", []uint64{256}, f32},
	}
	for l := range 25 {
		p := fmt.Sprintf("blk.%d.", l)
		want = append(want,
			wantTensor{p + "attn_norm.weight", []uint64{256}, f32},
			wantTensor{p + "attn_q.weight", []uint64{256, 256}, typ},
			wantTensor{p + "attn_k.weight", []uint64{256, 128}, typ}, // on the shared layers too
			wantTensor{p + "attn_v.weight", []uint64{256, 128}, typ},
			wantTensor{p + "attn_q_norm.weight", []uint64{64}, f32},
			wantTensor{p + "attn_k_norm.weight", []uint64{64}, f32},
			wantTensor{p + "attn_output.weight", []uint64{256, 256}, typ},
			wantTensor{p + "post_attention_norm.weight", []uint64{256}, f32},
			wantTensor{p + "ffn_norm.weight", []uint64{256}, f32},
			wantTensor{p + "ffn_gate.weight", []uint64{256, 512}, typ},
			wantTensor{p + "ffn_up.weight", []uint64{256, 512}, typ},
			wantTensor{p + "ffn_down.weight", []uint64{512, 256}, typ},
			wantTensor{p + "post_ffw_norm.weight", []uint64{256}, f32},
			wantTensor{p + "inp_gate.weight", []uint64{256, 256}, typ},
			wantTensor{p + "proj.weight", []uint64{256, 256}, typ},
			wantTensor{p + "post_norm.weight", []uint64{256}, f32},
			wantTensor{p + "altup_correct_coef.weight", []uint64{4, 4}, f32},
			wantTensor{p + "altup_correct_scale.weight", []uint64{256}, f32},
			wantTensor{p + "altup_predict_coef.weight", []uint64{4, 16}, f32},
			wantTensor{p + "altup_router.weight", []uint64{256, 4}, f32},
			wantTensor{p + "altup_router_norm.weight", []uint64{256}, f32},
			wantTensor{p + "laurel_l.weight", []uint64{256, 64}, f32},
			wantTensor{p + "laurel_r.weight", []uint64{64, 256}, f32},
			wantTensor{p + "laurel_post_norm.weight", []uint64{256}, f32})
	}
	want = append(want, wantTensor{"output_norm.weight", []uint64{256}, f32}) // tied: no output.weight
	checkTensors(t, f, want)
}

// arrayKey is f's array value of key as a []T.
func arrayKey[T any](f *gguf.File, key string) ([]T, bool) {
	v, _ := f.Get(key)
	a, ok := v.(gguf.Array)
	if !ok {
		return nil, false
	}
	vs, ok := a.Values.([]T)
	return vs, ok
}

// TestGemma3nConfig: llama.cpp fixes gemma3n's per-layer width, its
// shared layers (those from the 20th on) and its soft-cap, so the sizes
// follow the layer count and other values are refused.
func TestGemma3nConfig(t *testing.T) {
	for _, tc := range []struct {
		layers, shared int
	}{{25, 5}, {30, 10}, {35, 15}, {20, 0}, {6, 0}} {
		m, err := Tiny("gemma3n", gguf.TypeQ8_0, 1, func(c *Config) { c.Layers = tc.layers })
		if err != nil {
			t.Fatalf("%d layers: %v", tc.layers, err)
		}
		if c := m.Config; c.SharedKV != tc.shared || c.PLEDim != 256 || c.LogitCap != 30 {
			t.Errorf("%d layers: %d shared, per-layer width %d, soft-cap %v; want %d, 256, 30", tc.layers, c.SharedKV, c.PLEDim, c.LogitCap, tc.shared)
		}
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
	}{
		{"per-layer width", func(c *Config) { c.PLEDim = 128 }},
		{"shared layers", func(c *Config) { c.SharedKV = 4 }},
		{"soft-cap", func(c *Config) { c.LogitCap = 20 }},
		{"untied", func(c *Config) { c.Tied = false }},
		{"gemma4's windowed heads", func(c *Config) { c.SWAHeadDim = 32 }},
		{"experts", func(c *Config) { c.Experts, c.ExpertsUsed = 4, 2 }},
	} {
		if _, err := Tiny("gemma3n", gguf.TypeQ8_0, 1, tc.edit); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: err = %v, want ErrConfig", tc.name, err)
		}
	}
	if _, err := Tiny("gemma3", gguf.TypeQ8_0, 1, func(c *Config) { c.PLEDim = 256 }); !errors.Is(err, ErrConfig) {
		t.Errorf("per-layer embeddings on gemma3: err = %v, want ErrConfig", err)
	}
}

// TestGemma3nLlamaCpp runs the tiny gemma3n in llama.cpp over 41 tokens
// (past the 16-token window) in the types a model is used in: finite
// logits that span more than 1, and F16's within 0.015 of the F32 model's
// spread of its logits (0.0057 measured; 0.11 with Q's and K's norm
// weights at 1, where a rounding swings a random model's output).
func TestGemma3nLlamaCpp(t *testing.T) {
	text := "Once upon a time, a small fox ran far away."
	ids := []string{"1"} // BOS, then each byte's <0xNN> token
	for _, b := range []byte(text) {
		ids = append(ids, fmt.Sprint(int(b)+3))
	}
	tokens := "[" + strings.Join(ids, ",") + "]"
	var ref []float64
	for _, typ := range []gguf.TensorType{gguf.TypeF32, gguf.TypeF16, gguf.TypeQ8_0, gguf.TypeQ4_0, gguf.TypeQ4_K, gguf.TypeQ6_K} {
		t.Run(typ.String(), func(t *testing.T) {
			r := llamaRun(t, writeTiny(t, "gemma3n", typ, 3, nil), tokens, 4)
			if r.Model.Architecture != "gemma3n" {
				t.Errorf("llama.cpp sees architecture %q", r.Model.Architecture)
			}
			checkLogits(t, r.NextToken.Logits, 512)
			if len(r.Greedy.IDs) != 4 {
				t.Errorf("greedy gave %d tokens, want 4", len(r.Greedy.IDs))
			}
			switch typ {
			case gguf.TypeF32:
				ref = r.NextToken.Logits
			case gguf.TypeF16:
				if ref == nil {
					t.Skip("no F32 logits to compare with")
				}
				got := make([]float32, len(ref))
				want := make([]float32, len(ref))
				var mean float64
				for i := range ref {
					mean += ref[i] / float64(len(ref))
				}
				for i := range ref {
					got[i], want[i] = float32(r.NextToken.Logits[i]-mean), float32(ref[i]-mean)
				}
				d := relRMS(got, want)
				t.Logf("F16's logits %.5f of the F32 model's spread off", d)
				if d > 0.015 {
					t.Errorf("F16's logits %.4f of the F32 model's spread off, want below 0.015", d)
				}
			}
		})
	}
}
