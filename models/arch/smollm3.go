package arch

import "folio/gpu"

// smollm3: SmolLM3. llama's layer, but every fourth layer (3, 7, 11, …)
// attends without rotating Q and K (NoPE), as llama.cpp's
// n_no_rope_layer_step of 4 says.
type smollm3Block struct {
	llamaBlock
	rope bool // false on the NoPE layers
}

// smollm3NoRopeStep: layer i skips rope when (i+1) is a multiple of it.
const smollm3NoRopeStep = 4

func newSmollm3Block(ld *loader, c *Config, i int) block {
	return &smollm3Block{
		llamaBlock: *newLlamaBlock(ld, c, i).(*llamaBlock),
		rope:       (i+1)%smollm3NoRopeStep != 0,
	}
}

func (l *smollm3Block) forward(m *Model, s *step) {
	be := m.be
	be.RMSNorm(s.xb, s.x, l.attnNorm, m.Eps)            // xb [n, Dim]
	m.matMuls(s, s.xb, s.q, l.wq, s.k, l.wk, s.v, l.wv) // q [n, QDim], k and v [n, KVDim]
	var rope *gpu.Rope
	if l.rope {
		rope = &m.Rope
	}
	m.attention(s, rope, gpu.AttnOpts{Scale: m.attnScale(), Window: m.Window(s.layer)}, l.wo) // xb = wo · attention(q, K, V)
	be.Add(s.x, s.x, s.xb)                                                                    // residual
	m.ffn(s, l.ffnNorm, l.gate, l.up, l.down)
}
