// Package loadgen generates load for folio's serving engine and measures
// what clients see: the request mix of `folio bench serve` (ShareGPT-shaped
// lengths, N requests at a time), a two-turn conversation (Multiturn), a
// document read under many questions (Extraction), a turn after a restart
// (Restart) and agents taking turns on one model (Agent: a chat template's
// system prompt with tools, a tool result appended each turn).
//
// A Target runs one request and reports a Trace (when each output token
// arrived, how many prompt tokens were computed and reused). EngineTarget
// drives an in-process runner.Engine with token prompts; HTTPTarget drives
// an Ollama-compatible server's /api/generate with word prompts. Optional
// figures a target can give are found by type assertion (BlockCounter).
//
// Nothing here is safe to share between goroutines except the Targets.
package loadgen

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"folio/models/tokenizer"
)

// Default spreads (σ of the lengths' logarithms). ShareGPT conversations
// have right-skewed lengths, close to lognormal, with prompts spread wider
// than answers; these σ give that shape. The means are the caller's, so
// that a run fits the machine. ShareGPT's own are 161 prompt and 338
// output tokens (the vLLM paper's figure 11): answers about 2.1 times as
// long as prompts, which DefaultPromptMean and DefaultOutputMean keep at
// 40% of the size.
const (
	DefaultPromptSigma = 1.0
	DefaultOutputSigma = 0.8
	DefaultPromptMean  = 64
	DefaultOutputMean  = 136
)

// Shape is the length distribution of a workload's requests.
type Shape struct {
	PromptMean, OutputMean   float64 // tokens
	PromptSigma, OutputSigma float64 // 0: the defaults
	MaxPrompt, MaxOutput     int     // lengths are clamped to these; 0: 8× the mean
	// Shared tokens begin every prompt (a system prompt), counted in its
	// length; the rest is the request's own.
	Shared int
	// Fixed gives every request the mean lengths (no spread): with short
	// prompts, a measure of batched decoding alone.
	Fixed bool
}

// Spec is one request of a workload.
type Spec struct {
	Shared, Unique int    // prompt tokens: Shared from the common stream, then Unique of its own
	Output         int    // num_predict
	Seed           uint64 // the request's prompt content and sampling seed
}

// PromptLen is the prompt's length in tokens (words over HTTP).
func (s Spec) PromptLen() int { return s.Shared + s.Unique }

// lognormal draws a length with the given mean and σ, clamped to [lo, hi].
func lognormal(r *rand.Rand, mean, sigma float64, lo, hi int) int {
	mu := math.Log(mean) - sigma*sigma/2 // E[exp(N(mu, σ²))] = mean
	n := int(math.Round(math.Exp(mu + sigma*r.NormFloat64())))
	return min(max(n, lo), hi)
}

// Specs draws n requests of shape s from seed.
func (s Shape) Specs(n int, seed uint64) ([]Spec, error) {
	if s.PromptMean < 1 || s.OutputMean < 1 {
		return nil, fmt.Errorf("loadgen: prompt mean %g and output mean %g: use at least 1 token each", s.PromptMean, s.OutputMean)
	}
	if s.PromptSigma <= 0 {
		s.PromptSigma = DefaultPromptSigma
	}
	if s.OutputSigma <= 0 {
		s.OutputSigma = DefaultOutputSigma
	}
	if s.MaxPrompt <= 0 {
		s.MaxPrompt = int(8 * s.PromptMean)
	}
	if s.MaxOutput <= 0 {
		s.MaxOutput = int(8 * s.OutputMean)
	}
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	out := make([]Spec, n)
	for i := range out {
		p := lognormal(r, s.PromptMean, s.PromptSigma, s.Shared+1, max(s.MaxPrompt, s.Shared+1))
		o := lognormal(r, s.OutputMean, s.OutputSigma, 1, s.MaxOutput)
		if s.Fixed {
			p, o = max(int(math.Round(s.PromptMean)), s.Shared+1), int(math.Round(s.OutputMean))
		}
		out[i] = Spec{Shared: s.Shared, Unique: p - s.Shared, Output: o, Seed: seed*1_000_003 + uint64(i) + 1}
	}
	return out, nil
}

// sharedSeed seeds the common prompt stream: every request's first Shared
// tokens are the same.
const sharedSeed = 0xc0ffee

// Tokens writes prompts as token ids drawn from a vocabulary's ordinary
// tokens, BOS first when the model wants it.
type Tokens struct {
	ids []int32 // normal and byte tokens
	bos int32   // -1: none
}

// NewTokens picks the ordinary tokens of v.
func NewTokens(v *tokenizer.Vocab) (*Tokens, error) {
	t := &Tokens{bos: -1}
	if v.AddBOS && v.BOS >= 0 {
		t.bos = v.BOS
	}
	for id := range v.Size() {
		switch v.Type(int32(id)) {
		case tokenizer.TypeNormal, tokenizer.TypeByte:
			if !v.IsEOG(int32(id)) && int32(id) != v.BOS {
				t.ids = append(t.ids, int32(id))
			}
		}
	}
	if len(t.ids) == 0 {
		return nil, fmt.Errorf("loadgen: the vocabulary has no ordinary tokens to write prompts with")
	}
	return t, nil
}

// Draw appends n random ordinary tokens from r to dst.
func (t *Tokens) Draw(dst []int32, r *rand.Rand, n int) []int32 {
	for range n {
		dst = append(dst, t.ids[r.IntN(len(t.ids))])
	}
	return dst
}

// Prompt is s's prompt: BOS (counted in the shared part, or in the
// request's own when nothing is shared), the shared tokens, its own.
func (t *Tokens) Prompt(s Spec) []int32 {
	p := make([]int32, 0, s.PromptLen())
	shared, unique := s.Shared, s.Unique
	if t.bos >= 0 {
		p = append(p, t.bos)
		if shared > 0 {
			shared--
		} else {
			unique--
		}
	}
	p = t.Draw(p, rand.New(rand.NewPCG(sharedSeed, 0)), shared)
	return t.Draw(p, rand.New(rand.NewPCG(s.Seed, 1)), unique)
}

// words are common English words: over HTTP, where prompts are text, one
// is about one token of a real model's vocabulary.
var words = strings.Fields(`the of and to in is you that it he was for on are as with his they
at be this have from or one had by word but not what all were we when your can said there use an
each which she do how their if will up other about out many then them these so some her would make
like him into time has look two more write go see number no way could people my than first water
been call who oil its now find long down day did get come made may part over new sound take only
little work know place year live me back give most very after thing our just name good sentence
man think say great where help through much before line right too mean old any same tell boy follow
came want show also around form three small set put end does another well large must big even such
because turn here why ask went men read need land different home us move try kind hand picture again
change off play spell air away animal house point page letter mother answer found study still learn
should world high every near add food between own below country plant last school father keep tree
never start city earth eye light thought head under story saw left few while along might close
something seem next hard open example begin life always those both paper together got group often run`)

// Words is s's prompt as text: the shared words, then its own.
func Words(s Spec) string {
	var b strings.Builder
	draw := func(r *rand.Rand, n int) {
		for range n {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[r.IntN(len(words))])
		}
	}
	draw(rand.New(rand.NewPCG(sharedSeed, 0)), s.Shared)
	draw(rand.New(rand.NewPCG(s.Seed, 1)), s.Unique)
	return b.String()
}
