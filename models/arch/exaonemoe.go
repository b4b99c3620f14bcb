package arch

import (
	"fmt"

	"folio/gpu"
	"folio/models/gguf"
)

// exaone-moe: K-EXAONE. llama's pre-norm layer without biases, Q and K
// normed per head; three layers of four windowed (128 tokens unless the
// file says otherwise, attention.sliding_window_pattern where it has
// one) with neox rope at the file's base, the fourth global without rope
// (as EXAONE 4.0 32B's); the first leading_dense_block_count layers
// dense, then experts weighted as expert_gating_func says (which
// llama.cpp requires), with the selection bias where the file has one,
// beside a shared expert of expert_shared_feed_forward_length (else the
// experts' width). The trailing nextn_predict_layers layers are left
// unread, as llama.cpp skips them.
type exaoneMoEBlock struct {
	*denseLeadBlock
	rope *gpu.Rope // nil on the global layers
	opts gpu.AttnOpts
}

func newExaoneMoEBlock(ld *loader, c *Config, i int) block {
	p := fmt.Sprintf("blk.%d.", i)
	l := &exaoneMoEBlock{
		denseLeadBlock: &denseLeadBlock{
			qNorm: ld.weight(p+"attn_q_norm.weight", 1, c.HeadDim),
			kNorm: ld.weight(p+"attn_k_norm.weight", 1, c.HeadDim),
		},
		rope: &c.Rope,
		opts: gpu.AttnOpts{Scale: c.attnScale(), Window: c.Window(i)},
	}
	if l.opts.Window == 0 {
		l.rope = nil
	}
	l.loadLayer(ld, c, i, "ffn_norm", ld.optional)
	return l
}

func (l *exaoneMoEBlock) forward(m *Model, s *step) {
	be := m.be
	be.RMSNorm(s.xb, s.x, l.attnNorm, m.Eps)
	m.matMuls(s, s.xb, s.q, l.wq, s.k, l.wk, s.v, l.wv)
	be.RMSNorm(s.q, s.q, l.qNorm, m.Eps) // each head normed
	be.RMSNorm(s.k, s.k, l.kNorm, m.Eps)
	m.attention(s, l.rope, l.opts, l.wo) // xb = wo · attention(q, K, V)
	be.Add(s.x, s.x, s.xb)
	m.ffnOrExperts(s, l.moe, l.ffnNorm, l.gate, l.up, l.down)
}

// readExaoneMoE reads glm4moe's expert keys with expert_gating_func
// required, the shared expert's width (expert_shared_feed_forward_length,
// else the experts' own) and the windows.
func readExaoneMoE(f *gguf.File, p string, c *Config) error {
	if _, ok := f.Int(p + "expert_gating_func"); !ok {
		return fmt.Errorf("no %sexpert_gating_func key: llama.cpp requires it of exaone-moe files", p)
	}
	if err := readLeadMoE(f, p, c, GatingSoftmax); err != nil {
		return err
	}
	if err := readCounts(f, p, countKey{"expert_shared_feed_forward_length", 1 << 24, &c.SharedFFN}); err != nil {
		return err
	}
	if c.SharedFFN == 0 {
		c.SharedFFN = c.ExpertFFN
	}
	return readWindows(f, p, c, 128)
}
