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
