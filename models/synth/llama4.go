package synth

// Llama 4 (llama4): llama's layer with chunked attention on three layers of
// four (llama.cpp fixes the chunk at 8,192 and writes no key for it), rope
// on those alone, the fourth scaling its queries by the attention
// temperature instead, Q and K normed per head after rope; experts in
// every interleave_moe_layer_step-th layer, the others dense: the top
// logits chosen, each weighting its expert's input by its sigmoid, beside
// a shared expert of the experts' width. llama4Tiny: four layers (the
// last without rope), experts in the second and fourth (8 of 256, one
// chosen, as Scout's and Maverick's files choose one); the shared expert
// as wide as an expert unless set (checkMoE).
func llama4Tiny(c *Config) {
	c.Layers, c.Experts, c.ExpertsUsed, c.ExpertFFN, c.MoEEvery = 4, 8, 1, 256, 2
}

// llama4Metadata writes Llama 4's own keys as llama.cpp's converter does:
// interleave_moe_layer_step (the expert keys are moeMetadata's).
func llama4Metadata(c Config, set func(string, any)) {
	set(c.Arch+".interleave_moe_layer_step", uint32(c.MoEEvery))
}

// moeLayer reports whether layer l's feed-forward is experts: past the
// DenseLead first layers, and every MoEEvery-th layer where that is set
// (llama4).
func (c Config) moeLayer(l int) bool {
	return c.hasMoE() && l >= c.DenseLead && (c.MoEEvery == 0 || (l+1)%c.MoEEvery == 0)
}
