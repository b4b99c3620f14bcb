// Package kvsim replays request traces through KV-cache allocation
// policies, with no model: static reservation of the full context,
// contiguous buffers that double when full, and paged blocks through the
// real paged.Manager. It measures memory waste, how many sequences fit in
// a budget, and what parallel sampling costs. folio dev kvsim prints it.
package kvsim

import (
	"fmt"
	"math"
	"slices"

	"folio/gpu"
	"folio/models/gguf"
	"folio/paged"
)

// Config is the memory a simulation has and how it steps.
type Config struct {
	Budget        int64   // bytes of KV memory
	BytesPerToken int64   // one token's K and V over all layers
	Step          float64 // seconds per decode step
}

// Llama8B is the K/V size of a token of a Llama-3-8B-class model at F16:
// 2 · 32 layers · 8 KV heads · 128 · 2 bytes = 128 KiB.
var Llama8B = gpu.KVSpec{Layers: 32, KVHeads: 8, HeadDim: 128, Type: gguf.TypeF16}.BytesPerToken()

// DefaultConfig: a 24 GiB KV budget of Llama8B tokens (196,608 tokens),
// 20 ms a decode step.
var DefaultConfig = Config{Budget: 24 << 30, BytesPerToken: Llama8B, Step: 0.020}

// Policy names an allocation policy: "static", "doubling", or "paged"
// with a block size.
type Policy struct {
	Name      string
	BlockSize int // paged only
}

// Policies are the ones folio dev kvsim compares.
var Policies = []Policy{{"static", 0}, {"doubling", 0}, {"paged", 8}, {"paged", 16}, {"paged", 32}}

// UnitTokens is the block size in which static and doubling rows count
// their memory: they have no blocks, so their blocks are 16-token units.
const UnitTokens = 16

// Row is the outcome of one trace, policy and parallel-sampling width.
type Row struct {
	Trace     string `json:"trace"`
	Policy    string `json:"policy"`
	BlockSize int    `json:"block_size"` // 0 for static and doubling
	ParallelN int    `json:"parallel_n"`
	// WastePct is the share of allocated KV slots holding no token,
	// averaged over the steps of the replay.
	WastePct float64 `json:"waste_pct"`
	// MaxConcurrent is the most sequences (n per request) resident at once.
	MaxConcurrent int `json:"max_concurrent"`
	// BlocksUsed sums, over completed requests, the blocks their n
	// sequences held together at the end; BlocksUnshared is what n
	// independent copies would hold. Static and doubling count 16-token
	// units and share nothing.
	BlocksUsed     int64 `json:"blocks_used"`
	BlocksUnshared int64 `json:"blocks_unshared"`

	Completed, Rejected, Preemptions int `json:"-"`
}

// SavedPct is how much less memory sharing takes than n copies.
func (r Row) SavedPct() float64 {
	if r.BlocksUnshared == 0 {
		return 0
	}
	return 100 * (1 - float64(r.BlocksUsed)/float64(r.BlocksUnshared))
}

// ParallelN are the parallel-sampling widths RunAll tries.
var ParallelN = []int{1, 2, 4, 8}

// RunAll runs every trace with every width of ParallelN under every one of
// Policies, in that nesting order.
func RunAll(traces []Trace, cfg Config) ([]Row, error) {
	var rows []Row
	for _, t := range traces {
		for _, n := range ParallelN {
			for _, p := range Policies {
				r, err := Run(t, p, n, cfg)
				if err != nil {
					return nil, err
				}
				rows = append(rows, r)
			}
		}
	}
	return rows, nil
}

// group is one request's n sequences, which advance together.
type group struct {
	req Request
	n   int
	gen int // tokens each sequence has generated
	// one of these, by policy
	seqs []paged.SeqID // paged
	caps []int         // doubling: each sequence's buffer, in tokens
}

func (g *group) len() int { return g.req.Prompt + g.gen }

// allocator is a policy's memory. Every method either does all it says or
// nothing.
type allocator interface {
	// fitsAlone: the group could run to completion in the empty budget.
	fitsAlone(g *group) bool
	// admit allocates the group's prompt and generated tokens so far.
	admit(g *group) bool
	// grow makes room for one more token in each of its sequences.
	grow(g *group) bool
	release(g *group)
	// usage is the allocated and the occupied token slots now.
	usage(running []*group) (alloc, used int64)
	// footprint is the group's blocks, shared and as if unshared.
	footprint(g *group) (used, unshared int64)
}

// Run replays trace through policy p with every request sampled n times.
// Requests arrive on the trace's clock; each step admits waiting requests
// first come first served while they fit (their prompts prefilled at
// once), and gives every running sequence one token, the oldest first.
// When memory runs out the newest running request is preempted: its
// memory is freed and it waits at the front of the queue, to be
// recomputed (prompt and tokens so far) when it fits again. A request
// that could not complete even alone in the budget is rejected.
func Run(trace Trace, p Policy, n int, cfg Config) (Row, error) {
	a, err := newAllocator(trace, p, cfg)
	if err != nil {
		return Row{}, err
	}
	row := Row{Trace: trace.Name, Policy: p.Name, BlockSize: p.BlockSize, ParallelN: n}
	var waiting, running []*group
	var sumAlloc, sumWaste float64
	next := 0
	for step := 0; ; step++ {
		if len(running) == 0 && len(waiting) == 0 {
			if next == len(trace.Requests) {
				break
			}
			step = max(step, int(trace.Requests[next].Arrival/cfg.Step))
		}
		now := float64(step) * cfg.Step
		for ; next < len(trace.Requests) && trace.Requests[next].Arrival <= now; next++ {
			waiting = append(waiting, &group{req: trace.Requests[next], n: n})
		}
		for i := 0; i < len(running); {
			if a.grow(running[i]) {
				running[i].gen++
				i++
				continue
			}
			last := running[len(running)-1]
			running = running[:len(running)-1]
			a.release(last)
			waiting = slices.Insert(waiting, 0, last)
			row.Preemptions++
		}
		running = slices.DeleteFunc(running, func(g *group) bool {
			if g.gen < g.req.Output {
				return false
			}
			used, unshared := a.footprint(g)
			row.BlocksUsed += used
			row.BlocksUnshared += unshared
			row.Completed++
			a.release(g)
			return true
		})
		for len(waiting) > 0 {
			g := waiting[0]
			if !a.fitsAlone(g) {
				row.Rejected++
			} else if !a.admit(g) {
				break
			} else {
				running = append(running, g)
			}
			waiting = waiting[1:]
		}
		alloc, used := a.usage(running)
		sumAlloc += float64(alloc)
		sumWaste += float64(alloc - used)
		row.MaxConcurrent = max(row.MaxConcurrent, n*len(running))
		if step > 1e8 {
			return row, fmt.Errorf("kvsim: %s under %s did not finish in 10⁸ steps", trace.Name, p.Name)
		}
	}
	if sumAlloc > 0 {
		row.WastePct = math.Round(1e5*sumWaste/sumAlloc) / 1e3 // percent, 3 decimals
	}
	return row, nil
}

func newAllocator(trace Trace, p Policy, cfg Config) (allocator, error) {
	tokens := cfg.Budget / cfg.BytesPerToken
	switch p.Name {
	case "static":
		return &static{capacity: tokens, maxLen: trace.MaxLen}, nil
	case "doubling":
		return &doubling{capacity: tokens, maxLen: trace.MaxLen}, nil
	case "paged":
		return newPaged(cfg, p.BlockSize)
	}
	return nil, fmt.Errorf("kvsim: unknown policy %q (want static, doubling or paged)", p.Name)
}

// static reserves the full context for every sequence when it starts.
type static struct {
	capacity, held int64
	maxLen         int
}

func (s *static) fitsAlone(g *group) bool { return int64(g.n*s.maxLen) <= s.capacity }
func (s *static) admit(g *group) bool {
	if s.held+int64(g.n*s.maxLen) > s.capacity {
		return false
	}
	s.held += int64(g.n * s.maxLen)
	return true
}
func (s *static) grow(g *group) bool { return true }
func (s *static) release(g *group)   { s.held -= int64(g.n * s.maxLen) }
func (s *static) usage(running []*group) (int64, int64) {
	used := int64(0)
	for _, g := range running {
		used += int64(g.n * g.len())
	}
	return s.held, used
}
func (s *static) footprint(g *group) (int64, int64) {
	u := int64(g.n * ceilDiv(s.maxLen, UnitTokens))
	return u, u
}

// doubling gives each sequence a contiguous buffer, a power of two at
// least its prompt, and moves it to one twice as large when it fills: the
// new buffer must fit while the old is still held.
type doubling struct {
	capacity, held int64
	maxLen         int
}

func (d *doubling) capFor(tokens int) int {
	c := UnitTokens
	for c < tokens {
		c *= 2
	}
	return min(c, d.maxLen)
}

func (d *doubling) fitsAlone(g *group) bool {
	f := d.capFor(g.req.Prompt + g.req.Output)
	return int64(g.n*f+f/2) <= d.capacity
}

func (d *doubling) admit(g *group) bool {
	c := d.capFor(g.len())
	if d.held+int64(g.n*c) > d.capacity {
		return false
	}
	d.held += int64(g.n * c)
	g.caps = slices.Repeat([]int{c}, g.n)
	return true
}

func (d *doubling) grow(g *group) bool {
	if g.len() < g.caps[0] { // all sequences of a group have one length
		return true
	}
	old, c := g.caps[0], min(2*g.caps[0], d.maxLen)
	// One sequence at a time: its new buffer beside its old one.
	if d.held+int64((g.n-1)*(c-old)+c) > d.capacity {
		return false
	}
	d.held += int64(g.n * (c - old))
	for i := range g.caps {
		g.caps[i] = c
	}
	return true
}

func (d *doubling) release(g *group) {
	for _, c := range g.caps {
		d.held -= int64(c)
	}
	g.caps = nil
}

func (d *doubling) usage(running []*group) (int64, int64) {
	used := int64(0)
	for _, g := range running {
		used += int64(g.n * g.len())
	}
	return d.held, used
}

func (d *doubling) footprint(g *group) (int64, int64) {
	u := int64(0)
	for _, c := range g.caps {
		u += int64(ceilDiv(c, UnitTokens))
	}
	return u, u
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
