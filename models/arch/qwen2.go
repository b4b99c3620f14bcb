package arch

import (
	"fmt"

	"folio/gpu"
)

// qwen2: Qwen 1.5, 2 and 2.5. llama's layer with biases on the Q, K and V
// projections and rope over split halves (neox).
type qwen2Block struct {
	llamaBlock
	bq gpu.Tensor // [1, QDim]
	bk gpu.Tensor // [1, KVDim]
	bv gpu.Tensor // [1, KVDim]
}

func newQwen2Block(ld *loader, c *Config, i int) block {
	b := func(name string, cols int) gpu.Tensor {
		return ld.weight(fmt.Sprintf("blk.%d.%s.bias", i, name), 1, cols)
	}
	return &qwen2Block{
		llamaBlock: *newLlamaBlock(ld, c, i).(*llamaBlock),
		bq:         b("attn_q", c.QDim()),
		bk:         b("attn_k", c.KVDim()),
		bv:         b("attn_v", c.KVDim()),
	}
}

func (l *qwen2Block) forward(m *Model, s *step) {
	be := m.be
	be.RMSNorm(s.xb, s.x, l.attnNorm, m.Eps)            // xb [n, Dim]
	m.matMuls(s, s.xb, s.q, l.wq, s.k, l.wk, s.v, l.wv) // q [n, QDim], k and v [n, KVDim]
	be.Add(s.q, s.q, l.bq)                              //   + biases
	be.Add(s.k, s.k, l.bk)
	be.Add(s.v, s.v, l.bv)
	m.attend(s, l.wo) // x += wo · attention(q, K, V)
	m.ffn(s, l.ffnNorm, l.gate, l.up, l.down)
}
