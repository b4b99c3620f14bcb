package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"folio/runner/grammar"
)

// Request is one generation asked of an Engine: a tokenized prompt and
// how to continue it.
type Request struct {
	Prompt     []int32 // token ids, BOS included when the model wants one; empty: BOS alone
	Sample     SampleOptions
	NumPredict int      // tokens to generate per sample at most; ≤ 0: until a stop or the context is full
	NumCtx     int      // this request's context (prompt + output); 0: the engine's default
	Stop       []string // stop strings: the text ends before the first one generated
	N          int      // samples; the prompt is computed once and forked (≤ 1: one)
	// TopLogprobs asks for the log-probability of each generated token
	// (Logprobs) and of the TopLogprobs most likely alternatives (0–20).
	Logprobs    bool
	TopLogprobs int
	// Truncate lets a prompt longer than the context lose tokens from the
	// front, after the first Keep (the system prompt); otherwise such a
	// prompt is an error.
	Truncate bool
	Keep     int
	// CacheKey separates prefix caches (a tenant's salt): prompts under
	// different keys never share blocks. The model's identity is always
	// part of the key.
	CacheKey string
	// Format constrains the output to JSON (grammar.Format for Ollama's
	// format, grammar.ResponseFormat for OpenAI's response_format).
	Format *grammar.Grammar
}

// ErrRequest is wrapped by errors about a request that cannot be served
// as asked; the message says what to change.
var ErrRequest = errors.New("runner: request")

// Event is one message of a request's stream: a generated token with its
// text delta, or the end of one sample.
type Event struct {
	Index   int    // which sample (0 … N-1)
	Token   int32  // the token generated; -1 on the final event
	Text    string // text that is now final (may be empty while a stop string might be starting)
	Logprob *TokenLogprob
	Done    bool   // the last event of this sample
	Reason  string // on Done: "stop" (end token or stop string), "length" (num_predict or context)
	Stopped string // on Done with Reason "stop": the stop string that ended the sample; "": an end token
	Stats   *Stats // on the Done event of the last sample to finish: the request's figures
	Err     error  // on Done: why the sample ended early (cancelled, cannot fit)
}

// Stats describe a finished request, with Ollama's meanings, plus the
// prompt tokens reused from the prefix cache.
type Stats struct {
	PromptTokens   int           // prompt tokens computed; with CachedTokens, the prompt (prompt_eval_count)
	CachedTokens   int           // prompt tokens reused from the prefix cache (prompt_cached_count)
	RestoredTokens int           // of those, the ones loaded from the persisted store
	PromptDuration time.Duration // from admission to the first sampled token
	EvalTokens     int           // tokens generated, all samples
	EvalDuration   time.Duration
	QueueDuration  time.Duration // waiting for admission
	Preemptions    int
	DoneReason     string // of the last sample to finish
}

// Stream delivers a request's events in order. The engine never blocks on
// it: events queue until the reader takes them.
type Stream struct {
	mu     sync.Mutex // guards events and closed
	events []Event
	closed bool          // the last event has been queued
	ready  chan struct{} // a token that events may be waiting, capacity 1
	cancel context.CancelFunc
}

func newStream(cancel context.CancelFunc) *Stream {
	return &Stream{ready: make(chan struct{}, 1), cancel: cancel}
}

func (s *Stream) push(ev Event, last bool) {
	s.mu.Lock()
	s.events = append(s.events, ev)
	s.closed = s.closed || last
	s.mu.Unlock()
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// Recv returns the next event; ok is false after the last one was
// returned or when ctx ends first.
func (s *Stream) Recv(ctx context.Context) (ev Event, ok bool) {
	for {
		s.mu.Lock()
		if len(s.events) > 0 {
			ev = s.events[0]
			s.events[0] = Event{}
			s.events = s.events[1:]
			s.mu.Unlock()
			return ev, true
		}
		closed := s.closed
		s.mu.Unlock()
		if closed {
			return Event{}, false
		}
		select {
		case <-s.ready:
		case <-ctx.Done():
			return Event{}, false
		}
	}
}

// Cancel ends the request: its blocks are freed at the engine's next step
// and its stream ends with an error event.
func (s *Stream) Cancel() { s.cancel() }

// check validates r and fills defaults: numCtx is the engine's context
// for a request that sets none. A context larger than the K/V pool is the
// engine's to grow (Engine.reserve).
func (r *Request) check(numCtx int) error {
	if err := r.Sample.Check(); err != nil {
		return fmt.Errorf("%w: %v", ErrRequest, err)
	}
	switch {
	case r.N > 16:
		return fmt.Errorf("%w: n %d: at most 16 samples per request", ErrRequest, r.N)
	case r.TopLogprobs < 0 || r.TopLogprobs > 20:
		return fmt.Errorf("%w: top_logprobs %d: use 0 to 20", ErrRequest, r.TopLogprobs)
	case r.NumCtx < 0:
		return fmt.Errorf("%w: num_ctx %d: use a positive size", ErrRequest, r.NumCtx)
	}
	for _, s := range r.Stop {
		if s == "" {
			return fmt.Errorf("%w: an empty stop string would stop at once: remove it", ErrRequest)
		}
	}
	r.N = max(r.N, 1)
	if r.NumCtx == 0 {
		r.NumCtx = numCtx
	}
	if len(r.Prompt) < r.NumCtx {
		return nil
	}
	if !r.Truncate {
		return fmt.Errorf("%w: the prompt has %d tokens and num_ctx is %d: shorten the prompt, raise num_ctx, or allow truncation", ErrRequest, len(r.Prompt), r.NumCtx)
	}
	// Keep the first Keep tokens and as many of the last ones as leave
	// room for a quarter of the context to generate into.
	keep := min(max(r.Keep, 0), r.NumCtx/2)
	tail := r.NumCtx*3/4 - keep
	if tail <= 0 {
		return fmt.Errorf("%w: num_ctx %d leaves no room after keeping %d tokens: raise num_ctx", ErrRequest, r.NumCtx, keep)
	}
	r.Prompt = append(append([]int32{}, r.Prompt[:keep]...), r.Prompt[len(r.Prompt)-tail:]...)
	return nil
}
