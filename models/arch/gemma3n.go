package arch

import (
	"fmt"
	"math"

	"folio/gpu"
	"folio/models/gguf"
)

// gemma3n: Google's Gemma 3n (text), E2B and E4B. Gemma 3's sandwich
// layer (Q and K normed per head with weights, V without; NEOX rope, the
// windowed layers' at rope.freq_base_swa; unscaled attention scores; a
// GeGLU feed-forward; logits soft-capped at 30) in a residual of AltUp
// streams (4), as llama.cpp's gemma3n graph computes it:
//
//   - the embeddings (times √Dim) are stream 0; altup_proj's matrices
//     make the others, each scaled to stream 0's norm row by row;
//   - a layer predicts every stream from all of them, with coefficients
//     from a router over stream 0 (RMS-normed, times 1/Dim, tanh), runs
//     attention and the feed-forward on the first prediction, adds a
//     low-rank LAuReL branch (laurel_l, laurel_r, laurel_post_norm) of
//     the attention's input to the attention's output (the sum times
//     1/√2), and corrects every prediction by the difference between
//     what the layer made and the first prediction, times coefficients
//     from the router over what it made (plus 1);
//   - the per-layer embeddings (gemma4_ple.go's) go, through inp_gate,
//     proj and post_norm, from the corrected first stream (times
//     altup_correct_scale) into the other streams;
//   - the first ten layers' feed-forward gates keep only what exceeds
//     their mean by 1.645 deviations (a Gaussian top 5%) before the GELU;
//   - layers 20 and on attend the K/V of layer 18 (windowed) or 19 and
//     write none (llama.cpp's n_layer_kv_from_start, fixed at 20);
//   - after the last layer, altup_unembd_proj's matrices fold streams 1
//     and on back, each scaled to stream 0's norm, and the four are
//     averaged.
//
// llama.cpp fixes the streams (4, stream 0 the active one), the LAuReL
// rank (64), the per-layer input width (256) and the soft-cap (30) rather
// than reading them; folio takes the same, and the tensors' shapes must
// agree.
type gemma3nBlock struct {
	attnNorm, postAttn gpu.Tensor // [1, Dim]
	wq, wk, wv, wo     gpu.Tensor
	qNorm, kNorm, unit gpu.Tensor // [1, HeadDim]; unit: ones, V's norm
	ffnNorm, postFFN   gpu.Tensor // [1, Dim]
	gate, up, down     gpu.Tensor
	laurelL, laurelR   gpu.Tensor // [LaurelRank, Dim], [Dim, LaurelRank]
	laurelPost         gpu.Tensor // [1, Dim]
	router, routerNorm gpu.Tensor // [AltUp, Dim]; [1, Dim]: altup_router_norm times 1/Dim
	predict, correct   gpu.Tensor // [AltUp², AltUp], [AltUp, AltUp]
	correctScale       []float32  // [Dim] altup_correct_scale, on the host
	pl                 *pleLayer
	sparse, shared     bool
	ffn                int
	rope               *gpu.Rope
	opts               gpu.AttnOpts
}

// Gemma 3n's fixed hyperparameters (llama.cpp's hparams defaults and graph
// constants for gemma3n).
const (
	gemma3nStreams      = 4
	gemma3nLaurelRank   = 64
	gemma3nPLEDim       = 256
	gemma3nKVLayers     = 20 // layers before this one have K/V of their own
	gemma3nSparseLayers = 10
	gemma3nStdMul       = 1.6448533535003662 // the normal distribution's 95th percentile
	gemma3nLogitCap     = 30
)

func newGemma3nBlock(ld *loader, c *Config, i int) block {
	p := fmt.Sprintf("blk.%d.", i)
	w := func(name string, rows, cols int) gpu.Tensor { return ld.weight(p+name+".weight", rows, cols) }
	ffn, n := c.LayerFFN(i), c.AltUp
	l := &gemma3nBlock{
		attnNorm:   w("attn_norm", 1, c.Dim),
		wq:         w("attn_q", c.QDim(), c.Dim),
		wo:         w("attn_output", c.Dim, c.QDim()),
		qNorm:      w("attn_q_norm", 1, c.HeadDim),
		postAttn:   w("post_attention_norm", 1, c.Dim),
		ffnNorm:    w("ffn_norm", 1, c.Dim),
		gate:       w("ffn_gate", ffn, c.Dim),
		up:         w("ffn_up", ffn, c.Dim),
		down:       w("ffn_down", c.Dim, ffn),
		postFFN:    w("post_ffw_norm", 1, c.Dim),
		laurelL:    w("laurel_l", c.LaurelRank, c.Dim),
		laurelR:    w("laurel_r", c.Dim, c.LaurelRank),
		laurelPost: w("laurel_post_norm", 1, c.Dim),
		router:     w("altup_router", n, c.Dim),
		predict:    w("altup_predict_coef", n*n, n),
		correct:    w("altup_correct_coef", n, n),
		pl:         loadPLELayer(ld, c, i),
		sparse:     i < gemma3nSparseLayers,
		shared:     c.KVFrom != nil && c.KVFrom[i] >= 0,
		ffn:        ffn,
		rope:       &c.Rope,
		opts:       gpu.AttnOpts{Scale: 1, Window: c.Window(i)},
	}
	if !l.shared { // a sharing layer's K and V weights, which files have, go unread
		l.wk, l.wv = w("attn_k", c.KVDim(), c.Dim), w("attn_v", c.KVDim(), c.Dim)
		l.kNorm, l.unit = w("attn_k_norm", 1, c.HeadDim), ld.ones(c.HeadDim)
	}
	if l.opts.Window > 0 {
		l.rope = &c.LocalRope
	}
	// the router reads stream 0 RMS-normed, times 1/Dim: one norm weight
	// of their product (exact: Dim is a power of 2 in every Gemma 3n)
	if v := ld.floats(p+"altup_router_norm.weight", c.Dim); v != nil {
		for j := range v {
			v[j] /= float32(c.Dim)
		}
		l.routerNorm = ld.hostWeight(p+"altup_router_norm.weight", v)
	}
	l.correctScale = ld.floats(p+"altup_correct_scale.weight", c.Dim)
	return l
}

func (l *gemma3nBlock) forward(m *Model, s *step) {
	be, a, n := m.be, m.altup, s.x.Rows()
	if s.layer == 0 {
		m.ple.prepare(m, s) // from the scaled input embeddings
		a.split(m, s)
	}
	in, pred := a.streams(m, a.cur, n), a.streams(m, 1-a.cur, n)
	tmp, laurel := be.Slice(a.tmp, n), be.Slice(a.laurel, n)
	mod, coefs := be.Slice(a.mod, n), be.Slice(a.coefs, n)

	// predict every stream from all of them
	l.modalities(m, mod, in[0], tmp)
	be.MatMul(coefs, mod, l.predict)
	for j := range pred {
		gpu.MixRows(be, pred[j], in[j], in, coefs, a.cols[j], 0)
	}

	// attention and LAuReL on the first prediction
	be.RMSNorm(s.xb, pred[0], l.attnNorm, m.Eps)
	low := be.Slice(a.low, n)
	be.MatMul(low, s.xb, l.laurelL)
	be.MatMul(laurel, low, l.laurelR)
	be.RMSNorm(laurel, laurel, l.laurelPost, m.Eps)
	be.Add(laurel, laurel, s.xb)
	l.attention(m, s)
	be.RMSNorm(s.xb, s.xb, l.postAttn, m.Eps)
	be.Add(s.xb, s.xb, pred[0])
	be.Add(laurel, s.xb, laurel)
	be.Scale(laurel, laurel, float32(1/math.Sqrt2))

	// the feed-forward
	hb, hb2 := m.ffnBuffers(s, l.ffn)
	be.RMSNorm(s.xb, laurel, l.ffnNorm, m.Eps)
	m.matMuls(s, s.xb, hb, l.gate, hb2, l.up)
	if l.sparse {
		gpu.SparsifyRows(be, hb, gemma3nStdMul)
	}
	be.GELUMul(hb, hb, hb2)
	be.MatMul(s.xb, hb, l.down)
	be.RMSNorm(s.xb, s.xb, l.postFFN, m.Eps)
	be.Add(s.xb, s.xb, laurel) // what the layer made

	// correct every prediction by the first one's error
	l.modalities(m, mod, s.xb, tmp)
	corr := be.Slice(a.mod2, n)
	be.MatMul(corr, mod, l.correct)
	be.Scale(tmp, pred[0], -1)
	be.Add(tmp, s.xb, tmp) // the innovation
	a.innov[0] = tmp
	for j := range pred {
		gpu.MixRows(be, pred[j], pred[j], a.innov, corr, a.one[j], 1)
	}

	// the per-layer embedding, from the first stream into the others
	gpu.MulRow(be, tmp, pred[0], l.correctScale)
	l.pl.project(m, s, tmp, s.xb)
	for _, p := range pred[1:] {
		be.Add(p, p, s.xb)
	}
	a.cur = 1 - a.cur
	if s.layer == m.Layers-1 {
		a.merge(m, s, pred)
	}
}

// modalities sets mod to the router's tanh(router · norm(x)/Dim).
func (l *gemma3nBlock) modalities(m *Model, mod, x, tmp gpu.Tensor) {
	m.be.RMSNorm(tmp, x, l.routerNorm, m.Eps)
	m.be.MatMul(mod, tmp, l.router)
	m.be.Softcap(mod, 1) // 1·tanh(x/1): tanh
}

// attention sets s.xb to the attention's output projection over the
// queries, keys and values of s.xb, the layer's normed input: over
// another layer's K/V where it shares them.
func (l *gemma3nBlock) attention(m *Model, s *step) {
	be := m.be
	if l.shared {
		be.MatMul(s.q, s.xb, l.wq)
		be.RMSNorm(s.q, s.q, l.qNorm, m.Eps)
		be.Rope(s.q, s.pos, l.rope)
		be.Attention(s.att, s.q, s.kv, s.kvLayer, s.batch, l.opts)
		be.MatMul(s.xb, s.att, l.wo)
		return
	}
	m.matMuls(s, s.xb, s.q, l.wq, s.k, l.wk, s.v, l.wv)
	be.RMSNorm(s.q, s.q, l.qNorm, m.Eps)
	be.RMSNorm(s.k, s.k, l.kNorm, m.Eps)
	be.RMSNorm(s.v, s.v, l.unit, m.Eps)
	m.attention(s, l.rope, l.opts, l.wo)
}

// altup is Gemma 3n's model-wide AltUp state: the matrices that make the
// extra streams from the embeddings and fold them back after the last
// layer, and the streams' scratch.
type altup struct {
	proj, unembd []gpu.Tensor    // altup_proj's and altup_unembd_proj's matrices, [Dim, Dim], AltUp-1 each
	sets, views  [2][]gpu.Tensor // two sets of AltUp streams [maxRows, Dim]: a layer's input, its predictions; their views of a pass's rows
	innov        []gpu.Tensor    // the correction's one source
	cur          int             // the set holding the streams
	tmp, laurel  gpu.Tensor      // [maxRows, Dim]
	low          gpu.Tensor      // [maxRows, LaurelRank]
	mod, mod2    gpu.Tensor      // [maxRows, AltUp]: the router's modalities, the correction's coefficients
	coefs        gpu.Tensor      // [maxRows, AltUp²]: the prediction's coefficients
	cols, one    [][]int         // stream j's columns of coefs (AltUp·j + k) and of mod2 (j)
}

func loadAltUp(ld *loader, c *Config) *altup {
	a := &altup{}
	n := c.AltUp - 1
	shape := []uint64{uint64(c.Dim), uint64(c.Dim), uint64(n)}
	for k := range n {
		a.proj = append(a.proj, ld.loadShape("altup_proj.weight", shape, k*c.Dim, c.Dim, n*c.Dim, c.Dim))
		a.unembd = append(a.unembd, ld.loadShape("altup_unembd_proj.weight", shape, k*c.Dim, c.Dim, n*c.Dim, c.Dim))
	}
	for j := range c.AltUp {
		cols := make([]int, c.AltUp)
		for k := range cols {
			cols[k] = c.AltUp*j + k
		}
		a.cols, a.one = append(a.cols, cols), append(a.one, []int{j})
	}
	return a
}

func (m *Model) allocAltUp(alloc func(rows, cols int) gpu.Tensor) {
	a, r, c := m.altup, m.maxRows, &m.Config
	for i := range a.sets {
		for range c.AltUp {
			a.sets[i] = append(a.sets[i], alloc(r, c.Dim))
		}
		a.views[i] = make([]gpu.Tensor, c.AltUp)
	}
	a.innov = make([]gpu.Tensor, 1)
	a.tmp, a.laurel, a.low = alloc(r, c.Dim), alloc(r, c.Dim), alloc(r, c.LaurelRank)
	a.mod, a.mod2, a.coefs = alloc(r, c.AltUp), alloc(r, c.AltUp), alloc(r, c.AltUp*c.AltUp)
}

// altUpScratchBytes is the scratch of allocAltUp, a row's worth times rows.
func altUpScratchBytes(c *Config, rows int) int64 {
	if c.AltUp == 0 {
		return 0
	}
	perRow := (2*c.AltUp+2)*c.Dim + c.LaurelRank + 2*c.AltUp + c.AltUp*c.AltUp
	return 4 * int64(rows) * int64(perRow)
}

// streams is set i's streams for n rows (views kept in the altup, so
// that a layer allocates none).
func (a *altup) streams(m *Model, i, n int) []gpu.Tensor {
	for j, t := range a.sets[i] {
		a.views[i][j] = m.be.Slice(t, n)
	}
	return a.views[i]
}

// split makes the first layer's streams from the scaled embeddings s.x:
// stream 0 a copy, stream k altup_proj's k-th matrix times it, scaled to
// its norm.
func (a *altup) split(m *Model, s *step) {
	be := m.be
	a.cur = 0
	st := a.streams(m, 0, s.x.Rows())
	be.Scale(st[0], s.x, 1)
	for k, w := range a.proj {
		be.MatMul(st[k+1], s.x, w)
		gpu.MatchNorm(be, st[k+1], st[k+1], s.x)
	}
}

// merge sets s.x to the mean of the last layer's streams (st), streams 1
// and on first folded back by altup_unembd_proj's matrices and scaled to
// stream 0's norm.
func (a *altup) merge(m *Model, s *step, st []gpu.Tensor) {
	be := m.be
	tmp := be.Slice(a.tmp, s.x.Rows())
	be.Scale(s.x, st[0], 1)
	for k, w := range a.unembd {
		be.MatMul(tmp, st[k+1], w)
		gpu.MatchNorm(be, tmp, tmp, st[0])
		be.Add(s.x, s.x, tmp)
	}
	be.Scale(s.x, s.x, 1/float32(len(st)))
}

// readGemma3n reads Gemma 3n's keys as llama.cpp's gemma3n loader does:
// the window and its pattern (every fifth layer global), the windowed
// layers' rope base (rope.freq_base_swa, or rope.freq_base_local as
// Ollama's converter names it); and sets what it fixes: the streams, the LAuReL rank,
// the per-layer input width, the shared K/V of layers 20 and on, unscaled
// attention, embeddings times √Dim, logits soft-capped at 30.
func readGemma3n(f *gguf.File, p string, c *Config) error {
	window, ok := f.Int(p + "attention.sliding_window")
	if !ok || window <= 0 || window > 1<<24 {
		return fmt.Errorf("%sattention.sliding_window is %d (present: %v): a gemma3n file gives its window", p, window, ok)
	}
	if err := setWindows(f, p, c, window, 5); err != nil {
		return err
	}
	if c.Layers > gemma3nKVLayers {
		if err := shareKV(c, gemma3nKVLayers, p+"attention.sliding_window_pattern"); err != nil {
			return err
		}
	}
	c.LocalRope = c.Rope
	c.LocalRope.Scale, c.LocalRope.Factors = 1, nil
	key := p + "rope.freq_base_swa"
	if _, ok := f.Get(key); !ok {
		key = p + "rope.freq_base_local" // Ollama's converter's name for it
	}
	base, err := hyper(f, key, 10000, "a number above 1 (Gemma uses 10000)", func(v float64) bool { return v > 1 })
	if err != nil {
		return err
	}
	c.LocalRope.Base = float32(base)
	c.AltUp, c.LaurelRank, c.PLEDim = gemma3nStreams, gemma3nLaurelRank, gemma3nPLEDim
	c.LogitCap, c.QueryScale = gemma3nLogitCap, 1
	c.EmbedScale = float32(math.Sqrt(float64(c.Dim)))
	return nil
}
