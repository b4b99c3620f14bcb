package arch

import (
	"fmt"

	"folio/gpu"
	"folio/models/gguf"
)

// olmoe: OLMoE-1B-7B. llama's pre-norm layer with OLMo 2's Q and K norms
// over the whole projection (all heads at once), rope over split halves
// (neox), and a mixture of experts of feed_forward_length as the
// feed-forward, softmax weights not renormalized (llama.cpp's olmoe graph
// passes norm_w false). llama.cpp's loader sizes the K norm by the
// embedding, so its files have as many KV heads as query heads.
type olmoeBlock struct {
	attnNorm, ffnNorm gpu.Tensor // [1, Dim]
	wq, wk, wv, wo    gpu.Tensor // [QDim, Dim], [KVDim, Dim] ×2, [Dim, QDim]
	qNorm, kNorm      gpu.Tensor // [1, QDim], [1, KVDim]
	moe               moeFFN
}

func newOlmoeBlock(ld *loader, c *Config, i int) block {
	w := func(name string, rows, cols int) gpu.Tensor {
		return ld.weight(fmt.Sprintf("blk.%d.%s.weight", i, name), rows, cols)
	}
	return &olmoeBlock{
		attnNorm: w("attn_norm", 1, c.Dim),
		wq:       w("attn_q", c.QDim(), c.Dim),
		wk:       w("attn_k", c.KVDim(), c.Dim),
		wv:       w("attn_v", c.KVDim(), c.Dim),
		wo:       w("attn_output", c.Dim, c.QDim()),
		qNorm:    w("attn_q_norm", 1, c.QDim()),
		kNorm:    w("attn_k_norm", 1, c.KVDim()),
		ffnNorm:  w("ffn_norm", 1, c.Dim),
		moe:      newMoEFFN(ld, c, i),
	}
}

func (l *olmoeBlock) forward(m *Model, s *step) {
	be := m.be
	be.RMSNorm(s.xb, s.x, l.attnNorm, m.Eps)            // xb [n, Dim]
	m.matMuls(s, s.xb, s.q, l.wq, s.k, l.wk, s.v, l.wv) // q [n, QDim], k and v [n, KVDim]
	be.RMSNorm(s.q, s.q, l.qNorm, m.Eps)                //   each row normed whole
	be.RMSNorm(s.k, s.k, l.kNorm, m.Eps)
	m.attend(s, l.wo)              // x += wo · attention(q, K, V)
	l.moe.forward(m, s, l.ffnNorm) // x += Σ weight · expert(norm(x))
}

// readOlmoe reads the experts: feed_forward_length wide, their softmax
// weights not renormalized.
func readOlmoe(f *gguf.File, p string, c *Config) error {
	if err := readFFNExperts(f, p, c); err != nil {
		return err
	}
	c.ExpertWeightsNorm = false
	return nil
}
