package arch_test

import (
	"path/filepath"
	"testing"

	"folio/models/gguf"
	"folio/models/synth"
)

// TestAttnTempHostPath: Ministral 3's attention temperature gives the same
// logits bit for bit through the backend's ExpertSum (the CPU's) and on
// the host (a backend without gpu.Experts, as Vulkan's): three prompts in
// one batch whose rows span five of its steps (an original context of 16),
// then a batched decode step. The golden case mistral3-temp checks the
// values against llama.cpp's.
func TestAttnTempHostPath(t *testing.T) {
	cfg, err := synth.ArchPreset("mistral3", "tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Type, cfg.Seed, cfg.Ctx, cfg.AttnTemp = gguf.TypeQ8_0, 13, 256, 0.1
	cfg.Rope = synth.RopeScaling{Type: "yarn", Factor: 8, OrigCtx: 16}
	m, err := synth.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "m3.gguf")
	if err := m.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	got := withAndWithoutCapabilities(t, path, [][]int32{moePrompt(41, 1), moePrompt(23, 2), moePrompt(75, 3)}, func(r *rig) {
		if r.m.AttnTemp != 0.1 || r.m.AttnTempFloor != 16 {
			t.Fatalf("attention temperature %v from %d, want 0.1 from 16", r.m.AttnTemp, r.m.AttnTempFloor)
		}
	})
	sameLogits(t, got[0], got[1], "through ExpertSum", "on the host")
}
