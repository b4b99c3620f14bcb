package runner

import (
	"fmt"

	"folio/gpu"
	"folio/models/arch"
	"folio/paged"
)

// slidingStartSeqs is how many sequences' windows a sliding group's pool
// starts with room for, on a backend that grows pools (gpu.KVGrower): it
// grows when more run at once (Engine.growGroup).
const slidingStartSeqs = 4

// slidingBlocks is the most blocks seqs sequences hold at once in a
// sliding group of window w: each its window and the block being
// written, and one pass of numBatch tokens on top.
func slidingBlocks(w, bs, seqs, numBatch int) int {
	return seqs*(ceilDiv(w, bs)+2) + ceilDiv(numBatch, bs) + 1
}

// groupSpecs sizes a K/V cache per layer group of g from base, the spec
// of one cache of every layer and base.Blocks blocks (num_ctx's worth):
// group 0 keeps base.Blocks; a sliding group (window W) holds what seqs
// sequences hold at once (slidingBlocks), never more than group 0. With
// fixed, the bytes the caches may take together (FOLIO_KV_MEMORY), group
// 0 gets what the others leave, and the sliding groups hold fewer
// sequences' windows (down to one) where that leaves group 0 less than
// numCtx tokens: the budget that holds num_ctx for every layer holds it
// with windows too.
func groupSpecs(g *arch.Groups, base gpu.KVSpec, seqs, numBatch, numCtx int, fixed int64) []gpu.KVSpec {
	specs := make([]gpu.KVSpec, len(g.Layers))
	for s := seqs; ; s-- {
		var rest int64
		for i := range g.Layers {
			sp := g.Spec(i, base)
			if w := g.Windows[i]; i > 0 && w > 0 {
				sp.Blocks = min(base.Blocks, slidingBlocks(w, sp.BlockSize, s, numBatch))
				rest += sp.Bytes()
			}
			specs[i] = sp
		}
		if fixed <= 0 {
			return specs
		}
		specs[0].Blocks = int(max(fixed-rest, 0) / specs[0].BlockBytes())
		if specs[0].Tokens() >= numCtx || s <= 1 {
			return specs
		}
	}
}

// startSliding shrinks each sliding group's spec to the pool it starts
// with on a backend that grows pools: room for slidingStartSeqs
// sequences. It returns the bytes that saves.
func startSliding(g *arch.Groups, specs []gpu.KVSpec, opt LoadOptions) int64 {
	var saved int64
	for i := 1; i < len(specs); i++ {
		if w := g.Windows[i]; w > 0 {
			before := specs[i].Bytes()
			specs[i].Blocks = min(specs[i].Blocks, slidingBlocks(w, specs[i].BlockSize, min(opt.MaxSeqs, slidingStartSeqs), opt.NumBatch))
			saved += before - specs[i].Bytes()
		}
	}
	return saved
}

// newCaches allocates a cache per spec, group g's for its layers: with
// several groups, a backend that places layers (gpu.LayerKVCacher) places
// each group's K/V with its layers.
func newCaches(be gpu.Backend, g *arch.Groups, specs []gpu.KVSpec) ([]gpu.KVCache, error) {
	lc, placed := be.(gpu.LayerKVCacher)
	var caches []gpu.KVCache
	for i, sp := range specs {
		var kv gpu.KVCache
		var err error
		if placed && len(specs) > 1 {
			kv, err = lc.NewLayerKVCache(sp, g.LayersOf(i))
		} else {
			kv, err = be.NewKVCache(sp)
		}
		if err != nil {
			return nil, kvTypeErr(err, sp)
		}
		caches = append(caches, kv)
	}
	return caches, nil
}

// pagedGroups is the paged.Manager's view of the model's layer groups:
// each cache's blocks and its group's window.
func (m *Model) pagedGroups() []paged.Group {
	var gs []paged.Group
	for i, kv := range m.Caches {
		gs = append(gs, paged.Group{Blocks: kv.Spec().Blocks, Window: m.Groups.Windows[i]})
	}
	return gs
}

// forwardGroups runs b, whose sequences' tables are group 0's, with
// tables(g, i) as sequence i's table in group g: through
// arch.Model.Forward with one group, as before layer groups, else
// through ForwardGroups with a batch per group built in bufs.
func (m *Model) forwardGroups(bufs *[]gpu.Batch, b *gpu.Batch, tables func(g, i int) []int32, tokens, out []int32, hidden bool) (gpu.Tensor, error) {
	if len(m.Caches) == 1 {
		if hidden {
			return m.Arch.Hidden(m.KV, b, tokens)
		}
		return m.Arch.Forward(m.KV, b, tokens, out)
	}
	for len(*bufs) < len(m.Caches) {
		*bufs = append(*bufs, gpu.Batch{})
	}
	bs := make([]*gpu.Batch, len(m.Caches))
	for g := range m.Caches {
		gb := &(*bufs)[g]
		if g == 0 {
			gb = b
		} else {
			gb.BlockSize, gb.Seqs = b.BlockSize, append(gb.Seqs[:0], b.Seqs...)
			for i := range gb.Seqs {
				gb.Seqs[i].Blocks = tables(g, i)
			}
		}
		bs[g] = gb
	}
	if hidden {
		return m.Arch.HiddenGroups(m.Groups, m.Caches, bs, tokens)
	}
	return m.Arch.ForwardGroups(m.Groups, m.Caches, bs, tokens, out)
}

// ringTables returns, per group, a table of n blocks for one sequence
// run from position 0 without a paged.Manager: group 0's blocks in
// order; a sliding group's blocks as a ring over its pool, which the
// group's window never reads around (the pool holds more than a window
// and a pass), or in order where the n blocks fit (a window longer than
// the sequence: Llama 4's chunks' reach of 8,192 past a short context).
// It says so when a group's pool is too small for either.
func (m *Model) ringTables(n, rows int) ([][]int32, error) {
	tables := make([][]int32, len(m.Caches))
	for g, kv := range m.Caches {
		sp := kv.Spec()
		ring := sp.Blocks
		if w := m.Groups.Windows[g]; w > 0 && g > 0 && n > ring {
			if need := ceilDiv(w+rows, sp.BlockSize) + 1; ring < need {
				return nil, fmt.Errorf("runner: layer group %d's pool of %d blocks is smaller than its window and a pass (%d): lower num_batch", g, ring, need)
			}
		} else if n > ring {
			return nil, fmt.Errorf("runner: %d blocks asked of a pool of %d", n, ring)
		}
		t := make([]int32, n)
		for i := range t {
			t[i] = int32(i % ring)
		}
		tables[g] = t
	}
	return tables, nil
}

// RingTables is, per layer group, a block table of n blocks for one
// sequence run without an engine from position 0, in passes of at most
// rows tokens: group 0's pool in order, a sliding group's as a ring (see
// Logits). Tools that time the model (folio bench) use it with Forward.
func (m *Model) RingTables(n, rows int) ([][]int32, error) { return m.ringTables(n, rows) }

// Forward runs b, one sequence whose block table in group g is tables[g]
// (b's own table is ignored when there are several groups), as
// arch.Model.Forward does on every layer group's cache. It is not safe
// for concurrent use, nor while an engine runs on the model.
func (m *Model) Forward(b *gpu.Batch, tables [][]int32, tokens, out []int32) (gpu.Tensor, error) {
	return m.forwardGroups(&m.bufs, b, func(g, _ int) []int32 { return tables[g] }, tokens, out, false)
}

// growGroup grows sliding group g's pool (group 0's: growPool), short of need blocks with
// nothing left to evict, to at least twice its size, up to what its
// sequences can hold at once (slidingBlocks of MaxSeqs, and never more
// than group 0's pool), when the backend grows pools, FOLIO_KV_MEMORY did
// not fix them, and the memory is free (the new pool must fit in half of
// it, as growing the first pool's must). It reports whether it grew; if
// not, the caller preempts.
func (e *Engine) growGroup(g, need int) bool {
	if g == 0 {
		return e.growPool(need)
	}
	kv, w := e.m.Caches[g], e.m.Groups.Windows[g]
	spec := kv.Spec()
	gr, ok := e.m.Arch.Backend().(gpu.KVGrower)
	limit := min(e.m.KV.Spec().Blocks, slidingBlocks(w, spec.BlockSize, e.opt.MaxSeqs, e.opt.NumBatch))
	if !ok || g == 0 || w == 0 || e.m.Opt.KVMemory > 0 || spec.Blocks >= limit {
		return false
	}
	target := min(max(2*spec.Blocks, spec.Blocks+need), limit)
	if avail, _, ok := e.poolMemory(); ok && int64(target)*spec.BlockBytes() > avail/2 {
		return false
	}
	if err := gr.GrowKVCache(kv, target); err != nil {
		return false
	}
	if err := e.pm.GrowGroup(g, target); err != nil {
		panic(err) // the backend grew to target blocks, which Check allowed
	}
	e.noteBlocks()
	return true
}
