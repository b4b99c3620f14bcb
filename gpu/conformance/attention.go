package conformance

import (
	"fmt"
	"math"

	"folio/gpu"
	"folio/models/gguf"
)

// attnCase is one Attention case: sequences of (pos, len) rows over a
// pool of typ, with o's options (o.Scale 0: 1/√hd) and queries drawn in
// ±qScale (0: 1), large enough for a soft-cap to bite; sinks > 0 draws a
// sink per query head in sinkBias ± sinks (o.Sinks, a weight on each
// backend).
type attnCase struct {
	name                   string
	typ                    gguf.TensorType
	heads, kvHeads, hd, bs int
	seqs                   [][2]int // (pos, len) per sequence
	o                      gpu.AttnOpts
	qScale                 float32
	sinks, sinkBias        float32
}

// attention: WriteKV then Attention over decode, prefill and mixed
// batches, F16 and F32 pools, GQA, awkward block sizes; CopyBlocks and the
// pool's bytes through BlockIO.
func (c *table) attention() {
	for _, t := range []attnCase{
		{name: "decode", typ: gguf.TypeF16, heads: 8, kvHeads: 2, hd: 64, bs: 16, seqs: [][2]int{{40, 1}}},
		{name: "prefill", typ: gguf.TypeF16, heads: 16, kvHeads: 4, hd: 64, bs: 16, seqs: [][2]int{{0, 45}}},
		{name: "mixed", typ: gguf.TypeF16, heads: 6, kvHeads: 3, hd: 128, bs: 5, seqs: [][2]int{{0, 9}, {23, 1}, {11, 4}}},
		{name: "f32 head 80", typ: gguf.TypeF32, heads: 4, kvHeads: 4, hd: 80, bs: 7, seqs: [][2]int{{3, 20}, {50, 1}}},
		{name: "long", typ: gguf.TypeF16, heads: 4, kvHeads: 1, hd: 128, bs: 16, seqs: [][2]int{{1500, 2}}},
		// Gemma 4's global layers' heads of 512 (CUDA's _wide kernels)
		{name: "head 512 decode", typ: gguf.TypeF16, heads: 4, kvHeads: 1, hd: 512, bs: 16, seqs: [][2]int{{70, 1}, {5, 1}}},
		{name: "f32 head 384 prefill", typ: gguf.TypeF32, heads: 2, kvHeads: 2, hd: 384, bs: 8, seqs: [][2]int{{0, 19}}},
	} {
		c.attentionCase(t)
	}
}

// attentionOpts: Attention's options. A sliding window reads through a
// block table whose entries wholly before the window are -1 (freed), so
// a backend that checks or reads them fails; windows in decode, prefill
// longer than the window and mixed batches; soft-capped scores (queries
// large enough that the cap changes the result) alone and with a window;
// bidirectional attention, plain and with llama.cpp's symmetric window;
// sinks (gpt-oss) in decode and prefill, alone and in a window, small
// and large enough to take most of the probability.
func (c *table) attentionOpts() {
	w := func(n int) gpu.AttnOpts { return gpu.AttnOpts{Window: n} }
	for _, t := range []attnCase{
		{name: "window 32 decode", typ: gguf.TypeF16, heads: 8, kvHeads: 2, hd: 64, bs: 16, seqs: [][2]int{{100, 1}}, o: w(32)},
		{name: "window 16 prefill", typ: gguf.TypeF16, heads: 6, kvHeads: 2, hd: 128, bs: 7, seqs: [][2]int{{0, 45}, {20, 9}}, o: w(16)},
		{name: "window 5 mixed", typ: gguf.TypeF32, heads: 4, kvHeads: 4, hd: 80, bs: 4, seqs: [][2]int{{30, 1}, {0, 12}, {9, 3}}, o: w(5)},
		{name: "window 1", typ: gguf.TypeF16, heads: 2, kvHeads: 1, hd: 64, bs: 16, seqs: [][2]int{{40, 3}}, o: w(1)},
		{name: "window wider than the context", typ: gguf.TypeF16, heads: 4, kvHeads: 2, hd: 64, bs: 8, seqs: [][2]int{{3, 4}}, o: w(64)},
		{name: "soft-cap 5", typ: gguf.TypeF16, heads: 8, kvHeads: 4, hd: 64, bs: 16, seqs: [][2]int{{0, 33}, {12, 1}},
			o: gpu.AttnOpts{SoftCap: 5}, qScale: 4},
		{name: "soft-cap 5 window 10", typ: gguf.TypeF32, heads: 4, kvHeads: 1, hd: 80, bs: 5, seqs: [][2]int{{30, 5}},
			o: gpu.AttnOpts{SoftCap: 5, Window: 10}, qScale: 4},
		{name: "bidirectional", typ: gguf.TypeF16, heads: 6, kvHeads: 6, hd: 64, bs: 5, seqs: [][2]int{{0, 13}, {0, 30}},
			o: gpu.AttnOpts{Bidirectional: true}},
		{name: "bidirectional after a prefix", typ: gguf.TypeF32, heads: 4, kvHeads: 2, hd: 64, bs: 16, seqs: [][2]int{{20, 7}},
			o: gpu.AttnOpts{Bidirectional: true}},
		{name: "bidirectional window 8", typ: gguf.TypeF16, heads: 4, kvHeads: 2, hd: 128, bs: 4, seqs: [][2]int{{0, 40}},
			o: gpu.AttnOpts{Bidirectional: true, Window: 8}},
		{name: "sinks decode", typ: gguf.TypeF16, heads: 8, kvHeads: 2, hd: 64, bs: 16, seqs: [][2]int{{40, 1}, {3, 1}}, sinks: 2},
		{name: "sinks prefill", typ: gguf.TypeF32, heads: 4, kvHeads: 2, hd: 64, bs: 5, seqs: [][2]int{{0, 23}, {7, 4}}, sinks: 1, qScale: 3},
		{name: "sinks window 8", typ: gguf.TypeF16, heads: 8, kvHeads: 1, hd: 64, bs: 4, seqs: [][2]int{{0, 30}, {50, 1}},
			o: gpu.AttnOpts{Window: 8}, sinks: 3},
		{name: "large sinks", typ: gguf.TypeF32, heads: 2, kvHeads: 1, hd: 80, bs: 16, seqs: [][2]int{{10, 3}}, sinks: 2, sinkBias: 6},
	} {
		c.attentionCase(t)
	}
}

// attentionCase adds t: each sequence gets its own blocks, shuffled; its
// earlier positions are filled by a first WriteKV. With a window, the
// table Attention reads has -1 for the blocks wholly before every row's
// window, as paged frees them.
func (c *table) attentionCase(t attnCase) {
	nb := 0
	batch := &gpu.Batch{BlockSize: t.bs}
	rows := 0
	for _, s := range t.seqs {
		need := (s[0] + s[1] + t.bs - 1) / t.bs
		blocks := make([]int32, need)
		for i := range blocks {
			blocks[i] = int32(nb + i)
		}
		c.r.Shuffle(len(blocks), func(i, j int) { blocks[i], blocks[j] = blocks[j], blocks[i] })
		nb += need
		batch.Seqs = append(batch.Seqs, gpu.Seq{Start: rows, Len: s[1], Pos: s[0], Blocks: blocks})
		rows += s[1]
	}
	spec := gpu.KVSpec{Layers: 2, Blocks: nb + 1, BlockSize: t.bs, KVHeads: t.kvHeads, HeadDim: t.hd, Type: t.typ}
	past := &gpu.Batch{BlockSize: t.bs}
	pastRows := 0
	for _, s := range batch.Seqs {
		if s.Pos > 0 {
			past.Seqs = append(past.Seqs, gpu.Seq{Start: pastRows, Len: s.Pos, Pos: 0, Blocks: s.Blocks})
			pastRows += s.Pos
		}
	}
	tables := freedBefore(batch, t.o)
	w := t.kvHeads * t.hd
	qs := t.qScale
	if qs == 0 {
		qs = 1
	}
	pk, pv := c.vals(max(pastRows, 1)*w, 1), c.vals(max(pastRows, 1)*w, 1)
	k, v, q := c.vals(rows*w, 1), c.vals(rows*w, 1), c.vals(rows*t.heads*t.hd, qs)
	var sinks []byte
	if t.sinks > 0 {
		s := c.vals(t.heads, t.sinks)
		for i := range s {
			s[i] += t.sinkBias
		}
		sinks = weightBytes(gguf.TypeF32, 1, t.heads, s)
	}
	o := t.o
	if o.Scale == 0 {
		o.Scale = float32(1 / math.Sqrt(float64(t.hd)))
	}
	copies := []gpu.BlockCopy{{Src: 0, Dst: int32(nb)}}
	name := fmt.Sprintf("Attention %s %v %d/%d heads of %d, block %d", t.name, t.typ, t.heads, t.kvHeads, t.hd, t.bs)
	c.add(name, tolAttention, func(be gpu.Backend) []float32 {
		kv, err := be.NewKVCache(spec)
		if err != nil {
			panic(err)
		}
		if pastRows > 0 {
			be.WriteKV(kv, 1, act(be, pastRows, w, pk), act(be, pastRows, w, pv), past.Slots(nil))
		}
		be.WriteKV(kv, 1, act(be, rows, w, k), act(be, rows, w, v), batch.Slots(nil))
		dst := act(be, rows, t.heads*t.hd, make([]float32, rows*t.heads*t.hd))
		o := o
		if sinks != nil {
			o.Sinks = weight(be, gguf.TypeF32, 1, t.heads, sinks)
		}
		be.Attention(dst, act(be, rows, t.heads*t.hd, q), kv, 1, tables, o)
		out := read(be, dst)
		// The pool itself: block nb, a copy of block 0, through BlockIO.
		be.CopyBlocks(kv, copies)
		if bio, ok := be.(gpu.BlockIO); ok {
			buf := make([]byte, spec.BlockBytes())
			bio.ReadBlock(kv, int32(nb), buf)
			out = append(out, decodeKV(buf, t.typ)...)
		}
		return out
	})
}

// freedBefore is b with, under a window, every table entry wholly before
// the window of the sequence's first row set to -1.
func freedBefore(b *gpu.Batch, o gpu.AttnOpts) *gpu.Batch {
	if o.Window == 0 {
		return b
	}
	out := &gpu.Batch{BlockSize: b.BlockSize}
	for _, s := range b.Seqs {
		first, _ := o.Span(s.Pos, s.Pos+s.Len-1)
		blocks := append([]int32(nil), s.Blocks...)
		for i := range first / b.BlockSize {
			blocks[i] = -1
		}
		s.Blocks = blocks
		out.Seqs = append(out.Seqs, s)
	}
	return out
}
