package arch

import (
	"fmt"
	"math"

	"folio/gpu"
	"folio/models/gguf"
)

// hunyuan-dense: Tencent's Hunyuan dense models (0.5B to 7B). llama's
// layer with rope over split halves, Q and K RMS-normed per head after
// their rope (qwen3 norms before it), biases on Q, K, V and the output
// projection where a file has them, and the rope base raised by the NTK
// alpha (rope.scaling.alpha: base·alpha^(d/(d-2)), d the head size).
//
// hunyuan-moe (Hunyuan-A13B) has the same attention, without the output
// projection's bias and without the alpha (llama.cpp reads neither for
// it), and a feed-forward of experts feed_forward_length wide, softmax
// weights renormalized, beside an ungated shared expert
// (expert_shared_feed_forward_length, feed_forward_length when absent).
type hunyuanBlock struct {
	llamaBiased
	qNorm, kNorm gpu.Tensor // [1, HeadDim]
	moe          *moeFFN    // hunyuan-moe's; nil: the dense feed-forward
}

func newHunyuanBlock(ld *loader, c *Config, i int) block {
	p := fmt.Sprintf("blk.%d.", i)
	n := func(name string) gpu.Tensor { return ld.weight(p+name+".weight", 1, c.HeadDim) }
	l := &hunyuanBlock{qNorm: n("attn_q_norm"), kNorm: n("attn_k_norm")}
	l.qkvBias = loadQKVBias(c, p, ld.optional)
	if c.Experts == 0 {
		l.llamaBlock = loadLlamaLayer(ld, c, i, "ffn_norm")
		l.bo = ld.optional(p+"attn_output.bias", 1, c.Dim)
		return l
	}
	l.llamaBlock = loadLlamaAttention(ld, c, i, "ffn_norm")
	f := newMoEFFN(ld, c, i)
	f.shared = loadShared(ld, c, i, false)
	l.moe = &f
	return l
}

// forward turns Q and K first and norms them after, so attention takes
// them as they are (no rope of its own).
func (l *hunyuanBlock) forward(m *Model, s *step) {
	be := m.be
	be.RMSNorm(s.xb, s.x, l.attnNorm, m.Eps)
	m.matMuls(s, s.xb, s.q, l.wq, s.k, l.wk, s.v, l.wv)
	l.qkvBias.add(m, s)
	be.Rope(s.q, s.pos, &m.Rope)
	be.Rope(s.k, s.pos, &m.Rope)
	be.RMSNorm(s.q, s.q, l.qNorm, m.Eps) // each head normed
	be.RMSNorm(s.k, s.k, l.kNorm, m.Eps)
	m.attention(s, nil, gpu.AttnOpts{Scale: m.attnScale()}, l.wo)
	m.addBias(s.xb, l.bo)
	be.Add(s.x, s.x, s.xb)
	m.ffnOrExperts(s, l.moe, l.ffnNorm, l.gate, l.up, l.down)
}

// readHunyuanMoE reads Hunyuan-A13B's experts (feed_forward_length wide,
// renormalized, times expert_weights_scale where the file has it) and its
// shared expert's width.
func readHunyuanMoE(f *gguf.File, p string, c *Config) error {
	if err := readFFNExperts(f, p, c); err != nil {
		return err
	}
	if err := readSharedFFN(f, p, c); err != nil {
		return err
	}
	return readExpertScale(f, p, c)
}

// readHunyuan raises the rope base by rope.scaling.alpha, in float32 as
// llama.cpp computes it.
func readHunyuan(f *gguf.File, p string, c *Config) error {
	alpha, err := hyper(f, p+"rope.scaling.alpha", 0, "a positive number (Hunyuan uses 1000)", func(v float64) bool { return v >= 0 && v < 1e9 })
	if err != nil || alpha == 0 {
		return err
	}
	d := float32(c.HeadDim)
	c.Rope.Base *= float32(math.Pow(float64(float32(alpha)), float64(d/(d-2))))
	return nil
}
