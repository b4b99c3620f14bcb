package cuda

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"folio/gpu"
	"folio/models/gguf"
)

// growth is a decode of one sequence through the attention ops only, on
// any backend: per step, Embed of q, k and v by a token id, Rope, WriteKV
// and Attention, then Download. Blocks of one slot make its block table
// outgrow the attention table buffer's first 4 KiB (1024 int32s: 3 for
// the row, 1021 blocks) at position growAt, after the earlier steps have
// become a graph.
type growth struct {
	spec       gpu.KVSpec
	tq, tk, tv gpu.Tensor // [vocab, 2·32], [vocab, 32], [vocab, 32]: F32 tables
	q, k, v    gpu.Tensor // [1, 64], [1, 32], [1, 32]
	out        gpu.Tensor // [1, 64]
	cache      gpu.KVCache
	table      []int32 // the sequence's blocks, in order
	rope       gpu.Rope
}

const (
	growAt     = 1021 // positions 0 … 1021: 1022 blocks
	growStart  = growAt - 5
	growSteps  = 8
	growVocab  = 8
	growBlocks = growAt + growSteps
)

func newGrowth(t *testing.T, be gpu.Backend) *growth {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 29))
	randBytes := func(n int) []byte {
		f := make([]float32, n)
		for i := range f {
			f[i] = 2*rng.Float32() - 1
		}
		return unsafe.Slice((*byte)(unsafe.Pointer(&f[0])), 4*n)
	}
	g := &growth{
		spec: gpu.KVSpec{Layers: 1, Blocks: growBlocks, BlockSize: 1, KVHeads: 1, HeadDim: 32, Type: gguf.TypeF32},
		rope: gpu.Rope{HeadDim: 32, Dims: 32, Base: 10000, Scale: 1},
	}
	var err error
	must := func(x gpu.Tensor, e error) gpu.Tensor {
		if e != nil {
			t.Fatal(e)
		}
		return x
	}
	g.tq = must(be.Weight("tq", gguf.TypeF32, growVocab, 64, randBytes(growVocab*64)))
	g.tk = must(be.Weight("tk", gguf.TypeF32, growVocab, 32, randBytes(growVocab*32)))
	g.tv = must(be.Weight("tv", gguf.TypeF32, growVocab, 32, randBytes(growVocab*32)))
	g.q, g.out = must(be.NewTensor(1, 64)), must(be.NewTensor(1, 64))
	g.k, g.v = must(be.NewTensor(1, 32)), must(be.NewTensor(1, 32))
	if g.cache, err = be.NewKVCache(g.spec); err != nil {
		t.Fatal(err)
	}
	for i := range growBlocks {
		be.(gpu.BlockIO).WriteBlock(g.cache, int32(i), randBytes(int(g.spec.BlockBytes()/4)))
	}
	for i := range growBlocks {
		g.table = append(g.table, int32(growBlocks-1-i))
	}
	return g
}

// step decodes the token at position pos.
func (g *growth) step(be gpu.Backend, pos int) []float32 {
	ids := []int32{int32(pos % growVocab)}
	be.Embed(g.q, g.tq, ids)
	be.Embed(g.k, g.tk, ids)
	be.Embed(g.v, g.tv, ids)
	be.Rope(g.q, []int32{int32(pos)}, &g.rope)
	be.Rope(g.k, []int32{int32(pos)}, &g.rope)
	be.WriteKV(g.cache, 0, g.k, g.v, []int32{g.table[pos]})
	batch := &gpu.Batch{BlockSize: 1, Seqs: []gpu.Seq{{Start: 0, Len: 1, Pos: pos, Blocks: g.table}}}
	be.Attention(g.out, g.q, g.cache, 0, batch, gpu.AttnOpts{Scale: 1 / float32(math.Sqrt(32))})
	res := make([]float32, 64)
	be.Download(res, g.out)
	return res
}

// When a graph-matched step outgrows the attention table buffer, the
// kernels matched so far run eagerly and attention is launched with its
// own parameters: the new table, not the last matched kernel's pointers.
func TestGraphStepKeepsArgumentsWhenATableGrows(t *testing.T) {
	f, c := newFakeGPU(), &fakeCompiler{}
	b, err := open(f.withGraphs(f.driver()), c.compiler(), Options{NoCache: true, Graphs: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	g := newGrowth(t, b)
	kc := g.cache.(*KVCache)
	for pos := growStart; pos < growStart+growSteps; pos++ {
		graphsBefore, from := b.GraphLaunches(), len(f.launches)
		g.step(b, pos)
		if pos == growAt && graphsBefore < 2 {
			t.Fatalf("%d steps ran as graphs before the table grew: the test does not reach its case", graphsBefore)
		}
		want := []uint64{b.tensor(g.out).ptr, b.tensor(g.q).ptr, kc.k(0), kc.v(0), b.meta.ptr,
			1, 2, 1, 32, 1, uint64(math.Float32bits(1 / float32(math.Sqrt(32)))), 0, 0, 0} // no soft-cap, no sinks
		var att []fakeLaunch
		for _, l := range f.launches[from:] {
			if l.fn == b.fn[kAttentionF32] {
				att = append(att, l)
			}
		}
		if len(att) != 1 || !slices.Equal(att[0].params, want) {
			t.Errorf("position %d (%d blocks): attention launched with %v, want %v", pos, pos+1, att, want)
		}
	}
	if b.meta.cap <= 4096 {
		t.Errorf("the attention table buffer holds %d bytes: it never grew", b.meta.cap)
	}
}

// flush relaunches the matched kernels with their own parameters and
// leaves the list an op is building alone, whatever calls it mid-list.
func TestFlushLeavesTheArgumentsBeingBuilt(t *testing.T) {
	f, c := newFakeGPU(), &fakeCompiler{}
	b, err := open(f.withGraphs(f.driver()), c.compiler(), Options{NoCache: true, Graphs: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.g.prev = []launchRec{{k: kAdd, d: elementwiseDims(kAdd, 1), n: 2, vals: [maxArgs]uint64{5, 6}}}
	b.g.deferring, b.g.pos = true, 1
	b.a.reset().ptr(0xa1).ptr(0xa2)
	b.graphBreak() // as an allocation in the middle of an op's list would
	if b.a.n != 2 || b.a.vals[0] != 0xa1 || b.a.vals[1] != 0xa2 {
		t.Errorf("the list being built is now %v (%d)", b.a.vals[:b.a.n], b.a.n)
	}
	if l := f.launches[len(f.launches)-1]; l.fn != b.fn[kAdd] || !slices.Equal(l.params, []uint64{5, 6}) {
		t.Errorf("flush launched %+v", l)
	}
	b.a.i32(3)
	if p := (*[maxArgs]unsafe.Pointer)(b.a.params()); *(*uint64)(p[0]) != 0xa1 || *(*int32)(p[2]) != 3 {
		t.Error("the list's pointers do not point at its values")
	}
}

// A device buffer that grows is freed only once the stream has run what
// was queued before (kernels of the step may still read it).
func TestGrowWaitsForQueuedWork(t *testing.T) {
	for _, graphs := range []bool{false, true} {
		f, c := newFakeGPU(), &fakeCompiler{}
		b, err := open(f.withGraphs(f.driver()), c.compiler(), Options{NoCache: true, Graphs: graphs})
		if err != nil {
			t.Fatal(err)
		}
		g := newGrowth(t, b)
		frees := 0
		free := b.d.MemFree
		b.d.MemFree = func(p uint64) result { frees++; return free(p) }
		for pos := growStart; pos < growStart+growSteps; pos++ {
			g.step(b, pos)
		}
		if frees == 0 || f.freedQueued != 0 {
			t.Errorf("graphs %v: %d frees, %d of them with work queued", graphs, frees, f.freedQueued)
		}
		b.Upload(g.q, make([]float32, 64)) // queued when Close frees
		before := f.freedQueued
		b.Close()
		if f.freedQueued != before {
			t.Errorf("graphs %v: Close freed %d buffers with work queued", graphs, f.freedQueued-before)
		}
	}
}
