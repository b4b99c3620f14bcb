package synth

// gpt-oss: attention with biases on Q, K, V and the output and a sink
// logit per query head (attn_sinks [heads]), sliding-window and full
// layers alternating (attention.sliding_window; llama.cpp windows the even
// layers), YaRN rope, and a mixture of experts with biases on the router
// and on the experts' matrices (ffn_*_exps.bias [ffn or embd, experts]),
// normed by post_attention_norm, as llama.cpp's converter writes
// gpt-oss-20b.

// gptossTiny: four layers (two windowed, two full) with a window of 16,
// 8 experts of 256 of which 4 are chosen, YaRN ×32 from 4096 as gpt-oss.
func gptossTiny(c *Config) {
	c.Layers, c.Window, c.Experts, c.ExpertsUsed, c.ExpertFFN = 4, 16, 8, 4, 256
	c.RopeBase = 150000
	c.Rope = RopeScaling{Type: "yarn", Factor: 32, OrigCtx: 4096}
}

// gptoss20B is gpt-oss-20b's shape: 24 layers of d 2880, 64 query heads
// of 64 on 8 key/value heads, 32 experts of 2880 of which 4 are chosen, a
// window of 128 on every other layer, YaRN ×32 from 4096, the o200k
// vocabulary's 201088 rows, an untied output. 20.9B parameters.
var gptoss20B = Config{Arch: "gpt-oss", Embd: 2880, Layers: 24, Heads: 64, HeadsKV: 8, HeadDim: 64,
	FFN: 2880, Ctx: 131072, VocabSize: 201088, RopeBase: 150000, Window: 128,
	Rope:    RopeScaling{Type: "yarn", Factor: 32, OrigCtx: 4096},
	Experts: 32, ExpertsUsed: 4, ExpertFFN: 2880}

// gptossMini is the gpt-oss-mini preset: gpt-oss-20b's layout (head size
// 64, 8 query heads to a key/value head, top-4 of 32 experts, window 128,
// YaRN, its vocabulary) at d 1024, 16 heads and experts of 1024: 2.9B
// parameters, about 2 GB in MXFP4 (experts) and BF16 (the rest).
var gptossMini = Config{Arch: "gpt-oss", Embd: 1024, Layers: 24, Heads: 16, HeadsKV: 2, HeadDim: 64,
	FFN: 1024, Ctx: 131072, VocabSize: 201088, RopeBase: 150000, Window: 128,
	Rope:    RopeScaling{Type: "yarn", Factor: 32, OrigCtx: 4096},
	Experts: 32, ExpertsUsed: 4, ExpertFFN: 1024}

// gptossTensors plans layer p's attention biases, sinks and norm before
// the experts, and the router's and experts' biases (qDim the query
// width).
func (m *Model) gptossTensors(p string, qDim int, f32 func(name string, mean, std float32, shape ...int)) {
	c := m.Config
	kvDim := c.HeadsKV * c.HeadDim
	f32(p+"attn_q.bias", 0, 0.1, qDim)
	f32(p+"attn_k.bias", 0, 0.1, kvDim)
	f32(p+"attn_v.bias", 0, 0.1, kvDim)
	f32(p+"attn_output.bias", 0, 0.1, c.Embd)
	f32(p+"attn_sinks.weight", 0, 1, c.Heads) // logits of about the scores' size
	f32(p+"ffn_gate_inp.bias", 0, 0.5, c.Experts)
	f32(p+"ffn_gate_exps.bias", 0, 0.1, c.ExpertFFN, c.Experts)
	f32(p+"ffn_up_exps.bias", 0, 0.1, c.ExpertFFN, c.Experts)
	f32(p+"ffn_down_exps.bias", 0, 0.1, c.Embd, c.Experts)
}
