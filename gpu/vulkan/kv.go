package vulkan

import (
	"fmt"
	"sync/atomic"

	"folio/gpu"
	"folio/models/gguf"
)

var (
	_ gpu.BlockIO    = (*Backend)(nil)
	_ gpu.KVGrower   = (*Backend)(nil)
	_ gpu.FreeMemory = (*Backend)(nil)
)

// KVCache is the paged K/V pool, a buffer a layer (so that only one
// layer's K and V must fit the device's maxStorageBufferRange, not the
// pool's), each laid out as gpu/cpu's and gpu/cuda's layers: its K then
// its V, each Blocks·BlockSize slots head-major within a block (head h of
// the slot at offset o of block B at element ((B·KVHeads + h)·BlockSize +
// o)·HeadDim). A block of one layer's K (or V) is one run of
// BlockSize·KVHeads·HeadDim elements, already in gpu.BlockIO's canonical
// layout. F16 and F32 pools; a Q8_0 pool is not supported yet.
type KVCache struct {
	spec     gpu.KVSpec
	bufs     []*buffer // a layer's K then V
	layer    int64     // bytes of one layer's K (or V)
	blockRun int64     // bytes of one block of one layer's K (or V)
	// shown is spec for Spec, which any goroutine may call while the op
	// goroutine grows the pool.
	shown atomic.Pointer[gpu.KVSpec]
}

func (c *KVCache) Spec() gpu.KVSpec { return *c.shown.Load() }

// NewKVCache allocates the pool of spec, zeroed.
func (b *Backend) NewKVCache(spec gpu.KVSpec) (gpu.KVCache, error) {
	if err := spec.Check(); err != nil {
		return nil, err
	}
	switch {
	case spec.Type != gguf.TypeF16 && spec.Type != gguf.TypeF32:
		return nil, fmt.Errorf("%w: vulkan: a %v K/V cache (use f16 or f32)", gpu.ErrUnsupported, spec.Type)
	case spec.Type == gguf.TypeF16 && spec.HeadDim%2 != 0:
		return nil, fmt.Errorf("%w: vulkan: an f16 K/V cache needs heads of an even number of elements, and this model's have %d", gpu.ErrUnsupported, spec.HeadDim)
	}
	c := &KVCache{spec: spec, blockRun: int64(spec.BlockSize) * spec.RowBytes()}
	c.layer = int64(spec.Blocks) * c.blockRun
	var err error
	if c.bufs, err = b.kvBuffers(spec.Layers, c.layer); err != nil {
		return nil, err
	}
	for _, buf := range c.bufs {
		b.zero(buf)
	}
	c.shown.Store(&spec)
	return c, nil
}

// kvBuffers allocates layers buffers of a layer's K and V, layer bytes
// each, or none.
func (b *Backend) kvBuffers(layers int, layer int64) ([]*buffer, error) {
	bufs := make([]*buffer, 0, layers)
	for l := range layers {
		buf, err := b.newBuffer(2*layer, false, fmt.Sprintf("layer %d of the K/V cache", l))
		if err != nil {
			for _, done := range bufs { // no command uses them yet
				b.freeBuffer(done)
			}
			return nil, fmt.Errorf("%w; lower num_ctx or FOLIO_KV_MEMORY", err)
		}
		bufs = append(bufs, buf)
	}
	return bufs, nil
}

// GrowKVCache grows c in place to blocks blocks: new buffers a layer, each
// zeroed and the old layer's K and V copied to the start of the new K and
// V (a block is one run in each, so its offset stays), then, once the
// copies ran, the old buffers freed. Both pools are held while they copy.
func (b *Backend) GrowKVCache(c gpu.KVCache, blocks int) error {
	vc := b.kv(c)
	spec, same, err := vc.spec.Grown("vulkan", blocks)
	if same || err != nil {
		return err
	}
	if err := spec.Check(); err != nil {
		return err
	}
	layer := int64(blocks) * vc.blockRun
	bufs, err := b.kvBuffers(spec.Layers, layer)
	if err != nil {
		return err
	}
	for l, buf := range bufs {
		b.zero(buf)
		b.copyBuffer(vc.bufs[l], 0, buf, 0, vc.layer)
		b.copyBuffer(vc.bufs[l], vc.layer, buf, layer, vc.layer)
	}
	b.flush()
	for _, old := range vc.bufs {
		b.freeBuffer(old)
	}
	vc.spec, vc.bufs, vc.layer = spec, bufs, layer
	vc.shown.Store(&spec)
	return nil
}

func (b *Backend) kv(c gpu.KVCache) *KVCache {
	vc, ok := c.(*KVCache)
	if !ok {
		panic(fmt.Sprintf("vulkan: K/V cache %T is not a vulkan cache", c))
	}
	return vc
}

// WriteKV stores row i of k and v into layer's K and V at slot slots[i],
// rounded to halves ties-to-even in an F16 pool.
func (b *Backend) WriteKV(c gpu.KVCache, layer int, k, v gpu.Tensor, slots []int32) {
	vc, vk, vv := b.kv(c), b.f32(k), b.f32(v)
	s := vc.spec
	if layer < 0 || layer >= s.Layers {
		panic(fmt.Sprintf("vulkan: WriteKV: layer %d of a %d-layer cache", layer, s.Layers))
	}
	width := s.KVHeads * s.HeadDim
	checkShape("WriteKV", "k", vk, len(slots), width)
	checkShape("WriteKV", "v", vv, len(slots), width)
	s.CheckSlots("vulkan: WriteKV", slots)
	if len(slots) == 0 {
		return
	}
	sb := b.putInts(&b.slots, slots, "K/V slots")
	layerElems := int64(s.Blocks) * int64(s.BlockSize) * int64(width)
	n, f16 := int64(len(slots))*int64(width), uint32(0)
	if s.Type == gguf.TypeF16 {
		n, f16 = n/2, 1
	}
	b.dispatch(kWriteKV, b.grid(ceilDiv(n, elementwiseGroup), 1), []uint32{uint32(n), uint32(width), uint32(s.BlockSize),
		uint32(s.HeadDim), 0, uint32(layerElems), f16}, vk.buf, vv.buf, sb, vc.bufs[layer])
}

// CopyBlocks copies every layer's K and V of each copy's Src block to
// its Dst block, in order: two buffer copies a layer.
func (b *Backend) CopyBlocks(c gpu.KVCache, copies []gpu.BlockCopy) {
	vc := b.kv(c)
	for _, cp := range copies {
		if cp.Src < 0 || cp.Dst < 0 || int(cp.Src) >= vc.spec.Blocks || int(cp.Dst) >= vc.spec.Blocks {
			panic(fmt.Sprintf("vulkan: CopyBlocks: %d → %d in a pool of %d blocks", cp.Src, cp.Dst, vc.spec.Blocks))
		}
		for run := range 2 * vc.spec.Layers {
			buf, off := vc.run(run)
			b.copyBuffer(buf, off+int64(cp.Src)*vc.blockRun, buf, off+int64(cp.Dst)*vc.blockRun, vc.blockRun)
		}
	}
}

// ReadBlock copies block's K and V of every layer into dst, in the
// canonical layout, once every queued op is done.
func (b *Backend) ReadBlock(c gpu.KVCache, block int32, dst []byte) {
	vc := b.blockIO("ReadBlock", c, block, len(dst))
	for run := range 2 * vc.spec.Layers {
		buf, off := vc.run(run)
		b.read(dst[int64(run)*vc.blockRun:int64(run+1)*vc.blockRun], buf, off+int64(block)*vc.blockRun)
	}
}

// WriteBlock copies src, in the canonical layout, into block's K and V
// of every layer, after the ops queued before it.
func (b *Backend) WriteBlock(c gpu.KVCache, block int32, src []byte) {
	vc := b.blockIO("WriteBlock", c, block, len(src))
	for run := range 2 * vc.spec.Layers {
		buf, off := vc.run(run)
		b.write(buf, off+int64(block)*vc.blockRun, src[int64(run)*vc.blockRun:int64(run+1)*vc.blockRun])
	}
}

// run is where run r of the canonical layout (layer r/2's K, or V when r
// is odd) starts: its layer's buffer and the offset in it.
func (c *KVCache) run(r int) (*buffer, int64) { return c.bufs[r/2], int64(r%2) * c.layer }

func (b *Backend) blockIO(op string, c gpu.KVCache, block int32, n int) *KVCache {
	vc := b.kv(c)
	if block < 0 || int(block) >= vc.spec.Blocks || int64(n) != vc.spec.BlockBytes() {
		panic(fmt.Sprintf("vulkan: %s: block %d of %d, %d bytes for %d", op, block, vc.spec.Blocks, n, vc.spec.BlockBytes()))
	}
	return vc
}
