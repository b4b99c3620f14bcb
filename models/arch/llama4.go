package arch

import (
	"fmt"

	"folio/gpu"
	"folio/models/gguf"
)

// llama4: the text model of Meta's Llama 4 Scout (17B-16E) and Maverick
// (17B-128E). llama's pre-norm layer and rope pairing, with:
//   - chunked attention on three layers of four (attention.sliding_window_pattern
//     when the file has one): a row at position p reads only the positions
//     of its chunk of AttnChunk (8,192, as llama.cpp fixes it), ⌊p/8192⌋·8192
//     … p; those layers turn at rope.freq_base_swa where the file has it.
//     Their Windows are the chunk: what a row reads lies within 8,192
//     positions of it, so their K/V go in a sliding layer group whose
//     blocks go back as they leave that reach (the attention itself is
//     chunked, not windowed);
//   - rope on those layers only: every fourth layer has none, and scales
//     its queries by the attention temperature 1 + 0.1·ln(⌊(p+1)/8192⌋ + 1)
//     instead (llama.cpp's attn_temp with offset 1);
//   - Q and K of the rope layers RMS-normed per head without a weight after
//     their rope (Llama4TextL2Norm; Scout's, not Maverick's 128 experts);
//   - experts in every interleave_moe_layer_step-th layer (the others dense):
//     the top expert_used_count of the router's logits, each weighted by the
//     sigmoid of its logit, the weight multiplying the expert's input
//     rather than its output (Config.ExpertWeightsIn), beside a shared expert of the
//     experts' width on the unweighted input.
//
// A file whose attention.sliding_window is 0 (MobileLLM, no experts) is
// refused, as llama.cpp refuses llama4 files without experts.
type llama4Block struct {
	*llamaBlock         // gate, up and down nil in the layers with experts
	moe         *moeFFN // nil in the dense layers
	rope        *gpu.Rope
	unitNorm    gpu.Tensor // [1, HeadDim] of ones: the Q/K norms; nil: none
	opts        gpu.AttnOpts
	chunk       int // AttnChunk on the chunked layers, else 0
}

func newLlama4Block(ld *loader, c *Config, i int) block {
	l := &llama4Block{opts: gpu.AttnOpts{Scale: c.attnScale()}}
	if c.MoEEvery > 0 && (i+1)%c.MoEEvery == 0 {
		l.llamaBlock = loadLlamaAttention(ld, c, i, "ffn_norm")
		f := newMoEFFN(ld, c, i)
		f.shared = loadShared(ld, c, i, false)
		l.moe = &f
	} else {
		l.llamaBlock = loadLlamaLayer(ld, c, i, "ffn_norm")
	}
	if c.Window(i) > 0 { // chunked; the window is only the K/V's reach
		l.chunk, l.rope = c.AttnChunk, &c.LocalRope
	}
	if (i+1)%4 != 0 { // llama.cpp's n_no_rope_layer_step
		if l.rope == nil {
			l.rope = &c.Rope
		}
		if c.Experts != 128 { // use_kq_norm
			l.unitNorm = ld.ones(c.HeadDim)
		}
	} else {
		l.rope = nil
	}
	return l
}

func (l *llama4Block) forward(m *Model, s *step) {
	be := m.be
	be.RMSNorm(s.xb, s.x, l.attnNorm, m.Eps)
	m.matMuls(s, s.xb, s.q, l.wq, s.k, l.wk, s.v, l.wv)
	if l.rope != nil {
		be.Rope(s.q, s.pos, l.rope)
		be.Rope(s.k, s.pos, l.rope)
		if l.unitNorm != nil {
			be.RMSNorm(s.q, s.q, l.unitNorm, m.Eps)
			be.RMSNorm(s.k, s.k, l.unitNorm, m.Eps)
		}
	} else {
		m.temperQueries(s)
	}
	batch := s.batch
	if l.chunk > 0 {
		s.batch = m.chunkBatch(s.batch, l.chunk)
	}
	m.attention(s, nil, l.opts, l.wo) // rotated above
	s.batch = batch
	be.Add(s.x, s.x, s.xb)
	if l.moe != nil {
		l.moe.forward(m, s, l.ffnNorm)
		return
	}
	m.ffn(s, l.ffnNorm, l.gate, l.up, l.down)
}

// chunkBatch is b for attention within chunks of chunk positions: each
// sequence's rows split where a chunk starts, and each part's positions
// and block table taken from its chunk's start (chunk a multiple of the
// block size, which layers checks), so that a row reads its chunk's
// positions only. b itself when no row is past the first chunk. The
// batch is m's, valid until the next call.
func (m *Model) chunkBatch(b *gpu.Batch, chunk int) *gpu.Batch {
	far := false
	for _, sq := range b.Seqs {
		far = far || sq.Pos+sq.Len > chunk
	}
	if !far {
		return b
	}
	cb := &m.chunked
	cb.BlockSize, cb.Seqs = b.BlockSize, cb.Seqs[:0]
	for _, sq := range b.Seqs {
		for r := 0; r < sq.Len; {
			p := sq.Pos + r
			start := p / chunk * chunk
			n := min(sq.Len-r, start+chunk-p)
			cb.Seqs = append(cb.Seqs, gpu.Seq{Start: sq.Start + r, Len: n, Pos: p - start, Blocks: sq.Blocks[start/b.BlockSize:]})
			r += n
		}
	}
	return cb
}

// readLlama4 reads the experts (expert_feed_forward_length required, as
// llama.cpp requires it; the weights neither renormalized nor scaled), the
// shared expert (as wide as an expert), interleave_moe_layer_step, the
// chunked layers and their rope base, and sets Llama 4's attention
// temperature.
func readLlama4(f *gguf.File, p string, c *Config) error {
	if _, ok := f.Int(p + "expert_feed_forward_length"); !ok {
		return fmt.Errorf("no %sexpert_feed_forward_length key: llama.cpp requires it of llama4 files", p)
	}
	if err := readMoE(f, p, c); err != nil {
		return err
	}
	c.Gating, c.ExpertWeightsNorm, c.ExpertWeightsIn, c.SharedFFN = GatingLogitsSigmoid, false, true, c.ExpertFFN
	step, ok := f.Int(p + "interleave_moe_layer_step")
	if !ok || step < 0 || step > int64(c.Layers) {
		return fmt.Errorf("%sinterleave_moe_layer_step is %d (present: %v): a llama4 file says which layers have experts (every n-th, 1 to its %d layers)", p, step, ok, c.Layers)
	}
	c.MoEEvery = int(step)
	if w, ok := f.Int(p + "attention.sliding_window"); ok && w == 0 {
		return fmt.Errorf("%sattention.sliding_window is 0 (full attention on every layer, MobileLLM's layout): folio runs llama4 files with chunked attention, as Llama 4 Scout's and Maverick's", p)
	}
	c.AttnChunk = 8192
	if err := setWindows(f, p, c, int64(c.AttnChunk), 4); err != nil {
		return err
	}
	c.AttnTemp, c.AttnTempFloor, c.AttnTempOffset = 0.1, 8192, 1
	return readLocalRopeBase(f, p, c, "a number above 1")
}
