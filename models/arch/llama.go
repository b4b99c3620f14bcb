package arch

import (
	"fmt"

	"folio/gpu"
)

// llama: Llama 2 and 3, Mistral, SmolLM, TinyLlama. Pre-norm decoder
// layers of grouped-query attention with rope (adjacent pairs) and a SwiGLU
// feed-forward, RMS norms everywhere.
type llamaBlock struct {
	attnNorm gpu.Tensor // [1, Dim]
	wq       gpu.Tensor // [QDim, Dim]
	wk       gpu.Tensor // [KVDim, Dim]
	wv       gpu.Tensor // [KVDim, Dim]
	wo       gpu.Tensor // [Dim, QDim]
	ffnNorm  gpu.Tensor // [1, Dim]
	gate     gpu.Tensor // [FFN, Dim]
	up       gpu.Tensor // [FFN, Dim]
	down     gpu.Tensor // [Dim, FFN]
}

func newLlamaBlock(ld *loader, c *Config, i int) block { return loadLlamaLayer(ld, c, i, "ffn_norm") }

// loadLlamaLayer loads block i of llama's layer, its feed-forward norm
// named ffnNorm (seed_oss names it post_attention_norm).
func loadLlamaLayer(ld *loader, c *Config, i int, ffnNorm string) *llamaBlock {
	l := loadLlamaAttention(ld, c, i, ffnNorm)
	l.gate, l.up, l.down = loadFFN(ld, c, i)
	return l
}

// loadFFN loads block i's SwiGLU feed-forward: gate, up and down.
func loadFFN(ld *loader, c *Config, i int) (gate, up, down gpu.Tensor) {
	w := func(name string, rows, cols int) gpu.Tensor {
		return ld.weight(fmt.Sprintf("blk.%d.%s.weight", i, name), rows, cols)
	}
	return w("ffn_gate", c.FFN, c.Dim), w("ffn_up", c.FFN, c.Dim), w("ffn_down", c.Dim, c.FFN)
}

// loadLlamaAttention loads block i of llama's layer without its
// feed-forward (gate, up and down nil): a layer whose feed-forward is
// experts (moeFFN) around llama's attention.
func loadLlamaAttention(ld *loader, c *Config, i int, ffnNorm string) *llamaBlock {
	w := func(name string, rows, cols int) gpu.Tensor {
		return ld.weight(fmt.Sprintf("blk.%d.%s.weight", i, name), rows, cols)
	}
	return &llamaBlock{
		attnNorm: w("attn_norm", 1, c.Dim),
		wq:       w("attn_q", c.QDim(), c.Dim),
		wk:       w("attn_k", c.KVDim(), c.Dim),
		wv:       w("attn_v", c.KVDim(), c.Dim),
		wo:       w("attn_output", c.Dim, c.QDim()),
		ffnNorm:  w(ffnNorm, 1, c.Dim),
	}
}

// qkvBias is a layer's Q, K and V biases, each [1, its width]; nil where
// a file has none.
type qkvBias struct{ q, k, v gpu.Tensor }

// loadQKVBias loads the Q, K and V biases of the block whose tensors
// start with p through load: ld.weight where the family requires them,
// ld.optional where a file may have them.
func loadQKVBias(c *Config, p string, load func(name string, rows, cols int) gpu.Tensor) qkvBias {
	return qkvBias{load(p+"attn_q.bias", 1, c.QDim()), load(p+"attn_k.bias", 1, c.KVDim()), load(p+"attn_v.bias", 1, c.KVDim())}
}

// add adds the biases to the step's q, k and v.
func (b qkvBias) add(m *Model, s *step) {
	m.addBias(s.q, b.q)
	m.addBias(s.k, b.k)
	m.addBias(s.v, b.v)
}

func (l *llamaBlock) forward(m *Model, s *step) {
	be := m.be
	be.RMSNorm(s.xb, s.x, l.attnNorm, m.Eps)            // xb [n, Dim]
	m.matMuls(s, s.xb, s.q, l.wq, s.k, l.wk, s.v, l.wv) // q [n, QDim], k and v [n, KVDim]
	m.attend(s, l.wo)                                   // x += wo · attention(q, K, V)
	m.ffn(s, l.ffnNorm, l.gate, l.up, l.down)
}

// llamaBiased is llama's layer with the biases llama.cpp's loader takes
// where a file has them (on Q, K, V, the output projection and the
// feed-forward's three: llama-arch conversions of models trained with
// biases); newLlamaBiased gives the plain layer to a file without.
type llamaBiased struct {
	*llamaBlock
	qkvBias
	bo, bGate, bUp, bDown gpu.Tensor
}

// newLlamaBiased is block i of llama, exaone and internlm2. A fused
// attn_qkv, which llama.cpp also takes, is refused rather than ignored.
func newLlamaBiased(ld *loader, c *Config, i int) block {
	p := fmt.Sprintf("blk.%d.", i)
	if _, fused := ld.f.Tensor(p + "attn_qkv.weight"); fused && ld.err == nil {
		ld.err = fmt.Errorf("%w %s: %s with Q, K and V fused in %sattn_qkv.weight is not supported yet; run this model with llama.cpp", ErrModel, ld.f.Path, c.Arch, p)
	}
	l := loadLlamaLayer(ld, c, i, "ffn_norm")
	opt := func(name string, cols int) gpu.Tensor { return ld.optional(p+name+".bias", 1, cols) }
	b := &llamaBiased{llamaBlock: l, qkvBias: loadQKVBias(c, p, ld.optional),
		bo: opt("attn_output", c.Dim), bGate: opt("ffn_gate", c.FFN), bUp: opt("ffn_up", c.FFN), bDown: opt("ffn_down", c.Dim)}
	if *b == (llamaBiased{llamaBlock: l}) {
		return l
	}
	return b
}

func (l *llamaBiased) forward(m *Model, s *step) {
	be := m.be
	be.RMSNorm(s.xb, s.x, l.attnNorm, m.Eps)
	m.matMuls(s, s.xb, s.q, l.wq, s.k, l.wk, s.v, l.wv)
	l.qkvBias.add(m, s)
	m.attention(s, &m.Rope, gpu.AttnOpts{Scale: m.attnScale(), Window: m.Window(s.layer)}, l.wo)
	m.addBias(s.xb, l.bo)
	be.Add(s.x, s.x, s.xb)
	be.RMSNorm(s.xb, s.x, l.ffnNorm, m.Eps)
	m.matMuls(s, s.xb, s.hb, l.gate, s.hb2, l.up)
	m.addBias(s.hb, l.bGate)
	m.addBias(s.hb2, l.bUp)
	be.SiLUMul(s.hb, s.hb, s.hb2)
	be.MatMul(s.xb, s.hb, l.down)
	m.addBias(s.xb, l.bDown)
	be.Add(s.x, s.x, s.xb)
}

// newSeedOSSBlock is block i of seed_oss (Seed-OSS-36B): llama's layer
// whose feed-forward norm is named post_attention_norm, with the Q, K, V
// and output projection biases llama.cpp takes where a file has them
// (rope over split halves: config.go).
func newSeedOSSBlock(ld *loader, c *Config, i int) block {
	p := fmt.Sprintf("blk.%d.", i)
	return &llamaBiased{llamaBlock: loadLlamaLayer(ld, c, i, "post_attention_norm"),
		qkvBias: loadQKVBias(c, p, ld.optional), bo: ld.optional(p+"attn_output.bias", 1, c.Dim)}
}

// newErnieBlock is block i of ernie4_5 (ERNIE 4.5's dense models):
// llama's layer with the Q, K and V biases llama.cpp takes where a file
// has them; llama.cpp loads an output-projection bias but leaves it out of
// its graph, and so does folio.
func newErnieBlock(ld *loader, c *Config, i int) block {
	l := loadLlamaLayer(ld, c, i, "ffn_norm")
	b := loadQKVBias(c, fmt.Sprintf("blk.%d.", i), ld.optional)
	if b == (qkvBias{}) {
		return l
	}
	return &llamaBiased{llamaBlock: l, qkvBias: b}
}
