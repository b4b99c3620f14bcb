package arch

import (
	"fmt"
	"math"

	"folio/gpu"
	"folio/models/gguf"
)

// gemma4: Google's Gemma 4 (text): E2B, E4B, 31B and 26B-A4B. Gemma 3's
// sandwich layer with:
//   - two attention shapes: the windowed layers' heads key_length_swa wide
//     over the head_count_kv array's K/V heads for them, the global layers'
//     key_length wide over theirs (Config.SWAHeadDim: their scratch and
//     caches apart, Config.LayerGroups);
//   - Q and K normed per head, V too (without a weight), all before NEOX
//     rope over rope.dimension_count_swa of the windowed layers' heads at
//     rope.freq_base_swa (10000 without it), over all of the global ones'
//     at the file's base with rope_freqs' factors (Gemma 4's "proportional"
//     rope: a factor of 1e30 leaves a pair unturned);
//   - V the raw K where a layer has no attn_v (the global layers' K = V);
//   - attention scores unscaled (Gemma 4's scaling is 1);
//   - each layer's output times layer_output_scale where the file has it;
//   - experts where a layer has ffn_gate_inp (26B-A4B): beside the dense
//     GeGLU feed-forward (normed after by post_ffw_norm_1), GeGLU experts
//     on pre_ffw_norm_2's input, routed by softmax from the layer's input
//     RMS-normed without a weight, times 1/√Dim and ffn_gate_inp.scale,
//     the chosen renormalized, each expert's output times its
//     ffn_down_exps.scale, the sum normed by post_ffw_norm_2; the two
//     added, then post_ffw_norm.
//
// Embeddings times √Dim, the logits soft-capped at final_logit_softcapping
// where the file has it. E2B and E4B add per-layer embeddings
// (gemma4_ple.go), end with attention.shared_kv_layers layers that attend
// earlier layers' K/V and write none (Config.KVFrom: they share their
// sources' cache rows, Groups.Shares), and may give those layers
// feed-forwards twice as wide (a feed_forward_length per layer,
// Config.FFNs).
type gemma4Block struct {
	attnNorm, postAttn gpu.Tensor // [1, Dim]
	wq, wk, wv, wo     gpu.Tensor // wv nil: V is K
	qNorm, kNorm, unit gpu.Tensor // [1, head size]; unit: ones, V's norm
	ffnNorm, postFFN   gpu.Tensor // [1, Dim]
	gate, up, down     gpu.Tensor // the dense feed-forward
	moe                *moeFFN    // nil without experts
	preNorm2           gpu.Tensor // [1, Dim]: the experts' input norm; nil without experts
	outScale           float32    // layer_output_scale; 0: none
	ffn                int        // the feed-forward's width
	shared             bool       // no K/V of its own: it attends another layer's (Config.KVFrom)
	pl                 *pleLayer  // the per-layer embedding; nil without
	rope               *gpu.Rope
	opts               gpu.AttnOpts
}

func newGemma4Block(ld *loader, c *Config, i int) block {
	p := fmt.Sprintf("blk.%d.", i)
	w := func(name string, rows, cols int) gpu.Tensor { return ld.weight(p+name+".weight", rows, cols) }
	kvHeads, hd := c.LayerKV(i)
	q, kv, ffn := c.Heads*hd, kvHeads*hd, c.LayerFFN(i)
	l := &gemma4Block{
		attnNorm: w("attn_norm", 1, c.Dim),
		wq:       w("attn_q", q, c.Dim),
		wo:       w("attn_output", c.Dim, q),
		qNorm:    w("attn_q_norm", 1, hd),
		postAttn: w("post_attention_norm", 1, c.Dim),
		ffnNorm:  w("ffn_norm", 1, c.Dim),
		gate:     w("ffn_gate", ffn, c.Dim),
		up:       w("ffn_up", ffn, c.Dim),
		down:     w("ffn_down", c.Dim, ffn),
		postFFN:  w("post_ffw_norm", 1, c.Dim),
		rope:     &c.Rope,
		opts:     gpu.AttnOpts{Scale: 1, Window: c.Window(i)},
		ffn:      ffn,
		shared:   c.KVFrom != nil && c.KVFrom[i] >= 0,
	}
	if !l.shared { // a sharing layer's K and V weights, where a file has them, go unread
		l.wk, l.kNorm, l.unit = w("attn_k", kv, c.Dim), w("attn_k_norm", 1, hd), ld.ones(hd)
		l.wv = ld.optional(p+"attn_v.weight", kv, c.Dim)
	}
	if c.PLEDim > 0 {
		l.pl = loadPLELayer(ld, c, i)
	}
	if l.opts.Window > 0 {
		l.rope = &c.LocalRope
	}
	if ld.err == nil {
		l.outScale = ld.scalar(p + "layer_output_scale.weight")
	}
	if _, ok := ld.f.Tensor(p + "ffn_gate_inp.weight"); ok && c.Experts > 0 {
		l.loadExperts(ld, c, i)
	}
	return l
}

// loadExperts loads layer i's experts, the dense feed-forward beside them
// as their shared expert (normed by ffn_norm before, post_ffw_norm_1
// after), and the router's and the experts' scales.
func (l *gemma4Block) loadExperts(ld *loader, c *Config, i int) {
	p := fmt.Sprintf("blk.%d.", i)
	f := newMoEFFN(ld, c, i)
	f.gelu, f.postNorm = true, l.postFFN
	f.expertsPost = ld.weight(p+"post_ffw_norm_2.weight", 1, c.Dim)
	l.preNorm2 = ld.weight(p+"pre_ffw_norm_2.weight", 1, c.Dim)
	f.shared = &sharedExpert{gate: l.gate, up: l.up, down: l.down, gelu: true, norm: l.ffnNorm,
		post: ld.weight(p+"post_ffw_norm_1.weight", 1, c.Dim)}
	// the router reads the layer's input RMS-normed without a weight, times
	// 1/√Dim and ffn_gate_inp.scale: one norm weight of their product
	scale := ld.floats(p+"ffn_gate_inp.scale", c.Dim)
	inv := float32(1 / math.Sqrt(float64(c.Dim)))
	for j := range scale {
		scale[j] *= inv
	}
	f.routerNorm = ld.hostWeight(p+"ffn_gate_inp.scale", scale)
	if _, ok := ld.f.Tensor(p + "ffn_down_exps.scale"); ok {
		f.downScale = ld.floats(p+"ffn_down_exps.scale", c.Experts)
	}
	l.moe = &f
}

func (l *gemma4Block) forward(m *Model, s *step) {
	be := m.be
	if s.layer == 0 && m.ple != nil {
		m.ple.prepare(m, s) // from the scaled input embeddings
	}
	be.RMSNorm(s.xb, s.x, l.attnNorm, m.Eps)
	switch {
	case l.shared:
		be.MatMul(s.q, s.xb, l.wq)
	case l.wv != nil:
		m.matMuls(s, s.xb, s.q, l.wq, s.k, l.wk, s.v, l.wv)
	default:
		m.matMuls(s, s.xb, s.q, l.wq, s.k, l.wk)
		be.Scale(s.v, s.k, 1) // V is the raw K
	}
	be.RMSNorm(s.q, s.q, l.qNorm, m.Eps) // each head normed
	if l.shared {                        // the K/V another layer wrote (s.kvLayer is its)
		be.Rope(s.q, s.pos, l.rope)
		be.Attention(s.att, s.q, s.kv, s.kvLayer, s.batch, l.opts)
		be.MatMul(s.xb, s.att, l.wo)
	} else {
		be.RMSNorm(s.k, s.k, l.kNorm, m.Eps)
		be.RMSNorm(s.v, s.v, l.unit, m.Eps)
		m.attention(s, l.rope, l.opts, l.wo)
	}
	be.RMSNorm(s.xb, s.xb, l.postAttn, m.Eps)
	be.Add(s.x, s.x, s.xb)
	if l.moe != nil {
		l.moe.forward(m, s, l.preNorm2) // the dense feed-forward its shared expert
	} else {
		hb, hb2 := m.ffnBuffers(s, l.ffn)
		be.RMSNorm(s.xb, s.x, l.ffnNorm, m.Eps)
		m.matMuls(s, s.xb, hb, l.gate, hb2, l.up)
		be.GELUMul(hb, hb, hb2)
		be.MatMul(s.xb, hb, l.down)
		be.RMSNorm(s.xb, s.xb, l.postFFN, m.Eps)
		be.Add(s.x, s.x, s.xb)
	}
	if l.pl != nil {
		l.pl.add(m, s)
	}
	if l.outScale != 0 {
		be.Scale(s.x, s.x, l.outScale)
	}
}

// scalar is the value of name, a one-element F32 tensor, 0 when the file
// has none.
func (ld *loader) scalar(name string) float32 {
	if _, ok := ld.f.Tensor(name); !ok {
		return 0
	}
	if v := ld.floats(name, 1); v != nil {
		return v[0]
	}
	return 0
}

// floats is name, an F32 tensor of n values, on the host (nil after an
// error, which sticks).
func (ld *loader) floats(name string, n int) []float32 {
	if ld.err != nil {
		return nil
	}
	t, ok := ld.f.Tensor(name)
	if !ok || t.Type != gguf.TypeF32 || t.Elements() != int64(n) {
		ld.err = fmt.Errorf("%w %s: tensor %s: want %d F32 values", ErrModel, ld.f.Path, name, n)
		return nil
	}
	v := make([]float32, n)
	if err := gguf.Dequantize(gguf.TypeF32, ld.f.TensorData(t), v); err != nil {
		ld.err = fmt.Errorf("%w %s: tensor %s: %v", ErrModel, ld.f.Path, name, err)
		return nil
	}
	return v
}

// readGemma4 reads Gemma 4's keys (llama.cpp's gemma4 loader): the window
// and its per-layer pattern, the two attention shapes, the windowed
// layers' rope, the logit soft-cap, the experts where the file has them;
// and refuses the E2B and E4B layouts.
func readGemma4(f *gguf.File, p string, c *Config) error {
	pleDim, _ := f.Int(p + "embedding_length_per_layer_input")
	if pleDim < 0 || pleDim > 1<<16 {
		return fmt.Errorf("%sembedding_length_per_layer_input = %d is out of range", p, pleDim)
	}
	c.PLEDim = int(pleDim)
	window, ok := f.Int(p + "attention.sliding_window")
	if !ok || window <= 0 || window > 1<<24 {
		return fmt.Errorf("%sattention.sliding_window is %d (present: %v): a gemma4 file gives its window", p, window, ok)
	}
	if raw, _ := f.Get(p + "attention.sliding_window_pattern"); !isArray(raw) {
		return fmt.Errorf("%sattention.sliding_window_pattern must be one bool per layer, as llama.cpp requires of gemma4 files", p)
	}
	if err := setWindows(f, p, c, window, 0); err != nil {
		return err
	}
	if err := readLayerKVHeads(f, p, c); err != nil {
		return err
	}
	if err := readSharedKV(f, p, c); err != nil {
		return err
	}
	swaDim := c.HeadDim
	if v, ok := f.Int(p + "attention.key_length_swa"); ok {
		if v <= 0 || v > 1<<16 || int(v)%2 != 0 {
			return fmt.Errorf("%sattention.key_length_swa = %d is out of range", p, v)
		}
		swaDim = int(v)
	}
	if v, ok := f.Int(p + "attention.value_length_swa"); ok && int(v) != swaDim {
		return fmt.Errorf("%sattention.value_length_swa %d differs from key_length_swa %d, which llama.cpp refuses", p, v, swaDim)
	}
	if swaDim != c.HeadDim || c.SWAKVHeads != c.KVHeads {
		c.SWAHeadDim = swaDim
	} else {
		c.SWAHeadDim, c.SWAKVHeads = 0, 0
	}
	c.LocalRope = gpu.Rope{HeadDim: swaDim, Dims: c.Rope.Dims, Neox: true, Base: 10000, Scale: 1, MScale: 1}
	if v, ok := f.Int(p + "rope.dimension_count_swa"); ok {
		if v <= 0 || int(v) > swaDim || v%2 != 0 {
			return fmt.Errorf("%srope.dimension_count_swa %d does not fit the windowed layers' head size %d", p, v, swaDim)
		}
		c.LocalRope.Dims = int(v)
	} else if c.LocalRope.Dims > swaDim {
		return fmt.Errorf("rope dimension count %d does not fit the windowed layers' head size %d: the file needs %srope.dimension_count_swa", c.Rope.Dims, swaDim, p)
	}
	base, err := hyper(f, p+"rope.freq_base_swa", 10000, "a number above 1", func(v float64) bool { return v > 1 })
	if err != nil {
		return err
	}
	c.LocalRope.Base = float32(base)
	logitCap, err := hyper(f, p+"final_logit_softcapping", 0, "0 or a positive number (Gemma uses 30)", func(v float64) bool { return v >= 0 })
	if err != nil {
		return err
	}
	c.LogitCap, c.QueryScale = float32(logitCap), 1
	c.EmbedScale = float32(math.Sqrt(float64(c.Dim)))
	if n, _ := f.Int(p + "expert_count"); n == 0 {
		return nil
	}
	if err := readMoE(f, p, c); err != nil {
		return err
	}
	c.SharedFFN = c.FFN // the dense feed-forward beside the experts
	return nil
}

// intValues is an array of integers of any width as int64s.
func intValues(a gguf.Array) ([]int64, bool) {
	switch vs := a.Values.(type) {
	case []uint8:
		return widen(vs), true
	case []int8:
		return widen(vs), true
	case []uint16:
		return widen(vs), true
	case []int16:
		return widen(vs), true
	case []uint32:
		return widen(vs), true
	case []int32:
		return widen(vs), true
	case []int64:
		return vs, true
	}
	return nil, false
}

func widen[T uint8 | int8 | uint16 | int16 | uint32 | int32](vs []T) []int64 {
	out := make([]int64, len(vs))
	for i, v := range vs {
		out[i] = int64(v)
	}
	return out
}

// readSharedKV reads attention.shared_kv_layers: the last n layers write
// no K/V (shareKV).
func readSharedKV(f *gguf.File, p string, c *Config) error {
	n, _ := f.Int(p + "attention.shared_kv_layers")
	if n == 0 {
		return nil
	}
	if n < 0 || n > int64(c.Layers) {
		return fmt.Errorf("%sattention.shared_kv_layers = %d of %d layers", p, n, c.Layers)
	}
	return shareKV(c, c.Layers-int(n), p+"attention.shared_kv_layers")
}

// shareKV makes layers start and on write no K/V and attend that of the
// last layer of their kind before them, the windowed ones layer
// start-2's, the global ones start-1's, as llama.cpp maps them (which
// assumes those two are of those kinds); key names what set start.
func shareKV(c *Config, start int, key string) error {
	if start < 2 || c.Window(start-2) == 0 || c.Window(start-1) != 0 {
		return fmt.Errorf("%s: layers %d and on attend earlier layers' K/V, so layers %d and %d must be a windowed one then a global one (llama.cpp's mapping)", key, start, start-2, start-1)
	}
	c.KVFrom = make([]int, c.Layers)
	for l := range c.KVFrom {
		switch {
		case l < start:
			c.KVFrom[l] = -1
		case c.Window(l) > 0:
			c.KVFrom[l] = start - 2
		default:
			c.KVFrom[l] = start - 1
		}
	}
	return nil
}

// isArray reports whether a metadata value is an array.
func isArray(v any) bool { _, ok := v.(gguf.Array); return ok }

// readLayerKVHeads reads attention.head_count_kv when it is an array (one
// count per layer): the windowed layers' count is SWAKVHeads, the
// others' KVHeads, each the same for all of its layers.
func readLayerKVHeads(f *gguf.File, p string, c *Config) error {
	c.SWAKVHeads = c.KVHeads
	raw, _ := f.Get(p + "attention.head_count_kv")
	a, ok := raw.(gguf.Array)
	if !ok {
		return nil
	}
	key := p + "attention.head_count_kv"
	counts, ok := intValues(a)
	if !ok || len(counts) != c.Layers {
		return fmt.Errorf("%s is %d %v for %d layers; want one integer per layer", key, a.Len(), a.Elem, c.Layers)
	}
	got := [2]int{}
	for l, v := range counts {
		if v <= 0 || int(v) > c.Heads || c.Heads%int(v) != 0 {
			return fmt.Errorf("%s[%d] = %d: it must divide the %d heads", key, l, v, c.Heads)
		}
		kind := 0
		if c.Window(l) > 0 {
			kind = 1
		}
		if got[kind] != 0 && got[kind] != int(v) {
			return fmt.Errorf("%s[%d] = %d where another layer of its kind has %d: folio runs one K/V shape for the windowed layers and one for the others", key, l, v, got[kind])
		}
		got[kind] = int(v)
	}
	if got[0] != 0 {
		c.KVHeads = got[0]
	}
	if got[1] != 0 {
		c.SWAKVHeads = got[1]
	}
	return nil
}
