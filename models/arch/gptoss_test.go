package arch_test

import (
	"path/filepath"
	"testing"

	"folio/models/gguf"
	"folio/models/synth"
)

// TestGptossLlamaCpp: the tiny gpt-oss (biases on attention, router and
// experts, attention sinks, a window of 16 on every other layer, YaRN rope,
// top-4 of 8 experts with softmax after the choice, SwiGLUOAI) gives
// llama.cpp's logits for prompts longer than the window, alone and batched
// through scrambled block tables, and for a decode step after them; in F32
// and as gpt-oss's release has it (experts in MXFP4, the other matrices
// in BF16).
func TestGptossLlamaCpp(t *testing.T) {
	prompts := [][]int32{moePrompt(41, 1), moePrompt(23, 2), moePrompt(57, 3)}
	for _, typ := range []gguf.TensorType{gguf.TypeF32, gguf.TypeMXFP4} {
		t.Run(typ.String(), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "gpt-oss.gguf")
			if err := synth.WriteTiny(path, "gpt-oss", typ, 11); err != nil {
				t.Fatal(err)
			}
			if typ == gguf.TypeMXFP4 {
				f, err := gguf.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				for name, want := range map[string]gguf.TensorType{"blk.0.ffn_up_exps.weight": gguf.TypeMXFP4, "blk.0.attn_q.weight": gguf.TypeBF16, "token_embd.weight": gguf.TypeBF16} {
					ti, ok := f.Tensor(name)
					if !ok {
						t.Fatalf("no %s", name)
					}
					if ti.Type != want {
						t.Errorf("%s: %v, want %v", name, ti.Type, want)
					}
				}
				f.Close()
			}
			r := openRig(t, path, 16, gguf.TypeF32)
			if w := r.m.Window(0); w != 16 || r.m.Window(1) != 0 {
				t.Fatalf("windows %d, %d; want 16 on layer 0 and none on layer 1", w, r.m.Window(1))
			}
			compareWithLlamaCpp(t, r, path, prompts, tolerance(typ))
		})
	}
}
