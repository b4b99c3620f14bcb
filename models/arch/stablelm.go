package arch

import (
	"fmt"

	"folio/gpu"
)

// stablelm: StableLM 2 (1.6B), StableLM 3B and Stable Code 3B. llama's
// layer with LayerNorms that have a shift (the output's too), biases on Q,
// K and V where a file has them, and rope over the first elements of each
// head (rope.dimension_count of them, neox pairing). StableLM 2 12B's
// per-head Q and K norms and parallel residual are refused.
type stablelmBlock struct {
	attnNorm, ffnNorm layerNorm
	wq, wk, wv, wo    gpu.Tensor
	qkvBias           // where the file has them
	gate, up, down    gpu.Tensor
}

func newStablelmBlock(ld *loader, c *Config, i int) block {
	p := fmt.Sprintf("blk.%d.", i)
	if _, ok := ld.f.Tensor(p + "attn_q_norm.weight"); ok && ld.err == nil {
		ld.err = fmt.Errorf("%w %s: stablelm's per-head Q and K norms and parallel residual (StableLM 2 12B) are not supported yet; run this model with llama.cpp", ErrModel, ld.f.Path)
	}
	w := func(name string, rows, cols int) gpu.Tensor { return ld.weight(p+name+".weight", rows, cols) }
	return &stablelmBlock{
		attnNorm: loadLayerNorm(ld, p+"attn_norm", c.Dim),
		ffnNorm:  loadLayerNorm(ld, p+"ffn_norm", c.Dim),
		wq:       w("attn_q", c.QDim(), c.Dim), wk: w("attn_k", c.KVDim(), c.Dim), wv: w("attn_v", c.KVDim(), c.Dim),
		qkvBias: loadQKVBias(c, p, ld.optional),
		wo:      w("attn_output", c.Dim, c.QDim()),
		gate:    w("ffn_gate", c.FFN, c.Dim), up: w("ffn_up", c.FFN, c.Dim), down: w("ffn_down", c.Dim, c.FFN),
	}
}

func (l *stablelmBlock) forward(m *Model, s *step) {
	be := m.be
	be.LayerNorm(s.xb, s.x, l.attnNorm.w, l.attnNorm.b, m.Eps)
	m.matMuls(s, s.xb, s.q, l.wq, s.k, l.wk, s.v, l.wv)
	l.qkvBias.add(m, s)
	m.attend(s, l.wo) // x += wo · attention(q, K, V)
	be.LayerNorm(s.xb, s.x, l.ffnNorm.w, l.ffnNorm.b, m.Eps)
	m.matMuls(s, s.xb, s.hb, l.gate, s.hb2, l.up)
	be.SiLUMul(s.hb, s.hb, s.hb2)
	be.MatMul(s.xb, s.hb, l.down)
	be.Add(s.x, s.x, s.xb)
}
