package cpu

import "folio/gpu"

// Attend is gpu.AttentionBlock: Rope of Q and K, WriteKV, Attention and
// the MatMul by Wo, with their checks and results.
//
// Run as five ops, each split over the threads its own way, a sequence's
// rows crossed cores three times a layer: the calling thread rotated Q, a
// helper attended it, the calling thread quantized the output for the
// MatMul. Each crossing waits on the other core, and on 2 cores that cost
// decode attention its whole second-thread gain at short
// contexts (bench/results/2026-12-01-engine5.md). Fused, a unit is a tile
// of a sequence's rows with every K/V head: the thread that takes it
// rotates the tile's Q and K, stores its K/V, attends and quantizes the
// output for Wo, so only the projections' and the MatMul's own traffic
// crosses.
func (b *Backend) Attend(a *gpu.Attend) {
	if !b.attendFused(a) {
		gpu.AttendOps(b, a)
	}
}

// fusedTilesPerThread is the fewest tiles per thread for which Attend
// fuses: a unit holds every K/V head of its tile, so with fewer tiles the
// threads split worse than the five ops' (head by head) would.
const fusedTilesPerThread = 4

// attendFused runs a as one op and reports true, or reports false having
// done nothing when a is better run as five ops (one thread, few tiles, a
// kernel without SIMD, sequences sharing rows, no rope, or bidirectional
// attention, which the SIMD kernels do not take).
func (b *Backend) attendFused(a *gpu.Attend) bool {
	threads := len(b.pool.workers)
	cw := b.tensor(a.Wo)
	kind, ok := b.k.matmulKind(cw.typ)
	if threads == 1 || !ok || a.Rope == nil || a.Opts.Bidirectional {
		return false
	}
	cq, ck, catt, cc := b.tensor(a.Q), b.tensor(a.K), b.tensor(a.Att), b.kv(a.KV)
	if cq.rows < fusedTilesPerThread*threads {
		// at most a tile a row: too few, and the five ops would check and
		// plan the batch a second time
		return false
	}
	a.Rope.Check("cpu", cq, a.Pos)
	a.Rope.Check("cpu", ck, a.Pos)
	b.checkWriteKV(cc, a.Layer, a.K, a.V, a.Slots)
	rowSeq, maxCtx, overlap := b.attnRows(a.Att, a.Q, cc, a.Layer, a.Batch, a.Opts)
	checkMatMul("MatMul", b.tensor(a.Out), catt, cw)
	if overlap {
		return false
	}
	spec := cc.spec
	group := cq.cols / spec.HeadDim / spec.KVHeads
	maxCtx = windowCtx(maxCtx, a.Opts)
	tr, scratch := b.attnUnits(cc, group, maxCtx)
	blocks := b.attnPlan(a.Batch, tr, a.Opts)
	if len(b.attnTiles) < fusedTilesPerThread*threads {
		b.attentionX.blocks = blocks[:0]
		return false
	}
	if !b.ropeAngles.holds(a.Pos, a.Rope) {
		b.ropeAngles.compute(b, a.Pos, a.Rope)
	}

	n, k := cq.rows, catt.cols
	stride := xRowBytes(kind, k)
	xq := b.xqBuf(n * stride)
	t := &b.attend
	*t = attendTask{
		ropeQ:   ropeTask{x: b.act(a.Q), c: cq.cols, r: a.Rope, cs: b.ropeAngles.cs, kern: b.k},
		ropeK:   ropeTask{x: b.act(a.K), c: ck.cols, r: a.Rope, cs: b.ropeAngles.cs, kern: b.k},
		writeKV: writeKVTask{c: cc, layer: a.Layer, k: b.f32(a.K), v: b.f32(a.V), slots: a.Slots, kern: b.k},
		attn: simdAttentionTask{kern: b.k, dst: b.act(a.Att), q: cq.f32, qcols: cq.cols, c: cc, layer: a.Layer, parts: 1,
			tiles: b.attnTiles, blocks: blocks, group: group, opts: a.Opts, sinks: b.sinkLogits(a.Opts, cq.cols/spec.HeadDim),
			scratch: scratch},
		quant:   quantTask{kind: kind, x: catt.f32, k: k, out: xq, stride: stride},
		kvHeads: spec.KVHeads,
	}
	// Rows a tile does not rotate and store itself go first, over the
	// pool: those of sequences of several tiles (a later tile attends to
	// the K/V of the earlier ones) and those of no sequence (rotated and
	// stored all the same, as the five ops would).
	b.attendSpans = b.attendSpans[:0]
	t.whole = growBools(&b.attendWhole, len(b.attnTiles))
	for i, tl := range b.attnTiles {
		t.whole[i] = int(a.Batch.Seqs[rowSeq[tl.row]].Len) <= tr
	}
	for r := 0; r < n; {
		si := rowSeq[r]
		end, own := r+1, si < 0
		if si >= 0 {
			s := a.Batch.Seqs[si]
			end, own = s.Start+s.Len, s.Len > tr
		} else {
			for end < n && rowSeq[end] < 0 {
				end++
			}
		}
		for ; own && r < end; r += spanRows {
			b.attendSpans = append(b.attendSpans, rowSpan{lo: int32(r), hi: int32(min(r+spanRows, end)), quant: si < 0})
		}
		r = end
	}
	t.spans = b.attendSpans
	prep := b.k.elemCost(2 * (cq.cols + 2*ck.cols)) // rope of Q and K, K and V stored: per row
	if len(t.spans) > 0 {
		t.phase = 0
		b.pool.run(t, len(t.spans), spanRows*prep)
	}
	t.phase = 1
	b.pool.runEach(t, len(b.attnTiles), max(1, spec.KVHeads*2*spec.HeadDim*maxCtx*tr*group/24+tr*prep))
	*t = attendTask{}
	b.attentionX.blocks = blocks[:0]
	b.xqOf = xqKey{x: catt, kind: kind, ops: b.pool.ops} // the MatMul takes Att as the tiles quantized it
	b.MatMul(a.Out, a.Att, a.Wo)
	return true
}

// spanRows is the most rows of one unit of Attend's first phase.
const spanRows = 16

// rowSpan is rows lo … hi-1 for Attend's first phase to rotate and store,
// and to quantize for Wo when no tile will (rows of no sequence).
type rowSpan struct {
	lo, hi int32
	quant  bool
}

// attendTask is Attend's two phases: in phase 0 a unit is a span, in
// phase 1 a tile (attnTiles), which rotates and stores its rows first when
// it is its sequence's whole (whole[i]).
type attendTask struct {
	ropeQ, ropeK ropeTask
	writeKV      writeKVTask
	attn         simdAttentionTask
	quant        quantTask
	kvHeads      int
	spans        []rowSpan
	whole        []bool
	phase        int
}

func (t *attendTask) run(w *worker, lo, hi int) {
	if t.phase == 0 {
		for _, s := range t.spans[lo:hi] {
			t.prepare(w, int(s.lo), int(s.hi))
			if s.quant {
				t.quant.run(w, int(s.lo), int(s.hi))
			}
		}
		return
	}
	for i := lo; i < hi; i++ {
		tl := t.attn.tiles[i]
		r0, r1 := int(tl.row), int(tl.row+tl.rows)
		if t.whole[i] {
			t.prepare(w, r0, r1)
		}
		t.attn.run(w, i*t.kvHeads, (i+1)*t.kvHeads)
		t.quant.run(w, r0, r1)
	}
}

// prepare rotates rows lo … hi-1 of Q and K and stores their K and V.
func (t *attendTask) prepare(w *worker, lo, hi int) {
	t.ropeQ.run(w, lo, hi)
	t.ropeK.run(w, lo, hi)
	t.writeKV.run(w, lo, hi)
}

// growBools returns (*buf)[:n], reallocating *buf only when it is too
// small.
func growBools(buf *[]bool, n int) []bool {
	if cap(*buf) < n {
		*buf = make([]bool, n)
	}
	return (*buf)[:n]
}
