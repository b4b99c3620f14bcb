package arch

import (
	"fmt"

	"folio/gpu"
)

// bert: BERT encoders (all-MiniLM, bge, mxbai-embed-large). Token, token
// type ("sentence A" only) and absolute position embeddings summed and
// layer-normed; then per layer bidirectional attention and a GELU
// feed-forward, each added to its input and layer-normed after (post-norm).
// Every projection has a bias, every LayerNorm a scale and a shift.
//
// nomic-bert (nomic-embed-text): the same layout with a fused QKV
// projection rotated by rope (neox pairing) instead of position embeddings,
// and a SwiGLU feed-forward; the biases are optional.
type bertBlock struct {
	wq, wk, wv gpu.Tensor // [QDim, Dim], [KVDim, Dim], [KVDim, Dim]
	bq, bk, bv gpu.Tensor // [1, QDim], [1, KVDim], [1, KVDim]; nil when absent
	wo         gpu.Tensor // [Dim, QDim]
	bo         gpu.Tensor // [1, Dim]; nil when absent
	attnNorm   layerNorm  // after attention's residual
	up         gpu.Tensor // [FFN, Dim]
	bu         gpu.Tensor // [1, FFN]; nil when absent
	gate       gpu.Tensor // [FFN, Dim]; nomic-bert only (SwiGLU), nil for bert (GELU)
	down       gpu.Tensor // [Dim, FFN]
	bd         gpu.Tensor // [1, Dim]; nil when absent
	outNorm    layerNorm  // after the feed-forward's residual
}

// layerNorm is a LayerNorm's scale and shift, each [1, Dim].
type layerNorm struct{ w, b gpu.Tensor }

func loadLayerNorm(ld *loader, name string, dim int) layerNorm {
	return layerNorm{w: ld.weight(name+".weight", 1, dim), b: ld.weight(name+".bias", 1, dim)}
}

func newBertBlock(ld *loader, c *Config, i int) block {
	p := fmt.Sprintf("blk.%d.", i)
	w := func(name string, rows, cols int) gpu.Tensor { return ld.weight(p+name+".weight", rows, cols) }
	bias := func(name string, n int) gpu.Tensor { return ld.optional(p+name+".bias", 1, n) }
	l := &bertBlock{
		wo:       w("attn_output", c.Dim, c.QDim()),
		bo:       bias("attn_output", c.Dim),
		attnNorm: loadLayerNorm(ld, p+"attn_output_norm", c.Dim),
		up:       w("ffn_up", c.FFN, c.Dim),
		bu:       bias("ffn_up", c.FFN),
		down:     w("ffn_down", c.Dim, c.FFN),
		bd:       bias("ffn_down", c.Dim),
		outNorm:  loadLayerNorm(ld, p+"layer_output_norm", c.Dim),
	}
	if c.Arch == "nomic-bert" {
		l.gate = w("ffn_gate", c.FFN, c.Dim)
	}
	if _, fused := ld.f.Tensor(p + "attn_qkv.weight"); fused {
		// [QDim + 2·KVDim, Dim]: Q's rows, then K's, then V's
		all, q, kv := c.QDim()+2*c.KVDim(), c.QDim(), c.KVDim()
		l.wq = ld.weightPart(p+"attn_qkv.weight", 0, q, all, c.Dim)
		l.wk = ld.weightPart(p+"attn_qkv.weight", q, kv, all, c.Dim)
		l.wv = ld.weightPart(p+"attn_qkv.weight", q+kv, kv, all, c.Dim)
		ld.releaseRepacked(p+"attn_qkv.weight", []gpu.Tensor{l.wq, l.wk, l.wv})
		return l
	}
	l.wq, l.bq = w("attn_q", c.QDim(), c.Dim), bias("attn_q", c.QDim())
	l.wk, l.bk = w("attn_k", c.KVDim(), c.Dim), bias("attn_k", c.KVDim())
	l.wv, l.bv = w("attn_v", c.KVDim(), c.Dim), bias("attn_v", c.KVDim())
	return l
}

// addBias adds b (a [1, cols] row) to every row of x, when there is one.
func (m *Model) addBias(x, b gpu.Tensor) {
	if b != nil {
		m.be.Add(x, x, b)
	}
}

func (l *bertBlock) forward(m *Model, s *step) {
	be := m.be
	m.matMuls(s, s.x, s.q, l.wq, s.k, l.wk, s.v, l.wv) // q [n, QDim], k and v [n, KVDim]
	m.addBias(s.q, l.bq)
	m.addBias(s.k, l.bk)
	m.addBias(s.v, l.bv)
	var rope *gpu.Rope // bert: positions are in the input embeddings
	if m.Arch == "nomic-bert" {
		rope = &m.Rope
	}
	m.attention(s, rope, gpu.AttnOpts{Scale: m.attnScale(), Bidirectional: true}, l.wo) // xb [n, Dim]
	m.addBias(s.xb, l.bo)
	be.Add(s.x, s.xb, s.x) // residual
	be.LayerNorm(s.x, s.x, l.attnNorm.w, l.attnNorm.b, m.Eps)

	if l.gate != nil { // SwiGLU
		m.matMuls(s, s.x, s.hb, l.gate, s.hb2, l.up) // hb, hb2 [n, FFN]
		be.SiLUMul(s.hb, s.hb, s.hb2)                // hb = silu(hb) · hb2
	} else { // GELU
		be.MatMul(s.hb, s.x, l.up) // hb [n, FFN]
		m.addBias(s.hb, l.bu)
		be.GELUMul(s.hb, s.hb, nil) // hb = gelu(hb)
	}
	be.MatMul(s.xb, s.hb, l.down) // xb [n, Dim]
	m.addBias(s.xb, l.bd)
	be.Add(s.x, s.xb, s.x) // residual
	be.LayerNorm(s.x, s.x, l.outNorm.w, l.outNorm.b, m.Eps)
}

// bertStem is the input of bert and nomic-bert: token embeddings plus the
// first token type's row plus (bert) the position's row, layer-normed.
// Their output is the last layer's, with no final norm.
type bertStem struct {
	types gpu.Tensor // [TokenTypes, Dim]; nil when absent
	pos   gpu.Tensor // [Context, Dim]; bert only
	norm  layerNorm
	zeros []int32 // [maxRows] the token type of every row
}

func newBertStem(ld *loader, c *Config) stem {
	st := &bertStem{norm: loadLayerNorm(ld, "token_embd_norm", c.Dim)}
	if t, ok := ld.f.Tensor("token_types.weight"); ok && len(t.Shape) == 2 {
		st.types = ld.weight("token_types.weight", int(t.Shape[1]), c.Dim)
	}
	if c.Arch == "bert" {
		st.pos = ld.weight("position_embd.weight", c.Context, c.Dim)
	}
	return st
}

func (st *bertStem) embed(m *Model, s *step, tokens []int32) {
	be, n := m.be, len(tokens)
	be.Embed(s.x, m.tokEmbd, tokens) // x [n, Dim]
	if st.types != nil {
		if len(st.zeros) < n {
			st.zeros = make([]int32, m.maxRows)
		}
		be.Embed(s.xb, st.types, st.zeros[:n]) // xb [n, Dim]: type 0 ("sentence A") on every row
		be.Add(s.x, s.x, s.xb)
	}
	if st.pos != nil {
		be.Embed(s.xb, st.pos, s.pos) // xb [n, Dim]: each row's position
		be.Add(s.x, s.xb, s.x)
	}
	be.LayerNorm(s.x, s.x, st.norm.w, st.norm.b, m.Eps)
}

func (st *bertStem) positions() int {
	if st.pos == nil {
		return 0
	}
	return st.pos.Rows()
}
