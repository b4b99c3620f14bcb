package arch

import (
	"fmt"

	"folio/gpu"
	"folio/models/gguf"
)

// exaone4: EXAONE 4.0 (1.2B, 32B). No norm before attention or the
// feed-forward: RMS norms of their outputs before each residual add
// (attn_post_norm, ffn_post_norm), Q and K normed per head, neox rope.
// The 64-layer model (32B) windows three layers of four (4096 tokens
// unless the file says otherwise) and turns rope on those alone, as
// llama.cpp decides by the layer count; the others use rope everywhere.
type exaone4Block struct {
	wq, wk, wv, wo           gpu.Tensor
	qNorm, kNorm             gpu.Tensor // [1, HeadDim]
	postAttnNorm, postFFNorm gpu.Tensor // [1, Dim]
	gate, up, down           gpu.Tensor
	rope                     *gpu.Rope // nil on the 32B's global layers
	opts                     gpu.AttnOpts
}

func newExaone4Block(ld *loader, c *Config, i int) block {
	w := func(name string, rows, cols int) gpu.Tensor {
		return ld.weight(fmt.Sprintf("blk.%d.%s.weight", i, name), rows, cols)
	}
	l := &exaone4Block{
		wq: w("attn_q", c.QDim(), c.Dim), wk: w("attn_k", c.KVDim(), c.Dim), wv: w("attn_v", c.KVDim(), c.Dim),
		wo:    w("attn_output", c.Dim, c.QDim()),
		qNorm: w("attn_q_norm", 1, c.HeadDim), kNorm: w("attn_k_norm", 1, c.HeadDim),
		postAttnNorm: w("post_attention_norm", 1, c.Dim), postFFNorm: w("post_ffw_norm", 1, c.Dim),
		gate: w("ffn_gate", c.FFN, c.Dim), up: w("ffn_up", c.FFN, c.Dim), down: w("ffn_down", c.Dim, c.FFN),
		rope: &c.Rope,
		opts: gpu.AttnOpts{Scale: c.attnScale(), Window: c.Window(i)},
	}
	if c.Windows != nil && l.opts.Window == 0 {
		l.rope = nil
	}
	return l
}

func (l *exaone4Block) forward(m *Model, s *step) {
	be := m.be
	m.matMuls(s, s.x, s.q, l.wq, s.k, l.wk, s.v, l.wv) // from the stream itself
	be.RMSNorm(s.q, s.q, l.qNorm, m.Eps)               // each head normed
	be.RMSNorm(s.k, s.k, l.kNorm, m.Eps)
	m.attention(s, l.rope, l.opts, l.wo) // xb = wo · attention(q, K, V)
	be.RMSNorm(s.xb, s.xb, l.postAttnNorm, m.Eps)
	be.Add(s.x, s.x, s.xb)
	m.matMuls(s, s.x, s.hb, l.gate, s.hb2, l.up)
	be.SiLUMul(s.hb, s.hb, s.hb2)
	be.MatMul(s.xb, s.hb, l.down)
	be.RMSNorm(s.xb, s.xb, l.postFFNorm, m.Eps)
	be.Add(s.x, s.x, s.xb)
}

// readExaone4 sets the 32B's windows; a file with multi-token-prediction
// layers (nextn_predict_layers), which llama.cpp keeps but does not run,
// is refused.
func readExaone4(f *gguf.File, p string, c *Config) error {
	if n, ok := f.Int(p + "nextn_predict_layers"); ok && n > 0 {
		return fmt.Errorf("%snextn_predict_layers = %d: exaone4 files with multi-token-prediction layers are not supported yet", p, n)
	}
	if c.Layers != 64 {
		return nil
	}
	return readWindows(f, p, c, 4096)
}

// readWindows windows three layers of four (EXAONE's; the file's
// attention.sliding_window_pattern where it has one) by
// attention.sliding_window tokens, def where the file has none.
func readWindows(f *gguf.File, p string, c *Config, def int64) error {
	window, ok := f.Int(p + "attention.sliding_window")
	if !ok {
		window = def
	}
	if window <= 0 || window > 1<<24 {
		return fmt.Errorf("%sattention.sliding_window = %d is out of range", p, window)
	}
	return setWindows(f, p, c, window, 4)
}
