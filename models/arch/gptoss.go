package arch

import (
	"fmt"

	"folio/gpu"
	"folio/models/gguf"
)

// gpt-oss (OpenAI's gpt-oss-20b and -120b; llama.cpp's openai-moe):
// attention with biases on Q, K, V and the output, a sink logit per query
// head, sliding-window and full-attention layers alternating (the even
// layers windowed), neox rope (YaRN-scaled in the released files), and a
// mixture of experts with biases on the router and on each expert's
// matrices, the chosen experts' weights a softmax over their logits, and
// the clamped SwiGLU (SwiGLUOAI) between the experts' matrices.
type gptossBlock struct {
	attnNorm, postNorm gpu.Tensor // [1, Dim]
	wq, wk, wv, wo     gpu.Tensor // [QDim, Dim], [KVDim, Dim] ×2, [Dim, QDim]
	bq, bk, bv, bo     gpu.Tensor // [1, QDim], [1, KVDim] ×2, [1, Dim]
	rope               *gpu.Rope  // Config.Rope, or LocalRope on a windowed layer
	opts               gpu.AttnOpts
	moe                moeFFN
}

// gpt-oss's SwiGLU constants (llama.cpp's LLM_FFN_SWIGLU_OAI_MOE).
const (
	oaiAlpha = 1.702
	oaiLimit = 7
)

// readGptoss reads the experts (weights a softmax over the chosen logits,
// not renormalized), the sliding window (attention.sliding_window on the
// layers attention.sliding_window_pattern marks, every other one by
// default) and the windowed layers' rope base (rope.freq_base_swa, the
// full layers' when absent; the scaling is the same).
func readGptoss(f *gguf.File, p string, c *Config) error {
	if err := readMoE(f, p, c); err != nil {
		return err
	}
	c.Gating, c.ExpertWeightsNorm = GatingSoftmaxChosen, false
	window, ok := f.Int(p + "attention.sliding_window")
	switch {
	case !ok:
		return fmt.Errorf("no %sattention.sliding_window key: a gpt-oss file must say its window (gpt-oss uses 128)", p)
	case window < 0 || window > 1<<24:
		return fmt.Errorf("%sattention.sliding_window = %d is out of range", p, window)
	}
	if err := setWindows(f, p, c, window, 2); err != nil {
		return err
	}
	return readLocalRopeBase(f, p, c, "a number above 1 (gpt-oss uses 150000)")
}

// readLocalRopeBase sets the windowed layers' rope (LocalRope) to the
// global one turning at rope.freq_base_swa (the global base without it;
// must says what the key should hold).
func readLocalRopeBase(f *gguf.File, p string, c *Config, must string) error {
	c.LocalRope = c.Rope
	base, err := hyper(f, p+"rope.freq_base_swa", float64(c.Rope.Base), must, func(v float64) bool { return v > 1 })
	c.LocalRope.Base = float32(base)
	return err
}

func newGptossBlock(ld *loader, c *Config, i int) block {
	w := func(name string, rows, cols int) gpu.Tensor {
		return ld.weight(fmt.Sprintf("blk.%d.%s.weight", i, name), rows, cols)
	}
	b := func(name string, cols int) gpu.Tensor {
		return ld.weight(fmt.Sprintf("blk.%d.%s.bias", i, name), 1, cols)
	}
	rope := &c.Rope
	if c.Window(i) > 0 {
		rope = &c.LocalRope
	}
	l := &gptossBlock{
		attnNorm: w("attn_norm", 1, c.Dim),
		wq:       w("attn_q", c.QDim(), c.Dim),
		wk:       w("attn_k", c.KVDim(), c.Dim),
		wv:       w("attn_v", c.KVDim(), c.Dim),
		wo:       w("attn_output", c.Dim, c.QDim()),
		bq:       b("attn_q", c.QDim()),
		bk:       b("attn_k", c.KVDim()),
		bv:       b("attn_v", c.KVDim()),
		bo:       b("attn_output", c.Dim),
		postNorm: w("post_attention_norm", 1, c.Dim),
		rope:     rope,
		moe:      newMoEFFN(ld, c, i),
	}
	l.opts = gpu.AttnOpts{Window: c.Window(i), Sinks: w("attn_sinks", 1, c.Heads)}
	l.moe.loadBiases(ld, c, i)
	l.moe.oai = true
	return l
}

func (l *gptossBlock) forward(m *Model, s *step) {
	be := m.be
	be.RMSNorm(s.xb, s.x, l.attnNorm, m.Eps)            // xb [n, Dim]
	m.matMuls(s, s.xb, s.q, l.wq, s.k, l.wk, s.v, l.wv) // q [n, QDim], k and v [n, KVDim]
	be.Add(s.q, s.q, l.bq)                              //   + biases
	be.Add(s.k, s.k, l.bk)
	be.Add(s.v, s.v, l.bv)
	o := l.opts
	o.Scale = m.attnScale()
	m.attention(s, l.rope, o, l.wo) // xb = wo · attention(q, K, V)
	be.Add(s.xb, s.xb, l.bo)
	be.Add(s.x, s.x, s.xb)          // residual
	l.moe.forward(m, s, l.postNorm) // x += Σ weight · expert(norm(x))
}
