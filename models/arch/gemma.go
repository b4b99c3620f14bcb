package arch

import (
	"fmt"
	"math"

	"folio/gpu"
	"folio/models/gguf"
)

// gemma: Google's first Gemma (and CodeGemma): llama's layer with a GeGLU
// feed-forward (tanh GELU), token embeddings scaled by √Dim, rope over
// split halves (neox) and the output tied to the token embeddings; no
// post-norms, windows or soft-caps (readGemma1).
//
// gemma2 and gemma3: Google's Gemma 2 and Gemma 3 (text). llama's layer
// with a second RMS norm after attention and after the feed-forward, each
// before its residual add (sandwich norms), a GeGLU feed-forward (tanh
// GELU), token embeddings scaled by √Dim, rope over split halves (neox),
// and sliding-window attention on some layers: every other one for Gemma
// 2, five of every six for Gemma 3, whose windowed layers also rotate with
// their own (local) rope base. Gemma 2 soft-caps the attention scores and
// the logits; Gemma 3 norms each head of Q and K instead. The norm weights
// in the file already hold the 1 that Gemma's norm adds.
//
// gemma-embedding (EmbeddingGemma) is Gemma 3's layer as an encoder: its
// attention reads both ways, a window reaching Window/2 either side; the
// hidden states after the output norm are pooled and then projected
// (dense.go).
type gemmaBlock struct {
	attnNorm     gpu.Tensor // [1, Dim]
	wq           gpu.Tensor // [QDim, Dim]
	wk           gpu.Tensor // [KVDim, Dim]
	wv           gpu.Tensor // [KVDim, Dim]
	qNorm        gpu.Tensor // [1, HeadDim]; gemma3 and gemma-embedding only
	kNorm        gpu.Tensor // [1, HeadDim]; gemma3 and gemma-embedding only
	wo           gpu.Tensor // [Dim, QDim]
	postAttnNorm gpu.Tensor // [1, Dim]; nil for gemma
	ffnNorm      gpu.Tensor // [1, Dim]
	gate         gpu.Tensor // [FFN, Dim]
	up           gpu.Tensor // [FFN, Dim]
	down         gpu.Tensor // [Dim, FFN]
	postFFNNorm  gpu.Tensor // [1, Dim]; nil for gemma

	rope     *gpu.Rope    // the local rope on a windowed layer, else the global one
	opts     gpu.AttnOpts // window and soft-cap of this layer
	preScale float32      // queries are multiplied by it before soft-capped attention (gemma2); 0: none
}

func newGemmaBlock(ld *loader, c *Config, i int) block {
	w := func(name string, rows, cols int) gpu.Tensor {
		return ld.weight(fmt.Sprintf("blk.%d.%s.weight", i, name), rows, cols)
	}
	l := &gemmaBlock{
		attnNorm: w("attn_norm", 1, c.Dim),
		wq:       w("attn_q", c.QDim(), c.Dim),
		wk:       w("attn_k", c.KVDim(), c.Dim),
		wv:       w("attn_v", c.KVDim(), c.Dim),
		wo:       w("attn_output", c.Dim, c.QDim()),
		ffnNorm:  w("ffn_norm", 1, c.Dim),
		gate:     w("ffn_gate", c.FFN, c.Dim),
		up:       w("ffn_up", c.FFN, c.Dim),
		down:     w("ffn_down", c.Dim, c.FFN),
		rope:     &c.Rope,
		opts:     gpu.AttnOpts{Scale: c.attnScale(), Window: c.Window(i), Bidirectional: c.Encoder},
	}
	if c.Arch != "gemma" {
		l.postAttnNorm, l.postFFNNorm = w("post_attention_norm", 1, c.Dim), w("post_ffw_norm", 1, c.Dim)
	}
	if c.Arch != "gemma" && c.Arch != "gemma2" {
		l.qNorm, l.kNorm = w("attn_q_norm", 1, c.HeadDim), w("attn_k_norm", 1, c.HeadDim)
	}
	if l.opts.Window > 0 {
		l.rope = &c.LocalRope
	}
	if c.AttnSoftCap > 0 {
		// llama.cpp scales the queries, soft-caps q·k, and scales no more.
		l.preScale, l.opts.Scale, l.opts.SoftCap = c.QueryScale, 1, c.AttnSoftCap
	}
	return l
}

func (l *gemmaBlock) forward(m *Model, s *step) {
	be := m.be
	be.RMSNorm(s.xb, s.x, l.attnNorm, m.Eps)            // xb [n, Dim]
	m.matMuls(s, s.xb, s.q, l.wq, s.k, l.wk, s.v, l.wv) // q [n, QDim], k and v [n, KVDim]
	if l.qNorm != nil {
		be.RMSNorm(s.q, s.q, l.qNorm, m.Eps) // each head normed
		be.RMSNorm(s.k, s.k, l.kNorm, m.Eps)
	}
	if l.preScale != 0 {
		be.Scale(s.q, s.q, l.preScale) // before rope here, after it in llama.cpp: rope is linear
	}
	m.attention(s, l.rope, l.opts, l.wo) // xb = wo · attention(q, K, V)
	if l.postAttnNorm != nil {
		be.RMSNorm(s.xb, s.xb, l.postAttnNorm, m.Eps) //   normed
	}
	be.Add(s.x, s.x, s.xb)                        // residual
	be.RMSNorm(s.xb, s.x, l.ffnNorm, m.Eps)       // xb [n, Dim]
	m.matMuls(s, s.xb, s.hb, l.gate, s.hb2, l.up) // hb, hb2 [n, FFN]
	be.GELUMul(s.hb, s.hb, s.hb2)                 // hb = gelu(hb) · hb2
	be.MatMul(s.xb, s.hb, l.down)                 // xb [n, Dim]
	if l.postFFNNorm != nil {
		be.RMSNorm(s.xb, s.xb, l.postFFNNorm, m.Eps) //   normed
	}
	be.Add(s.x, s.x, s.xb) // residual
}

// readGemma1 sets the first Gemma's embedding scale, √Dim. Its queries
// take the default scale, 1/√HeadDim (llama.cpp scales the rotated queries
// and then the scores by 1: the same product, rounded once more).
func readGemma1(f *gguf.File, p string, c *Config) error {
	c.EmbedScale = float32(math.Sqrt(float64(c.Dim)))
	return nil
}

// readGemma reads what Gemma adds to llama's hyperparameters, with
// llama.cpp's defaults (src/models/gemma2.cpp, gemma3.cpp):
//
//   - attention.sliding_window: the window (gemma2: 4096 when absent;
//     gemma3: none when absent or 0, and then no layer is windowed);
//   - attention.sliding_window_pattern: which layers are windowed, as a
//     period n (layer i is windowed when i mod n < n-1; gemma2 2, gemma3
//     6) or an array of one bool per layer;
//   - rope.freq_base_swa: the windowed layers' rope base (gemma2: the
//     global base; gemma3: 10000), turning without the global scaling on
//     gemma3;
//   - attn_logit_softcapping (gemma2, default 50) and
//     final_logit_softcapping (gemma2 default 30; gemma3 none).
//
// Queries are scaled by 1/√HeadDim, or 1/√(Dim/Heads) for the 27B models
// (46 layers for Gemma 2, 62 for Gemma 3), as llama.cpp decides it
// (query_pre_attn_scalar, which it does not read).
func readGemma(f *gguf.File, p string, c *Config) error {
	gemma2 := c.Arch == "gemma2"
	positive := func(v float64) bool { return v > 0 }
	window, ok := f.Int(p + "attention.sliding_window")
	switch {
	case !ok && gemma2:
		window = 4096
	case window < 0 || window > 1<<24:
		return fmt.Errorf("%sattention.sliding_window = %d is out of range", p, window)
	}
	if window > 0 {
		period := 6
		if gemma2 {
			period = 2
		}
		if err := setWindows(f, p, c, window, period); err != nil {
			return err
		}
	}
	c.LocalRope = c.Rope
	localBase := 10000.0
	if gemma2 {
		localBase = float64(c.Rope.Base)
	} else {
		c.LocalRope.Scale, c.LocalRope.Factors = 1, nil
	}
	base, err := hyper(f, p+"rope.freq_base_swa", localBase, "a number above 1 (Gemma uses 10000)", func(v float64) bool { return v > 1 })
	if err != nil {
		return err
	}
	c.LocalRope.Base = float32(base)
	capDefault := 0.0
	if gemma2 {
		capDefault = 30
		soft, err := hyper(f, p+"attn_logit_softcapping", 50, "a positive number (Gemma 2 uses 50)", positive)
		if err != nil {
			return err
		}
		c.AttnSoftCap = float32(soft)
	}
	logitCap, err := hyper(f, p+"final_logit_softcapping", capDefault, "a positive number (Gemma 2 uses 30)",
		func(v float64) bool { return v >= 0 })
	if err != nil {
		return err
	}
	c.LogitCap = float32(logitCap)
	c.EmbedScale = float32(math.Sqrt(float64(c.Dim)))
	perHead := c.HeadDim
	if gemma2 && c.Layers == 46 || !gemma2 && c.Layers == 62 {
		perHead = c.Dim / c.Heads
	}
	c.QueryScale = float32(1 / math.Sqrt(float64(perHead)))
	return nil
}

// setWindows gives the layers attention.sliding_window_pattern marks
// (period when the file has no pattern; see slidingLayers) a window of
// window tokens, the others full attention.
func setWindows(f *gguf.File, p string, c *Config, window int64, period int) error {
	windowed, err := slidingLayers(f, p, c.Layers, period)
	if err != nil {
		return err
	}
	c.Windows = make([]int, c.Layers)
	for i, w := range windowed {
		if w {
			c.Windows[i] = int(window)
		}
	}
	return nil
}

// slidingLayers reads attention.sliding_window_pattern: a period n (layer
// i is windowed when i mod n < n-1; 0 windows every layer) or one bool per
// layer; period when the file has none.
func slidingLayers(f *gguf.File, p string, layers, period int) ([]bool, error) {
	key := p + "attention.sliding_window_pattern"
	out := make([]bool, layers)
	raw, ok := f.Get(key)
	if a, isArray := raw.(gguf.Array); isArray {
		flags, isBool := a.Values.([]bool)
		if !isBool || len(flags) != layers {
			return nil, fmt.Errorf("%s is an array of %d %v; want one bool per layer (%d)", key, a.Len(), a.Elem, layers)
		}
		copy(out, flags)
		return out, nil
	}
	if ok {
		n, isInt := gguf.AsInt64(raw)
		if !isInt || n < 0 || n > 1<<24 {
			return nil, fmt.Errorf("%s = %v; want a period (0 or more) or one bool per layer (%d)", key, raw, layers)
		}
		period = int(n)
	}
	for i := range out {
		out[i] = period == 0 || i%period < period-1
	}
	return out, nil
}
