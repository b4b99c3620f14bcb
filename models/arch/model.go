package arch

import (
	"encoding/binary"
	"fmt"
	"math"

	"folio/gpu"
	"folio/models/gguf"
)

// Model is a loaded llama-family decoder: its weights on a backend and the
// scratch activations of one forward pass. It is not safe for concurrent
// use: one goroutine (the engine's) runs its forward passes.
type Model struct {
	Config
	be gpu.Backend

	tokEmbd  gpu.Tensor  // [Vocab, Dim]
	outNorm  gpu.Tensor  // [1, Dim]; nil for an encoder without a final norm (bert)
	outLN    bool        // the final norm is a LayerNorm (starcoder2, command-r), not an RMS norm
	outNormB gpu.Tensor  // [1, Dim]: that LayerNorm's shift (starcoder2); nil: none
	output   gpu.Tensor  // [Vocab, Dim]; token_embd itself when the embeddings are tied; nil for an encoder
	outputB  gpu.Tensor  // [1, Vocab]: the output matrix's bias (phi2); nil: none
	stem     stem        // the input embeddings when they are more than token_embd's rows; nil: llama's
	dense    *dense      // projections of the pooled embedding (gemma-embedding); nil when none
	blocks   []block     // one per layer
	moe      *moeScratch // the experts' activations; nil for a dense model
	mla      *mlaScratch // latent attention's (deepseek2); nil for the others
	temper   temperScratch
	chunked  gpu.Batch // chunkBatch's (llama4)

	maxRows, maxOut int
	buf             scratch               // activations for maxRows rows
	alt             *scratch              // q, att, k and v of the windowed layers' own shape (Config.SWAHeadDim); nil: none
	ffnAlt          map[int][2]gpu.Tensor // gate and up of each feed-forward width below FFN (Config.FFNs)
	ple             *ple                  // Gemma 4's per-layer embeddings (gemma4_ple.go); nil: none
	altup           *altup                // Gemma 3n's streams (gemma3n.go); nil: none
	pos             []int32               // [maxRows] host copy of the batch's positions
	slots           [][]int32             // [groups][maxRows] host copies of each layer group's slots
	step            step                  // the pass in progress, kept to allocate nothing per pass
	oneKV           [1]gpu.KVCache
	oneBatch        [1]*gpu.Batch // Forward's, as one layer group
}

// block is one transformer layer of an architecture: it reads and updates
// the residual stream s.x of the step's rows.
type block interface {
	forward(m *Model, s *step)
}

// stem is an architecture's input: what the residual stream starts as.
type stem interface {
	embed(m *Model, s *step, tokens []int32) // s.x = the input embeddings of the step's rows
	positions() int                          // the positions it has embeddings for; 0: any
}

// scratch holds the activation buffers, each sized for maxRows rows
// (logits and sel for maxOut).
type scratch struct {
	x, xb   gpu.Tensor // [rows, Dim] residual stream; normed input / projection output
	q, att  gpu.Tensor // [rows, QDim] queries; attention output
	gate    gpu.Tensor // [rows, QDim] the attention output's gate (Config.AttnGate); nil without
	k, v    gpu.Tensor // [rows, KVDim]
	hb, hb2 gpu.Tensor // [rows, FFN] gate and up projections
	sel     gpu.Tensor // [maxOut, Dim] rows whose logits are asked for
	logits  gpu.Tensor // [maxOut, Vocab]
}

// step is one forward pass: the scratch sliced to its rows, the batch and
// the layer being computed.
type step struct {
	scratch
	kv      gpu.KVCache // the layer's group's cache
	batch   *gpu.Batch  // the layer's group's batch: its block tables
	pos     []int32     // [rows] position of each row
	slots   []int32     // [rows] K/V slot of each row in the layer's group
	layer   int         // the layer being computed
	kvLayer int         // its index in its group's cache
	tokens  []int32     // the pass's tokens

	mmDst, mmW [3]gpu.Tensor // matMuls' arguments, kept here so that a call allocates nothing
	attend     gpu.Attend    // attend's, likewise
}

// Options size a model's scratch.
type Options struct {
	MaxRows int // tokens in one forward pass (num_batch); default 512
	MaxOut  int // rows whose logits one pass returns; default MaxRows
	// Context is the longest sequence the model will run (num_ctx); 0:
	// the model's training context. It picks longrope's factors (RopeAt).
	Context int
}

// Load reads the model in f onto be. The weights stay where f maps them
// when be is the CPU; f must stay open as long as the model is used.
func Load(f *gguf.File, be gpu.Backend, opt Options) (*Model, error) {
	cfg, err := ReadConfig(f)
	if err != nil {
		return nil, err
	}
	if opt.MaxRows <= 0 {
		opt.MaxRows = 512
	}
	if opt.MaxOut <= 0 || opt.MaxOut > opt.MaxRows {
		opt.MaxOut = opt.MaxRows
	}
	if cfg.Encoder {
		opt.MaxOut = 1 // no logits: the buffers stay small
	}
	if opt.Context <= 0 {
		opt.Context = cfg.Context
	}
	m := &Model{Config: *cfg, be: be, maxRows: opt.MaxRows, maxOut: opt.MaxOut}
	m.Rope = cfg.RopeAt(opt.Context)
	ld := &loader{f: f, be: be}
	a := architectures[cfg.Arch] // ReadConfig refused any other
	m.tokEmbd = ld.weight(tokEmbdName, cfg.Vocab, cfg.Dim)
	if !cfg.Encoder {
		m.outNorm = ld.weight("output_norm.weight", 1, cfg.Dim)
		if a.layerNorm {
			m.outLN, m.outNormB = true, ld.optional("output_norm.bias", 1, cfg.Dim)
		}
		m.output = m.tokEmbd
		if _, ok := f.Tensor("output.weight"); ok {
			m.output = ld.weight("output.weight", cfg.Vocab, cfg.Dim)
		}
		if a.outputBias {
			m.outputB = ld.weight("output.bias", 1, cfg.Vocab)
		}
	} else {
		m.outNorm = ld.optional("output_norm.weight", 1, cfg.Dim)
	}
	if a.newStem != nil {
		m.stem = a.newStem(ld, cfg)
	}
	if cfg.PLEDim > 0 {
		m.ple = loadPLE(ld, cfg)
	}
	if cfg.AltUp > 0 {
		m.altup = loadAltUp(ld, cfg)
	}
	newBlock := a.newBlock
	for i := range cfg.Layers {
		m.blocks = append(m.blocks, newBlock(ld, cfg, i))
	}
	if ld.err != nil {
		return nil, ld.err
	}
	if m.dense, err = loadDense(ld, cfg); err != nil {
		return nil, err
	}
	if err := m.allocScratch(); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *Model) allocScratch() error {
	r, c := m.maxRows, &m.Config
	var err error
	alloc := func(rows, cols int) gpu.Tensor {
		if err != nil {
			return nil
		}
		var t gpu.Tensor
		t, err = m.be.NewTensor(rows, cols)
		return t
	}
	m.buf = scratch{
		x: alloc(r, c.Dim), xb: alloc(r, c.Dim),
		q: alloc(r, c.QDim()), att: alloc(r, c.QDim()),
		k: alloc(r, c.KVDim()), v: alloc(r, c.KVDim()),
		hb: alloc(r, c.FFN), hb2: alloc(r, c.FFN),
		sel: alloc(m.maxOut, c.Dim), logits: alloc(m.maxOut, c.Vocab),
	}
	if c.AttnGate {
		m.buf.gate = alloc(r, c.QDim())
	}
	if c.SWAHeadDim > 0 {
		q, kv := c.Heads*c.SWAHeadDim, c.SWAKVHeads*c.SWAHeadDim
		m.alt = &scratch{q: alloc(r, q), att: alloc(r, q), k: alloc(r, kv), v: alloc(r, kv)}
	}
	for _, w := range c.narrowerFFNs() {
		if m.ffnAlt == nil {
			m.ffnAlt = map[int][2]gpu.Tensor{}
		}
		m.ffnAlt[w] = [2]gpu.Tensor{alloc(r, w), alloc(r, w)}
	}
	if c.PLEDim > 0 {
		m.allocPLE(alloc)
	}
	if c.AltUp > 0 {
		m.allocAltUp(alloc)
	}
	if c.Experts > 0 {
		m.allocMoE(alloc)
	}
	if c.KVLora > 0 {
		m.allocMLA(alloc)
		m.setMLARope()
	}
	m.pos, m.slots = make([]int32, r), [][]int32{make([]int32, r)}
	return err
}

// ScratchBytes is the activation memory of a model of cfg sized by opt.
func ScratchBytes(cfg *Config, opt Options) int64 {
	if cfg.Encoder {
		opt.MaxOut = 1
	}
	perRow := 2*cfg.Dim + 2*cfg.QDim() + 2*cfg.KVDim() + 2*cfg.FFN
	if cfg.AttnGate {
		perRow += cfg.QDim()
	}
	if cfg.SWAHeadDim > 0 {
		perRow += 2 * cfg.SWAHeadDim * (cfg.Heads + cfg.SWAKVHeads)
	}
	for _, w := range cfg.narrowerFFNs() {
		perRow += 2 * w
	}
	perRow += cfg.PLEDim * (2*cfg.Layers + 1) // the looked-up rows, each layer's input, one temporary
	dense := 0
	if cfg.DenseFeat > 0 {
		dense = 2*cfg.Dim + cfg.DenseFeat // dense.go's one row in, between and out
	}
	return 4*(int64(opt.MaxRows)*int64(perRow)+int64(opt.MaxOut)*int64(cfg.Dim+cfg.Vocab)+int64(dense)) + moeScratchBytes(cfg, opt.MaxRows) +
		mlaScratchBytes(cfg, opt.MaxRows) + altUpScratchBytes(cfg, opt.MaxRows)
}

// KVSpec is the K/V pool of blocks blocks of blockSize tokens for m.
func (m *Model) KVSpec(blocks, blockSize int, typ gguf.TensorType) gpu.KVSpec {
	return gpu.KVSpec{Layers: m.Layers, Blocks: blocks, BlockSize: blockSize,
		KVHeads: m.KVHeads, HeadDim: m.HeadDim, Type: typ, SharedKV: m.SharedKV()}
}

// Backend is the backend the model's weights live on.
func (m *Model) Backend() gpu.Backend { return m.be }

// Forward runs one ragged batch: tokens[i] is row i of b. It writes every
// row's K/V into kv and returns the logits of the rows listed in out, as
// a [len(out), Vocab] tensor valid until the next Forward (nil when out is
// empty: a prefill chunk that samples nothing). It checks the whole batch
// before computing anything: an error leaves kv as it was, so the caller
// may run the batch again in parts.
func (m *Model) Forward(kv gpu.KVCache, b *gpu.Batch, tokens, out []int32) (gpu.Tensor, error) {
	if m.Encoder && len(out) > 0 {
		return nil, fmt.Errorf("arch: %s makes embeddings, not logits", m.Arch)
	}
	m.oneKV[0], m.oneBatch[0] = kv, b
	defer func() { m.oneKV[0], m.oneBatch[0] = nil, nil }()
	return m.ForwardGroups(nil, m.oneKV[:], m.oneBatch[:], tokens, out)
}

// ForwardGroups is Forward with the layers' K/V in the caches of their
// groups (g; nil: every layer in kvs[0]): layer l in kvs[g.Of[l]] at
// layer g.Index[l], its rows' slots and block tables in bs[g.Of[l]]. The
// batches have the same sequences, rows and positions; only their tables
// differ.
func (m *Model) ForwardGroups(g *Groups, kvs []gpu.KVCache, bs []*gpu.Batch, tokens, out []int32) (gpu.Tensor, error) {
	if m.Encoder && len(out) > 0 {
		return nil, fmt.Errorf("arch: %s makes embeddings, not logits", m.Arch)
	}
	s, err := m.layers(g, kvs, bs, tokens, out)
	if err != nil || len(out) == 0 {
		return nil, err
	}
	be := m.be
	be.Gather(s.sel, s.x, out)           // sel [len(out), Dim]
	m.finalNorm(s.sel, s.sel)            // final norm
	be.MatMul(s.logits, s.sel, m.output) // logits [len(out), Vocab]
	if m.outputB != nil {
		be.Add(s.logits, s.logits, m.outputB)
	}
	if m.LogitScale != 0 {
		be.Scale(s.logits, s.logits, 1/m.LogitScale)
	}
	if m.LogitMul != 0 {
		be.Scale(s.logits, s.logits, m.LogitMul)
	}
	if m.LogitCap > 0 {
		be.Softcap(s.logits, m.LogitCap) // soft-capped (Gemma 2)
	}
	return s.logits, nil
}

// Hidden runs a batch like Forward and returns, instead of logits, every
// row's final hidden state after the output norm (the last layer's output
// for an encoder without one): [len(tokens), Dim], valid until the next
// pass. Embeddings are made from it. An encoder (Config.Encoder) must have
// each sequence's whole input in the batch: its rows attend every position.
func (m *Model) Hidden(kv gpu.KVCache, b *gpu.Batch, tokens []int32) (gpu.Tensor, error) {
	m.oneKV[0], m.oneBatch[0] = kv, b
	defer func() { m.oneKV[0], m.oneBatch[0] = nil, nil }()
	return m.HiddenGroups(nil, m.oneKV[:], m.oneBatch[:], tokens)
}

// HiddenGroups is Hidden with the layers' K/V in their groups' caches, as
// ForwardGroups.
func (m *Model) HiddenGroups(g *Groups, kvs []gpu.KVCache, bs []*gpu.Batch, tokens []int32) (gpu.Tensor, error) {
	s, err := m.layers(g, kvs, bs, tokens, nil)
	if err != nil {
		return nil, err
	}
	if m.outNorm == nil {
		return s.x, nil
	}
	m.finalNorm(s.xb, s.x) // xb [n, Dim]
	return s.xb, nil
}

// finalNorm is the output norm: an RMS norm, or a LayerNorm with its shift.
func (m *Model) finalNorm(dst, x gpu.Tensor) {
	if m.outLN {
		m.be.LayerNorm(dst, x, m.outNorm, m.outNormB, m.Eps)
		return
	}
	m.be.RMSNorm(dst, x, m.outNorm, m.Eps)
}

// layers checks a batch and runs the embedding and every layer, leaving
// the residual stream in the step's x.
func (m *Model) layers(g *Groups, kvs []gpu.KVCache, bs []*gpu.Batch, tokens, out []int32) (*step, error) {
	n := len(tokens)
	switch {
	case n == 0 || n > m.maxRows:
		return nil, fmt.Errorf("arch: forward of %d tokens (this model's batch holds 1 to %d)", n, m.maxRows)
	case len(out) > m.maxOut:
		return nil, fmt.Errorf("arch: %d logit rows asked (at most %d)", len(out), m.maxOut)
	}
	if err := m.checkGroups(g, kvs, bs, n); err != nil {
		return nil, err
	}
	b := bs[0]
	if m.AttnChunk > 0 && (b.BlockSize <= 0 || m.AttnChunk%b.BlockSize != 0) {
		return nil, fmt.Errorf("arch: %s attends within chunks of %d positions, which K/V blocks of %d do not divide: use a block size that is a power of 2 up to %d", m.Arch, m.AttnChunk, b.BlockSize, m.AttnChunk)
	}
	for i, tok := range tokens {
		if tok < 0 || int(tok) >= m.Vocab {
			return nil, fmt.Errorf("arch: token %d at row %d is outside the vocabulary of %d", tok, i, m.Vocab)
		}
	}
	for _, r := range out {
		if r < 0 || int(r) >= n {
			return nil, fmt.Errorf("arch: logit row %d outside the %d rows", r, n)
		}
	}
	if m.Encoder {
		for _, sq := range b.Seqs {
			if sq.Pos != 0 {
				return nil, fmt.Errorf("arch: %s attends its whole input at once: a sequence starts at position %d, not 0", m.Arch, sq.Pos)
			}
		}
	}
	if m.stem != nil && m.stem.positions() > 0 {
		for _, sq := range b.Seqs {
			if sq.Pos+sq.Len > m.stem.positions() {
				return nil, fmt.Errorf("arch: %s has position embeddings for %d tokens; a sequence reaches %d", m.Arch, m.stem.positions(), sq.Pos+sq.Len)
			}
		}
	}
	be := m.be
	s := &m.step
	for len(m.slots) < len(bs) {
		m.slots = append(m.slots, make([]int32, m.maxRows))
	}
	for i, gb := range bs {
		m.slots[i] = gb.Slots(m.slots[i])
	}
	*s = step{pos: b.Positions(m.pos), tokens: tokens}
	s.scratch = scratch{
		x: be.Slice(m.buf.x, n), xb: be.Slice(m.buf.xb, n),
		q: be.Slice(m.buf.q, n), att: be.Slice(m.buf.att, n),
		k: be.Slice(m.buf.k, n), v: be.Slice(m.buf.v, n),
		hb: be.Slice(m.buf.hb, n), hb2: be.Slice(m.buf.hb2, n),
	}
	if m.buf.gate != nil {
		s.gate = be.Slice(m.buf.gate, n)
	}
	if len(out) > 0 {
		s.sel, s.logits = be.Slice(m.buf.sel, len(out)), be.Slice(m.buf.logits, len(out))
	}
	if m.stem != nil {
		m.stem.embed(m, s, tokens) // x [n, Dim]
	} else {
		be.Embed(s.x, m.tokEmbd, tokens) // x [n, Dim]
	}
	if m.EmbedScale != 0 {
		be.Scale(s.x, s.x, m.EmbedScale) // Gemma: ·√Dim; granite: embedding_scale
	}
	for i, blk := range m.blocks {
		gi, li := 0, i
		if g != nil {
			gi, li = g.Of[i], g.Index[i]
		}
		s.layer, s.kvLayer = i, li
		s.kv, s.batch, s.slots = kvs[gi], bs[gi], m.slots[gi]
		if m.alt != nil {
			m.shape(s, i)
		}
		blk.forward(m, s)
	}
	s.kv, s.batch = nil, nil
	return s, nil
}

// ffnBuffers is the gate and up activations of a feed-forward of width w
// for the step's rows: hb and hb2, or those of a narrower layer
// (Config.FFNs).
func (m *Model) ffnBuffers(s *step, w int) (gpu.Tensor, gpu.Tensor) {
	if w == m.FFN {
		return s.hb, s.hb2
	}
	b, n := m.ffnAlt[w], s.x.Rows()
	return m.be.Slice(b[0], n), m.be.Slice(b[1], n)
}

// shape sets the step's q, att, k and v to layer's attention shape: the
// windowed layers' own buffers (Config.SWAHeadDim), else the model's.
func (m *Model) shape(s *step, layer int) {
	b, n := &m.buf, s.x.Rows()
	if m.Window(layer) > 0 {
		b = m.alt
	}
	s.q, s.att, s.k, s.v = m.be.Slice(b.q, n), m.be.Slice(b.att, n), m.be.Slice(b.k, n), m.be.Slice(b.v, n)
}

// matMuls computes dst = x · wᵀ for each (dst, w) pair of dw as one op
// (gpu.MatMuls): Q, K and V, or gate and up, share x.
func (m *Model) matMuls(s *step, x gpu.Tensor, dw ...gpu.Tensor) {
	n := len(dw) / 2
	for i := range n {
		s.mmDst[i], s.mmW[i] = dw[2*i], dw[2*i+1]
	}
	gpu.MatMuls(m.be, s.mmDst[:n], x, s.mmW[:n])
	s.mmDst, s.mmW = [3]gpu.Tensor{}, [3]gpu.Tensor{}
}

// attnScale is the scale of attention scores: QueryScale when the model
// has one, else 1/sqrt(head size).
func (c *Config) attnScale() float32 {
	if c.QueryScale != 0 {
		return c.QueryScale
	}
	return float32(1 / math.Sqrt(float64(c.HeadDim)))
}

// ffn is the SwiGLU feed-forward every supported architecture shares:
// x += down(silu(gate(norm(x))) · up(norm(x))).
func (m *Model) ffn(s *step, norm, gate, up, down gpu.Tensor) {
	m.ffnPost(s, norm, gate, up, down, nil)
}

// ffnPost is ffn with its output normed by post (nil: not) before the
// residual add: GLM-4's sandwich, Trinity's post_ffw_norm.
func (m *Model) ffnPost(s *step, norm, gate, up, down, post gpu.Tensor) {
	be := m.be
	be.RMSNorm(s.xb, s.x, norm, m.Eps)        // xb [n, Dim]
	m.matMuls(s, s.xb, s.hb, gate, s.hb2, up) // hb, hb2 [n, FFN]
	be.SiLUMul(s.hb, s.hb, s.hb2)             // hb = silu(hb) · hb2
	be.MatMul(s.xb, s.hb, down)               // xb [n, Dim]
	if post != nil {
		be.RMSNorm(s.xb, s.xb, post, m.Eps)
	}
	be.Add(s.x, s.x, s.xb) // residual
}

// attend finishes attention once q, k, v hold the step's projections: rope,
// K/V into the cache, paged attention, output projection, residual.
func (m *Model) attend(s *step, wo gpu.Tensor) {
	m.attention(s, &m.Rope, gpu.AttnOpts{Scale: m.attnScale(), Window: m.Window(s.layer)}, wo)
	m.be.Add(s.x, s.x, s.xb) // residual
}

// attention is attend without the residual: rope (none when rope is nil),
// K/V into the cache, paged attention as o says, output projection into
// s.xb [n, Dim]; with wo nil, no projection: s.att [n, QDim] holds the
// attention.
func (m *Model) attention(s *step, rope *gpu.Rope, o gpu.AttnOpts, wo gpu.Tensor) {
	a := &s.attend
	*a = gpu.Attend{Q: s.q, K: s.k, V: s.v, Att: s.att, Out: s.xb, Wo: wo, KV: s.kv, Layer: s.kvLayer,
		Batch: s.batch, Pos: s.pos, Slots: s.slots, Rope: rope, Opts: o}
	if wo == nil {
		gpu.AttentionOps(m.be, a) // att [n, QDim]
	} else {
		gpu.RunAttend(m.be, a) // att [n, QDim], xb [n, Dim]
	}
	*a = gpu.Attend{}
}

// loader makes backend tensors of a file's weights, checking each one's
// shape; the first error sticks and later calls return nil.
type loader struct {
	f    *gguf.File
	be   gpu.Backend
	err  error
	unit map[int]gpu.Tensor // ones's weights, by length, made at their first call
}

// ones is a [1, n] F32 weight of ones, the same for every call with one
// n: the weight of an RMS norm that has none (x·1 is x exactly).
func (ld *loader) ones(n int) gpu.Tensor {
	if ld.err != nil || ld.unit[n] != nil {
		return ld.unit[n]
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = 1
	}
	if ld.unit == nil {
		ld.unit = map[int]gpu.Tensor{}
	}
	ld.unit[n] = ld.hostWeight("ones", v)
	return ld.unit[n]
}

// hostWeight is a [1, len(v)] F32 weight of values made on the host (nil
// after an error, which sticks).
func (ld *loader) hostWeight(name string, v []float32) gpu.Tensor {
	if ld.err != nil {
		return nil
	}
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	w, err := ld.be.Weight(name, gguf.TypeF32, 1, len(v), b)
	if err != nil {
		ld.err = fmt.Errorf("%w %s: %s: %v", ErrModel, ld.f.Path, name, err)
	}
	return w
}

// optional is weight, or nil when the file has no tensor name (an
// optional bias or norm).
func (ld *loader) optional(name string, rows, cols int) gpu.Tensor {
	if _, ok := ld.f.Tensor(name); !ok {
		return nil
	}
	return ld.weight(name, rows, cols)
}

// weightPart loads rows row0 … row0+rows-1 of name, a fused [totalRows,
// cols] weight (Q, K and V in one; gate and up in one), as a rows × cols
// tensor of its own.
func (ld *loader) weightPart(name string, row0, rows, totalRows, cols int) gpu.Tensor {
	return ld.load(name, row0, rows, totalRows, cols)
}

// weight loads name as a rows × cols tensor (GGUF shape [cols, rows], or
// [cols] when rows is 1).
func (ld *loader) weight(name string, rows, cols int) gpu.Tensor {
	return ld.load(name, 0, rows, rows, cols)
}

// load loads rows row0 … row0+rows-1 of name, a totalRows × cols tensor.
func (ld *loader) load(name string, row0, rows, totalRows, cols int) gpu.Tensor {
	want := []uint64{uint64(cols), uint64(totalRows)}
	if totalRows == 1 {
		want = want[:1]
	}
	return ld.loadShape(name, want, row0, rows, totalRows, cols)
}

// loadShape is load of a tensor whose GGUF shape is want (the experts'
// 3-D tensors: [cols, rows, experts], totalRows = rows·experts).
func (ld *loader) loadShape(name string, want []uint64, row0, rows, totalRows, cols int) gpu.Tensor {
	if ld.err != nil {
		return nil
	}
	fail := func(format string, args ...any) gpu.Tensor {
		ld.err = fmt.Errorf("%w %s: tensor %s: %s", ErrModel, ld.f.Path, name, fmt.Sprintf(format, args...))
		return nil
	}
	t, ok := ld.f.Tensor(name)
	if !ok {
		return fail("missing")
	}
	if fmt.Sprint(t.Shape) != fmt.Sprint(want) {
		return fail("shape %v, want %v", t.Shape, want)
	}
	if !gguf.CanDequantize(t.Type) {
		return fail("type %v has no kernel in folio", t.Type)
	}
	if cols%t.Type.BlockSize() != 0 {
		return fail("rows of %d elements are not whole %v blocks", cols, t.Type)
	}
	load := ld.be.Weight
	if lw, ok := ld.be.(gpu.LookupWeighter); ok && LookupOnly(ld.f, name) {
		load = lw.LookupWeight
	}
	if row0 < 0 || rows <= 0 || row0+rows > totalRows {
		return fail("rows %d … %d of %d", row0, row0+rows-1, totalRows)
	}
	data := ld.f.TensorData(t)
	rowBytes := int(t.Type.RowBytes(int64(cols)))
	data = data[row0*rowBytes : (row0+rows)*rowBytes]
	w, err := load(name, t.Type, rows, cols, data)
	if err != nil {
		ld.err = fmt.Errorf("loading %s: %w", name, err)
		return nil
	}
	// A weight the backend holds a copy of (repacked for its kernels, or
	// an F32 weight) is not read again, Embed's rows of the token
	// embeddings tied to the output included: its file pages leave the
	// process's memory, which otherwise held the weights twice. A part of
	// a fused weight keeps them until its caller has every part
	// (releaseRepacked): the other parts may not be copied.
	if r, ok := w.(gpu.RepackedWeight); ok && r.Repacked() && rows == totalRows {
		ld.f.Release(t)
	}
	return w
}

// releaseRepacked releases the file pages of name once every part of it
// loaded as parts (weightPart, expert) is a weight the backend holds a
// copy of: nothing reads them again (load releases a whole weight so, and
// keeps a part's pages for the parts that may not be copied).
func (ld *loader) releaseRepacked(name string, parts []gpu.Tensor) {
	if ld.err != nil {
		return
	}
	for _, w := range parts {
		if r, ok := w.(gpu.RepackedWeight); !ok || !r.Repacked() {
			return
		}
	}
	if t, ok := ld.f.Tensor(name); ok {
		ld.f.Release(t)
	}
}

// tokEmbdName is the token embeddings' tensor, which Embed reads by rows.
const tokEmbdName = "token_embd.weight"

// LookupOnly reports whether f's tensor name is only looked up by rows
// (Embed), never multiplied: the token embeddings of a model with its own
// output matrix or of an encoder (which has none), and bert's token type
// and position embeddings. Backends keep such a weight without a kernel's
// copy (gpu.LookupWeighter), and memory checks count none.
func LookupOnly(f *gguf.File, name string) bool {
	switch name {
	case "token_types.weight", "position_embd.weight", "per_layer_token_embd.weight":
		return true
	case tokEmbdName:
		_, untied := f.Tensor("output.weight")
		return untied || IsEncoder(f.String("general.architecture"))
	}
	return false
}
