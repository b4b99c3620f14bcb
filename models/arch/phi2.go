package arch

import (
	"fmt"

	"folio/gpu"
	"folio/models/gguf"
)

// phi2: Microsoft's Phi-2 (and Phi-1.5). Attention and the feed-forward
// run side by side on one LayerNorm with a shift, a bias on every
// projection (Q, K and V fused in attn_qkv, as its files have them, or
// apart), rope over the first elements of each head (rope.dimension_count
// of them, neox pairing), an ungated GELU feed-forward, and a LayerNorm and
// a bias around the output matrix.
type phi2Block struct {
	norm           layerNorm
	wq, wk, wv, wo gpu.Tensor
	qkvBias
	bo         gpu.Tensor
	up, down   gpu.Tensor
	bUp, bDown gpu.Tensor
}

func newPhi2Block(ld *loader, c *Config, i int) block {
	p := fmt.Sprintf("blk.%d.", i)
	w := func(name string, rows, cols int) gpu.Tensor { return ld.weight(p+name+".weight", rows, cols) }
	b := func(name string, cols int) gpu.Tensor { return ld.weight(p+name+".bias", 1, cols) }
	l := &phi2Block{
		norm: loadLayerNorm(ld, p+"attn_norm", c.Dim),
		wo:   w("attn_output", c.Dim, c.QDim()), bo: b("attn_output", c.Dim),
		up: w("ffn_up", c.FFN, c.Dim), bUp: b("ffn_up", c.FFN),
		down: w("ffn_down", c.Dim, c.FFN), bDown: b("ffn_down", c.Dim),
	}
	if _, fused := ld.f.Tensor(p + "attn_qkv.weight"); fused {
		all, q, kv := c.QDim()+2*c.KVDim(), c.QDim(), c.KVDim()
		l.wq = ld.weightPart(p+"attn_qkv.weight", 0, q, all, c.Dim)
		l.wk = ld.weightPart(p+"attn_qkv.weight", q, kv, all, c.Dim)
		l.wv = ld.weightPart(p+"attn_qkv.weight", q+kv, kv, all, c.Dim)
		ld.releaseRepacked(p+"attn_qkv.weight", []gpu.Tensor{l.wq, l.wk, l.wv})
		l.qkvBias = qkvBias{ld.biasPart(p+"attn_qkv.bias", 0, q, all), ld.biasPart(p+"attn_qkv.bias", q, kv, all),
			ld.biasPart(p+"attn_qkv.bias", q+kv, kv, all)}
		return l
	}
	l.wq, l.wk, l.wv = w("attn_q", c.QDim(), c.Dim), w("attn_k", c.KVDim(), c.Dim), w("attn_v", c.KVDim(), c.Dim)
	l.qkvBias = loadQKVBias(c, p, ld.weight)
	return l
}

// forward: as command-r's, the feed-forward's input is the normed stream
// that Q, K and V read; the stream gains attention's output, then the
// feed-forward's (llama.cpp adds the two first: the same sum, rounded
// otherwise). llama.cpp scales the rotated queries by 1/√HeadDim and the
// scores by 1; folio scales the scores.
func (l *phi2Block) forward(m *Model, s *step) {
	be := m.be
	be.LayerNorm(s.xb, s.x, l.norm.w, l.norm.b, m.Eps)  // xb [n, Dim]
	m.matMuls(s, s.xb, s.q, l.wq, s.k, l.wk, s.v, l.wv) // q [n, QDim], k and v [n, KVDim]
	l.qkvBias.add(m, s)
	be.MatMul(s.hb, s.xb, l.up) // hb [n, FFN]
	be.Add(s.hb, s.hb, l.bUp)
	be.GELUMul(s.hb, s.hb, nil)
	m.attention(s, &m.Rope, gpu.AttnOpts{Scale: m.attnScale()}, l.wo) // xb = wo · attention(q, K, V)
	be.Add(s.xb, s.xb, l.bo)
	be.Add(s.x, s.x, s.xb)
	be.MatMul(s.xb, s.hb, l.down)
	be.Add(s.xb, s.xb, l.bDown)
	be.Add(s.x, s.x, s.xb)
}

// biasPart loads elements off … off+n-1 of name, an F32 vector of total
// elements (a fused projection's bias), as a [1, n] row.
func (ld *loader) biasPart(name string, off, n, total int) gpu.Tensor {
	if ld.err != nil {
		return nil
	}
	t, ok := ld.f.Tensor(name)
	switch {
	case !ok:
		ld.err = fmt.Errorf("%w %s: tensor %s: missing", ErrModel, ld.f.Path, name)
	case fmt.Sprint(t.Shape) != fmt.Sprint([]uint64{uint64(total)}) || t.Type != gguf.TypeF32:
		ld.err = fmt.Errorf("%w %s: tensor %s: %v %v, want F32 [%d]", ErrModel, ld.f.Path, name, t.Type, t.Shape, total)
	}
	if ld.err != nil {
		return nil
	}
	w, err := ld.be.Weight(name, gguf.TypeF32, 1, n, ld.f.TensorData(t)[4*off:4*(off+n)])
	if err != nil {
		ld.err = fmt.Errorf("loading %s: %w", name, err)
	}
	return w
}
