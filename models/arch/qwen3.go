package arch

import (
	"fmt"

	"folio/gpu"
)

// qwen3: Qwen 3 (dense). llama's layer without biases, with an RMS norm
// over each head of Q and of K before rope (neox pairing); the head size
// may differ from Dim/Heads.
type qwen3Block struct {
	llamaBlock
	qNorm gpu.Tensor // [1, HeadDim]
	kNorm gpu.Tensor // [1, HeadDim]
}

func newQwen3Block(ld *loader, c *Config, i int) block {
	n := func(name string) gpu.Tensor { return ld.weight(fmt.Sprintf("blk.%d.%s.weight", i, name), 1, c.HeadDim) }
	return &qwen3Block{
		llamaBlock: *newLlamaBlock(ld, c, i).(*llamaBlock),
		qNorm:      n("attn_q_norm"),
		kNorm:      n("attn_k_norm"),
	}
}

func (l *qwen3Block) forward(m *Model, s *step) {
	be := m.be
	be.RMSNorm(s.xb, s.x, l.attnNorm, m.Eps)            // xb [n, Dim]
	m.matMuls(s, s.xb, s.q, l.wq, s.k, l.wk, s.v, l.wv) // q [n, Heads·HeadDim], k and v [n, KVHeads·HeadDim]
	be.RMSNorm(s.q, s.q, l.qNorm, m.Eps)                //   each head normed
	be.RMSNorm(s.k, s.k, l.kNorm, m.Eps)
	m.attend(s, l.wo) // x += wo · attention(q, K, V)
	m.ffn(s, l.ffnNorm, l.gate, l.up, l.down)
}
