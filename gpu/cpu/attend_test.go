package cpu

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"folio/gpu"
	"folio/models/gguf"
)

// attendCase is one layer's Attend over a batch of sequences of a paged
// cache whose earlier positions hold random K/V.
type attendCase struct {
	spec    gpu.KVSpec
	batch   gpu.Batch
	pos     []int32
	slots   []int32
	q, k, v []float32 // the batch's projections
	past    [][]float32
	wo      []byte
	woType  gguf.TensorType
	heads   int
	dim     int // Wo's rows
}

// newAttendCase makes a batch of seqs (Pos, Len) after `gap` rows of no
// sequence, which are rotated and stored (into blocks of no sequence) all
// the same.
func newAttendCase(t *testing.T, r *rand.Rand, kvType, woType gguf.TensorType, seqs []seqShape, gap int) *attendCase {
	const bs, kvh, group, hd, dim = 8, 2, 4, 32, 64 // Q4_K needs heads·hd a multiple of 256
	c := &attendCase{woType: woType, heads: kvh * group, dim: dim}
	need := 0
	for _, s := range seqs {
		need += (s.pos + s.len + bs - 1) / bs
	}
	ids := r.Perm(need + (gap+bs-1)/bs + 2)
	c.spec = gpu.KVSpec{Layers: 2, Blocks: len(ids), BlockSize: bs, KVHeads: kvh, HeadDim: hd, Type: kvType}
	c.batch.BlockSize = bs
	row := gap
	for _, s := range seqs {
		nb := (s.pos + s.len + bs - 1) / bs
		blocks := make([]int32, nb)
		for i := range blocks {
			blocks[i], ids = int32(ids[0]), ids[1:]
		}
		c.batch.Seqs = append(c.batch.Seqs, gpu.Seq{Start: row, Len: s.len, Pos: s.pos, Blocks: blocks})
		c.past = append(c.past, randFloats(r, s.pos*kvh*hd, 1))
		row += s.len
	}
	c.pos, c.slots = c.batch.Positions(nil), c.batch.Slots(nil)
	for i := range gap {
		c.pos[i] = int32(3 * i)
		c.slots[i] = int32(ids[i/bs]*bs + i%bs)
	}
	c.q = randFloats(r, row*c.heads*hd, 1)
	c.k = randFloats(r, row*kvh*hd, 1)
	c.v = randFloats(r, row*kvh*hd, 1)
	c.wo, _ = quantWeight(t, r, woType, dim, c.heads*hd)
	return c
}

// attendRun is a case's tensors on one backend, ready for Attend.
type attendRun struct {
	a     gpu.Attend
	cache gpu.KVCache
}

func (c *attendCase) on(t *testing.T, b *Backend) *attendRun {
	t.Helper()
	cache, err := b.NewKVCache(c.spec)
	if err != nil {
		t.Fatal(err)
	}
	w := c.spec.KVHeads * c.spec.HeadDim
	for i, s := range c.batch.Seqs {
		if s.Pos == 0 {
			continue
		}
		slots := make([]int32, s.Pos)
		for p := range slots {
			slots[p] = s.Blocks[p/c.spec.BlockSize]*int32(c.spec.BlockSize) + int32(p%c.spec.BlockSize)
		}
		b.WriteKV(cache, 1, newAct(t, b, s.Pos, w, c.past[i]), newAct(t, b, s.Pos, w, slices.Clone(c.past[i])), slots)
	}
	rows, qcols := len(c.pos), c.heads*c.spec.HeadDim
	return &attendRun{cache: cache, a: gpu.Attend{
		Q: newAct(t, b, rows, qcols, slices.Clone(c.q)), K: newAct(t, b, rows, w, slices.Clone(c.k)),
		V: newAct(t, b, rows, w, slices.Clone(c.v)), Att: newAct(t, b, rows, qcols, nil),
		Out: newAct(t, b, rows, c.dim, nil), Wo: newWeight(t, b, c.woType, c.dim, qcols, c.wo),
		KV: cache, Layer: 1, Batch: &c.batch, Pos: c.pos, Slots: c.slots,
		Rope: &gpu.Rope{HeadDim: c.spec.HeadDim, Dims: c.spec.HeadDim, Base: 10000, Scale: 1},
		Opts: gpu.AttnOpts{Scale: 0.17},
	}}
}

// state is everything Attend writes: Q and K rotated, Att and Out, and
// the cache's bytes.
func (r *attendRun) state(b *Backend) ([][]float32, []byte) {
	var out [][]float32
	for _, x := range []gpu.Tensor{r.a.Q, r.a.K, r.a.Att, r.a.Out} {
		out = append(out, download(b, x))
	}
	sp := r.cache.Spec()
	cache := make([]byte, int64(sp.Blocks)*sp.BlockBytes())
	for blk := range sp.Blocks {
		b.ReadBlock(r.cache, int32(blk), cache[int64(blk)*sp.BlockBytes():][:sp.BlockBytes()])
	}
	return out, cache
}

// The fused Attend writes exactly what its five ops do, at every SIMD
// level, for decode rows, a prompt of several tiles, a short prompt and
// rows of no sequence, over F16, F32 and Q8_0 caches and every kind of Wo.
func TestAttendEqualsFiveOps(t *testing.T) {
	fused, ops := New(testThreads), New(testThreads)
	defer fused.Close()
	defer ops.Close()
	seqs := []seqShape{{0, 37}, {5, 4}}
	for i := range 14 {
		seqs = append(seqs, seqShape{3 + 11*i, 1})
	}
	r := rand.New(rand.NewPCG(41, 42))
	for _, l := range supportedLevels() {
		fused.k, ops.k = kernelsAt(l), kernelsAt(l)
		for _, kvType := range []gguf.TensorType{gguf.TypeF16, gguf.TypeF32, gguf.TypeQ8_0} {
			for _, woType := range []gguf.TensorType{gguf.TypeQ8_0, gguf.TypeQ4_K, gguf.TypeF16, gguf.TypeF32} {
				for _, gap := range []int{0, 3} {
					name := fmt.Sprintf("%v/kv %v/wo %v/gap %d", l, kvType, woType, gap)
					c := newAttendCase(t, r, kvType, woType, seqs, gap)
					got, want := c.on(t, fused), c.on(t, ops)
					_, simd := kernelFor(woType, l)
					if did := fused.attendFused(&got.a); did != simd {
						t.Fatalf("%s: fused %v, want %v", name, did, simd)
					} else if !did {
						fused.Attend(&got.a)
					}
					gpu.AttendOps(ops, &want.a)
					gs, gc := got.state(fused)
					ws, wc := want.state(ops)
					for i, what := range []string{"Q", "K", "Att", "Out"} {
						if j := firstDiff(gs[i], ws[i]); j >= 0 {
							t.Fatalf("%s: %s differs at %d: %v fused, %v by five ops", name, what, j, gs[i][j], ws[i][j])
						}
					}
					if !bytes.Equal(gc, wc) {
						t.Fatalf("%s: the caches differ", name)
					}
				}
			}
		}
	}
}

func firstDiff(a, b []float32) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// Attend falls back to its five ops when a batch has too few tiles to
// split by sequence, and allocates nothing in either form.
func TestAttendFewTilesAndNoAllocs(t *testing.T) {
	b := newTestBackend(t)
	r := rand.New(rand.NewPCG(43, 44))
	for _, seqs := range [][]seqShape{{{9, 1}, {20, 1}}, {{9, 1}, {20, 1}, {1, 1}, {2, 1}, {3, 1}, {4, 1}, {5, 1}, {6, 1}, {7, 1}, {8, 1}, {9, 1}, {30, 1}}} {
		c := newAttendCase(t, r, gguf.TypeF16, gguf.TypeQ8_0, seqs, 0)
		run := c.on(t, b)
		fuses := len(seqs) >= fusedTilesPerThread*testThreads && b.k.level > levelScalar
		if did := b.attendFused(&run.a); did != fuses {
			t.Fatalf("%d sequences: fused %v, want %v", len(seqs), did, fuses)
		}
		if a := steadyAllocs(func() { b.Attend(&run.a) }); a != 0 {
			t.Errorf("%d sequences: Attend allocates %v times per call", len(seqs), a)
		}
	}
}

// Attend with sinks is its five ops' result, at every SIMD level: the
// fused path gives its kernels the sinks, as Attention does.
func TestAttendWithSinks(t *testing.T) {
	fused, ops := New(testThreads), New(testThreads)
	defer fused.Close()
	defer ops.Close()
	seqs := []seqShape{{0, 37}, {5, 4}}
	for i := range 14 {
		seqs = append(seqs, seqShape{3 + 11*i, 1})
	}
	r := rand.New(rand.NewPCG(47, 48))
	for _, l := range supportedLevels() {
		fused.k, ops.k = kernelsAt(l), kernelsAt(l)
		c := newAttendCase(t, r, gguf.TypeF16, gguf.TypeQ8_0, seqs, 0)
		got, want := c.on(t, fused), c.on(t, ops)
		sinks := gpu.QuantizeRows(gguf.TypeF32, 1, c.heads, randFloats(r, c.heads, 4))
		got.a.Opts.Sinks = newWeight(t, fused, gguf.TypeF32, 1, c.heads, sinks)
		want.a.Opts.Sinks = newWeight(t, ops, gguf.TypeF32, 1, c.heads, sinks)
		fused.Attend(&got.a)
		gpu.AttendOps(ops, &want.a)
		gs, _ := got.state(fused)
		ws, _ := want.state(ops)
		for i, what := range []string{"Q", "K", "Att", "Out"} {
			if j := firstDiff(gs[i], ws[i]); j >= 0 {
				t.Fatalf("%v: %s differs at %d: %v by Attend, %v by five ops", l, what, j, gs[i][j], ws[i][j])
			}
		}
	}
}
