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

func newLlamaBlock(ld *loader, c *Config, i int) block {
	w := func(name string, rows, cols int) gpu.Tensor {
		return ld.weight(fmt.Sprintf("blk.%d.%s.weight", i, name), rows, cols)
	}
	return &llamaBlock{
		attnNorm: w("attn_norm", 1, c.Dim),
		wq:       w("attn_q", c.QDim(), c.Dim),
		wk:       w("attn_k", c.KVDim(), c.Dim),
		wv:       w("attn_v", c.KVDim(), c.Dim),
		wo:       w("attn_output", c.Dim, c.QDim()),
		ffnNorm:  w("ffn_norm", 1, c.Dim),
		gate:     w("ffn_gate", c.FFN, c.Dim),
		up:       w("ffn_up", c.FFN, c.Dim),
		down:     w("ffn_down", c.Dim, c.FFN),
	}
}

func (l *llamaBlock) forward(m *Model, s *step) {
	be := m.be
	be.RMSNorm(s.xb, s.x, l.attnNorm, m.Eps)            // xb [n, Dim]
	m.matMuls(s, s.xb, s.q, l.wq, s.k, l.wk, s.v, l.wv) // q [n, QDim], k and v [n, KVDim]
	m.attend(s, l.wo)                                   // x += wo · attention(q, K, V)
	m.ffn(s, l.ffnNorm, l.gate, l.up, l.down)
}
