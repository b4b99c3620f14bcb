package vulkan

import (
	"fmt"
	"math"

	"folio/gpu"
	"folio/models/gguf"
)

// Attention is paged attention for one layer (attention.comp): query
// head h of each row reads K/V head h / (Heads/KVHeads) at the positions
// o allows, through its sequence's block table. The spans (o.Span) and
// the tables are made here and uploaded in queue order.
func (b *Backend) Attention(dst, q gpu.Tensor, c gpu.KVCache, layer int, batch *gpu.Batch, o gpu.AttnOpts) {
	vc, vq, vd := b.kv(c), b.f32(q), b.act(dst)
	s := vc.spec
	if layer < 0 || layer >= s.Layers {
		panic(fmt.Sprintf("vulkan: Attention: layer %d of a %d-layer cache", layer, s.Layers))
	}
	if vq.cols%s.HeadDim != 0 || (vq.cols/s.HeadDim)%s.KVHeads != 0 || s.HeadDim > maxHead {
		panic(fmt.Sprintf("vulkan: Attention: q %v does not hold whole groups of %d heads of %d (at most 512)", vq, s.KVHeads, s.HeadDim))
	}
	if err := batch.Check(); err != nil {
		panic(err)
	}
	if batch.BlockSize != s.BlockSize {
		panic(fmt.Sprintf("vulkan: Attention: batch block size %d, cache %d", batch.BlockSize, s.BlockSize))
	}
	checkShape("Attention", "dst", vd, vq.rows, vq.cols)
	heads := vq.cols / s.HeadDim
	meta := make([]int32, 3*vq.rows)
	for i := range vq.rows {
		meta[3*i+1], meta[3*i+2] = 1, 0 // a row of no sequence reads nothing
	}
	var tables []int32
	for _, sq := range batch.Seqs {
		off := int32(len(tables))
		tables = append(tables, sq.Blocks...)
		end := sq.Pos + sq.Len - 1
		for i := range sq.Len {
			r := sq.Start + i
			if r >= vq.rows {
				panic(fmt.Sprintf("vulkan: Attention: batch row %d of a q of %d rows", r, vq.rows))
			}
			first, last := o.Span(sq.Pos+i, end)
			meta[3*r], meta[3*r+1], meta[3*r+2] = off, int32(first), int32(last)
		}
	}
	if len(tables) == 0 {
		tables = append(tables, 0)
	}
	mb := b.putInts(&b.meta, meta, "attention rows")
	tb := b.putInts(&b.tables, tables, "block tables")
	sinks, hasSinks := vq.buf, uint32(0)
	if o.Sinks != nil {
		vs := b.f32(o.Sinks)
		checkShape("Attention", "sinks", vs, 1, heads)
		sinks, hasSinks = vs.buf, 1
	}
	width := s.KVHeads * s.HeadDim
	layerElems := int64(s.Blocks) * int64(s.BlockSize) * int64(width)
	f16 := uint32(0)
	if s.Type == gguf.TypeF16 {
		f16 = 1
	}
	inv := float32(0)
	if o.SoftCap > 0 {
		inv = 1 / o.SoftCap
	}
	b.dispatch(kAttention, b.grid(int64(vq.rows)*int64(heads), 1), []uint32{uint32(vq.rows), uint32(heads), uint32(s.KVHeads),
		uint32(s.HeadDim), uint32(s.BlockSize), 0, uint32(layerElems), f16,
		math.Float32bits(o.Scale), math.Float32bits(o.SoftCap), math.Float32bits(inv), hasSinks},
		vq.buf, vc.bufs[layer], mb, tb, vd.buf, sinks)
}
