package synth

import "math"

// phi3Tiny makes the tiny preset a Phi-3.5/4-mini in small: half of each
// head rotates, longrope stretches a 512-token training context to 4096,
// and the sliding window the converter writes (which llama.cpp ignores
// for phi3) is shorter than the test prompts.
func phi3Tiny(c *Config) {
	c.RopeDims = c.headSize() / 2
	c.Ctx, c.OrigCtx, c.Window = 4096, 512, 32
}

// phi3Metadata writes the keys Phi3MiniModel of llama.cpp's converter adds
// to the common ones: the original context, the sliding window, and for
// longrope the attention factor sqrt(1 + ln(Ctx/OrigCtx)/ln(OrigCtx)).
func phi3Metadata(c Config, set func(string, any)) {
	a := c.Arch + "."
	if c.OrigCtx > 0 {
		set(a+"rope.scaling.original_context_length", uint32(c.OrigCtx))
		scale := float64(c.Ctx) / float64(c.OrigCtx)
		attn := 1.0
		if scale > 1 {
			attn = math.Sqrt(1 + math.Log(scale)/math.Log(float64(c.OrigCtx)))
		}
		set(a+"rope.scaling.attn_factor", float32(attn))
	}
	set(a+"attention.sliding_window", uint32(c.Window))
}

// phi3Tensors are the tensors phi3 has besides the llama layout's: the
// longrope factors, one per rotated pair, all positive. The short ones
// stay near 1, the long ones spread around 4.
func (m *Model) phi3Tensors(add func(name string, mean, std float32, n int)) {
	if m.Config.OrigCtx == 0 {
		return
	}
	add("rope_factors_long.weight", 4, 1, m.Config.RopeDims/2)
	add("rope_factors_short.weight", 1, 0.1, m.Config.RopeDims/2)
}
