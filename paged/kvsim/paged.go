package kvsim

import (
	"fmt"

	"folio/paged"
)

// pagedAlloc runs the real paged.Manager: a request's prompt is one
// sequence, forked n-1 times after prefill; every step is one Plan of a
// token per sequence, committed whole or not at all.
type pagedAlloc struct {
	m         *paged.Manager
	bs        int
	watermark int     // blocks admission leaves free, 1% as in vLLM, so running sequences can grow
	seen      []int32 // per block, the last usage() pass that counted it
	pass      int32
	plan      paged.Plan
}

func newPaged(cfg Config, bs int) (*pagedAlloc, error) {
	n := paged.BlocksForBudget(cfg.Budget, cfg.BytesPerToken, bs)
	m, err := paged.New(paged.Config{Blocks: n, BlockSize: bs})
	if err != nil {
		return nil, fmt.Errorf("kvsim: %w", err)
	}
	return &pagedAlloc{m: m, bs: bs, watermark: max(1, n/100), seen: make([]int32, n)}, nil
}

// need is the number of blocks n sequences of length prompt+gen take when
// they share the prompt: the prompt's full blocks once, then each
// sequence's own from its first written block. Before any token is
// generated they share everything.
func (p *pagedAlloc) need(prompt, gen, n int) int {
	if gen == 0 || n == 1 {
		return ceilDiv(prompt+gen, p.bs)
	}
	shared := prompt / p.bs
	return shared + n*(ceilDiv(prompt+gen, p.bs)-shared)
}

func (p *pagedAlloc) fitsAlone(g *group) bool {
	return p.need(g.req.Prompt, g.req.Output, g.n) <= p.m.NumBlocks()
}

func (p *pagedAlloc) admit(g *group) bool {
	if p.need(g.req.Prompt, g.gen, g.n)+p.watermark > p.m.FreeBlocks() {
		return false
	}
	first := p.m.NewSeq("")
	p.mustAppend(first, g.req.Prompt)
	g.seqs = []paged.SeqID{first}
	for range g.n - 1 {
		g.seqs = append(g.seqs, p.m.Fork(first))
	}
	if g.gen > 0 { // recompute after preemption
		for _, s := range g.seqs {
			p.mustAppend(s, g.gen)
		}
	}
	p.m.DrainCopies(nil)
	return true
}

// mustAppend appends what admit has checked will fit: a failure is a
// disagreement between need and the allocator.
func (p *pagedAlloc) mustAppend(s paged.SeqID, n int) {
	if err := p.m.Append(s, n); err != nil {
		panic(fmt.Sprintf("kvsim: admission counted wrong: %v", err))
	}
}

func (p *pagedAlloc) grow(g *group) bool {
	for _, s := range g.seqs {
		if err := p.m.Reserve(&p.plan, s, 1); err != nil {
			p.plan = paged.Plan{}
			return false
		}
	}
	p.m.Commit(&p.plan)
	p.m.DrainCopies(nil)
	return true
}

func (p *pagedAlloc) release(g *group) {
	for _, s := range g.seqs {
		p.m.Free(s)
	}
	g.seqs = nil
}

// usage counts the slots of the allocated blocks; the empty ones are the
// tails of each distinct partly filled last block.
func (p *pagedAlloc) usage(running []*group) (int64, int64) {
	p.pass++
	alloc := int64(p.m.NumBlocks()-p.m.FreeBlocks()) * int64(p.bs)
	empty := int64(0)
	for _, g := range running {
		for _, s := range g.seqs {
			n, t := p.m.Len(s), p.m.Table(s)
			if n%p.bs == 0 || p.seen[t[len(t)-1]] == p.pass {
				continue
			}
			p.seen[t[len(t)-1]] = p.pass
			empty += int64(p.bs - n%p.bs)
		}
	}
	return alloc, alloc - empty
}

func (p *pagedAlloc) footprint(g *group) (int64, int64) {
	p.pass++
	used, unshared := int64(0), int64(0)
	for _, s := range g.seqs {
		t := p.m.Table(s)
		unshared += int64(len(t))
		for _, b := range t {
			if p.seen[b] != p.pass {
				p.seen[b] = p.pass
				used++
			}
		}
	}
	return used, unshared
}
