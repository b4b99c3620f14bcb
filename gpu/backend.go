package gpu

import (
	"errors"
	"fmt"

	"folio/models/gguf"
)

// Tensor is a 2-D array that lives on a backend's device: Rows rows of Cols
// elements of Type, row-major. Weights keep their GGUF type (a row is
// Type.RowBytes(Cols) bytes of blocks); activations are F32. A vector is
// one row. Only the backend that made a tensor may use it.
type Tensor interface {
	Type() gguf.TensorType
	Rows() int
	Cols() int
}

// Backend is the compute interface the architectures are written against.
// Ops are eager and ordered: each sees the results of the ones before it
// (a device backend may queue them on one stream; Download waits). Every op
// writes dst, which must not alias an input unless the op says so, and
// panics on shapes that do not agree: those are programming errors of the
// caller, never user input. Activations are F32. A backend is used by one
// goroutine at a time (the engine's); it is not safe for concurrent calls.
type Backend interface {
	// Name identifies the backend in logs: "cpu", "cuda:0".
	Name() string

	// Weight makes a rows × cols tensor of type typ from data, which holds
	// exactly rows·typ.RowBytes(cols) bytes. The CPU uses data in place (the
	// mmap'd GGUF file), so data must stay valid and unchanged until Close.
	Weight(name string, typ gguf.TensorType, rows, cols int, data []byte) (Tensor, error)
	// NewTensor allocates an F32 rows × cols tensor for activations.
	NewTensor(rows, cols int) (Tensor, error)
	// Slice is a view of the first rows rows of t (a scratch buffer sized
	// for the largest batch, used for a smaller one).
	Slice(t Tensor, rows int) Tensor
	// NewKVCache allocates the paged K/V pool of spec, zeroed.
	NewKVCache(spec KVSpec) (KVCache, error)
	// Upload copies src (len = Rows·Cols) into the F32 tensor dst.
	Upload(dst Tensor, src []float32)
	// Download copies the F32 tensor src into dst (len = Rows·Cols), after
	// every queued op has finished.
	Download(dst []float32, src Tensor)
	// Close frees everything the backend allocated.
	Close() error

	// Embed: dst[i,:] = table[ids[i],:], dequantized. dst is [len(ids), table.Cols].
	Embed(dst, table Tensor, ids []int32)
	// MatMul: dst[i,o] = x[i,:] · w[o,:]. x [n, k] F32, w [m, k] any weight
	// type, dst [n, m]. Dequantization happens inside the kernel.
	MatMul(dst, x, w Tensor)
	// RMSNorm: each run of w.Cols elements of x is scaled to unit RMS and
	// multiplied by w: dst = x / sqrt(mean(x²) + eps) · w. With w.Cols equal
	// to x.Cols that is one row; with w.Cols = headDim it is one head (the
	// Q/K norms of qwen3). dst may be x.
	RMSNorm(dst, x, w Tensor, eps float32)
	// Add: dst = a + b, with b broadcast over rows when b.Rows == 1 (a bias).
	// dst may be a.
	Add(dst, a, b Tensor)
	// SiLUMul: dst = silu(gate) · up, elementwise. dst may be gate.
	SiLUMul(dst, gate, up Tensor)
	// Rope rotates, in place, each head (x.Cols / r.HeadDim of them) of row
	// i of x by the angles of position pos[i].
	Rope(x Tensor, pos []int32, r *Rope)
	// Softmax: each row of x becomes softmax(x row), in place.
	Softmax(x Tensor)
	// Gather: dst[i,:] = x[rows[i],:].
	Gather(dst, x Tensor, rows []int32)
	// Scale: dst = x · s, elementwise. dst may be x.
	Scale(dst, x Tensor, s float32)
	// GELUMul: dst = gelu(gate) · up, elementwise, gelu in ggml's tanh
	// approximation, 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))); with up
	// nil, dst = gelu(gate). dst may be gate.
	GELUMul(dst, gate, up Tensor)
	// Softcap: x = c · tanh(x / c), in place (soft-capped logits). c > 0.
	Softcap(x Tensor, c float32)
	// LayerNorm: each row of x is shifted to zero mean and scaled to unit
	// variance, dst = (x - mean) / sqrt(var + eps) · w + b, w and b [1,
	// x.Cols] (either may be nil: 1 and 0). dst may be x.
	LayerNorm(dst, x, w, b Tensor, eps float32)
	// SwiGLUOAI is gpt-oss's clamped SwiGLU (ggml_swiglu_oai), elementwise:
	// with g = min(gate, limit) and u = clamp(up, -limit, limit), dst =
	// g / (1 + e^(-alpha·g)) · (u + 1). gpt-oss: alpha 1.702, limit 7. dst
	// may be gate.
	SwiGLUOAI(dst, gate, up Tensor, alpha, limit float32)

	// WriteKV stores row i of k and v ([n, KVHeads·HeadDim]) into layer's
	// K and V at slot slots[i] (block·BlockSize + offset), converting to the
	// cache's type.
	WriteKV(c KVCache, layer int, k, v Tensor, slots []int32)
	// Attention is paged attention for one layer: q [n, Heads·HeadDim]
	// with the rows of b's sequences, dst the same shape. Query head h reads
	// K/V head h / (Heads/KVHeads) (GQA), through each sequence's block
	// table, for the positions o allows (causal: 0 … its own position);
	// scores are scaled by o.Scale. K/V of every position read must have
	// been written already.
	Attention(dst, q Tensor, c KVCache, layer int, b *Batch, o AttnOpts)
	// CopyBlocks copies every layer's K and V of block Src to block Dst, for
	// each copy, in order (copy-on-write after a fork).
	CopyBlocks(c KVCache, copies []BlockCopy)
}

// KVSpec is the shape of a paged K/V pool: Blocks blocks of BlockSize
// token slots, each slot holding K and V of KVHeads·HeadDim elements for
// each of Layers layers. A block ID addresses the same slots in every layer.
type KVSpec struct {
	Layers, Blocks, BlockSize, KVHeads, HeadDim int
	Type                                        gguf.TensorType // F16 (default), Q8_0 or F32
	// SharedKV: a layer's V is its K, one array holding both (multi-head
	// latent attention, whose values are the latent part of its keys, as
	// llama.cpp's V is a view of its K): the pool is half the size, and
	// WriteKV's v must be its k. The CPU's pools have it; the others refuse it.
	SharedKV bool
}

// RowBytes is the memory one token's K (or V) takes in one layer:
// KVHeads·HeadDim elements of Type (2 bytes each for F16, 4 for F32, 34
// per 32 for Q8_0). Every other size of the pool is a multiple of it, and
// the backends lay out their pools in runs of it.
func (s KVSpec) RowBytes() int64 { return s.Type.RowBytes(int64(s.KVHeads * s.HeadDim)) }

// BytesPerToken is the memory one token's K and V take over all layers
// (its K alone with SharedKV).
func (s KVSpec) BytesPerToken() int64 {
	if s.SharedKV {
		return int64(s.Layers) * s.RowBytes()
	}
	return 2 * int64(s.Layers) * s.RowBytes()
}

// BlockBytes is the memory one block takes over all layers: the size of
// the buffers BlockIO reads and writes.
func (s KVSpec) BlockBytes() int64 { return s.BytesPerToken() * int64(s.BlockSize) }

// Bytes is the memory the pool takes.
func (s KVSpec) Bytes() int64 { return s.BlockBytes() * int64(s.Blocks) }

// Tokens is the number of token slots the pool holds: the longest context
// it can take.
func (s KVSpec) Tokens() int { return s.Blocks * s.BlockSize }

// Check reports a spec a backend cannot allocate.
func (s KVSpec) Check() error {
	switch {
	case s.Type != gguf.TypeF16 && s.Type != gguf.TypeF32 && s.Type != gguf.TypeQ8_0:
		return fmt.Errorf("%w: KV cache type %v (use f16, q8_0 or f32)", ErrUnsupported, s.Type)
	case s.Type == gguf.TypeQ8_0 && s.HeadDim%32 != 0:
		return fmt.Errorf("%w: a q8_0 K/V cache needs heads of a multiple of 32 elements, and this model's have %d: use f16", ErrUnsupported, s.HeadDim)
	case s.Layers <= 0 || s.Blocks <= 0 || s.BlockSize <= 0 || s.KVHeads <= 0 || s.HeadDim <= 0:
		return fmt.Errorf("gpu: KV cache shape %+v has a dimension ≤ 0", s)
	case s.Layers > 1<<16 || s.BlockSize > 1<<16 || s.KVHeads*s.HeadDim > 1<<20 || s.Blocks > 1<<31/s.BlockSize:
		return fmt.Errorf("%w: KV cache shape %+v is too large", ErrOutOfMemory, s)
	}
	return nil
}

// CheckSlots panics, naming op ("cpu: WriteKV"), on a slot outside the
// pool: a programming error of the caller, as a wrong shape is.
func (s KVSpec) CheckSlots(op string, slots []int32) {
	n := s.Tokens()
	for i, slot := range slots {
		if slot < 0 || int(slot) >= n {
			panic(fmt.Sprintf("%s: slot %d (row %d) outside a pool of %d slots", op, slot, i, n))
		}
	}
}

// LookupWeighter is an optional capability: a weight that only Embed
// reads (untied token embeddings), which the backend keeps as Weight does
// but without the copy it may make for its MatMul kernels.
type LookupWeighter interface {
	LookupWeight(name string, typ gguf.TensorType, rows, cols int, data []byte) (Tensor, error)
}

// RepackedWeight is an optional capability of a weight Tensor: Repacked
// reports whether the backend keeps its own copy of the weight (rearranged
// for its MatMul kernels) and no longer reads the bytes Weight was given,
// so that the caller may release them.
type RepackedWeight interface {
	Repacked() bool
}

// MultiMatMul is an optional capability: MatMul of one x by several
// weights (Q, K and V; gate and up) as one op, dsts[i] = x · ws[i]ᵀ, each
// with the shapes MatMul asks for. A backend that splits an op's rows
// between threads then splits the rows of all of them at once.
type MultiMatMul interface {
	MatMuls(dsts []Tensor, x Tensor, ws []Tensor)
}

// MatMuls computes dsts[i] = x · ws[i]ᵀ through be's MultiMatMul, or one
// MatMul each when be has none. The results are those of the MatMuls.
func MatMuls(be Backend, dsts []Tensor, x Tensor, ws []Tensor) {
	if mm, ok := be.(MultiMatMul); ok {
		mm.MatMuls(dsts, x, ws)
		return
	}
	for i := range ws {
		be.MatMul(dsts[i], x, ws[i])
	}
}

// ExpertSpan is a run of rows of an Experts op that one expert computes:
// rows Start … Start+Len-1 (Len > 0), with the weights of expert Expert.
type ExpertSpan struct{ Expert, Start, Len int }

// Experts is an optional capability: the chosen experts of a mixture of
// experts over the rows that chose them, as a few ops where the plain
// ops take several per expert (a Gather, MatMuls, a Download each). The
// rows of its ops are a batch's (row, choice) pairs grouped by expert:
// spans, in order, that tile rows 0 … N-1.
type Experts interface {
	// ExpertMatMuls: for each span s, each of its rows i and each j,
	// dsts[j][i,:] = x[rows[i],:] · ws[j][s.Expert]ᵀ, or x[i,:] with rows
	// nil. dsts[j] is [N, ws[j][e].Rows]; every ws[j][e] is [m_j, x.Cols].
	// Each row of x is prepared for the kernels (quantized) once however
	// many experts read it, and each span's weights are read once for
	// all of its rows. The results are those of MatMul.
	ExpertMatMuls(dsts []Tensor, x Tensor, rows []int32, ws [][]Tensor, spans []ExpertSpan)
	// ExpertSum: dst[r,:] = Σ_j weights[r·k+j] · y[at[r·k+j],:] over j =
	// 0 … k-1 in that order, k = len(at) / dst.Rows, each product rounded
	// to float32 before it is added (llama.cpp weights each expert's
	// output with ggml_mul, then chains ggml_adds). dst [n, d], y [N, d].
	ExpertSum(dst, y Tensor, at []int32, weights []float32)
}

// AttnOpts are the options of one layer's attention.
type AttnOpts struct {
	Scale float32 // of the scores q·k
	// SoftCap > 0 soft-caps the scores before they are scaled, s =
	// SoftCap · tanh(q·k / SoftCap), as llama.cpp does (Gemma 2, whose
	// queries are scaled beforehand and Scale is 1).
	SoftCap float32
	// Window > 0 is a sliding window: a row at position p reads positions
	// p-Window+1 … p only (llama.cpp masks p - p' ≥ Window). Block-table
	// entries wholly before the windows of all of a sequence's rows are
	// never read, and may be -1 (blocks freed as they left the window).
	Window int
	// Bidirectional: every row of a sequence reads all of its positions 0
	// … Pos+Len-1, after as well as before its own (encoders, which see
	// the whole input in one pass); otherwise attention is causal. A
	// Window is then symmetric: positions at most Window/2 away, either
	// side (llama.cpp's LLAMA_SWA_TYPE_SYMMETRIC).
	Bidirectional bool
	// Sinks, a [1, Heads] F32 weight, is a logit per query head that joins
	// its softmax's denominator and has no value (gpt-oss's attention
	// sinks): head h's probabilities are e^(s_p - m) / (Σ_p e^(s_p - m) +
	// e^(Sinks[h] - m)), m the largest of the scaled scores and Sinks[h],
	// as llama.cpp's soft_max with sinks; they sum to less than 1. nil:
	// none.
	Sinks Tensor
}

// Plain reports whether o asks for nothing but causal attention at a
// scale: what every backend's fastest kernels do.
func (o AttnOpts) Plain() bool {
	return o.SoftCap == 0 && o.Window == 0 && !o.Bidirectional && o.Sinks == nil
}

// Span is the positions first … last (inclusive) that a row at position
// p of a sequence whose rows end at position end reads under o.
func (o AttnOpts) Span(p, end int) (first, last int) {
	switch {
	case o.Bidirectional && o.Window > 0:
		return max(0, p-o.Window/2), min(end, p+o.Window/2)
	case o.Bidirectional:
		return 0, end
	case o.Window > 0:
		return max(0, p-o.Window+1), p
	}
	return 0, p
}

// Attend is the middle of an attention block: what AttentionBlock and
// RunAttend take.
type Attend struct {
	Q, K, V  Tensor // the projections of the batch's rows; Q and K are rotated in place
	Att, Out Tensor // attention's output, and Out = Att · Woᵀ
	Wo       Tensor
	KV       KVCache
	Layer    int
	Batch    *Batch
	Pos      []int32 // each row's position, for rope
	Slots    []int32 // each row's K/V slot
	Rope     *Rope   // nil: no rotation (a NoPE layer, an encoder with absolute positions)
	Opts     AttnOpts
}

// AttentionBlock is an optional capability: Attend as one op. Its effects
// and results are those of AttendOps. The CPU splits it by
// sequence, so that the thread that attends a sequence's rows also rotates
// and stores them and prepares its output for Wo: on cores far apart, the
// rows then cross between them once instead of three times.
type AttentionBlock interface {
	Attend(a *Attend)
}

// RunAttend computes a through be's AttentionBlock, or with AttendOps
// when be has none.
func RunAttend(be Backend, a *Attend) {
	if ab, ok := be.(AttentionBlock); ok {
		ab.Attend(a)
		return
	}
	AttendOps(be, a)
}

// AttendOps computes a as five ops of be: Rope(Q), Rope(K) (none without
// a Rope), WriteKV, Attention and MatMul(Out, Att, Wo).
func AttendOps(be Backend, a *Attend) {
	AttentionOps(be, a)
	be.MatMul(a.Out, a.Att, a.Wo)
}

// AttentionOps is AttendOps without the output projection: Att holds the
// attention, for a family that works on it before Wo (Trinity's gate);
// a.Wo and a.Out are not read.
func AttentionOps(be Backend, a *Attend) {
	if a.Rope != nil {
		be.Rope(a.Q, a.Pos, a.Rope)
		be.Rope(a.K, a.Pos, a.Rope)
	}
	be.WriteKV(a.KV, a.Layer, a.K, a.V, a.Slots)
	be.Attention(a.Att, a.Q, a.KV, a.Layer, a.Batch, a.Opts)
}

// BlockIO is an optional capability: copying one block's K and V, for
// every layer, between the pool and host memory, so that blocks can be
// persisted and restored. The bytes are in the canonical layout, the same
// on every backend: for each layer, K then V (K alone with SharedKV), each KVHeads × BlockSize ×
// HeadDim elements of the cache type (little-endian F16 or F32), head by
// head, slot by slot within a head. len(buf) is Spec().BlockBytes().
type BlockIO interface {
	ReadBlock(c KVCache, block int32, dst []byte)
	WriteBlock(c KVCache, block int32, src []byte)
}

// KVCache is a backend's paged K/V pool. Spec may be called from any
// goroutine, even while the pool grows (KVGrower).
type KVCache interface {
	Spec() KVSpec
}

// KVGrower is an optional capability: a K/V pool grown in place to more
// blocks, between ops (as an op, never while another uses the cache).
// Every block keeps its ID and its K/V, the new ones are zeroed, and Spec
// gives the new size from then on. The backend may hold the old pool and
// the new one at once while it copies, so the new pool's bytes must be
// free. An error (wrapping ErrOutOfMemory when memory is short) leaves
// the cache as it was.
type KVGrower interface {
	GrowKVCache(c KVCache, blocks int) error
}

// FreeMemory is an optional capability of a backend whose memory is a
// device's, not the host's (a GPU): the bytes free on the device now. The
// runner sizes a K/V pool's growth (KVGrower) by it.
type FreeMemory interface {
	Free() (int64, error)
}

// LayerKVCacher is an optional capability: a K/V pool for some of the
// model's layers, a layer group's (models/arch.Groups), whose layer i is
// the model's layer layers[i] (ascending; spec.Layers is len(layers)). A
// backend that places the model's layers on devices places their K/V
// with them; NewKVCache takes a pool's layers to be the model's first.
type LayerKVCacher interface {
	NewLayerKVCache(spec KVSpec, layers []int) (KVCache, error)
}

// BlockCopy asks for block Src's K/V to be copied into block Dst.
type BlockCopy struct{ Src, Dst int32 }

// Batch describes the sequences of one ragged forward pass: their rows in
// the activations, their positions and their block tables.
type Batch struct {
	BlockSize int
	Seqs      []Seq
}

// Seq is one sequence's part of a Batch. Rows Start … Start+Len-1 of the
// batch are its tokens at positions Pos … Pos+Len-1; the token at position
// p has its K/V in slot Blocks[p/BlockSize]·BlockSize + p%BlockSize.
type Seq struct {
	Start, Len, Pos int
	Blocks          []int32
}

// Rows is the number of token rows of the batch.
func (b *Batch) Rows() int {
	n := 0
	for _, s := range b.Seqs {
		n = max(n, s.Start+s.Len)
	}
	return n
}

// Positions returns the position of every row, in dst's memory when it
// is large enough.
func (b *Batch) Positions(dst []int32) []int32 {
	dst = growTo(dst, b.Rows())
	for _, s := range b.Seqs {
		for i := range s.Len {
			dst[s.Start+i] = int32(s.Pos + i)
		}
	}
	return dst
}

// Slots returns the K/V slot of every row, in dst's memory when it is
// large enough.
func (b *Batch) Slots(dst []int32) []int32 {
	dst = growTo(dst, b.Rows())
	bs := b.BlockSize
	for _, s := range b.Seqs {
		for i := range s.Len {
			p := s.Pos + i
			dst[s.Start+i] = s.Blocks[p/bs]*int32(bs) + int32(p%bs)
		}
	}
	return dst
}

// Check reports a batch whose block tables do not cover its positions.
func (b *Batch) Check() error {
	if b.BlockSize <= 0 {
		return fmt.Errorf("gpu: batch block size %d", b.BlockSize)
	}
	for i, s := range b.Seqs {
		if s.Len <= 0 || s.Pos < 0 || s.Start < 0 {
			return fmt.Errorf("gpu: batch sequence %d: start %d, len %d, pos %d", i, s.Start, s.Len, s.Pos)
		}
		if need := (s.Pos + s.Len + b.BlockSize - 1) / b.BlockSize; len(s.Blocks) < need {
			return fmt.Errorf("gpu: batch sequence %d: %d blocks for %d positions of block size %d",
				i, len(s.Blocks), s.Pos+s.Len, b.BlockSize)
		}
	}
	return nil
}

func growTo(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n)
	}
	return s[:n]
}

// Rope describes rotary position embedding as llama.cpp computes it: pair
// i (of Dims/2) of a head turns by pos · Scale · Base^(-2i/Dims) / Factors[i],
// its cos and sin multiplied by MScale.
type Rope struct {
	HeadDim int     // elements per head
	Dims    int     // leading elements of each head that rotate (≤ HeadDim, even)
	Base    float32 // rope.freq_base
	Scale   float32 // frequency scale: 1, or 1/factor for linear scaling (0 is invalid)
	// Neox pairs element j with j+Dims/2 (GPT-NeoX, qwen2, qwen3); otherwise
	// 2j with 2j+1 (llama).
	Neox bool
	// Factors divide each pair's frequency (llama3 scaling, rope_freqs,
	// YaRN's ramp, longrope's factors); nil means all 1. Length Dims/2.
	Factors []float32
	// MScale multiplies every cos and sin (YaRN's magnitude scale,
	// longrope's attention factor); 0 means 1.
	MScale float32
}

// Magnitude is r's MScale, 1 when unset.
func (r *Rope) Magnitude() float32 {
	if r.MScale == 0 {
		return 1
	}
	return r.MScale
}

var (
	// ErrUnsupported is wrapped when a backend lacks a type or an op.
	ErrUnsupported = errors.New("gpu: not supported")
	// ErrOutOfMemory is wrapped when an allocation does not fit.
	ErrOutOfMemory = errors.New("gpu: out of memory")
)

// SumExperts is ExpertSum on host memory: dst[r,:] = Σ_j weights[r·k+j] ·
// y[at[r·k+j],:] over j = 0 … k-1 in that order, rows of d values, k =
// len(at) / (len(dst) / d), each product rounded before it is added.
func SumExperts(dst, y []float32, d int, at []int32, weights []float32) {
	n := len(dst) / d
	k := len(at) / n
	for r := range n {
		out := dst[r*d : (r+1)*d]
		for j := range k {
			w, a := weights[r*k+j], int(at[r*k+j])
			src := y[a*d : (a+1)*d]
			if j == 0 {
				for i := range out {
					out[i] = src[i] * w
				}
				continue
			}
			for i := range out {
				out[i] += src[i] * w
			}
		}
	}
}

// Rearrangement is a strided copy between two F32 tensors, each seen as
// its elements in row-major order: for i < Rows, j < Heads and e < Len,
// dst[Dst.At(i, j) + e] = src[Src.At(i, j) + e]. It moves the columns of
// heads where 2-D tensors cannot view them: a projection split into its
// parts, each head's rows gathered for a matmul of its own, parts joined
// into one head. The runs must not overlap within dst.
type Rearrangement struct {
	Rows, Heads, Len int
	Dst, Src         Layout
}

// Layout places run (i, j) of a Rearrangement at element Off + i·Row +
// j·Head.
type Layout struct{ Off, Row, Head int }

// At is where run (i, j) starts.
func (l Layout) At(i, j int) int { return l.Off + i*l.Row + j*l.Head }

// Check panics, naming backend, unless every run of r lies within dst
// and src.
func (r Rearrangement) Check(backend string, dst, src Tensor) {
	in := func(l Layout, t Tensor) bool {
		n := t.Rows() * t.Cols()
		if r.Rows == 0 || r.Heads == 0 || r.Len == 0 {
			return true
		}
		lo, hi := l.At(0, 0), l.At(0, 0)
		for _, at := range []int{l.At(r.Rows-1, 0), l.At(0, r.Heads-1), l.At(r.Rows-1, r.Heads-1)} {
			lo, hi = min(lo, at), max(hi, at)
		}
		return lo >= 0 && hi+r.Len <= n
	}
	switch {
	case r.Rows < 0 || r.Heads < 0 || r.Len < 0:
		panic(fmt.Sprintf("%s: Rearrange: %d × %d runs of %d", backend, r.Rows, r.Heads, r.Len))
	case dst.Type() != gguf.TypeF32 || src.Type() != gguf.TypeF32:
		panic(fmt.Sprintf("%s: Rearrange: %v from %v (want F32 activations)", backend, dst, src))
	case !in(r.Dst, dst) || !in(r.Src, src):
		panic(fmt.Sprintf("%s: Rearrange: %+v outside dst %v or src %v", backend, r, dst, src))
	}
}

// Rearranger is an optional capability: Rearrange as one op of the
// backend.
type Rearranger interface {
	Rearrange(dst, src Tensor, r Rearrangement)
}

// Rearrange copies r's runs from src to dst through be's Rearranger, or
// on the host (src and dst downloaded, dst uploaded) when be has none.
func Rearrange(be Backend, dst, src Tensor, r Rearrangement) {
	if rr, ok := be.(Rearranger); ok {
		rr.Rearrange(dst, src, r)
		return
	}
	r.Check(be.Name(), dst, src)
	s := make([]float32, src.Rows()*src.Cols())
	d := make([]float32, dst.Rows()*dst.Cols())
	be.Download(s, src)
	be.Download(d, dst)
	r.Apply(d, s)
	be.Upload(dst, d)
}

// Apply is r on host slices: the reference every backend's Rearrange
// matches.
func (r Rearrangement) Apply(dst, src []float32) {
	for i := range r.Rows {
		for j := range r.Heads {
			d, s := r.Dst.At(i, j), r.Src.At(i, j)
			copy(dst[d:d+r.Len], src[s:s+r.Len])
		}
	}
}
