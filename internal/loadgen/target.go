package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"folio/runner"
)

// Target runs one request and traces it. Implementations are safe for
// concurrent use.
type Target interface {
	Do(ctx context.Context, s Spec, temperature float32) (Trace, error)
}

// BlockCounter is the optional capability of a target that can say how
// many K/V blocks its engine has held at most.
type BlockCounter interface {
	PeakBlocks() int
}

// Trace is what a client saw of one request.
type Trace struct {
	Tokens []time.Duration // since submission: when each output token (or streamed chunk) arrived
	Done   time.Duration   // since submission: when the request ended
	Output int             // tokens generated
	IDs    []int32         // the tokens generated, in-process only
	// Prompt tokens computed and reused from the prefix cache; Cached is
	// -1 when the target does not say. Restored is how many of the
	// cached ones came from the prefix store (in-process only).
	Computed, Cached, Restored int
}

// TTFT is the time to the first token; for a request that generated none,
// the time to its end.
func (t Trace) TTFT() time.Duration {
	if len(t.Tokens) > 0 {
		return t.Tokens[0]
	}
	return t.Done
}

// EngineTarget sends token prompts to an in-process engine.
type EngineTarget struct {
	E   *runner.Engine
	Tok *Tokens
}

// NewEngineTarget serves requests on e, with prompts of e's vocabulary.
func NewEngineTarget(e *runner.Engine) (*EngineTarget, error) {
	tok, err := NewTokens(e.Model().Tok.Vocab())
	if err != nil {
		return nil, err
	}
	return &EngineTarget{E: e, Tok: tok}, nil
}

// Do runs s on the engine: its prompt tokens, num_predict s.Output,
// sampling seeded by s.Seed (greedy at temperature 0).
func (t *EngineTarget) Do(ctx context.Context, s Spec, temperature float32) (Trace, error) {
	return RunTokens(ctx, t.E, t.Tok.Prompt(s), s.Output, temperature, int64(s.Seed&(1<<62-1)))
}

// PeakBlocks is the engine's peak of K/V blocks held.
func (t *EngineTarget) PeakBlocks() int { return t.E.Stats().PeakBlocks }

// RunTokens submits prompt to e and traces it until it ends. The token
// times are those of events carrying a generated token (not an end token).
func RunTokens(ctx context.Context, e *runner.Engine, prompt []int32, numPredict int, temperature float32, seed int64) (Trace, error) {
	opt := runner.DefaultSampleOptions()
	opt.Temperature, opt.Seed = temperature, seed
	vocab := e.Model().Tok.Vocab()
	start := time.Now()
	st, err := e.Submit(ctx, runner.Request{Prompt: prompt, Sample: opt, NumPredict: numPredict})
	if err != nil {
		return Trace{}, err
	}
	defer st.Cancel()
	var tr Trace
	for {
		ev, ok := st.Recv(ctx)
		if !ok {
			return tr, fmt.Errorf("loadgen: the stream ended without a final event: %w", context.Cause(ctx))
		}
		if ev.Token >= 0 && !ev.Done && !vocab.IsEOG(ev.Token) {
			tr.Tokens = append(tr.Tokens, time.Since(start))
			tr.IDs = append(tr.IDs, ev.Token)
		}
		if ev.Err != nil {
			return tr, ev.Err
		}
		if ev.Stats != nil {
			tr.Done = time.Since(start)
			tr.Output, tr.Computed, tr.Cached = ev.Stats.EvalTokens, ev.Stats.PromptTokens, ev.Stats.CachedTokens
			tr.Restored = ev.Stats.RestoredTokens
			return tr, nil
		}
	}
}

// HTTPTarget sends word prompts to an Ollama-compatible server's
// /api/generate, raw and streamed.
type HTTPTarget struct {
	Host   string // base URL, e.g. http://127.0.0.1:11434
	Model  string
	Client *http.Client // nil: http.DefaultClient
}

type generateRequest struct {
	Model   string         `json:"model"`
	Prompt  string         `json:"prompt"`
	Raw     bool           `json:"raw"`
	Stream  bool           `json:"stream"`
	Options map[string]any `json:"options"`
}

// generateChunk is one NDJSON line of the streamed answer. Counts are
// Ollama's (prompt_eval_count is the whole prompt); prompt_cached_count is
// folio's (absent from Ollama): how many of the prompt's tokens came from
// the prefix cache.
type generateChunk struct {
	Response          string `json:"response"`
	Done              bool   `json:"done"`
	Error             string `json:"error"`
	EvalCount         int    `json:"eval_count"`
	PromptEvalCount   int    `json:"prompt_eval_count"`
	PromptCachedCount *int   `json:"prompt_cached_count"`
}

// Do posts s's words with num_predict s.Output and seed s.Seed. Every
// chunk with a non-empty response counts as a token arrival; the output
// count is the server's eval_count, or the chunks when it gives none.
func (t *HTTPTarget) Do(ctx context.Context, s Spec, temperature float32) (Trace, error) {
	body, err := json.Marshal(generateRequest{Model: t.Model, Prompt: Words(s), Raw: true, Stream: true,
		Options: map[string]any{"num_predict": s.Output, "seed": int64(s.Seed & (1<<62 - 1)), "temperature": temperature}})
	if err != nil {
		return Trace{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(t.Host, "/")+"/api/generate", bytes.NewReader(body))
	if err != nil {
		return Trace{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	client := t.Client
	if client == nil {
		client = http.DefaultClient
	}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return Trace{}, fmt.Errorf("loadgen: %w (is a server running at %s?)", err, t.Host)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return Trace{}, fmt.Errorf("loadgen: %s: %s", resp.Status, bytes.TrimSpace(msg))
	}
	tr := Trace{Cached: -1}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var c generateChunk
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return tr, fmt.Errorf("loadgen: a streamed line is not JSON: %w: %.100q", err, sc.Bytes())
		}
		if c.Error != "" {
			return tr, fmt.Errorf("loadgen: the server says: %s", c.Error)
		}
		if c.Response != "" {
			tr.Tokens = append(tr.Tokens, time.Since(start))
		}
		if c.Done {
			tr.Done = time.Since(start)
			tr.Output, tr.Computed = c.EvalCount, c.PromptEvalCount
			if tr.Output == 0 {
				tr.Output = len(tr.Tokens)
			}
			if c.PromptCachedCount != nil {
				tr.Cached = *c.PromptCachedCount
				tr.Computed -= tr.Cached
			}
			return tr, nil
		}
	}
	if err := sc.Err(); err != nil {
		return tr, fmt.Errorf("loadgen: reading the stream: %w", err)
	}
	return tr, fmt.Errorf("loadgen: the stream ended without a done chunk")
}
