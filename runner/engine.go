package runner

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"folio/gpu"
	"folio/models"
	"folio/paged"
	"folio/runner/grammar"
)

var (
	// ErrClosed is returned by Submit after Close, and ends the streams of
	// requests still running when the engine closes.
	ErrClosed = errors.New("runner: engine closed")
	// ErrBusy is returned by Submit when the queue is full.
	ErrBusy = errors.New("runner: too many requests waiting")
	// ErrFailed is wrapped by the error of every request of an engine whose
	// backend failed in a step (a device fault): the engine serves no more
	// and its model should be loaded again.
	ErrFailed = errors.New("runner: the compute backend failed")
)

// EngineOptions tune the scheduler. The zero value gives the defaults.
type EngineOptions struct {
	NumBatch int // tokens per step, shared by prefill chunks and decode tokens; default the model's num_batch
	// PrefillShare caps the prefill tokens of a step that also decodes,
	// bounding the inter-token latency of running requests while new ones
	// start; default NumBatch/4 (at least one block).
	PrefillShare  int
	MaxSeqs       int  // sequences running at once; default (and at most) the model's MaxSeqs
	NumCtx        int  // a request's context when it sets none; default the model's num_ctx
	MaxQueue      int  // requests waiting for admission at most; 0: no limit
	NoPrefixCache bool // compute every prompt in full (for comparisons)
	// Watermark is the fraction of the pool kept free when admitting a
	// new request, so that running sequences can grow; default 0.01.
	Watermark float64
	// Store persists full blocks and restores them after a restart; nil
	// keeps prefixes in memory only. Fingerprint names the model's K/V
	// in it; empty: Fingerprint(models.FileDigest(model file), model).
	Store       PrefixStore
	Fingerprint string
	// Finished, when set, receives each request's Stats as it ends (the
	// figures its stream's last event carries). It runs on the engine's
	// loop goroutine and must not block: the server adds them to its
	// metrics.
	Finished func(Stats)
}

// Engine serves many requests at once on one model: continuous batching
// over the paged K/V cache, chunked prefill, preemption by recomputation,
// prefix reuse through the radix cache, and parallel sampling by forks.
//
// One goroutine (loop) owns the model, the paged.Manager and every
// sequence; the rest of the program talks to it through Submit and the
// request's Stream. Fields below "loop-owned" are touched by no other
// goroutine.
type Engine struct {
	m     *Model
	opt   EngineOptions
	in    chan *request
	calls chan func() // run on the loop goroutine (inspection, cache control)
	quit  chan struct{}
	done  chan struct{}
	queue atomic.Int64 // requests submitted and not yet admitted or ended
	peak  atomic.Int64 // the most blocks held at once (tables and cache), of the first layer group
	used  atomic.Int64 // blocks held now, of the first layer group
	// groupPeak, groupUsed: the same for every layer group
	groupPeak, groupUsed []atomic.Int64
	steps                atomic.Int64
	grows                atomic.Int64 // times the K/V pool grew
	// nRunning: len(running), for other goroutines; active: blocks of the
	// first layer group that running sequences hold (a cached prefix no
	// sequence uses is not active: it is evicted on demand)
	nRunning, active atomic.Int64
	// failed holds the error of a step that panicked (a backend fault);
	// from then on every request ends with it.
	failed atomic.Pointer[error]
	// stepFault, set by tests before any request, runs at the start of
	// every step: a seam for backend faults.
	stepFault func()
	// poolMemory reads the memory available now where the K/V pools live,
	// before one grows (memoryOf: the host's, or a GPU's; tests set another
	// before any request).
	poolMemory func() (available, total int64, ok bool)

	// loop-owned
	pm          *paged.Manager
	persist     *persistence    // nil without a store
	toks        *grammar.Tokens // the vocabulary for format constraints, built on first use
	waiting     []*sequence     // preempted ones first, then by arrival
	running     []*sequence     // by admission order
	order       uint64          // last admission order handed out
	nextDecode  int             // index in running where the next plan's decode tokens start
	logits      []float32       // [MaxSeqs, Vocab] host copy of a step's logits
	greedy      []int32         // a greedy step's tokens, one per sampled row (greedyOnly)
	argmaxer    gpu.ArgMaxer    // the backend's, nil when it has none
	argmaxSteps int             // steps that sampled through the backend's ArgMax
	refused     int             // forward passes the model refused (Engine.run)
	plan        paged.Plan
	// wantBlocks is how many blocks a prefill chunk lacked in the last
	// plan: the prefix cache gives them up before the next one.
	wantBlocks int
	wantGroup  int // the layer group wantBlocks are of
	chunks     []chunk
	copies     []paged.Copy
	gcopies    []gpu.BlockCopy
	tokens     []int32
	outRows    []int32
	batch      gpu.Batch
	gbatches   []gpu.Batch // the other layer groups' batches
	// stamps marks the blocks noteBlocks has counted: block b is counted
	// in this pass when stamps[b] == stamp
	stamps []uint32
	stamp  uint32
}

// chunk is one sequence's part of a step: n tokens from tokens[computed:].
type chunk struct {
	s      *sequence
	n      int
	sample bool // the chunk ends the sequence's tokens: sample from its last row
}

// NewEngine starts an engine on m, which it uses exclusively until Close.
func NewEngine(m *Model, opt EngineOptions) (*Engine, error) {
	spec := m.KV.Spec()
	if opt.NumBatch <= 0 || opt.NumBatch > m.Opt.NumBatch {
		opt.NumBatch = m.Opt.NumBatch
	}
	if opt.MaxSeqs <= 0 || opt.MaxSeqs > m.Opt.MaxSeqs {
		opt.MaxSeqs = m.Opt.MaxSeqs
	}
	if opt.NumCtx <= 0 {
		opt.NumCtx = m.Opt.NumCtx
	}
	opt.NumCtx = min(opt.NumCtx, spec.Tokens())
	if opt.PrefillShare <= 0 || opt.PrefillShare > opt.NumBatch {
		opt.PrefillShare = max(opt.NumBatch/4, min(spec.BlockSize, opt.NumBatch))
	}
	if opt.Watermark <= 0 {
		opt.Watermark = 0.01
	}
	pm, err := paged.New(paged.Config{BlockSize: spec.BlockSize, Groups: m.pagedGroups()})
	if err != nil {
		return nil, err
	}
	e := &Engine{m: m, opt: opt, pm: pm, in: make(chan *request, 256), calls: make(chan func()),
		quit: make(chan struct{}), done: make(chan struct{}), poolMemory: memoryOf(m.Arch.Backend()),
		logits: make([]float32, opt.MaxSeqs*m.Arch.Vocab)}
	e.groupPeak, e.groupUsed = make([]atomic.Int64, len(m.Caches)), make([]atomic.Int64, len(m.Caches))
	e.argmaxer, _ = m.Arch.Backend().(gpu.ArgMaxer)
	if opt.Store != nil {
		bio, ok := m.Arch.Backend().(gpu.BlockIO)
		if !ok {
			return nil, fmt.Errorf("runner: backend %s cannot read blocks back: run without a prefix store", m.Arch.Backend().Name())
		}
		fp := opt.Fingerprint
		if fp == "" {
			digest, _, err := models.FileDigest(m.File.Path)
			if err != nil {
				return nil, err
			}
			fp = Fingerprint(digest, m)
		}
		size := int64(0)
		for _, kv := range m.Caches {
			size += kv.Spec().BlockBytes()
		}
		e.persist = &persistence{store: opt.Store, fp: fp, bio: bio, dtype: spec.Type.String(), buf: make([]byte, size)}
	}
	go e.loop()
	return e, nil
}

// Model is the engine's model.
func (e *Engine) Model() *Model { return e.m }

// Submit queues a request and returns its stream. The request ends when
// ctx does, or when the stream is cancelled. A num_ctx larger than the K/V
// pool grows the pool first, between steps, when the model's K/V budget
// and the free memory allow; otherwise Submit says which limit stood in
// the way.
func (e *Engine) Submit(ctx context.Context, req Request) (*Stream, error) {
	if len(req.Prompt) == 0 {
		bos := e.m.Tok.Vocab().BOS
		if bos < 0 {
			return nil, fmt.Errorf("%w: empty prompt and the model has no BOS token to start from", ErrRequest)
		}
		req.Prompt = []int32{bos}
	}
	if err := req.check(e.opt.NumCtx); err != nil {
		return nil, err
	}
	if err := e.Err(); err != nil {
		return nil, err
	}
	for i, t := range req.Prompt {
		if t < 0 || int(t) >= e.m.Arch.Vocab {
			return nil, fmt.Errorf("%w: prompt token %d at %d is outside the vocabulary of %d", ErrRequest, t, i, e.m.Arch.Vocab)
		}
	}
	if e.opt.MaxQueue > 0 && e.queue.Load() >= int64(e.opt.MaxQueue) {
		return nil, fmt.Errorf("%w (%d queued): retry later or raise FOLIO_MAX_QUEUE", ErrBusy, e.queue.Load())
	}
	if err := e.reserve(req.NumCtx); err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	r := &request{Request: req, ctx: rctx, stream: newStream(cancel), arrived: time.Now(), extra: req.CacheKey, live: 1}
	r.Prompt = append([]int32(nil), req.Prompt...)
	e.queue.Add(1)
	select {
	case e.in <- r:
		return r.stream, nil
	case <-e.quit:
		e.queue.Add(-1)
		cancel()
		return nil, ErrClosed
	case <-ctx.Done():
		e.queue.Add(-1)
		cancel()
		return nil, ctx.Err()
	}
}

// Close stops the engine: requests still queued or running end with
// ErrClosed. It does not close the model.
func (e *Engine) Close() {
	select {
	case <-e.quit:
	default:
		close(e.quit)
	}
	<-e.done
}

// EngineStats is a snapshot of the engine's load. Blocks, UsedBlocks,
// ActiveBlocks and PeakBlocks are the first layer group's; Groups has
// every group's. UsedBlocks counts cached prefixes, ActiveBlocks only the
// blocks of running sequences (what a scheduler reads as K/V usage: a
// cached prefix no sequence holds is given up on demand).
type EngineStats struct {
	Blocks, UsedBlocks, PeakBlocks int
	ActiveBlocks                   int
	Running                        int // sequences admitted and computing or generating
	Queued                         int // requests waiting for admission, preempted ones included
	Steps                          int64
	Growths                        int64 // times the K/V pool grew for a larger num_ctx
	Groups                         []GroupStats
}

// GroupStats is one layer group's part of the K/V cache: its layers, its
// window (0: full attention), its pool and the blocks held now and at
// most (tables and cache). A block of the group holds Layers layers' K/V.
type GroupStats struct {
	Layers, Window     int
	Blocks, Used, Peak int
}

// Stats returns the engine's figures so far.
func (e *Engine) Stats() EngineStats {
	st := EngineStats{Blocks: e.m.KV.Spec().Blocks, UsedBlocks: int(e.used.Load()), ActiveBlocks: int(e.active.Load()),
		PeakBlocks: int(e.peak.Load()), Running: int(e.nRunning.Load()), Queued: int(e.queue.Load()),
		Steps: e.steps.Load(), Growths: e.grows.Load()}
	for g, kv := range e.m.Caches {
		st.Groups = append(st.Groups, GroupStats{Layers: e.m.Groups.Layers[g], Window: e.m.Groups.Windows[g],
			Blocks: kv.Spec().Blocks, Used: int(e.groupUsed[g].Load()), Peak: int(e.groupPeak[g].Load())})
	}
	return st
}

// do runs f on the loop goroutine, between steps, and waits for it.
func (e *Engine) do(f func()) error {
	done := make(chan struct{})
	select {
	case e.calls <- func() { f(); close(done) }:
		<-done
		return nil
	case <-e.quit:
		return ErrClosed
	}
}

// DropPrefixCache lets go of cancelled requests, as the next step would
// first, then evicts every cached prefix no sequence uses, and returns the
// number of blocks evicted. A caller whose clients hung up finds their
// blocks free, not held until a step runs (the soak's quiet points).
func (e *Engine) DropPrefixCache() (freed int) {
	e.do(func() { freed = e.dropPrefixCache() })
	return freed
}

func (e *Engine) dropPrefixCache() int {
	e.reap()
	freed := e.pm.Radix().Evict(e.pm.NumBlocks())
	for g := 1; g < e.pm.Groups(); g++ {
		total, _ := e.pm.GroupBlocks(g)
		e.pm.Radix().EvictIn(g, total)
	}
	return freed
}

// CachedTokens is how many tokens the in-memory prefix cache holds.
func (e *Engine) CachedTokens() (n int) {
	e.do(func() { n = e.pm.Radix().Blocks() * e.pm.BlockSize() })
	return n
}

// Fingerprint is the name of this engine's model and K/V settings in the
// prefix store ("" without a store).
func (e *Engine) Fingerprint() string {
	if e.persist == nil {
		return ""
	}
	return e.persist.fp
}

// FreeBlocks is the number of blocks no sequence or cached prefix holds.
func (e *Engine) FreeBlocks() (free int) {
	e.do(func() { free = e.pm.FreeBlocks() })
	return free
}

// Err is the failure that stopped the engine's steps, or nil.
func (e *Engine) Err() error {
	if p := e.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// safeStep runs a step; a panic in it (a backend fault: a CUDA error
// surfaces as one) ends every request with ErrFailed instead of taking
// the process down, and marks the engine failed.
func (e *Engine) safeStep() {
	defer func() {
		if v := recover(); v != nil {
			err := fmt.Errorf("%w on %s: %v; the model must be loaded again", ErrFailed, e.m.Arch.Backend().Name(), v)
			e.failed.Store(&err)
			for _, s := range append(append([]*sequence{}, e.running...), e.waiting...) {
				e.finish(s, "", err)
			}
		}
	}()
	if e.stepFault != nil {
		e.stepFault()
	}
	e.step()
}

func (e *Engine) loop() {
	defer close(e.done)
	for {
		if len(e.running) == 0 && len(e.waiting) == 0 {
			select {
			case r := <-e.in:
				e.enqueue(r)
			case f := <-e.calls:
				f()
			case <-e.quit:
				e.shutdown()
				return
			}
		}
	drain:
		for {
			select {
			case r := <-e.in:
				e.enqueue(r)
			case f := <-e.calls:
				f()
			case <-e.quit:
				e.shutdown()
				return
			default:
				break drain
			}
		}
		if err := e.Err(); err != nil {
			for _, s := range e.waiting {
				e.finish(s, "", err)
			}
			continue
		}
		e.safeStep()
	}
}

func (e *Engine) enqueue(r *request) {
	s := &sequence{req: r, tokens: r.Prompt, nPrompt: len(r.Prompt), sampler: NewSampler(r.Sample),
		detok: e.newDetok(r.Prompt)}
	if r.Format != nil {
		if e.toks == nil {
			e.toks = grammar.TokensOf(e.m.Tok)
		}
		s.grammar = grammar.New(r.Format, e.toks)
		// the value must be complete by the last token the sequence may take
		left := r.NumCtx - len(r.Prompt)
		if r.NumPredict > 0 {
			left = min(left, r.NumPredict)
		}
		s.grammar.Limit(left)
	}
	e.waiting = append(e.waiting, s)
}

func (e *Engine) shutdown() {
	for _, s := range append(append([]*sequence{}, e.running...), e.waiting...) {
		e.finish(s, "", ErrClosed)
	}
	for {
		select {
		case r := <-e.in:
			e.enqueue(r)
			e.finish(e.waiting[len(e.waiting)-1], "", ErrClosed)
		default:
			return
		}
	}
}
