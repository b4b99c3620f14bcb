package server

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/ollama/ollama/api"

	"folio/models/tokenizer"
	"folio/runner"
	"folio/runner/grammar"
)

// completion is what /api/generate, /api/chat and the OpenAI endpoints
// share: a prompt of token ids on a loaded model, and how to sample.
type completion struct {
	model      *loaded
	ids        []int32
	opts       api.Options
	sample     runner.SampleOptions
	raw        map[string]any // the request's options, before the model's parameters (OpenAI endpoints)
	n          int
	logprobs   bool
	topLog     int
	format     *grammar.Grammar // output constraint; nil: free text
	thinkSplit thinkMode        // how thinking is told from the answer
}

// start submits c to the model's engine.
func (c *completion) start(ctx context.Context) (*runner.Stream, error) {
	req := runner.Request{Prompt: c.ids, Sample: c.sample, NumCtx: c.opts.NumCtx, Stop: c.opts.Stop, N: c.n,
		Logprobs: c.logprobs, TopLogprobs: c.topLog, Format: c.format}
	if c.opts.NumPredict > 0 {
		req.NumPredict = c.opts.NumPredict
	}
	return c.model.engine.Submit(ctx, req)
}

// encodePrompt tokenizes a prompt. Rendered templates hold special-token
// text (parsed as tokens); BOS is added when the vocabulary wants one and
// the text does not start with it already.
func encodePrompt(tok *tokenizer.Tokenizer, text string, templated bool) []int32 {
	v := tok.Vocab()
	add := true
	if templated && v.BOS != tokenizer.NoToken && strings.HasPrefix(text, tok.Piece(v.BOS)) {
		add = false
	}
	return tok.Encode(text, tokenizer.EncodeOptions{AddSpecial: add, ParseSpecial: templated})
}

// streamFlag is Ollama's stream field: true unless set to false.
func streamFlag(p *bool) bool { return p == nil || *p }

// unloading reports whether a request without a prompt asks for an
// unload (keep_alive 0): it ends the model if loaded and never loads it,
// as Ollama expires its runner.
func unloading(d *api.Duration) bool { return d != nil && d.Duration == 0 }

func keepAlive(d *api.Duration) *time.Duration {
	if d == nil {
		return nil
	}
	return &d.Duration
}

func (s *Server) generate(w http.ResponseWriter, r *http.Request) {
	var req api.GenerateRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if err := checkRequest(req.Model, req.Images, req.Think); err != nil {
		writeError(w, err)
		return
	}
	j := s.openOllama(w, r, ollamaRequest{endpoint: "generate", model: req.Model, options: req.Options, format: req.Format, keepAlive: req.KeepAlive,
		think: req.Think, noPrompt: req.Prompt == "" && req.Suffix == "" && len(req.Context) == 0 && req.System == ""},
		func(reason string) any {
			return api.GenerateResponse{Model: req.Model, CreatedAt: s.cfg.Now().UTC(), Done: true, DoneReason: reason}
		})
	if j == nil {
		return
	}
	defer j.release()
	l, conf, c, think, caps := j.l, j.conf, j.c, j.think, j.caps
	c.logprobs, c.topLog = req.Logprobs, req.TopLogprobs
	var err error
	win := newWindow(l, c.opts, req.Truncate)
	for _, id := range req.Context {
		if id < 0 || id >= l.model.Arch.Vocab {
			writeError(w, fmt.Errorf("%w: context holds token %d, outside the vocabulary of %d: send back the context of this model's last response", errBadRequest, id, l.model.Arch.Vocab))
			return
		}
		c.ids = append(c.ids, int32(id))
	}
	tok := l.model.Tok
	switch {
	case req.Suffix != "":
		in := insertion{prompt: req.Prompt, suffix: req.Suffix, tmpl: req.Template, raw: req.Raw, context: len(c.ids)}
		text, ids, err := s.insertPrompt(r.Context(), l, conf, req.Model, in, win)
		if err != nil {
			writeError(w, err)
			return
		}
		if req.DebugRenderOnly {
			writeJSON(w, http.StatusOK, api.GenerateResponse{Model: req.Model, CreatedAt: s.cfg.Now().UTC(), Done: true,
				DebugInfo: &api.DebugInfo{RenderedTemplate: text}})
			return
		}
		c.ids = append(c.ids, ids...)
	case req.Raw || (l.template == "" && conf.Template == "" && req.Template == ""):
		text := req.Prompt
		if system := cmp.Or(req.System, conf.System); system != "" && !req.Raw {
			text = system + "\n\n" + text
		}
		if len(c.ids) > 0 {
			c.ids = append(c.ids, tok.Encode(text, tokenizer.EncodeOptions{})...)
		} else {
			c.ids = encodePrompt(tok, text, false)
		}
		c.thinkSplit = thinkState(text, think, caps)
	default:
		// Without a context, the prompt is a chat of the system prompt,
		// the model's messages and the prompt, fitted to num_ctx as
		// /api/chat's is (Ollama's generate does the same).
		msgs := conf.generateMessages(req.System, req.Prompt, len(req.Context) > 0)
		p := &chatPrompt{s: s, ctx: r.Context(), l: l, conf: conf, tmpl: req.Template, think: think, caps: caps, constrained: c.format != nil}
		var text string
		var ids []int32
		if len(c.ids) == 0 {
			text, ids, err = p.fit(msgs, win)
		} else {
			text, ids, err = p.encode(msgs)
		}
		if err != nil {
			writeError(w, err)
			return
		}
		if req.DebugRenderOnly {
			writeJSON(w, http.StatusOK, api.GenerateResponse{Model: req.Model, CreatedAt: s.cfg.Now().UTC(), Done: true,
				DebugInfo: &api.DebugInfo{RenderedTemplate: text}})
			return
		}
		c.ids = append(c.ids, ids...)
		c.thinkSplit = thinkState(text, think, caps)
	}
	if c.ids, err = s.fitTokens(l, win, c.ids); err != nil {
		writeError(w, err)
		return
	}
	prompt := c.ids
	j.run(r.Context(), w, streamFlag(req.Stream), nil, func(d ollamaDelta) any {
		resp := api.GenerateResponse{Model: req.Model, CreatedAt: s.cfg.Now().UTC(), Response: d.content, Thinking: d.thinking,
			Logprobs: d.logprobs}
		if d.done {
			resp.Done, resp.DoneReason, resp.Metrics = true, d.reason, d.metrics
			resp.Context = toInts(append(append([]int32(nil), prompt...), d.generated...))
			return generateResponse{resp, d.cached}
		}
		return generateResponse{resp, nil}
	})
}

// checkRequest refuses what folio cannot do with a clear message, rather
// than ignoring it.
func checkRequest(model string, images []api.ImageData, think *api.ThinkValue) error {
	switch {
	case model == "":
		return fmt.Errorf("%w: model is required", errBadRequest)
	case len(images) > 0:
		return fmt.Errorf("%w: images: folio runs text models only", errBadRequest)
	case think != nil && !think.IsValid():
		return fmt.Errorf("%w: think must be true, false, \"high\", \"medium\" or \"low\"", errBadRequest)
	}
	return nil
}

// compileFormat compiles a request's format (Ollama's "json" or a JSON
// schema) into the grammar that constrains the output, once the model is
// known to exist: a request for a missing model is a 404 before any schema
// work. The compile is bounded (a schema past grammar's limits is a 400
// naming the limit) and stops when ctx ends (the client has gone). Errors
// name their field: "model" for the look-up, param for the format.
func (s *Server) compileFormat(ctx context.Context, model string, format json.RawMessage, param string) (*grammar.Grammar, error) {
	if len(bytes.TrimSpace(format)) == 0 {
		return nil, nil
	}
	if _, err := resolveModel(ctx, &s.cfg, model); err != nil {
		return nil, &paramError{"model", err}
	}
	g, err := grammar.Format(ctx, format)
	if errors.Is(err, grammar.ErrFormat) {
		return nil, &paramError{param, fmt.Errorf("%w: %s: %v", errBadRequest, param, err)}
	}
	return g, err
}

func toInts(ids []int32) []int {
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = int(id)
	}
	return out
}

// metrics are Ollama's figures for a finished request that started at
// start and had its model at loaded, and folio's prompt_cached_count.
// prompt_eval_count is the whole prompt, as Ollama's (and /v1's
// prompt_tokens): the tokens computed and those the prefix cache held,
// which cached counts. load_duration is the wait for the model, as
// Ollama's: its load on a cold request, next to nothing on a warm one.
func metrics(st *runner.Stats, start, loaded time.Time) (m api.Metrics, cached *int) {
	m = api.Metrics{TotalDuration: time.Since(start), LoadDuration: loaded.Sub(start)}
	if st != nil {
		m.PromptEvalCount, m.PromptEvalDuration = st.PromptTokens+st.CachedTokens, st.PromptDuration
		m.EvalCount, m.EvalDuration = st.EvalTokens, st.EvalDuration
		cached = &st.CachedTokens
	}
	return m, cached
}

// generateResponse is Ollama's /api/generate answer with folio's
// prompt_cached_count, present in the final one.
type generateResponse struct {
	api.GenerateResponse
	PromptCachedCount *int `json:"prompt_cached_count,omitempty"`
}

// chatResponse is Ollama's /api/chat answer with folio's
// prompt_cached_count, present in the final one.
type chatResponse struct {
	api.ChatResponse
	PromptCachedCount *int `json:"prompt_cached_count,omitempty"`
}

func ollamaLogprob(tok *tokenizer.Tokenizer, lp *runner.TokenLogprob) api.Logprob {
	one := func(id int32, v float32) api.TokenLogprob {
		b := tok.TokenBytes(id, tokenizer.DecodeOptions{})
		bytes := make([]int, len(b))
		for i, c := range b {
			bytes[i] = int(c)
		}
		return api.TokenLogprob{Token: string(b), Logprob: float64(v), Bytes: bytes}
	}
	out := api.Logprob{TokenLogprob: one(lp.Token, lp.Logprob)}
	for _, t := range lp.Top {
		out.TopLogprobs = append(out.TopLogprobs, one(t.Token, t.Logprob))
	}
	return out
}

// responder writes NDJSON lines (streaming) or one JSON object.
type responder struct {
	w       http.ResponseWriter
	stream  bool
	started bool
}

func newResponder(w http.ResponseWriter, stream bool) *responder {
	return &responder{w: w, stream: stream}
}

func (o *responder) send(v any) {
	if !o.started {
		ct := "application/json; charset=utf-8"
		if o.stream {
			ct = "application/x-ndjson"
		}
		o.w.Header().Set("Content-Type", ct)
		o.w.WriteHeader(http.StatusOK)
		o.started = true
	}
	json.NewEncoder(o.w).Encode(v)
	if f, ok := o.w.(http.Flusher); ok && o.stream {
		f.Flush()
	}
}

// fail reports an error: as the status before anything was sent, else as
// a final {"error": ...} line, as Ollama does mid-stream.
func (o *responder) fail(err error) {
	if !o.started {
		writeError(o.w, err)
		return
	}
	o.send(map[string]string{"error": err.Error()})
}
