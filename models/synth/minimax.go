package synth

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
