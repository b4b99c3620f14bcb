package cpu

import (
	"fmt"

	"folio/gpu"
)

// Attention is causal paged attention for one layer: q and dst are
// [n, Heads·HeadDim] with the rows of b's sequences. Row Start+i of a
// sequence is position Pos+i and attends to its positions 0 … Pos+i, whose
// K/V it reads in place through the block table. Query head h reads K/V
// head h / (Heads/KVHeads). Rows of dst outside every sequence are left
// as they are.
//
// The arithmetic is llama.cpp's without flash attention: scores q·k in
// float32, scaled, softmax as Softmax computes it (float64 sum), then the
// probability-weighted sum of V in float32.
func (b *Backend) Attention(dst, q gpu.Tensor, c gpu.KVCache, layer int, batch *gpu.Batch, scale float32) {
	cc, cq, cd := b.kv(c), b.tensor(q), b.tensor(dst)
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
	rowSeq := b.rowSeq[:cq.rows]
	for i := range rowSeq {
		rowSeq[i] = -1
	}
	maxCtx := 0
	for si, s := range batch.Seqs {
		if s.Start+s.Len > cq.rows {
			panic(fmt.Sprintf("cpu: Attention: sequence %d has rows %d … %d of a %d-row q", si, s.Start, s.Start+s.Len-1, cq.rows))
		}
		for _, blk := range s.Blocks[:(s.Pos+s.Len+spec.BlockSize-1)/spec.BlockSize] {
			if blk < 0 || int(blk) >= spec.Blocks {
				panic(fmt.Sprintf("cpu: Attention: sequence %d reads block %d of a %d-block pool", si, blk, spec.Blocks))
			}
		}
		for i := range s.Len {
			rowSeq[s.Start+i] = int32(si)
		}
		maxCtx = max(maxCtx, s.Pos+s.Len)
	}

	heads := cq.cols / d
	t := &b.attention
	*t = attentionTask{dst: b.act(dst), q: b.f32(q), c: cc, layer: layer, seqs: batch.Seqs, rowSeq: rowSeq,
		heads: heads, group: heads / spec.KVHeads, scale: scale}
	// The units are (row, head) pairs, heads innermost; a unit reads up to
	// maxCtx positions of K and V.
	b.pool.run(t, cq.rows*heads, 2*d*maxCtx)
	*t = attentionTask{}
}

type attentionTask struct {
	dst, q []float32
	c      *KVCache
	layer  int
	seqs   []gpu.Seq
	rowSeq []int32 // the sequence of each row of q, -1 for none
	heads  int     // query heads
	group  int     // query heads per K/V head
	scale  float32
}

func (t *attentionTask) run(w *worker, lo, hi int) {
	spec := t.c.spec
	d, bs := spec.HeadDim, spec.BlockSize
	kvStride := spec.KVHeads * d // elements per slot
	for u := lo; u < hi; u++ {
		row, h := u/t.heads, u%t.heads
		if t.rowSeq[row] < 0 {
			continue
		}
		s := &t.seqs[t.rowSeq[row]]
		n := s.Pos + (row - s.Start) + 1 // positions attended to
		at := (row*t.heads + h) * d
		q, out := t.q[at:at+d], t.dst[at:at+d]
		kvOff := h / t.group * d // the K/V head's offset within a slot

		// scores[p] = scale · q · K[p], over the block table.
		scores := grow(&w.scores, n)
		for p0 := 0; p0 < n; p0 += bs {
			base := int(s.Blocks[p0/bs]) * bs * kvStride
			m := min(bs, n-p0)
			for j := range m {
				k := base + j*kvStride + kvOff
				if t.c.k16 != nil {
					scores[p0+j] = dotF16(q, t.c.k16[t.layer][k:k+d]) * t.scale
				} else {
					scores[p0+j] = dot(q, t.c.k32[t.layer][k:k+d]) * t.scale
				}
			}
		}
		softmax(scores)

		// out = Σ_p scores[p] · V[p].
		clear(out)
		for p0 := 0; p0 < n; p0 += bs {
			base := int(s.Blocks[p0/bs]) * bs * kvStride
			m := min(bs, n-p0)
			for j := range m {
				v := base + j*kvStride + kvOff
				if t.c.v16 != nil {
					axpyF16(out, scores[p0+j], t.c.v16[t.layer][v:v+d])
				} else {
					axpy(out, scores[p0+j], t.c.v32[t.layer][v:v+d])
				}
			}
		}
	}
}

// dotF16 returns a · b with b in halves (len(b) ≥ len(a)).
func dotF16(a []float32, b []uint16) float32 {
	tab := f16Table
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		a4, b4 := a[i:i+4:i+4], b[i:i+4:i+4]
		s0 += a4[0] * tab[b4[0]]
		s1 += a4[1] * tab[b4[1]]
		s2 += a4[2] * tab[b4[2]]
		s3 += a4[3] * tab[b4[3]]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * tab[b[i]]
	}
	return (s0 + s1) + (s2 + s3)
}

// axpy adds a · x to y (len(x) ≥ len(y)).
func axpy(y []float32, a float32, x []float32) {
	x = x[:len(y)]
	for i := range y {
		y[i] += a * x[i]
	}
}

// axpyF16 adds a · x to y, x in halves (len(x) ≥ len(y)).
func axpyF16(y []float32, a float32, x []uint16) {
	tab := f16Table
	x = x[:len(y)]
	for i := range y {
		y[i] += a * tab[x[i]]
	}
}
