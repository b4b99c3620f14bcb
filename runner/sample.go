package runner

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"folio/gpu"
)

// SampleOptions are the sampling options of an Ollama request, by their
// Ollama names. The zero value is not the default: use DefaultSampleOptions.
type SampleOptions struct {
	Temperature      float32 // 0: greedy (the highest logit, the lowest id on ties)
	TopK             int     // keep the k most likely tokens; ≤ 0 keeps all
	TopP             float32 // keep the smallest set whose probability reaches p; ≥ 1 keeps all
	MinP             float32 // drop tokens less likely than min_p × the most likely; 0 keeps all
	TypicalP         float32 // locally typical sampling: keep the tokens closest to the entropy up to this mass; ≥ 1 keeps all
	RepeatPenalty    float32 // divide positive (multiply negative) logits of recent tokens; 1 is off
	RepeatLastN      int     // how many recent tokens the penalties look at; -1: all, 0: none
	PresencePenalty  float32 // subtracted once from the logit of each recent token
	FrequencyPenalty float32 // subtracted per occurrence of each recent token
	Seed             int64   // -1: a random seed
	// LogitBias is added to the logits of its tokens before anything else
	// (OpenAI's logit_bias): -100 all but bans a token, 100 all but forces
	// it. Ids outside the logits are skipped; callers check them against
	// the vocabulary. Read only: forked samples share it.
	LogitBias map[int32]float32
}

// DefaultSampleOptions are Ollama's defaults, with the repeat penalty off
// as in llama.cpp and in Ollama's own engine (its Go sampler has none).
func DefaultSampleOptions() SampleOptions {
	return SampleOptions{Temperature: 0.8, TopK: 40, TopP: 0.9, TypicalP: 1, RepeatPenalty: 1, RepeatLastN: 64, Seed: -1}
}

// Check reports an option outside its range, naming it.
func (o *SampleOptions) Check() error {
	switch {
	case o.Temperature < 0 || isNaN(o.Temperature):
		return fmt.Errorf("temperature %v: use 0 (greedy) or more", o.Temperature)
	case o.TopP < 0 || isNaN(o.TopP):
		return fmt.Errorf("top_p %v: use a value in (0, 1]", o.TopP)
	case o.TypicalP < 0 || isNaN(o.TypicalP):
		return fmt.Errorf("typical_p %v: use a value in (0, 1]", o.TypicalP)
	case o.MinP < 0 || o.MinP > 1 || isNaN(o.MinP):
		return fmt.Errorf("min_p %v: use a value in [0, 1]", o.MinP)
	case o.RepeatPenalty <= 0 || isNaN(o.RepeatPenalty):
		return fmt.Errorf("repeat_penalty %v: use a value > 0 (1 is off)", o.RepeatPenalty)
	case o.RepeatLastN < -1:
		return fmt.Errorf("repeat_last_n %d: use -1 (all), 0 (none) or a count", o.RepeatLastN)
	}
	for id, b := range o.LogitBias {
		if isNaN(b) {
			return fmt.Errorf("logit_bias of token %d is NaN: use a number", id)
		}
	}
	return nil
}

func isNaN(f float32) bool { return f != f }

// Sampler picks tokens from logits under one request's options. It keeps
// its random source and scratch between calls; one per sequence.
type Sampler struct {
	opt  SampleOptions
	rng  *rand.Rand
	cand []candidate // scratch over the vocabulary
	seen map[int32]int
}

type candidate struct {
	id    int32
	logit float32
	p     float32
}

// NewSampler returns a sampler for opt (already checked). A seed of -1
// draws one at random.
func NewSampler(opt SampleOptions) *Sampler {
	seed := uint64(opt.Seed)
	if opt.Seed == -1 {
		seed = rand.Uint64()
	}
	return &Sampler{opt: opt, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), seen: map[int32]int{}}
}

// Sample returns the next token given the logits over the vocabulary and
// the sequence's tokens so far (for the repeat penalties). logits is not
// modified.
func (s *Sampler) Sample(logits []float32, history []int32) int32 {
	o := &s.opt
	if o.greedy() { // no candidates to build
		return int32(gpu.ArgMax(logits))
	}
	s.cand = s.cand[:0]
	for i, l := range logits {
		s.cand = append(s.cand, candidate{id: int32(i), logit: l})
	}
	for id, b := range o.LogitBias {
		if id >= 0 && int(id) < len(s.cand) {
			s.cand[id].logit += b
		}
	}
	s.penalize(history)
	if o.Temperature == 0 {
		return s.argmax()
	}
	c := s.cand
	if o.TopK > 0 && o.TopK < len(c) {
		c = topK(c, o.TopK)
	} else {
		slices.SortFunc(c, byLogit)
	}
	// softmax at the temperature over the candidates, most likely first
	maxL, sum := c[0].logit, float64(0)
	for i := range c {
		p := math.Exp(float64((c[i].logit - maxL) / o.Temperature))
		c[i].p = float32(p)
		sum += p
	}
	if o.TypicalP > 0 && o.TypicalP < 1 {
		c = s.typical(c, sum)
		sum = 0
		for _, x := range c {
			sum += float64(x.p)
		}
	}
	if o.TopP > 0 && o.TopP < 1 {
		cum := float64(0)
		for i := range c {
			cum += float64(c[i].p) / sum
			if cum >= float64(o.TopP) {
				c = c[:i+1]
				break
			}
		}
	}
	if o.MinP > 0 {
		limit := c[0].p * o.MinP
		for i := range c {
			if c[i].p < limit {
				c = c[:i]
				break
			}
		}
	}
	total := float64(0)
	for _, x := range c {
		total += float64(x.p)
	}
	r := s.rng.Float64() * total
	for _, x := range c {
		r -= float64(x.p)
		if r < 0 {
			return x.id
		}
	}
	return c[len(c)-1].id
}

// typical keeps the candidates whose surprise −log p is closest to the
// distribution's entropy, until their mass reaches typical_p (Meister et
// al., "Locally Typical Sampling"), and returns them most likely first.
// c is sorted most likely first, with unnormalized p summing to sum.
func (s *Sampler) typical(c []candidate, sum float64) []candidate {
	var h float64
	for _, x := range c {
		if p := float64(x.p) / sum; p > 0 {
			h -= p * math.Log(p)
		}
	}
	dist := func(x candidate) float64 {
		p := float64(x.p) / sum
		if p == 0 {
			return math.Inf(1)
		}
		return math.Abs(-math.Log(p) - h)
	}
	slices.SortStableFunc(c, func(a, b candidate) int { return cmp.Compare(dist(a), dist(b)) })
	cum, keep := 0.0, len(c)
	for i, x := range c {
		cum += float64(x.p) / sum
		if cum >= float64(s.opt.TypicalP) {
			keep = i + 1
			break
		}
	}
	c = c[:keep]
	slices.SortFunc(c, byLogit)
	return c
}

// byLogit orders candidates most likely first, the lower id first on ties.
func byLogit(a, b candidate) int {
	if a.logit != b.logit {
		return cmp.Compare(b.logit, a.logit)
	}
	return cmp.Compare(a.id, b.id)
}

func (s *Sampler) argmax() int32 {
	best := s.cand[0]
	for _, c := range s.cand[1:] {
		if c.logit > best.logit {
			best = c
		}
	}
	return best.id
}

// greedy reports whether the token is the largest logit's index and
// nothing changes the logits first: greedy, no penalty, no bias.
func (o *SampleOptions) greedy() bool {
	return o.Temperature == 0 && !o.penalizes() && len(o.LogitBias) == 0
}

// penalizes reports whether any of the penalties is on.
func (o *SampleOptions) penalizes() bool {
	return o.RepeatPenalty != 1 || o.PresencePenalty != 0 || o.FrequencyPenalty != 0
}

// penalize applies the repeat, presence and frequency penalties to the
// candidates of the last RepeatLastN tokens of history.
func (s *Sampler) penalize(history []int32) {
	o := &s.opt
	if !o.penalizes() {
		return
	}
	n := o.RepeatLastN
	if n < 0 || n > len(history) {
		n = len(history)
	}
	clear(s.seen)
	for _, id := range history[len(history)-n:] {
		s.seen[id]++
	}
	for id, count := range s.seen {
		if id < 0 || int(id) >= len(s.cand) {
			continue
		}
		c := &s.cand[id]
		if c.logit > 0 {
			c.logit /= o.RepeatPenalty
		} else {
			c.logit *= o.RepeatPenalty
		}
		c.logit -= o.PresencePenalty + float32(count)*o.FrequencyPenalty
	}
}

// topK moves the k most likely candidates to the front of c, sorted, and
// returns them: a partial selection, O(len(c)) on average.
func topK(c []candidate, k int) []candidate {
	lo, hi := 0, len(c)
	for hi-lo > 1 {
		// partition c[lo:hi] around a pivot so the first part holds the
		// more likely ones
		p := c[lo+(hi-lo)/2]
		i, j := lo, hi-1
		for i <= j {
			for byLogit(c[i], p) < 0 {
				i++
			}
			for byLogit(c[j], p) > 0 {
				j--
			}
			if i <= j {
				c[i], c[j] = c[j], c[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j + 1
		case k >= i:
			lo = i
		default:
			lo = hi
		}
	}
	c = c[:k]
	slices.SortFunc(c, byLogit)
	return c
}
