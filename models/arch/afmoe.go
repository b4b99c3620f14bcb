package arch

import (
	"fmt"
	"math"

	"folio/gpu"
	"folio/models/gguf"
)

// afmoe: Arcee's Trinity (Nano 6B-A1B, Mini 26B-A3B). Embeddings times
// √Dim (µP); llama's attention with Q and K normed per head, its output
// gated by the sigmoid of attn_gate's projection of the layer's normed
// input before the output projection, and normed again before the
// residual add (post_attention_norm); rope on three layers of four, the
// fourth without (llama.cpp's n_no_rope_layer_step), and where the file
// has attention.sliding_window, a window on the layers
// attention.sliding_window_pattern marks (three of four without it), those
// turning at rope.freq_base_swa when the file has it. The feed-forward,
// normed again before its residual add (post_ffw_norm): the first
// leading_dense_block_count layers dense, then experts weighted as
// expert_gating_func says (sigmoid without it) with a selection bias,
// normalized and scaled as the file says, beside expert_shared_count
// shared experts.
type afmoeBlock struct {
	*denseLeadBlock
	wGate    gpu.Tensor // [QDim, Dim]
	postAttn gpu.Tensor // [1, Dim]
	postFFN  gpu.Tensor // [1, Dim]
	rope     *gpu.Rope  // nil on every fourth layer
	opts     gpu.AttnOpts
}

func newAfmoeBlock(ld *loader, c *Config, i int) block {
	p := fmt.Sprintf("blk.%d.", i)
	w := func(name string, rows, cols int) gpu.Tensor { return ld.weight(p+name+".weight", rows, cols) }
	l := &afmoeBlock{
		denseLeadBlock: &denseLeadBlock{qNorm: w("attn_q_norm", 1, c.HeadDim), kNorm: w("attn_k_norm", 1, c.HeadDim)},
		wGate:          w("attn_gate", c.QDim(), c.Dim),
		postAttn:       w("post_attention_norm", 1, c.Dim),
		postFFN:        w("post_ffw_norm", 1, c.Dim),
		rope:           &c.Rope,
		opts:           gpu.AttnOpts{Scale: c.attnScale(), Window: c.Window(i)},
	}
	if l.opts.Window > 0 {
		l.rope = &c.LocalRope
	}
	if (i+1)%4 == 0 {
		l.rope = nil
	}
	l.loadLayer(ld, c, i, "ffn_norm", ld.weight)
	if l.moe != nil {
		l.moe.postNorm = l.postFFN
	}
	return l
}

func (l *afmoeBlock) forward(m *Model, s *step) {
	be := m.be
	be.RMSNorm(s.xb, s.x, l.attnNorm, m.Eps)
	m.matMuls(s, s.xb, s.q, l.wq, s.k, l.wk, s.v, l.wv)
	be.MatMul(s.gate, s.xb, l.wGate)
	be.RMSNorm(s.q, s.q, l.qNorm, m.Eps) // each head normed
	be.RMSNorm(s.k, s.k, l.kNorm, m.Eps)
	m.attention(s, l.rope, l.opts, nil) // att = attention(q, K, V)
	gpu.SigmoidMul(be, s.att, s.att, s.gate)
	be.MatMul(s.xb, s.att, l.wo)
	be.RMSNorm(s.xb, s.xb, l.postAttn, m.Eps)
	be.Add(s.x, s.x, s.xb)
	if l.moe != nil {
		l.moe.forward(m, s, l.ffnNorm) // normed by postFFN before its residual add
		return
	}
	m.ffnPost(s, l.ffnNorm, l.gate, l.up, l.down, l.postFFN)
}

// readAfmoe reads glm4moe's expert keys (sigmoid without
// expert_gating_func; expert_shared_count required, as llama.cpp
// requires it), the µP embedding scale, and the windows where the file
// has them.
func readAfmoe(f *gguf.File, p string, c *Config) error {
	if _, ok := f.Int(p + "expert_shared_count"); !ok {
		return fmt.Errorf("no %sexpert_shared_count key: llama.cpp requires it of afmoe files", p)
	}
	if err := readLeadMoE(f, p, c, GatingSigmoid); err != nil {
		return err
	}
	c.EmbedScale = float32(math.Sqrt(float64(c.Dim)))
	c.AttnGate = true
	window, _ := f.Int(p + "attention.sliding_window")
	if window < 0 || window > 1<<24 {
		return fmt.Errorf("%sattention.sliding_window = %d is out of range", p, window)
	}
	if window == 0 {
		return nil
	}
	if err := readLocalRopeBase(f, p, c, "a number above 1"); err != nil {
		return err
	}
	return setWindows(f, p, c, window, 4)
}
