package synth

import (
	"slices"
	"strings"
)

// qwen3moe: Qwen 3's attention (Q/K norms) with a routed mixture-of-experts
// feed-forward in every layer: a router ffn_gate_inp [embd, experts] kept
// in F32 (llama.cpp's quantizer never quantizes it) and the experts'
// gate, up and down matrices stacked in 3-D tensors, expert e's matrix
// the e-th slice of the last dimension, as llama.cpp's converter writes
// them.

// qwen3moeTiny: 8 experts of 256, two chosen per token, three layers.
// qwen2moeTiny adds a shared expert of 512; olmoeTiny has as many KV
// heads as heads, as OLMoE; granitemoeTiny is granite's tiny with 8
// experts of its feed-forward (512), two chosen per token. Mixtral is the
// tiny llama with experts (Config.Experts, dev synth's --n-expert).
func qwen3moeTiny(c *Config) {
	c.Layers, c.Experts, c.ExpertsUsed, c.ExpertFFN = 3, 8, 2, 256
}

func qwen2moeTiny(c *Config) {
	qwen3moeTiny(c)
	c.SharedFFN = 512
}

func olmoeTiny(c *Config) {
	c.Layers, c.HeadsKV, c.Experts, c.ExpertsUsed = 3, c.Heads, 8, 2
}

func granitemoeTiny(c *Config) {
	graniteTiny(c)
	c.Experts, c.ExpertsUsed = 8, 2
}

// qwen3moeMini is the qwen3moe-mini preset: Qwen3-30B-A3B's layout (128
// experts, top-8) at a size this machine's CPUs run: 24 layers, d 1024,
// 64 experts of 768, top-8, head size 128 as Qwen 3's.
var qwen3moeMini = Config{Arch: "qwen3moe", Embd: 1024, Layers: 24, Heads: 16, HeadsKV: 4, HeadDim: 128,
	FFN: 3072, Ctx: 40960, VocabSize: 151936, Tied: true, RopeBase: 1000000,
	Experts: 64, ExpertsUsed: 8, ExpertFFN: 768}

// moeFamily is what a family's experts may be in a synthetic file, as
// llama.cpp's loader and converter have them.
type moeFamily struct {
	optional bool // experts only with Config.Experts > 0 (Mixtral, Granite's MoE layers, Gemma 4 26B-A4B); else always
	// ffnWide: llama.cpp sizes the experts by feed_forward_length, not by
	// expert_feed_forward_length; ffnKey: the file has that key anyway
	ffnWide, ffnKey bool
	shared          bool    // a shared expert of SharedFFN may be beside them
	sharedKey       bool    // its width goes in expert_shared_feed_forward_length
	denseLead       bool    // the first DenseLead layers may be dense
	scale           bool    // their weights may be scaled (ExpertScale)
	probsStd        float32 // > 0: a selection bias (exp_probs_b) of that spread
}

// moeFamilies are the families with experts.
var moeFamilies = map[string]moeFamily{
	"llama": {optional: true, ffnWide: true}, "granite": {optional: true, ffnWide: true}, "gemma4": {optional: true},
	"qwen3moe": {}, "qwen3vlmoe": {}, "gpt-oss": {},
	"qwen2moe":     {shared: true, sharedKey: true},
	"olmoe":        {ffnWide: true},
	"granitemoe":   {ffnWide: true, shared: true, sharedKey: true},
	"glm4moe":      {shared: true, denseLead: true, scale: true, probsStd: 0.2},
	"ernie4_5-moe": {shared: true, sharedKey: true, denseLead: true, probsStd: 0.05},
	"hunyuan-moe":  {ffnWide: true, ffnKey: true, shared: true, sharedKey: true},
	"deepseek2":    {shared: true, denseLead: true, scale: true},
	"mistral4":     {shared: true, denseLead: true, scale: true},
	"bailingmoe2":  {shared: true, sharedKey: true, denseLead: true, scale: true, probsStd: 0.2},
	"minimax-m2":   {ffnWide: true, ffnKey: true, probsStd: 0.2},
	"dots1":        {shared: true, denseLead: true, scale: true, probsStd: 0.2},
	"exaone-moe":   {shared: true, sharedKey: true, denseLead: true, scale: true, probsStd: 0.2},
	"afmoe":        {shared: true, denseLead: true, scale: true, probsStd: 0.2},
	"llama4":       {shared: true},
}

// moeArchs lists, sorted, the families with experts whose trait has says.
func moeArchs(has func(moeFamily) bool) string {
	var names []string
	for a, f := range moeFamilies {
		if has(f) {
			names = append(names, a)
		}
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// hasMoE reports whether c's feed-forward is a mixture of experts: always
// for most families in moeFamilies, with Config.Experts > 0 for the
// optional ones (llama, granite, gemma4).
func (c Config) hasMoE() bool {
	f, ok := moeFamilies[c.Arch]
	return ok && (!f.optional || c.Experts > 0)
}

// checkMoE refuses expert settings on a dense architecture and an expert
// layout llama.cpp's loader refuses, and sizes the experts of the
// families whose experts are feed_forward_length wide.
func (c *Config) checkMoE() error {
	if c.NextN < 0 || c.NextN > 0 && c.Arch != "glm4moe" {
		return badConfig("%d multi-token-prediction layers: glm4moe's, never negative", c.NextN)
	}
	if c.QKNorm && c.Arch != "glm4moe" {
		return badConfig("optional Q/K norms are glm4moe's; %s has its own or none", c.Arch)
	}
	if !c.hasMoE() {
		if c.Experts != 0 || c.ExpertsUsed != 0 || c.ExpertFFN != 0 || c.SharedFFN != 0 {
			return badConfig("experts (%d, %d used, ffn %d, shared %d) are for llama, granite and the MoE families; %s is dense",
				c.Experts, c.ExpertsUsed, c.ExpertFFN, c.SharedFFN, c.Arch)
		}
		return nil
	}
	fam := moeFamilies[c.Arch]
	if fam.ffnWide {
		if c.ExpertFFN != 0 && c.ExpertFFN != c.FFN {
			return badConfig("%s's experts are feed_forward_length wide (%d); leave the expert feed-forward size (%d) unset", c.Arch, c.FFN, c.ExpertFFN)
		}
		c.ExpertFFN = c.FFN
	}
	switch {
	case c.Experts <= 0 || c.Experts > 512:
		return badConfig("%s needs 1 to 512 experts, not %d", c.Arch, c.Experts)
	case c.ExpertsUsed <= 0 || c.ExpertsUsed > c.Experts:
		return badConfig("%s chooses 1 to %d experts a token, not %d", c.Arch, c.Experts, c.ExpertsUsed)
	case c.ExpertFFN <= 0:
		return badConfig("%s needs an expert feed-forward size > 0, not %d", c.Arch, c.ExpertFFN)
	case c.SharedFFN < 0 || c.SharedFFN > 0 && !fam.shared:
		return badConfig("a shared expert (%d wide) is one of these families': %s; never negative", c.SharedFFN, moeArchs(func(f moeFamily) bool { return f.shared }))
	case c.Arch == "dots1" && (c.SharedFFN == 0 || c.SharedFFN%c.ExpertFFN != 0 || c.Tied || c.HeadsKV != c.Heads):
		return badConfig("dots1 has shared experts (a whole number of experts, %d wide, not %d), its own output matrix (no --tie-embeddings) and as many KV heads as heads, as llama.cpp requires", c.ExpertFFN, c.SharedFFN)
	case c.Arch == "glm4moe" && c.SharedFFN%c.ExpertFFN != 0:
		return badConfig("glm4moe's shared experts are a whole number of experts (%d wide), not %d", c.ExpertFFN, c.SharedFFN)
	case c.DenseLead < 0 || c.DenseLead > 0 && !fam.denseLead || c.DenseLead > c.Layers:
		return badConfig("%d leading dense layers: one of these families' (%s), at most its %d layers", c.DenseLead,
			moeArchs(func(f moeFamily) bool { return f.denseLead }), c.Layers)
	case c.ExpertScale < 0 || c.ExpertScale > 0 && !fam.scale:
		return badConfig("an expert weight scale of %v is one of these families': %s; never negative", c.ExpertScale,
			moeArchs(func(f moeFamily) bool { return f.scale }))
	case c.Arch == "llama4" && c.SharedFFN == 0:
		c.SharedFFN = c.ExpertFFN // llama.cpp's n_ff_shexp
		return c.checkMoE()
	case c.Arch == "llama4" && (c.SharedFFN != c.ExpertFFN || c.MoEEvery <= 0 || c.MoEEvery > c.Layers):
		return badConfig("llama4 has a shared expert as wide as an expert (%d, not %d) and experts in every n-th layer, n from 1 to its %d layers (not %d), as llama.cpp requires", c.ExpertFFN, c.SharedFFN, c.Layers, c.MoEEvery)
	case c.MoEEvery != 0 && c.Arch != "llama4":
		return badConfig("experts in every %d-th layer are llama4's", c.MoEEvery)
	case c.Arch == "afmoe" && c.SharedFFN%c.ExpertFFN != 0:
		return badConfig("afmoe's shared experts are a whole number of experts (%d wide), not %d", c.ExpertFFN, c.SharedFFN)
	case c.Arch == "exaone-moe" && (c.SharedFFN == 0 || c.Tied):
		return badConfig("exaone-moe has a shared expert (a feed-forward size > 0) and its own output matrix (no --tie-embeddings), as llama.cpp requires")
	case c.Arch == "minimax-m2" && c.Tied:
		return badConfig("minimax-m2 has its own output matrix (no --tie-embeddings), as llama.cpp requires")
	case c.Arch == "bailingmoe2" && (c.SharedFFN == 0 || c.Tied):
		return badConfig("bailingmoe2 has a shared expert (a feed-forward size > 0) and its own output matrix (no --tie-embeddings), as llama.cpp requires")
	case c.Arch == "hunyuan-moe" && c.SharedFFN == 0:
		return badConfig("hunyuan-moe needs a shared expert's feed-forward size > 0")
	case c.Arch == "qwen2moe" && c.SharedFFN == 0:
		return badConfig("qwen2moe needs a shared expert's feed-forward size > 0")
	case c.Arch == "olmoe" && c.Heads != c.HeadsKV:
		return badConfig("olmoe has as many KV heads as heads (llama.cpp sizes its K norm by the embedding), not %d of %d", c.HeadsKV, c.Heads)
	case c.Arch == "olmoe" && c.HeadDim*c.Heads != c.Embd:
		return badConfig("olmoe's head size is embd/heads (%d), not %d", c.Embd/c.Heads, c.HeadDim)
	}
	return nil
}

// moeMetadata writes the expert keys llama.cpp's converter writes.
func moeMetadata(c Config, set func(string, any)) {
	a := c.Arch + "."
	set(a+"expert_count", uint32(c.Experts))
	set(a+"expert_used_count", uint32(c.ExpertsUsed))
	fam := moeFamilies[c.Arch]
	if !fam.ffnWide || fam.ffnKey { // llama.cpp requires hunyuan-moe's, and sizes its experts by n_ff; minimax-m2's converter writes it
		set(a+"expert_feed_forward_length", uint32(c.ExpertFFN))
	}
	if c.SharedFFN > 0 && fam.sharedKey {
		set(a+"expert_shared_feed_forward_length", uint32(c.SharedFFN))
	}
}

// GLM-4.5 (glm4moe): llama's layer with biases on Q, K and V and rope over
// half of each head (split halves), its feed-forward norm named
// post_attention_norm; a dense first layer, then experts chosen by the
// sigmoid of the router's logits plus a selection bias per expert
// (exp_probs_b), normalized and scaled (GLM-4.5's 2.5), beside one
// shared expert. glm4moeTiny: three layers, the first dense; 8 experts
// of 256, two chosen.
func glm4moeTiny(c *Config) {
	c.Layers, c.Experts, c.ExpertsUsed, c.ExpertFFN, c.SharedFFN = 3, 8, 2, 256, 256
	c.DenseLead, c.ExpertScale, c.RopeDims = 1, 2.5, c.headSize()/2
}

// ERNIE 4.5's MoE models (ernie4_5-moe): ERNIE 4.5's dense layer (Q/K/V
// biases, an output-projection bias llama.cpp does not apply, with
// Config.Biases), a dense first layer, then experts weighted by softmax,
// chosen with a selection bias (exp_probs_b) and renormalized, beside a
// shared expert. ernieMoETiny: three layers, the first dense; 8 experts
// of 256, two chosen; a shared expert of 512.
func ernieMoETiny(c *Config) {
	c.Layers, c.Experts, c.ExpertsUsed, c.ExpertFFN, c.SharedFFN, c.DenseLead = 3, 8, 2, 256, 512, 1
}

// Hunyuan-A13B (hunyuan-moe): hunyuan-dense's attention (Q and K normed
// per head after rope) without its alpha, experts of feed_forward_length
// by softmax, renormalized, beside a shared expert.
// hunyuanMoETiny: three layers, 8 experts, two chosen, a shared expert of
// 512.
func hunyuanMoETiny(c *Config) { c.Layers, c.Experts, c.ExpertsUsed, c.SharedFFN = 3, 8, 2, 512 }

// glm4moeMetadata writes GLM-4.5's keys as llama.cpp's converter does.
func glm4moeMetadata(c Config, set func(string, any)) {
	a := c.Arch + "."
	set(a+"leading_dense_block_count", uint32(c.DenseLead))
	set(a+"expert_shared_count", uint32(c.SharedFFN/c.ExpertFFN))
	if c.ExpertScale != 0 {
		set(a+"expert_weights_scale", c.ExpertScale)
	}
	set(a+"expert_weights_norm", true)
	set(a+"expert_gating_func", uint32(2)) // sigmoid
	set(a+"nextn_predict_layers", uint32(c.NextN))
}

// moeTensors plans one layer's router and experts (p is "blk.N."). The
// router's std of 2/√embd spreads the routing logits (std about 2), so
// that the chosen experts rarely tie with the next.
func (m *Model) moeTensors(p string, add func(name string, typ addType, mean, std float32, shape ...int), invSqrt func(int) float32) {
	c := m.Config
	add(p+"ffn_gate_inp.weight", addF32, 0, 2*invSqrt(c.Embd), c.Embd, c.Experts)
	if c.Arch == "mistral4" { // each expert's gate rows, then its up rows
		add(p+"ffn_gate_up_exps.weight", addWeight, 0, invSqrt(c.Embd), c.Embd, 2*c.ExpertFFN, c.Experts)
		add(p+"ffn_down_exps.weight", addWeight, 0, invSqrt(c.ExpertFFN)/2, c.ExpertFFN, c.Embd, c.Experts)
	} else {
		add(p+"ffn_gate_exps.weight", addWeight, 0, invSqrt(c.Embd), c.Embd, c.ExpertFFN, c.Experts)
		add(p+"ffn_down_exps.weight", addWeight, 0, invSqrt(c.ExpertFFN)/2, c.ExpertFFN, c.Embd, c.Experts)
		add(p+"ffn_up_exps.weight", addWeight, 0, invSqrt(c.Embd), c.Embd, c.ExpertFFN, c.Experts)
	}
	// the choice's bias: about the gated values' own spread (DeepSeek-V3's
	// with sigmoid gating; V2's files have none)
	std := moeFamilies[c.Arch].probsStd
	if c.latent() && c.Gating == "sigmoid" {
		std = 0.2
	}
	if std > 0 {
		add(p+"exp_probs_b.bias", addF32, 0, std, c.Experts)
	}
	if c.SharedFFN == 0 {
		return
	}
	if c.Arch == "qwen2moe" { // the shared expert's gate: a logit of std about 1
		add(p+"ffn_gate_inp_shexp.weight", addF32, 0, invSqrt(c.Embd), c.Embd)
	}
	add(p+"ffn_gate_shexp.weight", addWeight, 0, invSqrt(c.Embd), c.Embd, c.SharedFFN)
	add(p+"ffn_down_shexp.weight", addWeight, 0, invSqrt(c.SharedFFN)/2, c.SharedFFN, c.Embd)
	add(p+"ffn_up_shexp.weight", addWeight, 0, invSqrt(c.Embd), c.Embd, c.SharedFFN)
}

// addType says whether a planned tensor is a weight of Config.Type (with
// its fallbacks) or stays F32.
type addType int

const (
	addWeight addType = iota
	addF32
)
