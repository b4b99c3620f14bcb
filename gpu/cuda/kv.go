package cuda

import (
	"fmt"
	"slices"
	"sync/atomic"
	"unsafe"

	"folio/gpu"
)

var (
	_ gpu.BlockIO    = (*Backend)(nil)
	_ gpu.KVGrower   = (*Backend)(nil)
	_ gpu.FreeMemory = (*Backend)(nil)
)

// KVCache is the paged K/V pool in one device allocation: for each layer
// its K then its V, each Blocks·BlockSize slots laid out head-major within
// a block as gpu/cpu's are (head h of the slot at offset o of block B at
// ((B·KVHeads + h)·BlockSize + o)·HeadDim). A block of one layer's K (or
// V) is one run of BlockSize·KVHeads·HeadDim elements, already in the
// canonical layout of gpu.BlockIO.
type KVCache struct {
	spec      gpu.KVSpec
	ptr       uint64
	layer     int64 // bytes of one layer's K (or V)
	blockRun  int64 // bytes of one block of one layer's K (or V)
	width     int   // KVHeads · HeadDim
	blockSize int
	// shown is spec for Spec, which any goroutine may call while the op
	// goroutine grows the pool.
	shown atomic.Pointer[gpu.KVSpec]
}

func (c *KVCache) Spec() gpu.KVSpec { return *c.shown.Load() }

// k and v are the device addresses of layer's K and V.
func (c *KVCache) k(layer int) uint64 { return c.ptr + uint64(2*int64(layer)*c.layer) }
func (c *KVCache) v(layer int) uint64 { return c.ptr + uint64((2*int64(layer)+1)*c.layer) }

// NewKVCache allocates the pool of spec in device memory, zeroed.
func (b *Backend) NewKVCache(spec gpu.KVSpec) (gpu.KVCache, error) {
	if err := spec.Check(); err != nil {
		return nil, err
	}
	if err := checkKV(spec); err != nil {
		return nil, err
	}
	c := &KVCache{spec: spec, width: spec.KVHeads * spec.HeadDim, blockSize: spec.BlockSize}
	c.blockRun = int64(spec.BlockSize) * spec.RowBytes()
	c.layer = int64(spec.Blocks) * c.blockRun
	b.enter()
	defer b.leave()
	var err error
	if c.ptr, err = b.alloc(spec.Bytes(), "the K/V cache"); err != nil {
		return nil, fmt.Errorf("%w; lower num_ctx or FOLIO_KV_MEMORY", err)
	}
	if err := b.d.check("cuMemsetD8Async", b.d.MemsetD8Async(c.ptr, 0, uint64(spec.Bytes()), b.stream)); err != nil {
		return nil, err
	}
	c.shown.Store(&spec)
	return c, nil
}

// GrowKVCache grows c in place to blocks blocks: a new allocation, zeroed,
// each layer's K and V copied to the start of their new runs (a block keeps
// its offset in them), then the old allocation freed once the copies ran.
// Both are held meanwhile. A recorded CUDA graph, whose launches name the
// old pool, is dropped.
func (b *Backend) GrowKVCache(c gpu.KVCache, blocks int) error {
	cc := b.kv(c)
	spec, same, err := cc.spec.Grown("cuda", blocks)
	if same || err != nil {
		return err
	}
	if err := spec.Check(); err != nil {
		return err
	}
	b.enter()
	defer b.leave()
	p, err := b.alloc(spec.Bytes(), "the K/V cache") // breaks the graph's match first
	if err != nil {
		return fmt.Errorf("%w; lower num_ctx or FOLIO_KV_MEMORY", err)
	}
	b.d.must("cuMemsetD8Async", b.d.MemsetD8Async(p, 0, uint64(spec.Bytes()), b.stream))
	layer := int64(blocks) * cc.blockRun
	for run := range 2 * int64(spec.Layers) {
		b.d.must("cuMemcpyDtoDAsync", b.d.MemcpyDtoDAsync(p+uint64(run*layer), cc.ptr+uint64(run*cc.layer), uint64(cc.layer), b.stream))
	}
	b.dropGraph()
	b.d.must("cuStreamSynchronize", b.d.StreamSynchronize(b.stream))
	b.d.must("cuMemFree", b.d.MemFree(cc.ptr))
	b.used -= b.allocs[cc.ptr]
	delete(b.allocs, cc.ptr)
	cc.spec, cc.ptr, cc.layer = spec, p, layer
	cc.shown.Store(&spec)
	return nil
}

func (b *Backend) kv(c gpu.KVCache) *KVCache {
	cc, ok := c.(*KVCache)
	if !ok {
		panic(fmt.Sprintf("cuda: K/V cache %T is not a cuda cache", c))
	}
	return cc
}

func (c *KVCache) checkLayer(op string, layer int) {
	if layer < 0 || layer >= c.spec.Layers {
		panic(fmt.Sprintf("cuda: %s: layer %d of a %d-layer cache", op, layer, c.spec.Layers))
	}
}

// WriteKV stores row i of k and v into layer's K and V at slot slots[i].
func (b *Backend) WriteKV(c gpu.KVCache, layer int, k, v gpu.Tensor, slots []int32) {
	cc, ck, cv := b.kv(c), b.f32(k), b.f32(v)
	cc.checkLayer("WriteKV", layer)
	checkShape("WriteKV", "k", ck, len(slots), cc.width)
	checkShape("WriteKV", "v", cv, len(slots), cc.width)
	cc.spec.CheckSlots("cuda: WriteKV", slots)
	if len(slots) == 0 {
		return
	}
	b.enter()
	defer b.leave()
	ps := b.put(&b.slots, slots, "K/V slots") // before the list: put may launch (graph.go)
	b.a.reset().ptr(ck.ptr).ptr(cv.ptr).ptr(ps).ptr(cc.k(layer)).ptr(cc.v(layer)).
		i32(len(slots)).i32(cc.spec.KVHeads).i32(cc.spec.HeadDim).i32(cc.blockSize)
	kern := kvTypeKernel(cc.spec.Type, kWriteKVF16, kWriteKVF32)
	b.launch(kern, elementwiseDims(kern, int64(len(slots))*int64(cc.width)))
}

// attentionMeta lays out what the attention kernel reads per row (see
// kernels/attention.cu): the first position it attends to under o, how
// many from there, and where its sequence's block table starts in the
// block list that follows the 3·rows entries, then the tables, each from
// the block of its sequence's earliest position read on. It checks the
// batch as gpu/cpu does: only the blocks o lets the rows read need be in
// the pool (a sliding window's earlier entries may be -1).
func attentionMeta(dst []int32, rows int, spec gpu.KVSpec, batch *gpu.Batch, o gpu.AttnOpts) []int32 {
	if batch.BlockSize != spec.BlockSize {
		panic(fmt.Sprintf("cuda: Attention: batch block size %d, cache block size %d", batch.BlockSize, spec.BlockSize))
	}
	if err := batch.Check(); err != nil {
		panic("cuda: Attention: " + err.Error())
	}
	bs := spec.BlockSize
	dst = slices.Grow(dst[:0], 3*rows)[:3*rows]
	clear(dst)
	for si, s := range batch.Seqs {
		if s.Start+s.Len > rows {
			panic(fmt.Sprintf("cuda: Attention: sequence %d has rows %d … %d of a %d-row q", si, s.Start, s.Start+s.Len-1, rows))
		}
		end := s.Pos + s.Len - 1
		first, _ := o.Span(s.Pos, end) // the earliest position any row reads: the first row's
		used := s.Blocks[first/bs : (end+bs)/bs]
		for _, blk := range used {
			if blk < 0 || int(blk) >= spec.Blocks {
				panic(fmt.Sprintf("cuda: Attention: sequence %d reads block %d of a %d-block pool", si, blk, spec.Blocks))
			}
		}
		tab := int32(len(dst) - 3*rows - first/bs) // blocks[tab + p/bs] is position p's block
		dst = append(dst, used...)
		for i := range s.Len {
			f, l := o.Span(s.Pos+i, end)
			r := 3 * (s.Start + i)
			dst[r], dst[r+1], dst[r+2] = int32(f), int32(l-f+1), tab
		}
	}
	return dst
}

// Attention is paged attention for one layer (kernels/attention.cu):
// causal, within a sliding window or bidirectional as o says, its scores
// soft-capped and scaled, with o's sinks.
func (b *Backend) Attention(dst, q gpu.Tensor, c gpu.KVCache, layer int, batch *gpu.Batch, o gpu.AttnOpts) {
	cc, cq, cd := b.kv(c), b.f32(q), b.act(dst)
	cc.checkLayer("Attention", layer)
	spec := cc.spec
	if cq.cols%spec.HeadDim != 0 || cq.cols/spec.HeadDim%spec.KVHeads != 0 {
		panic(fmt.Sprintf("cuda: Attention: q %v is not a multiple of %d K/V heads of %d", cq, spec.KVHeads, spec.HeadDim))
	}
	checkShape("Attention", "dst", cd, cq.rows, cq.cols)
	b.host = attentionMeta(b.host, cq.rows, spec, batch, o)
	b.enter()
	defer b.leave()
	heads := cq.cols / spec.HeadDim
	var invCap float32
	if o.SoftCap > 0 {
		invCap = 1 / o.SoftCap
	}
	var sinks uint64
	if o.Sinks != nil {
		cs := b.f32(o.Sinks)
		checkShape("Attention", "sinks", cs, 1, heads)
		sinks = cs.ptr
	}
	meta := b.put(&b.meta, b.host, "attention tables") // before the list: put may launch (graph.go)
	b.a.reset().ptr(cd.ptr).ptr(cq.ptr).ptr(cc.k(layer)).ptr(cc.v(layer)).ptr(meta).
		i32(cq.rows).i32(heads).i32(spec.KVHeads).i32(spec.HeadDim).i32(spec.BlockSize).
		f32(o.Scale).f32(o.SoftCap).f32(invCap).ptr(sinks)
	k := kvTypeKernel(spec.Type, kAttentionF16, kAttentionF32)
	if spec.HeadDim > attHead {
		k = kvTypeKernel(spec.Type, kAttentionF16Wide, kAttentionF32Wide)
	}
	b.launch(k, attentionDims(k, heads, cq.rows))
}

// CopyBlocks copies every layer's K and V of block Src to block Dst, copy
// by copy in order, as device-to-device copies on the stream.
func (b *Backend) CopyBlocks(c gpu.KVCache, copies []gpu.BlockCopy) {
	cc := b.kv(c)
	for _, cp := range copies {
		if cp.Src < 0 || int(cp.Src) >= cc.spec.Blocks || cp.Dst < 0 || int(cp.Dst) >= cc.spec.Blocks {
			panic(fmt.Sprintf("cuda: CopyBlocks: %d → %d in a pool of %d blocks", cp.Src, cp.Dst, cc.spec.Blocks))
		}
	}
	if len(copies) == 0 {
		return
	}
	b.enter()
	defer b.leave()
	b.graphBreak()
	for _, cp := range copies {
		for l := range cc.spec.Layers {
			for _, base := range []uint64{cc.k(l), cc.v(l)} {
				src, dst := base+uint64(int64(cp.Src)*cc.blockRun), base+uint64(int64(cp.Dst)*cc.blockRun)
				b.d.must("cuMemcpyDtoDAsync", b.d.MemcpyDtoDAsync(dst, src, uint64(cc.blockRun), b.stream))
			}
		}
	}
}

// ReadBlock copies block's K and V of every layer into dst in the
// canonical layout: per layer, K's run of the block then V's.
func (b *Backend) ReadBlock(c gpu.KVCache, block int32, dst []byte) {
	b.blockRuns("ReadBlock", c, block, len(dst), func(dev uint64, at, n int) {
		b.d.must("cuMemcpyDtoHAsync", b.d.MemcpyDtoHAsync(unsafe.Pointer(&dst[at]), dev, uint64(n), b.stream))
	})
}

// WriteBlock is ReadBlock's inverse.
func (b *Backend) WriteBlock(c gpu.KVCache, block int32, src []byte) {
	b.blockRuns("WriteBlock", c, block, len(src), func(dev uint64, at, n int) {
		b.d.must("cuMemcpyHtoDAsync", b.d.MemcpyHtoDAsync(dev, unsafe.Pointer(&src[at]), uint64(n), b.stream))
	})
}

// blockRuns calls copy for each run of block in the canonical order (per
// layer, K then V) with its device address, its offset in a host buffer
// of bufLen bytes and its length, then waits for the copies.
func (b *Backend) blockRuns(op string, c gpu.KVCache, block int32, bufLen int, copy func(dev uint64, at, n int)) {
	cc := b.kv(c)
	cc.checkBlock(op, block, bufLen)
	b.enter()
	defer b.leave()
	b.graphBreak()
	at := 0
	for l := range cc.spec.Layers {
		for _, base := range []uint64{cc.k(l), cc.v(l)} {
			copy(base+uint64(int64(block)*cc.blockRun), at, int(cc.blockRun))
			at += int(cc.blockRun)
		}
	}
	b.d.must("cuStreamSynchronize", b.d.StreamSynchronize(b.stream))
}

func (c *KVCache) checkBlock(op string, block int32, n int) {
	if block < 0 || int(block) >= c.spec.Blocks {
		panic(fmt.Sprintf("cuda: %s: block %d of a pool of %d", op, block, c.spec.Blocks))
	}
	if want := c.spec.BlockBytes(); int64(n) != want {
		panic(fmt.Sprintf("cuda: %s: buffer of %d bytes for a block of %d", op, n, want))
	}
}
