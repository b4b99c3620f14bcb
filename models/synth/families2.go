package synth

// StarCoder 2, Command R, Command R7B, Phi-2, StableLM, EXAONE 4, GLM-4 and Seed-OSS: their tiny presets and their layers.

import (
	"math"

	"folio/models/gguf"
)

// plan wraps planTensors' adders for the families below: a linear
// projection with or without its bias, a norm with or without its shift.
type plan struct {
	weight     func(string, int, int, float32)
	norm, bias func(string, int)
}

func (pl plan) lin(name string, in, out int, std float32, withBias bool) {
	pl.weight(name+".weight", in, out, std)
	if withBias {
		pl.bias(name+".bias", out)
	}
}

func (pl plan) ln(name string, n int, withBias bool) {
	pl.norm(name+".weight", n)
	if withBias {
		pl.bias(name+".bias", n)
	}
}

// headSize is c's head size, Embd/Heads where HeadDim is not set yet (the
// tiny preset's, when a family's edit runs).
func (c *Config) headSize() int {
	if c.HeadDim > 0 {
		return c.HeadDim
	}
	return c.Embd / c.Heads
}

func invSqrt(n int) float32 { return float32(1 / math.Sqrt(float64(n))) }

// layerPlans are the families whose layers plan apart from llama's.
var layerPlans = map[string]func(p string, c Config, pl plan){
	"starcoder2": starcoder2Block, "phi2": phi2Block, "seed_oss": seedOSSBlock, "glm4": glm4Block,
	"exaone4": exaone4Block, "stablelm": stablelmBlock, "command-r": commandRBlock, "cohere2": commandRBlock,
}

// StarCoder 2 is a pre-LayerNorm transformer with a bias on every
// projection and LayerNorm: Q, K and V (GQA) and the output projection,
// then a feed-forward of one up projection, GELU and a down projection
// (no gate); its output norm is a LayerNorm too, and the output tied to
// the token embeddings in the released models.
func starcoder2Tiny(c *Config) { c.Tied = true }

// starcoder2Block plans layer p of StarCoder 2.
func starcoder2Block(p string, c Config, pl plan) {
	qDim, kvDim := c.Heads*c.HeadDim, c.HeadsKV*c.HeadDim
	pl.ln(p+"attn_norm", c.Embd, true)
	pl.lin(p+"attn_q", c.Embd, qDim, invSqrt(c.Embd), true)
	pl.lin(p+"attn_k", c.Embd, kvDim, invSqrt(c.Embd), true)
	pl.lin(p+"attn_v", c.Embd, kvDim, invSqrt(c.Embd), true)
	pl.lin(p+"attn_output", qDim, c.Embd, invSqrt(qDim), true)
	pl.ln(p+"ffn_norm", c.Embd, true)
	pl.lin(p+"ffn_up", c.Embd, c.FFN, invSqrt(c.Embd), true)
	pl.lin(p+"ffn_down", c.FFN, c.Embd, invSqrt(c.FFN), true)
}

// Command R runs attention and a SwiGLU feed-forward side by side on one
// LayerNorm without a shift (attn_norm; no ffn_norm), its output tied to
// the token embeddings and its logits multiplied by logit_scale
// (LogitScale here; Command R's own is 0.0625, the tiny preset's 0.5).
func commandRTiny(c *Config) { c.Tied, c.LogitScale = true, 0.5 }

// Command R7B (cohere2) is Command R's layer with a sliding window on
// three layers of four, rope on those alone: the tiny preset has four
// layers and a 16-token window (shorter than a test prompt).
func cohere2Tiny(c *Config) { c.Tied, c.LogitScale, c.Layers, c.Window = true, 0.5, 4, 16 }

// commandRBlock plans layer p of Command R.
func commandRBlock(p string, c Config, pl plan) {
	qDim, kvDim := c.Heads*c.HeadDim, c.HeadsKV*c.HeadDim
	pl.ln(p+"attn_norm", c.Embd, false)
	pl.lin(p+"attn_q", c.Embd, qDim, invSqrt(c.Embd), false)
	pl.lin(p+"attn_k", c.Embd, kvDim, invSqrt(c.Embd), false)
	pl.lin(p+"attn_v", c.Embd, kvDim, invSqrt(c.Embd), false)
	pl.lin(p+"attn_output", qDim, c.Embd, invSqrt(qDim)/2, false)
	pl.lin(p+"ffn_gate", c.Embd, c.FFN, invSqrt(c.Embd), false)
	pl.lin(p+"ffn_up", c.Embd, c.FFN, invSqrt(c.Embd), false)
	pl.lin(p+"ffn_down", c.FFN, c.Embd, invSqrt(c.FFN)/2, false)
}

// mropeSections are a Qwen-VL file's M-RoPE sections for heads that rotate
// dims elements: time, height and width share the pairs about 3:2.5:2.5,
// as Qwen2-VL's 16, 24, 24 of 64 and Qwen3-VL's 24, 20, 20 do, and the
// fourth section is empty.
func mropeSections(dims int) gguf.Array {
	pairs := int32(dims / 2)
	t := pairs * 3 / 8
	h := (pairs - t) / 2
	return gguf.Array{Elem: gguf.ValueInt32, Values: []int32{t, h, pairs - t - h, 0}}
}

// Phi-2 runs attention and an ungated GELU feed-forward side by side on
// one LayerNorm with a shift, with a bias on every projection (Q, K and V
// fused in attn_qkv, as its files have them); rope turns the first 32 of
// its heads' 80 elements; the output matrix is its own, with a bias. The
// tiny preset turns half of each head.
func phi2Tiny(c *Config) { c.RopeDims = c.headSize() / 2 }

// phi2Block plans layer p of Phi-2.
func phi2Block(p string, c Config, pl plan) {
	qDim, kvDim := c.Heads*c.HeadDim, c.HeadsKV*c.HeadDim
	pl.ln(p+"attn_norm", c.Embd, true)
	pl.lin(p+"attn_qkv", c.Embd, qDim+2*kvDim, invSqrt(c.Embd), true) // [embd, q | k | v]
	pl.lin(p+"attn_output", qDim, c.Embd, invSqrt(qDim)/2, true)
	pl.lin(p+"ffn_up", c.Embd, c.FFN, invSqrt(c.Embd), true)
	pl.lin(p+"ffn_down", c.FFN, c.Embd, invSqrt(c.FFN)/2, true)
}

// StableLM is llama's layer with LayerNorms that have a shift (the
// output's too), biases on Q, K and V (StableLM 2's), and rope over a
// quarter of each head: the tiny preset's too.
func stablelmTiny(c *Config) { c.RopeDims = c.headSize() / 4 }

// stablelmBlock plans layer p of StableLM 2.
func stablelmBlock(p string, c Config, pl plan) {
	qDim, kvDim := c.Heads*c.HeadDim, c.HeadsKV*c.HeadDim
	pl.ln(p+"attn_norm", c.Embd, true)
	pl.lin(p+"attn_q", c.Embd, qDim, invSqrt(c.Embd), true)
	pl.lin(p+"attn_k", c.Embd, kvDim, invSqrt(c.Embd), true)
	pl.lin(p+"attn_v", c.Embd, kvDim, invSqrt(c.Embd), true)
	pl.lin(p+"attn_output", qDim, c.Embd, invSqrt(qDim)/2, false)
	pl.ln(p+"ffn_norm", c.Embd, true)
	pl.lin(p+"ffn_gate", c.Embd, c.FFN, invSqrt(c.Embd), false)
	pl.lin(p+"ffn_up", c.Embd, c.FFN, invSqrt(c.Embd), false)
	pl.lin(p+"ffn_down", c.FFN, c.Embd, invSqrt(c.FFN)/2, false)
}

// exaone4Block plans layer p of EXAONE 4.0: no norms before attention or
// the feed-forward, norms of their outputs, Q and K normed per head.
func exaone4Block(p string, c Config, pl plan) {
	qDim, kvDim := c.Heads*c.HeadDim, c.HeadsKV*c.HeadDim
	pl.lin(p+"attn_q", c.Embd, qDim, invSqrt(c.Embd), false)
	pl.lin(p+"attn_k", c.Embd, kvDim, invSqrt(c.Embd), false)
	pl.lin(p+"attn_v", c.Embd, kvDim, invSqrt(c.Embd), false)
	pl.lin(p+"attn_output", qDim, c.Embd, invSqrt(qDim), false)
	pl.ln(p+"attn_q_norm", c.HeadDim, false)
	pl.ln(p+"attn_k_norm", c.HeadDim, false)
	pl.ln(p+"post_attention_norm", c.Embd, false)
	pl.lin(p+"ffn_gate", c.Embd, c.FFN, invSqrt(c.Embd), false)
	pl.lin(p+"ffn_up", c.Embd, c.FFN, invSqrt(c.Embd), false)
	pl.lin(p+"ffn_down", c.FFN, c.Embd, invSqrt(c.FFN), false)
	pl.ln(p+"post_ffw_norm", c.Embd, false)
}

// GLM-4 is llama's layer with norms after attention and the feed-forward
// too, biases on Q, K and V, gate and up fused in ffn_up, and rope over
// half of each head: the tiny preset's too.
func glm4Tiny(c *Config) { c.RopeDims = c.headSize() / 2 }

// glm4Block plans layer p of GLM-4.
func glm4Block(p string, c Config, pl plan) {
	qDim, kvDim := c.Heads*c.HeadDim, c.HeadsKV*c.HeadDim
	pl.ln(p+"attn_norm", c.Embd, false)
	pl.lin(p+"attn_q", c.Embd, qDim, invSqrt(c.Embd), true)
	pl.lin(p+"attn_k", c.Embd, kvDim, invSqrt(c.Embd), true)
	pl.lin(p+"attn_v", c.Embd, kvDim, invSqrt(c.Embd), true)
	pl.lin(p+"attn_output", qDim, c.Embd, invSqrt(qDim), false)
	pl.ln(p+"post_attention_norm", c.Embd, false)
	pl.ln(p+"ffn_norm", c.Embd, false)
	pl.lin(p+"ffn_up", c.Embd, 2*c.FFN, invSqrt(c.Embd), false) // [embd, gate | up]
	pl.lin(p+"ffn_down", c.FFN, c.Embd, invSqrt(c.FFN), false)
	pl.ln(p+"post_ffw_norm", c.Embd, false)
}

// seedOSSBlock plans layer p of Seed-OSS: llama's layer with biases on
// Q, K and V, its feed-forward norm named post_attention_norm.
func seedOSSBlock(p string, c Config, pl plan) {
	qDim, kvDim := c.Heads*c.HeadDim, c.HeadsKV*c.HeadDim
	pl.ln(p+"attn_norm", c.Embd, false)
	pl.lin(p+"attn_q", c.Embd, qDim, invSqrt(c.Embd), true)
	pl.lin(p+"attn_k", c.Embd, kvDim, invSqrt(c.Embd), true)
	pl.lin(p+"attn_v", c.Embd, kvDim, invSqrt(c.Embd), true)
	pl.lin(p+"attn_output", qDim, c.Embd, invSqrt(qDim)/2, false)
	pl.ln(p+"post_attention_norm", c.Embd, false)
	pl.lin(p+"ffn_gate", c.Embd, c.FFN, invSqrt(c.Embd), false)
	pl.lin(p+"ffn_up", c.Embd, c.FFN, invSqrt(c.Embd), false)
	pl.lin(p+"ffn_down", c.FFN, c.Embd, invSqrt(c.FFN)/2, false)
}
