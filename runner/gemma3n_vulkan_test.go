package runner

import (
	"math"
	"path/filepath"
	"testing"

	"folio/models/gguf"
	"folio/models/synth"
)

// TestGemma3nOnVulkan: Gemma 3n on the Vulkan device (lavapipe under CI)
// with its row ops as Vulkan kernels, its layer groups and the K/V its
// last layers share: each generated token's log-probability and its top
// alternatives are the CPU's over a prompt past the window, within 0.02:
// the 25 random layers amplify rounding (Vulkan's matmuls and attention
// round otherwise than the CPU's; its log-probabilities move by up to
// 0.005, the same with the row ops on the host).
func TestGemma3nOnVulkan(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gemma3n.gguf")
	if err := synth.WriteTiny(path, "gemma3n", gguf.TypeF32, 5); err != nil {
		t.Fatal(err)
	}
	opt := LoadOptions{NumCtx: 256, Device: "vulkan"}
	m := loadOnVulkan(t, path, opt)
	opt.Device = "cpu"
	ref, err := Load(path, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	req := Request{Prompt: promptOf(40, 3), Sample: SampleOptions{RepeatPenalty: 1}, NumPredict: 6, Logprobs: true, TopLogprobs: 5}
	got, want := tokenLogprobs(t, m, req), tokenLogprobs(t, ref, req)
	if len(got) != len(want) || len(want) == 0 {
		t.Fatalf("Vulkan %d tokens, CPU %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Token != w.Token || len(g.Top) != len(w.Top) {
			t.Fatalf("token %d: Vulkan %d (%d alternatives), CPU %d (%d)", i, g.Token, len(g.Top), w.Token, len(w.Top))
		}
		for j := range w.Top {
			if g.Top[j].Token != w.Top[j].Token || math.Abs(float64(g.Top[j].Logprob-w.Top[j].Logprob)) > 0.02 {
				t.Errorf("token %d, alternative %d: Vulkan %+v, CPU %+v", i, j, g.Top[j], w.Top[j])
			}
		}
	}
}
