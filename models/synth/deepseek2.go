package synth

// DeepSeek-V2, V2.5, V3, R1 and Kimi K2 (deepseek2): multi-head latent
// attention and DeepSeek's experts, as llama.cpp's converter writes them
// since it splits attn_kv_b into attn_k_b and attn_v_b.
//
// Attention compresses each token's keys and values into one latent of
// KVLora elements plus RopeDims rotated ones (attn_kv_a_mqa, the latent
// normed by attn_kv_a_norm): the cache holds that (head_count_kv 1,
// key_length KVLora + RopeDims, value_length KVLora). The queries are
// HeadDim wide a head (key_length_mla: HeadDim − RopeDims unrotated, then
// RopeDims rotated), from attn_q or, with QLora > 0, through attn_q_a,
// its norm and attn_q_b; attn_k_b ([nope, KVLora, heads]) takes each
// head's unrotated part into the latent's space, attn_v_b ([KVLora,
// VHeadDim, heads]) each head's attention output out of it
// (value_length_mla VHeadDim). The feed-forward is glm4moe's: DenseLead
// dense layers, then experts by softmax or by sigmoid plus a selection
// bias, in ExpertGroups groups of which GroupsUsed are searched,
// normalized and scaled, beside shared experts.

// deepseek2Tiny: DeepSeek-V3's layout at the tiny preset's size: queries
// through a rank-128 LoRA, a latent of 128 and 32 rotated elements, heads
// of 64 unrotated and 32 rotated elements and values of 64; a dense first
// layer, then 8 experts of 128 in 4 groups, 2 groups searched, 2 experts
// chosen by sigmoid with the selection bias, normalized and scaled by
// 2.5, beside one shared expert.
func deepseek2Tiny(c *Config) {
	c.Layers, c.HeadsKV, c.HeadDim, c.RopeDims, c.VHeadDim, c.KVLora, c.QLora = 3, 1, 96, 32, 64, 128, 128
	c.Experts, c.ExpertsUsed, c.ExpertFFN, c.SharedFFN, c.DenseLead, c.ExpertScale = 8, 2, 128, 128, 1, 2.5
	c.ExpertGroups, c.GroupsUsed, c.Gating = 4, 2, "sigmoid"
}

// deepseek2Mini is DeepSeek-V2-Lite's layout at a size the benchmarks
// load in a minute: its attention's shapes (16 heads of 128 + 64 rotated
// elements, a latent of 512 + 64, values of 128, attn_q without the LoRA),
// its YaRN (here 8 times an original 4,096), its vocabulary's size and a
// dense first layer, then 64 experts of 512, 6 chosen by softmax, beside
// two shared experts, over 12 layers of 1,024: about 1.4B parameters, 0.8
// GB at Q4_K.
var deepseek2Mini = Config{Arch: "deepseek2", Embd: 1024, Layers: 12, Heads: 16, HeadsKV: 1, HeadDim: 192, RopeDims: 64,
	VHeadDim: 128, KVLora: 512, FFN: 4096, Ctx: 32768, VocabSize: 102400, RopeBase: 10000, Gating: "softmax",
	Rope:    RopeScaling{Type: "yarn", Factor: 8, OrigCtx: 4096, LogMul: 0.0707},
	Experts: 64, ExpertsUsed: 6, ExpertFFN: 512, SharedFFN: 1024, DenseLead: 1}

// latent reports whether c's family is deepseek2's model: deepseek2, or
// Mistral 4 (mistral4: the same keys under its name, the experts' gate
// and up fused in ffn_gate_up_exps, as its converter writes them).
func (c Config) latent() bool { return c.Arch == "deepseek2" || c.Arch == "mistral4" }

// checkMLA refuses latent-attention settings on another family, and a
// deepseek2 shape llama.cpp cannot load.
func (c Config) checkMLA() error {
	if !c.latent() {
		if c.QLora != 0 || c.KVLora != 0 || c.VHeadDim != 0 || c.Gating != "" ||
			(c.ExpertGroups != 0 || c.GroupsUsed != 0) && c.Arch != "bailingmoe2" {
			return badConfig("latent attention, expert groups and --gating are deepseek2's (expert groups bailingmoe2's too), not %s's", c.Arch)
		}
		return nil
	}
	switch {
	case c.HeadsKV != 1:
		return badConfig("deepseek2's latent is one K/V head (head_count_kv 1), not %d", c.HeadsKV)
	case c.KVLora <= 0 || c.KVLora%2 != 0 || c.VHeadDim <= 0 || c.QLora < 0:
		return badConfig("deepseek2 needs an even latent rank > 0 (%d), values > 0 wide (%d) and a query rank ≥ 0 (%d)", c.KVLora, c.VHeadDim, c.QLora)
	case c.RopeDims <= 0 || c.RopeDims >= c.HeadDim:
		return badConfig("deepseek2 rotates part of each head: rope dims %d must be from 2 to below the head size %d", c.RopeDims, c.HeadDim)
	case c.Gating != "softmax" && c.Gating != "sigmoid":
		return badConfig("deepseek2's experts are weighted by softmax or sigmoid, not %q", c.Gating)
	case c.ExpertGroups < 0 || c.ExpertGroups > 1 && (c.Experts%c.ExpertGroups != 0 || c.GroupsUsed <= 0 || c.GroupsUsed >= c.ExpertGroups):
		return badConfig("%d expert groups with %d searched: the groups divide the %d experts and fewer than all are searched", c.ExpertGroups, c.GroupsUsed, c.Experts)
	case c.ExpertGroups > 1 && c.Experts/c.ExpertGroups < 2:
		return badConfig("llama.cpp scores a group by its best two experts: %d experts in %d groups is fewer", c.Experts, c.ExpertGroups)
	case c.SharedFFN%c.ExpertFFN != 0:
		return badConfig("deepseek2's shared experts are a whole number of experts (%d wide), not %d", c.ExpertFFN, c.SharedFFN)
	}
	return nil
}

// deepseek2Metadata writes the keys llama.cpp's converter writes for
// DeepSeek's files (the head sizes among them, in place of the generic
// ones).
func deepseek2Metadata(c Config, set func(string, any)) {
	a := c.Arch + "."
	set(a+"attention.key_length", uint32(c.KVLora+c.RopeDims))
	set(a+"attention.value_length", uint32(c.KVLora))
	set(a+"attention.key_length_mla", uint32(c.HeadDim))
	set(a+"attention.value_length_mla", uint32(c.VHeadDim))
	// Written even when 0: llama.cpp requires it of any file but
	// DeepSeek-V2-Lite's 27 layers, whose converter leaves it out.
	set(a+"attention.q_lora_rank", uint32(c.QLora))
	set(a+"attention.kv_lora_rank", uint32(c.KVLora))
	set(a+"leading_dense_block_count", uint32(c.DenseLead))
	set(a+"expert_shared_count", uint32(c.SharedFFN/c.ExpertFFN))
	if c.ExpertScale != 0 {
		set(a+"expert_weights_scale", c.ExpertScale)
	}
	gating := uint32(1)
	if c.Gating == "sigmoid" {
		gating = 2
	}
	set(a+"expert_weights_norm", gating == 2) // V3's norm_topk_prob; V2's files are false
	set(a+"expert_gating_func", gating)
	if c.AttnTemp != 0 { // Mistral Large 3's
		n := c.AttnTempLen
		if n == 0 {
			n = c.Ctx
		}
		set(a+"attention.temperature_scale", c.AttnTemp)
		set(a+"attention.temperature_length", uint32(n))
	}
	if c.ExpertGroups > 1 {
		set(a+"expert_group_count", uint32(c.ExpertGroups))
		set(a+"expert_group_used_count", uint32(c.GroupsUsed))
	}
}

// deepseek2Attention plans layer p's attention (its norm included).
func deepseek2Attention(p string, c Config, pl plan, add func(name string, mean, std float32, shape ...int)) {
	nope := c.HeadDim - c.RopeDims
	pl.norm(p+"attn_norm.weight", c.Embd)
	if c.QLora > 0 {
		pl.weight(p+"attn_q_a.weight", c.Embd, c.QLora, invSqrt(c.Embd))
		pl.norm(p+"attn_q_a_norm.weight", c.QLora)
		pl.weight(p+"attn_q_b.weight", c.QLora, c.Heads*c.HeadDim, invSqrt(c.QLora))
	} else {
		pl.weight(p+"attn_q.weight", c.Embd, c.Heads*c.HeadDim, invSqrt(c.Embd))
	}
	pl.weight(p+"attn_kv_a_mqa.weight", c.Embd, c.KVLora+c.RopeDims, invSqrt(c.Embd))
	pl.norm(p+"attn_kv_a_norm.weight", c.KVLora)
	add(p+"attn_k_b.weight", 0, invSqrt(nope), nope, c.KVLora, c.Heads)
	add(p+"attn_v_b.weight", 0, invSqrt(c.KVLora), c.KVLora, c.VHeadDim, c.Heads)
	pl.weight(p+"attn_output.weight", c.Heads*c.VHeadDim, c.Embd, invSqrt(c.Heads*c.VHeadDim)/2)
}
