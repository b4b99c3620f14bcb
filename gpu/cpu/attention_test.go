package cpu

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"folio/gpu"
	"folio/models/gguf"
)

// attentionTol bounds Attention against float64 over the K/V as the cache
// stores them (F16-rounded for an F16 cache, quantized for Q8_0).
const attentionTol = 1e-5

// attentionTolBF16 bounds the amx and avx512bf16 levels' kernels over half
// and Q8_0 caches (simd_attn_bf16.h), which round Q, K, V and the
// softmax's weights to bfloat16 (8 significant bits, 2⁻⁹ relative each)
// and sum in float32.
const attentionTolBF16 = 1e-2

// attnBF16 reports whether attention at level l over a cache of typ runs
// a bfloat16 kernel.
func attnBF16(l simdLevel, typ gguf.TensorType) bool {
	kind := kvF16
	switch typ {
	case gguf.TypeF32:
		kind = kvF32
	case gguf.TypeQ8_0:
		kind = kvQ8
	}
	return l.attnBF16(kind)
}

// attnTol is attentionTol, or attentionTolBF16 where attnBF16.
func attnTol(l simdLevel, typ gguf.TensorType) float64 {
	if attnBF16(l, typ) {
		return attentionTolBF16
	}
	return attentionTol
}

// attnCase is a batch of sequences over one layer of a paged cache, with
// every position's K/V already written: the earlier positions by an
// earlier WriteKV, the batch's own by WriteKV of the batch's slots.
type attnCase struct {
	spec   gpu.KVSpec
	heads  int
	batch  gpu.Batch
	k, v   [][]float32 // per sequence: (Pos+Len) × KVHeads·HeadDim
	q      []float32   // [rows, heads·HeadDim]
	layer  int
	scale  float32
	opts   gpu.AttnOpts // Scale aside: scale is the case's
	sinks  []float32    // opts.Sinks' values, per query head; nil: none
	cache  gpu.KVCache
	output gpu.Tensor
}

type seqShape struct{ pos, len int }

// newAttnCase builds the case on b. contiguous gives each sequence a run
// of consecutive blocks in order; otherwise the blocks are shuffled over
// the whole pool.
func newAttnCase(t testing.TB, b *Backend, r *rand.Rand, typ gguf.TensorType, bs, kvHeads, group, hd int,
	seqs []seqShape, contiguous bool) *attnCase {
	t.Helper()
	need := 0
	for _, s := range seqs {
		need += (s.pos + s.len + bs - 1) / bs
	}
	blocks := need + 3 // some blocks belong to no one
	ids := make([]int32, blocks)
	for i := range ids {
		ids[i] = int32(i)
	}
	if !contiguous {
		r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	}
	c := &attnCase{
		spec:  gpu.KVSpec{Layers: 2, Blocks: blocks, BlockSize: bs, KVHeads: kvHeads, HeadDim: hd, Type: typ},
		heads: kvHeads * group, layer: 1,
		scale: float32(1 / math.Sqrt(float64(hd))),
	}
	c.batch.BlockSize = bs
	// The rows of the batch are the sequences in a shuffled order.
	order := r.Perm(len(seqs))
	start := make([]int, len(seqs))
	rows := 0
	for _, i := range order {
		start[i] = rows
		rows += seqs[i].len
	}
	for i, s := range seqs {
		nb := (s.pos + s.len + bs - 1) / bs
		c.batch.Seqs = append(c.batch.Seqs, gpu.Seq{Start: start[i], Len: s.len, Pos: s.pos, Blocks: ids[:nb:nb]})
		ids = ids[nb:]
		c.k = append(c.k, randFloats(r, (s.pos+s.len)*kvHeads*hd, 1))
		c.v = append(c.v, randFloats(r, (s.pos+s.len)*kvHeads*hd, 1))
	}
	c.q = randFloats(r, rows*c.heads*hd, 1)
	c.run(t, b)
	return c
}

// run writes the K/V into a fresh cache and computes the attention.
func (c *attnCase) run(t testing.TB, b *Backend) {
	t.Helper()
	cache, err := b.NewKVCache(c.spec)
	if err != nil {
		t.Fatal(err)
	}
	c.cache = cache
	w := c.spec.KVHeads * c.spec.HeadDim
	bs := c.spec.BlockSize
	// Earlier positions, one sequence at a time.
	for i, s := range c.batch.Seqs {
		if s.Pos == 0 {
			continue
		}
		slots := make([]int32, s.Pos)
		for p := range slots {
			slots[p] = s.Blocks[p/bs]*int32(bs) + int32(p%bs)
		}
		k, v := newAct(t, b, s.Pos, w, c.k[i][:s.Pos*w]), newAct(t, b, s.Pos, w, c.v[i][:s.Pos*w])
		b.WriteKV(cache, c.layer, k, v, slots)
	}
	// The batch's own rows.
	rows := c.batch.Rows()
	kb, vb := make([]float32, rows*w), make([]float32, rows*w)
	for i, s := range c.batch.Seqs {
		copy(kb[s.Start*w:], c.k[i][s.Pos*w:])
		copy(vb[s.Start*w:], c.v[i][s.Pos*w:])
	}
	b.WriteKV(cache, c.layer, newAct(t, b, rows, w, kb), newAct(t, b, rows, w, vb), c.batch.Slots(nil))

	q := newAct(t, b, rows, c.heads*c.spec.HeadDim, c.q)
	c.output = newAct(t, b, rows, c.heads*c.spec.HeadDim, nil)
	b.Attention(c.output, q, cache, c.layer, &c.batch, c.attnOpts())
}

// attnOpts is the case's options with its scale.
func (c *attnCase) attnOpts() gpu.AttnOpts {
	o := c.opts
	o.Scale = c.scale
	return o
}

// want is the float64 reference over contiguous K/V.
func (c *attnCase) want() []float64 {
	hd, kvh := c.spec.HeadDim, c.spec.KVHeads
	w := kvh * hd
	out := make([]float64, len(c.q))
	for si, s := range c.batch.Seqs {
		sk, sv := storedKV(c.spec.Type, c.k[si], hd), storedKV(c.spec.Type, c.v[si], hd)
		for i := range s.Len {
			row := s.Start + i
			first, last := c.opts.Span(s.Pos+i, s.Pos+s.Len-1)
			n := last + 1
			for h := range c.heads {
				q := c.q[(row*c.heads+h)*hd:][:hd]
				kv := h / (c.heads / kvh) * hd
				scores := make([]float64, n)
				m := math.Inf(-1)
				for p := first; p < n; p++ {
					var d float64
					for j := range hd {
						d += float64(q[j]) * float64(sk[p*w+kv+j])
					}
					if sc := float64(c.opts.SoftCap); sc > 0 {
						d = sc * math.Tanh(d/sc)
					}
					scores[p] = d * float64(c.scale)
					m = max(m, scores[p])
				}
				for p := range first {
					scores[p] = math.Inf(-1)
				}
				var sum float64
				if c.sinks != nil { // a logit with no value
					m = max(m, float64(c.sinks[h]))
					sum = math.Exp(float64(c.sinks[h]) - m)
				}
				for p := range scores {
					scores[p] = math.Exp(scores[p] - m)
					sum += scores[p]
				}
				o := out[(row*c.heads+h)*hd:][:hd]
				for p := first; p < n; p++ {
					for j := range hd {
						o[j] += scores[p] / sum * float64(sv[p*w+kv+j])
					}
				}
			}
		}
	}
	return out
}

// storedKV is x as a cache of typ holds it: each head's row of hd
// elements rounded to F16 or quantized to Q8_0 blocks.
func storedKV(typ gguf.TensorType, x []float32, hd int) []float32 {
	out := make([]float32, len(x))
	switch typ {
	case gguf.TypeF16:
		for i, v := range x {
			out[i] = gguf.F16ToF32(gguf.F32ToF16(v))
		}
	case gguf.TypeQ8_0:
		buf := make([]byte, typ.RowBytes(int64(hd)))
		for i := 0; i < len(x); i += hd {
			if err := gguf.Quantize(typ, x[i:i+hd], buf); err != nil {
				panic(err)
			}
			if err := gguf.Dequantize(typ, buf, out[i:i+hd]); err != nil {
				panic(err)
			}
		}
	default:
		copy(out, x)
	}
	return out
}

// TestAttention runs at every SIMD level this machine has, over head
// sizes that fill no vector (8, 12), leave a tail (20) or fill several (64);
// Q8_0 caches over the head sizes it takes (multiples of 32), of which 96
// is no multiple of the 64 elements a decode pass sums at a time.
func TestAttention(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	seqs := []seqShape{
		{0, 1},  // the first token alone
		{0, 19}, // a prompt
		{37, 1}, // decode mid-way
		{70, 5}, // a prefill chunk after earlier ones
		{5, 2},
	}
	for _, l := range supportedLevels() {
		b := newTestBackend(t)
		b.k = kernelsAt(l)
		for _, typ := range []gguf.TensorType{gguf.TypeF16, gguf.TypeF32, gguf.TypeQ8_0} {
			hds := []int{8, 12, 20, 64}
			if typ == gguf.TypeQ8_0 {
				hds = []int{32, 64, 96}
			}
			for _, bs := range []int{1, 8, 16, 32, 64} {
				for _, group := range []int{1, 2, 4} {
					for _, hd := range hds {
						name := fmt.Sprintf("%v/%v/block%d/gqa%d/hd%d", l, typ, bs, group, hd)
						t.Run(name, func(t *testing.T) {
							c := newAttnCase(t, b, r, typ, bs, 2, group, hd, seqs, false)
							checkErr(t, "Attention", download(b, c.output), c.want(), attnTol(l, typ))
						})
					}
				}
			}
		}
	}
}

// TestAttentionLongContext: prompts over long cached contexts, where a
// tile's queries read many blocks of the online softmax (attnKB positions
// each) through a shuffled block table: smollm-135m's shape (3 query heads
// per K/V head of 64) and llama's (4 of 128), several tiles of rows and a
// decode row, with a window and sinks beside plain causal attention.
func TestAttentionLongContext(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	seqs := []seqShape{{1500, 37}, {2000, 1}, {700, 16}}
	for _, l := range supportedLevels() {
		if l == levelScalar && testing.Short() {
			continue // the Go kernels at length: most of the test's time under qemu (CI's arm64 run)
		}
		b := newTestBackend(t)
		b.k = kernelsAt(l)
		for _, typ := range []gguf.TensorType{gguf.TypeF16, gguf.TypeQ8_0} {
			for _, sh := range []struct{ kvh, g, hd int }{{3, 3, 64}, {2, 4, 128}} {
				for _, o := range []gpu.AttnOpts{{}, {Window: 333}, {SoftCap: 30}} {
					name := fmt.Sprintf("%v/%v/gqa%d/hd%d/%+v", l, typ, sh.g, sh.hd, o)
					t.Run(name, func(t *testing.T) {
						c := newAttnCase(t, b, r, typ, 16, sh.kvh, sh.g, sh.hd, seqs, false)
						c.opts = o
						c.run(t, b)
						checkErr(t, "Attention", download(b, c.output), c.want(), attnTol(l, typ))
					})
				}
			}
		}
	}
}

// Attention through shuffled block tables equals attention over the same
// K/V laid out in consecutive blocks, bit for bit.
func TestAttentionPagedEqualsContiguous(t *testing.T) {
	for _, l := range supportedLevels() {
		b := newTestBackend(t)
		b.k = kernelsAt(l)
		pagedEqualsContiguous(t, b)
	}
}

func pagedEqualsContiguous(t *testing.T, b *Backend) {
	r := rand.New(rand.NewPCG(25, 26))
	for trial := range 60 {
		typ := []gguf.TensorType{gguf.TypeF16, gguf.TypeF32, gguf.TypeQ8_0}[trial%3]
		bs := []int{1, 2, 8, 16, 32, 64}[r.IntN(6)]
		group := []int{1, 2, 4}[r.IntN(3)]
		seqs := make([]seqShape, 1+r.IntN(4))
		for i := range seqs {
			seqs[i] = seqShape{pos: r.IntN(150), len: 1 + r.IntN(12)}
		}
		hd := 4 + 2*r.IntN(8)
		if typ == gguf.TypeQ8_0 {
			hd = 32 * (1 + r.IntN(3))
		}
		paged := newAttnCase(t, b, r, typ, bs, 1+r.IntN(3), group, hd, seqs, false)
		contig := *paged
		contig.batch.Seqs = nil
		next := int32(0)
		for _, s := range paged.batch.Seqs {
			ids := make([]int32, len(s.Blocks))
			for i := range ids {
				ids[i] = next
				next++
			}
			s.Blocks = ids
			contig.batch.Seqs = append(contig.batch.Seqs, s)
		}
		contig.run(t, b)
		got, want := download(b, paged.output), download(b, contig.output)
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%v trial %d (%v, block %d, seqs %v): element %d paged %v, contiguous %v",
					b.k.level, trial, typ, bs, seqs, i, got[i], want[i])
			}
		}
	}
}

func TestAttentionNoAllocs(t *testing.T) {
	b := newTestBackend(t)
	r := rand.New(rand.NewPCG(27, 28))
	c := newAttnCase(t, b, r, gguf.TypeF16, 16, 2, 4, 64, []seqShape{{300, 1}, {0, 40}}, false)
	q := newAct(t, b, c.batch.Rows(), c.heads*c.spec.HeadDim, c.q)
	op := func() { b.Attention(c.output, q, c.cache, c.layer, &c.batch, gpu.AttnOpts{Scale: c.scale}) }
	op()
	if a := steadyAllocs(op); a != 0 {
		t.Errorf("Attention allocates %v times per call", a)
	}
}

// TestWriteKVRounding: at every level, F16 caches round as F32ToF16 (and
// F16C) do, through heads of 12 (a vector and a tail) in shuffled slots.
func TestWriteKVRounding(t *testing.T) {
	// Ties, subnormals, overflow and ordinary values.
	vals := []float32{1 + 1.0/2048, 1 + 3.0/2048, 65520, 70000, 1e-8, 3e-8, -2.5e-5, 0.1,
		-1 - 1.0/2048, 5.9604645e-8, 2.980232e-8, float32(math.Copysign(0, -1)), 123.456, 1e-3, -65504, 0.33333334}
	const heads, hd = 2, 12
	kf, vf := make([]float32, 2*heads*hd), make([]float32, 2*heads*hd)
	for i := range kf {
		kf[i], vf[i] = vals[i%len(vals)], -vals[(i+5)%len(vals)]
	}
	slots := []int32{6, 1}
	for _, l := range supportedLevels() {
		b := newTestBackend(t)
		b.k = kernelsAt(l)
		spec := gpu.KVSpec{Layers: 1, Blocks: 2, BlockSize: 4, KVHeads: heads, HeadDim: hd, Type: gguf.TypeF16}
		c, err := b.NewKVCache(spec)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteKV(c, 0, newAct(t, b, 2, heads*hd, kf), newAct(t, b, 2, heads*hd, vf), slots)
		cc := c.(*KVCache)
		for i := range kf {
			row, h, j := i/(heads*hd), i%(heads*hd)/hd, i%hd
			at := cc.offset(int(slots[row]), h) + j
			if got, want := cc.k16[0][at], gguf.F32ToF16(kf[i]); got != want {
				t.Errorf("%v: WriteKV of K %v stored %#04x, want %#04x", l, kf[i], got, want)
			}
			if got, want := cc.v16[0][at], gguf.F32ToF16(vf[i]); got != want {
				t.Errorf("%v: WriteKV of V %v stored %#04x, want %#04x", l, vf[i], got, want)
			}
		}
	}
}

func TestCopyBlocks(t *testing.T) {
	b := newTestBackend(t)
	r := rand.New(rand.NewPCG(29, 30))
	for _, typ := range []gguf.TensorType{gguf.TypeF16, gguf.TypeF32, gguf.TypeQ8_0} {
		spec := gpu.KVSpec{Layers: 3, Blocks: 5, BlockSize: 4, KVHeads: 2, HeadDim: 4, Type: typ}
		if typ == gguf.TypeQ8_0 {
			spec.HeadDim = 32
		}
		c, err := b.NewKVCache(spec)
		if err != nil {
			t.Fatal(err)
		}
		w := spec.KVHeads * spec.HeadDim
		slots := make([]int32, spec.Blocks*spec.BlockSize)
		for i := range slots {
			slots[i] = int32(i)
		}
		n := len(slots)
		ks, vs := make([][]float32, spec.Layers), make([][]float32, spec.Layers)
		for l := range spec.Layers {
			ks[l], vs[l] = randFloats(r, n*w, 1), randFloats(r, n*w, 1)
			b.WriteKV(c, l, newAct(t, b, n, w, ks[l]), newAct(t, b, n, w, vs[l]), slots)
		}
		// In order: block 3 gets block 0's K/V, then block 4 gets block 3's
		// (so block 0's too), then block 0 gets block 2's.
		b.CopyBlocks(c, []gpu.BlockCopy{{Src: 0, Dst: 3}, {Src: 3, Dst: 4}, {Src: 2, Dst: 0}})
		from := []int{2, 1, 2, 0, 0} // the original block each block now holds
		cc := c.(*KVCache)
		per := spec.BlockSize * w
		hd := spec.HeadDim
		for l := range spec.Layers {
			sk, sv := storedKV(typ, ks[l], hd), storedKV(typ, vs[l], hd)
			for blk, src := range from {
				for j := range per {
					// Element j of block blk: slot blk·BlockSize + j/w, head j%w/hd.
					at := cc.offset(blk*spec.BlockSize+j/w, j%w/hd) + j%hd
					wk, wv := sk[src*per+j], sv[src*per+j]
					gk, gv := cc.element(l, at)
					if gk != wk || gv != wv {
						t.Fatalf("%v layer %d block %d element %d: K/V %v/%v, want block %d's %v/%v", typ, l, blk, j, gk, gv, src, wk, wv)
					}
				}
			}
		}
	}
}

func TestNewKVCacheErrors(t *testing.T) {
	b := newTestBackend(t)
	for _, spec := range []gpu.KVSpec{
		{Layers: 1 << 20, Blocks: 1 << 30, BlockSize: 1 << 20, KVHeads: 8, HeadDim: 128, Type: gguf.TypeF16}, // overflows
		{Layers: 32, Blocks: 1 << 24, BlockSize: 256, KVHeads: 8, HeadDim: 128, Type: gguf.TypeF32},          // 2^42 elements a layer
		{Layers: 1, Blocks: 1 << 20, BlockSize: 256, KVHeads: 8, HeadDim: 128, Type: gguf.TypeF16},           // 1 TiB
	} {
		if _, err := b.NewKVCache(spec); !errors.Is(err, gpu.ErrOutOfMemory) {
			t.Errorf("NewKVCache(%+v): err = %v, want ErrOutOfMemory", spec, err)
		}
	}
	if _, err := b.NewKVCache(gpu.KVSpec{Layers: 1, Blocks: 1, BlockSize: 1, KVHeads: 1, HeadDim: 48, Type: gguf.TypeQ8_0}); !errors.Is(err, gpu.ErrUnsupported) ||
		!strings.Contains(err.Error(), "multiple of 32") {
		t.Errorf("Q8_0 cache of heads of 48: err = %v, want ErrUnsupported naming the multiple of 32", err)
	}
	if _, err := b.NewKVCache(gpu.KVSpec{Layers: 1, Blocks: 1, BlockSize: 1, KVHeads: 1, HeadDim: 1, Type: gguf.TypeQ4_0}); !errors.Is(err, gpu.ErrUnsupported) {
		t.Errorf("Q4_0 cache: err = %v, want ErrUnsupported", err)
	}
	if _, err := b.NewTensor(1<<40, 1<<30); !errors.Is(err, gpu.ErrOutOfMemory) {
		t.Errorf("huge NewTensor: err = %v, want ErrOutOfMemory", err)
	}
}

// The thread count changes how the work is split, never a result.
func TestThreadCountInvariance(t *testing.T) {
	one, many := New(1), New(16) // 16 threads split GQA groups that 1 keeps whole
	defer one.Close()
	defer many.Close()
	for _, l := range supportedLevels() {
		one.k, many.k = kernelsAt(l), kernelsAt(l)
		threadCountInvariance(t, one, many)
	}
}

func threadCountInvariance(t *testing.T, one, many *Backend) {
	seqs := []seqShape{{0, 3}, {40, 1}, {17, 6}}
	for _, group := range []int{1, 2, 4, 8} {
		a := newAttnCase(t, one, rand.New(rand.NewPCG(31, 32)), gguf.TypeF16, 8, 2, group, 16, seqs, false)
		b := newAttnCase(t, many, rand.New(rand.NewPCG(31, 32)), gguf.TypeF16, 8, 2, group, 16, seqs, false)
		got, want := download(many, b.output), download(one, a.output)
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%v Attention, group %d: element %d is %v on 16 threads, %v on 1", one.k.level, group, i, got[i], want[i])
			}
		}
	}
	r := rand.New(rand.NewPCG(33, 34))
	data, _ := quantWeight(t, r, gguf.TypeQ4_K, 37, 512)
	xf := randFloats(r, 3*512, 1)
	var outs [2][]float32
	for i, be := range []*Backend{one, many} {
		dst := newAct(t, be, 3, 37, nil)
		be.MatMul(dst, newAct(t, be, 3, 512, xf), newWeight(t, be, gguf.TypeQ4_K, 37, 512, data))
		outs[i] = download(be, dst)
	}
	for i := range outs[0] {
		if outs[0][i] != outs[1][i] {
			t.Fatalf("%v MatMul: element %d is %v on 16 threads, %v on 1", one.k.level, i, outs[1][i], outs[0][i])
		}
	}
}

// A token's attention is bit for bit the same decoded alone as in its
// prompt, at every level: the models quantize activations to 8 bits, so the
// least difference could flip a quant and change a schedule's logits.
func TestAttentionDecodeEqualsPrefill(t *testing.T) {
	r := rand.New(rand.NewPCG(37, 38))
	const n, kvh = 45, 2
	blocks := []int32{3, 1, 5, 0, 2, 4, 6, 7, 8, 9, 10, 11}
	// Groups of query heads and head sizes of real models (smollm 3×64,
	// llama 4×128), with head sizes that leave tails, and block sizes
	// below, at and above the 16 positions a decode tile holds.
	for _, sh := range []struct{ g, hd, bs int }{{3, 64, 16}, {4, 128, 32}, {8, 80, 8}, {1, 72, 16}, {5, 24, 4}} {
		g, hd, bs := sh.g, sh.hd, sh.bs
		slots := make([]int32, n)
		for p := range slots {
			slots[p] = blocks[p/bs]*int32(bs) + int32(p%bs)
		}
		kf, vf := randFloats(r, n*kvh*hd, 1), randFloats(r, n*kvh*hd, 1)
		w := kvh * g * hd
		qf := randFloats(r, n*w, 4)
		decodeEqualsPrefill(t, n, kvh, g, hd, bs, blocks, slots, kf, vf, qf, nil, gpu.AttnOpts{Scale: 0.125})
	}
}

// Over a context of several blocks of the flash kernels' online softmax
// (attnKB positions), with and without a window that starts mid-block, a
// soft-cap and sinks (which start each query's running max).
func TestAttentionDecodeEqualsPrefillLong(t *testing.T) {
	r := rand.New(rand.NewPCG(53, 54))
	const n, kvh, g, hd, bs = 150, 2, 3, 64, 16
	blocks := []int32{7, 2, 9, 0, 4, 1, 8, 3, 6, 5}
	slots := make([]int32, n)
	for p := range slots {
		slots[p] = blocks[p/bs]*int32(bs) + int32(p%bs)
	}
	kf, vf := randFloats(r, n*kvh*hd, 1), randFloats(r, n*kvh*hd, 1)
	qf := randFloats(r, n*kvh*g*hd, 4)
	for _, o := range []gpu.AttnOpts{{Scale: 0.125}, {Scale: 0.125, Window: 61}, {Scale: 0.125, SoftCap: 5}} {
		decodeEqualsPrefill(t, n, kvh, g, hd, bs, blocks, slots, kf, vf, qf, nil, o)
	}
	sinks := randFloats(r, kvh*g, 4)
	sinks[1] = float32(math.Inf(-1)) // a head without one
	for _, o := range []gpu.AttnOpts{{Scale: 0.125}, {Scale: 0.125, Window: 61}} {
		decodeEqualsPrefill(t, n, kvh, g, hd, bs, blocks, slots, kf, vf, qf, sinks, o)
	}
}

// decodeEqualsPrefill checks, at every level and K/V type, that each of
// n positions' attention under o (with sinks' logits, if not nil) is the
// same decoded alone as in one prompt of all n.
func decodeEqualsPrefill(t *testing.T, n, kvh, g, hd, bs int, blocks, slots []int32, kf, vf, qf, sinks []float32, o gpu.AttnOpts) {
	t.Helper()
	w := kvh * g * hd
	for _, l := range supportedLevels() {
		for _, typ := range []gguf.TensorType{gguf.TypeF16, gguf.TypeF32, gguf.TypeQ8_0} {
			if typ == gguf.TypeQ8_0 && hd%32 != 0 {
				continue
			}
			b := newTestBackend(t)
			b.k = kernelsAt(l)
			if sinks != nil {
				o.Sinks = newWeight(t, b, gguf.TypeF32, 1, len(sinks), gpu.QuantizeRows(gguf.TypeF32, 1, len(sinks), sinks))
			}
			c, err := b.NewKVCache(gpu.KVSpec{Layers: 1, Blocks: len(blocks), BlockSize: bs, KVHeads: kvh, HeadDim: hd, Type: typ})
			if err != nil {
				t.Fatal(err)
			}
			b.WriteKV(c, 0, newAct(t, b, n, kvh*hd, kf), newAct(t, b, n, kvh*hd, vf), slots)
			dst := newAct(t, b, n, w, nil)
			all := gpu.Batch{BlockSize: bs, Seqs: []gpu.Seq{{Start: 0, Len: n, Pos: 0, Blocks: blocks}}}
			b.Attention(dst, newAct(t, b, n, w, qf), c, 0, &all, o)
			want := download(b, dst)
			one := newAct(t, b, 1, w, nil)
			for p := range n {
				step := gpu.Batch{BlockSize: bs, Seqs: []gpu.Seq{{Start: 0, Len: 1, Pos: p, Blocks: blocks}}}
				b.Attention(one, newAct(t, b, 1, w, qf[p*w:(p+1)*w]), c, 0, &step, o)
				for i, v := range download(b, one) {
					if v != want[p*w+i] {
						t.Fatalf("%v %v, %d heads of %d per K/V head, blocks of %d, %+v: position %d element %d is %v decoded alone, %v in the prompt",
							l, typ, g, hd, bs, o, p, i, v, want[p*w+i])
					}
				}
			}
		}
	}
}

// BenchmarkAttentionPrefill is one prompt of one sequence (the rows attend
// causally to each other): 256 rows of smollm-135m's shape (9 query heads
// over 3 K/V heads of 64) and 512 of Llama-3-8B's (32 over 8 of 128).
func BenchmarkAttentionPrefill(b *testing.B) {
	shapes := []struct{ rows, kvHeads, group, hd int }{{256, 3, 3, 64}, {512, 8, 4, 128}}
	for _, l := range supportedLevels()[1:] {
		for _, sh := range shapes {
			b.Run(fmt.Sprintf("%v/rows=%d/hd=%d", l, sh.rows, sh.hd), func(b *testing.B) {
				be := New(0)
				defer be.Close()
				be.k = kernelsAt(l)
				c := newAttnCase(b, be, rand.New(rand.NewPCG(3, 3)), gguf.TypeF16, 16, sh.kvHeads, sh.group, sh.hd,
					[]seqShape{{0, sh.rows}}, false)
				q := newAct(b, be, sh.rows, c.heads*sh.hd, c.q)
				for b.Loop() {
					be.Attention(c.output, q, c.cache, c.layer, &c.batch, gpu.AttnOpts{Scale: c.scale})
				}
			})
		}
	}
}

// BenchmarkAttentionSuffix is one chunk of a prompt (512 rows, num_batch)
// over a cached context of pos positions, smollm-135m's shape: the chunk
// a turn of an agent computes over its conversation. ns/row is the cost of
// one new token's attention in one layer.
func BenchmarkAttentionSuffix(b *testing.B) {
	const rows, kvHeads, group, hd = 512, 3, 3, 64
	for _, l := range supportedLevels()[1:] {
		for _, pos := range []int{0, 2560, 5632, 11776, 19968} {
			b.Run(fmt.Sprintf("%v/pos=%d", l, pos), func(b *testing.B) {
				benchPromptAttention(b, l, rows, pos, kvHeads, group, hd, false)
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
			})
		}
	}
}

// BenchmarkAttentionDepth is the prompt of `folio bench --depth 8192` on
// llama-1b (32 query heads over 8 K/V heads of 64): 512 rows after 8,192
// cached positions, in one layer. The attention of a token at that depth
// is 2 · 32 · 8,448 · 64 multiply-adds a layer: MMAC/s reports their rate.
func BenchmarkAttentionDepth(b *testing.B) {
	const rows, pos, kvHeads, group, hd = 512, 8192, 8, 4, 64
	for _, l := range supportedLevels()[1:] {
		b.Run(l.String(), func(b *testing.B) {
			benchPromptAttention(b, l, rows, pos, kvHeads, group, hd, true)
			macs := 2 * float64(rows) * float64(kvHeads*group) * float64(pos+(rows+1)/2) * hd
			b.ReportMetric(macs*float64(b.N)/b.Elapsed().Seconds()/1e6, "MMAC/s")
		})
	}
}

// benchPromptAttention times Attention at level l over one sequence's
// prompt of rows rows after pos cached positions (an F16 cache in blocks
// of 16, contiguous or shuffled over the pool).
func benchPromptAttention(b *testing.B, l simdLevel, rows, pos, kvHeads, group, hd int, contiguous bool) {
	be := New(0)
	defer be.Close()
	be.k = kernelsAt(l)
	c := newAttnCase(b, be, rand.New(rand.NewPCG(3, 3)), gguf.TypeF16, 16, kvHeads, group, hd,
		[]seqShape{{pos, rows}}, contiguous)
	q := newAct(b, be, rows, c.heads*hd, c.q)
	for b.Loop() {
		be.Attention(c.output, q, c.cache, c.layer, &c.batch, gpu.AttnOpts{Scale: c.scale})
	}
}
