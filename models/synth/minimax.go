package synth

import "folio/models/gguf"

// MiniMax-M2 (minimax-m2): llama's attention without biases, Q and K each
// normed over the whole projection, NEOX rope over part of each head;
// every layer's feed-forward experts chosen by sigmoid with a selection
// bias (exp_probs_b), renormalized, no shared expert; the experts
// feed_forward_length wide (llama.cpp's shapes; the converter writes the
// same width as expert_feed_forward_length too). minimaxM2Tiny: three
// layers, rope over half of each head, 8 experts, two chosen, an output
// matrix of its own (llama.cpp requires one).
func minimaxM2Tiny(c *Config) {
	c.Layers, c.Experts, c.ExpertsUsed = 3, 8, 2
	c.RopeDims, c.Tied = c.headSize()/2, false
}

// minimaxM2Metadata writes MiniMax-M2's keys as llama.cpp's converter
// does: the gating from the checkpoint's scoring_func.
func minimaxM2Metadata(c Config, set func(string, any)) {
	set(c.Arch+".expert_gating_func", uint32(2)) // sigmoid
}

// dots.llm1 (dots1): glm4moe's layer without biases, Q and K normed per
// head (required), as many KV heads as heads (llama.cpp's loader sizes K
// and V by the query heads), NEOX rope over whole heads; a dense first
// layer, then experts by sigmoid with a selection bias, normalized and
// scaled, beside shared experts. dots1Tiny: three layers, 8 experts of
// 256, two chosen, two shared experts, scaled by 2.5, an output matrix
// of its own (llama.cpp requires one).
func dots1Tiny(c *Config) {
	c.Layers, c.HeadsKV, c.Experts, c.ExpertsUsed, c.ExpertFFN, c.SharedFFN = 3, c.Heads, 8, 2, 256, 512
	c.DenseLead, c.ExpertScale, c.Tied = 1, 2.5, false
}

// dots1Metadata writes dots.llm1's keys as llama.cpp's converter does:
// qwen2moe's, then the dense layers, the shared experts' count, the
// scale, the normalization, and the gating from scoring_func.
func dots1Metadata(c Config, set func(string, any)) {
	a := c.Arch + "."
	set(a+"expert_gating_func", uint32(2)) // sigmoid
	set(a+"leading_dense_block_count", uint32(c.DenseLead))
	set(a+"expert_shared_count", uint32(c.SharedFFN/c.ExpertFFN))
	set(a+"expert_weights_scale", c.ExpertScale)
	set(a+"expert_weights_norm", true)
}

// K-EXAONE (exaone-moe): llama's pre-norm layer with per-head Q/K norms,
// three layers of four windowed (rope on those alone), a dense first
// layer, then experts by sigmoid with a selection bias, normalized and
// scaled, beside a shared expert. exaoneMoETiny: four layers (the last
// global), a 16-token window, 8 experts of 256, two chosen, a shared
// expert of 256, scaled by 2.5, an output matrix of its own (llama.cpp
// requires one).
func exaoneMoETiny(c *Config) {
	c.Layers, c.Window, c.Experts, c.ExpertsUsed, c.ExpertFFN, c.SharedFFN = 4, 16, 8, 2, 256, 256
	c.DenseLead, c.ExpertScale, c.Tied = 1, 2.5, false
}

// exaoneMoEMetadata writes K-EXAONE's keys as llama.cpp's converter
// does: the window and its pattern a bool per layer, the shared expert
// (one, of the experts' width), the scale, the normalization, the dense
// layers, no multi-token-prediction layers, and the gating from
// scoring_func.
func exaoneMoEMetadata(c Config, set func(string, any)) {
	a := c.Arch + "."
	pattern := make([]bool, c.Layers)
	for i := range pattern {
		pattern[i] = (i+1)%4 != 0
	}
	set(a+"attention.sliding_window", uint32(c.Window))
	set(a+"attention.sliding_window_pattern", gguf.Array{Elem: gguf.ValueBool, Values: pattern})
	set(a+"expert_gating_func", uint32(2)) // sigmoid
	set(a+"expert_shared_count", uint32(1))
	set(a+"expert_weights_scale", c.ExpertScale)
	set(a+"expert_weights_norm", true)
	set(a+"leading_dense_block_count", uint32(c.DenseLead))
	set(a+"nextn_predict_layers", uint32(0))
}

// Arcee's Trinity (afmoe): embeddings times √embd, llama's attention with
// per-head Q/K norms and its output gated by the sigmoid of attn_gate's
// projection, norms after attention and after the feed-forward, rope on
// three layers of four, windows on the layers the pattern marks; a dense
// first layer, then experts by sigmoid with a selection bias, normalized
// and scaled, beside shared experts. afmoeTiny: four layers (the last
// global, without rope), a 16-token window, 8 experts of 256, two
// chosen, one shared, scaled by 2.5.
func afmoeTiny(c *Config) {
	c.Layers, c.Window, c.Experts, c.ExpertsUsed, c.ExpertFFN, c.SharedFFN = 4, 16, 8, 2, 256, 256
	c.DenseLead, c.ExpertScale = 1, 2.5
}

// afmoeMetadata writes Trinity's keys as llama.cpp's converter does (no
// window pattern: llama.cpp windows three layers of four).
func afmoeMetadata(c Config, set func(string, any)) {
	a := c.Arch + "."
	set(a+"expert_gating_func", uint32(2)) // sigmoid
	set(a+"expert_shared_count", uint32(c.SharedFFN/c.ExpertFFN))
	set(a+"leading_dense_block_count", uint32(c.DenseLead))
	set(a+"expert_weights_norm", true)
	set(a+"expert_weights_scale", c.ExpertScale)
	if c.Window > 0 {
		set(a+"attention.sliding_window", uint32(c.Window))
	}
}
