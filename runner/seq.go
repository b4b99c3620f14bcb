package runner

import (
	"context"
	"math"
	"slices"
	"strings"
	"time"

	"folio/models/tokenizer"
	"folio/paged"
	"folio/runner/grammar"
)

// seqState is where a sequence is in its life.
type seqState int

const (
	waiting  seqState = iota // queued, holds no blocks
	running                  // admitted: computing its prompt or generating
	finished                 // done; its blocks are back in the pool or the cache
)

func (s seqState) String() string {
	return [...]string{"waiting", "running", "finished"}[s]
}

// request is the engine's side of a Request.
type request struct {
	Request
	ctx      context.Context
	stream   *Stream
	arrived  time.Time
	admitted time.Time
	sampled  time.Time // first token of the first sample
	extra    string    // radix key: model fingerprint and CacheKey
	live     int       // samples not yet finished
	stats    Stats
	forked   bool // the n-1 other samples exist
}

// sequence is one sample of a request: a paged sequence once admitted.
type sequence struct {
	req     *request
	index   int // sample index
	state   seqState
	id      paged.SeqID // valid while running
	order   uint64      // admission order; the newest is preempted first
	tokens  []int32     // prompt then generated tokens
	nPrompt int
	// computed is how many of tokens have their K/V in the cache: the
	// next step computes tokens[computed:] (at least the last one, whose
	// logits give the next token).
	computed int
	gen      int // tokens generated
	// persistence: the chained hashes of its full blocks so far, how many
	// leading blocks the store has (saved or loaded), tokens restored
	hashes   []paged.BlockHash
	saved    int
	restored int
	sampler  *Sampler
	grammar  *grammar.Constraint // the request's format; nil: free text
	detok    *tokenizer.Detokenizer
	held     string // text withheld because a stop string may be starting
	stopped  string // the stop string that ended it, if one did
}

// seqs is how many running sequences s stands for: its request's N until
// the request forks its samples (at the end of the prompt), then itself.
func (s *sequence) seqs() int {
	if s.req.forked {
		return 1
	}
	return s.req.N
}

// pending is the number of tokens the sequence still has to compute.
func (s *sequence) pending() int { return len(s.tokens) - s.computed }

// emit handles a sampled token: it ends the sequence on an end token,
// a stop string, num_predict or a full context, and otherwise queues its
// text. It reports whether the sequence is done and why.
func (s *sequence) emit(tok int32, vocab *tokenizer.Vocab, lp *TokenLogprob) (done bool, reason string) {
	r := s.req
	if vocab.IsEOG(tok) {
		s.flush(lp, tok)
		return true, "stop"
	}
	s.tokens = append(s.tokens, tok)
	s.gen++
	text := s.held + s.detok.Add(tok)
	if i, ok := stopIndex(text, r.Stop); ok {
		s.held, s.stopped = "", stopAt(text, i, r.Stop)
		r.stream.push(Event{Index: s.index, Token: tok, Text: text[:i], Logprob: lp}, false)
		return true, "stop"
	}
	keep := stopPrefixLen(text, r.Stop)
	s.held = text[len(text)-keep:]
	r.stream.push(Event{Index: s.index, Token: tok, Text: text[:len(text)-keep], Logprob: lp}, false)
	if (r.NumPredict > 0 && s.gen >= r.NumPredict) || len(s.tokens) >= r.NumCtx {
		s.flush(nil, -1)
		return true, "length"
	}
	return false, ""
}

// flush sends the withheld text and the detokenizer's remainder, which
// cannot start a stop string any more.
func (s *sequence) flush(lp *TokenLogprob, tok int32) {
	text := s.held + s.detok.Flush()
	s.held = ""
	if i, ok := stopIndex(text, s.req.Stop); ok {
		text, s.stopped = text[:i], stopAt(text, i, s.req.Stop)
	}
	if text != "" || lp != nil {
		s.req.stream.push(Event{Index: s.index, Token: tok, Text: text, Logprob: lp}, false)
	}
}

// stopAt is the stop string found at position i of text (the longest,
// when several start there).
func stopAt(text string, i int, stops []string) string {
	best := ""
	for _, s := range stops {
		if strings.HasPrefix(text[i:], s) && len(s) > len(best) {
			best = s
		}
	}
	return best
}

// stopIndex is the position of the earliest stop string in text.
func stopIndex(text string, stops []string) (int, bool) {
	best := -1
	for _, s := range stops {
		if i := strings.Index(text, s); i >= 0 && (best < 0 || i < best) {
			best = i
		}
	}
	return best, best >= 0
}

// stopPrefixLen is the length of the longest end of text that begins some
// stop string: text that must wait for the next token.
func stopPrefixLen(text string, stops []string) int {
	n := 0
	for _, s := range stops {
		for k := min(len(s)-1, len(text)); k > n; k-- {
			if strings.HasSuffix(text, s[:k]) {
				n = k
				break
			}
		}
	}
	return n
}

// TokenLogprob is the log-probability of a generated token under the
// model (before temperature and truncation) and of the most likely
// alternatives.
type TokenLogprob struct {
	Token   int32
	Logprob float32
	Top     []TopLogprob
}

// TopLogprob is one alternative.
type TopLogprob struct {
	Token   int32
	Logprob float32
}

// logprobs computes log-softmax of logits for tok and the top k.
func logprobs(logits []float32, tok int32, k int) *TokenLogprob {
	maxL := slices.Max(logits)
	var sum float64
	for _, l := range logits {
		sum += math.Exp(float64(l - maxL))
	}
	lse := float64(maxL) + math.Log(sum)
	lp := &TokenLogprob{Token: tok, Logprob: float32(float64(logits[tok]) - lse)}
	if k > 0 {
		ids := make([]int32, 0, k+1)
		for i, l := range logits {
			if len(ids) == k && l <= logits[ids[k-1]] {
				continue
			}
			// ids stay most likely first, the lower id first on ties
			j, _ := slices.BinarySearchFunc(ids, l, func(id int32, l float32) int {
				if logits[id] >= l {
					return -1
				}
				return 1
			})
			ids = slices.Insert(ids, j, int32(i))
			if len(ids) > k {
				ids = ids[:k]
			}
		}
		for _, id := range ids {
			lp.Top = append(lp.Top, TopLogprob{Token: id, Logprob: float32(float64(logits[id]) - lse)})
		}
	}
	return lp
}

// greedyOnly reports whether s's next token is the index of its largest
// logit and nothing else reads the logits (Engine.greedyOnly).
func (s *sequence) greedyOnly() bool {
	return s.sampler.opt.greedy() && s.grammar == nil && !s.req.Logprobs && s.req.TopLogprobs == 0
}
