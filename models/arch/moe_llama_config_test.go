package arch_test

import (
	"errors"
	"strings"
	"testing"

	"folio/models/arch"
	"folio/models/gguf"
	"folio/models/synth"
)

// TestMoEFamiliesConfig: each family's experts as llama.cpp sizes and
// weights them (Mixtral's, olmoe's and granitemoe's feed_forward_length
// wide; qwen2moe's and olmoe's weights not renormalized; the shared
// experts), a dense llama and granite without expert keys, and the files
// llama.cpp refuses refused with what to change.
func TestMoEFamiliesConfig(t *testing.T) {
	for _, tc := range []struct {
		name, arch                 string
		edit                       func(*synth.Config)
		experts, expertFFN, shared int
		norm, neox                 bool
	}{
		{"qwen2moe", "qwen2moe", nil, 8, 256, 512, false, true},
		{"mixtral", "llama", func(c *synth.Config) { c.Experts, c.ExpertsUsed = 8, 2 }, 8, 512, 0, true, false},
		{"llama", "llama", nil, 0, 0, 0, false, false},
		{"olmoe", "olmoe", nil, 8, 512, 0, false, true},
		{"granitemoe", "granitemoe", nil, 8, 512, 0, true, false},
		{"granitemoe-shared", "granitemoe", func(c *synth.Config) { c.SharedFFN = 256 }, 8, 512, 256, true, false},
		{"granite", "granite", nil, 0, 0, 0, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _, err := tinyConfig(t, tc.arch, tc.edit, nil)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Experts != tc.experts || cfg.ExpertFFN != tc.expertFFN || cfg.SharedFFN != tc.shared ||
				cfg.ExpertWeightsNorm != tc.norm || cfg.Rope.Neox != tc.neox || cfg.Gating != arch.GatingSoftmax {
				t.Errorf("%d experts of %d, shared %d, renormalized %v, neox %v, gating %v; want %d of %d, %d, %v, %v, softmax",
					cfg.Experts, cfg.ExpertFFN, cfg.SharedFFN, cfg.ExpertWeightsNorm, cfg.Rope.Neox, cfg.Gating,
					tc.experts, tc.expertFFN, tc.shared, tc.norm, tc.neox)
			}
		})
	}
	for _, tc := range []struct {
		name, arch string
		write      func(*gguf.Writer)
		want       string
	}{
		{"split experts", "llama", func(w *gguf.Writer) {
			w.Set("llama.expert_count", uint32(8))
			w.Set("llama.expert_used_count", uint32(2))
			w.AddTensor("blk.0.ffn_gate.0.weight", gguf.TypeF32, []uint64{4}, f32Bytes(make([]float32, 4)))
		}, "stores each expert in tensors of its own (blk.0.ffn_gate.0.weight)"},
		{"experts but none used", "llama", func(w *gguf.Writer) { w.Set("llama.expert_count", uint32(8)) },
			"no llama.expert_used_count key"},
		{"no shared width", "qwen2moe", func(w *gguf.Writer) { w.Set("qwen2moe.expert_shared_feed_forward_length", uint32(0)) },
			"qwen2moe.expert_shared_feed_forward_length = 0 is out of range"},
		{"more used than experts", "olmoe", func(w *gguf.Writer) { w.Set("olmoe.expert_used_count", uint32(9)) },
			"olmoe.expert_used_count 9 exceeds expert_count 8"},
		{"no logit scale", "granitemoe", func(w *gguf.Writer) { w.Delete("granitemoe.logit_scale") }, "no granitemoe.logit_scale"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := tinyConfig(t, tc.arch, nil, tc.write)
			if !errors.Is(err, arch.ErrModel) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v; want arch.ErrModel containing %q", err, tc.want)
			}
		})
	}
}
