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
	return gpu.HostMemory
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
	if err := g.GrowKVCache(e.m.KV, target); err != nil {
		return fmt.Errorf("%w: growing the K/V cache to %d tokens for num_ctx %d: %w; lower num_ctx or set FOLIO_KV_MEMORY",
			ErrNoMemory, target*spec.BlockSize, numCtx, err)
	}
	if err := e.pm.Grow(target); err != nil {
		panic(err) // the backend grew to target blocks, which Check allowed
	}
	e.grows.Add(1)
	e.noteBlocks()
	return nil
}

func gib(n int64) string { return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30)) }
