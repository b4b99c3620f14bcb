package arch

import (
	"fmt"

	"folio/models/gguf"
)

// mistral3: the text model of Mistral Small 3.x (and of Ministral 3 where
// it needs nothing more). llama's layer and rope pairing; its rope may be
// YaRN-scaled with the ramp parameters read from the file (yarnKeyArchs).
// llama.cpp's loader also takes optional biases on the output projection
// and the feed-forward, experts, and Llama 4's attention temperature
// scaling (attention.temperature_scale, Ministral 3); folio refuses files
// with any of those rather than run them differently.
func newMistral3Block(ld *loader, c *Config, i int) block {
	if ld.err == nil && i == 0 {
		ld.err = mistral3Unsupported(ld, c)
	}
	return newLlamaBlock(ld, c, i)
}

// mistral3Unsupported says what of a mistral3 file folio does not run, nil
// when it runs all of it.
func mistral3Unsupported(ld *loader, c *Config) error {
	fail := func(what, fix string) error {
		return fmt.Errorf("%w %s: mistral3 %s is not supported yet; %s", ErrModel, ld.f.Path, what, fix)
	}
	p := c.Arch + "."
	if v, ok := ld.f.Get(p + "attention.temperature_scale"); ok {
		if t, isNum := gguf.AsFloat64(v); !isNum || t != 0 {
			return fail(fmt.Sprintf("attention temperature scaling (%sattention.temperature_scale = %v, Ministral 3)", p, v),
				"run this model with llama.cpp")
		}
	}
	if n, ok := ld.f.Int(p + "expert_count"); ok && n > 0 {
		return fail(fmt.Sprintf("mixture of experts (%d experts)", n), "run this model with llama.cpp")
	}
	for l := range c.Layers {
		for _, name := range []string{"attn_output.bias", "ffn_gate.bias", "ffn_up.bias", "ffn_down.bias"} {
			if _, ok := ld.f.Tensor(fmt.Sprintf("blk.%d.%s", l, name)); ok {
				return fail(fmt.Sprintf("bias blk.%d.%s", l, name), "run this model with llama.cpp")
			}
		}
	}
	return nil
}
