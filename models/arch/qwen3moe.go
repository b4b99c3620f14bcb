package arch

import (
	"fmt"

	"folio/gpu"
)

// qwen3moe: Qwen 3's attention (Q/K norms per head, neox rope) with a
// routed mixture of experts as the feed-forward of every layer (moe.go):
// Qwen3-30B-A3B, Qwen3-Coder-30B-A3B, Qwen3-235B-A22B.
type qwen3moeBlock struct {
	attnNorm, ffnNorm gpu.Tensor // [1, Dim]
	wq, wk, wv, wo    gpu.Tensor // [QDim, Dim], [KVDim, Dim] ×2, [Dim, QDim]
	qNorm, kNorm      gpu.Tensor // [1, HeadDim]
	moe               moeFFN
}

func newQwen3moeBlock(ld *loader, c *Config, i int) block {
	w := func(name string, rows, cols int) gpu.Tensor {
		return ld.weight(fmt.Sprintf("blk.%d.%s.weight", i, name), rows, cols)
	}
	return &qwen3moeBlock{
		attnNorm: w("attn_norm", 1, c.Dim),
		wq:       w("attn_q", c.QDim(), c.Dim),
		wk:       w("attn_k", c.KVDim(), c.Dim),
		wv:       w("attn_v", c.KVDim(), c.Dim),
		wo:       w("attn_output", c.Dim, c.QDim()),
		qNorm:    w("attn_q_norm", 1, c.HeadDim),
		kNorm:    w("attn_k_norm", 1, c.HeadDim),
		ffnNorm:  w("ffn_norm", 1, c.Dim),
		moe:      newMoEFFN(ld, c, i),
	}
}

func (l *qwen3moeBlock) forward(m *Model, s *step) {
	be := m.be
	be.RMSNorm(s.xb, s.x, l.attnNorm, m.Eps)            // xb [n, Dim]
	m.matMuls(s, s.xb, s.q, l.wq, s.k, l.wk, s.v, l.wv) // q [n, QDim], k and v [n, KVDim]
	be.RMSNorm(s.q, s.q, l.qNorm, m.Eps)                //   each head normed
	be.RMSNorm(s.k, s.k, l.kNorm, m.Eps)
	m.attend(s, l.wo)              // x += wo · attention(q, K, V)
	l.moe.forward(m, s, l.ffnNorm) // x += Σ weight · expert(norm(x))
}
