package cpu

import (
	"encoding/binary"
	"fmt"

	"folio/gpu"
)

// Attention is paged attention for one layer: q and dst are
// [n, Heads·HeadDim] with the rows of b's sequences. Row Start+i of a
// sequence is position Pos+i and attends to the positions o.Span gives
// (causal: 0 … Pos+i), whose K/V it reads in place through the block
// table. Query head h reads K/V
// head h / (Heads/KVHeads). Rows of dst outside every sequence are left
// as they are.
//
// The arithmetic is llama.cpp's without flash attention: scores q·k in
// float32, scaled, softmax as Softmax computes it (float64 sum), then the
// probability-weighted sum of V in float32.
//
// The SIMD kernels do causal attention, with a sliding window (reading
// no block before it), soft-capping and sinks; bidirectional attention
// runs through the Go kernel.
func (b *Backend) Attention(dst, q gpu.Tensor, c gpu.KVCache, layer int, batch *gpu.Batch, o gpu.AttnOpts) {
	cc, cq := b.kv(c), b.tensor(q)
	rowSeq, maxCtx, _ := b.attnRows(dst, q, cc, layer, batch, o)
	if o.Bidirectional {
		b.attentionGo(dst, q, cq, cc, layer, batch, o, rowSeq, maxCtx)
		return
	}
	b.k.attentionOp(b, dst, q, cq, cc, layer, batch, o, rowSeq, maxCtx)
}

// attentionGo is Attention through the Go kernel, its arguments checked.
func (b *Backend) attentionGo(dst, q gpu.Tensor, cq *Tensor, cc *KVCache, layer int, batch *gpu.Batch, o gpu.AttnOpts, rowSeq []int32, maxCtx int) {
	spec, d := cc.spec, cc.spec.HeadDim
	heads := cq.cols / d
	group := heads / spec.KVHeads
	// The units are (row, K/V head, run of hs of its query heads), rows
	// outermost: a unit reads up to maxCtx positions of K and V once for
	// all of its query heads. hs is as large as keeps every thread busy
	// (a decode step has few rows); it changes no result, only the work
	// each unit does.
	hs := 1
	for _, c := range []int{4, 2} {
		if group%c == 0 && cq.rows*heads/c >= 2*b.Threads() {
			hs = c
			break
		}
	}
	t := &b.attention
	*t = attentionTask{dst: b.act(dst), q: b.f32(q), c: cc, layer: layer, seqs: batch.Seqs, rowSeq: rowSeq,
		heads: heads, group: group, hs: hs, perKV: group / hs, opts: o, sinks: b.sinkLogits(o, heads)}
	b.pool.run(t, cq.rows*heads/hs, 2*d*maxCtx*hs)
	*t = attentionTask{}
}

// sinkLogits is o's sink logits, one per query head of heads, as
// float32s; nil without sinks.
func (b *Backend) sinkLogits(o gpu.AttnOpts, heads int) []float32 {
	if o.Sinks == nil {
		return nil
	}
	cs := b.tensor(o.Sinks)
	checkShape("Attention", "sinks", cs, 1, heads)
	return cs.rowView(0, &b.sinks)
}

// attnRows checks Attention's arguments, panicking as it does, and maps
// each row of q to its sequence (b.rowSeq, -1 for none). maxCtx bounds
// the positions a row attends to; overlap reports a row in two sequences.
// Only the blocks o lets the rows read need be in the pool.
func (b *Backend) attnRows(dst, q gpu.Tensor, cc *KVCache, layer int, batch *gpu.Batch, o gpu.AttnOpts) (rowSeq []int32, maxCtx int, overlap bool) {
	cq, cd := b.tensor(q), b.tensor(dst)
	cc.checkLayer("Attention", layer)
	spec := cc.spec
	d := spec.HeadDim
	if cq.cols%d != 0 || cq.cols/d%spec.KVHeads != 0 {
		panic(fmt.Sprintf("cpu: Attention: q %v is not a multiple of %d K/V heads of %d", cq, spec.KVHeads, d))
	}
	checkShape("Attention", "dst", cd, cq.rows, cq.cols)
	if batch.BlockSize != spec.BlockSize {
		panic(fmt.Sprintf("cpu: Attention: batch block size %d, cache block size %d", batch.BlockSize, spec.BlockSize))
	}
	if err := batch.Check(); err != nil {
		panic("cpu: Attention: " + err.Error())
	}
	if cap(b.rowSeq) < cq.rows {
		b.rowSeq = make([]int32, cq.rows)
	}
	rowSeq = b.rowSeq[:cq.rows]
	for i := range rowSeq {
		rowSeq[i] = -1
	}
	for si, s := range batch.Seqs {
		if s.Start+s.Len > cq.rows {
			panic(fmt.Sprintf("cpu: Attention: sequence %d has rows %d … %d of a %d-row q", si, s.Start, s.Start+s.Len-1, cq.rows))
		}
		first, _ := o.Span(s.Pos, s.Pos+s.Len-1)
		for _, blk := range s.Blocks[first/spec.BlockSize : (s.Pos+s.Len+spec.BlockSize-1)/spec.BlockSize] {
			if blk < 0 || int(blk) >= spec.Blocks {
				panic(fmt.Sprintf("cpu: Attention: sequence %d reads block %d of a %d-block pool", si, blk, spec.Blocks))
			}
		}
		for i := range s.Len {
			overlap = overlap || rowSeq[s.Start+i] >= 0
			rowSeq[s.Start+i] = int32(si)
		}
		maxCtx = max(maxCtx, s.Pos+s.Len)
	}
	return rowSeq, maxCtx, overlap
}

type attentionTask struct {
	dst, q []float32
	c      *KVCache
	layer  int
	seqs   []gpu.Seq
	rowSeq []int32 // the sequence of each row of q, -1 for none
	heads  int     // query heads
	group  int     // query heads per K/V head
	hs     int     // query heads per unit, a divisor of group
	perKV  int     // units per K/V head: group / hs
	opts   gpu.AttnOpts
	sinks  []float32 // opts.Sinks' logits, one per query head; nil: none
}

func (t *attentionTask) run(w *worker, lo, hi int) {
	spec := t.c.spec
	d, bs := spec.HeadDim, spec.BlockSize
	perRow := spec.KVHeads * t.perKV
	// kvRow returns row at (d elements) of a layer's K or V as float32s: in
	// place for F32, else decoded into buf.
	kvRow := func(k bool, at int, buf []float32) []float32 {
		switch {
		case t.c.k16 != nil:
			l := t.c.k16[t.layer]
			if !k {
				l = t.c.v16[t.layer]
			}
			f16ToF32(l[at:at+d], buf)
		case t.c.k8 != nil:
			l := t.c.k8[t.layer]
			if !k {
				l = t.c.v8[t.layer]
			}
			q8ToF32(l[q8Byte(at):q8Byte(at+d)], buf)
		default:
			if k {
				return t.c.k32[t.layer][at : at+d]
			}
			return t.c.v32[t.layer][at : at+d]
		}
		return buf
	}
	for u := lo; u < hi; u++ {
		row := u / perRow
		if t.rowSeq[row] < 0 {
			continue
		}
		kvh, part := u%perRow/t.perKV, u%perRow%t.perKV
		h0 := kvh*t.group + part*t.hs
		nh := t.hs // query heads h0 … h0+nh-1
		s := &t.seqs[t.rowSeq[row]]
		first, last := t.opts.Span(s.Pos+(row-s.Start), s.Pos+s.Len-1)
		n := last - first + 1 // positions attended to: first … last
		at := (row*t.heads + h0) * d
		q, out := t.q[at:at+nh*d], t.dst[at:at+nh*d]

		// scores[j·n + p-first] = scale · q_j · K[p] (soft-capped before
		// the scale), over the block table; an F16 K row is decoded once
		// for the unit's heads.
		scores := grow(&w.scores, nh*n)
		kbuf := grow(&w.row, d)
		for p := first; p <= last; p++ {
			k := kvRow(true, t.c.offset(int(s.Blocks[p/bs])*bs, kvh)+p%bs*d, kbuf)
			for j := range nh {
				scores[j*n+p-first] = dot(q[j*d:(j+1)*d], k)
			}
		}
		for j := range nh {
			sc := scores[j*n : (j+1)*n]
			if t.opts.SoftCap > 0 {
				softcapGo(sc, t.opts.SoftCap)
			}
			for i := range sc {
				sc[i] *= t.opts.Scale
			}
			if t.sinks != nil {
				softmaxSink(sc, t.sinks[h0+j])
			} else {
				softmax(sc)
			}
		}

		// out_j = Σ_p scores[j·n + p-first] · V[p].
		clear(out)
		for p := first; p <= last; p++ {
			v := kvRow(false, t.c.offset(int(s.Blocks[p/bs])*bs, kvh)+p%bs*d, kbuf)
			for j := range nh {
				axpy(out[j*d:(j+1)*d], scores[j*n+p-first], v)
			}
		}
	}
}

// f16ToF32 decodes the halves of src into out (len(src) ≥ len(out)).
func f16ToF32(src []uint16, out []float32) {
	tab := f16Table
	src = src[:len(out)]
	for i, h := range src {
		out[i] = tab[h]
	}
}

// q8ToF32 decodes the Q8_0 blocks of src into out (len(out)/32 blocks):
// each element its quant times the block's scale, as a float32 product,
// which is exact (8 bits by 11), so that every kernel decodes the same.
func q8ToF32(src []byte, out []float32) {
	tab := f16Table
	for b := range len(out) / q8Elems {
		blk := src[b*q8Bytes : (b+1)*q8Bytes]
		d := tab[binary.LittleEndian.Uint16(blk)]
		for j, q := range blk[2:] {
			out[b*q8Elems+j] = float32(int8(q)) * d
		}
	}
}

// axpy adds a · x to y (len(x) ≥ len(y)).
func axpy(y []float32, a float32, x []float32) {
	x = x[:len(y)]
	for i := range y {
		y[i] += a * x[i]
	}
}
