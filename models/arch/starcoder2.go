package arch

import (
	"fmt"

	"folio/gpu"
)

// starcoder2: StarCoder 2 (3B, 7B, 15B). LayerNorms with a shift before
// attention and the feed-forward (and at the output), a bias on every
// projection, rope over split halves (neox), and a feed-forward of an up
// projection, tanh GELU and a down projection, without a gate.
type starcoder2Block struct {
	attnNorm, ffnNorm layerNorm
	wq, wk, wv, wo    gpu.Tensor
	qkvBias
	bo         gpu.Tensor
	up, down   gpu.Tensor
	bUp, bDown gpu.Tensor
}

func newStarcoder2Block(ld *loader, c *Config, i int) block {
	p := fmt.Sprintf("blk.%d.", i)
	w := func(name string, rows, cols int) gpu.Tensor { return ld.weight(p+name+".weight", rows, cols) }
	b := func(name string, cols int) gpu.Tensor { return ld.weight(p+name+".bias", 1, cols) }
	return &starcoder2Block{
		attnNorm: loadLayerNorm(ld, p+"attn_norm", c.Dim),
		ffnNorm:  loadLayerNorm(ld, p+"ffn_norm", c.Dim),
		wq:       w("attn_q", c.QDim(), c.Dim), wk: w("attn_k", c.KVDim(), c.Dim), wv: w("attn_v", c.KVDim(), c.Dim),
		qkvBias: loadQKVBias(c, p, ld.weight),
		wo:      w("attn_output", c.Dim, c.QDim()), bo: b("attn_output", c.Dim),
		up: w("ffn_up", c.FFN, c.Dim), bUp: b("ffn_up", c.FFN),
		down: w("ffn_down", c.Dim, c.FFN), bDown: b("ffn_down", c.Dim),
	}
}

func (l *starcoder2Block) forward(m *Model, s *step) {
	be := m.be
	be.LayerNorm(s.xb, s.x, l.attnNorm.w, l.attnNorm.b, m.Eps)        // xb [n, Dim]
	m.matMuls(s, s.xb, s.q, l.wq, s.k, l.wk, s.v, l.wv)               // q [n, QDim], k and v [n, KVDim]
	l.qkvBias.add(m, s)                                               //   + biases
	m.attention(s, &m.Rope, gpu.AttnOpts{Scale: m.attnScale()}, l.wo) // xb = wo · attention(q, K, V)
	be.Add(s.xb, s.xb, l.bo)
	be.Add(s.x, s.x, s.xb) // residual
	be.LayerNorm(s.xb, s.x, l.ffnNorm.w, l.ffnNorm.b, m.Eps)
	be.MatMul(s.hb, s.xb, l.up) // hb [n, FFN]
	be.Add(s.hb, s.hb, l.bUp)
	be.GELUMul(s.hb, s.hb, nil) // gelu alone
	be.MatMul(s.xb, s.hb, l.down)
	be.Add(s.xb, s.xb, l.bDown)
	be.Add(s.x, s.x, s.xb) // residual
}
