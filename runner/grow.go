package runner

import (
	"fmt"

	"folio/gpu"
)

// DefaultKVBudget is the most memory the K/V pool of a model loaded
// without FOLIO_KV_MEMORY may grow to: half of the memory available at
// load once the rest of the model (weights, repacked copies, scratch:
// modelBytes) is set aside, and never less than the pool it starts with
// (floor), so a machine short of memory keeps the pool it loaded with.
// Ollama likewise picks its default context from the memory it finds.
func DefaultKVBudget(available, modelBytes, floor int64) int64 {
	return max(floor, (available-modelBytes)/2)
}

// poolStart is the tokens a model's K/V pool loads with: room for four
// sequences of num_ctx up to four of the default context (16,384 tokens),
// for one of num_ctx past that. Paged, a sequence holds only the blocks
// its tokens fill, so requests of a few thousand tokens share a pool sized
// for one long num_ctx, as Ollama's one sequence of it; sequences that do
// not fit grow it back towards 4 × num_ctx (Engine.growPool), and a
// longer num_ctx grows it too (Engine.reserve).
func poolStart(numCtx int) int { return max(numCtx, min(4*numCtx, 4*DefaultNumCtx)) }

// fitPool shrinks the pool a model loads with (specs[0], room for
// poolStart tokens) to what fits in budget beside the other groups' pools,
// but never below num_ctx tokens: on a machine with little memory free a
// long num_ctx loads with room for one sequence of it, as Ollama's would,
// and the pool grows for more while memory allows.
func fitPool(specs []gpu.KVSpec, budget int64, numCtx int) {
	var total int64
	for _, sp := range specs {
		total += sp.Bytes()
	}
	if total <= budget {
		return
	}
	sp := &specs[0]
	fit := int(max(budget-(total-sp.Bytes()), 0) / sp.BlockBytes())
	sp.Blocks = min(sp.Blocks, max(fit, ceilDiv(numCtx, sp.BlockSize)))
}

// hostMemory is gpu.HostMemory, which tests replace.
var hostMemory = gpu.HostMemory

// memoryOf reads the memory where be's K/V pools live, for sizing their
// growth: a device's (gpu.FreeMemory: a GPU's free bytes), else the
// host's (total 0 for a device: unused).
func memoryOf(be gpu.Backend) func() (available, total int64, ok bool) {
	if fm, dev := be.(gpu.FreeMemory); dev {
		return func() (int64, int64, bool) {
			free, err := fm.Free()
			return free, 0, err == nil
		}
	}
	return hostMemory
}

// growPool grows the first group's pool, short of need blocks with
// nothing left to evict, to at least twice its size, up to room for 4 ×
// num_ctx tokens (the pool a model loads with where num_ctx is short and
// memory to spare: a longer num_ctx loads with less, poolStart), within
// the budget and half the memory free now (the new pool is allocated
// before the old one goes). It reports whether it grew; if not, the caller
// waits or preempts.
func (e *Engine) growPool(need int) bool {
	gr, ok := e.m.Arch.Backend().(gpu.KVGrower)
	if !ok || e.m.Opt.KVMemory > 0 {
		return false
	}
	spec := e.m.KV.Spec()
	per := spec.BlockBytes()
	limit := int(min(int64(ceilDiv(4*e.m.Opt.NumCtx, spec.BlockSize)), e.m.KVBudget/per))
	if avail, _, ok := e.poolMemory(); ok {
		limit = int(min(int64(limit), avail/2/per))
	}
	target := min(max(2*spec.Blocks, spec.Blocks+need), limit)
	return target > spec.Blocks && e.growTo(gr, target) == nil
}

// growTo grows the first group's pool to target blocks: the backend's in
// place, then the paged manager's count.
func (e *Engine) growTo(gr gpu.KVGrower, target int) error {
	if err := gr.GrowKVCache(e.m.KV, target); err != nil {
		return err
	}
	if err := e.pm.Grow(target); err != nil {
		panic(err) // the backend grew to target blocks, which Check allowed
	}
	e.grows.Add(1)
	e.noteBlocks()
	return nil
}

// poolTokens is the number of tokens the K/V pool holds now. Any
// goroutine may ask.
func (e *Engine) poolTokens() int {
	return e.m.KV.Spec().Tokens()
}

// reserve makes the K/V pool hold a context of numCtx tokens, growing it
// between steps when it is smaller, or says why it cannot: the pool's size
// was fixed by FOLIO_KV_MEMORY (400), numCtx is past the model's K/V
// budget (400), the backend cannot grow its pool (400), or the memory is
// not free now (507).
func (e *Engine) reserve(numCtx int) error {
	if numCtx <= e.poolTokens() {
		return nil
	}
	var err error
	if derr := e.do(func() { err = e.grow(numCtx) }); derr != nil {
		return derr
	}
	return err
}

// grow runs on the loop goroutine, between steps: the backend grows its
// pool in place (every block keeps its ID and its K/V), then the paged
// manager learns the new count, so running sequences, their tables and
// the prefix cache carry on as they were. The pool at least doubles, up to
// the budget, so a few growths reach any size.
func (e *Engine) grow(numCtx int) error {
	spec := e.m.KV.Spec()
	have := spec.Tokens()
	if numCtx <= have { // another request grew it first
		return nil
	}
	if e.m.Opt.KVMemory > 0 {
		return fmt.Errorf("%w: num_ctx %d is larger than the K/V cache (%d tokens), which FOLIO_KV_MEMORY fixes at %s: lower num_ctx or raise FOLIO_KV_MEMORY",
			ErrRequest, numCtx, have, gib(e.m.Opt.KVMemory))
	}
	g, ok := e.m.Arch.Backend().(gpu.KVGrower)
	if !ok {
		return fmt.Errorf("%w: num_ctx %d is larger than the K/V cache (%d tokens), which the %s backend cannot grow: lower num_ctx, or set FOLIO_CONTEXT_LENGTH or FOLIO_KV_MEMORY so that the model loads with room for it",
			ErrRequest, numCtx, have, e.m.Arch.Backend().Name())
	}
	per := spec.BlockBytes()
	need := ceilDiv(numCtx, spec.BlockSize)
	limit := int(min(e.m.KVBudget/per, int64(1<<31/spec.BlockSize)))
	if need > limit {
		return fmt.Errorf("%w: num_ctx %d needs a K/V cache of %s, more than this model's budget of %s (half the memory free at load, after the model): lower num_ctx, or set FOLIO_KV_MEMORY to the K/V cache size to reserve at load",
			ErrRequest, numCtx, gib(int64(need)*per), gib(e.m.KVBudget))
	}
	target := min(max(need, 2*spec.Blocks), limit)
	if avail, _, ok := e.poolMemory(); ok {
		// the new pool is allocated whole before the old one goes: it must
		// fit in half of what is free now, as the budget did at load
		fit := int(min(avail/2/per, int64(limit)))
		if need > fit {
			return fmt.Errorf("%w: num_ctx %d needs a K/V cache of %s and %s is available now: lower num_ctx, free memory, or set FOLIO_KV_MEMORY to reserve the K/V cache at load",
				ErrNoMemory, numCtx, gib(int64(need)*per), gib(avail))
		}
		target = min(target, fit)
	}
	if err := e.growTo(g, target); err != nil {
		return fmt.Errorf("%w: growing the K/V cache to %d tokens for num_ctx %d: %w; lower num_ctx or set FOLIO_KV_MEMORY",
			ErrNoMemory, target*spec.BlockSize, numCtx, err)
	}
	return nil
}

func gib(n int64) string { return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30)) }
