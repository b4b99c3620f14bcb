package runner

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"folio/gpu"
	"folio/models/tokenizer"
	"folio/paged"
)

// step is one scheduler iteration: drop cancelled requests, admit waiting
// ones, plan a batch (decode tokens first, then prefill chunks) that fits
// the token budget and the free blocks — evicting cached prefixes, then
// preempting the newest sequences when it does not — run it, and sample.
func (e *Engine) step() {
	e.reap()
	e.admit()
	if !e.planBatch() {
		return
	}
	e.steps.Add(1)
	e.pm.Commit(&e.plan)
	if e.pm.PendingCopies() > 0 {
		e.copies = e.pm.DrainCopies(e.copies[:0])
		for g, kv := range e.m.Caches {
			e.gcopies = e.gcopies[:0]
			for _, c := range e.copies {
				if c.Group == g {
					e.gcopies = append(e.gcopies, gpu.BlockCopy{Src: int32(c.Src), Dst: int32(c.Dst)})
				}
			}
			if len(e.gcopies) > 0 {
				e.m.Arch.Backend().CopyBlocks(kv, e.gcopies)
			}
		}
	}
	e.noteBlocks()

	e.run(e.chunks)
}

// run computes chunks in one forward pass and samples from it. A pass
// that fails has computed nothing (arch.Model.Forward refuses a batch
// before it starts), so the chunks run again in halves: the sequence
// whose chunk the model refuses ends alone, the others go on as if
// batched together, at the cost of a few refused calls.
func (e *Engine) run(chunks []chunk) {
	out, err := e.forward(chunks)
	if err != nil {
		e.refused++
		if len(chunks) == 1 {
			// A bug, not a user error: end the sequence, keep serving.
			e.finish(chunks[0].s, "", fmt.Errorf("runner: forward pass: %w", err))
			return
		}
		half := len(chunks) / 2
		e.run(chunks[:half])
		e.run(chunks[half:])
		return
	}
	vocab := e.m.Arch.Vocab
	greedy := e.greedyOnly(chunks)
	if len(e.outRows) > 0 {
		if greedy {
			e.greedy = slices.Grow(e.greedy[:0], len(e.outRows))[:len(e.outRows)]
			e.argmaxer.ArgMax(e.greedy, out)
			e.argmaxSteps++
		} else {
			e.m.Arch.Backend().Download(e.logits[:len(e.outRows)*vocab], out)
		}
	}
	row := 0
	for _, c := range chunks {
		s := c.s
		before := s.computed / e.pm.BlockSize()
		s.computed += c.n
		if !c.sample {
			e.cache(s, before)
			continue
		}
		var logits []float32
		tok := int32(-1)
		if greedy {
			tok = e.greedy[row]
		} else {
			logits = e.logits[row*vocab : (row+1)*vocab]
		}
		row++
		if s.gen == 0 && !s.req.forked && !e.opt.NoPrefixCache && len(e.m.Caches) > 1 {
			// the prompt is done: a later request may resume at its end
			// (sliding groups cache their window only where asked)
			e.pm.CacheResumable(s.id, s.tokens[:s.computed])
		}
		for _, t := range e.fork(s) {
			e.sample(t, logits, tok)
		}
		if s.state == running {
			e.cache(s, before)
		}
	}
}

// forward runs the model over chunks, marking those that sample; the
// logits of their last rows come back in that order.
func (e *Engine) forward(chunks []chunk) (gpu.Tensor, error) {
	b := &e.batch
	b.BlockSize, b.Seqs = e.pm.BlockSize(), b.Seqs[:0]
	e.tokens, e.outRows = e.tokens[:0], e.outRows[:0]
	for i := range chunks {
		c := &chunks[i]
		s := c.s
		b.Seqs = append(b.Seqs, gpu.Seq{Start: len(e.tokens), Len: c.n, Pos: s.computed, Blocks: e.pm.Table32(s.id)})
		e.tokens = append(e.tokens, s.tokens[s.computed:s.computed+c.n]...)
		if c.sample = s.computed+c.n == len(s.tokens); c.sample {
			e.outRows = append(e.outRows, int32(len(e.tokens)-1))
		}
	}
	return e.m.forwardGroups(&e.gbatches, b, func(g, i int) []int32 { return e.pm.Table32In(chunks[i].s.id, g) },
		e.tokens, e.outRows, false)
}

// greedyOnly reports whether every sequence sampling from chunks takes the
// largest logit and nothing else needs the logits (no penalties, format
// or logprobs; forks of a greedy sequence take the same token), on a
// backend that finds it itself (gpu.ArgMaxer): then the step asks it for
// the indices and copies no logits out.
func (e *Engine) greedyOnly(chunks []chunk) bool {
	if e.argmaxer == nil {
		return false
	}
	for _, c := range chunks {
		if c.sample && !c.s.greedyOnly() {
			return false
		}
	}
	return true
}

// sample draws s's next token from logits and hands it to the sequence;
// with nil logits it takes tok, the largest logit's index (greedyOnly).
func (e *Engine) sample(s *sequence, logits []float32, tok int32) {
	r := s.req
	if r.sampled.IsZero() {
		r.sampled = time.Now()
	}
	if logits != nil {
		tok = s.sampler.Sample(logits, s.tokens)
	}
	if g := s.grammar; g != nil {
		// sample first, mask only when the format rejects the token
		if !g.Allowed(tok) {
			masked, n := g.Masked(logits) // a copy: forks share logits
			if n == 0 {
				e.finish(s, "", fmt.Errorf("%w: the format allows no token here", ErrRequest))
				return
			}
			tok = s.sampler.Sample(masked, s.tokens)
		}
		if err := g.Accept(tok); err != nil {
			e.finish(s, "", err)
			return
		}
	}
	var lp *TokenLogprob
	if r.Logprobs || r.TopLogprobs > 0 {
		lp = logprobs(logits, tok, r.TopLogprobs)
	}
	done, reason := s.emit(tok, e.m.Tok.Vocab(), lp)
	if !done && s.grammar != nil && s.grammar.Done() { // the value is complete: nothing may follow
		s.flush(nil, -1)
		done, reason = true, "stop"
	}
	if done {
		e.finish(s, reason, nil)
	}
}

// fork returns the sequences that sample from s's logits: s alone, or,
// the first time a request of N samples reaches the end of its prompt, s
// and N-1 forks sharing its blocks (child i samples with seed+i).
func (e *Engine) fork(s *sequence) []*sequence {
	r := s.req
	if r.forked || r.N <= 1 {
		return []*sequence{s}
	}
	r.forked = true
	out := []*sequence{s}
	for i := 1; i < r.N; i++ {
		opt := r.Sample
		if opt.Seed != -1 {
			opt.Seed += int64(i)
		}
		c := &sequence{req: r, index: i, state: running, id: e.pm.Fork(s.id), order: s.order,
			tokens: slices.Clone(s.tokens), nPrompt: s.nPrompt, computed: s.computed,
			hashes: slices.Clone(s.hashes), saved: s.saved,
			sampler: NewSampler(opt), detok: e.newDetok(s.tokens)}
		if s.grammar != nil {
			c.grammar = s.grammar.Clone()
		}
		r.live++
		e.running = append(e.running, c)
		out = append(out, c)
	}
	return out
}

// cache offers s's newly full blocks to the prefix cache and the store.
// A sliding layer group's blocks are cached only where keep asks.
func (e *Engine) cache(s *sequence, blocksBefore int) {
	if s.computed/e.pm.BlockSize() == blocksBefore {
		return
	}
	if !e.opt.NoPrefixCache {
		e.pm.CachePrefix(s.id, s.tokens[:s.computed])
	}
	e.save(s)
}

// keep hands s's full blocks to the prefix cache, resumable at their end
// (a sliding layer group's window with them), and writes them behind to
// the store: s is ending or preempted.
func (e *Engine) keep(s *sequence) {
	if !e.opt.NoPrefixCache {
		e.pm.CacheResumable(s.id, s.tokens[:s.computed])
	}
	e.save(s)
}

// reap ends the sequences of cancelled requests.
func (e *Engine) reap() {
	for _, list := range [][]*sequence{e.running, e.waiting} {
		for _, s := range slices.Clone(list) {
			if err := s.req.ctx.Err(); err != nil && s.state != finished {
				e.finish(s, "", err)
			}
		}
	}
}

// admit moves waiting sequences to running, oldest first, while they fit
// in MaxSeqs (a request of N samples counts N until it forks: seqs) and
// the pool has room for their prompts above the watermark. A request of
// more samples than MaxSeqs runs alone; a prompt that cannot fit even in
// an empty pool ends its request with an error.
func (e *Engine) admit() {
	bs := e.pm.BlockSize()
	used := 0
	for _, s := range e.running {
		used += s.seqs()
	}
	for len(e.waiting) > 0 {
		s := e.waiting[0]
		if len(e.running) > 0 && used+s.seqs() > e.opt.MaxSeqs {
			return
		}
		cached := 0
		if !e.opt.NoPrefixCache { // Cached, not Match: a request that waits does not keep its prefix fresh
			cached = e.pm.Radix().Cached(s.req.extra, s.tokens[:len(s.tokens)-1])
		}
		need := ceilDiv(len(s.tokens)+1, bs) - cached
		mark := 0
		if len(e.running) > 0 {
			mark = max(1, int(e.opt.Watermark*float64(e.pm.NumBlocks())))
		}
		if short := need + mark - e.pm.FreeBlocks(); short > 0 { // not the prefix it counted on
			e.pm.Radix().EvictSparing(short, s.req.extra, s.tokens[:len(s.tokens)-1])
		}
		if short := need + mark - e.pm.FreeBlocks(); short > 0 && len(e.running) > 0 {
			e.growPool(short)
		}
		if need+mark > e.pm.FreeBlocks() {
			if len(e.running) == 0 {
				e.finish(s, "", fmt.Errorf("%w: the prompt needs %d K/V blocks and the cache has %d: lower num_ctx or raise FOLIO_KV_MEMORY",
					ErrRequest, need, e.pm.FreeBlocks()))
				continue
			}
			return
		}
		e.waiting = e.waiting[1:]
		e.queue.Add(-1)
		s.id, s.state = e.pm.NewSeq(s.req.extra), running
		e.order++
		s.order = e.order
		s.computed = 0
		if !e.opt.NoPrefixCache {
			s.computed = e.pm.AttachPrefix(s.id, s.tokens[:len(s.tokens)-1])
		}
		s.saved = s.computed / bs // attached blocks came from the cache, and were saved when they entered it
		e.restore(s)
		r := s.req
		if r.admitted.IsZero() {
			r.admitted = time.Now()
			r.stats.CachedTokens = s.computed
			r.stats.RestoredTokens = s.restored
			r.stats.PromptTokens = len(s.tokens) - s.computed
		}
		e.running = append(e.running, s)
		used += s.seqs()
	}
}

// planBatch fills e.plan and e.chunks for this step. It reports false when
// nothing can run.
func (e *Engine) planBatch() bool {
	if !e.opt.NoPrefixCache { // pick up what other sequences cached since admission
		bs := e.pm.BlockSize()
		for _, s := range e.running {
			if s.pending() > bs && s.computed%bs == 0 {
				if n := e.pm.ExtendPrefix(s.id, s.tokens[:len(s.tokens)-1]); n > 0 {
					s.computed += n
					s.saved = s.computed / bs
					if !s.req.forked && s.gen == 0 {
						s.req.stats.CachedTokens += n
						s.req.stats.PromptTokens -= n
					}
				}
			}
		}
	}
	if e.wantBlocks > 0 { // a prefill chunk was short of blocks last step
		if freed := e.pm.Radix().EvictIn(e.wantGroup, e.wantBlocks); freed < e.wantBlocks && e.wantGroup > 0 {
			e.growGroup(e.wantGroup, e.wantBlocks-freed)
		}
		e.wantBlocks = 0
	}
plan:
	for len(e.running) > 0 {
		e.plan, e.chunks = paged.Plan{}, e.chunks[:0]
		budget := e.opt.NumBatch
		// A step samples at most MaxSeqs rows: the logits one pass gives
		// (Load sizes the model's MaxOut so) and e.logits holds. More
		// sequences decode than that only while a request of more
		// samples runs alone; they take turns from e.nextDecode, the
		// first one left out last time.
		rows, skipped := 0, -1
		for i := range e.running { // decode first: running requests never starve
			j := (e.nextDecode + i) % len(e.running)
			s := e.running[j]
			if s.pending() != 1 {
				continue
			}
			if budget == 0 || rows == e.opt.MaxSeqs {
				if skipped < 0 {
					skipped = j
				}
				continue
			}
			if err := e.pm.Reserve(&e.plan, s.id, 1); err != nil {
				var short *paged.OutOfBlocksError
				if errors.As(err, &short) && (e.pm.Radix().EvictIn(short.Group, short.Need-short.Free) > 0 ||
					e.growGroup(short.Group, short.Need-short.Free)) {
					continue plan
				}
				e.preemptNewest()
				continue plan
			}
			e.chunks = append(e.chunks, chunk{s: s, n: 1})
			budget--
			rows++
		}
		e.nextDecode = max(skipped, 0)
		if len(e.chunks) > 0 {
			// Sequences are decoding: a step carries at most PrefillShare
			// prefill tokens, so their next token is not held up long.
			budget = min(budget, e.opt.PrefillShare)
		}
		for _, s := range e.running { // then prefill chunks, oldest first
			if s.pending() <= 1 || budget == 0 {
				continue
			}
			// the largest chunk that fits, halving down to one block; one
			// that ends the prompt samples, so it needs a row left
			n := min(s.pending(), budget)
			if n == s.pending() && rows == e.opt.MaxSeqs {
				n--
			}
			for ; n > 0; n /= 2 {
				err := e.pm.Reserve(&e.plan, s.id, n)
				if err == nil {
					e.chunks = append(e.chunks, chunk{s: s, n: n})
					budget -= n
					if n == s.pending() {
						rows++
					}
					break
				}
				var short *paged.OutOfBlocksError
				if errors.As(err, &short) {
					if short.Group != e.wantGroup {
						e.wantGroup, e.wantBlocks = short.Group, 0
					}
					e.wantBlocks = max(e.wantBlocks, short.Need-short.Free)
				}
				if n < e.pm.BlockSize() {
					break
				}
			}
		}
		if len(e.chunks) > 0 {
			return true
		}
		// nothing fits: make room
		if e.pm.Radix().EvictIn(e.wantGroup, max(e.wantBlocks, 1)) > 0 || e.growGroup(e.wantGroup, max(e.wantBlocks, 1)) {
			e.wantBlocks = 0
			continue
		}
		e.preemptNewest()
	}
	return false
}

// preemptNewest preempts the most recently admitted sequence or, when it
// runs alone, ends it: it cannot fit at all.
func (e *Engine) preemptNewest() {
	victim := e.running[len(e.running)-1]
	for _, s := range e.running {
		if s.order > victim.order {
			victim = s
		}
	}
	if len(e.running) > 1 {
		e.preempt(victim)
		return
	}
	spec := e.m.KV.Spec()
	e.finish(victim, "", fmt.Errorf("%w: the sequence needs more than the %d tokens of the K/V cache: lower num_ctx or raise FOLIO_KV_MEMORY",
		ErrRequest, spec.Tokens()))
}

// preempt frees s's blocks (its full ones stay in the prefix cache) and
// queues it first, to be recomputed when there is room again.
func (e *Engine) preempt(s *sequence) {
	e.keep(s)
	e.pm.Free(s.id)
	e.running = slices.DeleteFunc(e.running, func(x *sequence) bool { return x == s })
	s.state, s.computed = waiting, 0
	s.req.stats.Preemptions++
	e.waiting = slices.Insert(e.waiting, 0, s)
	e.queue.Add(1)
	e.noteBlocks()
}

// finish ends sequence s with reason or err, returns its blocks (full ones
// to the prefix cache) and, for the last sample of its request, sends the
// request's stats.
func (e *Engine) finish(s *sequence, reason string, err error) {
	switch s.state {
	case finished:
		return
	case running:
		if e.failed.Load() == nil { // after a backend fault neither its K/V nor the pool is to be trusted
			e.keep(s)
			e.pm.Free(s.id)
		}
		e.running = slices.DeleteFunc(e.running, func(x *sequence) bool { return x == s })
	case waiting:
		e.waiting = slices.DeleteFunc(e.waiting, func(x *sequence) bool { return x == s })
		e.queue.Add(-1)
	}
	s.state = finished
	e.noteBlocks()
	r := s.req
	r.live--
	r.stats.EvalTokens += s.gen
	ev := Event{Index: s.index, Token: -1, Done: true, Reason: reason, Stopped: s.stopped, Err: err}
	if r.live == 0 {
		now := time.Now()
		st := r.stats
		st.DoneReason = reason
		if !r.admitted.IsZero() {
			st.QueueDuration = r.admitted.Sub(r.arrived)
			if !r.sampled.IsZero() {
				st.PromptDuration = r.sampled.Sub(r.admitted)
				st.EvalDuration = now.Sub(r.sampled)
			}
		} else {
			st.QueueDuration = now.Sub(r.arrived)
		}
		ev.Stats = &st
		if e.opt.Finished != nil {
			e.opt.Finished(st)
		}
		r.stream.push(ev, true)
		r.stream.cancel() // release the context's resources
		return
	}
	r.stream.push(ev, false)
}

// noteBlocks records the blocks in use and the peak, per layer group,
// and the running sequences and the blocks they hold.
func (e *Engine) noteBlocks() {
	used := int64(e.pm.NumBlocks() - e.pm.FreeBlocks())
	e.used.Store(used)
	e.nRunning.Store(int64(len(e.running)))
	e.active.Store(int64(e.activeBlocks()))
	if used > e.peak.Load() {
		e.peak.Store(used)
	}
	for g := range e.groupUsed {
		total, free := e.pm.GroupBlocks(g)
		u := int64(total - free)
		e.groupUsed[g].Store(u)
		if u > e.groupPeak[g].Load() {
			e.groupPeak[g].Store(u)
		}
	}
}

// activeBlocks counts the distinct blocks of the first layer group that
// running sequences hold (forks and shared prefixes share blocks).
func (e *Engine) activeBlocks() int {
	if n := e.pm.NumBlocks(); len(e.stamps) < n {
		e.stamps = append(e.stamps, make([]uint32, n-len(e.stamps))...)
	}
	e.stamp++
	if e.stamp == 0 { // wrapped: no stale mark may equal the new stamp
		clear(e.stamps)
		e.stamp = 1
	}
	n := 0
	for _, s := range e.running {
		for _, b := range e.pm.Table(s.id) {
			if b != paged.NoBlock && e.stamps[b] != e.stamp {
				e.stamps[b] = e.stamp
				n++
			}
		}
	}
	return n
}

// newDetok is a detokenizer primed with prompt, so that the generated text
// continues it (SentencePiece drops the space of the first piece only).
func (e *Engine) newDetok(prompt []int32) *tokenizer.Detokenizer {
	d := e.m.Tok.NewDetokenizer(tokenizer.DecodeOptions{})
	for _, id := range prompt {
		d.Add(id)
	}
	return d
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
