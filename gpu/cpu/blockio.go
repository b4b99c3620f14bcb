package cpu

import (
	"encoding/binary"
	"fmt"
	"math"

	"folio/gpu"
)

var _ gpu.BlockIO = (*Backend)(nil)

// ReadBlock copies block's K and V of every layer into dst in the
// canonical layout of gpu.BlockIO, which is this cache's own layout within
// a block (head-major), so each layer's K and V are one run each (Q8_0
// blocks of a head's row, for a Q8_0 cache).
func (b *Backend) ReadBlock(c gpu.KVCache, block int32, dst []byte) {
	cc := b.kv(c)
	lo, n := cc.blockRun("ReadBlock", block, len(dst))
	at := 0
	for l := range cc.spec.Layers {
		if cc.k8 != nil || littleEndian { // the bytes are the layout's: Q8_0 blocks are little-endian anywhere
			k, v := cc.layerBytes(l)
			bn := cc.blockBytes()
			at += copy(dst[at:], k[int(block)*bn:][:bn])
			if !cc.spec.SharedKV {
				at += copy(dst[at:], v[int(block)*bn:][:bn])
			}
			continue
		}
		if cc.k16 != nil {
			for _, run := range cc.runs16(l, lo, n) {
				for _, h := range run {
					binary.LittleEndian.PutUint16(dst[at:], h)
					at += 2
				}
			}
			continue
		}
		for _, run := range cc.runs32(l, lo, n) {
			for _, f := range run {
				binary.LittleEndian.PutUint32(dst[at:], math.Float32bits(f))
				at += 4
			}
		}
	}
}

// WriteBlock is ReadBlock's inverse.
func (b *Backend) WriteBlock(c gpu.KVCache, block int32, src []byte) {
	cc := b.kv(c)
	lo, n := cc.blockRun("WriteBlock", block, len(src))
	at := 0
	for l := range cc.spec.Layers {
		if cc.k8 != nil || littleEndian {
			k, v := cc.layerBytes(l)
			bn := cc.blockBytes()
			at += copy(k[int(block)*bn:][:bn], src[at:])
			if !cc.spec.SharedKV {
				at += copy(v[int(block)*bn:][:bn], src[at:])
			}
			continue
		}
		if cc.k16 != nil {
			for _, run := range cc.runs16(l, lo, n) {
				for i := range run {
					run[i] = binary.LittleEndian.Uint16(src[at:])
					at += 2
				}
			}
			continue
		}
		for _, run := range cc.runs32(l, lo, n) {
			for i := range run {
				run[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[at:]))
				at += 4
			}
		}
	}
}

// blockRun is where block starts in a layer's K or V and how many
// elements it spans, after checking the block and the buffer size.
func (c *KVCache) blockRun(op string, block int32, bufLen int) (lo, n int) {
	if block < 0 || int(block) >= c.spec.Blocks {
		panic(fmt.Sprintf("cpu: %s: block %d of a pool of %d", op, block, c.spec.Blocks))
	}
	if want := c.spec.BlockBytes(); int64(bufLen) != want {
		panic(fmt.Sprintf("cpu: %s: buffer of %d bytes for a block of %d", op, bufLen, want))
	}
	n = c.spec.BlockSize * c.width
	return int(block) * n, n
}

// runs16 and runs32 are a block's K and V runs of layer l (its K alone
// when V is K).
func (c *KVCache) runs16(l, lo, n int) [][]uint16 {
	if c.spec.SharedKV {
		return [][]uint16{c.k16[l][lo : lo+n]}
	}
	return [][]uint16{c.k16[l][lo : lo+n], c.v16[l][lo : lo+n]}
}

func (c *KVCache) runs32(l, lo, n int) [][]float32 {
	if c.spec.SharedKV {
		return [][]float32{c.k32[l][lo : lo+n]}
	}
	return [][]float32{c.k32[l][lo : lo+n], c.v32[l][lo : lo+n]}
}
