package cpu

import (
	"cmp"
	"slices"

	"folio/gpu"
)

// attentionSIMD is Attention through the C kernels (simd_attn.c). A unit
// is a tile of consecutive rows of one sequence and one K/V head with all
// of its query heads: each K and V row is converted once for every query
// of the tile. A query's sums run in the same order whatever its tile, the
// threads or the block size, so results do not depend on the schedule.
// o is causal; its window, if any, bounds the positions a tile reads, and
// the blocks before it are not touched; its sinks, if any, join each
// query head's softmax.
func (b *Backend) attentionSIMD(dst, q []float32, qcols int, c *KVCache, layer int, batch *gpu.Batch, o gpu.AttnOpts, maxCtx int) {
	spec := c.spec
	group := qcols / spec.HeadDim / spec.KVHeads
	maxCtx = windowCtx(maxCtx, o)
	tr, scratch := b.attnUnits(c, group, maxCtx)
	t := &b.attentionX
	blocks := b.attnPlan(batch, tr, o)
	parts := headParts(group, len(b.attnTiles)*spec.KVHeads, b.Threads())
	*t = simdAttentionTask{kern: b.k, dst: dst, q: q, qcols: qcols, c: c, layer: layer,
		tiles: b.attnTiles, blocks: blocks, group: group, parts: parts, opts: o, sinks: b.sinkLogits(o, qcols/spec.HeadDim),
		scratch: scratch}
	// The pool counts cost in the Go kernels' multiply-adds, about a
	// nanosecond each; these kernels do some 25 in a nanosecond, so that a
	// chunk holds a few short units (a decode step of one short sequence
	// runs on one thread, and a unit's kernel prefetches the next's K/V).
	b.pool.runEach(t, len(b.attnTiles)*spec.KVHeads*parts, max(1, 2*spec.HeadDim*maxCtx*tr*group/parts/24))
	*t = simdAttentionTask{blocks: blocks[:0]} // kept, so that the steady state allocates nothing
}

// headParts is the runs a K/V head's group query heads are split into
// when the units (tiles × K/V heads) are fewer than the threads: the
// fewest that give every thread a unit, a divisor of group (1: no split).
// A decode step of one sequence over one K/V head (DeepSeek's latent,
// Gemma 3 1B) was one unit, one thread attending while the others waited;
// split, each run reads the K/V again for its own queries, whose sums do
// not change.
func headParts(group, units, threads int) int {
	if units >= threads {
		return 1
	}
	parts := 1
	for p := 2; p <= group; p++ {
		if group%p == 0 {
			parts = p
			if units*p >= threads {
				break
			}
		}
	}
	return parts
}

// windowCtx bounds the positions one tile of at most 16 rows reads under
// o: maxCtx, or fewer with a window.
func windowCtx(maxCtx int, o gpu.AttnOpts) int {
	if o.Window > 0 {
		return min(maxCtx, o.Window+15)
	}
	return maxCtx
}

// attnPlan fills b.attnTiles with the tiles of tr rows of batch's
// sequences and returns their block tables in one slice (the kernels'
// blocks, kept in b.attentionX between ops). Entries before a window may
// be -1: the kernels do not read them.
func (b *Backend) attnPlan(batch *gpu.Batch, tr int, o gpu.AttnOpts) []int32 {
	bs := batch.BlockSize
	blocks := b.attentionX.blocks[:0]
	b.attnTiles = b.attnTiles[:0]
	for _, s := range batch.Seqs {
		at := int32(len(blocks))
		blocks = append(blocks, s.Blocks[:(s.Pos+s.Len+bs-1)/bs]...)
		for r0 := (s.Len - 1) / tr * tr; r0 >= 0; r0 -= tr {
			b.attnTiles = append(b.attnTiles, newAttnTile(int32(s.Start+r0), int32(min(tr, s.Len-r0)), int32(s.Pos+r0), at))
		}
	}
	// Costliest first (rows × positions read, which a window bounds), in
	// small chunks: a batch's
	// sequences differ in length by orders of magnitude, and a guided
	// chunk of the long ones left one thread working while the other
	// waited for a good part of attention's time in a serving run.
	read := func(t attnTile) int64 {
		first, _ := o.Span(int(t.pos), int(t.pos))
		return int64(t.rows) * int64(int(t.pos+t.rows)-first)
	}
	slices.SortStableFunc(b.attnTiles, func(a, b attnTile) int { return cmp.Compare(read(b), read(a)) })
	return blocks
}

// attnTileRows is the query rows of a tile: up to 16, fewer when the
// scores of a tile (rows · group · context floats) would outgrow 4 MiB,
// but never fewer than fill the 16 lanes of a vector. Each K and V row a
// tile reads is converted once for all of its queries, so a tile of few
// rows over a long context is that conversion over and over: tiles cut
// to 256 KiB of scores took one row over 12k positions for smollm-135m
// (3 queries), each new token of a turn over a long cached conversation
// then converting the whole context's K/V again (BenchmarkAttentionSuffix).
func attnTileRows(group, ctx int) int {
	fill := (16 + group - 1) / group
	return min(16, max(fill, 1<<20/(group*max(ctx, 1))))
}

// attnUnits is the rows of a tile of attention over c (group query heads
// a K/V head, at most maxCtx positions) and the floats of scratch a unit
// takes, for the kernel this level runs over c's kind of K/V.
func (b *Backend) attnUnits(c *KVCache, group, maxCtx int) (rows, scratch int) {
	if b.k.level.attnBF16(c.kvKind()) { // simd_attn_bf16.h
		rows = attnTileRowsBF16(group)
		return rows, attnScratchBF16(rows*group, c.spec.HeadDim)
	}
	rows = attnTileRows(group, maxCtx)
	return rows, attnScratch(rows*group, c.spec.HeadDim, maxCtx)
}

// attnTileRowsBF16 is the rows of a tile of the bfloat16 kernels: some
// 384 queries (24 tiles of 16; 192 measured ~12% slower at 512 rows after
// 11776 positions), at least 16 rows. Its K and V rows'
// conversion to bfloat16 tiles is a good part of a block's work beside
// the tile products, and is done once for all of a unit's queries.
func attnTileRowsBF16(group int) int { return max(16, 384/group) }

// attnScratch is the floats a unit of nq queries of head size d over n
// positions needs (simd_attn.c, simd_attn_avx2.c, simd_attn_avx512.c):
// for the flash kernels of many queries, the queries and outputs
// transposed (nq rounded up to 16 lanes, d to 16 columns) and a block of
// attnKB positions' scores and K and V rows, with the slack of a score
// tile of the AVX2 kernel; for an AVX-512 decode row (g ≤ 8 queries), up
// to four tiles of 16 transposed K rows (of at least 16 floats), its
// scores, query-major, n rounded up to 16 each, and a factor for each
// block of attnKB positions it reads; for the NEON kernel, a row's g·n
// scores and two rows.
func attnScratch(nq, d, n int) int {
	nqp := (nq + 15) &^ 15
	dv := (d + 15) &^ 15
	flash := nqp*(d+dv) + (attnKB+12)*(nqp+d) + attnKB*dv
	return max(nq*n+2*d, 64*max(d, 16)+8*(n+16)+8*(n/attnKB+2), flash)
}

// attnScratchBF16 is the floats of the bfloat16 kernels (simd_attn_bf16.h):
// 64-byte alignment, its tiles of 256 floats (the queries', the Kᵀ and V
// tiles of a block of attnKBBF16 positions), two P and S of a tile of 16
// queries, and per query its output row (d rounded up to 16), 16 lanes
// of l, and m.
func attnScratchBF16(nq, d int) int {
	nt, nck, ncv := (nq+15)/16, (d+31)/32, (d+15)/16
	return 16 + 256*(nt*nck+attnKBBF16/16*nck+attnKBBF16/32*ncv) + 2*(16*attnKBBF16/2+16*attnKBBF16) + 16*nt*(16*ncv+17)
}

// attnKBBF16 is the positions of a block of the bfloat16 kernels (their akb).
const attnKBBF16 = 256

// attnKB is the positions of a block of the flash kernels' online softmax
// (simd_attn.h's attnKB): blocks start at its multiples.
const attnKB = 48

type simdAttentionTask struct {
	kern    *kernels
	dst, q  []float32
	qcols   int // Heads · HeadDim
	c       *KVCache
	layer   int
	tiles   []attnTile
	blocks  []int32 // the block tables of the batch's sequences, one after another
	group   int     // query heads per K/V head
	parts   int     // runs of query heads a K/V head's units split its group into (headParts)
	opts    gpu.AttnOpts
	sinks   []float32 // opts.Sinks' logits, one per query head; nil: none
	scratch int       // floats of scratch per unit, at most
}

func (t *simdAttentionTask) run(w *worker, lo, hi int) {
	spec := t.c.spec
	scratch := grow(&w.scores, t.scratch)
	kl, vl := t.c.layerPtrs(t.layer)
	t.kern.attention(t.tiles, lo, hi, t.q, t.qcols, t.group, t.parts, spec.HeadDim, kl, vl, t.c.kvKind(),
		t.blocks, spec.BlockSize, spec.KVHeads, t.opts, t.sinks, t.dst, scratch)
}
