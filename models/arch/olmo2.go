package arch

import (
	"fmt"
	"math"

	"folio/gpu"
	"folio/models/gguf"
)

// olmo2: OLMo 2 and 3. No norm before attention or the feed-forward: Q
// and K are each RMS-normed over the whole row (all heads at once), and
// the outputs of attention and of the feed-forward are normed before each
// residual add. Rope over split halves (neox). OLMo 3 files add a sliding
// window on three layers of four (readOlmo2), whose rope is unscaled.
type olmo2Block struct {
	wq, wk, wv   gpu.Tensor // [QDim, Dim], [KVDim, Dim], [KVDim, Dim]
	qNorm, kNorm gpu.Tensor // [1, QDim], [1, KVDim]
	wo           gpu.Tensor // [Dim, QDim]
	postAttn     gpu.Tensor // [1, Dim]
	gate, up     gpu.Tensor // [FFN, Dim]
	down         gpu.Tensor // [Dim, FFN]
	postFFN      gpu.Tensor // [1, Dim]
	rope         *gpu.Rope  // Config.Rope, or LocalRope on a windowed layer
	opts         gpu.AttnOpts
}

// readOlmo2 reads OLMo 3's sliding window: attention.sliding_window on the
// layers attention.sliding_window_pattern marks (llama.cpp's default: all
// but every fourth). Those layers rotate with the plain rope of the base
// frequency, without the file's scaling, as llama.cpp's graph does.
func readOlmo2(f *gguf.File, p string, c *Config) error {
	window, ok := f.Int(p + "attention.sliding_window")
	switch {
	case !ok || window == 0:
		return nil
	case window < 0 || window > 1<<24:
		return fmt.Errorf("%sattention.sliding_window = %d is out of range", p, window)
	}
	if err := setWindows(f, p, c, window, 4); err != nil {
		return err
	}
	c.LocalRope = gpu.Rope{HeadDim: c.Rope.HeadDim, Dims: c.Rope.Dims, Base: c.Rope.Base, Scale: 1, Neox: c.Rope.Neox}
	return nil
}

func newOlmo2Block(ld *loader, c *Config, i int) block {
	w := func(name string, rows, cols int) gpu.Tensor {
		return ld.weight(fmt.Sprintf("blk.%d.%s.weight", i, name), rows, cols)
	}
	rope := &c.Rope
	if c.Window(i) > 0 {
		rope = &c.LocalRope
	}
	return &olmo2Block{
		wq:       w("attn_q", c.QDim(), c.Dim),
		wk:       w("attn_k", c.KVDim(), c.Dim),
		wv:       w("attn_v", c.KVDim(), c.Dim),
		qNorm:    w("attn_q_norm", 1, c.QDim()),
		kNorm:    w("attn_k_norm", 1, c.KVDim()),
		wo:       w("attn_output", c.Dim, c.QDim()),
		postAttn: w("post_attention_norm", 1, c.Dim),
		gate:     w("ffn_gate", c.FFN, c.Dim),
		up:       w("ffn_up", c.FFN, c.Dim),
		down:     w("ffn_down", c.Dim, c.FFN),
		postFFN:  w("post_ffw_norm", 1, c.Dim),
		rope:     rope,
		opts:     gpu.AttnOpts{Scale: float32(1 / math.Sqrt(float64(c.HeadDim))), Window: c.Window(i)},
	}
}

func (l *olmo2Block) forward(m *Model, s *step) {
	be := m.be
	m.matMuls(s, s.x, s.q, l.wq, s.k, l.wk, s.v, l.wv) // q [n, QDim], k and v [n, KVDim], from x itself
	be.RMSNorm(s.q, s.q, l.qNorm, m.Eps)               //   each row normed whole
	be.RMSNorm(s.k, s.k, l.kNorm, m.Eps)
	m.attention(s, l.rope, l.opts, l.wo)      // xb = wo · attention(q, K, V)
	be.RMSNorm(s.xb, s.xb, l.postAttn, m.Eps) //   normed
	be.Add(s.x, s.x, s.xb)                    // residual

	m.matMuls(s, s.x, s.hb, l.gate, s.hb2, l.up) // hb, hb2 [n, FFN]
	be.SiLUMul(s.hb, s.hb, s.hb2)                // hb = silu(hb) · hb2
	be.MatMul(s.xb, s.hb, l.down)                // xb [n, Dim]
	be.RMSNorm(s.xb, s.xb, l.postFFN, m.Eps)     //   normed
	be.Add(s.x, s.x, s.xb)                       // residual
}
