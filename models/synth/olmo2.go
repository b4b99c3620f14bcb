package synth

import (
	"fmt"
	"math"
)

// checkFamily refuses shapes llama.cpp's loader of the architecture does
// not accept.
func (c Config) checkFamily() error {
	if err := c.Rope.check(c.RopeScale); err != nil {
		return err
	}
	if c.Arch != "olmo2" {
		return nil
	}
	switch {
	case c.Tied:
		return badConfig("olmo2 has a separate output matrix; drop --tie-embeddings")
	case c.HeadDim*c.Heads != c.Embd:
		return badConfig("olmo2's head size is embd/heads (%d), not %d", c.Embd/c.Heads, c.HeadDim)
	case c.Window < 0:
		return badConfig("sliding window %d must not be negative", c.Window)
	}
	return nil
}

// olmo2Metadata writes OLMo 3's sliding window as llama.cpp's converter
// does: the window, and one bool per layer, every fourth layer global.
func (c Config) olmo2Metadata(a string, set func(string, any)) {
	if c.Window <= 0 {
		return
	}
	set(a+"attention.sliding_window", uint32(c.Window))
	pattern := make([]bool, c.Layers)
	for i := range pattern {
		pattern[i] = (i+1)%4 != 0
	}
	set(a+"attention.sliding_window_pattern", pattern)
}

// olmo2Block plans layer p of OLMo 2: no norm before attention or the
// feed-forward; instead RMS norms over the whole of Q and of K, and norms
// of the attention's and the feed-forward's outputs before each residual add.
func olmo2Block(p string, c Config, weight func(string, int, int, float32), norm func(string, int)) {
	invSqrt := func(n int) float32 { return float32(1 / math.Sqrt(float64(n))) }
	qDim, kvDim := c.Heads*c.HeadDim, c.HeadsKV*c.HeadDim
	weight(p+"attn_q.weight", c.Embd, qDim, invSqrt(c.Embd))
	weight(p+"attn_k.weight", c.Embd, kvDim, invSqrt(c.Embd))
	weight(p+"attn_v.weight", c.Embd, kvDim, invSqrt(c.Embd))
	weight(p+"attn_output.weight", qDim, c.Embd, invSqrt(qDim))
	norm(p+"attn_q_norm.weight", qDim) // over all of a row's Q, not per head
	norm(p+"attn_k_norm.weight", kvDim)
	norm(p+"post_attention_norm.weight", c.Embd)
	weight(p+"ffn_gate.weight", c.Embd, c.FFN, invSqrt(c.Embd))
	weight(p+"ffn_up.weight", c.Embd, c.FFN, invSqrt(c.Embd))
	weight(p+"ffn_down.weight", c.FFN, c.Embd, invSqrt(c.FFN))
	norm(p+"post_ffw_norm.weight", c.Embd)
}

func badConfig(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...)
}
