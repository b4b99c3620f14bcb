package arch_test

import (
	"path/filepath"
	"testing"

	"folio/models/gguf"
	"folio/models/synth"
)

// moeFamilies are the tiny models of the mixture-of-experts families
// besides qwen3moe and gpt-oss: each a family's tiny preset (see
// models/synth/moe.go), with an edit where the preset is not the family.
var moeFamilies = []struct {
	name, arch string
	edit       func(*synth.Config)
}{
	// qwen2's biases; 8 experts of 256, top-2, not renormalized; a shared
	// expert of 512 behind a sigmoid gate.
	{"qwen2moe", "qwen2moe", nil},
	// Mixtral: the tiny llama with 8 experts of its FFN (512), top-2.
	{"mixtral", "llama", func(c *synth.Config) { c.Experts, c.ExpertsUsed = 8, 2 }},
	// whole-projection Q/K norms, 16 KV heads as heads; not renormalized.
	{"olmoe", "olmoe", nil},
	// granite's multipliers around 8 experts of 512, top-2.
	{"granitemoe", "granitemoe", nil},
	// and Granite MoE Shared's ungated shared expert.
	{"granitemoe-shared", "granitemoe", func(c *synth.Config) { c.SharedFFN = 256 }},
}

// TestMoEFamiliesLlamaCpp: qwen2moe, Mixtral, olmoe and granitemoe (with
// and without a shared expert) give llama.cpp's logits through scrambled
// block tables: two prompts alone, batched (their rows share experts) and
// a batched decode step; F32, and Q8_0 for the shared experts (their
// quantized types are in the goldens, TestGoldenLogits).
func TestMoEFamiliesLlamaCpp(t *testing.T) {
	prompts := [][]int32{moePrompt(41, 1), moePrompt(57, 3)}
	for i, fam := range moeFamilies {
		types := []gguf.TensorType{gguf.TypeF32}
		if fam.name == "qwen2moe" || fam.name == "granitemoe-shared" {
			types = append(types, gguf.TypeQ8_0)
		}
		for _, typ := range types {
			t.Run(fam.name+"/"+typ.String(), func(t *testing.T) {
				path := filepath.Join(t.TempDir(), fam.name+".gguf")
				if err := synth.WriteTiny(path, fam.arch, typ, uint64(31+i), fam.edit); err != nil {
					t.Fatal(err)
				}
				r := openRig(t, path, 16, gguf.TypeF32)
				if r.m.Experts != 8 || r.m.ExpertsUsed != 2 {
					t.Fatalf("%d experts, %d used; want 8 and 2", r.m.Experts, r.m.ExpertsUsed)
				}
				compareWithLlamaCpp(t, r, path, prompts, tolerance(typ))
			})
		}
	}
}
