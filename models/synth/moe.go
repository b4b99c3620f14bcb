package synth

// qwen3moe: Qwen 3's attention (Q/K norms) with a routed mixture-of-experts
// feed-forward in every layer: a router ffn_gate_inp [embd, experts] kept
// in F32 (llama.cpp's quantizer never quantizes it) and the experts'
// gate, up and down matrices stacked in 3-D tensors, expert e's matrix
// the e-th slice of the last dimension, as llama.cpp's converter writes
// them.

// qwen3moeTiny: 8 experts of 256, two chosen per token, three layers.
func qwen3moeTiny(c *Config) {
	c.Layers, c.Experts, c.ExpertsUsed, c.ExpertFFN = 3, 8, 2, 256
}

// qwen3moeMini is the qwen3moe-mini preset: Qwen3-30B-A3B's layout (128
// experts, top-8) at a size this machine's CPUs run: 24 layers, d 1024,
// 64 experts of 768, top-8, head size 128 as Qwen 3's.
var qwen3moeMini = Config{Arch: "qwen3moe", Embd: 1024, Layers: 24, Heads: 16, HeadsKV: 4, HeadDim: 128,
	FFN: 3072, Ctx: 40960, VocabSize: 151936, Tied: true, RopeBase: 1000000,
	Experts: 64, ExpertsUsed: 8, ExpertFFN: 768}

// isMoE reports whether arch's feed-forward is a mixture of experts.
func isMoE(arch string) bool { return arch == "qwen3moe" || arch == "gpt-oss" }

// checkMoE refuses expert settings on a dense architecture and an expert
// layout llama.cpp's loader refuses.
func (c Config) checkMoE() error {
	if !isMoE(c.Arch) {
		if c.Experts != 0 || c.ExpertsUsed != 0 || c.ExpertFFN != 0 {
			return badConfig("experts (%d, %d used, ffn %d) are for qwen3moe and gpt-oss; %s is dense", c.Experts, c.ExpertsUsed, c.ExpertFFN, c.Arch)
		}
		return nil
	}
	switch {
	case c.Experts <= 0 || c.Experts > 512:
		return badConfig("%s needs 1 to 512 experts, not %d", c.Arch, c.Experts)
	case c.ExpertsUsed <= 0 || c.ExpertsUsed > c.Experts:
		return badConfig("%s chooses 1 to %d experts a token, not %d", c.Arch, c.Experts, c.ExpertsUsed)
	case c.ExpertFFN <= 0:
		return badConfig("%s needs an expert feed-forward size > 0, not %d", c.Arch, c.ExpertFFN)
	}
	return nil
}

// moeMetadata writes the expert keys llama.cpp reads.
func moeMetadata(c Config, set func(string, any)) {
	a := c.Arch + "."
	set(a+"expert_count", uint32(c.Experts))
	set(a+"expert_used_count", uint32(c.ExpertsUsed))
	set(a+"expert_feed_forward_length", uint32(c.ExpertFFN))
}

// moeTensors plans one layer's router and experts (p is "blk.N."). The
// router's std of 2/√embd spreads the routing logits (std about 2), so
// that the chosen experts rarely tie with the next.
func (m *Model) moeTensors(p string, add func(name string, typ addType, mean, std float32, shape ...int), invSqrt func(int) float32) {
	c := m.Config
	add(p+"ffn_gate_inp.weight", addF32, 0, 2*invSqrt(c.Embd), c.Embd, c.Experts)
	add(p+"ffn_gate_exps.weight", addWeight, 0, invSqrt(c.Embd), c.Embd, c.ExpertFFN, c.Experts)
	add(p+"ffn_down_exps.weight", addWeight, 0, invSqrt(c.ExpertFFN)/2, c.ExpertFFN, c.Embd, c.Experts)
	add(p+"ffn_up_exps.weight", addWeight, 0, invSqrt(c.Embd), c.Embd, c.ExpertFFN, c.Experts)
}

// addType says whether a planned tensor is a weight of Config.Type (with
// its fallbacks) or stays F32.
type addType int

const (
	addWeight addType = iota
	addF32
)
