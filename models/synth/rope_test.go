package synth

import (
	"errors"
	"strings"
	"testing"

	"folio/models/gguf"
)

// The rope scaling options write llama.cpp's rope.scaling.* keys, and
// only those asked for.
func TestRopeScalingMetadata(t *testing.T) {
	yarn := RopeScaling{Type: "yarn", Factor: 4, OrigCtx: 32, BetaFast: 16, BetaSlow: 2, LogMul: 0.5}
	f := open(t, writeTiny(t, "mistral3", gguf.TypeF32, 1, func(c *Config) { c.Rope = yarn }))
	checkKeys(t, f, map[string]any{
		"mistral3.rope.scaling.type":                    "yarn",
		"mistral3.rope.scaling.factor":                  4.0,
		"mistral3.rope.scaling.original_context_length": int64(32),
		"mistral3.rope.scaling.yarn_beta_fast":          16.0,
		"mistral3.rope.scaling.yarn_beta_slow":          2.0,
		"mistral3.rope.scaling.yarn_log_multiplier":     0.5,
	})
	if _, ok := f.Get("mistral3.rope.scaling.attn_factor"); ok {
		t.Error("attn_factor written though not asked for")
	}
	f = open(t, writeTiny(t, "qwen3", gguf.TypeF32, 1, nil))
	if _, ok := f.Get("qwen3.rope.scaling.type"); ok {
		t.Error("rope.scaling.type written without scaling")
	}
}

func TestFamilyConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name, arch string
		edit       func(*Config)
		want       string
	}{
		{"olmo2 tied", "olmo2", func(c *Config) { c.Tied = true }, "olmo2 has a separate output matrix"},
		{"olmo2 head size", "olmo2", func(c *Config) { c.HeadDim = 128 }, "olmo2's head size is embd/heads (64), not 128"},
		{"unknown scaling", "qwen3", func(c *Config) { c.Rope = RopeScaling{Type: "longrope", Factor: 2} }, `rope scaling "longrope"`},
		{"yarn without factor", "qwen3", func(c *Config) { c.Rope = RopeScaling{Type: "yarn"} }, "needs a factor above 0 (--rope-factor)"},
		{"factor without type", "qwen2", func(c *Config) { c.Rope = RopeScaling{Factor: 4} }, "parameters without a type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Tiny(tc.arch, gguf.TypeF32, 1, tc.edit)
			if !errors.Is(err, ErrConfig) || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want ErrConfig containing %q", err, tc.want)
			}
		})
	}
}
