package arch

import (
	"fmt"

	"folio/gpu"
	"folio/models/gguf"
)

// command-r: Cohere's Command R (35B) and the models built on it (Aya 23,
// Aya Expanse). Attention and the feed-forward run side by side on one
// LayerNorm (no shift) of the residual stream, and both outputs join it;
// rope pairs adjacent elements (as llama's); the output is tied to the
// token embeddings and the logits are multiplied by logit_scale. Command R+
// (64 layers and more) norms each head of Q and K with weights of its
// own, which folio refuses.
//
// cohere2 (Command R7B) is the same layer with a sliding window on three
// layers of four (attention.sliding_window_pattern), rope on those alone:
// its global layers attend without positions (readCohere2).
type commandRBlock struct {
	rope *gpu.Rope    // nil on cohere2's global layers
	opts gpu.AttnOpts // the scale and, on a windowed layer, the window

	norm           gpu.Tensor // [1, Dim]
	wq, wk, wv, wo gpu.Tensor
	gate, up, down gpu.Tensor
}

func newCommandRBlock(ld *loader, c *Config, i int) block {
	w := func(name string, rows, cols int) gpu.Tensor {
		return ld.weight(fmt.Sprintf("blk.%d.%s.weight", i, name), rows, cols)
	}
	if _, ok := ld.f.Tensor(fmt.Sprintf("blk.%d.attn_q_norm.weight", i)); ok && ld.err == nil {
		ld.err = fmt.Errorf("%w %s: command-r's per-head Q and K norms (Command R+) are not supported yet; run this model with llama.cpp", ErrModel, ld.f.Path)
	}
	l := &commandRBlock{
		rope: &c.Rope,
		opts: gpu.AttnOpts{Scale: c.attnScale(), Window: c.Window(i)},
		norm: w("attn_norm", 1, c.Dim),
		wq:   w("attn_q", c.QDim(), c.Dim), wk: w("attn_k", c.KVDim(), c.Dim), wv: w("attn_v", c.KVDim(), c.Dim),
		wo:   w("attn_output", c.Dim, c.QDim()),
		gate: w("ffn_gate", c.FFN, c.Dim), up: w("ffn_up", c.FFN, c.Dim), down: w("ffn_down", c.Dim, c.FFN),
	}
	if c.Arch == "cohere2" && l.opts.Window == 0 {
		l.rope = nil
	}
	return l
}

// forward: the feed-forward's first half and Q, K, V all read the normed
// stream in xb before attention's output takes its place; the residual
// stream then gains attention's output, then the feed-forward's (llama.cpp
// adds them in the other order: the same sum, rounded otherwise).
func (l *commandRBlock) forward(m *Model, s *step) {
	be := m.be
	be.LayerNorm(s.xb, s.x, l.norm, nil, m.Eps)         // xb [n, Dim]
	m.matMuls(s, s.xb, s.q, l.wq, s.k, l.wk, s.v, l.wv) // q [n, QDim], k and v [n, KVDim]
	m.matMuls(s, s.xb, s.hb, l.gate, s.hb2, l.up)       // hb, hb2 [n, FFN]
	be.SiLUMul(s.hb, s.hb, s.hb2)
	m.attention(s, l.rope, l.opts, l.wo) // xb = wo · attention(q, K, V)
	be.Add(s.x, s.x, s.xb)
	be.MatMul(s.xb, s.hb, l.down) // xb [n, Dim]
	be.Add(s.x, s.x, s.xb)
}

// readCommandR reads logit_scale (default 1: none).
func readCommandR(f *gguf.File, p string, c *Config) error {
	v, err := hyper(f, p+"logit_scale", 0, "a positive number (Command R uses 0.0625)", func(v float64) bool { return v > 0 && v < 1e6 })
	c.LogitMul = float32(v)
	return err
}

// readCohere2 reads command-r's keys and Command R7B's window: required,
// as llama.cpp requires it, on the layers attention.sliding_window_pattern
// marks (three of every four when absent). Its windowed layers turn with
// the global rope base, as llama.cpp's graph does whatever
// rope.freq_base_swa says.
func readCohere2(f *gguf.File, p string, c *Config) error {
	if err := readCommandR(f, p, c); err != nil {
		return err
	}
	if _, ok := f.Get(p + "logit_scale"); !ok {
		return fmt.Errorf("no %slogit_scale: a cohere2 file must have one", p)
	}
	window, ok := f.Int(p + "attention.sliding_window")
	if !ok || window <= 0 || window > 1<<24 {
		return fmt.Errorf("%sattention.sliding_window is %d (present: %v); a cohere2 file needs a positive one (Command R7B uses 4096)", p, window, ok)
	}
	return setWindows(f, p, c, window, 4)
}
