package synth

// Ling 2.0 and Ring 2.0 (bailingmoe2: Ling-mini-2.0, Ling-flash-2.0,
// Ring-mini-2.0): llama's attention with Q, K and V fused in attn_qkv, Q
// and K normed per head before NEOX rope over part of each head; a dense
// first layer, then experts chosen by sigmoid with a selection bias
// (exp_probs_b) within groups, normalized and scaled, beside a shared
// expert. bailingMoE2Tiny: three layers, rope over half of each head, 8
// experts of 128 in 4 groups (2 searched, 2 chosen), scaled by 2.5, a
// shared expert of 128, an output matrix of its own (llama.cpp requires
// one).
func bailingMoE2Tiny(c *Config) {
	c.Layers, c.Experts, c.ExpertsUsed, c.ExpertFFN, c.SharedFFN, c.DenseLead = 3, 8, 2, 128, 128, 1
	c.ExpertScale, c.ExpertGroups, c.GroupsUsed, c.RopeDims, c.Tied = 2.5, 4, 2, c.headSize()/2, false
}

// bailingMoE2Metadata writes Ling 2.0's keys as llama.cpp's converter does.
func bailingMoE2Metadata(c Config, set func(string, any)) {
	a := c.Arch + "."
	set(a+"leading_dense_block_count", uint32(c.DenseLead))
	set(a+"expert_shared_count", uint32(1))
	if c.ExpertScale != 0 {
		set(a+"expert_weights_scale", c.ExpertScale)
	}
	set(a+"expert_weights_norm", true)
	set(a+"expert_gating_func", uint32(2)) // sigmoid
	if c.ExpertGroups > 1 {
		set(a+"expert_group_count", uint32(c.ExpertGroups))
		set(a+"expert_group_used_count", uint32(c.GroupsUsed))
	}
}

// bailingMoE2Attention plans layer p's attention (its norm included).
func bailingMoE2Attention(p string, c Config, pl plan) {
	qDim, kvDim := c.Heads*c.HeadDim, c.HeadsKV*c.HeadDim
	pl.norm(p+"attn_norm.weight", c.Embd)
	pl.weight(p+"attn_qkv.weight", c.Embd, qDim+2*kvDim, invSqrt(c.Embd)) // [embd, q | k | v]
	pl.norm(p+"attn_q_norm.weight", c.HeadDim)
	pl.norm(p+"attn_k_norm.weight", c.HeadDim)
	pl.weight(p+"attn_output.weight", qDim, c.Embd, invSqrt(qDim)/2)
}
