package cpu

import (
	"encoding/binary"
	"fmt"
	"sync"
	"unsafe"

	"folio/gpu"
	"folio/models/gguf"
)

// KVCache is the CPU's paged K/V pool. Each layer's K and V are one flat
// slice of Blocks blocks, head-major within a block: head h of the slot at
// offset o of block B is at [((B·KVHeads + h)·BlockSize + o)·HeadDim,
// +HeadDim), so that attention streams one head of a block as one run of
// BlockSize·HeadDim elements. Exactly one of k16/v16 (F16) and k32/v32
// (F32) is set, indexed by layer.
type KVCache struct {
	spec     gpu.KVSpec
	k16, v16 [][]uint16
	k32, v32 [][]float32
	width    int // KVHeads · HeadDim: the elements of one slot
}

// offset is where head h of slot s starts in a layer's K or V.
func (c *KVCache) offset(s, h int) int {
	bs := c.spec.BlockSize
	return ((s/bs*c.spec.KVHeads+h)*bs + s%bs) * c.spec.HeadDim
}

// Spec is the pool's shape.
func (c *KVCache) Spec() gpu.KVSpec { return c.spec }

// NewKVCache allocates the paged K/V pool of spec, zeroed. A pool whose
// size overflows, or that Go cannot allocate, is an error wrapping
// gpu.ErrOutOfMemory.
func (b *Backend) NewKVCache(spec gpu.KVSpec) (kv gpu.KVCache, err error) {
	if err := spec.Check(); err != nil {
		return nil, err
	}
	perLayer, ok := mulInts(spec.Blocks, spec.BlockSize, spec.KVHeads, spec.HeadDim)
	_, okAll := mulInts(perLayer, 2*spec.Layers, 4)
	if !ok || !okAll || perLayer > maxElems {
		return nil, fmt.Errorf("%w: cpu: a K/V cache of %d layers × %d blocks × %d slots × %d×%d elements overflows; lower the context size or the number of blocks",
			gpu.ErrOutOfMemory, spec.Layers, spec.Blocks, spec.BlockSize, spec.KVHeads, spec.HeadDim)
	}
	if ram := physicalMemory(); ram > 0 && spec.Bytes() > ram {
		return nil, fmt.Errorf("%w: cpu: a K/V cache of %d bytes is more than this machine's %d bytes of memory; lower the context size or the number of blocks",
			gpu.ErrOutOfMemory, spec.Bytes(), ram)
	}
	// make panics (recoverably) when a size is past what the runtime can
	// ever allocate; memory that the OS refuses later is beyond recovery.
	defer func() {
		if r := recover(); r != nil {
			kv, err = nil, fmt.Errorf("%w: cpu: cannot allocate a K/V cache of %d bytes (%v); lower the context size or the number of blocks",
				gpu.ErrOutOfMemory, spec.Bytes(), r)
		}
	}()
	c := &KVCache{spec: spec, width: spec.KVHeads * spec.HeadDim}
	if spec.Type == gguf.TypeF16 {
		c.k16, c.v16 = make([][]uint16, spec.Layers), make([][]uint16, spec.Layers)
		for l := range spec.Layers {
			c.k16[l], c.v16[l] = alignedU16(perLayer), alignedU16(perLayer)
		}
	} else {
		c.k32, c.v32 = make([][]float32, spec.Layers), make([][]float32, spec.Layers)
		for l := range spec.Layers {
			c.k32[l], c.v32[l] = alignedF32(perLayer), alignedF32(perLayer)
		}
	}
	b.touch(c)
	return c, nil
}

// touch writes every page of c's K and V once, over the pool, as llama.cpp
// clears its K/V buffer at load: a page's first write costs a fault and
// its zeroing, which otherwise fell on decode steps as sequences reached
// fresh blocks (WriteKV 3 → 20 µs a call when no huge pages were free).
func (b *Backend) touch(c *KVCache) {
	t := &touchTask{}
	add := func(p unsafe.Pointer, n int) {
		all := unsafe.Slice((*byte)(p), n)
		for len(all) > 0 {
			m := min(len(all), hugePage)
			t.spans = append(t.spans, all[:m])
			all = all[m:]
		}
	}
	for l := range c.spec.Layers {
		if c.k16 != nil {
			add(unsafe.Pointer(&c.k16[l][0]), 2*len(c.k16[l]))
			add(unsafe.Pointer(&c.v16[l][0]), 2*len(c.v16[l]))
		} else {
			add(unsafe.Pointer(&c.k32[l][0]), 4*len(c.k32[l]))
			add(unsafe.Pointer(&c.v32[l][0]), 4*len(c.v32[l]))
		}
	}
	b.pool.run(t, len(t.spans), hugePage)
}

// touchTask zeroes spans of memory.
type touchTask struct{ spans [][]byte }

func (t *touchTask) run(_ *worker, lo, hi int) {
	for _, s := range t.spans[lo:hi] {
		clear(s)
	}
}

// kv returns c as this package's KVCache, panicking on another backend's.
func (b *Backend) kv(c gpu.KVCache) *KVCache {
	cc, ok := c.(*KVCache)
	if !ok {
		panic(fmt.Sprintf("cpu: K/V cache %T is not a cpu cache", c))
	}
	return cc
}

func (c *KVCache) checkLayer(op string, layer int) {
	if layer < 0 || layer >= c.spec.Layers {
		panic(fmt.Sprintf("cpu: %s: layer %d of a %d-layer cache", op, layer, c.spec.Layers))
	}
}

// WriteKV stores row i of k and v into layer's K and V at slot slots[i],
// converting to the cache's type (F16 rounds to nearest even).
func (b *Backend) WriteKV(c gpu.KVCache, layer int, k, v gpu.Tensor, slots []int32) {
	cc := b.kv(c)
	b.checkWriteKV(cc, layer, k, v, slots)
	t := &b.writekv
	*t = writeKVTask{c: cc, layer: layer, k: b.f32(k), v: b.f32(v), slots: slots, simd: b.level > levelScalar}
	b.pool.run(t, len(slots), elemCost(b.level, 2*cc.width))
	*t = writeKVTask{}
}

// checkWriteKV panics, as WriteKV does, unless k and v have a row for
// each slot of layer's cache.
func (b *Backend) checkWriteKV(cc *KVCache, layer int, k, v gpu.Tensor, slots []int32) {
	cc.checkLayer("WriteKV", layer)
	checkShape("WriteKV", "k", b.tensor(k), len(slots), cc.width)
	checkShape("WriteKV", "v", b.tensor(v), len(slots), cc.width)
	cc.spec.CheckSlots("cpu: WriteKV", slots)
}

type writeKVTask struct {
	c     *KVCache
	layer int
	k, v  []float32
	slots []int32
	simd  bool // convert to F16 in C
}

func (t *writeKVTask) run(_ *worker, lo, hi int) {
	w, d, bs := t.c.width, t.c.spec.HeadDim, t.c.spec.BlockSize
	if t.simd && t.c.k16 != nil {
		writeKVX(t.k[lo*w:hi*w], t.v[lo*w:hi*w], t.slots[lo:hi], t.c.k16[t.layer], t.c.v16[t.layer], bs, t.c.spec.KVHeads, d)
		return
	}
	for i := lo; i < hi; i++ {
		at := t.c.offset(int(t.slots[i]), 0) // head h is h·BlockSize·HeadDim further
		for h := 0; h < w; h += d {
			k, v := t.k[i*w+h:i*w+h+d], t.v[i*w+h:i*w+h+d]
			if t.c.k16 != nil {
				kd, vd := t.c.k16[t.layer][at:at+d], t.c.v16[t.layer][at:at+d]
				for j := range d {
					kd[j] = gguf.F32ToF16(k[j])
					vd[j] = gguf.F32ToF16(v[j])
				}
			} else {
				copy(t.c.k32[t.layer][at:at+d], k)
				copy(t.c.v32[t.layer][at:at+d], v)
			}
			at += bs * d
		}
	}
}

// CopyBlocks copies every layer's K and V of block Src to block Dst, for
// each copy in order.
func (b *Backend) CopyBlocks(c gpu.KVCache, copies []gpu.BlockCopy) {
	cc := b.kv(c)
	for _, cp := range copies {
		if cp.Src < 0 || int(cp.Src) >= cc.spec.Blocks || cp.Dst < 0 || int(cp.Dst) >= cc.spec.Blocks {
			panic(fmt.Sprintf("cpu: CopyBlocks: %d → %d in a pool of %d blocks", cp.Src, cp.Dst, cc.spec.Blocks))
		}
	}
	if len(copies) == 0 {
		return
	}
	// Layers are independent, so each thread takes whole layers and applies
	// every copy to them in order.
	t := &b.copies
	*t = copyBlocksTask{c: cc, copies: copies}
	b.pool.run(t, cc.spec.Layers, len(copies)*cc.spec.BlockSize*cc.width)
	*t = copyBlocksTask{}
}

type copyBlocksTask struct {
	c      *KVCache
	copies []gpu.BlockCopy
}

func (t *copyBlocksTask) run(_ *worker, lo, hi int) {
	n := t.c.spec.BlockSize * t.c.width // elements per block
	for l := lo; l < hi; l++ {
		for _, cp := range t.copies {
			s, d := int(cp.Src)*n, int(cp.Dst)*n
			if t.c.k16 != nil {
				copy(t.c.k16[l][d:d+n], t.c.k16[l][s:s+n])
				copy(t.c.v16[l][d:d+n], t.c.v16[l][s:s+n])
			} else {
				copy(t.c.k32[l][d:d+n], t.c.k32[l][s:s+n])
				copy(t.c.v32[l][d:d+n], t.c.v32[l][s:s+n])
			}
		}
	}
}

// f16Table maps every half to its float32 (256 KiB), as ggml's
// ggml_table_f32_f16 does: a load is cheaper than decoding the bits.
var (
	f16Table     *[1 << 16]float32
	f16TableOnce sync.Once
)

func initF16Table() {
	f16TableOnce.Do(func() {
		t := new([1 << 16]float32)
		for h := range t {
			t[h] = gguf.F16ToF32(uint16(h))
		}
		f16Table = t
	})
}

// f16RowToF32 decodes the little-endian halves of src into out.
func f16RowToF32(src []byte, out []float32) {
	tab := f16Table
	src = src[:2*len(out)]
	if littleEndian && uintptr(unsafe.Pointer(unsafe.SliceData(src)))%2 == 0 {
		h := unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(src))), len(out))
		for i, v := range h {
			out[i] = tab[v]
		}
		return
	}
	for i := range out {
		out[i] = tab[binary.LittleEndian.Uint16(src[2*i:])]
	}
}

// physicalMemory is the machine's RAM in bytes, 0 if unknown: a size past
// it cannot be allocated, and asking Go to would kill the process.
func physicalMemory() int64 {
	_, total, ok := gpu.HostMemory()
	if !ok {
		return 0
	}
	return total
}
