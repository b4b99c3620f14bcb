package arch_test

import (
	"math"
	"path/filepath"
	"testing"

	"folio/gpu"
	"folio/gpu/cpu"
	"folio/models/arch"
	"folio/models/gguf"
	"folio/models/synth"
)

// TestDeepseek2LlamaCpp: the tiny deepseek2 (DeepSeek-V3's layout) against
// llama.cpp through scrambled block tables: each prompt alone, three in
// one batch (their rows share experts and the latent's heads), and one
// decode step of the three in one batch. F32 only: llama.cpp's AMX build
// aborts on the quantized files (the golden cases hold its other builds'
// logits for those).
func TestDeepseek2LlamaCpp(t *testing.T) {
	prompts := [][]int32{moePrompt(41, 1), moePrompt(23, 2), moePrompt(57, 3)}
	for _, lite := range []bool{false, true} {
		name := map[bool]string{false: "v3", true: "lite"}[lite]
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "deepseek2.gguf")
			if err := synth.WriteTiny(path, "deepseek2", gguf.TypeF32, 7, func(c *synth.Config) {
				if lite {
					c.QLora, c.Gating, c.ExpertGroups, c.GroupsUsed = 0, "softmax", 0, 0
				}
			}); err != nil {
				t.Fatal(err)
			}
			r := openRig(t, path, 16, gguf.TypeF32)
			compareWithLlamaCpp(t, r, path, prompts, 1e-4)
		})
	}
}

// TestDeepseek2WithoutCapabilities: with gpu.Experts and gpu.Rearranger
// hidden (a head's matmul as a Gather, a MatMul and a Rearrange; every
// Rearrange on the host) the logits are the same bit for bit.
func TestDeepseek2WithoutCapabilities(t *testing.T) {
	path := filepath.Join(t.TempDir(), "deepseek2.gguf")
	if err := synth.WriteTiny(path, "deepseek2", gguf.TypeQ8_0, 7); err != nil {
		t.Fatal(err)
	}
	got := withAndWithoutCapabilities(t, path, [][]int32{moePrompt(41, 1), moePrompt(23, 2), moePrompt(57, 3)}, nil)
	sameLogits(t, got[0], got[1], "with the capabilities", "without")
}

// TestDeepseek2Keys: the latent attention's shape and the experts'
// routing as the keys say, llama.cpp's defaults where they are absent,
// and the files folio cannot run refused with what to do.
func TestDeepseek2Keys(t *testing.T) {
	cfg, err := synth.ArchPreset("deepseek2", "tiny")
	if err != nil {
		t.Fatal(err)
	}
	m := loadEdited(t, cfg, func(w *gguf.Writer) {})
	c := m.Config
	if c.QLora != 128 || c.KVLora != 128 || c.QKHeadDim != 96 || c.VHeadDim != 64 || c.HeadDim != 160 || c.KVHeads != 1 || c.Rope.Dims != 32 {
		t.Errorf("q lora %d, kv lora %d, query heads %d, values %d, cache heads %d × %d, rope %d; want 128, 128, 96, 64, 1 × 160, 32",
			c.QLora, c.KVLora, c.QKHeadDim, c.VHeadDim, c.KVHeads, c.HeadDim, c.Rope.Dims)
	}
	if c.Gating != arch.GatingSigmoid || !c.ExpertWeightsNorm || c.ExpertWeightsScale != 2.5 || c.ExpertGroups != 4 || c.GroupsUsed != 2 || c.DenseLead != 1 || c.SharedFFN != 128 {
		t.Errorf("experts: %+v", c)
	}
	if want := 1 / float32(math.Sqrt(96)); c.QueryScale != want { // in float32, as llama.cpp divides
		t.Errorf("query scale %v, want 1/√96 = %v without YaRN", c.QueryScale, want)
	}
	m = loadEdited(t, cfg, func(w *gguf.Writer) {
		w.Delete("deepseek2.expert_gating_func")
		w.Delete("deepseek2.expert_weights_norm")
	})
	if m.Gating != arch.GatingSoftmax || m.ExpertWeightsNorm {
		t.Errorf("without the keys: gating %v, norm %v; want DeepSeek-V2's softmax, unnormalized", m.Gating, m.ExpertWeightsNorm)
	}
	// Without the rank, the queries are attn_q's, which this file lacks.
	refused(t, cfg, func(w *gguf.Writer) { w.Delete("deepseek2.attention.q_lora_rank") }, "attn_q.weight")
	refused(t, cfg, func(w *gguf.Writer) {
		w.Delete("deepseek2.attention.key_length_mla")
		w.Delete("deepseek2.attention.value_length_mla")
	}, "convert the model again")
	refused(t, cfg, func(w *gguf.Writer) { w.Set("deepseek2.attention.value_length", uint32(160)) }, "one K/V head of 160 keys and 128 values")
	refused(t, cfg, func(w *gguf.Writer) { w.Set("deepseek2.expert_group_count", uint32(3)) }, "the groups must divide the experts")
	refused(t, cfg, func(w *gguf.Writer) { w.Set("deepseek2.expert_group_used_count", uint32(4)) }, "fewer than all be searched")
	refused(t, cfg, func(w *gguf.Writer) { w.Set("deepseek2.expert_gating_func", uint32(3)) }, "expert_gating_func = 3")
	refused(t, cfg, func(w *gguf.Writer) { w.Set("deepseek2.attention.temperature_scale", float32(0.1)) }, "needs deepseek2.attention.temperature_length")
	cfg.AttnTemp, cfg.AttnTempLen = 0.1, 16
	if m := loadEdited(t, cfg, func(w *gguf.Writer) {}); m.AttnTemp != 0.1 || m.AttnTempFloor != 16 {
		t.Errorf("attention temperature %v over %d positions, want 0.1 over 16", m.AttnTemp, m.AttnTempFloor)
	}
}

// TestBailingMoE2Keys: Ling 2.0's shared experts are expert_shared_count
// of expert_shared_feed_forward_length (else of the experts' width), its
// groups and gating as the keys say; a file without expert_gating_func or
// a shared expert is refused, as llama.cpp refuses it.
func TestBailingMoE2Keys(t *testing.T) {
	cfg, err := synth.ArchPreset("bailingmoe2", "tiny")
	if err != nil {
		t.Fatal(err)
	}
	m := loadEdited(t, cfg, func(w *gguf.Writer) {})
	if m.SharedFFN != 128 || m.ExpertGroups != 4 || m.GroupsUsed != 2 || m.Gating != arch.GatingSigmoid || !m.ExpertWeightsNorm || m.Rope.Dims != 32 {
		t.Errorf("shared %d, groups %d/%d, gating %v, norm %v, rope dims %d; want 128, 4/2, sigmoid, true, 32",
			m.SharedFFN, m.ExpertGroups, m.GroupsUsed, m.Gating, m.ExpertWeightsNorm, m.Rope.Dims)
	}
	if m := loadEdited(t, cfg, func(w *gguf.Writer) { w.Delete("bailingmoe2.expert_shared_feed_forward_length") }); m.SharedFFN != 128 {
		t.Errorf("without expert_shared_feed_forward_length: shared %d wide, want the experts' 128", m.SharedFFN)
	}
	refused(t, cfg, func(w *gguf.Writer) { w.Delete("bailingmoe2.expert_gating_func") }, "llama.cpp requires it")
	refused(t, cfg, func(w *gguf.Writer) { w.Set("bailingmoe2.expert_shared_count", uint32(0)) }, "expert_shared_count is 0")
	refused(t, cfg, func(w *gguf.Writer) { w.Set("bailingmoe2.expert_group_used_count", uint32(4)) }, "fewer than all be searched")
}

// withAndWithoutCapabilities runs prompts then a batched decode step
// (promptsThenStep) of the model at path on the CPU, and on the CPU with
// its optional capabilities hidden (gpu.Experts, gpu.Rearranger and the
// others: the plain ops and the host), check looking at each rig first.
func withAndWithoutCapabilities(t *testing.T, path string, prompts [][]int32, check func(*rig)) [2][][]float32 {
	t.Helper()
	var got [2][][]float32
	for i := range got {
		f, err := gguf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		inner := cpu.New(2)
		var be gpu.Backend = inner
		if i == 1 {
			be = struct{ gpu.Backend }{inner}
		}
		r := rigOn(t, f, be)
		if check != nil {
			check(r)
		}
		got[i] = r.promptsThenStep(t, prompts)
		inner.Close()
		f.Close()
	}
	return got
}

// TestFamiliesWithoutCapabilities: on a backend without the CPU's
// optional ops (gpu.SigmoidMuler, gpu.Experts) each family's logits are
// the CPU's bit for bit: Trinity's gated attention through the host's
// SigmoidMul; llama4's weighted expert inputs made on the host rather
// than by ExpertSum; Gemma 4's GeGLU experts and router one expert at a
// time with the plain ops.
func TestFamiliesWithoutCapabilities(t *testing.T) {
	for _, c := range []struct {
		arch string
		edit func(*synth.Config)
	}{
		{"afmoe", func(*synth.Config) {}},
		{"llama4", func(*synth.Config) {}},
		{"gemma4", func(c *synth.Config) { c.Experts, c.ExpertsUsed, c.ExpertFFN = 8, 2, 256 }},
	} {
		t.Run(c.arch, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), c.arch+".gguf")
			if err := synth.WriteTiny(path, c.arch, gguf.TypeQ8_0, 7, c.edit); err != nil {
				t.Fatal(err)
			}
			got := withAndWithoutCapabilities(t, path, [][]int32{moePrompt(41, 1), moePrompt(23, 2), moePrompt(57, 3)}, nil)
			sameLogits(t, got[0], got[1], "with the capabilities", "without")
		})
	}
}
