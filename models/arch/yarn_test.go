package arch_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"folio/models/arch"
	"folio/models/gguf"
	"folio/models/synth"
)

// YaRN's parameters are checked as they are read, and the rope they give
// has the shape llama.cpp's has: pairs below the ramp keep their
// frequency (factor 1), pairs above it are slowed by the scaling factor,
// and every rotation is scaled by 1 + 0.1·ln(factor). The exact values are
// checked against llama.cpp's logits by TestGoldenLogits (the *-yarn cases).
func TestYarnConfig(t *testing.T) {
	yarn := func(kv map[string]any) map[string]any {
		kv["rope.scaling.type"] = "yarn"
		if _, ok := kv["rope.scaling.factor"]; !ok {
			kv["rope.scaling.factor"] = float32(4)
		}
		return kv
	}
	t.Run("shape", func(t *testing.T) {
		c, err := configOf(t, "qwen3", yarn(map[string]any{"rope.scaling.original_context_length": uint32(64)}), nil)
		if err != nil {
			t.Fatal(err)
		}
		f := c.Rope.Factors
		if len(f) != c.Rope.Dims/2 || f[0] != 1 || math.Abs(float64(f[len(f)-1])-4) > 1e-6 {
			t.Fatalf("factors %v: want Dims/2 = %d of them from 1 (fast pairs kept) to 4 (slow pairs interpolated)", f, c.Rope.Dims/2)
		}
		for i := 1; i < len(f); i++ {
			if f[i] < f[i-1] {
				t.Fatalf("factor %d = %v below factor %d = %v: the ramp must rise", i, f[i], i-1, f[i-1])
			}
		}
		if want := 1 + 0.1*math.Log(4); math.Abs(float64(c.Rope.MScale)-want) > 1e-6 {
			t.Errorf("mscale %v, want 1 + 0.1·ln 4 = %v", c.Rope.MScale, want)
		}
		if c.Rope.Scale != 1 {
			t.Errorf("scale %v, want 1 (YaRN's scaling is all in the factors)", c.Rope.Scale)
		}
	})
	t.Run("attn_factor and log multiplier", func(t *testing.T) {
		c, err := configOf(t, "mistral3", yarn(map[string]any{"rope.scaling.attn_factor": float32(0.5),
			"rope.scaling.yarn_log_multiplier": float32(1)}), nil)
		if err != nil {
			t.Fatal(err)
		}
		// mscale(4, 1) / mscale(4, 1) · 0.5: the log multiplier cancels YaRN's own.
		if math.Abs(float64(c.Rope.MScale)-0.5) > 1e-6 {
			t.Errorf("mscale %v, want 0.5", c.Rope.MScale)
		}
	})
	t.Run("qwen ignores the ramp keys", func(t *testing.T) {
		def, err := configOf(t, "qwen2", yarn(map[string]any{}), nil)
		if err != nil {
			t.Fatal(err)
		}
		set, err := configOf(t, "qwen2", yarn(map[string]any{"rope.scaling.yarn_beta_fast": float32(4)}), nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range def.Rope.Factors {
			if def.Rope.Factors[i] != set.Rope.Factors[i] {
				t.Fatalf("factor %d: %v with yarn_beta_fast, %v without; llama.cpp reads it only for mistral3", i, set.Rope.Factors[i], def.Rope.Factors[i])
			}
		}
	})
	for _, c := range []struct {
		name, arch string
		set        map[string]any
		want       string
	}{
		{"original context 0", "qwen3", yarn(map[string]any{"rope.scaling.original_context_length": uint32(0)}), "qwen3.rope.scaling.original_context_length = 0 is out of range"},
		{"factor NaN", "qwen2", yarn(map[string]any{"rope.scaling.factor": float32(math.NaN())}), "qwen2.rope.scaling.factor = NaN"},
		{"beta fast 0", "mistral3", yarn(map[string]any{"rope.scaling.yarn_beta_fast": float32(0)}), "mistral3.rope.scaling.yarn_beta_fast = 0; it must be a positive number"},
		{"beta slow Inf", "mistral3", yarn(map[string]any{"rope.scaling.yarn_beta_slow": float32(math.Inf(1))}), "yarn_beta_slow = +Inf"},
		{"log multiplier negative", "mistral3", yarn(map[string]any{"rope.scaling.yarn_log_multiplier": float32(-1)}), "yarn_log_multiplier = -1; it must be a number from 0 to 100"},
		{"attn_factor 0", "llama", map[string]any{"rope.scaling.attn_factor": float32(0)}, "llama.rope.scaling.attn_factor = 0; it must be a positive number"},
		{"longrope", "qwen3", map[string]any{"rope.scaling.type": "su"}, `rope scaling "su" is not supported yet (folio knows linear, llama3 and yarn)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := configOf(t, c.arch, c.set, nil)
			if !errors.Is(err, arch.ErrModel) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v; want arch.ErrModel containing %q", err, c.want)
			}
		})
	}
}

// A mistral3 file that asks for what folio does not compute (biases,
// experts) is refused with what to do, not run without it; an attention
// temperature that is no number of the range, saying which.
func TestMistral3Refuses(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(w *gguf.Writer)
		want string
	}{
		{"negative temperature", func(w *gguf.Writer) { w.Set("mistral3.attention.temperature_scale", float32(-0.1)) },
			"mistral3.attention.temperature_scale = -0.1; it must be a number from 0 to 10"},
		{"temperature not a number", func(w *gguf.Writer) { w.Set("mistral3.attention.temperature_scale", "0.1") },
			"mistral3.attention.temperature_scale holds a string, not a number"},
		{"output bias", func(w *gguf.Writer) {
			w.AddTensor("blk.1.attn_output.bias", gguf.TypeF32, []uint64{4}, make([]byte, 16))
		}, "mistral3 bias blk.1.attn_output.bias is not supported yet"},
		{"experts", func(w *gguf.Writer) { w.Set("mistral3.expert_count", uint32(8)) }, "mistral3 mixture of experts (8 experts)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			refused(t, synth.Config{Arch: "mistral3", Embd: 64, Layers: 2, Heads: 2, HeadsKV: 1, FFN: 128, Ctx: 256}, c.edit, c.want)
		})
	}
}
