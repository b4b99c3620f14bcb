package arch

import (
	"fmt"

	"folio/gpu"
)

// olmo2: OLMo 2. No norm before attention or the feed-forward: Q and K are
// each RMS-normed over the whole row (all heads at once), and the outputs
// of attention and of the feed-forward are normed before each residual
// add. Rope over split halves (neox).
type olmo2Block struct {
	wq, wk, wv   gpu.Tensor // [QDim, Dim], [KVDim, Dim], [KVDim, Dim]
	qNorm, kNorm gpu.Tensor // [1, QDim], [1, KVDim]
	wo           gpu.Tensor // [Dim, QDim]
	postAttn     gpu.Tensor // [1, Dim]
	gate, up     gpu.Tensor // [FFN, Dim]
	down         gpu.Tensor // [Dim, FFN]
	postFFN      gpu.Tensor // [1, Dim]
}

func newOlmo2Block(ld *loader, c *Config, i int) block {
	w := func(name string, rows, cols int) gpu.Tensor {
		return ld.weight(fmt.Sprintf("blk.%d.%s.weight", i, name), rows, cols)
	}
	return &olmo2Block{
		wq:       w("attn_q", c.QDim(), c.Dim),
		wk:       w("attn_k", c.KVDim(), c.Dim),
		wv:       w("attn_v", c.KVDim(), c.Dim),
		qNorm:    w("attn_q_norm", 1, c.QDim()),
		kNorm:    w("attn_k_norm", 1, c.KVDim()),
		wo:       w("attn_output", c.Dim, c.QDim()),
		postAttn: w("post_attention_norm", 1, c.Dim),
		gate:     w("ffn_gate", c.FFN, c.Dim),
		up:       w("ffn_up", c.FFN, c.Dim),
		down:     w("ffn_down", c.Dim, c.FFN),
		postFFN:  w("post_ffw_norm", 1, c.Dim),
	}
}

func (l *olmo2Block) forward(m *Model, s *step) {
	be := m.be
	m.matMuls(s, s.x, s.q, l.wq, s.k, l.wk, s.v, l.wv) // q [n, QDim], k and v [n, KVDim], from x itself
	be.RMSNorm(s.q, s.q, l.qNorm, m.Eps)               //   each row normed whole
	be.RMSNorm(s.k, s.k, l.kNorm, m.Eps)
	m.attention(s, &m.Rope, gpu.AttnOpts{Scale: m.attnScale(), Window: m.Window(s.layer)}, l.wo) // xb = wo · attention(q, K, V)
	be.RMSNorm(s.xb, s.xb, l.postAttn, m.Eps)                                                    //   normed
	be.Add(s.x, s.x, s.xb)                                                                       // residual

	m.matMuls(s, s.x, s.hb, l.gate, s.hb2, l.up) // hb, hb2 [n, FFN]
	be.SiLUMul(s.hb, s.hb, s.hb2)                // hb = silu(hb) · hb2
	be.MatMul(s.xb, s.hb, l.down)                // xb [n, Dim]
	be.RMSNorm(s.xb, s.xb, l.postFFN, m.Eps)     //   normed
	be.Add(s.x, s.x, s.xb)                       // residual
}
