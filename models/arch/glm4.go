package arch

import (
	"fmt"

	"folio/gpu"
	"folio/models/gguf"
)

// glm4: GLM-4 (0414) and GLM-Z1. llama's layer with an RMS norm after
// attention and after the feed-forward as well as before each (gemma2's
// sandwich), biases on Q, K and V where a file has them, the feed-forward's
// gate and up fused in ffn_up (gate first, as phi3's), and rope over the
// first elements of each head (rope.dimension_count): adjacent pairs, or
// split halves where the file has M-RoPE sections (GLM-4.1V's text model:
// a text position's sections all read it).
type glm4Block struct {
	llamaBlock
	qkvBias                             // where the file has them
	postAttnNorm, postFFNorm gpu.Tensor // [1, Dim]
}

func newGlm4Block(ld *loader, c *Config, i int) block {
	p := fmt.Sprintf("blk.%d.", i)
	w := func(name string, rows, cols int) gpu.Tensor { return ld.weight(p+name+".weight", rows, cols) }
	l := &glm4Block{
		llamaBlock: llamaBlock{
			attnNorm: w("attn_norm", 1, c.Dim),
			wq:       w("attn_q", c.QDim(), c.Dim), wk: w("attn_k", c.KVDim(), c.Dim), wv: w("attn_v", c.KVDim(), c.Dim),
			wo:      w("attn_output", c.Dim, c.QDim()),
			ffnNorm: w("ffn_norm", 1, c.Dim),
			gate:    ld.weightPart(p+"ffn_up.weight", 0, c.FFN, 2*c.FFN, c.Dim),
			up:      ld.weightPart(p+"ffn_up.weight", c.FFN, c.FFN, 2*c.FFN, c.Dim),
			down:    w("ffn_down", c.Dim, c.FFN),
		},
		qkvBias:      loadQKVBias(c, p, ld.optional),
		postAttnNorm: w("post_attention_norm", 1, c.Dim), postFFNorm: w("post_ffw_norm", 1, c.Dim),
	}
	ld.releaseRepacked(p+"ffn_up.weight", []gpu.Tensor{l.gate, l.up})
	return l
}

func (l *glm4Block) forward(m *Model, s *step) {
	be := m.be
	be.RMSNorm(s.xb, s.x, l.attnNorm, m.Eps)
	m.matMuls(s, s.xb, s.q, l.wq, s.k, l.wk, s.v, l.wv)
	l.qkvBias.add(m, s)
	m.attention(s, &m.Rope, gpu.AttnOpts{Scale: m.attnScale()}, l.wo) // xb = wo · attention(q, K, V)
	be.RMSNorm(s.xb, s.xb, l.postAttnNorm, m.Eps)
	be.Add(s.x, s.x, s.xb)
	m.ffnPost(s, l.ffnNorm, l.gate, l.up, l.down, l.postFFNorm)
}

// readGlm4 pairs rope's elements as the file's M-RoPE sections say
// (split halves with them, adjacent without), and refuses a file with
// multi-token-prediction layers (nextn_predict_layers), which llama.cpp
// keeps but does not run.
func readGlm4(f *gguf.File, p string, c *Config) error {
	if n, ok := f.Int(p + "nextn_predict_layers"); ok && n > 0 {
		return fmt.Errorf("%snextn_predict_layers = %d: glm4 files with multi-token-prediction layers are not supported yet", p, n)
	}
	if _, ok := f.Get(p + "rope.dimension_sections"); ok {
		if err := readMRope(f, p, c); err != nil {
			return err
		}
		c.Rope.Neox = true
	}
	return nil
}
