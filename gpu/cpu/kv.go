package cpu

import (
	"encoding/binary"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"unsafe"

	"folio/gpu"
	"folio/models/gguf"
)

// KVCache is the CPU's paged K/V pool. Each layer's K and V are one flat
// slice of Blocks blocks, head-major within a block: head h of the slot at
// offset o of block B is at [((B·KVHeads + h)·BlockSize + o)·HeadDim,
// +HeadDim), so that attention streams one head of a block as one run of
// BlockSize·HeadDim elements. Exactly one of k16/v16 (F16), k32/v32 (F32)
// and k8/v8 (Q8_0) is set, indexed by layer. A Q8_0 layer is the same
// elements in ggml's 34-byte blocks of 32 (a half scale, 32 int8 quants):
// element e, at a multiple of 32 (HeadDim is one), starts at byte
// e/32·34, so a head's row quantizes on its own and a block of the pool is
// still one run.
//
// The fields belong to the goroutine that runs ops, which is also the one
// that grows the pool (GrowKVCache); shown is spec for Spec, which any
// goroutine may call.
type KVCache struct {
	spec     gpu.KVSpec
	shown    atomic.Pointer[gpu.KVSpec]
	k16, v16 [][]uint16
	k32, v32 [][]float32
	k8, v8   [][]byte
	width    int // KVHeads · HeadDim: the elements of one slot
}

// q8Byte is where element e (a multiple of 32) of a Q8_0 layer starts.
func q8Byte(e int) int { return e / q8Elems * q8Bytes }

// Q8_0's block: q8Elems elements in q8Bytes bytes.
const (
	q8Elems = 32
	q8Bytes = 34
)

// kvKind is a K/V element type as the C kernels number it (simd.h's
// KV_F32, KV_F16, KV_Q8).
type kvKind int

const (
	kvF32 kvKind = iota
	kvF16
	kvQ8
)

// kvKind is the cache's element type.
func (c *KVCache) kvKind() kvKind {
	switch {
	case c.k16 != nil:
		return kvF16
	case c.k8 != nil:
		return kvQ8
	}
	return kvF32
}

// layerPtrs returns the start of layer's K and V.
func (c *KVCache) layerPtrs(layer int) (k, v unsafe.Pointer) {
	kb, vb := c.layerBytes(layer)
	return unsafe.Pointer(&kb[0]), unsafe.Pointer(&vb[0])
}

// layerBytes returns layer's K and V as bytes.
func (c *KVCache) layerBytes(layer int) (k, v []byte) {
	switch {
	case c.k16 != nil:
		return u16Bytes(c.k16[layer]), u16Bytes(c.v16[layer])
	case c.k8 != nil:
		return c.k8[layer], c.v8[layer]
	}
	return f32Bytes(c.k32[layer]), f32Bytes(c.v32[layer])
}

func u16Bytes(s []uint16) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), 2*len(s))
}

func f32Bytes(s []float32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), 4*len(s))
}

// offset is where head h of slot s starts in a layer's K or V.
func (c *KVCache) offset(s, h int) int {
	bs := c.spec.BlockSize
	return ((s/bs*c.spec.KVHeads+h)*bs + s%bs) * c.spec.HeadDim
}

// Spec is the pool's shape.
func (c *KVCache) Spec() gpu.KVSpec { return *c.shown.Load() }

// NewKVCache allocates the paged K/V pool of spec, zeroed. A pool whose
// size overflows, or that Go cannot allocate, is an error wrapping
// gpu.ErrOutOfMemory.
func (b *Backend) NewKVCache(spec gpu.KVSpec) (gpu.KVCache, error) {
	c, err := allocKV(spec)
	if err != nil {
		return nil, err
	}
	b.fill(c, nil)
	return c, nil
}

// allocKV allocates the layers of a pool of spec, zeroed by the runtime
// but not yet touched (see fill).
func allocKV(spec gpu.KVSpec) (kv *KVCache, err error) {
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
	c.shown.Store(&spec)
	switch spec.Type {
	case gguf.TypeF16:
		c.k16, c.v16 = make([][]uint16, spec.Layers), make([][]uint16, spec.Layers)
		for l := range spec.Layers {
			c.k16[l] = alignedU16(perLayer)
			c.v16[l] = c.k16[l]
			if !spec.SharedKV {
				c.v16[l] = alignedU16(perLayer)
			}
		}
	case gguf.TypeQ8_0:
		c.k8, c.v8 = make([][]byte, spec.Layers), make([][]byte, spec.Layers)
		for l := range spec.Layers {
			c.k8[l] = alignedAlloc(q8Byte(perLayer))
			c.v8[l] = c.k8[l]
			if !spec.SharedKV {
				c.v8[l] = alignedAlloc(q8Byte(perLayer))
			}
		}
	default:
		c.k32, c.v32 = make([][]float32, spec.Layers), make([][]float32, spec.Layers)
		for l := range spec.Layers {
			c.k32[l] = alignedF32(perLayer)
			c.v32[l] = c.k32[l]
			if !spec.SharedKV {
				c.v32[l] = alignedF32(perLayer)
			}
		}
	}
	return c, nil
}

// fill writes every page of c's K and V once, over the pool, as llama.cpp
// clears its K/V buffer at load: a page's first write costs a fault and
// its zeroing, which otherwise fell on decode steps as sequences reached
// fresh blocks (WriteKV several times slower when no huge pages were
// free; bench/results/2026-12-02-comment-numbers.md).
// With from (a smaller pool of the same layers), each layer starts with
// from's bytes and the rest is zeroed.
func (b *Backend) fill(c, from *KVCache) {
	t := &fillTask{}
	add := func(dst, src []byte) {
		for len(dst) > 0 {
			m := min(len(dst), hugePage)
			sp := fillSpan{dst: dst[:m]}
			if len(src) > 0 {
				m = min(m, len(src))
				sp = fillSpan{dst: dst[:m], src: src[:m]}
				src = src[m:]
			}
			t.spans = append(t.spans, sp)
			dst = dst[m:]
		}
	}
	for l := range c.spec.Layers {
		k, v := c.layerBytes(l)
		var fk, fv []byte
		if from != nil {
			fk, fv = from.layerBytes(l)
		}
		add(k, fk)
		if !c.spec.SharedKV {
			add(v, fv)
		}
	}
	b.pool.run(t, len(t.spans), hugePage)
}

// fillTask copies src into dst, or zeroes dst where there is no src, for
// each span.
type fillTask struct{ spans []fillSpan }

type fillSpan struct{ dst, src []byte }

func (t *fillTask) run(_ *worker, lo, hi int) {
	for _, s := range t.spans[lo:hi] {
		if s.src == nil {
			clear(s.dst)
		} else {
			copy(s.dst, s.src)
		}
	}
}

var _ gpu.KVGrower = (*Backend)(nil)

// GrowKVCache grows c in place to blocks blocks: a new pool for every
// layer, filled with the old one's bytes (the same offsets, since a block
// is one run per layer) and zeroes after them, replaces the old, which the
// garbage collector then frees. Both are held while the bytes are copied.
func (b *Backend) GrowKVCache(c gpu.KVCache, blocks int) error {
	cc := b.kv(c)
	spec, same, err := cc.spec.Grown("cpu", blocks)
	if same || err != nil {
		return err
	}
	n, err := allocKV(spec)
	if err != nil {
		return err
	}
	b.fill(n, cc)
	cc.spec, cc.k16, cc.v16, cc.k32, cc.v32, cc.k8, cc.v8 = n.spec, n.k16, n.v16, n.k32, n.v32, n.k8, n.v8
	cc.shown.Store(&spec)
	// The old pool is garbage as large as the new one's head; give it back
	// now, not when the heap has doubled.
	debug.FreeOSMemory()
	return nil
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
// converting to the cache's type (F16 rounds to nearest even; Q8_0
// quantizes each head's row as ggml's quantize_row_q8_0_ref does).
func (b *Backend) WriteKV(c gpu.KVCache, layer int, k, v gpu.Tensor, slots []int32) {
	cc := b.kv(c)
	b.checkWriteKV(cc, layer, k, v, slots)
	t := &b.writekv
	*t = writeKVTask{c: cc, layer: layer, k: b.f32(k), v: b.f32(v), slots: slots, kern: b.k}
	b.pool.run(t, len(slots), b.k.elemCost(2*cc.width))
	*t = writeKVTask{}
}

// checkWriteKV panics, as WriteKV does, unless k and v have a row for
// each slot of layer's cache.
func (b *Backend) checkWriteKV(cc *KVCache, layer int, k, v gpu.Tensor, slots []int32) {
	cc.checkLayer("WriteKV", layer)
	if cc.spec.SharedKV && k != v {
		panic("cpu: WriteKV: a pool whose V is its K takes v = k")
	}
	checkShape("WriteKV", "k", b.tensor(k), len(slots), cc.width)
	checkShape("WriteKV", "v", b.tensor(v), len(slots), cc.width)
	cc.spec.CheckSlots("cpu: WriteKV", slots)
}

type writeKVTask struct {
	c     *KVCache
	layer int
	k, v  []float32
	slots []int32
	kern  *kernels
}

func (t *writeKVTask) run(_ *worker, lo, hi int) { t.kern.writeKV(t, lo, hi) }

// writeKVSIMD stores slots lo … hi-1, converting to F16 or Q8_0 in C.
func writeKVSIMD(t *writeKVTask, lo, hi int) {
	w, d, bs := t.c.width, t.c.spec.HeadDim, t.c.spec.BlockSize
	if t.c.k16 != nil {
		writeKVX(t.k[lo*w:hi*w], t.v[lo*w:hi*w], t.slots[lo:hi], t.c.k16[t.layer], t.c.v16[t.layer], bs, t.c.spec.KVHeads, d)
		return
	}
	if t.c.k8 != nil {
		writeKVQ8X(t.k[lo*w:hi*w], t.v[lo*w:hi*w], t.slots[lo:hi], t.c.k8[t.layer], t.c.v8[t.layer], bs, t.c.spec.KVHeads, d)
		return
	}
	writeKVGo(t, lo, hi)
}

// writeKVGo stores slots lo … hi-1 in Go.
func writeKVGo(t *writeKVTask, lo, hi int) {
	w, d, bs := t.c.width, t.c.spec.HeadDim, t.c.spec.BlockSize
	for i := lo; i < hi; i++ {
		at := t.c.offset(int(t.slots[i]), 0) // head h is h·BlockSize·HeadDim further
		for h := 0; h < w; h += d {
			k, v := t.k[i*w+h:i*w+h+d], t.v[i*w+h:i*w+h+d]
			if t.c.k8 != nil {
				b0, b1 := q8Byte(at), q8Byte(at+d)
				quantizeQ8(k, t.c.k8[t.layer][b0:b1])
				quantizeQ8(v, t.c.v8[t.layer][b0:b1])
			} else if t.c.k16 != nil {
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
	n := t.c.blockBytes()
	for l := lo; l < hi; l++ {
		k, v := t.c.layerBytes(l)
		for _, cp := range t.copies {
			s, d := int(cp.Src)*n, int(cp.Dst)*n
			copy(k[d:d+n], k[s:s+n])
			if !t.c.spec.SharedKV {
				copy(v[d:d+n], v[s:s+n])
			}
		}
	}
}

// blockBytes is the bytes of one block of one layer's K (or V).
func (c *KVCache) blockBytes() int {
	return int(int64(c.spec.BlockSize) * c.spec.RowBytes())
}

// quantizeQ8 quantizes x (a multiple of 32 elements) into Q8_0 blocks.
func quantizeQ8(x []float32, dst []byte) {
	if err := gguf.Quantize(gguf.TypeQ8_0, x, dst); err != nil {
		panic("cpu: " + err.Error()) // the cache's shape is checked: a programming error
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
